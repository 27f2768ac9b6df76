"""Stratified, seeded choice of the environments an arena round evaluates.

Every category gets its share, so a round measures the whole taxonomy rather than whichever
category has the most environments; the seed makes a round reproducible.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from arena.diagnosis import category_name

Environment = TypeVar("Environment")


def field_of(environment: Any, name: str) -> Any:
    """An environment's ``name`` or ``category``: a catalogue dict's key or a model's field."""
    if isinstance(environment, Mapping):
        return environment.get(name)
    return getattr(environment, name, None)


def environment_name(environment: Any) -> str:
    return str(field_of(environment, "name") or environment)


def stratify(environments: Iterable[Environment], level: str = "primary") -> dict[str, list]:
    """Environments grouped by category at ``level``, each group sorted by name."""
    groups: dict[str, list] = defaultdict(list)
    for environment in environments:
        groups[category_name(field_of(environment, "category"), level)].append(environment)
    return {name: sorted(group, key=environment_name) for name, group in sorted(groups.items())}


def sample_environments(
    environments: Sequence[Environment],
    per_category: int = 2,
    seed: int = 0,
    level: str = "primary",
    limit: int | None = None,
) -> list[Environment]:
    """Up to ``per_category`` environments from each category, chosen with ``seed``.

    Same inputs and seed give the same sample regardless of input order. With ``limit``, the
    categories take turns (round robin, in seeded order) until the limit is reached, so every
    category is covered before any gets a second environment.
    """
    if per_category < 1:
        raise ValueError("per_category must be at least 1")
    rng = random.Random(seed)
    picks: dict[str, list] = {}
    for name, group in stratify(environments, level).items():
        picks[name] = rng.sample(group, min(per_category, len(group)))
    order = sorted(picks)
    rng.shuffle(order)
    chosen: list = []
    for round_index in range(per_category):
        for name in order:
            if round_index < len(picks[name]):
                chosen.append(picks[name][round_index])
    if limit is not None:
        chosen = chosen[:limit]
    return sorted(
        chosen,
        key=lambda e: (category_name(field_of(e, "category"), level), environment_name(e)),
    )
