"""Small statistics every figure of success shares: a rate is reported with its interval."""

from __future__ import annotations

import math


def wilson_interval(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95% by default); (0, 1) with no trials.

    Wilson rather than the normal approximation: it stays inside [0, 1] and is honest at 0 or
    n successes, which is where small arena evaluations sit."""
    if trials <= 0:
        return 0.0, 1.0
    rate = successes / trials
    denominator = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)
