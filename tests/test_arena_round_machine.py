"""The evolution round moves through its states only by the transition table."""

from __future__ import annotations

import pytest

from arena.round_machine import (
    AWAITING_APPROVAL,
    DIAGNOSING,
    DONE,
    EVALUATING,
    EXPANDING,
    FAILED,
    STATES,
    TERMINAL_STATES,
    TRAINING,
    InvalidTransition,
    RoundStatus,
    allowed_events,
    next_state,
    resume,
    step_for_state,
)


def test_full_life_cycle_with_reviewer_approval():
    state = EVALUATING
    visited = [state]
    for event in ("evaluated", "diagnosed", "approved", "expanded", "trained"):
        state = next_state(state, event)
        visited.append(state)
    assert visited == [EVALUATING, DIAGNOSING, AWAITING_APPROVAL, EXPANDING, TRAINING, DONE]


def test_auto_approval_skips_awaiting_approval():
    assert next_state(DIAGNOSING, "diagnosed", auto_approve=True) == EXPANDING
    assert next_state(DIAGNOSING, "diagnosed", auto_approve=False) == AWAITING_APPROVAL


@pytest.mark.parametrize("state", [s for s in STATES if s not in TERMINAL_STATES])
def test_any_working_state_can_fail(state):
    assert next_state(state, "fail") == FAILED


@pytest.mark.parametrize(
    ("state", "event", "message"),
    [
        (EVALUATING, "approved", "cannot take event 'approved'; it accepts: evaluated, fail"),
        (AWAITING_APPROVAL, "expanded", "it accepts: approved, fail"),
        (DONE, "fail", "terminal state"),
        (FAILED, "evaluated", "terminal state"),
        (EVALUATING, "launch", "unknown round event 'launch'"),
        ("paused", "evaluated", "unknown round state 'paused'"),
    ],
)
def test_invalid_transitions_raise_with_clear_message(state, event, message):
    with pytest.raises(InvalidTransition, match=message):
        next_state(state, event)


def test_step_jobs_per_state():
    assert [step_for_state(s) for s in STATES] == [
        "evaluate",
        "diagnose",
        None,
        "expand",
        "train",
        None,
        None,
    ]
    assert allowed_events(TRAINING) == ["trained", "fail"]
    assert allowed_events(DONE) == []


def test_resume_reruns_the_step_of_the_persisted_state():
    assert resume(EXPANDING).step == "expand"
    waiting = resume(AWAITING_APPROVAL)
    assert waiting.step is None and waiting.waiting_for_reviewer and not waiting.finished
    assert resume(FAILED).finished and resume(FAILED).step is None


def test_round_status_records_failure_reason_and_where():
    status = RoundStatus().advance("evaluated").advance("diagnosed", auto_approve=True)
    assert status.state == EXPANDING
    failed = status.advance("fail", reason="expansion job lost its worker")
    assert (failed.state, failed.failure_reason, failed.failed_in) == (
        FAILED,
        "expansion job lost its worker",
        EXPANDING,
    )
    with pytest.raises(InvalidTransition, match="requires a reason"):
        status.advance("fail")
