"""The tools a task offers its agent: decided here, once, for every interface.

A task's ``tools`` lists the names synthesis chose for it: the tools its gold chain needs plus
distractors. Whatever runs the task (the rollout loop, GRPO, the HTTP episode API, a task-bound
MCP server, the dataset export) shows the agent exactly those tools, in the environment's
manifest order (the same for every task of the environment, so the position of a tool tells
nothing about the gold chain), then the task's ``submit_answer``; a call to any other tool is
refused with :func:`not_offered_message`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tasks.answer_contract import SUBMIT_ANSWER, task_contract


def tool_name(schema: Mapping[str, Any]) -> str:
    """The name of an OpenAI-format tool schema (or of a bare function schema)."""
    return str(schema.get("function", schema).get("name", ""))


def task_tool_names(task: Any) -> list[str]:
    """The names a task lists in ``tools`` (a TaskSpec or its dict form); [] when none."""
    tools = task.get("tools") if isinstance(task, Mapping) else getattr(task, "tools", None)
    return [str(name) for name in tools or []]


def offered_tools(task: Any, manifest_tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The tool schemas the agent of ``task`` is shown, ``submit_answer`` last.

    ``manifest_tools`` are the environment's tool schemas (its manifest ``tools``). The result
    holds those named in the task's ``tools`` (gold tools and distractors), in manifest order,
    then ``submit_answer`` with the schema of the task's answer contract. A name the manifest
    no longer has is left out; a package tool called ``submit_answer`` is shadowed.

    A task with an empty ``tools`` list (tasks stored before synthesis recorded the subset)
    falls back to every tool of the environment.
    """
    names = set(task_tool_names(task))
    own = [
        dict(schema)
        for schema in manifest_tools
        if tool_name(schema) != SUBMIT_ANSWER and (not names or tool_name(schema) in names)
    ]
    return [*own, task_contract(task).tool_schema()]


def offered_names(task: Any, manifest_tools: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of :func:`offered_tools` (``submit_answer`` included)."""
    return {tool_name(schema) for schema in offered_tools(task, manifest_tools)}


def not_offered_message(name: str) -> str:
    """What an agent is told when it calls a tool its task does not offer."""
    return f"tool {name!r} is not offered in this task"
