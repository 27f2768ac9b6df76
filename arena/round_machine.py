"""The life cycle of an evolution round, as a pure transition table.

    evaluating -> diagnosing -> awaiting_approval -> expanding -> training -> done
                                (skipped with auto-approval)
    any non-terminal state --fail--> failed (with a reason)

Each working state has one step job; the round persists its state after every transition, so a
restarted worker resumes by rerunning the step of the persisted state (steps are idempotent:
they replace what a half-finished run of themselves left behind).
"""

from __future__ import annotations

from dataclasses import dataclass

EVALUATING = "evaluating"
DIAGNOSING = "diagnosing"
AWAITING_APPROVAL = "awaiting_approval"
EXPANDING = "expanding"
TRAINING = "training"
DONE = "done"
FAILED = "failed"

STATES = (EVALUATING, DIAGNOSING, AWAITING_APPROVAL, EXPANDING, TRAINING, DONE, FAILED)
TERMINAL_STATES = frozenset({DONE, FAILED})
INITIAL_STATE = EVALUATING

EVALUATED = "evaluated"
DIAGNOSED = "diagnosed"
APPROVED = "approved"
EXPANDED = "expanded"
TRAINED = "trained"
FAIL = "fail"
EVENTS = (EVALUATED, DIAGNOSED, APPROVED, EXPANDED, TRAINED, FAIL)

# (state, event) -> next state. DIAGNOSED leads to awaiting_approval unless auto-approved.
TRANSITIONS: dict[tuple[str, str], str] = {
    (EVALUATING, EVALUATED): DIAGNOSING,
    (DIAGNOSING, DIAGNOSED): AWAITING_APPROVAL,
    (AWAITING_APPROVAL, APPROVED): EXPANDING,
    (EXPANDING, EXPANDED): TRAINING,
    (TRAINING, TRAINED): DONE,
}

# The step job that does the work of each working state. awaiting_approval waits for a
# reviewer, so it has no job.
STEP_FOR_STATE: dict[str, str] = {
    EVALUATING: "evaluate",
    DIAGNOSING: "diagnose",
    EXPANDING: "expand",
    TRAINING: "train",
}
# The event a step reports when it finishes successfully.
EVENT_FOR_STEP: dict[str, str] = {
    "evaluate": EVALUATED,
    "diagnose": DIAGNOSED,
    "expand": EXPANDED,
    "train": TRAINED,
}


class InvalidTransition(ValueError):
    """An event that the round's current state does not accept."""


def allowed_events(state: str) -> list[str]:
    """Events ``state`` accepts, in life-cycle order."""
    _check_state(state)
    if state in TERMINAL_STATES:
        return []
    events = [event for (source, event) in TRANSITIONS if source == state]
    return events + [FAIL]


def _check_state(state: str) -> None:
    if state not in STATES:
        raise InvalidTransition(f"unknown round state {state!r}; known states: {', '.join(STATES)}")


def next_state(current: str, event: str, auto_approve: bool = False) -> str:
    """The state after ``event``; raises InvalidTransition when ``current`` does not accept it."""
    _check_state(current)
    if event not in EVENTS:
        raise InvalidTransition(f"unknown round event {event!r}; known events: {', '.join(EVENTS)}")
    if current in TERMINAL_STATES:
        raise InvalidTransition(
            f"round is {current}, a terminal state; it accepts no event (got {event!r})"
        )
    if event == FAIL:
        return FAILED
    target = TRANSITIONS.get((current, event))
    if target is None:
        raise InvalidTransition(
            f"a round in state {current!r} cannot take event {event!r}; "
            f"it accepts: {', '.join(allowed_events(current))}"
        )
    if target == AWAITING_APPROVAL and auto_approve:
        return EXPANDING
    return target


def step_for_state(state: str) -> str | None:
    """The step job to run in ``state``; None while waiting for a reviewer or when finished."""
    _check_state(state)
    return STEP_FOR_STATE.get(state)


@dataclass(frozen=True)
class ResumePlan:
    """What a worker does with a round found in a persisted state."""

    state: str
    step: str | None
    waiting_for_reviewer: bool
    finished: bool


def resume(state: str) -> ResumePlan:
    """Given a persisted state, the step to (re)run, or why there is none."""
    _check_state(state)
    return ResumePlan(
        state=state,
        step=STEP_FOR_STATE.get(state),
        waiting_for_reviewer=state == AWAITING_APPROVAL,
        finished=state in TERMINAL_STATES,
    )


@dataclass(frozen=True)
class RoundStatus:
    """A round's state and, once failed, why and where."""

    state: str = INITIAL_STATE
    failure_reason: str = ""
    failed_in: str = ""

    def advance(self, event: str, auto_approve: bool = False, reason: str = "") -> RoundStatus:
        """The status after ``event``; a failure must say why."""
        target = next_state(self.state, event, auto_approve)
        if target == FAILED:
            if not reason.strip():
                raise InvalidTransition("failing a round requires a reason")
            return RoundStatus(FAILED, reason.strip(), self.state)
        return RoundStatus(target)
