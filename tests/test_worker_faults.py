"""Real Celery workers killed mid-way through mining an environment, synthesizing tasks, a
training run and an evolution round: the restarted worker retries the work and finishes it;
nothing is left running forever, half-built or counted twice."""

from __future__ import annotations

import pytest
from django.db import transaction

from arena.models import EvolutionRound
from arena.rounds import start_round
from aw_site.jobs import enqueue
from aw_site.models import Job
from environments.models import Environment
from environments.registry import record_package
from tasks.models import Task
from tasks.service import synthesize_tasks
from tests.support.sample_package import build_sample_package
from tests.support.training import QUICK_TRAINING
from tests.support.worker import celery_worker, redis_available, wait_for
from training.models import TrainingRun
from training.service import ensure_tiny_policy

pytestmark = [
    pytest.mark.worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_available(), reason="Redis is not reachable on 127.0.0.1:6379"),
]


@pytest.fixture
def world(tmp_path, settings):
    settings.STORAGE_ROOT = tmp_path / "storage"
    shop = record_package(build_sample_package(tmp_path / "pkg", extra_books=20))
    synthesize_tasks(shop, count=8, min_walk_length=1, max_walk_length=2, split="train")
    return shop, ensure_tiny_policy()


def test_training_run_started_through_the_api_runs_on_the_gpu_queue(
    world, reviewer_api, tmp_path, settings
):
    shop, policy = world
    with celery_worker(
        tmp_path, extra_env={"AW_STORAGE_ROOT": str(settings.STORAGE_ROOT)}
    ) as worker:
        response = reviewer_api.post(
            "/api/training-runs/",
            {"base_policy": policy.pk, "environments": [shop.pk], "config": QUICK_TRAINING},
            format="json",
        )
        assert response.status_code == 202, response.json()
        run_id = response.json()["id"]
        job = Job.objects.get(training_runs=run_id)
        assert job.queue == "gpu" and job.kind == "training.train"
        wait_for(
            lambda: Job.objects.get(pk=job.pk).is_finished,
            timeout=300,
            message=f"training job\n{worker.log()[-3000:]}",
        )
    run = TrainingRun.objects.get(pk=run_id)
    assert run.status == "succeeded", run.failure_reason
    assert run.output_policy.parent == policy and run.output_policy.version == 2
    assert run.checkpoints.exists()
    phases = set(run.metrics.values_list("phase", flat=True))
    assert {"gold", "sft", "grpo"} <= phases
    grpo = run.metrics.filter(phase="grpo").first().values
    assert {"reward_mean", "loss"} <= set(grpo)
    metrics = reviewer_api.get(f"/api/training-runs/{run_id}/metrics/").json()
    assert len(metrics) == run.metrics.count()


def test_training_run_killed_during_grpo_is_retrained_from_scratch(world, tmp_path, settings):
    shop, policy = world
    run = TrainingRun.objects.create(base_policy=policy, config=QUICK_TRAINING)
    run.environments.add(shop)
    with celery_worker(
        tmp_path, extra_env={"AW_STORAGE_ROOT": str(settings.STORAGE_ROOT)}
    ) as worker:
        with transaction.atomic():
            job = enqueue("training.train", {"run": run.pk})

        def past_sft():
            return run.metrics.filter(phase="sft").exists()

        kill_when(worker, past_sft, "SFT warm-up finished")
        assert TrainingRun.objects.get(pk=run.pk).status == "running"
        record = restart_until_finished(worker, job, 400, "retried training")
    assert record.state == "succeeded" and record.attempts == 2, record.error
    run.refresh_from_db()
    assert run.status == "succeeded" and run.output_policy.version == 2
    assert policy.children.count() == 1  # the lost attempt published no policy
    phases = list(run.metrics.values_list("phase", flat=True))
    assert phases.count("gold") == phases.count("sft") == 1  # curves of one attempt only
    logged = (settings.STORAGE_ROOT / "training" / f"run-{run.pk}" / "metrics.jsonl").read_text()
    assert logged.count('"phase": "gold"') == 1


def test_round_resumes_after_its_worker_is_killed(world, tmp_path, settings):
    _, policy = world
    with celery_worker(
        tmp_path, extra_env={"AW_STORAGE_ROOT": str(settings.STORAGE_ROOT)}
    ) as worker:
        with transaction.atomic():
            evolution_round = start_round(
                auto_approve=True,
                tasks_per_environment=4,
                training=QUICK_TRAINING,
                max_walk_length=4,
            )

        def evaluating_with_progress():
            job = EvolutionRound.objects.get(pk=evolution_round.pk).current_job
            return (
                job is not None
                and job.kind == "arena.evaluate"
                and job.state == "running"
                and job.progress > 0.2
            )

        wait_for(
            evaluating_with_progress,
            timeout=120,
            interval=0.05,
            message=f"evaluation under way\n{worker.log()[-3000:]}",
        )
        worker.kill()
        worker.start()

        def finished():
            return EvolutionRound.objects.get(pk=evolution_round.pk).status in ("done", "failed")

        wait_for(finished, timeout=400, message=f"round to finish\n{worker.log()[-3000:]}")
    evolution_round.refresh_from_db()
    assert evolution_round.status == "done", evolution_round.failure_reason
    evaluate = Job.objects.get(rounds=evolution_round, kind="arena.evaluate")
    assert evaluate.attempts == 2 and evaluate.state == "succeeded"
    evaluation = evolution_round.evaluations.get()
    tasks = list(evaluation.trajectories.values_list("task_id", flat=True))
    assert len(tasks) == len(set(tasks)) == evaluation.task_count
    assert evolution_round.trained_policy is not None
    assert not Job.objects.exclude(state__in=["succeeded", "failed"]).exists()


def kill_when(worker, condition, what: str) -> None:
    """SIGKILL the worker the moment ``condition`` holds (the caller restarts it)."""
    wait_for(condition, timeout=120, interval=0.01, message=f"{what}\n{worker.log()[-3000:]}")
    worker.kill()


def restart_until_finished(worker, job: Job, timeout: float, what: str) -> Job:
    """Start the worker again and wait for the job it left behind to end; its final row."""
    worker.start()
    wait_for(
        lambda: Job.objects.get(pk=job.pk).is_finished,
        timeout=timeout,
        message=f"{what}\n{worker.log()[-3000:]}",
    )
    return Job.objects.get(pk=job.pk)


def test_environment_build_killed_while_mining_is_rebuilt_without_leftovers(tmp_path, settings):
    settings.STORAGE_ROOT = tmp_path / "storage"
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            job = enqueue("environments.build_environment", {"source": "airports"})

        def draft_under_way():
            building = Environment.objects.filter(status__in=["mining", "verifying"])
            return building.filter(name="airports").exists()

        kill_when(worker, draft_under_way, "the build to start mining")
        assert Environment.objects.get(name="airports").status in ("mining", "verifying")
        record = restart_until_finished(worker, job, 300, "rebuild")
    assert record.state == "succeeded" and record.attempts == 2, record.error
    assert "left unfinished by an earlier attempt" in record.log_tail
    (environment,) = Environment.objects.filter(name="airports")
    assert environment.status == "verified" and environment.version == 1
    assert environment.tools.filter(verified=True).count() == environment.tool_count > 0
    on_disk = sorted(
        p.name for p in (settings.STORAGE_ROOT / "environments" / "airports").iterdir()
    )
    assert on_disk == ["v1"]  # no second version, no staging directory left behind


def test_task_synthesis_killed_midway_is_redone_without_duplicates(tmp_path, settings):
    settings.STORAGE_ROOT = tmp_path / "storage"
    shop = record_package(build_sample_package(tmp_path / "pkg", extra_books=40))
    arguments = {
        "environment": shop.pk,
        "count": 120,
        "min_walk_length": 2,
        "max_walk_length": 4,
        "write_steps": 1,
        "seed": 3,
    }
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            job = enqueue("tasks.synthesize", arguments)

        def synthesizing():
            record = Job.objects.get(pk=job.pk)
            return record.state == "running" and 0.2 < record.progress < 0.9

        kill_when(worker, synthesizing, "synthesis under way")
        assert Job.objects.get(pk=job.pk).state == "running"
        record = restart_until_finished(worker, job, 300, "retried synthesis")
    assert record.state == "succeeded" and record.attempts == 2, record.error
    signatures = list(Task.objects.filter(environment=shop).values_list("signature", flat=True))
    assert len(signatures) == len(set(signatures)) >= 60
    shop.refresh_from_db()
    assert shop.task_count == len(signatures)
    assert record.result["created"] == len(signatures)  # attempt 1 stored nothing before the kill


@pytest.mark.parametrize("pool", ["solo", "prefork"])
def test_job_cut_short_by_a_worker_shutdown_is_retried_not_failed(tmp_path, settings, pool):
    """SIGTERM to the worker's process group (systemd, a deploy) also stops its sandbox
    children; the job that loses them mid-way goes back to the queue instead of failing. A
    prefork child dies of the SIGTERM itself: its job is left running, and the restarted worker
    retries what its earlier life left running."""
    settings.STORAGE_ROOT = tmp_path / "storage"
    shop = record_package(build_sample_package(tmp_path / "pkg", extra_books=40))
    # Enough audited tasks that the shutdown lands mid-way (progress > 0.2, far from done).
    arguments = {"environment": shop.pk, "count": 150, "write_steps": 1, "max_walk_length": 5}
    with celery_worker(tmp_path, pool=pool) as worker:
        with transaction.atomic():
            job = enqueue("tasks.synthesize", arguments)
        wait_for(
            lambda: Job.objects.get(pk=job.pk).progress > 0.2,
            timeout=120,
            interval=0.05,
            message=f"synthesis under way\n{worker.log()[-3000:]}",
        )
        worker.stop()
        stopped = Job.objects.get(pk=job.pk)
        assert "Warm shutdown" in worker.log()
        # Either the job lost a sandbox call it could not do without (it goes back to the
        # queue), or it replaced the lost sandbox worker and finished during the warm shutdown,
        # or (every task now replays its verifier audit, so 150 take longer than the 15 s grace)
        # the worker was killed with the job still running: the restarted worker retries it.
        left = ("retrying", "succeeded", "running")
        assert stopped.state in left, (stopped.state, stopped.error)
        if stopped.state != "succeeded":
            assert stopped.attempts == 1
            if stopped.state == "retrying":
                assert "shut down while the job ran" in stopped.message
            restart_until_finished(worker, job, 300, "job after restart")
    record = Job.objects.get(pk=job.pk)
    assert record.state == "succeeded", record.error
    assert record.result["created"] == Task.objects.filter(environment=shop).count() > 0
