"""The record of one episode: every step the policy took and how the episode ended.

Shape follows docs/contracts.md ("Trajectory"); ``messages`` and ``tools`` additionally keep the
OpenAI-format conversation so a trajectory can be exported for SFT as it is.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

FINISHED_REASONS = ("answer", "step_budget", "format_error", "policy_error", "token_budget")


@dataclass
class Step:
    """One policy action: a tool call with its result, a final answer, or a recorded failure."""

    index: int
    role: str
    content: str = ""
    tool_call: dict[str, Any] | None = None
    raw_tool_call: str | None = None
    tool_result: Any = None
    error: str | None = None
    error_kind: str | None = None
    duration_ms: float = 0.0
    tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Trajectory:
    """One episode of a policy on one task in one environment."""

    task_id: str
    environment: str
    steps: list[Step] = field(default_factory=list)
    final_answer: str | None = None
    final_state_hash: str | None = None
    state_diff: dict[str, Any] = field(default_factory=dict)
    finished_reason: str = "answer"
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    duration_ms: float = 0.0
    reward: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None  # a programmatic task's verify() verdict
    metadata: dict[str, Any] = field(default_factory=dict)  # what the policy says of its run

    def add_step(self, role: str, **fields: Any) -> Step:
        step = Step(index=len(self.steps), role=role, **fields)
        self.steps.append(step)
        return step

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The executed tool calls, in order ([{"tool", "arguments", "ok", "result"}])."""
        return [
            {
                "tool": s.tool_call["name"],
                "arguments": s.tool_call["arguments"],
                "ok": s.error is None,
                "result": s.tool_result,
            }
            for s in self.steps
            if s.tool_call is not None
        ]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = [step.to_dict() for step in self.steps]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        steps = [Step(**step) for step in data.get("steps", [])]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "steps"}
        return cls(steps=steps, **known)
