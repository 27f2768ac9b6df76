"""Build one environment through the `environments.build` job: from a data file, a built-in
source, a stored theme or a live MCP server (imported as a theme, then built).

    python manage.py build_environment --file PATH [--name N] [--title T] [--category "P/S/T"]
    python manage.py build_environment --source NAME
    python manage.py build_environment --theme ID [--file DATA] [--min-tools N]
    python manage.py build_environment --mcp "npx -y @modelcontextprotocol/server-memory"
    python manage.py build_environment --mcp http://127.0.0.1:8100/mcp
    python manage.py build_environment --agent-world PATH [--env ID ...]

The file is copied under AW_STORAGE_ROOT/uploads/<uuid>/ (the build removes the copy, never the
original) and probed before the job is queued. Without a broker the job runs in this process;
with one, a Celery worker on the sandbox queue runs it. Progress lines are printed until it
ends; the exit code is non-zero when the build fails.

`--agent-world` imports environments of a release in the paper's format (PATH: a checkout or
its environment_mix/). The whole release is one catalogue run (environments/directory/: one
build job per environment, a ledger row each, resumable; a second run builds nothing again);
`--env ID` builds the named environments directly, one build job each. Then a summary of what
was published and what was rejected, by stage and reason; the exit code is non-zero when there
was something to build and none was published.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from aw_site.models import Job
from environments.builder import submit
from environments.builder.request import BuildRequestError
from environments.builder.uploads import store_local_file
from environments.models import Environment


class Command(BaseCommand):
    help = "Build, verify and publish one environment from a data file or a built-in source."

    def add_arguments(self, parser):
        origin = parser.add_mutually_exclusive_group(required=True)
        origin.add_argument("--file", help="a data file (CSV, TSV, JSON, JSONL, SQL dump, HTML)")
        origin.add_argument(
            "--source", help="a built-in source name (environments/builder/sources.json)"
        )
        origin.add_argument("--theme", type=int, help="a stored theme's id (see /themes/)")
        origin.add_argument(
            "--mcp", help="a live MCP server: its stdio command line (quoted) or its http(s) URL"
        )
        origin.add_argument(
            "--agent-world",
            metavar="PATH",
            help="an Agent-World release: a checkout or its environment_mix/ folder",
        )
        parser.add_argument(
            "--env",
            action="append",
            default=[],
            metavar="ID",
            help="--agent-world: an environment id to import (repeat; default: all)",
        )
        parser.add_argument(
            "--data", default="", help="theme builds: a data file whose rows the theme's tables use"
        )
        parser.add_argument(
            "--data-source",
            default="",
            help='theme builds: a built-in source for rows ("none": generated rows only)',
        )
        parser.add_argument("--min-tools", type=int, default=None, help="verified tools needed")
        parser.add_argument(
            "--rows", type=int, default=None, help="theme builds: generated rows per table"
        )
        parser.add_argument("--name", default="", help="environment name (default: file stem)")
        parser.add_argument("--title", default="")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--category", default="", help='"Primary/Secondary/Tertiary" from the taxonomy'
        )
        parser.add_argument(
            "--no-wait", action="store_true", help="queue the job and print its id only"
        )
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait")

    def handle(self, *args, file, source, name, title, description, category, no_wait, timeout,
               theme=None, mcp=None, data="", data_source="", min_tools=None, rows=None,
               agent_world=None, env=(), **options):  # fmt: skip
        build_options = {
            k: v
            for k, v in {"min_tools": min_tools, "rows": rows, "data_source": data_source}.items()
            if v not in (None, "")
        }
        fields = {
            k: v
            for k, v in {
                "name": name,
                "title": title,
                "description": description,
                "category": category,
            }.items()
            if v
        }
        if build_options:
            fields["options"] = build_options
        if agent_world:
            return self.import_release(agent_world, list(env), fields, no_wait, timeout)
        if env:
            raise CommandError("--env names environments of an --agent-world release")
        try:
            if theme is not None or mcp:
                if data:
                    stored = store_local_file(data)
                    fields.update(
                        files=[str(stored.path)],
                        filename=stored.filename,
                        upload_dir=str(stored.directory),
                    )
                if theme is not None:
                    request = submit.theme_request(theme, **fields)
                else:
                    request = submit.mcp_request(mcp, **fields)
            elif file:
                request = submit.upload_request(store_local_file(file), **fields)
            else:
                request = submit.source_request(source, **fields)
        except BuildRequestError as exc:
            if fields.get("upload_dir"):
                from environments.builder.uploads import remove_upload

                remove_upload(fields["upload_dir"])
            raise CommandError(str(exc)) from exc
        job = submit.queue_build(request)
        self.stdout.write(f"job #{job.pk} {job.kind} {request.target} queued")
        if no_wait:
            return
        if settings.AW_JOBS_MODE == "celery":
            self.stdout.write("waiting for a Celery worker on the sandbox queue")
        record = self.follow(job.pk, timeout)
        if record.state != Job.State.SUCCEEDED:
            if options.get("traceback"):  # the job's own traceback, kept in its log tail
                self.stderr.write(record.log_tail)
            raise CommandError(f"build failed: {self.failure(record)}")
        environment = Environment.objects.get(pk=record.result["environment"])
        self.stdout.write(
            self.style.SUCCESS(
                f"built {environment.label}: {environment.tool_count} verified tools, "
                f"{environment.table_count} tables, {environment.row_count} rows"
            )
        )

    def import_release(
        self, release: str, env_ids: list[str], fields: dict, no_wait: bool, timeout: float
    ) -> None:
        """A whole release is one catalogue run (resumable; a second run builds nothing again);
        `--env ID` builds those environments directly, one build job each."""
        from environments.agent_world.release import ReleaseError

        if not env_ids:
            if fields:
                raise CommandError(
                    "--name, --title, --category and options name one environment: give --env"
                )
            from environments.directory.releases import start_release_run

            try:
                run = start_release_run(release)
            except ReleaseError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"catalogue run #{run.pk} of {run.source} queued (job #{run.job_id})")
            if not no_wait:
                self.report_run(self.follow_run(run, timeout))
            return
        if len(env_ids) > 1 and fields.get("name"):
            raise CommandError("--name names one environment: give one --env with it")
        try:
            requests = [submit.agent_world_request(release, i, **fields) for i in env_ids]
        except BuildRequestError as exc:
            raise CommandError(str(exc)) from exc
        jobs = [(request, submit.queue_build(request)) for request in requests]
        for request, job in jobs:
            self.stdout.write(f"job #{job.pk} {job.kind} {request.target} queued")
        if no_wait:
            return
        published, rejected = [], []
        for request, job in jobs:
            record = self.follow(job.pk, timeout)
            if record.state == Job.State.SUCCEEDED:
                environment = Environment.objects.get(pk=record.result["environment"])
                published.append(released_line(request.env_id, environment))
            else:
                rejected.append((request.env_id, self.failure(record)))
        self.write_outcome(published, rejected, len(jobs))
        if not published:
            raise CommandError(f"no environment of {release} was published")

    def follow_run(self, run, timeout: float):
        """Print the run's progress until every environment of it has an outcome."""
        from environments.management.run_progress import follow_catalogue_run

        def line_of(job, summary, _waiting: int) -> str:
            if not job.is_finished:
                return f"listing the release: {job.message or job.state}"
            return (
                f"listed {summary.listed}: published {summary.counts['published']}, "
                f"rejected {summary.counts['rejected']}, failed {summary.counts['failed']}, "
                f"remaining {summary.remaining}; built by earlier runs {summary.done_before}"
            )

        return follow_catalogue_run(run, timeout, self.stdout.write, line_of, poll=0.3)

    def report_run(self, summary) -> None:
        """Published and rejected environments of the run, by reason; fails when it had some
        to build and published none."""
        from environments.directory.releases import KEY_PREFIX
        from environments.models import CatalogueItem

        items = list(CatalogueItem.objects.filter(run_id=summary.run).order_by("key"))
        environments = Environment.objects.in_bulk(
            [pk for item in items for pk in item.environments or []]
        )
        published, rejected = [], []
        for item in items:
            env_id = item.key.removeprefix(KEY_PREFIX)
            built = [environments[pk] for pk in item.environments or [] if pk in environments]
            if item.state == CatalogueItem.State.PUBLISHED and built:
                published.append(released_line(env_id, built[0]))
            else:
                rejected.append((env_id, item.reason or item.state))
        if summary.done_before:
            self.stdout.write(
                f"{summary.done_before} environments built by an earlier run: not built again"
            )
        if not items:
            return
        self.write_outcome(published, rejected, len(items))
        if rejected:
            self.stdout.write("rejected by reason:")
            for reason, count in summary.top_reasons:
                self.stdout.write(f"{count:5d}  {reason}")
        if not published:
            raise CommandError(f"no environment of catalogue run #{summary.run} was published")

    def write_outcome(self, published: list[str], rejected: list[tuple[str, str]], total: int):
        self.stdout.write(f"published {len(published)} of {total}:")
        for line in published:
            self.stdout.write(f"  {line}")
        if rejected:
            by_stage: dict[str, int] = {}
            for _env_id, reason in rejected:
                stage = (
                    reason.split(" stage failed")[0].split()[-1]
                    if " stage failed" in reason
                    else "job"
                )
                by_stage[stage] = by_stage.get(stage, 0) + 1
            counts = ", ".join(f"{n} at {stage}" for stage, n in sorted(by_stage.items()))
            self.stdout.write(f"rejected {len(rejected)} ({counts}):")
            for env_id, reason in rejected:
                self.stdout.write(f"  {env_id}: {reason[:500]}")

    def follow(self, job_id: int, timeout: float) -> Job:
        last, deadline = "", time.monotonic() + timeout
        while True:
            record = Job.objects.get(pk=job_id)
            line = f"{record.progress_percent:3d}% {record.message}".rstrip()
            if record.message and line != last:
                self.stdout.write(line)
                last = line
            if record.is_finished:
                return record
            if time.monotonic() > deadline:
                raise CommandError(f"job #{job_id} still {record.state} after {timeout:.0f}s")
            time.sleep(0.3)

    @staticmethod
    def failure(record: Job) -> str:
        draft = (record.result or {}).get("draft_environment")
        environment = Environment.objects.filter(pk=draft).first() if draft else None
        if environment is not None and environment.failure_reason:
            return f"{environment.label} {environment.status}: {environment.failure_reason}"
        return record.error or record.state


def released_line(env_id: str, environment: Environment) -> str:
    """One published released environment in a line: what it holds, its questions' fate."""
    questions = (environment.build_yield or {}).get("questions") or {}
    line = (
        f"{env_id} -> {environment.label}: {environment.tool_count} verified "
        f"tools, {environment.table_count} collections, {environment.row_count} rows"
    )
    if questions.get("questions"):
        kept_out = ", ".join(f"{n} {k}" for k, n in questions["kept_out_by_reason"].items())
        line += (
            f"; {questions['imported']} of {questions['questions']} questions "
            "imported as held-out tasks" + (f" (kept out: {kept_out})" if kept_out else "")
        )
    return line
