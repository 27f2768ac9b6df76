"""One tool call of an episode, run and recorded the same way by every agent loop.

The message-level loop (evaluation, endpoint policies) and the token-level loop (GRPO) both call
:func:`run_call` and :func:`record_call`: a tool the task does not offer is refused without
running, ``submit_answer`` never reaches the sandbox, and the trajectory step has one shape.
"""

from __future__ import annotations

from typing import Any

from environments.runtime.episode import ToolCallResult
from tasks.tool_subset import not_offered_message
from tasks.trajectory import ToolCall, Trajectory
from training.policies.tool_call_parser import ParsedToolCall


def run_call(episode: Any, offered: set[str], name: str, arguments: dict[str, Any]):
    """Run one call in the episode's sandbox, or refuse a tool the task does not offer."""
    if name in offered:
        return episode.call_tool(name, arguments)
    return ToolCallResult(name, arguments, False, None, not_offered_message(name), "unknown_tool")


def record_call(
    trajectory: Trajectory,
    call: ParsedToolCall,
    result: ToolCallResult | None,
    content: str = "",
    tokens: int = 0,
) -> None:
    """Add the step of one call; ``result`` None for ``submit_answer`` (nothing ran)."""
    fields: dict[str, Any] = {
        "content": content,
        "tool_call": ToolCall(call.name, call.arguments),
        "raw_tool_call": call.raw,
        "tokens": tokens,
    }
    if result is not None:
        fields.update(
            tool_result=result.result if result.ok else None,
            error=None if result.ok else result.error,
            error_kind=None if result.ok else result.error_kind,
            duration_ms=result.duration_ms,
        )
    trajectory.add_step("assistant", **fields)
