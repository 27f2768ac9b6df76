"""Validate a build request before any job is queued, then queue the one build job.

The REST API, the console and `manage.py build_environment` call these; a refusal raises
`BuildRequestError` with a message fit for a 400 answer, and leaves no stored upload behind.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job

from .request import BuildRequest, BuildRequestError
from .uploads import StoredUpload, probe_upload, remove_upload

BUILD_JOB = "environments.build"
CATALOGUE_JOB = "environments.build_catalogue"


def source_request(source: str, **fields: Any) -> BuildRequest:
    if not source:
        raise BuildRequestError("give a built-in source or a file")
    return BuildRequest.for_source(source, **fields)


def upload_request(stored: StoredUpload, **fields: Any) -> BuildRequest:
    """A request for a stored upload, probed; the upload is removed when it is refused."""
    try:
        probe_upload(stored.path, stored.filename)
        return BuildRequest.for_upload(
            [str(stored.path)], stored.filename, str(stored.directory), **fields
        )
    except BaseException:
        remove_upload(stored.directory)
        raise


def theme_request(theme: Any, **fields: Any) -> BuildRequest:
    """A request to build a stored theme (refused when there is no such theme)."""
    from environments.models import Theme

    try:
        theme_id = int(theme)
    except (TypeError, ValueError) as exc:
        raise BuildRequestError(f"theme {theme!r} is not a theme id") from exc
    row = Theme.objects.filter(pk=theme_id).first()
    if row is None:
        raise BuildRequestError(f"no theme with id {theme_id}")
    if row.source_kind == Theme.SourceKind.DIAGNOSIS:
        raise BuildRequestError(f"theme {theme_id} is an arena diagnosis, not a buildable theme")
    return BuildRequest.for_theme(row.pk, row.name, **fields)


def mcp_request(server: str, **fields: Any) -> BuildRequest:
    """A request to import a live MCP server (stdio command or http(s) URL), then build it."""
    return BuildRequest.for_mcp(server, **fields)


def agent_world_request(release: str, env_id: str, **fields: Any) -> BuildRequest:
    """A request to import one environment of an Agent-World release (a checkout or its
    environment_mix/ folder), refused when the release or the environment is not there."""
    return BuildRequest.for_agent_world(release, env_id, **fields)


def check_may_start_commands(user: Any, command: str | list[str] | None) -> None:
    """Starting an MCP server by command line runs that command on a worker host: admins only.
    Reviewers import or build from an MCP server's http(s) URL instead."""
    from django.core.exceptions import PermissionDenied

    from aw_site.roles import ADMIN, has_role

    is_url = isinstance(command, str) and command.strip().startswith(("http://", "https://"))
    if command and not is_url and user is not None and not has_role(user, ADMIN):
        raise PermissionDenied(
            "starting an MCP server by command runs it on the worker host: only admins may; "
            "give the server's http(s) URL instead"
        )


def queue_build(request: BuildRequest, user: Any = None) -> Job:
    """The `environments.build` job for a validated request (dispatched on commit)."""
    if request.mcp:
        check_may_start_commands(user, request.mcp)
    try:
        with transaction.atomic():
            return enqueue(BUILD_JOB, request.as_dict(), user=user, target=request.target)
    except BaseException:
        remove_upload(request.upload_dir)
        raise


def queue_catalogue(sources: list[str], workers: int = 2, user: Any = None) -> Job:
    """The `environments.build_catalogue` job: one build per named built-in source (all when
    none is named), fanned out over the workers."""
    with transaction.atomic():
        return enqueue(
            CATALOGUE_JOB, {"sources": sources, "workers": workers}, user=user, target="catalogue"
        )
