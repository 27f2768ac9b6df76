"""The one reward of training, the arena, the episode API and MCP episodes.

Success is the gate: a task is solved only when its answer and its final state are both right
(and the agent made at least one valid tool call: an answer without looking anything up is a
guess). A solved run scores 1.0, less a small efficiency penalty for extra calls. An unsolved
run earns partial credit, capped at ``RewardSettings.partial_cap`` (default 0.2), and only
when it made a valid tool call; its progress counts the share of the *requested* writes made
(a read-only task earns nothing for leaving the database alone) and how close a list or object
answer came. Answers are read through the task's answer contract (``tasks.answer_contract``),
state through the shared diff normaliser (``tasks.state_changes``); programmatic tasks are
judged by their own verification script, run in the sandbox when the episode ends
(``tasks.episode_outcome``). Reasons never quote the reference answer or the expected rows:
they reach agents and viewers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tasks.answer_contract import (
    SUBMIT_ANSWER,
    Submission,
    compare,
    normalise_text,
    read_submission,
    structured_answer,
    task_contract,
)
from tasks.reward_breakdown import RewardBreakdown, RewardComponent
from tasks.rubric_judge import judge_success_criteria, success_criteria
from tasks.state_changes import compare_diffs, given_key_tables
from tasks.synthesis.task_spec import TaskSpec, as_task, canonical_json
from tasks.trajectory import Step, Trajectory

log = logging.getLogger(__name__)

MALFORMED_KINDS = frozenset({"unknown_tool", "invalid_arguments", "format_error", "bad_json"})


def partial_cap_from_env() -> float:
    """``AW_REWARD_PARTIAL_CAP`` (default 0.2): must stay below a solved run's 0.9 floor."""
    raw = os.environ.get("AW_REWARD_PARTIAL_CAP", "0.2")
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"AW_REWARD_PARTIAL_CAP must be a number, not {raw!r}") from None
    if not 0.0 <= value < 0.9:
        raise ValueError("AW_REWARD_PARTIAL_CAP must be in [0, 0.9)")
    return value


@dataclass
class RewardSettings:
    """What a run can earn. Every field has one meaning; defaults are the paper-style gate."""

    partial_cap: float = field(default_factory=partial_cap_from_env)  # most an unsolved run earns
    efficiency_penalty: float = 0.1  # a solved run using many more calls than gold loses this
    llm_judge: bool = True  # judge free-text answers (and released questions' success
    # criteria) with aw_site.llm when configured


# --- reading trajectories -----------------------------------------------------------------


def tool_call_steps(trajectory: Trajectory) -> list[Step]:
    """Steps that are (attempted) environment tool calls, well-formed or not; submitting the
    answer is not one (it looks nothing up and changes nothing)."""
    return [
        s
        for s in trajectory.steps
        if (s.tool_call is not None or s.raw_tool_call is not None) and s.tool_name != SUBMIT_ANSWER
    ]


def valid_tool_calls(trajectory: Trajectory) -> int:
    """Calls that reached a tool: parsed, a known tool, arguments valid for its schema."""
    return sum(
        1
        for s in tool_call_steps(trajectory)
        if s.tool_call is not None and s.error_kind not in MALFORMED_KINDS
    )


# --- the LLM judge, for free-text answers only --------------------------------------------


class JudgeCache(Protocol):
    def get(self, key: str) -> tuple[bool, str] | None: ...

    def set(self, key: str, verdict: tuple[bool, str]) -> None: ...


class MemoryJudgeCache:
    """Judgements per (task, answer) in this process; repeated rollouts cost nothing."""

    def __init__(self, limit: int = 50_000):
        self.limit = limit
        self.verdicts: dict[str, tuple[bool, str]] = {}

    def get(self, key: str) -> tuple[bool, str] | None:
        return self.verdicts.get(key)

    def set(self, key: str, verdict: tuple[bool, str]) -> None:
        if len(self.verdicts) >= self.limit:
            self.verdicts.pop(next(iter(self.verdicts)))
        self.verdicts[key] = verdict


JUDGE_CACHE: JudgeCache = MemoryJudgeCache()


def judge_key(task: TaskSpec, answer: str) -> str:
    identity = task.signature or canonical_json([task.instruction, task.reference_answer])
    return hashlib.sha256(canonical_json([identity, normalise_text(answer)]).encode()).hexdigest()


def judge_free_text(task: TaskSpec, answer: str, cache: JudgeCache | None = None):
    """(correct, reason) from the configured LLM, cached; None without an LLM or on failure."""
    cache = cache or JUDGE_CACHE
    key = judge_key(task, answer)
    cached = cache.get(key)
    if cached is not None:
        return cached[0], f"LLM judge (cached): {cached[1]}"
    try:
        from aw_site.llm import LLMError, complete_json, llm_settings, report_llm_failure
    except ImportError:
        return None
    settings = llm_settings()
    if settings is None:
        return None
    messages = [
        {
            "role": "system",
            "content": (
                "You judge whether an agent's free-text answer gives the same information as the "
                'reference answer for the task. Reply with JSON {"correct": true|false, '
                '"reason": "..."} and never repeat the reference in the reason.'
            ),
        },
        {
            "role": "user",
            "content": (
                f"Task:\n{task.instruction}\n\nReference answer:\n"
                f"{json.dumps(task.reference_answer, default=str)}\n\nAgent answer:\n{answer}"
            ),
        },
    ]
    try:
        verdict = complete_json(settings, messages)
    except LLMError as exc:
        report_llm_failure("LLM judge (the answer is compared without it)", exc)
        return None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("correct"), bool):
        return None
    result = (verdict["correct"], str(verdict.get("reason", ""))[:200])
    cache.set(key, result)
    return result[0], f"LLM judge: {result[1]}"


# --- components ---------------------------------------------------------------------------


@dataclass
class _Answer:
    component: RewardComponent
    correct: bool
    partial: float
    submission: Submission | None


def _answer(task: TaskSpec, trajectory: Trajectory, settings: RewardSettings) -> _Answer:
    contract = task_contract(task)
    if not contract.expects_answer:
        component = RewardComponent(1.0, 0.0, "the task asks for no answer", applicable=False)
        return _Answer(component, True, 1.0, None)
    submission = read_submission(contract, trajectory.final_answer)
    verification = trajectory.verification
    if task.verification and isinstance(verification, Mapping) and "passed" in verification:
        if not submission.valid:
            reason = f"answer unusable: {submission.problem}"
            return _Answer(RewardComponent(0.0, 1.0, reason), False, 0.0, submission)
        passed = bool(verification["passed"])
        reason = "the task's verification script " + (
            "accepted the answer" if passed else "rejected the answer"
        )
        if verification.get("error"):
            reason += f" ({str(verification['error'])[:120]})"
        return _Answer(
            RewardComponent(1.0 if passed else 0.0, 1.0, reason), passed, float(passed), submission
        )
    if not submission.valid:
        reason = f"answer unusable: {submission.problem}"
        judged = _criteria_judged(task, trajectory.final_answer, settings)
        if judged is not None:
            return judged
        return _Answer(RewardComponent(0.0, 1.0, reason), False, 0.0, submission)
    check = compare(contract, task.reference_answer, submission.value)
    correct, partial, reason = check.correct, check.partial, check.reason
    if not correct:
        judged = _criteria_judged(task, trajectory.final_answer, settings)
        if judged is not None:
            return judged
    if not correct and contract.kind == "text" and settings.llm_judge:
        judged = judge_free_text(task, str(submission.value))
        if judged is not None:
            correct, reason = judged
            partial = float(correct)
    return _Answer(RewardComponent(partial, 1.0, reason), correct, partial, submission)


def _criteria_judged(task: TaskSpec, final: Any, settings: RewardSettings) -> _Answer | None:
    """A released question's answer the executable check did not accept, judged by the LLM on
    its stored success criteria (tasks.rubric_judge); None without criteria or an LLM."""
    if not settings.llm_judge or not success_criteria(task):
        return None
    found, value, _ = structured_answer(final)
    if found and value is None:
        return None
    if found:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    else:
        text = "" if final is None else str(final)
    judged = judge_success_criteria(task, text, JUDGE_CACHE)
    if judged is None:
        return None
    verdict, cached = judged
    component = RewardComponent(verdict.share, 1.0, verdict.words(cached))
    return _Answer(component, verdict.correct, verdict.share, Submission(True, value, None))


@dataclass
class _State:
    component: RewardComponent
    right: bool


def _state(task: TaskSpec, trajectory: Trajectory) -> _State:
    expected_hash = task.expected_state_hash
    actual_hash = trajectory.final_state_hash
    given = given_key_tables(task.expected_diff, task.gold_chain)
    comparison = compare_diffs(task.expected_diff, trajectory.state_diff, given)
    writes_requested = bool(comparison.expected)
    weight = 1.0 if writes_requested else 0.0  # read-only tasks: no credit for doing nothing
    if expected_hash and actual_hash and expected_hash == actual_hash:
        return _State(RewardComponent(1.0, weight, "final state equals the gold run's"), True)
    if comparison.same:  # surrogate ids and write order aside, the same rows
        reason = (
            "final state has the requested writes and nothing else"
            if writes_requested
            else "no writes, as the task asks"
        )
        return _State(RewardComponent(1.0, weight, reason), True)
    if not writes_requested:
        reason = (
            f"the task changes nothing, but the run made {sum(comparison.extra.values())} writes"
        )
        return _State(RewardComponent(0.0, 0.0, reason), False)
    reason = "final state differs from the gold run's: " + comparison.summary()
    return _State(RewardComponent(comparison.credit, weight, reason), False)


def _format(trajectory: Trajectory) -> RewardComponent:
    calls = tool_call_steps(trajectory)
    malformed = sum(1 for s in calls if s.tool_call is None or s.error_kind in MALFORMED_KINDS)
    finished = trajectory.finished_reason
    total = len(calls) + (1 if finished == "format_error" else 0)
    malformed += 1 if finished == "format_error" else 0
    if total == 0:
        return RewardComponent(0.0, 0.0, "no tool calls")
    reason = f"{total - malformed}/{total} tool calls well-formed"
    return RewardComponent((total - malformed) / total, 0.0, reason)


def _efficiency(task: TaskSpec, trajectory: Trajectory, solved: bool) -> RewardComponent:
    gold = len(task.gold_chain)
    used = len(tool_call_steps(trajectory))
    if not solved:
        return RewardComponent(0.0, 0.0, f"not solved ({used} calls)", applicable=False)
    value = 1.0 if used <= gold or not used else gold / used
    return RewardComponent(value, 0.0, f"{used} tool calls, gold run uses {gold}")


# --- the reward ---------------------------------------------------------------------------


def score(
    task: TaskSpec | dict[str, Any], trajectory: Trajectory, settings: RewardSettings | None = None
) -> RewardBreakdown:
    """Score a trajectory against a task's gold run (see the module docstring)."""
    task = as_task(task)
    settings = settings or RewardSettings()
    answer = _answer(task, trajectory, settings)
    state = _state(task, trajectory)
    format_ = _format(trajectory)
    valid_calls = valid_tool_calls(trajectory)
    needs_calls = bool(task.gold_chain)
    looked = valid_calls > 0 or not needs_calls
    solved = looked and answer.correct and state.right
    efficiency = _efficiency(task, trajectory, solved)
    components = {
        "answer": answer.component,
        "state": state.component,
        "format": format_,
        "efficiency": efficiency,
    }
    if solved:
        total = 1.0 - settings.efficiency_penalty * (1.0 - efficiency.score)
        gate = "solved: answer and final state right"
    elif not looked:
        total = 0.0
        gate = "not solved: no valid tool call, so no credit"
    else:
        parts = [c for c in (answer.component, state.component) if c.applicable and c.weight]
        weight = sum(c.weight for c in parts)
        progress = sum(c.score * c.weight for c in parts) / weight if weight else 0.0
        total = settings.partial_cap * progress * format_.score
        wrong = [
            name
            for name, ok in (("answer", answer.correct), ("final state", state.right))
            if not ok
        ]
        gate = f"not solved: {' and '.join(wrong)} wrong; partial credit only"
    return RewardBreakdown(round(min(1.0, max(0.0, total)), 6), solved, components, gate)
