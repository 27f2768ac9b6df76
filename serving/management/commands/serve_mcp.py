"""Serve a verified environment as a real MCP server (stdio by default, or streamable HTTP).

`--task ID` binds the server to one of the environment's tasks: the task instruction becomes the
server's instructions and `submit_answer` ends a session's episode with its reward.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from environments.models import Environment


def resolve_environment(reference: str) -> Environment:
    """`name` (newest verified version), `name@vN` or a numeric id."""
    queryset = Environment.objects.filter(status=Environment.Status.VERIFIED)
    if reference.isdigit():
        environment = queryset.filter(pk=int(reference)).first()
    elif "@v" in reference:
        name, version = reference.split("@v", 1)
        environment = (
            queryset.filter(name=name, version=int(version)).first() if version.isdigit() else None
        )
    else:
        environment = queryset.filter(name=reference).order_by("-version").first()
    if environment is None:
        raise CommandError(f"no verified environment {reference!r}")
    return environment


def resolve_task(environment: Environment, task_id: int):
    """The TaskSpec of task `task_id`, which must belong to `environment`."""
    from tasks.models import Task
    from tasks.records import spec_from_task

    task = Task.objects.select_related("environment").filter(pk=task_id).first()
    if task is None:
        raise CommandError(f"no task {task_id}")
    if task.environment_id != environment.pk:
        raise CommandError(
            f"task {task_id} belongs to {task.environment.label}, not {environment.label}"
        )
    return spec_from_task(task)


class Command(BaseCommand):
    help = (
        "Serve an environment over MCP: stdio (default) or streamable HTTP with --http PORT; "
        "--task ID binds it to a task (instructions, submit_answer with the reward)."
    )

    def add_arguments(self, parser):
        parser.add_argument("environment", help="name, name@vN or id")
        parser.add_argument("--http", type=int, metavar="PORT")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--task", type=int, metavar="ID", help="bind the server to this task")

    def handle(
        self,
        *args,
        environment: str,
        http: int | None,
        host: str,
        task: int | None = None,
        **options,
    ):
        from serving.mcp_server import build_http_app, run_stdio

        record = resolve_environment(environment)
        spec = resolve_task(record, task) if task is not None else None
        if http is None:
            run_stdio(record.package_path, task=spec)
            return
        import uvicorn

        bound = f" bound to task {task}" if spec is not None else ""
        self.stderr.write(f"serving {record.label}{bound} over MCP at http://{host}:{http}/mcp")
        uvicorn.run(
            build_http_app(record.package_path, host=host, task=spec),
            host=host,
            port=http,
            log_level="warning",
        )
