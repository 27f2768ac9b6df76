"""Build one directory document: its theme part(s) stored and each built through the one
build job's pipeline (`run_build`, origin theme), the outcome recorded on its ledger item.

Idempotent when a killed worker's job runs again: a part's Theme row is recorded on the item
as soon as it is stored and reused afterwards; an environment already published or rejected
for that theme is its outcome (the theme row is the item's own), and an unfinished draft left
by the dead attempt is discarded before the part is built again. So no document ever gets a
second Theme or Environment.
"""

from __future__ import annotations

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
        result = build_claimed(ctx, item)
    except Exception as exc:
        if interrupted(exc):
            raise  # the retry builds it and tops the window up then
        # an error no stage put into words: the item says so, and the next one goes on
        ledger.finish(item.pk, Item.FAILED, f"unexpected {type(exc).__name__}: {exc}")
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
    ctx.progress(0.02, f"{item.key}: {len(themes)} part(s)")
    outcomes = []
    category = None
    for index, theme in enumerate(themes):
        category = directory_category(document, theme)
        row = part_theme(ctx, item, index, theme, category)
        outcome = build_part(ctx, item, row, category)
        ledger.record_part(item.pk, "environments", index, outcome.environment)
        outcomes.append(outcome)
    published = [o for o in outcomes if o.published]
    reasons = [o.reason for o in outcomes if not o.published]
    ledger.finish(
        item.pk,
        Item.PUBLISHED if published else Item.REJECTED,
        "" if published else reasons[0],
        verified_tools=sum(o.tools for o in published),
        category=category.as_path() if category else "",
    )
    return {
        "item": item.pk,
        "state": Item.PUBLISHED if published else Item.REJECTED,
        "environments": [o.environment for o in outcomes],
        "published": len(published),
    }


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
    ctx: JobContext, item: CatalogueItem, index: int, theme: dict, category: DirectoryCategory
) -> Theme:
    """The part's Theme row: the one recorded on the item, else stored now and recorded."""
    from environments.themes_import import store_theme

    item.refresh_from_db(fields=["themes"])
    if len(item.themes) > index:
        row = Theme.objects.filter(pk=item.themes[index]).first()
        if row is not None:
            return row
    theme = {**theme, "provenance": {**theme.get("provenance", {}), "directory_key": item.key,
                                     "directory_sha256": item.sha256}}  # fmt: skip
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
    from environments.jobs import UNFINISHED, announce_published, run_build

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
    try:
        result = run_build(ctx, request)
    except Exception as exc:
        if interrupted(exc):
            raise
        draft = ctx.saved.get("draft_environment")
        rejected = (
            final_environment(theme)
            or Environment.objects.filter(pk=draft, status=Environment.Status.REJECTED).first()
        )
        if rejected is not None:
            return outcome_of(rejected)
        raise
    return outcome_of(Environment.objects.get(pk=result["environment"]))


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
