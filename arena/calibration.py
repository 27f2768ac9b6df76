"""How well diagnosis recovers known failures: per-label precision and recall against the faults
a fault-injection policy really injected.

Each injected fault names the taxonomy labels it must produce (``EXPECTED_LABELS``). The
taxonomy's detectors (``label_failure``, what diagnosis runs on a failed episode) are run on
every calibration episode, solved or not: a fault the reward still scores as solved (a repeated
read, a stray unknown tool) is still a failure the detectors should see. A found label is a true
positive when the episode's fault expects it and a false positive otherwise; an expected label
not found is a false negative. A clean gold run (fault ``none``) expects no label at all.
Labels no fault injects (``tool_error``: a perturbed argument can make a tool raise) are counted
apart, not scored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.error_taxonomy import (
    ERROR_LABELS,
    FORMAT_ERROR,
    INVALID_TOOL_CALL,
    MISSING_STATE_UPDATE,
    PREMATURE_ANSWER,
    REPEATED_CALL_LOOP,
    STEP_BUDGET_EXHAUSTED,
    WRONG_ANSWER,
    WRONG_ARGUMENTS,
    WRONG_STATE_UPDATE,
    label_failure,
)
from tasks.reward_breakdown import RewardBreakdown
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Trajectory
from training.policies import fault_plans as faults

EXPECTED_LABELS: dict[str, frozenset[str]] = {
    faults.WRONG_ARGUMENT: frozenset({WRONG_ARGUMENTS}),
    faults.SKIPPED_WRITE: frozenset({MISSING_STATE_UPDATE}),
    faults.WRONG_WRITE: frozenset({WRONG_STATE_UPDATE}),
    faults.PREMATURE_ANSWER: frozenset({PREMATURE_ANSWER}),
    faults.UNKNOWN_TOOL: frozenset({INVALID_TOOL_CALL}),
    faults.MALFORMED_CALL: frozenset({FORMAT_ERROR, INVALID_TOOL_CALL}),
    faults.REPEATED_CALL_LOOP: frozenset({REPEATED_CALL_LOOP}),
    faults.BUDGET_EXHAUSTION: frozenset({STEP_BUDGET_EXHAUSTED}),
    faults.WRONG_FINAL_ANSWER: frozenset({WRONG_ANSWER}),
    faults.NO_FAULT: frozenset(),
}
SCORED_LABELS: tuple[str, ...] = tuple(
    label for label in ERROR_LABELS if any(label in e for e in EXPECTED_LABELS.values())
)
TARGET = 0.9
# A label's figures count toward the verdict once this many episodes expected it: below that,
# one lucky episode would read as a recall of 1.0.
MIN_EXPECTED = 10
MET, BELOW, TOO_FEW, NOT_MEASURED = "met", "below", "too_few", "not_measured"


@dataclass(frozen=True)
class CalibrationEpisode:
    """One episode: the fault injected and the labels the detectors found."""

    fault: str
    labels: tuple[str, ...]
    trajectory_id: int | None = None
    task_id: str = ""
    environment: str = ""
    success: bool = False

    @property
    def expected(self) -> frozenset[str]:
        return EXPECTED_LABELS[self.fault]


@dataclass(frozen=True)
class LabelFigures:
    label: str
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float | None:
        found = self.true_positives + self.false_positives
        return round(self.true_positives / found, 4) if found else None

    @property
    def recall(self) -> float | None:
        expected = self.true_positives + self.false_negatives
        return round(self.true_positives / expected, 4) if expected else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "precision": self.precision, "recall": self.recall}


@dataclass(frozen=True)
class FaultFigures:
    """Per injected fault: how often its labels were all found, and what else was found."""

    fault: str
    episodes: int
    recovered: int  # every expected label found
    exact: int  # found exactly the expected labels
    solved: int  # the reward still scored the episode as solved
    other_labels: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    episodes: int
    labels: list[LabelFigures]
    faults: list[FaultFigures]
    clean_episodes: int
    clean_with_labels: int
    unscored_labels: dict[str, int]
    without_fault: int = 0  # episodes of the evaluation that carried no injected-fault record

    # The same figures as a round sees them: diagnosis labels failed episodes only, so a fault
    # the reward still scored as solved is never labelled (it escapes diagnosis).
    round_labels: list[LabelFigures] = field(default_factory=list)
    escaped: int = 0  # fault episodes the reward scored as solved

    @property
    def measured_labels(self) -> list[str]:
        """Labels expected by at least ``MIN_EXPECTED`` episodes: the ones the verdict reads."""
        return [
            f.label for f in self.labels if f.true_positives + f.false_negatives >= MIN_EXPECTED
        ]

    @property
    def verdict(self) -> str:
        """``met``: recall and precision at the target wherever at least ``MIN_EXPECTED``
        episodes expected (recall) or got (precision) a label, and no clean run labelled;
        ``below``: any of those fails; ``too_few``: nothing fails but some label was expected
        or found in fewer than ``MIN_EXPECTED`` episodes (or none in enough);
        ``not_measured``: no episode carries an injected fault (an ordinary policy)."""
        if not self.episodes:
            return NOT_MEASURED
        below = self.clean_with_labels > 0
        sparse = judged = False
        for f in self.labels:
            for count, figure in (
                (f.true_positives + f.false_negatives, f.recall),
                (f.true_positives + f.false_positives, f.precision),
            ):
                if count >= MIN_EXPECTED:
                    judged = True
                    below = below or (figure or 0) < TARGET
                elif count:
                    sparse = True
        if below:
            return BELOW
        return TOO_FEW if sparse or not judged else MET

    @property
    def meets_target(self) -> bool:
        return self.verdict == MET

    def to_dict(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "target": TARGET,
            "min_expected": MIN_EXPECTED,
            "verdict": self.verdict,
            "meets_target": self.meets_target,
            "measured_labels": self.measured_labels,
            "labels": [f.to_dict() for f in self.labels],
            "round_labels": [f.to_dict() for f in self.round_labels],
            "escaped": self.escaped,
            "faults": [f.to_dict() for f in self.faults],
            "clean_episodes": self.clean_episodes,
            "clean_with_labels": self.clean_with_labels,
            "unscored_labels": self.unscored_labels,
            "without_fault": self.without_fault,
        }


def injected_fault(trajectory: Trajectory) -> str | None:
    """The fault a trajectory's metadata records, or None when none was injected knowingly."""
    record = (trajectory.metadata or {}).get("injected_fault")
    fault = record.get("fault") if isinstance(record, Mapping) else None
    return fault if fault in EXPECTED_LABELS else None


def episode_of(
    trajectory: Trajectory,
    task: TaskSpec,
    reward: RewardBreakdown,
    tool_kinds: Mapping[str, str] | None = None,
    trajectory_id: int | None = None,
) -> CalibrationEpisode | None:
    """The calibration record of one evaluated episode (None without an injected fault);
    ``trajectory_id``: the stored trajectory's row, where there is one."""
    fault = injected_fault(trajectory)
    if fault is None:
        return None
    labels = tuple(label.kind for label in label_failure(trajectory, task, reward, tool_kinds))
    return CalibrationEpisode(
        fault=fault,
        labels=labels,
        trajectory_id=trajectory_id,
        task_id=trajectory.task_id,
        environment=trajectory.environment,
        success=reward.success,
    )


def label_figures(
    episodes: Iterable[CalibrationEpisode], failed_only: bool = False
) -> tuple[list[LabelFigures], Counter[str]]:
    """Per scored label: found right, found wrongly, missed; and the unscored labels found.
    ``failed_only``: a solved episode counts as labelled with nothing (as a round diagnoses)."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    unscored: Counter[str] = Counter()
    for episode in episodes:
        found = set() if failed_only and episode.success else set(episode.labels)
        for label in found:
            if label not in SCORED_LABELS:
                unscored[label] += 1
            elif label in episode.expected:
                tp[label] += 1
            else:
                fp[label] += 1
        for label in episode.expected - found:
            fn[label] += 1
    rows = [LabelFigures(label, tp[label], fp[label], fn[label]) for label in SCORED_LABELS]
    return rows, unscored


def calibrate(episodes: Iterable[CalibrationEpisode], without_fault: int = 0) -> Calibration:
    """Per-label precision and recall of the found labels against the injected faults, by the
    detectors on every episode and as a round's diagnosis sees them (failed episodes only)."""
    episodes = list(episodes)
    labels, unscored = label_figures(episodes)
    round_labels, _ = label_figures(episodes, failed_only=True)
    by_fault: dict[str, list[CalibrationEpisode]] = {}
    for episode in episodes:
        by_fault.setdefault(episode.fault, []).append(episode)
    fault_rows = []
    for fault in (*faults.FAULTS, faults.NO_FAULT):
        members = by_fault.get(fault, [])
        if not members:
            continue
        expected = EXPECTED_LABELS[fault]
        fault_rows.append(
            FaultFigures(
                fault=fault,
                episodes=len(members),
                recovered=sum(1 for e in members if expected <= set(e.labels)),
                exact=sum(1 for e in members if set(e.labels) == expected),
                solved=sum(1 for e in members if e.success),
                other_labels=dict(
                    sorted(Counter(x for e in members for x in set(e.labels) - expected).items())
                ),
            )
        )
    clean = by_fault.get(faults.NO_FAULT, [])
    return Calibration(
        episodes=len(episodes),
        labels=labels,
        faults=fault_rows,
        clean_episodes=len(clean),
        clean_with_labels=sum(1 for e in clean if e.labels),
        unscored_labels=dict(sorted(unscored.items())),
        without_fault=without_fault,
        round_labels=round_labels,
        escaped=sum(1 for e in episodes if e.success and e.fault != faults.NO_FAULT),
    )


def evaluation_calibration(evaluation: Any) -> Calibration:
    """The calibration of a stored arena evaluation: its episodes that carry an injected fault
    (a fault-injection policy played them), labelled afresh by the detectors."""
    from arena.steps import evaluated_episodes

    found, without = [], 0
    for episode in evaluated_episodes(evaluation):
        record = episode_of(
            episode.trajectory,
            episode.task,
            episode.reward,
            episode.tool_kinds,
            episode.trajectory_id,
        )
        if record is None:
            without += 1
        else:
            found.append(record)
    return calibrate(found, without_fault=without)
