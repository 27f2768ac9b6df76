"""Consistency filter: keep tasks a reference solver passes sometimes, not always or never.

A task every run solves teaches nothing; one no run solves may be broken or out of reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tasks.synthesis.task_spec import TaskSpec

Solver = Callable[[TaskSpec], bool]


@dataclass
class ConsistencyReport:
    kept: list[TaskSpec] = field(default_factory=list)
    dropped: list[TaskSpec] = field(default_factory=list)
    pass_rates: dict[str, float] = field(default_factory=dict)  # signature -> pass rate


def filter_by_pass_rate(
    tasks: list[TaskSpec],
    solver: Solver,
    runs: int = 5,
    window: tuple[float, float] = (0.2, 0.8),
) -> ConsistencyReport:
    """Run ``solver`` ``runs`` times per task; keep tasks whose pass rate lies in ``window``
    (inclusive). A solver that raises counts as a failed run."""
    low, high = window
    report = ConsistencyReport()
    for task in tasks:
        passed = 0
        for _ in range(runs):
            try:
                passed += 1 if solver(task) else 0
            except Exception:  # a crashing solver run is a failed run
                pass
        rate = passed / runs if runs else 0.0
        report.pass_rates[task.signature] = rate
        task.metadata["pass_rate"] = rate
        (report.kept if low <= rate <= high else report.dropped).append(task)
    return report
