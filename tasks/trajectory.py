"""The record of one episode: every step the policy took and how the episode ended.

Defined once, below the reward that reads it: rollouts write it, the verifier audit and the
gold replay build it, the reward, the step comparison and diagnosis read it. Shape follows
docs/contracts.md ("Trajectory"); ``messages`` and ``tools`` additionally keep the
OpenAI-format conversation so a trajectory can be exported for SFT as it is. ``to_dict`` is the
stored and exported JSON shape (a tool call is ``{"name", "arguments"}``), ``from_dict`` reads it
back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tasks.reward_breakdown import RewardBreakdown

FINISHED_REASONS = ("answer", "step_budget", "format_error", "policy_error", "token_budget")


@dataclass(frozen=True)
class ToolCall:
    """One tool call as the policy made it: the tool's name and its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(name=data["name"], arguments=data.get("arguments") or {})


@dataclass
class Step:
    """One policy action: a tool call with its result, a final answer, or a recorded failure."""

    index: int
    role: str
    content: str = ""
    tool_call: ToolCall | None = None
    raw_tool_call: str | None = None
    tool_result: Any = None
    error: str | None = None
    error_kind: str | None = None
    duration_ms: float = 0.0
    tokens: int = 0

    @property
    def tool_name(self) -> str | None:
        """The called tool's name, None for a step without a parsed call."""
        return self.tool_call.name if self.tool_call is not None else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # the tool call as {"name", "arguments"}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        call = known.pop("tool_call", None)
        return cls(**known, tool_call=ToolCall.from_dict(call) if call else None)


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
    reward: RewardBreakdown | None = None  # set once the run is scored
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
                "tool": s.tool_call.name,
                "arguments": s.tool_call.arguments,
                "ok": s.error is None,
                "result": s.tool_result,
            }
            for s in self.steps
            if s.tool_call is not None
        ]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["reward"] = self.reward.to_dict() if self.reward is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        steps = [Step.from_dict(step) for step in data.get("steps", [])]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "steps"}
        if known.get("reward") is not None:
            known["reward"] = RewardBreakdown.from_dict(known["reward"])
        return cls(steps=steps, **known)
