"""The arena scoreboard: reward and success per category, environment, task kind (graph,
programmatic), category and kind together, and difficulty, and how a round moved against the
one before it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.diagnosis import EvaluatedEpisode, category_name, is_success
from aw_site.stats import wilson_interval

DIMENSIONS = ("category", "environment", "task_kind", "category_kind", "difficulty")


@dataclass(frozen=True)
class EpisodeResult:
    """The scored outcome of one arena episode, as the scoreboard groups it."""

    environment: str
    category: str
    task_kind: str
    difficulty: str
    reward_total: float
    success: bool

    @property
    def category_kind(self) -> str:
        """ "Geography & Places / programmatic": a category's row for one task kind."""
        return f"{self.category} / {self.task_kind}"

    @classmethod
    def from_episode(cls, episode: EvaluatedEpisode) -> EpisodeResult:
        return cls(
            environment=episode.environment,
            category=category_name(episode.category),
            task_kind=episode.task_kind,
            difficulty=episode.difficulty,
            reward_total=episode.reward.total,
            success=is_success(episode),
        )


@dataclass
class Cell:
    """Aggregate over a group of episodes."""

    episodes: int = 0
    successes: int = 0
    reward_sum: float = 0.0

    def add(self, result: EpisodeResult) -> None:
        self.episodes += 1
        self.successes += int(result.success)
        self.reward_sum += result.reward_total

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.episodes if self.episodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        low, high = wilson_interval(self.successes, self.episodes)
        return {
            "episodes": self.episodes,
            "successes": self.successes,
            "success_rate": round(self.success_rate, 4),
            "success_interval": [round(low, 4), round(high, 4)],
            "mean_reward": round(self.mean_reward, 4),
        }


@dataclass
class Scoreboard:
    overall: Cell = field(default_factory=Cell)
    groups: dict[str, dict[str, Cell]] = field(
        default_factory=lambda: {dimension: {} for dimension in DIMENSIONS}
    )

    def to_dict(self) -> dict[str, Any]:
        return {
            "overall": self.overall.to_dict(),
            **{
                dimension: {name: cell.to_dict() for name, cell in sorted(cells.items())}
                for dimension, cells in self.groups.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scoreboard:
        """Rebuild a stored scoreboard (the previous round's) for comparison."""

        def cell(values: Mapping[str, Any]) -> Cell:
            episodes = int(values.get("episodes", 0))
            return Cell(
                episodes=episodes,
                successes=int(values.get("successes", 0)),
                reward_sum=float(values.get("mean_reward", 0.0)) * episodes,
            )

        board = cls(overall=cell(data.get("overall", {})))
        for dimension in DIMENSIONS:
            board.groups[dimension] = {
                name: cell(values) for name, values in (data.get(dimension) or {}).items()
            }
        return board


def build_scoreboard(results: Iterable[EpisodeResult | EvaluatedEpisode]) -> Scoreboard:
    board = Scoreboard()
    cells: dict[str, dict[str, Cell]] = {dimension: defaultdict(Cell) for dimension in DIMENSIONS}
    for item in results:
        result = item if isinstance(item, EpisodeResult) else EpisodeResult.from_episode(item)
        board.overall.add(result)
        for dimension in DIMENSIONS:
            cells[dimension][getattr(result, dimension)].add(result)
    board.groups = {dimension: dict(group) for dimension, group in cells.items()}
    return board


@dataclass(frozen=True)
class Delta:
    """Change of one group between two rounds; None where the group is absent from one side."""

    name: str
    mean_reward: float | None
    success_rate: float | None
    previous_episodes: int
    current_episodes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _delta(name: str, current: Cell | None, previous: Cell | None) -> Delta:
    both = current is not None and previous is not None and current.episodes and previous.episodes
    return Delta(
        name=name,
        mean_reward=round(current.mean_reward - previous.mean_reward, 4) if both else None,
        success_rate=round(current.success_rate - previous.success_rate, 4) if both else None,
        previous_episodes=previous.episodes if previous else 0,
        current_episodes=current.episodes if current else 0,
    )


def compare(
    current: Scoreboard, previous: Scoreboard | None, dimension: str = "category"
) -> dict[str, Any]:
    """Deltas of ``current`` against ``previous`` overall and per group of ``dimension``.

    Groups new in this round or gone since the last are listed with None deltas, never
    silently dropped.
    """
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}; expected one of {DIMENSIONS}")
    if previous is None:
        previous = Scoreboard()
    now, before = current.groups.get(dimension, {}), previous.groups.get(dimension, {})
    return {
        "overall": _delta("overall", current.overall, previous.overall).to_dict(),
        dimension: {
            name: _delta(name, now.get(name), before.get(name)).to_dict()
            for name in sorted(set(now) | set(before))
        },
    }
