"""The one reward function of training and the arena: a breakdown, not a single float.

``score(task, trajectory)`` checks four things against the gold run, each with a reason:
- answer: the final answer against the reference (normalised exact match, order-insensitive
  lists, numeric tolerance, nested dicts; an LLM judge when configured and exact match fails);
- state: the final state hash against the gold one, else partial credit from the row diff
  (missing and extra writes both cost);
- format: the fraction of well-formed tool calls;
- efficiency: tool calls used against the gold chain length.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from tasks.synthesis.task_spec import TaskSpec, as_task, canonical_json

log = logging.getLogger(__name__)

MALFORMED_KINDS = {"unknown_tool", "invalid_arguments", "format_error", "bad_json"}


@dataclass
class RewardWeights:
    """How much each component counts; components a task does not use are left out."""

    answer: float = 0.5  # final answer correctness
    state: float = 0.3  # final state against the gold run
    format: float = 0.1  # well-formed tool calls
    efficiency: float = 0.1  # tool calls against the gold chain length
    efficiency_needs_success: bool = True  # no efficiency credit for an unsolved task
    numeric_rel_tol: float = 1e-6  # relative tolerance for numbers
    numeric_abs_tol: float = 1e-9  # absolute tolerance for numbers
    llm_judge: bool = True  # ask aw_site.llm when configured and exact match fails


@dataclass
class RewardComponent:
    score: float
    weight: float
    reason: str
    applicable: bool = True


@dataclass
class RewardBreakdown:
    total: float
    components: dict[str, RewardComponent] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        """Solved: the answer and the final state both fully correct (where they apply)."""
        return all(
            c.score >= 1.0
            for k, c in self.components.items()
            if k in ("answer", "state") and c.applicable
        )

    def __getitem__(self, name: str) -> RewardComponent:
        return self.components[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "success": self.success,
            "components": {k: dataclasses.asdict(c) for k, c in self.components.items()},
        }


# --- trajectories -------------------------------------------------------------------------


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def tool_call_steps(trajectory: Any) -> list[Any]:
    """Steps that are (attempted) tool calls, well-formed or not."""
    return [
        s
        for s in (_get(trajectory, "steps") or [])
        if _get(s, "tool_call") is not None or _get(s, "raw_tool_call") is not None
    ]


# --- answers ------------------------------------------------------------------------------

_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


def normalise_text(value: Any) -> str:
    text = unicodedata.normalize("NFKC", str(value)).casefold().strip()
    text = re.sub(r"\s+", " ", text)
    return text.strip(" \t\"'`.;:!")


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        found = _NUMBER.findall(value.replace("$", ""))
        if len(found) == 1:
            return float(found[0].replace(",", ""))
    return None


def _decimals(value: Any) -> int | None:
    text = value if isinstance(value, str) else repr(value)
    match = re.search(r"\.(\d+)", text)
    return len(match.group(1)) if match else None


def _parse(answer: Any) -> Any:
    if isinstance(answer, str):
        text = answer.strip()
        fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
        if fence:
            text = fence.group(1).strip()
        try:
            answer = json.loads(text)
        except (json.JSONDecodeError, ValueError):
            return answer
    if isinstance(answer, dict) and len(answer) == 1 and "answer" in answer:
        return answer["answer"]
    return answer


def _split_list(text: str) -> list[list[str]]:
    """Ways to read a prose answer as a list: by lines, then by commas/semicolons too."""
    lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line) for line in text.splitlines()]
    lines = [line.strip() for line in lines if line.strip()]
    by_comma = [p.strip() for line in lines for p in re.split(r"[;,]", line) if p.strip()]
    return [lines, by_comma]


class AnswerMatcher:
    """Compares an answer to a reference; returns (score in [0, 1], reason)."""

    def __init__(self, weights: RewardWeights, ordered: bool = False):
        self.weights = weights
        self.ordered = ordered

    def numbers_equal(self, ref: float, got: float, shown: Any) -> bool:
        if math.isclose(
            ref, got, rel_tol=self.weights.numeric_rel_tol, abs_tol=self.weights.numeric_abs_tol
        ):
            return True
        places = _decimals(shown)
        return places is not None and places >= 2 and round(ref, places) == round(got, places)

    def compare(self, ref: Any, got: Any) -> tuple[float, str]:
        got = _parse(got)
        if ref is None:
            return (
                (1.0, "both empty")
                if got in (None, "", "null")
                else (0.0, f"expected nothing, got {got!r}")
            )
        if isinstance(ref, bool):
            value = (
                got
                if isinstance(got, bool)
                else {"true": True, "yes": True, "false": False, "no": False}.get(
                    normalise_text(got)
                )
            )
            return (1.0, "boolean match") if value is ref else (0.0, f"expected {ref}, got {got!r}")
        if isinstance(ref, int | float):
            number = _as_number(got)
            if number is not None and self.numbers_equal(float(ref), number, got):
                return 1.0, "numeric match within tolerance"
            return 0.0, f"expected {ref}, got {got!r}"
        if isinstance(ref, str):
            return self._compare_text(ref, got)
        if isinstance(ref, list):
            return self._compare_list(ref, got)
        if isinstance(ref, dict):
            return self._compare_dict(ref, got)
        return (1.0, "exact match") if ref == got else (0.0, f"expected {ref!r}, got {got!r}")

    def _compare_text(self, ref: str, got: Any) -> tuple[float, str]:
        if isinstance(got, list) and len(got) == 1:
            got = got[0]
        if isinstance(got, dict | list) or got is None:
            return 0.0, f"expected {ref!r}, got {got!r}"
        if str(got) == ref:
            return 1.0, "exact match"
        want, have = normalise_text(ref), normalise_text(got)
        if want == have:
            return 1.0, "match after normalisation"
        if isinstance(got, int | float) or _as_number(ref) is not None:
            a, b = _as_number(ref), _as_number(got)
            if a is not None and b is not None and self.numbers_equal(a, b, got):
                return 1.0, "numeric match within tolerance"
        bounded = re.search(rf"(?<!\w){re.escape(want)}(?!\w)", have)
        if want and bounded and len(have) <= 3 * len(want) + 40:
            return 1.0, "reference stated within a short answer"
        return 0.0, f"expected {ref!r}, got {str(got)[:120]!r}"

    def _compare_list(self, ref: list, got: Any) -> tuple[float, str]:
        if isinstance(got, str):
            readings = _split_list(got)
        elif isinstance(got, list):
            readings = [got]
        elif got is None:
            return 0.0, "no answer given"
        else:
            readings = [[got]]
        best = (0.0, "")
        for items in readings:
            result = self._list_score(ref, items)
            if result[0] >= best[0]:
                best = result
            if best[0] == 1.0:
                break
        return best

    def _list_score(self, ref: list, got: list) -> tuple[float, str]:
        if not ref and not got:
            return 1.0, "both lists empty"
        if self.ordered:
            same = sum(1 for a, b in zip(ref, got, strict=False) if self.compare(a, b)[0] >= 1.0)
            if same == len(ref) == len(got):
                return 1.0, "ordered list matches"
            return same / max(len(ref), len(got)), f"ordered list: {same}/{len(ref)} in place"
        left = list(got)
        missing = []
        for item in ref:
            hit = next((i for i, g in enumerate(left) if self.compare(item, g)[0] >= 1.0), None)
            if hit is None:
                missing.append(item)
            else:
                left.pop(hit)
        matched = len(ref) - len(missing)
        if not missing and not left:
            return 1.0, f"list matches ({len(ref)} items, order ignored)"
        precision = matched / len(got) if got else 0.0
        recall = matched / len(ref) if ref else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return f1, (
            f"list matches {matched}/{len(ref)} items (missing {_short(missing)}, extra {_short(left)})"
        )

    def _compare_dict(self, ref: dict, got: Any) -> tuple[float, str]:
        if not isinstance(got, dict):
            return 0.0, f"expected an object, got {str(got)[:120]!r}"
        if not ref:
            return (1.0, "both objects empty") if not got else (0.0, "expected an empty object")
        scores = {k: self.compare(v, got.get(k))[0] if k in got else 0.0 for k, v in ref.items()}
        wrong = sorted(k for k, s in scores.items() if s < 1.0)
        if not wrong:
            return 1.0, "object matches on every key"
        return sum(scores.values()) / len(scores), f"object differs on keys {wrong[:5]}"


def _short(items: list) -> str:
    text = json.dumps(items[:3], default=str)
    return text if len(items) <= 3 else text[:-1] + ", ...]"


def _judge(task: TaskSpec, answer: Any) -> tuple[float, str] | None:
    try:
        from aw_site.llm import LLMError, complete_json, llm_settings
    except ImportError:
        return None
    settings = llm_settings()
    if settings is None:
        return None
    messages = [
        {
            "role": "system",
            "content": (
                "You judge whether an agent's final answer gives the same information as the "
                'reference answer for the task. Reply with JSON {"correct": true|false, '
                '"reason": "..."}.'
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
        log.warning("LLM judge failed: %s", exc)
        return None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("correct"), bool):
        return None
    reason = str(verdict.get("reason", ""))[:200]
    return (1.0 if verdict["correct"] else 0.0), f"LLM judge: {reason}"


def answer_component(task: TaskSpec, trajectory: Any, weights: RewardWeights) -> RewardComponent:
    if task.reference_answer is None:
        return RewardComponent(1.0, 0.0, "task asks for no answer (state only)", applicable=False)
    answer = _get(trajectory, "final_answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return RewardComponent(0.0, weights.answer, "no final answer given")
    ordered = bool((task.metadata or {}).get("answer", {}).get("ordered"))
    value, reason = AnswerMatcher(weights, ordered).compare(task.reference_answer, answer)
    if value < 1.0 and weights.llm_judge:
        judged = _judge(task, answer)
        if judged is not None and judged[0] > value:
            value, reason = judged
        elif judged is not None:
            reason = f"{reason}; {judged[1]}"
    prefix = "answer correct" if value >= 1.0 else "answer wrong"
    return RewardComponent(value, weights.answer, f"{prefix}: {reason}")


# --- final state --------------------------------------------------------------------------


def diff_atoms(diff: dict[str, Any] | None) -> set[tuple]:
    """A row diff as a set of atomic writes: rows added/removed, columns changed."""
    atoms: set[tuple] = set()
    for table, change in (diff or {}).items():
        for row in change.get("added", []):
            atoms.add(("added", table, canonical_json(row)))
        for row in change.get("removed", []):
            atoms.add(("removed", table, canonical_json(row)))
        for item in change.get("changed", []):
            before, after = item.get("before") or {}, item.get("after") or {}
            key = canonical_json(item.get("key"))
            for column in sorted(set(before) | set(after)):
                if before.get(column) != after.get(column):
                    atoms.add(("changed", table, key, column, canonical_json(after.get(column))))
    return atoms


def describe_atom(atom: tuple) -> str:
    if atom[0] == "changed":
        return f"{atom[1]} {atom[2]} set {atom[3]}={atom[4]}"
    return f"{atom[1]} row {atom[0]} {atom[2][:80]}"


def state_component(task: TaskSpec, trajectory: Any, weights: RewardWeights) -> RewardComponent:
    expected_hash = task.expected_state_hash
    actual_hash = _get(trajectory, "final_state_hash")
    if expected_hash and actual_hash and expected_hash == actual_hash:
        return RewardComponent(1.0, weights.state, "final state hash matches the gold run")
    gold = diff_atoms(task.expected_diff)
    made = diff_atoms(_get(trajectory, "state_diff"))
    if not gold and not made:
        if expected_hash and actual_hash:
            return RewardComponent(
                0.5, weights.state, "state hash differs but no row diff recorded"
            )
        return RewardComponent(1.0, weights.state, "no state changes, as in the gold run")
    matched = gold & made
    missing = sorted(gold - made)
    extra = sorted(made - gold)
    value = len(matched) / (len(gold) + len(extra))
    parts = [f"{len(matched)}/{len(gold)} expected writes made"]
    if missing:
        parts.append(f"missing writes: {'; '.join(describe_atom(a) for a in missing[:3])}")
    if extra:
        parts.append(f"extra writes: {'; '.join(describe_atom(a) for a in extra[:3])}")
    if not missing and not extra:
        value = 0.9  # same row diff, different hash (a change the diff cannot see)
        parts.append("row diff matches but the state hash differs")
    return RewardComponent(
        value, weights.state, "state differs from the gold run: " + ", ".join(parts)
    )


# --- format and efficiency ----------------------------------------------------------------


def format_component(trajectory: Any, weights: RewardWeights) -> RewardComponent:
    calls = tool_call_steps(trajectory)
    bad = [
        s for s in calls if _get(s, "tool_call") is None or _get(s, "error_kind") in MALFORMED_KINDS
    ]
    finished = _get(trajectory, "finished_reason")
    total = len(calls) + (1 if finished == "format_error" else 0)
    malformed = len(bad) + (1 if finished == "format_error" else 0)
    if total == 0:
        return RewardComponent(1.0, weights.format, "no tool calls to check")
    value = (total - malformed) / total
    reason = f"{total - malformed}/{total} tool calls well-formed"
    if finished == "format_error":
        reason += " (episode ended on a format error)"
    return RewardComponent(value, weights.format, reason)


def efficiency_component(
    task: TaskSpec, trajectory: Any, weights: RewardWeights, solved: bool
) -> RewardComponent:
    gold = len(task.gold_chain)
    used = len(tool_call_steps(trajectory))
    if weights.efficiency_needs_success and not solved:
        return RewardComponent(
            0.0, weights.efficiency, f"no efficiency credit: task not solved ({used} calls)"
        )
    if used <= gold:
        return RewardComponent(1.0, weights.efficiency, f"{used} tool calls, gold run uses {gold}")
    return RewardComponent(
        gold / used if used else 0.0, weights.efficiency, f"{used} tool calls, gold run uses {gold}"
    )


# --- the reward ---------------------------------------------------------------------------


def score(
    task: TaskSpec | dict[str, Any], trajectory: Any, weights: RewardWeights | None = None
) -> RewardBreakdown:
    """Score a trajectory against a task's gold run; total in [0, 1] over applicable parts."""
    task = as_task(task)
    weights = weights or RewardWeights()
    answer = answer_component(task, trajectory, weights)
    state = state_component(task, trajectory, weights)
    solved = (not answer.applicable or answer.score >= 1.0) and state.score >= 1.0
    components = {
        "answer": answer,
        "state": state,
        "format": format_component(trajectory, weights),
        "efficiency": efficiency_component(task, trajectory, weights, solved),
    }
    used = [c for c in components.values() if c.applicable and c.weight > 0]
    weight = sum(c.weight for c in used)
    total = sum(c.weight * c.score for c in used) / weight if weight else 0.0
    return RewardBreakdown(total=round(min(1.0, max(0.0, total)), 6), components=components)
