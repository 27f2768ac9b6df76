"""Celery jobs for the round steps: thin wrappers that run a step and advance the round."""

from __future__ import annotations

from typing import Any

from arena import round_machine
from arena.main_loop import run_main_loop
from arena.models import EvolutionRound, ExpansionProposal
from arena.rounds import advance_round, fail_round
from aw_site.jobs import JobContext, interrupted, job
from aw_site.models import Job


def _run_step(
    ctx: JobContext, round_id: int, expected_state: str, step, event: str
) -> dict[str, Any]:
    evolution_round = EvolutionRound.objects.get(pk=round_id)
    if evolution_round.status != expected_state:
        # A redelivered job for a step that already finished: nothing to do.
        return {"skipped": f"round {evolution_round.number} is {evolution_round.status}"}
    try:
        result = step(evolution_round, ctx) or {}
    except Exception as exc:
        if not interrupted(exc):  # an interrupted step is retried; the round goes on then
            fail_round(evolution_round, f"{type(exc).__name__}: {exc}")
        raise
    advance_round(evolution_round, result.pop("event", event))
    return result


def _round_given_up(arguments: dict[str, Any], reason: str) -> None:
    """The step's worker died on its last attempt: the round fails, with its training run."""
    from training.service import fail_unfinished_run

    evolution_round = EvolutionRound.objects.filter(pk=arguments.get("round")).first()
    if evolution_round is None:
        return
    fail_round(evolution_round, reason)
    fail_unfinished_run(evolution_round.training_run_id, reason)


@job("arena.evaluate", queue=Job.Queue.DEFAULT, on_give_up=_round_given_up)
def evaluate_round(ctx: JobContext, round: int) -> dict[str, Any]:
    from arena.steps import evaluate

    return _run_step(ctx, round, round_machine.EVALUATING, evaluate, round_machine.EVALUATED)


@job("arena.diagnose", queue=Job.Queue.DEFAULT, on_give_up=_round_given_up)
def diagnose_round(ctx: JobContext, round: int) -> dict[str, Any]:
    from arena.steps import diagnose

    return _run_step(ctx, round, round_machine.DIAGNOSING, diagnose, round_machine.DIAGNOSED)


@job("arena.expand", queue=Job.Queue.DEFAULT, on_give_up=_round_given_up)
def expand_round(ctx: JobContext, round: int) -> dict[str, Any]:
    from arena.steps import expand

    return _run_step(ctx, round, round_machine.EXPANDING, expand, round_machine.EXPANDED)


@job("arena.train", queue=Job.Queue.GPU, on_give_up=_round_given_up)
def train_round(ctx: JobContext, round: int) -> dict[str, Any]:
    from arena.steps import train

    return _run_step(ctx, round, round_machine.TRAINING, train, round_machine.TRAINED)


@job("arena.apply_proposal", queue=Job.Queue.DEFAULT)
def apply_proposal_job(ctx: JobContext, proposal: int) -> dict[str, Any]:
    from arena.steps import apply_proposal

    return apply_proposal(ExpansionProposal.objects.get(pk=proposal), ctx)


@job("arena.main_loop", queue=Job.Queue.DEFAULT)
def main_loop(
    ctx: JobContext,
    sources: list[str],
    tasks_per_environment: int,
    rounds: int,
    round_options: dict[str, Any],
) -> dict[str, Any]:
    """``./dev run``'s loop: catalogue -> tasks -> rounds, each stage queued as its own jobs."""
    return run_main_loop(ctx, sources, tasks_per_environment, rounds, round_options)
