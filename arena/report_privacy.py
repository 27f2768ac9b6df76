"""The redacted written diagnosis viewers get: a report's analysis without the gold values of
the evaluation tasks it is about.

Which tasks a report is about is read from arena and training rows (the round's evaluated
trajectories, the labelled ones), so this lives in arena; the redaction itself
(``public_analysis``) and who sees what (``may_see_answers``) are tasks.privacy's.
"""

from __future__ import annotations

from collections.abc import Iterable

from arena.models import DiagnosisReport, FailureLabel
from tasks.models import EVALUATION_SPLITS, Task
from tasks.privacy import public_analysis
from training.models import Trajectory


def public_report_analyses(reports: Iterable[DiagnosisReport]) -> dict[int, str]:
    """``public_analysis`` of several diagnosis reports by id, in three queries in all.

    A report is about its round's evaluated episodes and the trajectories it labelled; the
    gold values of their evaluation tasks are the ones masked.
    """
    reports = list(reports)
    task_ids: dict[int, set[int]] = {report.pk: set() for report in reports}
    by_round: dict[int, list[int]] = {}
    for report in reports:
        by_round.setdefault(report.round_id, []).append(report.pk)
    evaluated = Trajectory.objects.filter(evaluations__round_id__in=list(by_round)).values_list(
        "evaluations__round_id", "task_id"
    )
    for round_id, task_id in evaluated:
        for report_id in by_round.get(round_id, []):
            task_ids[report_id].add(task_id)
    labelled = FailureLabel.objects.filter(report_id__in=list(task_ids)).values_list(
        "report_id", "trajectory__task_id"
    )
    for report_id, task_id in labelled:
        task_ids[report_id].add(task_id)
    tasks = Task.objects.filter(
        pk__in=set().union(*task_ids.values()), split__in=EVALUATION_SPLITS
    ).only(
        "id",
        "split",
        "reference_answer",
        "gold_chain",
        "expected_diff",
        "expected_state_hash",
        "metadata",
    )
    tasks_by_id = {task.pk: task for task in tasks}
    return {
        report.pk: public_analysis(
            report.analysis, [tasks_by_id[t] for t in task_ids[report.pk] if t in tasks_by_id]
        )
        for report in reports
    }


def public_report_analysis(report: DiagnosisReport) -> str:
    return public_report_analyses([report])[report.pk]
