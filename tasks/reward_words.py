"""Why a run scored what it did, in words that quote no gold value.

A reward component's stored reason may quote the gold data ("expected {'code': 'X7'}, got
'42'"), so viewers of evaluation tasks get no stored reason (tasks/privacy.py,
``public_reward``). They still need to know why a run failed. The sentences here are made from
what a viewer may see anyway: each component's score and applicability, the run's finished
reason, and counts read from the stored reason by fixed patterns (how many requested changes
were missing, how many tool calls were well-formed). No text of the stored reason is copied, so
no gold value can pass through; everyone, reviewers included, reads the same summary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# How a run ended (training.models.Trajectory.FinishedReason values), said as a cause.
FINISHED_REASON_WORDS = {
    "answer": "The run ended with the model's final answer.",
    "step_budget": "The run ran out of steps: the step budget ended it before the task was done.",
    "token_budget": "The run ran out of tokens: the token budget ended it.",
    "format_error": (
        "The model's output could not be read as a tool call or an answer (format error)."
    ),
    "policy_error": "The policy failed while producing a step (policy error).",
}
EMPTY_OUTPUT = "The model answered with an empty message."
NO_REWARD = "No reward breakdown was recorded for this run, so there is no scored reason."

_WRITES_MADE = re.compile(r"(\d+)/(\d+) requested writes made")
_WRITES_EXTRA = re.compile(r"(\d+) writes not requested")
_WRITES_WHEN_NONE = re.compile(r"the run made (\d+) writes")
_CALLS_WELL_FORMED = re.compile(r"(\d+)/(\d+) tool calls well-formed")


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _score(component: Mapping[str, Any]) -> float | None:
    try:
        return float(component.get("score"))
    except (TypeError, ValueError):
        return None


def stored_components(reward: Any) -> dict[str, dict[str, Any]]:
    """The components of a stored reward, from either shape: ``RewardBreakdown.to_dict()``
    (nested under "components") or the older flat one ({name: {score, reason}, total})."""
    if not isinstance(reward, Mapping):
        return {}
    source = reward.get("components") if isinstance(reward.get("components"), Mapping) else reward
    components = {}
    for name, value in source.items():
        if isinstance(value, Mapping):
            components[name] = dict(value)
        elif isinstance(value, int | float) and not isinstance(value, bool) and name != "total":
            components[name] = {"score": value}
    return components


def _answer_words(score: float | None, reason: str) -> str:
    if reason.startswith("answer unusable"):
        return "the answer could not be read in the form the task asks for"
    if "verification script" in reason:
        if score is not None and score >= 1:
            return "the task's check accepted the final answer"
        return "the task's check rejected the final answer"
    if score is None:
        return "the final answer was not scored"
    if score >= 1:
        return "the final answer matched the expected answer"
    if score > 0:
        return f"the final answer was partly right ({round(score * 100)}% of it matched)"
    return "the final answer did not match the expected answer"


def _state_words(score: float | None, reason: str) -> str:
    if score is not None and score >= 1:
        return "the final state matched the expected one"
    made = _WRITES_MADE.search(reason)
    extra = _WRITES_EXTRA.search(reason)
    when_none = _WRITES_WHEN_NONE.search(reason)
    if when_none:
        changes = _plural(int(when_none.group(1)), "change")
        return f"the task asks for no changes, but the run made {changes}"
    parts = []
    if made:
        missing = int(made.group(2)) - int(made.group(1))
        if missing:
            parts.append(f"{_plural(missing, 'requested change')} missing")
    if extra:
        parts.append(f"{_plural(int(extra.group(1)), 'change')} not requested")
    if parts:
        return "the final state did not match: " + ", ".join(parts)
    return "the final state did not match the expected one"


def _format_words(score: float | None, reason: str) -> str:
    calls = _CALLS_WELL_FORMED.search(reason)
    if calls:
        good, total = int(calls.group(1)), int(calls.group(2))
        return f"{good} of {_plural(total, 'tool call')} well-formed"
    if reason == "no tool calls":
        return "the model made no tool calls"
    if score is not None and score >= 1:
        return "every tool call was well-formed"
    return "some tool calls were malformed"


def _efficiency_words(score: float | None, applicable: bool) -> str:
    if not applicable:
        return "not counted: only a solved run is scored for efficiency"
    if score is not None and score >= 1:
        return "no more tool calls than the gold run"
    return "more tool calls than the gold run needed"


def component_words(name: str, component: Mapping[str, Any]) -> str:
    """One component's result as a sentence without gold values."""
    score = _score(component)
    applicable = component.get("applicable") is not False
    reason = str(component.get("reason") or "")
    if name == "answer":
        return "the task asks for no answer" if not applicable else _answer_words(score, reason)
    if name == "state":
        return _state_words(score, reason)
    if name == "format":
        return _format_words(score, reason)
    if name == "efficiency":
        return _efficiency_words(score, applicable)
    if score is None:
        return "not scored"
    return f"scored {score:.2f} of 1"


def reward_words(reward: Any) -> dict[str, str]:
    """Every component of a stored reward said in words, by name."""
    return {name: component_words(name, c) for name, c in stored_components(reward).items()}


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _gate_words(gate: str) -> str:
    if not gate:
        return ""
    if "no valid tool call" in gate:
        return "The model made no valid tool call, so the run earns no credit."
    return _sentence(gate)


def failure_summary(
    reward: Any, finished_reason: str, empty_output_steps: Iterable[int] = ()
) -> list[str]:
    """Why a run failed, in sentences a viewer may read: how it ended, any empty model
    output, the reward's gate, and each component that fell short."""
    sentences = []
    ended = FINISHED_REASON_WORDS.get(finished_reason)
    if ended:
        sentences.append(ended)
    empty = list(empty_output_steps)
    if empty:
        where = ", ".join(str(index) for index in empty)
        label = "step" if len(empty) == 1 else "steps"
        sentences.append(f"{EMPTY_OUTPUT[:-1]} at {label} {where}.")
    gate = _gate_words(str(reward.get("gate") or "")) if isinstance(reward, Mapping) else ""
    if gate:
        sentences.append(gate)
    components = stored_components(reward)
    if not gate and not components:
        sentences.append(NO_REWARD)
    for name, component in components.items():
        score = _score(component)
        if component.get("applicable") is False or name == "efficiency":
            continue
        if score is None or score < 1:
            sentences.append(_sentence(component_words(name, component)))
    return sentences
