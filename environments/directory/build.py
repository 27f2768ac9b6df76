"""Build one directory document: its theme stored and built through the one build job's
pipeline (`run_build`, origin theme), the outcome recorded on its ledger item. A document that
splits into parts hands each part to a ledger item and a job of its own (`split_into_parts`):
Microsoft Graph's 831 parts are built over the workers and resume part by part.

Idempotent when a killed worker's job runs again: a part's Theme row is recorded on the item
as soon as it is stored and reused afterwards; an environment already published or rejected
for that theme is its outcome (the theme row is the item's own), and an unfinished draft left
by the dead attempt is discarded before the part is built again. So no document ever gets a
second Theme or Environment.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aw_site.jobs import JobContext, interrupted
from environments.builder.request import BuildRequest
from environments.directory import ledger
from environments.directory.categories import DirectoryCategory, directory_category
from environments.directory.documents import document_themes, read_document
from environments.directory.launch import top_up_run
from environments.directory.listing import file_sha256
from environments.directory.mcp_packages import (
    KEY_PREFIX,
    PackageError,
    package_theme,
    packages_root,
)
from environments.directory.releases import KEY_PREFIX as RELEASE_KEY_PREFIX
from environments.directory.releases import build_released
from environments.discovery.themes import ThemeError
from environments.models import CatalogueItem, Environment, Theme

Item = CatalogueItem.State


@dataclass(frozen=True)
class PartOutcome:
    environment: int
    published: bool
    tools: int
    reason: str


def build_document(ctx: JobContext, item_id: int) -> dict[str, Any]:
    """The job's work for one ledger item; its result says what the item became."""
    item = ledger.claim(item_id, ctx.job)
    if item is None:
        current = CatalogueItem.objects.filter(pk=item_id).first()
        if current is not None and current.is_final:  # a stale duplicate: keep the window full
            top_up_run(current.run_id)
        return {"item": item_id, "state": current.state if current else "gone", "skipped": True}
    try:
        result = build_claimed_part(ctx, item) if item.part else build_claimed(ctx, item)
    except Exception as exc:
        if interrupted(exc):
            raise  # the retry builds it and tops the window up then
        # an error no stage put into words: the item says so, and the next one goes on
        ledger.finish(item.pk, Item.FAILED, f"unexpected {type(exc).__name__}: {exc}")
        if item.document_id is not None:  # its siblings go on; the document ends with them
            ledger.settle_document(item.document_id)
        top_up_run(item.run_id)
        raise
    top_up_run(item.run_id)
    return result


def build_claimed(ctx: JobContext, item: CatalogueItem) -> dict[str, Any]:
    if item.key.startswith(RELEASE_KEY_PREFIX):
        return build_released(ctx, item)
    try:
        document, themes = item_themes(ctx, item)
    except (ThemeError, RecursionError, PackageError) as exc:
        stage = "ingest" if isinstance(exc, PackageError) else "parse"
        reason = f"{stage} stage failed: {str(exc).removeprefix(f'{item.key}: ')}"
        ledger.finish(item.pk, Item.REJECTED, reason)
        return {"item": item.pk, "state": Item.REJECTED, "reason": reason}
    if len(themes) > 1:
        return split_into_parts(ctx, item, document, themes)
    [theme] = themes
    category = directory_category(document, theme)
    row = part_theme(ctx, item, 0, theme, category)
    outcome = build_part(ctx, item, row, category)
    ledger.record_part(item.pk, "environments", 0, outcome.environment)
    state = Item.PUBLISHED if outcome.published else Item.REJECTED
    ledger.finish(
        item.pk, state, outcome.reason, verified_tools=outcome.tools, category=category.as_path()
    )
    return {"item": item.pk, "state": state, "environments": [outcome.environment]}


def split_into_parts(
    ctx: JobContext, item: CatalogueItem, document: dict[str, Any], themes: list[dict]
) -> dict[str, Any]:
    """A document past AW_THEME_MAX_TOOLS: each part becomes a ledger item of its own (the
    document's key and the part's label, the sha256 of the part's theme) with its Theme row
    stored, then waits for a build job in the run's window. A part already published or
    rejected (by any run) is not taken again, unless the run retries rejections and it was
    rejected (ledger.take_part); the document ends when its parts have."""
    ctx.progress(0.02, f"{item.key}: {len(themes)} parts, each built by its own job")
    taken = 0
    category = None
    for number, theme in enumerate(themes, start=1):
        category = directory_category(document, theme)
        family = (theme.get("provenance") or {}).get("family") or {}
        label = str(family.get("label") or theme.get("name") or f"part {number}")
        part = ledger.take_part(item, label, theme_sha256(theme))
        if part is not None:
            part_theme(ctx, part, 0, theme, category, document=item)
            ledger.queue_part(part.pk, category.as_path())
            taken += 1
        if number % 50 == 0:
            ctx.progress(0.02 + 0.9 * number / len(themes), f"{number} of {len(themes)} parts")
    ledger.split_document(item.pk, len(themes), category.as_path() if category else "")
    state = ledger.settle_document(item.pk) or Item.BUILDING
    return {"item": item.pk, "state": state, "parts": len(themes), "parts_queued": taken}


def theme_sha256(theme: dict[str, Any]) -> str:
    """A part's identity in the ledger: the same part of the same document hashes the same."""
    text = json.dumps(theme, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def build_claimed_part(ctx: JobContext, item: CatalogueItem) -> dict[str, Any]:
    """One part of a split document, from the Theme row its document's job stored; then the
    document settles if this was its last part."""
    row = Theme.objects.filter(pk__in=item.themes[:1]).first()
    if row is None:
        raise ThemeError(f"{item.key}: the part's theme was not stored; a later run stores it")
    category = DirectoryCategory.from_path(item.category)
    ctx.progress(0.02, f"{item.key}: {len(row.raw_spec.get('tools') or [])} tools")
    outcome = build_part(ctx, item, row, category)
    ledger.record_part(item.pk, "environments", 0, outcome.environment)
    state = Item.PUBLISHED if outcome.published else Item.REJECTED
    ledger.finish(item.pk, state, outcome.reason, verified_tools=outcome.tools)
    document = ledger.settle_document(item.document_id) if item.document_id else None
    return {"item": item.pk, "state": state, "environments": [outcome.environment],
            "document": item.document_id, "document_state": document}  # fmt: skip


def item_themes(ctx: JobContext, item: CatalogueItem) -> tuple[dict[str, Any], list[dict]]:
    """The item's document (the directory's JSON; {} for a package) and its theme parts."""
    from environments.directory.launch import run_packages

    if item.key.startswith(KEY_PREFIX):
        package = next((p for p in run_packages(item.run) if p.key == item.key), None)
        if package is None:
            raise PackageError(f"{item.key}: the run no longer lists this package")
        ctx.progress(0.01, f"installing and listing {package.package}")
        return {}, [package_theme(package, packages_root())]
    path = Path(item.run.source) / item.key
    document = read_document(path, item.key)
    if file_sha256(path) != item.sha256:
        raise ThemeError(f"{item.key}: the file changed since the run listed it")
    return document, document_themes(document, item.key)


def part_theme(
    ctx: JobContext,
    item: CatalogueItem,
    index: int,
    theme: dict,
    category: DirectoryCategory,
    document: CatalogueItem | None = None,
) -> Theme:
    """The part's Theme row: the one recorded on the item, else stored now and recorded (its
    provenance names the directory document, `document` for a part's own item)."""
    from environments.themes_import import store_theme

    item.refresh_from_db(fields=["themes"])
    if len(item.themes) > index:
        row = Theme.objects.filter(pk=item.themes[index]).first()
        if row is not None:
            return row
    source = document or item
    theme = {**theme, "provenance": {**theme.get("provenance", {}), "directory_key": source.key,
                                     "directory_sha256": source.sha256}}  # fmt: skip
    row = store_theme(
        theme,
        created_by=ctx.job.created_by,
        category_path=(category.primary, category.secondary, category.tertiary),
    )
    ledger.record_part(item.pk, "themes", index, row.pk)
    item.refresh_from_db(fields=["themes"])
    if item.themes[index] != row.pk:  # another attempt recorded its own first: keep that one
        row.delete()
        row = Theme.objects.get(pk=item.themes[index])
    return row


def build_part(
    ctx: JobContext, item: CatalogueItem, theme: Theme, category: DirectoryCategory
) -> PartOutcome:
    """Build one theme part, unless an earlier attempt already finished it."""
    from environments.jobs import UNFINISHED, announce_published, built_or_rejected

    request = BuildRequest.for_theme(
        theme.pk,
        theme.name,
        category=category.as_dict(),
        options={"tasks": item.run.tasks_per_environment},
    )
    done = final_environment(theme)
    if done is not None:
        if done.status == Environment.Status.VERIFIED:
            announce_published(ctx, done, request)  # the dead attempt may not have: once only
        return outcome_of(done)
    for draft in Environment.objects.filter(theme=theme, status__in=UNFINISHED):
        discard_draft(ctx, draft)
    return outcome_of(built_or_rejected(ctx, request, lambda: final_environment(theme)))


def final_environment(theme: Theme) -> Environment | None:
    from environments.jobs import UNFINISHED

    finished = Environment.objects.filter(theme=theme).exclude(status__in=UNFINISHED)
    return finished.order_by("pk").first()


def outcome_of(environment: Environment) -> PartOutcome:
    published = environment.status in (Environment.Status.VERIFIED, Environment.Status.RETIRED)
    return PartOutcome(
        environment=environment.pk,
        published=published,
        tools=environment.tool_count if published else 0,
        reason="" if published else environment.failure_reason or f"{environment.label} rejected",
    )


def discard_draft(ctx: JobContext, draft: Environment) -> None:
    """A draft a dead attempt left: its row and any package it wrote but never recorded go."""
    from environments.jobs import packages_root, remove_unrecorded_package

    remove_unrecorded_package(packages_root() / draft.name / f"v{draft.version}")
    ctx.log(f"discarded {draft.label} ({draft.status}) left unfinished by an earlier attempt")
    draft.delete()
