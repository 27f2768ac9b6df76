"""Parse Hermes / Qwen style ``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` text.

A local model emits its tool calls as text; this module turns that text into structured calls
and says precisely what was wrong when it cannot, so a malformed call becomes a recorded
``format_error`` step instead of a crash. Reasoning (``<think>...</think>``, also a block the chat
template opened in the prompt) is taken out first: a call planned while thinking is not a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aw_site.openai_chat import split_reasoning

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>")
REASONING_CUT_OFF = (
    "the reply ran out while reasoning (<think> never closed): no answer or tool call"
)


@dataclass
class ParsedToolCall:
    """One tool call as the model wrote it; ``error`` is set when it is unusable."""

    name: str | None
    arguments: dict[str, Any] | None
    raw: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class ParsedAssistantText:
    """The assistant's text split into free content and tool calls."""

    content: str
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    reasoning: str = ""
    error: str | None = None  # wrong as a whole (cut off while reasoning), not one call

    @property
    def format_error(self) -> str | None:
        """The first tool-call error, or None when every call is well formed."""
        if self.error:
            return self.error
        for call in self.tool_calls:
            if call.error:
                return call.error
        return None


def strip_end_markers(text: str) -> str:
    """Cut generation at the first end-of-turn marker."""
    cut = len(text)
    for marker in _END_MARKERS:
        index = text.find(marker)
        if index != -1:
            cut = min(cut, index)
    return text[:cut]


def parse_tool_call_json(raw: str) -> ParsedToolCall:
    """Validate one call body: a JSON object with a string ``name`` and object ``arguments``.

    ``arguments`` may itself be a JSON string (some servers double-encode it).
    """
    body = raw.strip()
    try:
        payload = json.loads(body)
    except json.JSONDecodeError as exc:
        return ParsedToolCall(None, None, raw, f"tool call is not valid JSON: {exc.msg}")
    if not isinstance(payload, dict):
        return ParsedToolCall(None, None, raw, "tool call must be a JSON object")
    name = payload.get("name")
    if not isinstance(name, str) or not name.strip():
        return ParsedToolCall(None, None, raw, "tool call has no function name")
    arguments = payload.get("arguments", payload.get("parameters", {}))
    return _with_arguments(name.strip(), arguments, raw)


def parse_arguments(name: str, arguments: Any, raw: str) -> ParsedToolCall:
    """Validate the arguments of a call whose name is already known (OpenAI tool_calls)."""
    if not isinstance(name, str) or not name.strip():
        return ParsedToolCall(None, None, raw, "tool call has no function name")
    return _with_arguments(name.strip(), arguments, raw)


def _with_arguments(name: str, arguments: Any, raw: str) -> ParsedToolCall:
    if arguments is None or arguments == "":
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return ParsedToolCall(
                name, None, raw, f"arguments of {name} are not valid JSON: {exc.msg}"
            )
    if not isinstance(arguments, dict):
        return ParsedToolCall(name, None, raw, f"arguments of {name} must be a JSON object")
    return ParsedToolCall(name, arguments, raw)


def parse_assistant_text(text: str) -> ParsedAssistantText:
    """Split generated assistant text into content and ``<tool_call>`` blocks.

    An opened but unclosed block (generation cut off) still counts as a call attempt, so it is
    reported as malformed rather than silently taken for a final answer. Reasoning is taken out
    first and kept apart; a reply cut off while reasoning, with nothing after it, is malformed.
    """
    split = split_reasoning(strip_end_markers(text))
    text, reasoning = split.content, split.reasoning
    blocks = list(_BLOCK.finditer(text))
    if not blocks:
        stray_close = TOOL_CALL_CLOSE in text
        if stray_close:
            call = ParsedToolCall(None, None, text, "tool call closed without <tool_call>")
            content = text.replace(TOOL_CALL_CLOSE, "").strip()
            return ParsedAssistantText(content, [call], reasoning)
        error = REASONING_CUT_OFF if split.unterminated and not text.strip() else None
        return ParsedAssistantText(text.strip(), reasoning=reasoning, error=error)
    content = (text[: blocks[0].start()] + text[blocks[-1].end() :]).strip()
    calls = []
    for match in blocks:
        raw = match.group(1)
        if not match.group(0).endswith(TOOL_CALL_CLOSE):
            calls.append(ParsedToolCall(None, None, raw, "tool call is not closed (</tool_call>)"))
        else:
            calls.append(parse_tool_call_json(raw))
    return ParsedAssistantText(content, calls, reasoning)


def render_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """The canonical text form of one call, as the Qwen 2.5 chat template renders it."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"
