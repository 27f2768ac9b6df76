"""Which rounds a round's figures are set against.

A calibration round evaluates a fault-injection policy: an instrument, not the agent. Its scores
say how well diagnosis works, not how the agent does, so they are compared with nothing, and no
agent round is compared with them. An agent round's "before" is the latest earlier agent round;
its "after" is the first later round that evaluated the policy it trained.
"""

from __future__ import annotations

from collections.abc import Iterable

from arena.models import ArenaEvaluation, EvolutionRound
from training.models import Policy


def is_calibration_round(evolution_round: EvolutionRound) -> bool:
    return evolution_round.policy.kind == Policy.Kind.FAULT_INJECTION


def agent_rounds() -> Iterable[EvolutionRound]:
    return EvolutionRound.objects.exclude(policy__kind=Policy.Kind.FAULT_INJECTION)


def previous_evaluation(evolution_round: EvolutionRound) -> ArenaEvaluation | None:
    """The evaluation this round's scoreboard is compared with (None for a calibration round)."""
    if is_calibration_round(evolution_round):
        return None
    return (
        ArenaEvaluation.objects.filter(round__number__lt=evolution_round.number)
        .exclude(round__policy__kind=Policy.Kind.FAULT_INJECTION)
        .order_by("-round__number")
        .first()
    )


def score_history(evolution_round: EvolutionRound) -> list[EvolutionRound]:
    """The rounds up to this one whose scores belong on its chart and in its deltas: agent
    rounds for an agent round, the round alone for a calibration round."""
    if is_calibration_round(evolution_round):
        return [evolution_round]
    rounds = agent_rounds().filter(number__lte=evolution_round.number)
    return list(rounds.only("number", "scores").order_by("number"))


def following_round(evolution_round: EvolutionRound) -> EvolutionRound | None:
    """The first later round that evaluated the policy this round trained (or, untrained, the
    same policy again): the "after" of this round's proposals and label mix."""
    if is_calibration_round(evolution_round):
        return None
    policy = evolution_round.trained_policy_id or evolution_round.policy_id
    return (
        EvolutionRound.objects.filter(number__gt=evolution_round.number, policy_id=policy)
        .order_by("number")
        .first()
    )
