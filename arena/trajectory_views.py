"""Console: trajectories, to find failures (filtered by outcome, environment, arena failure label
and round) and replay one step by step against the gold run.

They read arena's labels and rounds, so they live in arena, the top layer; the templates keep
their names (training/trajectory_*.html) and the URLs theirs (aw_site/console_urls.py).
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404, render

from arena.models import ArenaEvaluation, EvolutionRound, FailureLabel
from aw_site.console import console_page, page_of, pretty_json, whole_number
from environments.models import Environment
from tasks.privacy import (
    HIDDEN_NOTE,
    hides_answers,
    may_see_answers,
    public_label_evidence,
    public_reward,
)
from tasks.reward_words import failure_summary, reward_words
from training.models import Trajectory
from training.trajectory_comparison import comparison_for
from training.trajectory_privacy import redact_steps, redacted_fields, redaction_for

TRAJECTORIES_PER_PAGE = 40
# A file path on the server (two or more segments), as a traceback or sandbox error quotes it.
SERVER_PATH = re.compile(r"(?<![\w:/.])(?:/[\w.@-]+){2,}/?")
SERVER_PATH_NOTE = "[server path]"
REWARD_COMPONENTS = ("answer", "state", "format", "efficiency")


@console_page
def trajectory_list(request):
    # Filters on labels and rounds use EXISTS, so the page needs no DISTINCT over a join.
    trajectories = Trajectory.objects.select_related("task", "environment", "policy")
    filters: dict[str, Any] = {}
    outcome = request.GET.get("outcome", "")
    if outcome == "failed":
        trajectories = trajectories.filter(success=False)
    elif outcome == "succeeded":
        trajectories = trajectories.filter(success=True)
    filters["outcome"] = outcome
    environment = whole_number(request.GET.get("environment"))
    if environment is not None:
        trajectories = trajectories.filter(environment_id=environment)
    filters["environment"] = environment
    label = request.GET.get("label", "").strip()
    if label:
        labelled = FailureLabel.objects.filter(trajectory=OuterRef("pk"), label=label)
        trajectories = trajectories.filter(Exists(labelled))
    filters["label"] = label
    round_number = whole_number(request.GET.get("round"))
    if round_number is not None:
        evaluated = ArenaEvaluation.trajectories.through.objects.filter(
            trajectory_id=OuterRef("pk"), arenaevaluation__round__number=round_number
        )
        trajectories = trajectories.filter(Exists(evaluated))
    filters["round"] = round_number
    reason = request.GET.get("reason", "")
    if reason in Trajectory.FinishedReason.values:
        trajectories = trajectories.filter(finished_reason=reason)
    filters["reason"] = reason
    page = page_of(
        request,
        trajectories.order_by("-created_at", "-id").prefetch_related("failure_labels"),
        TRAJECTORIES_PER_PAGE,
    )
    for trajectory in page.object_list:
        trajectory.labels = sorted({fl.label for fl in trajectory.failure_labels.all()})
    context = {
        "page": page,
        "filters": filters,
        "labels": FailureLabel.objects.order_by("label").values_list("label", flat=True).distinct(),
        "rounds": EvolutionRound.objects.order_by("-number").values_list("number", flat=True),
        "environments": Environment.objects.filter(
            Exists(Trajectory.objects.filter(environment=OuterRef("pk")))
        )
        .order_by("name", "-version")
        .values("id", "name", "version"),
        "reasons": Trajectory.FinishedReason.values,
    }
    return render(request, "training/trajectory_list.html", context)


def without_server_paths(text: str) -> str:
    """An error text as a viewer reads it: where the server keeps its files is not theirs to see."""
    return SERVER_PATH.sub(SERVER_PATH_NOTE, text) if text else text


def is_empty_output(step: Any) -> bool:
    """A model step that said nothing: no message, no tool call, not even a malformed one."""
    return (
        step.role == "assistant"
        and not (step.content or "").strip()
        and not step.tool_name
        and not (step.raw_tool_call or "").strip()
    )


def evidence_in_words(evidence: dict[str, Any]) -> str:
    """What a viewer keeps of a label's evidence (its steps and capability) as one line."""
    parts = []
    steps = evidence.get("steps")
    if isinstance(steps, list) and steps:
        label = "step" if len(steps) == 1 else "steps"
        parts.append(f"at {label} " + ", ".join(str(s) for s in steps))
    elif isinstance(evidence.get("step"), int):
        parts.append(f"at step {evidence['step']}")
    if evidence.get("capability"):
        parts.append(f"capability: {evidence['capability']}")
    return " · ".join(parts)


def reward_breakdown(
    reward: Any, total: float, words: dict[str, str] | None = None
) -> dict[str, Any]:
    """Components (score, reason, and the gold-free ``words``) in a stable order, and the total,
    from the reward JSON."""
    words = words or {}
    reward = reward if isinstance(reward, dict) else {}
    if isinstance(reward.get("components"), dict):
        # tasks.reward.RewardBreakdown.to_dict(): components nested, inapplicable ones marked.
        nested = {
            k: v
            for k, v in reward["components"].items()
            if not (isinstance(v, dict) and v.get("applicable") is False)
        }
        reward = {**nested, "total": reward.get("total", total)}
    components = []
    names = [n for n in REWARD_COMPONENTS if n in reward] + sorted(
        k for k, v in reward.items() if k not in REWARD_COMPONENTS and isinstance(v, dict)
    )
    for name in names:
        value = reward[name]
        if isinstance(value, dict):
            score, reason = value.get("score"), value.get("reason", "")
            weight = value.get("weight")
        else:
            score, reason, weight = value, "", None
        try:
            score = float(score)
        except (TypeError, ValueError):
            score = None
        components.append(
            {
                "name": name,
                "score": score,
                "percent": round(max(0.0, min(1.0, score)) * 100) if score is not None else 0,
                "reason": reason if len(reason) <= 300 else reason[:297] + "...",
                "weight": weight,
                "words": words.get(name, ""),
            }
        )
    total_value = reward.get("total", total)
    try:
        total_value = float(total_value)
    except (TypeError, ValueError):
        total_value = total
    return {"components": components, "total": total_value}


@console_page
def trajectory_detail(request, pk: int):
    trajectory = get_object_or_404(
        Trajectory.objects.select_related("task", "environment", "policy", "training_run"), pk=pk
    )
    stored_steps = list(trajectory.steps.order_by("index"))
    redaction = redaction_for(request.user, trajectory)
    steps = redact_steps(redaction, stored_steps)
    shown = redacted_fields(redaction, trajectory)  # final answer, state and diff, metadata
    reviewer = may_see_answers(request.user)
    for step in steps:
        if not reviewer:
            step.error = without_server_paths(step.error)
        step.arguments_json = pretty_json(step.tool_arguments)
        step.result_json = pretty_json(step.tool_result)
        step.diff_json = pretty_json(step.state_diff)
    task = trajectory.task
    # Evaluation tasks: a viewer sees no gold chain, answer or solution, no reward reasons and
    # only the kind and steps of each label (their explanations quote the gold data).
    hidden = hides_answers(request.user, task)
    gold_chain = [] if hidden or not isinstance(task.gold_chain, list) else task.gold_chain
    for link in gold_chain:
        if isinstance(link, dict):
            link["arguments_json"] = pretty_json(link.get("arguments"))
    called = [s.tool_name for s in steps if s.tool_name]
    comparison = comparison_for(request.user, trajectory, stored_steps)
    for row in comparison["steps"]:
        row["gold_arguments_json"] = pretty_json(row.get("gold_arguments"))
        row["agent_arguments_json"] = pretty_json(row.get("agent_arguments"))
        row["gold_result_json"] = pretty_json(row.get("gold_result"))
        row["agent_result_json"] = pretty_json(row.get("agent_result"))
    by_agent_step = {
        row["agent_step"]: row for row in comparison["steps"] if row["agent_step"] is not None
    }
    for step in steps:
        step.gold_match = by_agent_step.get(step.index)
    labels = FailureLabel.objects.filter(trajectory=trajectory).select_related("report__round")
    for label in labels:
        if hidden:  # a viewer reads the kept evidence (steps, capability) in words, not JSON
            label.evidence_words = evidence_in_words(public_label_evidence(label.evidence))
        else:
            label.evidence_json = pretty_json(label.evidence)
    reward = public_reward(trajectory.reward) if hidden else trajectory.reward
    # Said in words from the stored reward's scores and counts, never its text: gold-free, so
    # viewers read the same reasons as reviewers (tasks/reward_words.py).
    empty_output = [s.index for s in stored_steps if is_empty_output(s)]
    for step in steps:
        step.empty_output = step.index in empty_output
    why_failed = (
        []
        if trajectory.success
        else failure_summary(trajectory.reward, trajectory.finished_reason, empty_output)
    )
    context = {
        "trajectory": trajectory,
        "task": task,
        "answers_hidden": hidden,
        "hidden_note": HIDDEN_NOTE,
        "steps": steps,
        "gold_chain": [g for g in gold_chain if isinstance(g, dict)],
        "called_tools": called,
        "comparison": comparison,
        "reward": reward_breakdown(
            reward, trajectory.total_reward, reward_words(trajectory.reward)
        ),
        "why_failed": why_failed,
        "labels": labels,
        "shown": shown,
        "oracle_hidden": redaction.hidden and redaction.oracle,
        "injected_fault": shown["metadata"].get("injected_fault"),
        "final_diff_json": pretty_json(shown["state_diff"]),
        "rounds": sorted({e.round.number for e in trajectory.evaluations.select_related("round")}),
    }
    return render(request, "training/trajectory_detail.html", context)
