"""The LLM judge of a released question's answer against its success criteria.

A question imported from an Agent-World release (tasks/released_questions.py) keeps its
rubric's `success_criteria` ("names Cien años de soledad", "says 2 copies"). Its executable
reference is the JSON the chain's last call returned, which an agent rarely repeats whole: it
answers in words. Where an LLM is configured (aw_site.llm), an answer the executable check
does not accept is read against the criteria one by one; the answer is right when every
criterion is met. Without an LLM, or when the LLM fails or replies out of form, nothing is
judged here and the reward stays the executable one.

The reply must be JSON `{"met": [true|false, ...], "reason": "..."}` with one boolean per
criterion, in order; anything else is out of form, reported as an LLM failure.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol

from tasks.synthesis.task_spec import TaskSpec, canonical_json


class VerdictCache(Protocol):
    def get(self, key: str) -> Any: ...

    def set(self, key: str, verdict: Any) -> None: ...


@dataclass(frozen=True)
class RubricVerdict:
    """Which criteria the answer met, and why, in the judge's words (never the reference)."""

    met: tuple[bool, ...]
    reason: str

    @property
    def correct(self) -> bool:
        return bool(self.met) and all(self.met)

    @property
    def share(self) -> float:
        return sum(self.met) / len(self.met) if self.met else 0.0

    def words(self, cached: bool = False) -> str:
        source = "LLM judge on the success criteria" + (" (cached)" if cached else "")
        return f"{source}: {sum(self.met)} of {len(self.met)} met; {self.reason}"[:300]


def success_criteria(task: TaskSpec) -> list[str]:
    """The stored success criteria of a task (only released questions have them)."""
    found = (task.metadata or {}).get("success_criteria") or []
    return [str(c) for c in found if str(c).strip()] if isinstance(found, list) else []


def rubric_key(task: TaskSpec, answer: str) -> str:
    identity = task.signature or canonical_json([task.instruction, task.reference_answer])
    return hashlib.sha256(canonical_json(["rubric", identity, answer.strip()]).encode()).hexdigest()


def judge_success_criteria(
    task: TaskSpec, answer: str, cache: VerdictCache
) -> tuple[RubricVerdict, bool] | None:
    """(verdict, from the cache) from the configured LLM; None without an LLM, without
    criteria, or when the LLM fails or replies out of form."""
    criteria = success_criteria(task)
    if not criteria or not answer.strip():
        return None
    key = rubric_key(task, answer)
    cached = cache.get(key)
    if isinstance(cached, RubricVerdict):
        return cached, True
    try:
        from aw_site.llm import LLMError, complete_json, llm_settings, report_llm_failure
    except ImportError:
        return None
    settings = llm_settings()
    if settings is None:
        return None
    try:
        reply = complete_json(settings, judge_messages(task, criteria, answer))
    except LLMError as exc:
        report_llm_failure("LLM judge of the success criteria (the executable reward stands)", exc)
        return None
    verdict = read_verdict(reply, len(criteria))
    if isinstance(verdict, str):
        report_llm_failure("LLM judge of the success criteria", ValueError(verdict))
        return None
    cache.set(key, verdict)
    return verdict, False


def judge_messages(task: TaskSpec, criteria: list[str], answer: str) -> list[dict[str, str]]:
    numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(criteria, start=1))
    return [
        {
            "role": "system",
            "content": (
                "You grade an agent's answer to a task against the task's success criteria. "
                "The reference is what the tools returned on the way to the right answer. "
                'Reply with JSON {"met": [true|false, ...], "reason": "..."}: one boolean per '
                "criterion, in order; never repeat the reference in the reason."
            ),
        },
        {
            "role": "user",
            "content": (
                f"Task:\n{task.instruction}\n\nSuccess criteria:\n{numbered}\n\n"
                f"Reference:\n{json.dumps(task.reference_answer, ensure_ascii=False, default=str)}"
                f"\n\nAgent answer:\n{answer}"
            ),
        },
    ]


def read_verdict(reply: Any, criteria: int) -> RubricVerdict | str:
    """The verdict in a reply, or what is wrong with the reply, in words."""
    if not isinstance(reply, dict):
        return f"the reply is {type(reply).__name__}, not an object with `met`"
    met = reply.get("met")
    if not isinstance(met, list) or not all(isinstance(m, bool) for m in met):
        return "the reply's `met` is not a list of booleans"
    if len(met) != criteria:
        return f"the reply judges {len(met)} criteria where the task has {criteria}"
    return RubricVerdict(tuple(met), str(reply.get("reason") or "")[:200])
