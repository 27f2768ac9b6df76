"""What a reward says about one run: a total, whether it is solved, and each component with its
reason in words.

Defined apart from the scoring (tasks/reward.py) so that the trajectory record, which the reward
reads, can carry its own breakdown without an import cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RewardComponent:
    score: float  # in [0, 1]
    weight: float  # its share of the partial-credit progress (0 where it does not count)
    reason: str
    applicable: bool = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardComponent:
        return cls(
            score=float(data.get("score", 0.0)),
            weight=float(data.get("weight", 0.0)),
            reason=str(data.get("reason", "")),
            applicable=bool(data.get("applicable", True)),
        )


@dataclass
class RewardBreakdown:
    total: float
    success: bool
    components: dict[str, RewardComponent] = field(default_factory=dict)
    gate: str = ""  # why the run is or is not solved, in one sentence

    def __getitem__(self, name: str) -> RewardComponent:
        return self.components[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "success": self.success,
            "gate": self.gate,
            "components": {k: dataclasses.asdict(c) for k, c in self.components.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardBreakdown:
        """The breakdown stored as ``to_dict`` (a trajectory row's ``reward``); an empty dict
        (no reward recorded) reads as an unsolved run worth nothing."""
        components = data.get("components") or {}
        return cls(
            total=float(data.get("total", 0.0)),
            success=bool(data.get("success", False)),
            components={k: RewardComponent.from_dict(c) for k, c in components.items()},
            gate=str(data.get("gate", "")),
        )

    @classmethod
    def unscored(cls) -> RewardBreakdown:
        """What a run with no recorded reward counts as: unsolved, worth nothing."""
        return cls(total=0.0, success=False)

    def score_of(self, name: str) -> float | None:
        """A component's score, None where the breakdown has no such component."""
        component = self.components.get(name)
        return component.score if component is not None else None

    def reason_of(self, name: str) -> str:
        component = self.components.get(name)
        return component.reason if component is not None else ""
