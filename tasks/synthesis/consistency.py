"""Consistency filter: keep tasks a reference solver passes sometimes, not always or never.

A task every run solves teaches nothing; one no run solves may be broken or out of reach. The
synthesis job measures this with a policy's rollouts (``mark_consistency``; the policy-backed
solver comes from ``training``, registered in ``tasks.service``) and marks each task: its pass
rate and ``always`` / ``never`` / ``mixed``; the training set can leave the uniform ones out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tasks.synthesis.task_spec import TaskSpec

Solver = Callable[[TaskSpec], bool]
# One rollout of every task of a batch (run together, in parallel) -> solved or not, per task.
BatchSolver = Callable[[list[TaskSpec]], list[bool]]

ALWAYS, NEVER, MIXED = "always", "never", "mixed"


@dataclass
class ConsistencyReport:
    kept: list[TaskSpec] = field(default_factory=list)
    dropped: list[TaskSpec] = field(default_factory=list)
    pass_rates: dict[str, float] = field(default_factory=dict)  # signature -> pass rate
    marks: dict[str, str] = field(default_factory=dict)  # signature -> always | never | mixed

    def counts(self) -> dict[str, int]:
        found = {ALWAYS: 0, NEVER: 0, MIXED: 0}
        for mark in self.marks.values():
            found[mark] += 1
        return found


def consistency_of(rate: float) -> str:
    """``always`` (every run solved it), ``never`` (none did) or ``mixed``."""
    if rate >= 1.0:
        return ALWAYS
    if rate <= 0.0:
        return NEVER
    return MIXED


def filter_by_pass_rate(
    tasks: list[TaskSpec],
    solver: Solver,
    runs: int = 5,
    window: tuple[float, float] = (0.2, 0.8),
) -> ConsistencyReport:
    """Run ``solver`` ``runs`` times per task; keep tasks whose pass rate lies in ``window``
    (inclusive). A solver that raises counts as a failed run."""

    def batch(specs: list[TaskSpec]) -> list[bool]:
        results = []
        for spec in specs:
            try:
                results.append(bool(solver(spec)))
            except Exception:  # a crashing solver run is a failed run
                results.append(False)
        return results

    return mark_consistency(tasks, batch, runs, window)


def mark_consistency(
    tasks: list[TaskSpec],
    solve_batch: BatchSolver,
    runs: int = 4,
    window: tuple[float, float] = (0.2, 0.8),
) -> ConsistencyReport:
    """``runs`` rounds of ``solve_batch`` over all tasks; each task's pass rate and mark land in
    ``task.metadata`` (``pass_rate``, ``consistency``, ``rollouts``). ``kept`` holds the tasks
    whose rate lies in ``window``. A batch that raises counts as failed runs."""
    passed = [0] * len(tasks)
    for _ in range(runs):
        try:
            results = list(solve_batch(tasks)) if tasks else []
        except Exception:  # a crashing round is a failed run of every task
            results = [False] * len(tasks)
        if len(results) != len(tasks):
            raise ValueError(f"solver answered {len(results)} results for {len(tasks)} tasks")
        for index, solved in enumerate(results):
            passed[index] += 1 if solved else 0
    low, high = window
    report = ConsistencyReport()
    for task, count in zip(tasks, passed, strict=True):
        rate = count / runs if runs else 0.0
        mark = consistency_of(rate) if runs else ""
        report.pass_rates[task.signature] = rate
        report.marks[task.signature] = mark
        task.metadata.update({"pass_rate": rate, "consistency": mark, "rollouts": runs})
        (report.kept if low <= rate <= high else report.dropped).append(task)
    return report
