"""Serve a verified environment as a real MCP server (stdio by default, or streamable HTTP)."""

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


class Command(BaseCommand):
    help = "Serve an environment over MCP: stdio (default) or streamable HTTP with --http PORT."

    def add_arguments(self, parser):
        parser.add_argument("environment", help="name, name@vN or id")
        parser.add_argument("--http", type=int, metavar="PORT")
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, environment: str, http: int | None, host: str, **options):
        from environments.mcp_server import build_http_app, run_stdio

        record = resolve_environment(environment)
        if http is None:
            run_stdio(record.package_path)
            return
        import uvicorn

        self.stderr.write(f"serving {record.label} over MCP at http://{host}:{http}/mcp")
        uvicorn.run(
            build_http_app(record.package_path, host=host),
            host=host,
            port=http,
            log_level="warning",
        )
