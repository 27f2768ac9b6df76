"""A policy that replays each task's gold chain, then answers with the reference answer.

It produces the SFT warm-up data (real episodes, real tool results) and is the sanity check
that the rollout loop, the sandbox and the reward agree: it must score full marks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tasks.agent_view import answer_text
from training.policies.base import Message, PolicyTurn, ToolSchema
from training.policies.tool_call_parser import ParsedToolCall, render_tool_call


def _task_dict(task: Any) -> dict[str, Any]:
    return dict(task) if isinstance(task, dict) else task.to_dict()


class GoldChainPolicy:
    """Stateless: finds the task from the user instruction, its position from the history."""

    def __init__(self, tasks: Iterable[Any]):
        self._by_instruction = {}
        for task in tasks:
            data = _task_dict(task)
            self._by_instruction[data["instruction"]] = data

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        instruction = next(m["content"] for m in messages if m["role"] == "user")
        task = self._by_instruction.get(instruction)
        if task is None:
            return PolicyTurn(content="I do not know this task.", raw_text="")
        done = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        chain = task.get("gold_chain") or []
        if done < len(chain):
            call = chain[done]
            arguments = dict(call.get("arguments") or {})
            raw = render_tool_call(call["tool"], arguments)
            return PolicyTurn(
                content="",
                tool_calls=[ParsedToolCall(call["tool"], arguments, raw)],
                raw_text=raw,
            )
        answer = answer_text(task.get("reference_answer"))
        return PolicyTurn(content=answer, raw_text=answer)
