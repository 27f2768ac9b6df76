"""A proposal's parameters and evidence in words, with links to what the evidence cites.

The evidence names tasks (``task_ids``, each example's ``task_id``) and sometimes trajectories;
a reviewer judges a proposal by opening those runs, so each id links to the replay of the
round's evaluation run of that task (``/trajectories/<id>/``), else to the task page. Viewers
get the evidence reduced by ``tasks.privacy.public_evidence`` (no explanations that quote
gold values); the raw JSON is shown to reviewers only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from arena.models import ArenaEvaluation
from tasks.models import Task

TRAJECTORY_KEYS = ("trajectory_ids", "trajectories", "trajectory_id")
SHOWN_KEYS = {"failed_episodes", "labels", "task_ids", "examples", "success_rate", "mean_reward"}
SHOWN_KEYS |= {"environments", *TRAJECTORY_KEYS}


@dataclass(frozen=True)
class Citation:
    """One task or trajectory the evidence cites, with where to open it."""

    text: str
    url: str | None
    title: str


def words(name: str) -> str:
    return str(name).replace("_", " ")


def _listed(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "not set"
    return str(value)


def params_in_words(params: Any) -> list[tuple[str, str]]:
    """Each parameter as (name in words, value in words), empty lists said as "none"."""
    if not isinstance(params, dict):
        return []
    return [(words(name), _listed(value)) for name, value in params.items()]


def cited_task_ids(evidence: Any) -> list[str]:
    if not isinstance(evidence, dict):
        return []
    ids = [str(t) for t in evidence.get("task_ids") or [] if t is not None]
    ids += [
        str(e["task_id"])
        for e in evidence.get("examples") or []
        if isinstance(e, dict) and e.get("task_id") is not None
    ]
    return list(dict.fromkeys(ids))


def cited_trajectory_ids(evidence: Any) -> list[str]:
    if not isinstance(evidence, dict):
        return []
    ids: list[str] = []
    for key in TRAJECTORY_KEYS:
        value = evidence.get(key)
        ids += [str(v) for v in (value if isinstance(value, list) else [value]) if v is not None]
    return list(dict.fromkeys(ids))


def citation_links(
    evidences: Iterable[Any], evaluation: ArenaEvaluation | None
) -> dict[str, Citation]:
    """For every task id the evidences cite: the replay of its run in this evaluation (a
    failed run first), else its task page; ids that match nothing stay plain text."""
    task_ids = {i for evidence in evidences for i in cited_task_ids(evidence) if i.isdigit()}
    citations: dict[str, Citation] = {}
    if evaluation is not None and task_ids:
        runs = evaluation.trajectories.filter(task_id__in=task_ids).order_by("success", "pk")
        for task_id, pk in runs.values_list("task_id", "pk"):
            key = str(task_id)
            if key not in citations:
                citations[key] = Citation(
                    f"task {key}",
                    reverse("trajectory-detail", args=[pk]),
                    f"replay of the evaluation run of task {key} (trajectory {pk})",
                )
    missing = task_ids - set(citations)
    for pk in Task.objects.filter(pk__in=missing).values_list("pk", flat=True):
        citations[str(pk)] = Citation(
            f"task {pk}", reverse("task-detail", args=[pk]), f"task {pk} (no evaluation run)"
        )
    return citations


def _task(task_id: str, citations: dict[str, Citation]) -> Citation:
    return citations.get(task_id) or Citation(f"task {task_id}", None, "no such task stored")


def _percent(value: Any) -> str:
    return f"{100 * value:.0f}%" if isinstance(value, int | float) else _listed(value)


def evidence_in_words(evidence: Any, citations: dict[str, Citation]) -> dict[str, Any]:
    """The evidence as sentences, cited runs and examples; keys it does not know are listed
    by name so nothing stored is hidden from a reviewer who reads the words only."""
    if not isinstance(evidence, dict) or not evidence:
        return {}
    facts: list[str] = []
    if isinstance(evidence.get("failed_episodes"), int):
        count = evidence["failed_episodes"]
        facts.append(f"{count} failed episode{'s' if count != 1 else ''} in this evaluation")
    labels = evidence.get("labels")
    if isinstance(labels, dict) and labels:
        facts.append("error labels: " + ", ".join(f"{words(k)} ×{v}" for k, v in labels.items()))
    if "success_rate" in evidence:
        facts.append(f"success rate {_percent(evidence['success_rate'])}")
    if isinstance(evidence.get("mean_reward"), int | float):
        facts.append(f"mean reward {evidence['mean_reward']:.2f}")
    if evidence.get("environments"):
        facts.append("environments already there: " + _listed(evidence["environments"]))
    facts += [f"{words(k)}: {_listed(v)}" for k, v in evidence.items() if k not in SHOWN_KEYS]
    examples = []
    for example in evidence.get("examples") or []:
        if not isinstance(example, dict):
            continue
        steps = example.get("steps") or []
        examples.append(
            {
                "task": _task(str(example.get("task_id")), citations),
                "label": words(example.get("label") or "failure"),
                "steps": ("step " if len(steps) == 1 else "steps ") + _listed(steps)
                if steps
                else "",
                "explanation": example.get("explanation") or "",
            }
        )
    return {
        "facts": facts,
        "tasks": [
            _task(i, citations) for i in cited_task_ids({"task_ids": evidence.get("task_ids")})
        ],
        "trajectories": [
            Citation(
                f"trajectory {i}",
                reverse("trajectory-detail", args=[i]),
                f"replay of trajectory {i}",
            )
            if i.isdigit()
            else Citation(f"trajectory {i}", None, "not a trajectory id")
            for i in cited_trajectory_ids(evidence)
        ],
        "examples": examples,
    }
