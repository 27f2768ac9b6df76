"""Which generator made a task: its synthesis template and its intent, as stable labels.

Reviewer marks are counted per label so the generator that makes the most unnatural tasks shows
up. Programmatic tasks store the template that drafted them (``metadata.extra.template``, one
of ``tasks.synthesis.program_templates.TEMPLATE_NAMES``). Graph tasks come from one walk
generator, so their template is the walk's shape: its length band, the action of its last
call, a conditional step, and the answer shape asked for (``walk/2-3/get/value``).

The intent (look-up, comparison, aggregation, conditional action, multi-step workflow) is read
from ``metadata.extra.intent`` where synthesis stored it, else inferred from the gold run:
a program's template says it; a walk with one write is a conditional action (a change to the row
the task picks out), with more a multi-step workflow; a read-only walk with a conditional step
is a comparison, one ending in a count or aggregate an aggregation, any other a look-up.

Plain Python over a task's stored fields (a Task row or anything with the same attributes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks.synthesis.intents import (
    AGGREGATION,
    COMPARISON,
    CONDITIONAL_ACTION,
    INTENT_WORDS,
    INTENTS,
    LOOKUP,
    MULTI_STEP_WORKFLOW,
    intent_of,
)
from tasks.synthesis.tool_graph import ACTION_ALIASES

# What each programmatic template asks for (tasks/synthesis/program_templates.py).
PROGRAM_INTENTS = {
    "most_children": AGGREGATION,
    "total": AGGREGATION,
    "filtered_list": LOOKUP,
    "compare_totals": COMPARISON,
    "argmax_child": COMPARISON,
    "top_parents": COMPARISON,
    "first_match": LOOKUP,
    "reconcile": COMPARISON,
    "date_span": AGGREGATION,
    "date_window": AGGREGATION,
    "count_distinct": AGGREGATION,
    "average": AGGREGATION,
    "partition": AGGREGATION,
    "two_hop": AGGREGATION,
    "conditional_update": CONDITIONAL_ACTION,
    "group_update": MULTI_STEP_WORKFLOW,
    "branch_update": CONDITIONAL_ACTION,
}
WRITE_ACTIONS = frozenset({"create", "update", "delete", "link", "unlink"})


@dataclass(frozen=True)
class GeneratorLabels:
    """The template and intent a task is counted under."""

    template: str
    intent: str

    @property
    def intent_words(self) -> str:
        return INTENT_WORDS.get(self.intent, self.intent)


def _extra(task: Any) -> Mapping[str, Any]:
    metadata = getattr(task, "metadata", None)
    extra = metadata.get("extra") if isinstance(metadata, Mapping) else None
    return extra if isinstance(extra, Mapping) else {}


def _chain(task: Any) -> list[Mapping[str, Any]]:
    chain = getattr(task, "gold_chain", None)
    return [step for step in chain if isinstance(step, Mapping)] if isinstance(chain, list) else []


def tool_action(tool: Any) -> str:
    """The action a tool name starts with (``get_order`` -> get), ``other`` when unknown."""
    verb = str(tool or "").partition("_")[0].lower()
    return ACTION_ALIASES.get(verb, "other")


def _is_write(step: Mapping[str, Any]) -> bool:
    kind = step.get("kind")
    return kind == "write" if kind else tool_action(step.get("tool")) in WRITE_ACTIONS


def length_band(calls: int) -> str:
    if calls <= 1:
        return "1"
    if calls <= 3:
        return "2-3"
    if calls <= 6:
        return "4-6"
    return "7+"


def stored_intent(task: Any) -> str | None:
    """The intent synthesis recorded, normalised (``look-up`` / ``Look up`` -> lookup)."""
    value = _extra(task).get("intent")
    if not isinstance(value, str):
        return None
    key = value.strip().lower().replace("-", "_").replace(" ", "_")
    key = {
        "look_up": LOOKUP,
        "multi_step": MULTI_STEP_WORKFLOW,
        "conditional": CONDITIONAL_ACTION,
    }.get(key, key)
    return key if key in INTENTS else None


def template_of(task: Any) -> str:
    """``program/<template>`` for programmatic tasks, ``walk/<band>/<last action>[/if]/<answer
    shape>`` for graph tasks."""
    extra = _extra(task)
    chain = _chain(task)
    if getattr(task, "kind", "") == "programmatic":
        return f"program/{extra.get('template') or 'custom'}"
    last = tool_action(chain[-1].get("tool")) if chain else "none"
    conditional = "/if" if any(step.get("branch") for step in chain) else ""
    answer = extra.get("answer")
    shape = answer.get("shape") if isinstance(answer, Mapping) else None
    return f"walk/{length_band(len(chain))}/{last}{conditional}/{shape or 'unknown'}"


def inferred_intent(task: Any) -> str:
    """The intent read from the gold run when synthesis did not store one."""
    chain = _chain(task)
    writes = sum(1 for step in chain if _is_write(step)) or int(
        getattr(task, "write_steps", 0) or 0
    )
    conditional = any(step.get("branch") for step in chain)
    if getattr(task, "kind", "") == "programmatic":
        known = PROGRAM_INTENTS.get(str(_extra(task).get("template") or ""))
        if known:
            return known
    last = tool_action(chain[-1].get("tool")) if chain else None
    return intent_of(writes, conditional, last)


def generator_labels(task: Any) -> GeneratorLabels:
    return GeneratorLabels(template_of(task), stored_intent(task) or inferred_intent(task))
