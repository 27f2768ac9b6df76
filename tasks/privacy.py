"""Who may see the gold data of evaluation tasks, and the redacted forms everyone else gets.

Evaluation tasks are those whose split is arena or held-out (``Task.answers_hidden``). Their
gold data (reference answer, expected state hash and diff, gold chain, solution, verification
script, and the metadata that repeats them) is shown only to reviewers and admins;
``hides_answers(user, task)`` is the one place that decides it, and every API serializer and
console view that can show gold data asks it. Derived texts that may quote gold data (reward
reasons such as "expected 1234, got ...", error-label explanations and details, the written
diagnosis) are reduced for the others by the ``public_*`` helpers below (which tasks a written
diagnosis is about is arena's to say: arena/report_privacy.py).

The agent side (episode API, MCP sessions) never gets gold data, whoever asks: see
``agent_reward``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from aw_site.roles import REVIEWER, has_role
from tasks.models import EVALUATION_SPLITS

HIDDEN_NOTE = "hidden: evaluation task, reviewers only"

# Task fields that carry the answer or the way to it.
GOLD_FIELDS = (
    "gold_chain",
    "solution",
    "verification_script",
    "reference_answer",
    "expected_state_hash",
    "expected_diff",
    "audit",  # its checks name gold tools and perturbed arguments
    "signature",  # sha256 of the gold chain: a search over candidate chains would recover it
    "seed",
)
# Metadata kept for viewers (an allow-list: anything new stays hidden until listed here).
PUBLIC_METADATA = ("difficulty", "tools")
PUBLIC_METADATA_EXTRA = (
    "instruction_source",
    "template_instruction",
    "template",
    "pass_rate",
    "tier",
)
# Reward-component and label-evidence keys kept for viewers: scores, step indices, kinds.
PUBLIC_COMPONENT_KEYS = ("score", "weight", "applicable")
PUBLIC_LABEL_KEYS = ("kind", "label", "steps", "step", "capability")
# Keys dropped anywhere in proposal evidence: explanations quote answers and gold arguments.
PRIVATE_EVIDENCE_KEYS = frozenset(
    {"explanation", "details", "reason", "reference_answer", "expected", "gold", "gold_results"}
)
MASK = "[hidden]"
MIN_SECRET_LENGTH = 3


def is_evaluation_split(split: Any) -> bool:
    return split in EVALUATION_SPLITS


def may_see_answers(user: Any) -> bool:
    """Reviewers and admins see the gold data of every task."""
    return has_role(user, REVIEWER)


def hides_answers(user: Any, task_or_split: Any) -> bool:
    """Whether ``user`` must not see the gold data of this task (a Task or its split).

    True for an evaluation task (arena or held-out) unless the user is a reviewer or admin.
    An unknown split (None) counts as an evaluation task.
    """
    if may_see_answers(user):
        return False
    split = task_or_split if isinstance(task_or_split, str) else _split_of(task_or_split)
    return split is None or is_evaluation_split(split)


def request_user(context: dict[str, Any] | None) -> Any:
    """The user of a serializer context; None (who sees nothing hidden) without a request."""
    request = (context or {}).get("request")
    return getattr(request, "user", None)


def _split_of(task: Any) -> str | None:
    if task is None:
        return None
    if isinstance(task, dict):
        return task.get("split")
    return getattr(task, "split", None)


# --- redacted forms ---------------------------------------------------------------------------


def public_metadata(metadata: Any) -> dict[str, Any]:
    """Task metadata without what repeats the answer (gold results, answer spec, params)."""
    if not isinstance(metadata, dict):
        return {}
    kept = {key: metadata[key] for key in PUBLIC_METADATA if key in metadata}
    extra = metadata.get("extra")
    if isinstance(extra, dict):
        extra = {key: extra[key] for key in PUBLIC_METADATA_EXTRA if key in extra}
        if extra:
            kept["extra"] = extra
    return kept


def _component_scores(component: Any) -> Any:
    if isinstance(component, dict):
        return {key: component[key] for key in PUBLIC_COMPONENT_KEYS if key in component}
    if isinstance(component, bool | int | float) or component is None:
        return component
    return None


def public_reward(reward: Any) -> Any:
    """A reward breakdown with component scores, total and success only: no reason texts.

    Reads both the ``RewardBreakdown.to_dict()`` shape ({total, success, components: {name:
    {score, weight, reason, applicable}}}) and the flat stored shape ({name: {score, reason},
    total}).
    """
    if not isinstance(reward, dict):
        return reward if isinstance(reward, bool | int | float) or reward is None else None
    result: dict[str, Any] = {}
    for key, value in reward.items():
        if key == "components" and isinstance(value, dict):
            result[key] = {name: _component_scores(c) for name, c in value.items()}
        elif isinstance(value, dict):
            result[key] = _component_scores(value)
        elif isinstance(value, bool | int | float) or value is None:
            result[key] = value
    return result


def agent_reward(reward: dict[str, Any]) -> dict[str, Any]:
    """What the agent side (episode API, MCP) returns of a reward: scores, total, success and
    the gate sentence (which says only which parts were wrong)."""
    result = public_reward(reward)
    if isinstance(reward, dict) and isinstance(reward.get("gate"), str):
        result["gate"] = reward["gate"]
    return result


def public_label_evidence(evidence: Any) -> dict[str, Any]:
    """Error-label evidence reduced to its kind, step indices and capability."""
    if not isinstance(evidence, dict):
        return {}
    return {key: evidence[key] for key in PUBLIC_LABEL_KEYS if key in evidence}


def public_evidence(value: Any) -> Any:
    """Proposal evidence without explanations and details (they quote gold data)."""
    if isinstance(value, dict):
        return {
            key: public_evidence(item)
            for key, item in value.items()
            if key not in PRIVATE_EVIDENCE_KEYS
        }
    if isinstance(value, list):
        return [public_evidence(item) for item in value]
    return value


def leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def gold_secrets(tasks: Iterable[Any]) -> set[str]:
    """Texts that would give away the gold data of these tasks if quoted."""
    secrets: set[str] = set()
    for task in tasks:
        answer = getattr(task, "reference_answer", None)
        if answer is not None and not isinstance(answer, bool):
            secrets.add(str(answer)[:80])
            secrets.add(json.dumps(answer, ensure_ascii=False, default=str)[:80])
        metadata = getattr(task, "metadata", None) or {}
        extra = metadata.get("extra") if isinstance(metadata, dict) else None
        sources = [
            answer,
            getattr(task, "gold_chain", None),
            getattr(task, "expected_diff", None),
            (extra or {}).get("gold_results") if isinstance(extra, dict) else None,
            (extra or {}).get("params") if isinstance(extra, dict) else None,
        ]
        for leaf in leaves(sources):
            if leaf is None or isinstance(leaf, bool):
                continue
            secrets.add(str(leaf))
        if getattr(task, "expected_state_hash", ""):
            secrets.add(task.expected_state_hash)
    return {s for s in secrets if len(s.strip()) >= MIN_SECRET_LENGTH}


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    ordered = sorted(set(secrets), key=len, reverse=True)
    if not text or not ordered:
        return text
    return re.sub("|".join(re.escape(s) for s in ordered), MASK, text)


def public_analysis(text: str, tasks: Iterable[Any]) -> str:
    """A written diagnosis without the quoted label explanations and gold values.

    The offline analysis quotes one label explanation per "Example of ..." line; those lines go.
    An LLM-written analysis may quote them anywhere, so the gold values of the diagnosed tasks
    are masked too (values under three characters cannot be masked without mangling the text).
    """
    if not text:
        return text
    lines = [line for line in text.splitlines() if not line.startswith("Example of ")]
    return mask_secrets("\n".join(lines), gold_secrets(tasks))
