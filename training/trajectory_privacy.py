"""What a viewer may see of a trajectory on an evaluation task.

A trajectory can give the gold data away as surely as the task's own fields can: an agent that
solved an arena task wrote the answer, its reads returned the gold results, and a fault-injection
policy *is* the gold chain played back with one fault. So for a viewer (``hides_answers``) of an
evaluation task:

- a fault-injection policy's run shows only the shape of each step (role, error kind, timing)
  and the fault it injected (kind and gold step index): its calls, arguments, results, messages,
  state diffs and final answer are the gold run's;
- any other policy's run has the gold values of its task (answer, gold arguments and results,
  expected diff) masked wherever they occur, and its final answer hidden whenever the answer
  earned any credit (a partly right answer quotes part of the gold one).

A final state hash equal to the expected one is the task's ``expected_state_hash``: hidden too.
Reviewers, admins and non-evaluation tasks see everything. The API and the replay page both use
``redaction_for``, ``redacted_fields`` and ``redact_steps``, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable
from copy import copy
from dataclasses import dataclass
from typing import Any

from tasks.answer_contract import SUBMIT_ANSWER
from tasks.gold_results import TRUNCATED_KEY, is_truncated, result_sha256
from tasks.privacy import HIDDEN_NOTE, MASK, MIN_SECRET_LENGTH, leaves, mask_secrets

# Step fields that carry what the agent did and saw.
STEP_PAYLOAD = ("content", "tool_name", "tool_arguments", "raw_tool_call", "tool_result", "error")
STEP_DIFF = "state_diff"
TEXT_FIELDS = ("content", "raw_tool_call", "error")
# What a viewer keeps of an injected fault's record.
PUBLIC_FAULT_KEYS = ("fault", "gold_step")


def is_oracle_run(policy_kind: str) -> bool:
    """A policy that reads the gold chain to act: the gold replay, and fault injection (the
    gold chain with one fault). Its run is the gold run; a viewer gets its shape only."""
    from training.models import Policy

    return policy_kind in Policy.GOLD_REPLAY_KINDS


@dataclass(frozen=True)
class TrajectoryRedaction:
    """How one trajectory is shown to one user: as stored, masked, or reduced to its shape."""

    hidden: bool  # the user may not see this task's gold data
    oracle: bool  # the run is the gold run itself (a fault-injection policy)
    secrets: frozenset[str]  # gold values (3 characters or more) masked inside texts
    answer_earned_credit: bool
    expected_state_hash: str = ""
    # Every scalar of the gold data, however short, masked where a whole value equals it (a
    # result's 4 or "HN"); substrings are masked for ``secrets`` only (3 characters and more).
    exact: frozenset[str] = frozenset()
    # The gold results stored as length + sha256 (too long to keep): a result equal to one of
    # them is masked whole.
    result_hashes: frozenset[str] = frozenset()
    final_answer_text: str = ""  # the answer as submitted, hidden wherever a step repeats it

    def value(self, value: Any) -> Any:
        """A step or trajectory value as this user may see it."""
        if not self.hidden:
            return value
        if self.oracle:
            return MASK if value not in (None, "", {}, []) else value
        if self.result_hashes and _result_hash(value) in self.result_hashes:
            return MASK
        return mask_value(value, self.secrets, self.exact)

    def text(self, text: Any) -> Any:
        """A message or error text: a step that repeats a credited answer is hidden whole (a
        short answer such as 4 cannot be masked inside a sentence)."""
        if not self.hidden or not isinstance(text, str) or not text:
            return self.value(text)
        if self.oracle:
            return MASK
        answer = self.final_answer_text.strip()
        if self.answer_earned_credit and answer and answer in text:
            return HIDDEN_NOTE
        return mask_secrets(text, self.secrets)

    def final_answer(self, answer: str) -> str:
        if not self.hidden or not answer:
            return answer
        if self.oracle or self.answer_earned_credit:
            return HIDDEN_NOTE
        return mask_secrets(answer, self.secrets)

    def metadata(self, metadata: Any) -> dict[str, Any]:
        """Policy metadata: a viewer keeps the injected fault's kind and gold step only."""
        if not isinstance(metadata, dict):
            return {}
        if not self.hidden:
            return metadata
        fault = metadata.get("injected_fault")
        if isinstance(fault, dict):
            return {"injected_fault": {k: fault[k] for k in PUBLIC_FAULT_KEYS if k in fault}}
        return {}


def mask_value(value: Any, secrets: Iterable[str], exact: Iterable[str] = ()) -> Any:
    """``value`` with every scalar equal to a secret (``exact``: however short) or text quoting
    one (``secrets``) masked, structure kept."""
    secrets, exact = frozenset(secrets), frozenset(exact) | frozenset(secrets)
    if not exact:
        return value
    if isinstance(value, dict):
        return {key: mask_value(item, secrets, exact) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(item, secrets, exact) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if str(value) in exact:
        return MASK
    if isinstance(value, str):
        return mask_secrets(value, secrets)
    return value


def _result_hash(value: Any) -> str:
    try:
        return result_sha256(value)
    except (TypeError, ValueError):
        return ""


def _gold_scalars(task: Any) -> tuple[frozenset[str], frozenset[str]]:
    """Every scalar of the task's gold data as text, and the hashes of its truncated results."""
    metadata = task.metadata if isinstance(task.metadata, dict) else {}
    extra = metadata.get("extra") if isinstance(metadata.get("extra"), dict) else {}
    chain = task.gold_chain if isinstance(task.gold_chain, list) else []
    results = [link.get("result") for link in chain if isinstance(link, dict)]
    results += list(extra.get("gold_results") or [])
    hashes = frozenset(r[TRUNCATED_KEY]["sha256"] for r in results if is_truncated(r))
    sources = [
        task.reference_answer,
        [link.get("arguments") for link in chain if isinstance(link, dict)],
        [r for r in results if not is_truncated(r)],
        task.expected_diff,
        extra.get("params"),
    ]
    scalars = {
        str(leaf)
        for leaf in leaves(sources)
        if leaf is not None and not isinstance(leaf, bool) and str(leaf).strip()
    }
    return frozenset(scalars), hashes


def _answer_score(reward: Any) -> float:
    if not isinstance(reward, dict):
        return 0.0
    components = reward.get("components") if isinstance(reward.get("components"), dict) else reward
    answer = components.get("answer") if isinstance(components, dict) else None
    score = answer.get("score") if isinstance(answer, dict) else answer
    applicable = answer.get("applicable", True) if isinstance(answer, dict) else True
    return float(score) if isinstance(score, int | float) and applicable else 0.0


def redaction_for(user: Any, trajectory: Any) -> TrajectoryRedaction:
    """The redaction of ``trajectory`` (with its task and policy) for ``user``."""
    from tasks.privacy import hides_answers

    task = trajectory.task
    hidden = hides_answers(user, getattr(trajectory, "task_split", None) or task.split)
    if not hidden:
        return TrajectoryRedaction(False, False, frozenset(), False)
    # Values only: the gold chain's structure (tool names, "read"/"write", the column names
    # its bindings use) is no secret, and masking it would blank ordinary words of a message.
    exact, hashes = _gold_scalars(task)
    secrets = {s for s in exact if len(s.strip()) >= MIN_SECRET_LENGTH}
    if task.expected_state_hash:
        secrets.add(task.expected_state_hash)
    return TrajectoryRedaction(
        hidden=True,
        oracle=is_oracle_run(trajectory.policy.kind),
        secrets=frozenset(secrets),
        answer_earned_credit=bool(trajectory.success) or _answer_score(trajectory.reward) > 0,
        expected_state_hash=task.expected_state_hash or "",
        exact=exact,
        result_hashes=hashes,
        final_answer_text=trajectory.final_answer or "",
    )


def redact_step(redaction: TrajectoryRedaction, step: Any) -> Any:
    """A copy of a stored step (model instance) with what the user may not see replaced."""
    if not redaction.hidden:
        return step
    shown = copy(step)  # a view of the row, never saved
    for field in (*STEP_PAYLOAD, STEP_DIFF):
        if field in TEXT_FIELDS:
            setattr(shown, field, redaction.text(getattr(step, field)))
        elif field != "tool_name" or redaction.oracle:  # the gold chain's order is gold data
            setattr(shown, field, redaction.value(getattr(step, field)))
    if redaction.answer_earned_credit and step.tool_name == SUBMIT_ANSWER:
        shown.tool_arguments = MASK  # the credited answer, submitted through the tool
    return shown


def redact_steps(redaction: TrajectoryRedaction, steps: Iterable[Any]) -> list[Any]:
    return [redact_step(redaction, step) for step in steps]


def redacted_fields(redaction: TrajectoryRedaction, trajectory: Any) -> dict[str, Any]:
    """The trajectory-level fields a user may see: final answer and state, diff, metadata."""
    state_hash = trajectory.final_state_hash
    if redaction.hidden and state_hash and state_hash == redaction.expected_state_hash:
        state_hash = MASK
    return {
        "final_answer": redaction.final_answer(trajectory.final_answer),
        "final_state_hash": state_hash,
        "state_diff": redaction.value(trajectory.state_diff),
        "metadata": redaction.metadata(trajectory.metadata),
    }
