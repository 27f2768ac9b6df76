"""A policy that follows each task's gold chain and injects one known failure per episode.

It exists to measure diagnosis: the fault it injected is recorded in the trajectory metadata
(``episode_metadata``), so a calibration can set the labels diagnosis found against the fault
that was really there. Like the gold-chain baseline it is stateless: the task comes from the
user instruction, the position from the number of assistant turns so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.agent_view import answer_text
from tasks.tool_subset import tool_name
from training.policies.base import Message, PolicyTurn, ToolSchema
from training.policies.fault_plans import FAULTS, NO_FAULT, FaultPlan, plan_episode
from training.policies.tool_call_parser import ParsedToolCall, render_tool_call


class FaultConfig(BaseModel):
    """A fault-injection policy's settings (``Policy.config``), checked field by field by the
    API and the console: a fixed ``fault`` (or one drawn per episode when null), the ``seed``
    of the draw, and the share of episodes played clean (to measure false alarms)."""

    model_config = ConfigDict(extra="forbid")

    fault: Literal[FAULTS + (NO_FAULT,)] | None = Field(  # type: ignore[valid-type]
        None, description="Fixed fault of every episode; null draws one per episode."
    )
    seed: int = Field(0, ge=0, description="Seed of the per-episode draw (with the task id).")
    clean_share: float = Field(
        0.1, ge=0.0, le=1.0, description="Share of drawn episodes played as clean gold runs."
    )


def _task_dict(task: Any) -> dict[str, Any]:
    return dict(task) if isinstance(task, Mapping) else task.to_dict()


def _task_id(task: Mapping[str, Any]) -> str:
    return str(task.get("task_id") or str(task.get("signature", ""))[:16])


def _instruction(messages: list[Message]) -> str:
    return next((m["content"] for m in messages if m["role"] == "user"), "")


class FaultInjectionPolicy:
    """Gold chain with one fault per episode: ``fault`` fixes it (a name of ``FAULTS`` or
    ``"none"``); otherwise it is drawn per task from ``seed`` and the task id, with a share
    ``clean_share`` of clean gold runs."""

    def __init__(
        self,
        tasks: Iterable[Any],
        *,
        fault: str | None = None,
        seed: int = 0,
        clean_share: float = 0.0,
        tool_kinds: Mapping[str, Mapping[str, str]] | None = None,
    ):
        if fault is not None and fault not in (*FAULTS, NO_FAULT):
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)} or {NO_FAULT}")
        self.fault = fault
        self.seed = seed
        self.clean_share = clean_share
        self.tool_kinds = tool_kinds or {}  # {environment: {tool: "read" | "write"}}
        self._by_instruction = {}
        for task in tasks:
            data = _task_dict(task)
            self._by_instruction[data["instruction"]] = data
        self._plans: dict[str, FaultPlan] = {}

    def plan_for(self, instruction: str, tools: list[ToolSchema] = ()) -> FaultPlan | None:
        """The episode plan of the task with this instruction (computed once per task)."""
        task = self._by_instruction.get(instruction)
        if task is None:
            return None
        if instruction not in self._plans:
            schemas = {tool_name(t): t.get("function", t) for t in tools if isinstance(t, Mapping)}
            self._plans[instruction] = plan_episode(
                task,
                _task_id(task),
                seed=self.seed,
                fault=self.fault,
                clean_share=self.clean_share,
                tool_kinds=self.tool_kinds.get(str(task.get("environment", "")), {}),
                tool_schemas=schemas,
            )
        return self._plans[instruction]

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        plan = self.plan_for(_instruction(messages), tools)
        if plan is None:
            return PolicyTurn(content="I do not know this task.", raw_text="")
        turn = plan.turn(sum(1 for m in messages if m["role"] == "assistant"))
        if turn is None or turn.kind == "answer":
            text = answer_text(turn.answer if turn is not None else None)
            return PolicyTurn(content=text, raw_text=text)
        if turn.kind == "malformed":
            return PolicyTurn(
                content="",
                raw_text=str(turn.answer),
                format_error="tool call is not valid JSON",
            )
        raw = render_tool_call(turn.tool, turn.arguments)
        return PolicyTurn(
            content="",
            tool_calls=[ParsedToolCall(turn.tool, dict(turn.arguments), raw)],
            raw_text=raw,
        )

    def episode_metadata(self, messages: list[Message]) -> dict[str, Any]:
        """Recorded on the trajectory: which fault this episode carried, and where."""
        plan = self.plan_for(_instruction(messages))
        if plan is None:
            return {}
        return {"injected_fault": plan.metadata(self.seed)}
