"""An Agent-World release as a catalogue run: one ledger item per released environment.

The item's key is `agent_world/<env_id>` and its sha256 the hash of everything the build reads
for it (the checkpoint, the collection folder's files, the questions file), so a later run of
the same release builds nothing again, and an environment whose files changed is built anew.
Each item is built by the one build job's pipeline (`run_build`, origin agent_world); its
outcome (published, or rejected with the stage's words) lands on the item, and the run's
summary counts them by reason like any catalogue run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django.db import transaction

from aw_site.jobs import JobContext, enqueue
from environments.agent_world.release import (
    CHECKPOINT_SUFFIX,
    QUESTIONS_FOLDER,
    ReleaseError,
    check_env_id,
    environment_ids,
    mix_directory,
)
from environments.builder.request import BuildRequest, BuildRequestError
from environments.directory import ledger
from environments.directory.listing import DirectoryDocument
from environments.models import CatalogueItem, CatalogueRun, Environment

KEY_PREFIX = "agent_world/"
RUN_JOB = "environments.build_directory"  # the catalogue's fan-out job (directory/launch.py)
Item = CatalogueItem.State


def is_release_run(run: CatalogueRun) -> bool:
    return bool((run.selection or {}).get("agent_world"))


def environment_sha256(mix: Path, env_id: str) -> str:
    """The hash of what the build of `env_id` reads: its checkpoint, its folder's files by name,
    its questions. A missing piece hashes as absent (its build refuses it in words)."""
    digest = hashlib.sha256(env_id.encode())
    folder = mix / env_id
    pieces = [mix / f"{env_id}{CHECKPOINT_SUFFIX}", mix / QUESTIONS_FOLDER / f"{env_id}.json"]
    if folder.is_dir() and not folder.is_symlink():
        pieces += sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    for path in pieces:
        digest.update(b"\0" + str(path.relative_to(mix)).encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            with open(path, "rb") as handle:
                while block := handle.read(1024 * 1024):
                    digest.update(block)
        else:
            digest.update(b"<absent>")
    return digest.hexdigest()


def release_documents(mix: Path, env_ids: list[str] | None = None) -> list[DirectoryDocument]:
    """The release's environments as ledger documents (every one, or those named)."""
    ids = env_ids or environment_ids(mix)
    return [
        DirectoryDocument(f"{KEY_PREFIX}{env_id}", mix / env_id, environment_sha256(mix, env_id))
        for env_id in ids
    ]


def start_release_run(
    release: str | Path, env_ids: list[str] | None = None, user: Any = None, tasks: int = 0
) -> CatalogueRun:
    """Record a catalogue run over the release (a checkout or its environment_mix/) and queue
    its fan-out job. Refuses, before anything is queued, a folder that is not a release, an id
    that is not a plain folder name or that the release does not hold, and an empty release.
    `tasks`: goal tasks synthesized per published environment besides its released questions."""
    mix = mix_directory(release)
    for env_id in env_ids or []:
        check_env_id(env_id)
        if not (mix / f"{env_id}{CHECKPOINT_SUFFIX}").is_file() and not (mix / env_id).is_dir():
            raise ReleaseError(f"the release at {mix} has no environment {env_id!r}")
    if not (env_ids or environment_ids(mix)):
        raise ReleaseError(f"{mix}: the release holds no environment")
    if not 0 <= tasks <= 200:
        raise ReleaseError("tasks per environment must be between 0 and 200")
    with transaction.atomic():
        run = CatalogueRun.objects.create(
            source=str(mix.resolve()),
            selection={"agent_world": True, "env_ids": list(env_ids or [])},
            tasks_per_environment=tasks,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        run.job = enqueue(RUN_JOB, {"run": run.pk}, user=user, target=f"catalogue-run:{run.pk}")
        run.save(update_fields=["job"])
    return run


def run_release_documents(run: CatalogueRun) -> list[DirectoryDocument]:
    return release_documents(Path(run.source), (run.selection or {}).get("env_ids") or None)


def build_released(ctx: JobContext, item: CatalogueItem) -> dict[str, Any]:
    """Build one released environment of the run and record the outcome on its item."""
    from environments.jobs import UNFINISHED, announce_published, built_or_rejected

    env_id = item.key.removeprefix(KEY_PREFIX)
    mix = Path(item.run.source)
    try:
        if environment_sha256(mix, env_id) != item.sha256:
            raise ReleaseError(f"environment {env_id}: its files changed since the run listed it")
        request = BuildRequest.for_agent_world(
            str(mix), env_id, options={"tasks": item.run.tasks_per_environment}
        )
    except (ReleaseError, BuildRequestError) as exc:
        return _finish(item, None, f"ingest stage failed: {exc}")
    # a killed attempt that published before the ledger heard: its environment is the outcome
    earlier = (
        Environment.objects.filter(
            name=request.name, origin="agent_world", created_at__gte=ctx.job.created_at
        )
        .exclude(status__in=UNFINISHED)
        .order_by("pk")
        .first()
    )
    if earlier is not None:
        if earlier.status == Environment.Status.VERIFIED:
            announce_published(ctx, earlier, request)
        return _finish(item, earlier)
    return _finish(item, built_or_rejected(ctx, request))


def _finish(item: CatalogueItem, environment: Environment | None, reason: str = "") -> dict:
    published = environment is not None and environment.status in (
        Environment.Status.VERIFIED,
        Environment.Status.RETIRED,
    )
    if environment is not None:
        ledger.record_part(item.pk, "environments", 0, environment.pk)
        if not published:
            reason = environment.failure_reason or f"{environment.label} rejected"
    state = Item.PUBLISHED if published else Item.REJECTED
    category = environment.category.path if environment and environment.category_id else ""
    category = category.replace(" > ", "/")
    ledger.finish(
        item.pk,
        state,
        "" if published else reason,
        verified_tools=environment.tool_count if published else 0,
        category=category[:300],
    )
    return {
        "item": item.pk,
        "state": state,
        "environments": [environment.pk] if environment else [],
        "reason": "" if published else reason,
    }
