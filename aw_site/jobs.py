"""Jobs: the one way long work runs, with progress, a log tail and recovery from lost workers.

Each app registers its job functions with ``@job(kind, queue)`` in its ``jobs.py``; a function
takes a ``JobContext`` plus JSON arguments and returns a JSON result. ``enqueue`` records a Job
row and hands it to Celery (production) or to an in-process worker thread (embedded default), or
leaves it queued for database-polling worker processes (``AW_JOBS_MODE=db``, ``./dev run``).
Running the same job twice is harmless: a finished job is never run again, which makes late
acks and redelivery after a killed worker safe.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    models,
    transaction,
)
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules
from kombu.exceptions import OperationalError as KombuOperationalError

from aw_site.llm import collect_llm_failures, summarize_llm_failures
from aw_site.models import Job
from aw_site.refusals import JobRefused

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
DATABASE_WAIT_SECONDS = 60.0  # how long a job whose database went away waits for it to return


class JobCancelled(Exception):
    """Raised inside a job when its record was marked failed or taken over by a newer attempt."""


# Set when this worker process is shutting down (SIGTERM, deploy): a job that breaks because its
# sandbox children were stopped with it is retried, not failed (aw_site/signals.py sets it).
WORKER_SHUTTING_DOWN = threading.Event()


def interrupted(exc: BaseException) -> bool:
    """Whether an error inside a job means this attempt was cut off and the job will run again
    (database outage, worker shutdown, a newer attempt took over), not that the work failed.

    Jobs that record a failure on their own rows (a rejected draft, a failed round or training
    run, a failed proposal) must not record it then: the retry does the work.
    """
    return (
        isinstance(exc, JobCancelled | OperationalError | InterfaceError)
        or WORKER_SHUTTING_DOWN.is_set()
    )


def this_attempt(job_id: int, attempts: int) -> models.QuerySet:
    """The job row while this attempt still owns it: a reaper's retry starts a newer attempt,
    and an older one that was only slow must not overwrite what the newer one writes."""
    return Job.objects.filter(pk=job_id, state=Job.State.RUNNING, attempts=attempts)


GiveUpHook = Callable[[dict[str, Any], str], None]


@dataclass(frozen=True)
class JobSpec:
    kind: str
    queue: str
    function: Callable[..., dict[str, Any] | None]
    # Called with the job's arguments and the reason once its worker died on the last attempt:
    # the job never ran to an end, so what it drives (a round, a training run) is failed here.
    on_give_up: GiveUpHook | None = None


_REGISTRY: dict[str, JobSpec] = {}


def job(
    kind: str, queue: str = Job.Queue.DEFAULT, on_give_up: GiveUpHook | None = None
) -> Callable:
    """Register ``function(ctx, **arguments)`` as the job of this kind."""

    def register(function: Callable[..., dict[str, Any] | None]) -> Callable:
        _REGISTRY[kind] = JobSpec(kind=kind, queue=queue, function=function, on_give_up=on_give_up)
        return function

    return register


def job_spec(kind: str) -> JobSpec:
    if kind not in _REGISTRY:
        # Every installed app's jobs.py registers its kinds (as Celery's autodiscovery finds
        # them): aw_site names no app above it.
        autodiscover_modules("jobs")
    if kind not in _REGISTRY:
        raise KeyError(f"unknown job kind {kind!r}")
    return _REGISTRY[kind]


class JobContext:
    """What a running job uses to report progress and log lines."""

    def __init__(self, job_record: Job):
        self.job = job_record
        self._lines: list[str] = [job_record.log_tail] if job_record.log_tail else []

    @property
    def job_id(self) -> int:
        return self.job.pk

    @property
    def saved(self) -> dict[str, Any]:
        """What an earlier attempt saved with checkpoint(): a retry after a lost worker resumes."""
        return dict(self.job.result or {})

    def checkpoint(self, **values: Any) -> None:
        """Save resumable JSON state in the job row; the final result replaces it on success."""
        self.job.result = {**(self.job.result or {}), **values}
        self._write(result=self.job.result)

    def log(self, line: str) -> None:
        stamp = timezone.now().strftime("%H:%M:%S")
        self._lines.append(f"[{stamp}] {line}")
        tail = "\n".join(self._lines)[-Job.LOG_TAIL_CHARS :]
        self._lines = [tail]
        self._write(log_tail=tail)

    def progress(self, fraction: float, message: str = "") -> None:
        fraction = min(1.0, max(0.0, float(fraction)))
        fields: dict[str, Any] = {"progress": fraction}
        if message:
            fields["message"] = message[:500]
            self._lines.append(f"[{timezone.now():%H:%M:%S}] {message}")
            tail = "\n".join(self._lines)[-Job.LOG_TAIL_CHARS :]
            self._lines = [tail]
            fields["log_tail"] = tail
        self._write(**fields)

    def _write(self, **fields: Any) -> None:
        fields["heartbeat_at"] = timezone.now()
        updated = this_attempt(self.job.pk, self.job.attempts).update(**fields)
        if not updated:
            raise JobCancelled(f"job {self.job.pk} attempt {self.job.attempts} no longer runs")


def enqueue(
    kind: str,
    arguments: dict[str, Any] | None = None,
    *,
    user: Any = None,
    target: str = "",
) -> Job:
    """Record a job and hand it to a worker once the surrounding transaction commits."""
    spec = job_spec(kind)
    record = Job.objects.create(
        kind=kind,
        queue=spec.queue,
        arguments=arguments or {},
        created_by=user if getattr(user, "is_authenticated", False) else None,
        target=target,
    )
    transaction.on_commit(lambda: dispatch(record.pk))
    return record


def dispatch(job_id: int) -> None:
    """Hand a queued job to a worker. With the broker unreachable the job stays queued and the
    reaper sends it again (AW_JOB_QUEUED_STALE_SECONDS): whoever enqueued it, a request or a job
    scheduling its next step, goes on instead of failing."""
    if settings.AW_JOBS_MODE == "db":
        return  # stays queued: a worker process polling the database takes it (aw_site/job_worker.py)
    record = Job.objects.get(pk=job_id)
    if settings.AW_JOBS_MODE == "celery":
        try:
            result = run_job.apply_async(args=[job_id], queue=record.queue)
        except (KombuOperationalError, OSError) as exc:
            logger.warning("job %s stays queued: broker unreachable (%s)", job_id, exc)
            Job.objects.filter(pk=job_id, state=record.state).update(
                message=f"queued; the broker was unreachable, it will be sent again: {exc}"[:500]
            )
            return
        Job.objects.filter(pk=job_id).update(celery_task_id=result.id)
    else:
        # The process whose threads will run it: if it exits first, the job is known to be lost
        # (lost_with_its_process) instead of looking queued for ever.
        Job.objects.filter(pk=job_id, state__in=[Job.State.QUEUED, Job.State.RETRYING]).update(
            worker=in_process_worker_name()
        )
        _in_process_executor().submit(_run_in_thread, job_id)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_executor_workers = 2


def _in_process_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=_executor_workers, thread_name_prefix="aw-job"
            )
        return _executor


def size_in_process_executor(workers: int) -> None:
    """How many jobs this process runs at once without a broker (default 2), for commands such
    as build_catalogue that fan out; jobs already handed to a smaller executor finish there."""
    global _executor, _executor_workers
    with _executor_lock:
        _executor_workers = max(1, int(workers))
        if _executor is not None and _executor._max_workers != _executor_workers:
            _executor.shutdown(wait=False)  # its queued jobs still run; new ones go to the new
            _executor = None


def in_process_worker_name() -> str:
    return f"in-process@{socket.gethostname()}:{os.getpid()}"


def lost_with_its_process(record: Job) -> bool:
    """A job handed to the threads of an embedded process on this host that has exited: it
    will never run (or finish) there, whatever its state says."""
    if record.is_finished:
        return False
    prefix = f"in-process@{socket.gethostname()}:"
    if not record.worker.startswith(prefix):
        return False
    try:
        pid = int(record.worker.removeprefix(prefix))
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def _run_in_thread(job_id: int) -> None:
    try:
        execute_job(job_id, worker=in_process_worker_name())
    except Exception as exc:  # nothing else would ever see it: record it on the job
        logger.exception("in-process job %s could not run", job_id)
        Job.objects.filter(pk=job_id).exclude(state__in=Job.FINISHED_STATES).update(
            state=Job.State.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
    finally:
        connection.close()


@shared_task(
    name="aw_site.run_job",
    bind=True,
    acks_late=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=10,
)
def run_job(self, job_id: int) -> str:
    """A database outage while claiming is retried by Celery instead of losing the message."""
    close_old_connections()
    return execute_job(job_id, worker=self.request.hostname or socket.gethostname())


def _claim(job_id: int, worker: str) -> Job | None:
    """Mark the job running for this worker, unless it is finished or held by a live run."""
    with transaction.atomic():
        record = Job.objects.select_for_update().filter(pk=job_id).first()
        if record is None or record.is_finished:
            return None
        if record.state == Job.State.RUNNING and not _is_stale(record):
            return None
        now = timezone.now()
        record.state = Job.State.RUNNING
        record.worker = worker
        record.attempts += 1
        record.started_at = record.started_at or now
        record.heartbeat_at = now
        record.error = ""
        record.save(
            update_fields=["state", "worker", "attempts", "started_at", "heartbeat_at", "error"]
        )
        return record


def _is_stale(record: Job) -> bool:
    limit = timedelta(seconds=settings.AW_JOB_STALE_SECONDS)
    return record.heartbeat_at is None or timezone.now() - record.heartbeat_at > limit


class _Heartbeat(threading.Thread):
    """Keeps heartbeat_at fresh while a job step runs long without reporting progress."""

    def __init__(self, job_id: int, attempts: int):
        super().__init__(daemon=True, name=f"aw-heartbeat-{job_id}")
        self.job_id = job_id
        self.attempts = attempts
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(HEARTBEAT_SECONDS):
                try:
                    this_attempt(self.job_id, self.attempts).update(heartbeat_at=timezone.now())
                except DatabaseError:  # an outage: beat again once the database is back
                    connection.close()
        finally:
            connection.close()


def execute_job(job_id: int, worker: str) -> str:
    """Run one job to a final state; returns that state."""
    record = _claim(job_id, worker)
    if record is None:
        return "skipped"
    spec = job_spec(record.kind)
    context = JobContext(record)
    heartbeat = _Heartbeat(job_id, record.attempts)
    heartbeat.start()
    llm_failures: list[str] = []
    try:
        context.log(f"started on {worker} (attempt {record.attempts})")
        with collect_llm_failures() as llm_failures:
            result = spec.function(context, **record.arguments) or {}
        if llm_failures:  # a configured LLM failed and the job carried on: say so
            warnings = summarize_llm_failures(llm_failures)
            for line in warnings:
                context.log(f"warning: the LLM failed and the job went on without it: {line}")
            if isinstance(result, dict):
                result = {**result, "llm_warnings": warnings}
    except JobCancelled:
        return "cancelled"
    except (OperationalError, InterfaceError) as exc:
        # The database went away under the job (restart, failover); jobs are retry-safe.
        return _retry_after_outage(job_id, record.attempts, worker, exc)
    except Exception as exc:
        if WORKER_SHUTTING_DOWN.is_set():
            logger.warning("job %s interrupted by worker shutdown: %s", job_id, exc)
            return _retry_own_attempt(
                job_id, record.attempts, f"worker {worker} shut down while the job ran"
            )
        if isinstance(exc, JobRefused) and exc.__cause__ is None:
            logger.info("job %s refused: %s", job_id, exc)
        else:
            logger.exception("job %s failed", job_id)
        tail = traceback.format_exc()[-3000:]
        warned = "".join(
            f"\nwarning: the LLM failed: {line}" for line in summarize_llm_failures(llm_failures)
        )
        this_attempt(job_id, record.attempts).update(
            state=Job.State.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            log_tail=(context.job.log_tail + warned + "\n" + tail)[-Job.LOG_TAIL_CHARS :],
            finished_at=timezone.now(),
        )
        return Job.State.FAILED
    finally:
        heartbeat.stopped.set()
    this_attempt(job_id, record.attempts).update(
        state=Job.State.SUCCEEDED,
        progress=1.0,
        result=result,
        finished_at=timezone.now(),
        heartbeat_at=timezone.now(),
    )
    return Job.State.SUCCEEDED


def _retry_after_outage(job_id: int, attempts: int, worker: str, exc: Exception) -> str:
    """Wait for the database to answer again, then put the job back in the queue. If it stays
    away, raise: run_job's Celery retry and the reaper take over from there."""
    logger.warning("job %s lost its database connection on %s: %s", job_id, worker, exc)
    deadline = time.monotonic() + DATABASE_WAIT_SECONDS
    while True:
        connection.close()
        try:
            Job.objects.filter(pk=job_id).exists()
            break
        except (OperationalError, InterfaceError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)
    return _retry_own_attempt(job_id, attempts, f"database connection lost on {worker}: {exc}")


def _retry_own_attempt(job_id: int, attempts: int, reason: str) -> str:
    """Retry the job unless another attempt took it over (or it ended) in the meantime."""
    record = this_attempt(job_id, attempts).first()
    if record is None:
        return "cancelled"
    return recover_lost_job(record, reason[:300])


def recover_lost_job(record: Job, reason: str) -> str:
    """Retry a job whose worker died, or fail it with the reason once attempts run out."""
    # Only the state and attempt that were read: a job retried meanwhile is not retried twice.
    still = Job.objects.filter(pk=record.pk, state=record.state, attempts=record.attempts)
    if record.attempts >= settings.AW_JOB_MAX_ATTEMPTS:
        error = f"{reason}; gave up after {record.attempts} attempts"
        if still.update(state=Job.State.FAILED, error=error, finished_at=timezone.now()):
            _give_up(record, error)
        return Job.State.FAILED
    updated = still.update(
        state=Job.State.RETRYING,
        message=f"retrying: {reason}"[:500],
        log_tail=(record.log_tail + f"\n{reason}; retrying")[-Job.LOG_TAIL_CHARS :],
    )
    if updated:
        transaction.on_commit(lambda: dispatch(record.pk))
    return Job.State.RETRYING


def _give_up(record: Job, error: str) -> None:
    """Tell what the job drives that it failed (a hook's own failure is logged, not raised:
    the reaper goes on with the other jobs)."""
    try:
        hook = job_spec(record.kind).on_give_up
        if hook is not None:
            # A savepoint: a hook that fails leaves the caller's transaction usable.
            with transaction.atomic():
                hook(dict(record.arguments or {}), error)
    except Exception:
        logger.exception("job %s (%s): its give-up hook failed", record.pk, record.kind)


def recover_in_process_jobs() -> list[int]:
    """Jobs an earlier embedded process left running are retried or failed (its threads died)."""
    prefix = f"in-process@{socket.gethostname()}:"
    recovered = []
    running = Job.objects.filter(state=Job.State.RUNNING, worker__startswith=prefix)
    for record in running.exclude(worker=in_process_worker_name()):
        recover_lost_job(record, f"{record.worker} exited while the job ran")
        recovered.append(record.pk)
    return recovered


def adopt_lost_in_process_jobs(exclude_kinds: tuple[str, ...] = ()) -> list[int]:
    """Jobs handed to the threads of an embedded process on this host that has exited (a
    killed command without a broker): queued ones are dispatched again here, running ones
    retried or failed like any lost job. `exclude_kinds`: jobs whose owner takes their work
    over itself (a catalogue run's documents)."""
    prefix = f"in-process@{socket.gethostname()}:"
    states = [Job.State.QUEUED, Job.State.RETRYING, Job.State.RUNNING]
    adopted = []
    lost = Job.objects.filter(state__in=states, worker__startswith=prefix).exclude(
        kind__in=exclude_kinds
    )
    for record in lost:
        if not lost_with_its_process(record):
            continue
        if record.state == Job.State.RUNNING:
            recover_lost_job(record, f"{record.worker} exited while the job ran")
        else:
            transaction.on_commit(lambda pk=record.pk: dispatch(pk))
        adopted.append(record.pk)
    return adopted


def recover_jobs_of_worker(worker: str) -> list[int]:
    """Jobs left running by an earlier life of this worker are retried or failed."""
    recovered = []
    for record in Job.objects.filter(state=Job.State.RUNNING, worker=worker):
        recover_lost_job(record, f"worker {worker} restarted while the job ran")
        recovered.append(record.pk)
    return recovered


@job("aw_site.reap_stale_jobs")
def reap_stale_jobs_job(ctx: JobContext) -> dict[str, Any]:
    return {"recovered": reap_stale_jobs()}


def reap_stale_jobs() -> list[int]:
    """Running jobs without a heartbeat for AW_JOB_STALE_SECONDS lost their worker; queued or
    retrying jobs nobody took for AW_JOB_QUEUED_STALE_SECONDS lost their message (a broker
    restart without persistence). Both are handed out again; a duplicate delivery is skipped."""
    now = timezone.now()
    limit = now - timedelta(seconds=settings.AW_JOB_STALE_SECONDS)
    recovered = []
    for record in Job.objects.filter(state=Job.State.RUNNING, heartbeat_at__lt=limit):
        recover_lost_job(
            record,
            f"no heartbeat from {record.worker or 'its worker'} since {record.heartbeat_at:%Y-%m-%d %H:%M:%S}",
        )
        recovered.append(record.pk)
    waiting_limit = now - timedelta(seconds=settings.AW_JOB_QUEUED_STALE_SECONDS)
    waiting = Job.objects.filter(state__in=[Job.State.QUEUED, Job.State.RETRYING]).filter(
        models.Q(heartbeat_at__lt=waiting_limit)
        | models.Q(heartbeat_at__isnull=True, created_at__lt=waiting_limit)
    )
    for record in waiting:
        updated = Job.objects.filter(pk=record.pk, state=record.state).update(
            message="re-dispatched: no worker took it", heartbeat_at=now
        )
        if updated:
            transaction.on_commit(lambda pk=record.pk: dispatch(pk))
            recovered.append(record.pk)
    return recovered


@shared_task(name="aw_site.reap_stale_jobs")
def reap_stale_jobs_task() -> list[int]:
    return reap_stale_jobs()


@job("system.worker_check")
def worker_check(ctx: JobContext, seconds: float = 1.0, steps: int = 5) -> dict[str, Any]:
    """Proves a worker takes jobs and reports progress; used by operators and the job tests."""
    import time

    steps = max(1, min(int(steps), 1000))
    for step in range(steps):
        time.sleep(max(0.0, float(seconds)) / steps)
        ctx.progress((step + 1) / steps, f"step {step + 1} of {steps}")
    return {"steps": steps, "worker": ctx.job.worker}
