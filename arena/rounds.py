"""Evolution rounds in the database: start, advance through the state machine, review, resume.

The transition table lives in ``arena.round_machine`` (plain Python); this module persists it
and schedules the step job each state needs. Every step job is idempotent, so a step whose
worker died is simply run again.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from arena import round_machine
from arena.lineage import agent_rounds
from arena.models import EvolutionRound, ExpansionProposal
from arena.round_config import RoundConfig, round_config_errors
from arena.round_config import ValidationError as ConfigError
from aw_site.jobs import enqueue
from aw_site.models import Job
from training.models import Policy

STEP_JOBS = {
    "evaluate": "arena.evaluate",
    "diagnose": "arena.diagnose",
    "expand": "arena.expand",
    "train": "arena.train",
}


def default_policy() -> Policy | None:
    """The newest trained policy of the last finished round; before any round has finished,
    the endpoint policy of the AW_POLICY_* variables when they are set, else the newest policy."""
    from training.service import ensure_env_policy

    # A calibration round's fault-injection policy is an instrument, never the agent to go on.
    last = agent_rounds().filter(status=EvolutionRound.Status.DONE).order_by("-number").first()
    if last is not None:
        return last.trained_policy or last.policy
    agents = Policy.objects.exclude(kind=Policy.Kind.FAULT_INJECTION)
    return ensure_env_policy() or agents.order_by("-created_at").first()


MAX_SEED = 2**62  # fits every database's 64-bit integer


def round_settings(options: dict[str, Any]) -> RoundConfig:
    """The round config of ``options``, or a Django ValidationError naming each bad field
    (``training.<option>`` for a training option; an unknown key as an unknown round option)."""
    try:
        return RoundConfig.model_validate(options)
    except ConfigError as exc:
        raise ValidationError(
            [f"{field}: {message}" for field, message in round_config_errors(exc).items()]
        ) from exc


def start_round(
    user: Any = None,
    policy: Policy | None = None,
    auto_approve: bool = False,
    seed: int | None = None,
    **options: Any,
) -> EvolutionRound:
    """Create the next round and enqueue its evaluation; refuses while another round runs.

    ``options`` are the round's settings (``arena.round_config.RoundConfig``: the arena's
    environments and fresh tasks, ``train``, ``replay_ratio`` and the ``training`` run options),
    checked here so a bad value is refused now rather than at the step that reads it."""
    settings = round_settings(options)
    policy = policy or default_policy()
    if policy is None:
        raise ValidationError("no policy to evaluate: create one first (POST /api/policies/)")
    if settings.train:  # a fault-injection policy (calibration) or any other without weights
        from training.service import untrainable_reason

        reason = untrainable_reason(policy)
        if reason:  # found now, not after evaluating, diagnosing and expanding
            raise ValidationError(f"{reason}; or start the round with train: false")
    for _attempt in range(3):
        try:
            with transaction.atomic():
                busy = (
                    EvolutionRound.objects.select_for_update()
                    .exclude(status__in=[EvolutionRound.Status.DONE, EvolutionRound.Status.FAILED])
                    .first()
                )
                if busy is not None:
                    raise ValidationError(
                        f"round {busy.number} is still {busy.status}; finish or fail it first"
                    )
                number = (EvolutionRound.objects.aggregate(m=models.Max("number"))["m"] or 0) + 1
                evolution_round = EvolutionRound.objects.create(
                    number=number,
                    policy=policy,
                    auto_approve=auto_approve,
                    seed=seed if seed is not None else 1000 + number,
                    started_by=user if getattr(user, "is_authenticated", False) else None,
                    config=settings.stored(),
                )
                schedule_step(evolution_round, user)
                return evolution_round
        except IntegrityError:
            continue
    raise ValidationError("could not allocate a round number; try again")


def schedule_step(evolution_round: EvolutionRound, user: Any = None) -> Job | None:
    """Enqueue the job for the round's current state, if that state has one."""
    plan = round_machine.resume(evolution_round.status)
    if plan.step is None:
        return None
    job = enqueue(
        STEP_JOBS[plan.step],
        {"round": evolution_round.pk},
        user=user,
        target=f"round:{evolution_round.number}",
    )
    evolution_round.current_job = job
    evolution_round.save(update_fields=["current_job"])
    evolution_round.jobs.add(job)
    return job


def advance_round(evolution_round: EvolutionRound, event: str, reason: str = "") -> EvolutionRound:
    """Apply one state-machine event, persist it and schedule the next step."""
    with transaction.atomic():
        locked = EvolutionRound.objects.select_for_update().get(pk=evolution_round.pk)
        status = round_machine.RoundStatus(locked.status).advance(
            event, locked.auto_approve, reason
        )
        locked.status = status.state
        if status.state == round_machine.FAILED:
            locked.failure_reason = f"{status.failure_reason} (while {status.failed_in})"
        if status.state in round_machine.TERMINAL_STATES:
            locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "failure_reason", "finished_at"])
        if status.state == round_machine.EXPANDING and event == round_machine.DIAGNOSED:
            auto_approve_pending(locked)
        schedule_step(locked)
    evolution_round.refresh_from_db()
    if evolution_round.status == round_machine.AWAITING_APPROVAL and not (
        evolution_round.proposals.filter(status=ExpansionProposal.Status.PENDING).exists()
    ):  # nothing to review (no failures, or a calibration round): no reviewer is waited for
        return advance_round(evolution_round, round_machine.APPROVED)
    return evolution_round


def fail_round(evolution_round: EvolutionRound, reason: str) -> None:
    evolution_round.refresh_from_db()
    if evolution_round.status not in round_machine.TERMINAL_STATES:
        advance_round(evolution_round, round_machine.FAIL, reason)


def auto_approve_pending(evolution_round: EvolutionRound) -> int:
    return evolution_round.proposals.filter(status=ExpansionProposal.Status.PENDING).update(
        status=ExpansionProposal.Status.APPROVED,
        review_note="auto-approved by the round's configuration",
        reviewed_at=timezone.now(),
    )


def review_proposal(
    proposal: ExpansionProposal, user: Any, approve: bool, note: str = ""
) -> ExpansionProposal:
    """Record a reviewer's decision; the round moves on once nothing is pending."""
    proposal.review(user, approve=approve, note=note)
    evolution_round = proposal.round
    still_pending = evolution_round.proposals.filter(
        status=ExpansionProposal.Status.PENDING
    ).exists()
    if evolution_round.status == EvolutionRound.Status.AWAITING_APPROVAL and not still_pending:
        advance_round(evolution_round, round_machine.APPROVED)
    return proposal


def resume_round(evolution_round: EvolutionRound, user: Any = None) -> EvolutionRound:
    """Re-enqueue the step of a round whose job was lost or failed."""
    plan = round_machine.resume(evolution_round.status)
    if plan.finished:
        raise ValidationError(
            f"round {evolution_round.number} is {evolution_round.status}; nothing to resume"
        )
    if plan.waiting_for_reviewer:
        raise ValidationError(
            f"round {evolution_round.number} waits for reviewers to decide its proposals"
        )
    job = evolution_round.current_job
    if job is not None and not job.is_finished:
        raise ValidationError(
            f"round {evolution_round.number} is running job {job.pk} ({job.state})"
        )
    with transaction.atomic():
        schedule_step(evolution_round, user)
    return evolution_round
