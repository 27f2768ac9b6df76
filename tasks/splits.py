"""Split assignment: train / arena / heldout, decided by the task's canonical signature.

The split is a pure function of the signature, so the same task (however often it is
synthesized again) always lands in the same split and no task is ever in two. Arena rounds get
fresh tasks from seeds derived from the round number, kept only if they hash to the arena.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from tasks.synthesis.task_spec import TaskSpec

SPLITS = ("train", "arena", "heldout")


@dataclass(frozen=True)
class SplitPolicy:
    """Fractions of the signature space per split (they must sum to 1)."""

    train: float = 0.8
    arena: float = 0.1
    heldout: float = 0.1
    salt: str = "aw-splits-v1"

    def __post_init__(self) -> None:
        if abs(self.train + self.arena + self.heldout - 1.0) > 1e-9:
            raise ValueError("split fractions must sum to 1")

    def split_of(self, signature: str) -> str:
        """The split of a canonical signature (uniform over [0, 1) by sha256)."""
        digest = hashlib.sha256(f"{self.salt}:{signature}".encode()).digest()
        point = int.from_bytes(digest[:8], "big") / 2**64
        if point < self.train:
            return "train"
        if point < self.train + self.arena:
            return "arena"
        return "heldout"

    def assign(self, tasks: list[TaskSpec]) -> dict[str, list[TaskSpec]]:
        """Group tasks by split (first of each signature), recording it in task.metadata."""
        groups: dict[str, list[TaskSpec]] = {name: [] for name in SPLITS}
        seen: set[str] = set()
        for task in tasks:
            if task.signature in seen:
                continue
            seen.add(task.signature)
            split = self.split_of(task.signature)
            task.metadata["split"] = split
            groups[split].append(task)
        return groups


def round_seed(round_number: int, base_seed: int = 0) -> int:
    """The synthesis seed of an arena round: new per round, the same on every rerun."""
    digest = hashlib.sha256(f"arena-round:{base_seed}:{round_number}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass
class ArenaRound:
    round_number: int
    seed: int
    tasks: list[TaskSpec] = field(default_factory=list)
    synthesized: int = 0


def arena_round_tasks(
    synthesize: Callable[[int], list[TaskSpec]],
    round_number: int,
    count: int,
    policy: SplitPolicy | None = None,
    exclude: set[str] | None = None,
    base_seed: int = 0,
    max_batches: int = 50,
    give_up_after: int | None = None,
) -> ArenaRound:
    """Fresh arena tasks for a round: ``synthesize(seed)`` over seeds derived from the round,
    keeping tasks that hash to the arena split and were not used before (``exclude``).
    ``give_up_after``: stop after that many batches in a row synthesized nothing at all (a
    plan the world cannot walk)."""
    policy = policy or SplitPolicy()
    exclude = set(exclude or ())
    seed = round_seed(round_number, base_seed)
    result = ArenaRound(round_number, seed)
    empty = 0
    for batch in range(max_batches):
        if len(result.tasks) >= count:
            break
        if give_up_after is not None and empty >= give_up_after:
            break
        made = synthesize(seed + batch * 100_003)
        empty = 0 if made else empty + 1
        for task in made:
            result.synthesized += 1
            if task.signature in exclude or policy.split_of(task.signature) != "arena":
                continue
            exclude.add(task.signature)
            task.metadata["split"] = "arena"
            task.metadata["round"] = round_number
            result.tasks.append(task)
            if len(result.tasks) >= count:
                break
    return result
