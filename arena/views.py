"""Console: evolution rounds with their scores, diagnosis and proposals, and the review actions.

Starting a round and reviewing a proposal go through ``arena.rounds`` (start_round,
review_proposal); these views only check the role, read the form and show the outcome.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe

from arena.lineage import following_round, is_calibration_round, score_history
from arena.models import ArenaEvaluation, DiagnosisReport, EvolutionRound, ExpansionProposal
from arena.proposal_text import (
    Citation,
    citation_links,
    evidence_in_words,
    params_in_words,
)
from arena.rejections import REJECTION_RULE, rejected_environments
from arena.report_privacy import public_report_analysis
from arena.review_queue import bulk_review, group_proposals
from arena.round_config import RoundConfig
from aw_site import charts
from aw_site.console import JOB_POLL, console_action, console_page, pretty_json
from aw_site.labels import in_words
from aw_site.roles import REVIEWER
from tasks.models import Task
from tasks.privacy import may_see_answers, public_evidence
from training.models import Policy

TERMINAL = (EvolutionRound.Status.DONE, EvolutionRound.Status.FAILED)
PIPELINE = ("evaluating", "diagnosing", "awaiting_approval", "expanding", "training", "done")


SCORE_MEANING = "success rate: the share of held-out tasks solved (answer and final state right)"


def scores_chart(
    rounds: list[EvolutionRound], title: str = "Success rate by category, round by round"
) -> str:
    """One line per category across rounds (x = round number); beyond a few categories, one
    small chart per category (charts.small_multiples)."""
    series: dict[str, list[tuple[float, float]]] = {}
    for evolution_round in sorted(rounds, key=lambda r: r.number):
        scores = evolution_round.scores if isinstance(evolution_round.scores, dict) else {}
        for category, score in scores.items():
            if isinstance(score, int | float):
                series.setdefault(str(category), []).append((evolution_round.number, float(score)))
    return charts.line_chart(
        dict(sorted(series.items())),
        y_range=(0.0, 1.0),
        x_label="round",
        y_label="success rate",
        title=title,
        empty_message="No scores yet",
    )


def kind_rows(evaluation: Any) -> list[dict[str, Any]]:
    """The scoreboard's rows per task kind (graph, programmatic), with the change in mean
    reward since the previous round, and each kind's rows per category."""
    if evaluation is None or not isinstance(evaluation.results, dict):
        return []
    results = evaluation.results
    deltas = (evaluation.comparison or {}).get("task_kind", {}) if evaluation.comparison else {}
    per_category = results.get("category_kind") or {}
    rows = []
    for kind, cell in sorted((results.get("task_kind") or {}).items()):
        rows.append(
            {
                "kind": kind,
                **cell,
                "delta": (deltas.get(kind) or {}).get("mean_reward"),
                "categories": [
                    {"category": name.rsplit(" / ", 1)[0], **values}
                    for name, values in sorted(per_category.items())
                    if name.endswith(f" / {kind}")
                ],
            }
        )
    return rows


def round_difficulty_chart(number: int) -> str:
    """The difficulty distribution of the round's fresh arena tasks, by kind."""
    counts = (
        Task.objects.filter(split=Task.Split.ARENA, round_number=number)
        .order_by()
        .values_list("difficulty", "kind")
        .annotate(n=Count("id"))
    )
    return charts.difficulty_chart(
        counts, title=f"Round {number} arena tasks by gold-run length, by kind"
    )


def mean_score(scores: Any) -> float | None:
    values = (
        [v for v in (scores or {}).values() if isinstance(v, int | float)]
        if isinstance(scores, dict)
        else []
    )
    return sum(values) / len(values) if values else None


def _category_cells(evaluation: ArenaEvaluation | None) -> dict[str, dict]:
    results = evaluation.results if evaluation and isinstance(evaluation.results, dict) else {}
    return results.get("category") or {}


def score_rows(
    evolution_round: EvolutionRound,
    history: list[EvolutionRound],
    evaluation: ArenaEvaluation | None = None,
) -> list[dict]:
    """This round's category success rates with their 95% interval and episode count, and the
    change since the previous round that scored the category."""
    cells = _category_cells(evaluation)
    scores = evolution_round.scores if isinstance(evolution_round.scores, dict) else {}
    earlier = sorted(
        (r for r in history if r.number < evolution_round.number), key=lambda r: -r.number
    )
    rows = []
    for category, value in sorted(scores.items()):
        previous = next(
            (
                r.scores[category]
                for r in earlier
                if isinstance(r.scores, dict) and isinstance(r.scores.get(category), int | float)
            ),
            None,
        )
        delta = (
            value - previous if isinstance(value, int | float) and previous is not None else None
        )
        cell = cells.get(category) or {}
        low, high = cell.get("success_interval") or (None, None)
        rows.append(
            {
                "category": category,
                "score": value,
                "delta": delta,
                "episodes": cell.get("episodes"),
                "low": low,
                "high": high,
            }
        )
    return rows


def label_mix(report: DiagnosisReport | None, later: DiagnosisReport | None) -> list[dict]:
    """Each error label's share of all labels in this round and in the next one (the policy
    this round trained), so a reviewer sees which failures the round's training moved; and how
    many of this round's failed episodes carried it, out of how many (a failed episode can carry
    several labels, so a label on every failure may still be 42% of the labels)."""

    def shares(which: DiagnosisReport | None) -> dict[str, float]:
        counts = (which.distribution or {}).get("by_label") if which else None
        counts = {k: v for k, v in (counts or {}).items() if isinstance(v, int | float)}
        total = sum(counts.values())
        return {k: v / total for k, v in counts.items()} if total else {}

    before, after = shares(report), shares(later)
    episodes, failed = failed_episodes_by_label(report)
    return [
        {
            "label": label,
            "before": before.get(label),
            "after": after.get(label) if later else None,
            "episodes": episodes.get(label, 0) if failed else None,
            "failed": failed,
        }
        for label in sorted(set(before) | set(after), key=lambda k: -before.get(k, 0.0))
    ]


def failed_episodes_by_label(report: DiagnosisReport | None) -> tuple[dict[str, int], int]:
    """({label: failed episodes with it}, failed episodes): as the diagnosis stored them, else
    counted from its labelled trajectories (reports made before it stored them); ({}, 0) when
    neither is known."""
    if report is None:
        return {}, 0
    distribution = report.distribution if isinstance(report.distribution, dict) else {}
    stored, failed = distribution.get("episodes_by_label"), distribution.get("failed_episodes")
    if isinstance(stored, dict) and isinstance(failed, int):
        return {k: int(v) for k, v in stored.items() if isinstance(v, int | float)}, failed
    labels = report.labels.order_by()
    counted = dict(
        labels.values_list("label").annotate(n=Count("trajectory", distinct=True)).order_by()
    )
    return counted, labels.values("trajectory").distinct().count()


def proposal_effects(
    proposals: list[ExpansionProposal],
    evaluation: ArenaEvaluation | None,
    later: ArenaEvaluation | None,
) -> dict[int, dict]:
    """For each applied proposal, the success rate of its own category in this round and in
    the next round's evaluation of the policy this round trained."""
    before, after = _category_cells(evaluation), _category_cells(later)
    effects = {}
    for proposal in proposals:
        if proposal.status != ExpansionProposal.Status.APPLIED or proposal.category is None:
            continue
        name = proposal.category.primary().name
        was, now = before.get(name) or {}, after.get(name) or {}
        effects[proposal.pk] = {
            "category": name,
            "before": was.get("success_rate"),
            "before_interval": was.get("success_interval"),
            "before_episodes": was.get("episodes"),
            "after": now.get("success_rate") if later else None,
            "after_interval": now.get("success_interval") if later else None,
            "after_episodes": now.get("episodes") if later else None,
        }
    return effects


def _counts(mapping: Any) -> list[tuple[str, float]]:
    """{name: count} or {name: {label: count}} as (name, total) pairs."""
    if not isinstance(mapping, dict):
        return []
    pairs = []
    for name, value in mapping.items():
        if isinstance(value, dict):
            value = sum(v for v in value.values() if isinstance(v, int | float))
        if isinstance(value, int | float):
            pairs.append((str(name), float(value)))
    return pairs


def distribution_charts(report: DiagnosisReport | None) -> dict[str, str]:
    distribution = report.distribution if report and isinstance(report.distribution, dict) else {}
    return {
        "label_chart": mark_safe(
            charts.bar_chart(
                _counts(distribution.get("by_label")),
                title="Failures by error label",
                label_words=in_words,
            )
        ),
        "category_chart": mark_safe(
            charts.bar_chart(
                _counts(distribution.get("by_category")),
                title="Failures by category",
                color=charts.PALETTE[3],
            )
        ),
        "environment_chart": mark_safe(
            charts.bar_chart(
                _counts(distribution.get("by_environment")),
                title="Failures by environment",
                color=charts.PALETTE[4],
            )
        ),
    }


def _policies_to_start() -> list[Policy]:
    from training.service import ensure_env_policy

    ensure_env_policy()  # the AW_POLICY_* endpoint is offered as soon as it is configured
    return list(Policy.objects.all()[:200])


@console_page
def round_list(request):
    rounds = list(
        EvolutionRound.objects.select_related("policy", "trained_policy", "current_job")[:100]
    )
    for evolution_round in rounds:
        evolution_round.mean_score = mean_score(evolution_round.scores)
    context = {
        "rounds": rounds,
        # The agent's rounds: a calibration round's scores measure diagnosis, not the agent.
        "scores_chart": mark_safe(scores_chart([r for r in rounds if not is_calibration_round(r)])),
        "score_meaning": SCORE_MEANING,
        "policies": _policies_to_start(),
        "round_defaults": RoundConfig(),  # the start form shows the one set of defaults
        "job_poll": JOB_POLL,
    }
    return render(request, "arena/round_list.html", context)


def _round(number: int) -> EvolutionRound:
    return get_object_or_404(
        EvolutionRound.objects.select_related(
            "policy", "trained_policy", "training_run", "current_job", "started_by"
        ),
        number=number,
    )


def pipeline(evolution_round: EvolutionRound) -> list[dict[str, str]]:
    """The round's states in order, each marked done, current or to do."""
    status = evolution_round.status
    skipped = evolution_round.auto_approve
    current = PIPELINE.index(status) if status in PIPELINE else -1
    failed_in = re.search(r"\(while (\w+)\)$", evolution_round.failure_reason or "")
    failed_at = PIPELINE.index(failed_in[1]) if failed_in and failed_in[1] in PIPELINE else 0
    stages = []
    for index, name in enumerate(PIPELINE):
        if status == EvolutionRound.Status.FAILED:  # the stages before the failed one ran
            state = "failed" if index == failed_at else "done" if index < failed_at else "todo"
        elif name == "done" and status == "done":
            state = "done"
        elif index < current:
            state = "done"
        elif index == current:
            state = "current"
        else:
            state = "todo"
        if name == "awaiting_approval" and skipped:
            state = "skipped"
        if name == "training" and not evolution_round.settings.train:
            state = "skipped"  # its job only records that training was off
        stages.append({"name": name, "label": name.replace("_", " "), "state": state})
    return stages


def _round_live(evolution_round: EvolutionRound) -> bool:
    job = evolution_round.current_job
    return evolution_round.status not in TERMINAL or (job is not None and not job.is_finished)


@console_page
def round_detail(request, number: int):
    evolution_round = _round(number)
    report = evolution_round.diagnoses.order_by("-created_at").first()
    evaluation = evolution_round.evaluations.order_by("-created_at").first()
    proposals = list(
        evolution_round.proposals.select_related(
            "environment", "category", "reviewer", "applied_job"
        )
    )
    # A diagnosis is about arena tasks: viewers get the analysis and proposal evidence without
    # the label explanations and gold values they quote (arena.report_privacy).
    answers_visible = may_see_answers(request.user)
    citations = _citations(proposals, evaluation)
    for proposal in proposals:
        _decorate_proposal(proposal, answers_visible, citations)
    analysis = ""
    if report is not None:
        analysis = report.analysis if answers_visible else public_report_analysis(report)
    history = score_history(evolution_round)
    following = following_round(evolution_round)
    later_report = following.diagnoses.order_by("-created_at").first() if following else None
    later_evaluation = following.evaluations.order_by("-created_at").first() if following else None
    effects = proposal_effects(proposals, evaluation, later_evaluation)
    for proposal in proposals:
        proposal.effect = effects.get(proposal.pk)
    context = {
        "round": evolution_round,
        "stages": pipeline(evolution_round),
        "live": _round_live(evolution_round),
        "job_poll": JOB_POLL,
        "report": report,
        "analysis": analysis,
        "evaluation": evaluation,
        "proposals": proposals,
        "proposal_groups": group_proposals(proposals),
        "pending_count": sum(1 for p in proposals if p.status == ExpansionProposal.Status.PENDING),
        "awaiting_review": evolution_round.status == EvolutionRound.Status.AWAITING_APPROVAL,
        "rejection_rule": REJECTION_RULE,
        "left_out_of_replay": sorted(rejected_environments(evolution_round)),
        "scores": score_rows(evolution_round, history, evaluation),
        "label_mix": label_mix(report, later_report),
        "next_round": following,
        "kind_rows": kind_rows(evaluation),
        "difficulty_chart": mark_safe(round_difficulty_chart(evolution_round.number)),
        "scores_chart": mark_safe(scores_chart(history)),
        "score_meaning": SCORE_MEANING,
        "weakest_json": pretty_json(report.weakest) if report else "",
        "results_json": pretty_json(evaluation.results) if evaluation else "",
        "jobs": evolution_round.jobs.order_by("-created_at")[:20],
        **distribution_charts(report),
    }
    return render(request, "arena/round_detail.html", context)


@console_page
def round_progress(request, number: int):
    """HTMX fragment polled while the round works; a status change reloads the whole page."""
    evolution_round = _round(number)
    seen = request.GET.get("seen")
    if seen and seen != evolution_round.status and request.htmx:
        response = HttpResponse(status=204)
        response["HX-Refresh"] = "true"
        return response
    context = {
        "round": evolution_round,
        "stages": pipeline(evolution_round),
        "live": _round_live(evolution_round),
        "job_poll": JOB_POLL,
    }
    return render(request, "arena/_round_progress.html", context)


def _checkbox(request, name: str, default: bool) -> bool:
    if name not in request.POST:
        return default if not request.POST.get("_form") else False
    return request.POST.get(name) in ("on", "true", "1", "yes")


_FORM_FIELDS = (
    "environments_per_category",
    "tasks_per_environment",
    "max_walk_length",
    "instruction_tier",
    "seed",
    "replay_ratio",
)


def _round_form_data(request) -> dict[str, Any]:
    """The start form's fields in the API's terms (one contract: StartRoundSerializer)."""
    data: dict[str, Any] = {
        name: request.POST[name] for name in _FORM_FIELDS if request.POST.get(name, "").strip()
    }
    data["auto_approve"] = _checkbox(request, "auto_approve", False)
    data["train"] = _checkbox(request, "train", True)
    if request.POST.get("policy"):
        data["policy"] = request.POST["policy"]
    percent = request.POST.get("programmatic_percent", "").strip()
    if percent:
        try:
            data["programmatic_share"] = float(percent) / 100
        except ValueError:
            data["programmatic_share"] = percent  # refused by the serializer, by name
    training = request.POST.get("training", "").strip()
    if training:
        try:
            data["training"] = json.loads(training)
        except json.JSONDecodeError as exc:
            data["training"] = f"not JSON: {exc}"
    return data


@console_action(REVIEWER)
def start_round_view(request):
    from arena.api import StartRoundSerializer
    from arena.rounds import start_round

    form = StartRoundSerializer(data=_round_form_data(request))
    if not form.is_valid():
        problems = "; ".join(
            f"{field}: {' '.join(str(m) for m in errors)}" for field, errors in form.errors.items()
        )
        messages.error(request, "Could not start a round: " + problems)
        return redirect("round-list")
    try:
        evolution_round = start_round(request.user, **form.validated_data)
    except ValidationError as exc:
        messages.error(request, "Could not start a round: " + "; ".join(exc.messages))
        return redirect("round-list")
    messages.success(request, f"Round {evolution_round.number} started.")
    return redirect("round-detail", number=evolution_round.number)


def _decorate_proposal(
    proposal: ExpansionProposal, answers_visible: bool, citations: dict[str, Citation]
) -> ExpansionProposal:
    """The proposal's parameters and evidence in words (evidence reduced for viewers); the raw
    JSON is kept for the reviewers' "raw data" block only."""
    evidence = proposal.evidence if answers_visible else public_evidence(proposal.evidence)
    proposal.params_words = params_in_words(proposal.params)
    proposal.evidence_words = evidence_in_words(evidence, citations)
    proposal.params_json = pretty_json(proposal.params)
    proposal.evidence_json = pretty_json(evidence)
    proposal.result_json = pretty_json(proposal.result)
    proposal.is_pending = proposal.status == ExpansionProposal.Status.PENDING
    return proposal


def _citations(
    proposals: list[ExpansionProposal], evaluation: ArenaEvaluation | None
) -> dict[str, Citation]:
    return citation_links([p.evidence for p in proposals], evaluation)


@console_action(REVIEWER)
def review_proposal_view(request, pk: int):
    from arena import rounds

    decision = request.POST.get("decision")
    note = request.POST.get("note", "").strip()[:2000]
    error = ""
    if decision not in ("approve", "reject"):
        error = "Choose approve or reject."
    elif getattr(rounds, "review_proposal", None) is None:
        error = "The round machinery (arena.rounds.review_proposal) is not installed."
    else:
        try:
            with transaction.atomic():
                proposal = get_object_or_404(ExpansionProposal.objects.select_for_update(), pk=pk)
                rounds.review_proposal(
                    proposal, request.user, approve=decision == "approve", note=note
                )
        except ValidationError as exc:
            error = "; ".join(exc.messages)
    proposal = get_object_or_404(
        ExpansionProposal.objects.select_related("round", "environment", "category", "reviewer"),
        pk=pk,
    )
    if request.htmx:
        evaluation = proposal.round.evaluations.order_by("-created_at").first()
        citations = _citations([proposal], evaluation)
        context = {
            "proposal": _decorate_proposal(proposal, may_see_answers(request.user), citations),
            "review_error": error,
        }
        return render(request, "arena/_proposal.html", context)
    if error:
        messages.error(request, f"Proposal #{pk}: {error}")
    else:
        messages.success(request, f"Proposal #{pk} {proposal.status}.")
    return redirect("round-detail", number=proposal.round.number)


@console_action(REVIEWER)
def bulk_review_view(request, number: int):
    """Approve or reject the selected proposals of a round in one POST (a group, or all
    pending); each is still recorded on its own through ``arena.rounds.review_proposal``."""
    evolution_round = _round(number)
    decision = request.POST.get("decision")
    ids = [int(v) for v in request.POST.getlist("proposal") if v.strip().isdigit()]
    if decision not in ("approve", "reject"):
        messages.error(request, "Bulk review: choose approve or reject.")
    elif not ids:
        messages.error(request, "Bulk review: select at least one proposal.")
    else:
        note = request.POST.get("note", "").strip()[:2000]
        outcome = bulk_review(evolution_round, ids, request.user, decision == "approve", note)
        report = messages.success if outcome.decided and not outcome.refused else messages.error
        if outcome.decided and outcome.refused:
            report = messages.warning
        report(request, outcome.summary())
    return redirect(f"{reverse('round-detail', args=[number])}#proposals")


@console_page
def evaluation_calibration_view(request, pk: int):
    """Diagnosis measured against the faults a fault-injection policy injected in this
    evaluation: per-label precision and recall, per-fault recovery (counts, no gold data)."""
    from arena.calibration import evaluation_calibration

    evaluation = get_object_or_404(ArenaEvaluation.objects.select_related("round", "policy"), pk=pk)
    calibration = evaluation_calibration(evaluation)
    context = {"evaluation": evaluation, "calibration": calibration.to_dict()}
    return render(request, "arena/calibration.html", context)
