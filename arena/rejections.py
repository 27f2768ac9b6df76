"""What rejecting an expansion proposal changes, said once and applied in the training set.

A rejected proposal is never applied: nothing is built and none of its tasks are created. A
round also replays earlier training tasks (``replay_ratio``); without a rule those would bring a
rejected environment back into training. The rule: an environment whose every proposal in the
round was rejected is left out of that round's replay sample (and the round does not fall back
to training on every environment when nothing else is left). Environments with an approved
proposal, or with no proposal at all, are replayed as before. ``arena.steps.round_training_set``
applies it; the round page states it (``REJECTION_RULE``).
"""

from __future__ import annotations

from arena.models import EvolutionRound, ExpansionProposal

REJECTION_RULE = (
    "Rejecting a proposal means it is never applied: nothing is built and none of its tasks "
    "are created. An environment whose proposals in this round are all rejected is also left "
    "out of the round's training: its earlier training tasks are not replayed. Environments "
    "with an approved proposal, or with no proposal, keep their replayed tasks."
)


def rejected_environments(evolution_round: EvolutionRound) -> set[str]:
    """Names of the environments (any version) whose every proposal in the round was rejected."""
    decided: dict[str, set[str]] = {}
    rows = evolution_round.proposals.filter(environment__isnull=False).values_list(
        "environment__name", "status"
    )
    for name, status in rows:
        decided.setdefault(name, set()).add(status)
    return {
        name
        for name, statuses in decided.items()
        if statuses == {ExpansionProposal.Status.REJECTED}
    }
