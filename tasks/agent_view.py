"""What the agent sees of a task, rendered in one place for every path.

SFT data, GRPO rollouts, evaluation rollouts, the HTTP episode API's suggested prompt and the
Hugging Face dataset export all show the agent the same things, written the same way: the
system prompt (rules, environment, one line per offered tool with its enums), the instruction
(which ends with the answer contract's sentence), the task's tool schemas exactly as the
manifest declares them (enums, formats and descriptions intact) with ``submit_answer`` last,
tool results as JSON cut at the same limit with the same marker, tool errors as
``{"error", "error_kind"}``, the feedback after a malformed call, and the final answer block.

A policy trained on one path and evaluated on another therefore never meets a prompt it was
not trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import SUBMIT_ANSWER
from tasks.tool_subset import offered_tools, tool_name

AGENT_RULES = (
    "You are an agent acting in a tool environment. Call tools to gather what you need and to "
    "make the changes asked, then give the final answer: call submit_answer, or reply with no "
    'tool call and a JSON block {"answer": ...} in the shape the task asks for. Call one tool '
    "at a time, with arguments that match its parameters exactly."
)
TOOL_RESULT_CHARS = 4000  # a tool result longer than this is cut, with TRUNCATION_MARKER
TRUNCATION_MARKER = "... [truncated {count} characters]"


def _type_text(spec: Mapping[str, Any]) -> str:
    """A parameter's type as one short token: enums spelled out, arrays with their items."""
    if spec.get("enum"):
        return "|".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        kind = "|".join(str(k) for k in kind)
    if kind == "array":
        return f"array[{_type_text(spec.get('items') or {})}]"
    if spec.get("format"):
        return f"{kind}({spec['format']})"
    return str(kind)


def describe_tool(schema: Mapping[str, Any]) -> str:
    """One line per tool: ``- name(param: type, optional?: type) - first line of description``."""
    function = schema.get("function", schema)
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or [])
    params = []
    for name, spec in (parameters.get("properties") or {}).items():
        marker = "" if name in required else "?"
        params.append(f"{name}{marker}: {_type_text(spec or {})}")
    description = (function.get("description") or "").strip().splitlines()
    summary = description[0] if description else ""
    return f"- {function.get('name')}({', '.join(params)}): {summary}"


@dataclass(frozen=True)
class AgentView:
    """A task as its agent is shown it. ``tools`` are the offered schemas, submit_answer last."""

    environment: str
    title: str
    description: str
    instruction: str
    tools: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tool_names(self) -> list[str]:
        return [tool_name(t) for t in self.tools]

    def system_prompt(self) -> str:
        """Rules, environment, then one line per offered tool (submit_answer is in the rules)."""
        lines = [AGENT_RULES, "", f"Environment: {self.title}."]
        if self.description:
            lines.append(self.description)
        lines += ["", "Tools:"]
        lines += [describe_tool(t) for t in self.tools if tool_name(t) != SUBMIT_ANSWER]
        return "\n".join(lines)

    def messages(self) -> list[dict[str, Any]]:
        """The opening of every episode: the system prompt, then the instruction."""
        return [
            {"role": "system", "content": self.system_prompt()},
            {"role": "user", "content": self.instruction},
        ]

    def to_dict(self) -> dict[str, Any]:
        """The suggested prompt of the episode API: messages and tools, ready for a chat call."""
        return {"messages": self.messages(), "tools": self.tools}


def agent_view(
    task: Any,
    manifest: Mapping[str, Any],
    instruction: str | None = None,
) -> AgentView:
    """The view of ``task`` (a TaskSpec, its dict form or a Task row) in the environment whose
    manifest is ``manifest``; ``instruction`` overrides the task's own (a bare environment
    session has none)."""
    if instruction is None:
        instruction = task.get("instruction") if isinstance(task, Mapping) else task.instruction
    return AgentView(
        environment=str(manifest.get("name", "")),
        title=str(manifest.get("title") or manifest.get("name") or "environment"),
        description=str(manifest.get("description") or "").strip(),
        instruction=str(instruction or ""),
        tools=offered_tools(task, manifest.get("tools", [])),
    )


def truncate(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER.format(count=len(text) - limit)


def render_tool_result(
    ok: bool,
    result: Any,
    error: str | None = None,
    error_kind: str | None = None,
    limit: int = TOOL_RESULT_CHARS,
) -> str:
    """A tool's output as the agent reads it: the result as JSON, or ``{"error", "error_kind"}``."""
    payload = result if ok else {"error": error, "error_kind": error_kind}
    return truncate(json.dumps(payload, ensure_ascii=False, default=str), limit)


def tool_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    """The chat message carrying one tool result."""
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def assistant_call_message(
    content: str, calls: list[tuple[str, str, dict[str, Any]]]
) -> dict[str, Any]:
    """The assistant message of a turn with tool calls, ``calls`` as (id, name, arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, default=str)},
            }
            for call_id, name, arguments in calls
        ]
    return message


def format_error_feedback(error: str) -> str:
    """What the agent is told after a malformed tool call, so it can recover."""
    return (
        f"Your tool call could not be used: {error}. Reply with one well-formed tool call or "
        "with your final answer."
    )


def budget_exhausted_feedback() -> str:
    """Why an episode ended before a call ran: its result would not fit the token budget."""
    return "The episode's token budget is spent; the tool call was not run."


def answer_text(answer: Any) -> str:
    """A final answer as the closing assistant message: the answer contract's JSON block,
    which the reward reads like a submit_answer call."""
    return json.dumps({"answer": answer}, ensure_ascii=False, default=str)
