"""What every policy returns for one turn, and the protocol the rollout loop drives."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from training.policies.tool_call_parser import ParsedToolCall

Message = dict[str, Any]
ToolSchema = dict[str, Any]


class PolicyError(RuntimeError):
    """The policy could not produce a turn at all (endpoint down, generation failed)."""


@dataclass
class PolicyTurn:
    """One assistant turn: free text plus the tool calls it asked for.

    ``format_error`` is set when the turn tried to call a tool but the call could not be
    parsed (bad JSON, no name, unclosed block), or when it ran out while reasoning; the rollout
    records it as a step. ``reasoning`` is the model's reasoning text (``<think>`` blocks,
    ``reasoning_content``), kept off ``content`` and ``raw_text``.
    """

    content: str
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    raw_text: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    format_error: str | None = None
    reasoning: str = ""

    @property
    def is_final_answer(self) -> bool:
        return not self.tool_calls and self.format_error is None


@runtime_checkable
class Policy(Protocol):
    """Anything that maps a chat history and tool schemas to the next assistant turn."""

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn: ...


def assistant_message(turn: PolicyTurn, call_ids: list[str]) -> Message:
    """The OpenAI-format assistant message for a turn whose tool calls are all well formed."""
    message: Message = {"role": "assistant", "content": turn.content or ""}
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call, call_id in zip(turn.tool_calls, call_ids, strict=True)
        ]
    return message
