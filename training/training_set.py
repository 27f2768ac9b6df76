"""What a training run trained on: its listed tasks, grouped by where they came from.

The round's training set (arena.steps.round_training_set) and the service write the rows
(``TrainingTask``); the API and the run page read this one summary of them."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from training.models import TrainingRun, TrainingTask


@dataclass(frozen=True)
class ProposalShare:
    """The tasks one expansion proposal contributed to the run."""

    proposal: int
    tasks: int
    environments: list[str]


@dataclass(frozen=True)
class TrainingSetSummary:
    """Counts per source (expansion, replay, train split), per proposal, per environment and
    per task kind; ``replay_share`` is the replayed fraction actually trained on."""

    tasks: int
    by_source: dict[str, int]
    by_proposal: list[ProposalShare] = field(default_factory=list)
    by_environment: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    replay_share: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def training_set_summary(run: TrainingRun) -> TrainingSetSummary:
    links = TrainingTask.objects.filter(run=run).select_related("task__environment")
    by_source: Counter[str] = Counter()
    by_environment: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    proposals: dict[int, list[str]] = {}
    for link in links.only(
        "source", "proposal", "task__kind", "task__environment__name", "task__environment__version"
    ):
        environment = f"{link.task.environment.name}@v{link.task.environment.version}"
        by_source[link.source] += 1
        by_environment[environment] += 1
        by_kind[link.task.kind] += 1
        if link.proposal is not None:
            proposals.setdefault(link.proposal, []).append(environment)
    total = sum(by_source.values())
    return TrainingSetSummary(
        tasks=total,
        by_source=dict(by_source),
        by_proposal=[
            ProposalShare(pk, len(envs), sorted(set(envs)))
            for pk, envs in sorted(proposals.items())
        ],
        by_environment=dict(sorted(by_environment.items())),
        by_kind=dict(by_kind),
        replay_share=round(by_source[TrainingTask.Source.REPLAY] / total, 4) if total else 0.0,
    )
