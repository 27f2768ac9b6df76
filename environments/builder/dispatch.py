"""One reading of a build submission, for the REST API and the console's New environment form.

`request_from_submission(data, files, user)` turns what a person sent (JSON or a form, with or
without an uploaded file) into a validated `BuildRequest`, a `CatalogueRequest` for the API's
bulk form {"sources": [...]}, or a `ReleaseUpload` for an Agent-World release archive (the
field `release`: unpacked safely and read, then one catalogue run). Everything it refuses raises `BuildRequestError` with one message
set, so the API (400 JSON) and the console (the form's error) say the same thing; starting an
MCP server by command as a non-admin raises PermissionDenied (403). A refused submission leaves
no stored upload behind. `queue_submission` queues the job either way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aw_site.models import Job

from . import submit
from .request import BuildRequest, BuildRequestError
from .uploads import check_name_and_size, remove_upload, store_upload

ORIGIN_FIELDS = ("source", "theme", "mcp")
# The words of a build and the most characters each may have.
TEXT_FIELDS = {"name": 60, "title": 200, "description": 2000, "category": 400}
ORIGIN_LIMITS = {"source": 120, "mcp": 1000}
MAX_BULK_SOURCES = 200

TWO_ORIGINS = "give a built-in source, a theme or an MCP server, not two"
SOURCE_AND_FILE = "give a built-in source or a file, not both"
RELEASE_AND_OTHER = (
    "an Agent-World release (the field 'release') is its own origin: send it without a file, "
    "source, theme or MCP server"
)
RELEASE_NAMES_ITSELF = (
    "a release's environments keep their own names, words and categories (aw_<env_id>, the "
    "release's taxonomy): send the release without name, title, description, category or options"
)
NOT_AN_OBJECT = 'give the build as a JSON object (or a form), e.g. {"source": "airports"}'
NO_ORIGIN = (
    "no file: send the file in the field 'file', or name a built-in source, a theme or an MCP "
    "server"
)


@dataclass(frozen=True)
class ReleaseUpload:
    """An uploaded Agent-World release, unpacked and read (agent_world/upload.py): built as one
    catalogue run, one build per environment (every one, or those named)."""

    mix: str  # its environment_mix/ folder under the upload's directory
    env_ids: tuple[str, ...]  # named by the submission; () = every environment
    environments: int  # environments the release names
    problems: tuple[str, ...]  # the reader's words for those that will be rejected


@dataclass(frozen=True)
class CatalogueRequest:
    """The API's bulk form: many built-in sources, one build job each (validated names)."""

    sources: tuple[str, ...]
    workers: int = 2


def request_from_submission(
    data: Mapping[str, Any], files: Mapping[str, Any] | None, user: Any = None
) -> BuildRequest | CatalogueRequest | ReleaseUpload:
    """The validated request a submission asks for; BuildRequestError says what is wrong."""
    if not isinstance(data, Mapping):
        raise BuildRequestError(NOT_AN_OBJECT)
    upload = (files or {}).get("file")
    release = (files or {}).get("release")
    if release is not None:
        if upload is not None or any(data.get(k) for k in ORIGIN_FIELDS):
            raise BuildRequestError(RELEASE_AND_OTHER)
        if any(data.get(k) for k in (*TEXT_FIELDS, "options")):
            raise BuildRequestError(RELEASE_NAMES_ITSELF)
        return release_from_submission(release, data)
    if upload is None and "sources" in data and not data.get("source"):
        return catalogue_from_submission(data)
    fields = build_fields(data)
    origins = {k: fields.pop(k) for k in ORIGIN_FIELDS if k in fields}
    if len(origins) > 1:
        raise BuildRequestError(TWO_ORIGINS)
    if "source" in origins:
        if upload is not None:
            raise BuildRequestError(SOURCE_AND_FILE)
        return submit.source_request(origins["source"], **fields)
    stored = None
    if upload is not None:
        check_name_and_size(upload.name or "", upload.size)
        stored = store_upload(upload.chunks(), upload.name or "")
    if not origins:
        if stored is None:
            raise BuildRequestError(NO_ORIGIN)
        return submit.upload_request(stored, **fields)
    if stored is not None:  # a theme's or server's tables take their rows from the file
        fields.update(
            files=[str(stored.path)], filename=stored.filename, upload_dir=str(stored.directory)
        )
    try:
        if "theme" in origins:
            return submit.theme_request(origins["theme"], **fields)
        request = submit.mcp_request(origins["mcp"], **fields)
        submit.check_may_start_commands(user, request.mcp)
        return request
    except BaseException:
        if stored is not None:
            remove_upload(stored.directory)
        raise


def release_from_submission(release: Any, data: Mapping[str, Any]) -> ReleaseUpload:
    """An uploaded release archive, stored and unpacked under the upload's own directory and
    read by the release reader; refused in the reader's words (the upload removed then)."""
    from environments.agent_world.release import ReleaseError
    from environments.agent_world.upload import (
        check_env_ids,
        is_release_archive_name,
        unpack_release,
    )

    name = release.name or ""
    if not is_release_archive_name(name):
        raise BuildRequestError(
            f"{name or 'the release'}: an Agent-World release is sent as a zip or tar archive "
            "(.zip, .tar, .tar.gz, .tgz, .tar.bz2, .tar.xz)"
        )
    check_name_and_size(name, release.size)
    env_ids = release_env_ids(data)
    stored = store_upload(release.chunks(), name)
    try:
        unpacked = unpack_release(stored.path, stored.filename, stored.directory)
        named = check_env_ids(unpacked, env_ids)
    except ReleaseError as exc:
        remove_upload(stored.directory)
        raise BuildRequestError(str(exc)) from None
    except BaseException:
        remove_upload(stored.directory)
        raise
    stored.path.unlink(missing_ok=True)  # the unpacked release is what the builds read
    return ReleaseUpload(str(unpacked.mix), named, len(unpacked.env_ids), unpacked.problems)


def release_env_ids(data: Mapping[str, Any]) -> list[str]:
    """The environment ids a release submission names ('env', repeated or comma-separated)."""
    raw = data.getlist("env") if hasattr(data, "getlist") else data.get("env")
    if raw in (None, ""):
        return []
    values = [raw] if isinstance(raw, str) else raw
    if not isinstance(values, list | tuple) or not all(isinstance(v, str) for v in values):
        raise BuildRequestError("env: give environment ids of the release")
    ids = [part.strip() for value in values for part in value.replace(",", " ").split()]
    if len(ids) > 5000:
        raise BuildRequestError("env: at most 5000 environment ids")
    return ids


def theme_request_from_submission(
    theme: int, data: Mapping[str, Any], user: Any = None
) -> BuildRequest:
    """A theme's Build action (API and console): the theme comes from the URL; the submission
    may only name the environment (name, title, description, category) and give options."""
    fields = {key: data[key] for key in (*TEXT_FIELDS, "options") if key in data}
    fields = build_fields({**fields, "theme": str(theme)})
    return submit.theme_request(fields.pop("theme"), **fields)


def build_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """The submission's fields, checked for size and shape; empty ones left out."""
    fields: dict[str, Any] = {}
    for key, limit in {**ORIGIN_LIMITS, **TEXT_FIELDS}.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise BuildRequestError(f"{key}: give text")
        value = value.strip()
        if len(value) > limit:
            raise BuildRequestError(f"{key}: at most {limit} characters")
        if value:
            fields[key] = value
    theme = data.get("theme")
    if theme not in (None, ""):
        try:
            fields["theme"] = int(theme)
        except (TypeError, ValueError) as exc:
            raise BuildRequestError(f"theme {theme!r} is not a theme id") from exc
        if fields["theme"] < 1:
            raise BuildRequestError(f"theme {theme!r} is not a theme id")
    options = data.get("options")
    if options not in (None, ""):
        if isinstance(options, str):
            try:
                options = json.loads(options)
            except ValueError as exc:
                raise BuildRequestError("options: give a JSON object") from exc
        if not isinstance(options, dict):
            raise BuildRequestError("options: give a JSON object")
        fields["options"] = options
    return fields


def catalogue_from_submission(data: Mapping[str, Any]) -> CatalogueRequest:
    """The bulk form {"sources": [NAME, ...], "workers": N}: every name must be known."""
    sources = data.get("sources")
    if hasattr(data, "getlist"):  # a form repeats the field
        sources = data.getlist("sources")
    if sources is None:
        sources = []
    if not isinstance(sources, list | tuple) or not all(isinstance(s, str) for s in sources):
        raise BuildRequestError("sources: give a list of built-in source names")
    if len(sources) > MAX_BULK_SOURCES:
        raise BuildRequestError(f"sources: at most {MAX_BULK_SOURCES} at once")
    for name in sources:
        BuildRequest.for_source(name)  # refuses an unknown name, naming it
    try:
        workers = int(data.get("workers", 2))
    except (TypeError, ValueError) as exc:
        raise BuildRequestError("workers: give a number from 1 to 64") from exc
    if not 1 <= workers <= 64:
        raise BuildRequestError("workers: give a number from 1 to 64")
    return CatalogueRequest(tuple(sources), workers)


def queue_release(upload: ReleaseUpload, user: Any = None) -> Any:
    """The catalogue run of an uploaded release (its fan-out job queued): a CatalogueRun."""
    from environments.agent_world.release import ReleaseError
    from environments.directory.releases import start_release_run

    try:
        return start_release_run(upload.mix, list(upload.env_ids), user=user)
    except ReleaseError as exc:
        raise BuildRequestError(str(exc)) from None


def queue_submission(
    request: BuildRequest | CatalogueRequest | ReleaseUpload, user: Any = None
) -> Job:
    """The `environments.build` job for one request, `environments.build_catalogue` for the
    bulk form (which fans out one build per source), or a release's catalogue-run fan-out."""
    if isinstance(request, ReleaseUpload):
        return queue_release(request, user).job
    if isinstance(request, CatalogueRequest):
        return submit.queue_catalogue(list(request.sources), request.workers, user)
    return submit.queue_build(request, user)
