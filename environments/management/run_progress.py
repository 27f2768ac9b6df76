"""Following a catalogue run from a command: one loop for every command that starts one."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.core.management.base import CommandError

from aw_site.models import Job
from environments.directory.ledger import RunSummary, run_summary
from environments.models import CatalogueRun


def follow_catalogue_run(
    run: CatalogueRun,
    timeout: float,
    write: Callable[[str], None],
    line_of: Callable[[Job, RunSummary, int], str],
    waiting: Callable[[RunSummary], int] = lambda summary: 0,
    poll: float = 1.0,
) -> RunSummary:
    """Write each new progress line of ``run`` (``line_of(job, summary, waiting)``) until its
    fan-out job has finished, every item has an outcome and ``waiting`` counts nothing left
    (task syntheses, adopted jobs); a CommandError when the run could not start or is still
    running after ``timeout`` seconds."""
    last, deadline = "", time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        job = Job.objects.get(pk=run.job_id)
        if job.state == Job.State.FAILED:
            raise CommandError(f"catalogue run #{run.pk} could not start: {job.error}")
        summary = run_summary(run)
        left = waiting(summary)
        line = line_of(job, summary, left)
        if line != last:
            write(line)
            last = line
        if job.is_finished and summary.finished and not left:
            return summary
        if time.monotonic() > deadline:
            raise CommandError(f"catalogue run #{run.pk} still running after {timeout:.0f}s")
        time.sleep(poll)
