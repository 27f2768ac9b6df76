"""Instruction text for a gold chain: templates offline, the configured LLM when there is one.

Either way the text names every concrete value the gold run sampled and says how each later
step takes its inputs from earlier ones, so the instruction alone determines the answer.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from tasks.synthesis.tool_graph import ToolNode, plural

log = logging.getLogger(__name__)


def words(name: str) -> str:
    return name.replace("_", " ")


def fmt(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


def _thing(node: ToolNode) -> str:
    return words(node.entity) if node.entity else "record"


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _reference(steps: list[dict[str, Any]], nodes: dict[str, ToolNode], binding) -> str:
    source = steps[binding["step"]]
    thing = _thing(nodes[source["tool"]])
    where = f"step {binding['step'] + 1}"
    item = binding.get("item")
    if item is None:
        owner = f"the {thing} from {where}"
    else:
        ordinal = ORDINALS[item] if item < len(ORDINALS) else f"#{item + 1}"
        owner = f"the {ordinal} {thing} returned in {where}"
    return f"the {words(binding['field'])} of {owner}"


def _argument_phrase(node: ToolNode, name: str, value: Any, binding, steps, nodes) -> str:
    p = node.params.get(name)
    role = p.role if p else "value"
    column = words(p.column[1]) if p and p.column else words(name)
    shown = _reference(steps, nodes, binding) if binding else fmt(value)
    if role == "min":
        return f"{column} at least {shown}"
    if role == "max":
        return f"{column} at most {shown}"
    if role == "text":
        return f"{column} containing {shown}"
    if role == "limit":
        return f"at most {shown} results"
    return f"{words(name)} {'equal to ' if binding else ''}{shown}"


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def describe_step(index: int, steps: list[dict[str, Any]], nodes: dict[str, ToolNode]) -> str:
    step = steps[index]
    node = nodes[step["tool"]]
    bindings = step.get("inputs", {})
    parts = [
        _argument_phrase(node, name, value, bindings.get(name), steps, nodes)
        for name, value in step["arguments"].items()
    ]
    args = _join(parts)
    with_args = f" with {args}" if args else ""
    thing = _thing(node)
    action = node.action
    if action == "get":
        text = f"Look up the {thing}{with_args}."
    elif action in ("search", "list"):
        text = f"Find the {plural(thing)}{with_args}." if args else f"List all {plural(thing)}."
    elif action == "count":
        text = f"Count the {plural(thing)}{with_args}."
    elif action == "create":
        text = f"Create a new {thing}{with_args}."
    elif action == "update":
        text = f"Update the {thing}: {args}." if args else f"Update the {thing}."
    elif action == "delete":
        text = f"Delete the {thing}{with_args}."
    else:
        text = f"Use {node.name} ({words(node.name)}){with_args}."
    return f"Step {index + 1}: {text}"


def describe_answer(spec: dict[str, Any], steps, nodes: dict[str, ToolNode]) -> str:
    last = len(steps)
    thing = _thing(nodes[steps[-1]["tool"]])
    field = words(spec["field"]) if spec.get("field") else None
    shape = spec["shape"]
    if shape == "none":
        return ""  # the answer contract's sentence says how to finish
    if shape == "scalar":
        return f"Finally, report the result of step {last}."
    if shape == "value":
        return f"Finally, report the {field} of the {thing} from step {last}."
    if shape == "list" and field:
        return (
            f"Finally, report the {field} of every {thing} returned in step {last}, "
            "as a list (order does not matter)."
        )
    if shape == "list":
        return f"Finally, report every item returned in step {last}, as a list."
    return f"Finally, report the full result of step {last} as a JSON object."


def render_instruction(steps, nodes: dict[str, ToolNode], answer_spec: dict[str, Any]) -> str:
    """The offline rendering: one sentence per step, then what to report."""
    lines = [describe_step(i, steps, nodes) for i in range(len(steps))]
    lines.append(describe_answer(answer_spec, steps, nodes))
    return "\n".join(line for line in lines if line)


def concrete_values(steps: list[dict[str, Any]]) -> list[str]:
    """The sampled (not chained) argument values an instruction must mention verbatim."""
    values = []
    for step in steps:
        bound = step.get("inputs", {})
        for name, value in step["arguments"].items():
            if name not in bound and value is not None:
                values.append(value if isinstance(value, str) else json.dumps(value))
    return values


def mentions_all(text: str, values: list[str]) -> bool:
    return all(str(v) in text for v in values)


def llm_instruction(settings, template_text: str, steps: list[dict[str, Any]]) -> str | None:
    """Ask the LLM to rewrite the template as a natural request; None when it is unusable.

    The rewrite is accepted only if it keeps every sampled value verbatim.
    """
    from aw_site.llm import LLMError, complete_json

    chain = [{"tool": s["tool"], "arguments": s["arguments"]} for s in steps]
    messages = [
        {
            "role": "system",
            "content": (
                "You write tasks for tool-using agents. Rewrite the numbered steps as one natural "
                "user request. Keep every concrete value exactly as written, keep the order of "
                "the steps and what must be reported. Do not name the tools. Reply with JSON "
                '{"instruction": "..."}.'
            ),
        },
        {
            "role": "user",
            "content": f"Steps:\n{template_text}\n\nGold tool chain:\n{json.dumps(chain)}",
        },
    ]
    try:
        reply = complete_json(settings, messages)
    except LLMError as exc:
        log.warning("instruction LLM failed, using the template: %s", exc)
        return None
    text = reply.get("instruction") if isinstance(reply, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    if not mentions_all(text, concrete_values(steps)):
        log.info("LLM instruction dropped a concrete value; using the template")
        return None
    return text.strip()
