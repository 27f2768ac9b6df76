"""The opening of every episode: a system prompt naming the tools offered, then the task."""

from __future__ import annotations

import json
from typing import Any

AGENT_RULES = (
    "You are an agent acting in a tool environment. Call tools to gather what you need and to "
    "make the changes asked, then give the final answer: call submit_answer, or reply with no "
    'tool call and a JSON block {"answer": ...} in the shape the task asks for. Call one tool '
    "at a time, with arguments that match its parameters exactly."
)


def describe_tool(schema: dict[str, Any]) -> str:
    """One line per tool: name(param: type, optional?: type) - description."""
    function = schema.get("function", schema)
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or [])
    params = []
    for name, spec in (parameters.get("properties") or {}).items():
        marker = "" if name in required else "?"
        params.append(f"{name}{marker}: {spec.get('type', 'any')}")
    description = (function.get("description") or "").strip().splitlines()
    summary = description[0] if description else ""
    return f"- {function.get('name')}({', '.join(params)}): {summary}"


def system_prompt(manifest: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> str:
    """The rules, the environment, and one line per tool in ``tools`` (the task's offered tools,
    ``tasks.tool_subset.offered_tools``; default: the manifest's). ``submit_answer`` is left
    out of the list: the rules say how to answer."""
    from tasks.answer_contract import SUBMIT_ANSWER
    from tasks.tool_subset import tool_name

    title = manifest.get("title") or manifest.get("name", "environment")
    lines = [AGENT_RULES, "", f"Environment: {title}."]
    if manifest.get("description"):
        lines.append(str(manifest["description"]).strip())
    listed = manifest.get("tools", []) if tools is None else tools
    lines += ["", "Tools:"] + [describe_tool(t) for t in listed if tool_name(t) != SUBMIT_ANSWER]
    return "\n".join(lines)


def initial_messages(
    manifest: dict[str, Any], instruction: str, tools: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """System prompt (listing ``tools``, default the manifest's) and the task instruction."""
    return [
        {"role": "system", "content": system_prompt(manifest, tools)},
        {"role": "user", "content": instruction},
    ]


def format_error_feedback(error: str) -> str:
    """What the policy is told after a malformed tool call, so it can recover."""
    return (
        f"Your tool call could not be used: {error}. Reply with one well-formed tool call or "
        "with your final answer."
    )


def render_tool_result(
    ok: bool, result: Any, error: str | None, error_kind: str | None, limit: int = 4000
) -> str:
    """Tool output as the policy sees it: JSON, truncated to ``limit`` characters."""
    payload = result if ok else {"error": error, "error_kind": error_kind}
    text = json.dumps(payload, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"... [truncated {len(text) - limit} characters]"
    return text


def answer_text(reference_answer: Any) -> str:
    """A reference answer written as the final assistant message: the answer contract's
    final JSON block, which the reward reads like a submit_answer call."""
    return json.dumps({"answer": reference_answer}, ensure_ascii=False, default=str)
