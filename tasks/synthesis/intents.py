"""What a task asks for, as a person would put it: its intent.

Five intents (look-up, comparison, aggregation, conditional action, multi-step workflow) choose
the sentence forms of a goal instruction (``instructions.render_goal``), are stored on every
graph task at synthesis (``metadata.intent``) and count reviewers' marks per intent
(``tasks.generator_labels``). One definition here, read from the walk itself: one write is a
change to the row the task picks out (a conditional action), several writes a workflow; a
read-only walk with a conditional step compares, one ending in a count or aggregate
aggregates, any other looks up.
"""

from __future__ import annotations

from collections.abc import Iterable

LOOKUP = "lookup"
COMPARISON = "comparison"
AGGREGATION = "aggregation"
CONDITIONAL_ACTION = "conditional_action"
MULTI_STEP_WORKFLOW = "multi_step_workflow"
INTENTS = (LOOKUP, COMPARISON, AGGREGATION, CONDITIONAL_ACTION, MULTI_STEP_WORKFLOW)
INTENT_WORDS = {
    LOOKUP: "look-up",
    COMPARISON: "comparison",
    AGGREGATION: "aggregation",
    CONDITIONAL_ACTION: "conditional action",
    MULTI_STEP_WORKFLOW: "multi-step workflow",
}
AGGREGATE_ACTIONS = frozenset({"count", "aggregate"})


def intent_of(writes: int, conditional: bool, last_action: str | None) -> str:
    """The intent of a walk with ``writes`` write steps, a conditional step or not, whose last
    call is ``last_action`` (get, search, count, ...)."""
    if writes:
        return CONDITIONAL_ACTION if writes == 1 else MULTI_STEP_WORKFLOW
    if conditional:
        return COMPARISON
    if last_action in AGGREGATE_ACTIONS:
        return AGGREGATION
    return LOOKUP


def walk_intent(kinds: Iterable[str], conditional: bool, last_action: str | None) -> str:
    """``intent_of`` for a walk given the kinds (read / write) of its steps."""
    return intent_of(sum(1 for kind in kinds if kind == "write"), conditional, last_action)
