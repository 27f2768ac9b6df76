"""A round's proposals as a review queue: similar ones grouped, decided in bulk, and the rounds
that wait for a reviewer.

Proposals of the same kind, training the same capability, in the same category read alike
(one per environment); a reviewer decides them as a group. Every decision in a bulk review is
still recorded one proposal at a time through ``arena.rounds.review_proposal``, so each keeps
its reviewer, note and time, and the round moves on once none is pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.utils.text import slugify

from arena.models import EvolutionRound, ExpansionProposal


@dataclass
class ProposalGroup:
    """Proposals a reviewer can judge together: same kind, capability and category."""

    key: str
    title: str
    proposals: list[ExpansionProposal] = field(default_factory=list)

    @property
    def pending(self) -> list[ExpansionProposal]:
        return [p for p in self.proposals if p.status == ExpansionProposal.Status.PENDING]

    @property
    def targets(self) -> list[str]:
        """The environments (or the subcategory) the group's proposals expand."""
        names = [p.environment.name for p in self.proposals if p.environment is not None]
        return list(dict.fromkeys(names))


def _category_name(proposal: ExpansionProposal) -> str:
    if proposal.kind == ExpansionProposal.Kind.NEW_ENVIRONMENT:
        subcategory = (proposal.params or {}).get("subcategory")
        if subcategory:
            return str(subcategory)
    if proposal.category is not None:
        return proposal.category.primary().name
    return proposal.environment.name if proposal.environment is not None else "no category"


def group_of(proposal: ExpansionProposal) -> tuple[str, str, str]:
    """(kind, capability trained, category): what makes two proposals alike."""
    focus = str((proposal.params or {}).get("focus") or "")
    return (proposal.kind, focus, _category_name(proposal))


KIND_WORDS = {
    ExpansionProposal.Kind.MORE_TASKS: "More tasks",
    ExpansionProposal.Kind.COMPLEXIFY_DATABASE: "Edge rows in the database",
    ExpansionProposal.Kind.NEW_ENVIRONMENT: "A new environment",
}


def group_title(proposal: ExpansionProposal) -> str:
    kind, focus, category = group_of(proposal)
    title = KIND_WORDS.get(kind, kind.replace("_", " "))
    if focus:
        title += f" for {focus.replace('_', ' ')}"
    return f"{title} in {category}"


def group_proposals(proposals: list[ExpansionProposal]) -> list[ProposalGroup]:
    """The proposals in groups of alike ones, in the order each group first appears."""
    groups: dict[tuple[str, str, str], ProposalGroup] = {}
    for proposal in proposals:
        key = group_of(proposal)
        if key not in groups:
            groups[key] = ProposalGroup(
                key=slugify("-".join(key)) or "proposals", title=group_title(proposal)
            )
        groups[key].proposals.append(proposal)
    return list(groups.values())


@dataclass
class BulkReview:
    """What a bulk review did: the proposals decided and, for the others, why not."""

    decision: str
    decided: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def summary(self) -> str:
        done = ", ".join(f"#{pk}" for pk in self.decided)
        verb = "approved" if self.decision == "approve" else "rejected"
        text = f"{len(self.decided)} proposal(s) {verb}" + (f": {done}." if done else ".")
        if self.refused:
            text += " Not decided: " + "; ".join(self.refused) + "."
        return text


def bulk_review(
    evolution_round: EvolutionRound, proposal_ids: list[int], user: Any, approve: bool, note: str
) -> BulkReview:
    """Decide each listed proposal of the round through ``review_proposal``, one by one; a
    proposal of another round or one already decided is refused by number, the rest go on."""
    from arena.rounds import review_proposal

    outcome = BulkReview("approve" if approve else "reject")
    for pk in sorted(set(proposal_ids)):
        try:
            with transaction.atomic():
                proposal = (
                    ExpansionProposal.objects.select_for_update()
                    .filter(round=evolution_round, pk=pk)
                    .first()
                )
                if proposal is None:
                    outcome.refused.append(
                        f"#{pk} is no proposal of round {evolution_round.number}"
                    )
                    continue
                review_proposal(proposal, user, approve=approve, note=note)
            outcome.decided.append(pk)
        except ValidationError as exc:
            outcome.refused.append(f"#{pk}: {'; '.join(exc.messages)}")
    return outcome


def rounds_awaiting_review() -> list[EvolutionRound]:
    """Rounds waiting for a reviewer, each with ``pending`` (its undecided proposals)."""
    return list(
        EvolutionRound.objects.filter(status=EvolutionRound.Status.AWAITING_APPROVAL)
        .annotate(
            pending=Count("proposals", filter=Q(proposals__status=ExpansionProposal.Status.PENDING))
        )
        .filter(pending__gt=0)
        .order_by("number")
    )
