"""The catalogue ledger: one row per document (key + sha256), so a run is resumable and never
builds a document twice.

A run lists its documents and `queue_pending` takes every one that is not final: a document
published or rejected by any run is skipped; one whose job is still alive is left to it; one that
failed (its job gave up) or lost its job is taken again. Only a window of them get a build job
at once (`window()`, AW_CATALOGUE_WINDOW); the rest wait queued without a job, and each build
that ends `top_up`s the window, so jobs queued meanwhile (the goal-task synthesis of what was
just published) run between builds instead of after thousands of them. A build job `claim`s
its item and `finish`es it in one write.

A document that splits into parts gets an item per part (`take_part`: the document's key and
the part's label, the sha256 of the part's theme), queued in the same window; the document's
item holds no job meanwhile and `settle_document` gives it its outcome once every part has one.
A rerun takes only the parts without an outcome; a part that fails leaves its siblings be.

A run that retries rejections (`CatalogueRun.retry_rejected`, `--retry-rejected`) also takes
what an earlier run rejected: documents, and the rejected parts of split ones (a published split
document is taken again for those parts only; its published parts are never built twice). The
rejected row stays as history, marked `superseded`, and the retry gets a row of its own (its
`retries` says what it retries), so each document has one current row and the summaries count
it once, by its newest outcome. The new row stores the document's theme afresh (the parse may
have improved too): the rejected draft environment of the old theme is not its outcome.
"""

from __future__ import annotations

import os
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from aw_site.jobs import lost_with_its_process
from aw_site.models import Job
from environments.directory.listing import DirectoryDocument
from environments.models import CatalogueItem, CatalogueRun, Environment

LIVE_JOB_STATES = (Job.State.QUEUED, Job.State.RUNNING, Job.State.RETRYING)
Item = CatalogueItem.State


_NAMED_BUILD = re.compile(r"^(\w+ stage failed: )[a-z][a-z0-9_]*: ")  # "...: <environment>: "


def reason_kind(reason: str) -> str:
    """A short label that groups rejections: the first line without the environment's name,
    quoted names and numbers elided ("verify stage failed: N of N tools verified ...")."""
    first = (reason or "").strip().splitlines()[0] if (reason or "").strip() else ""
    first = _NAMED_BUILD.sub(r"\1", first)
    first = re.sub(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])|\"[^\"]*\"|`[^`]*`", "…", first)
    first = re.sub(r"\d+(\.\d+)?", "N", first)
    return first[:160]


def has_live_job(item: CatalogueItem) -> bool:
    """Its build job is queued or running somewhere that still exists: not in the threads of
    an embedded process that has exited (a killed `build_catalogue` without a broker)."""
    if item.job_id is None:
        return False
    job = Job.objects.filter(pk=item.job_id, state__in=LIVE_JOB_STATES).first()
    return job is not None and not lost_with_its_process(job)


def release_lost_job(item: CatalogueItem) -> None:
    """The item's job died with its process: fail it in words so nothing takes it later."""
    if item.job_id is None:
        return
    Job.objects.filter(pk=item.job_id, state__in=LIVE_JOB_STATES).update(
        state=Job.State.FAILED,
        error="lost: the embedded process that was to run it exited; a later run took the "
        "document over",
        finished_at=timezone.now(),
    )


DEFAULT_WINDOW = 8


def window() -> int:
    """Build jobs of one run queued at once (AW_CATALOGUE_WINDOW, default 8): at least the
    workers' concurrency, so none idles, and small enough that other jobs are not starved."""
    try:
        return max(1, int(os.environ.get("AW_CATALOGUE_WINDOW", DEFAULT_WINDOW)))
    except ValueError:
        return DEFAULT_WINDOW


@dataclass
class FanOut:
    queued: list[int] = field(default_factory=list)  # item ids handed to a new build job
    waiting: int = 0  # taken by this run, waiting for a place in the window
    done_before: int = 0  # published or rejected by an earlier run
    in_progress: int = 0  # a live job of an earlier run still builds it
    retried: int = 0  # rejected (retry_rejected) or failed by an earlier run: built again


def current_item(key: str, sha256: str, defaults: dict[str, Any]) -> CatalogueItem:
    """The document's current row (made once; a superseded one is history), locked until the
    caller's transaction ends."""
    while True:
        item, _ = CatalogueItem.objects.get_or_create(
            key=key, sha256=sha256, superseded=False, defaults=defaults
        )
        item = CatalogueItem.objects.select_for_update().get(pk=item.pk)
        if not item.superseded:  # else another run's retry superseded it meanwhile
            return item


def retries(item: CatalogueItem, run: CatalogueRun) -> bool:
    """`run` builds the item again although an earlier run settled it: the run retries
    rejections and the item was rejected, or is a split document published with rejected
    parts (its job takes only those again)."""
    if not run.retry_rejected or item.run_id == run.pk:
        return False
    if item.state == Item.REJECTED:
        return True
    return (
        item.state == Item.PUBLISHED
        and item.parts > 0
        and item.part_items.filter(superseded=False, state=Item.REJECTED).exists()
    )


def supersede(item: CatalogueItem, run: CatalogueRun, **fields: Any) -> CatalogueItem:
    """Keep the (locked) `item` as history and give its document a new row in `run`."""
    CatalogueItem.objects.filter(pk=item.pk).update(superseded=True)
    return CatalogueItem.objects.create(
        run=run, key=item.key, sha256=item.sha256, part=item.part, retries=item.state, **fields
    )


def queue_pending(
    run: CatalogueRun,
    documents: Iterable[DirectoryDocument],
    queue_item: Callable[[CatalogueItem], Job],
    limit: int | None = None,
) -> FanOut:
    """Take every document of the run that is not final (and, when the run retries
    rejections, every rejected one); give the first ones a build job (`queue_item`) up to
    `limit` live jobs of the run (default `window()`), the rest wait. Each item is written in
    its own transaction with the item locked, so a re-run of the fan-out (its worker was lost)
    queues nothing twice."""
    fan_out = FanOut()
    limit = window() if limit is None else limit
    live = live_jobs(run)
    for document in documents:
        with transaction.atomic():
            item = current_item(document.key, document.sha256, {"run": run})
            if retries(item, run):
                item = supersede(item, run)
                fan_out.retried += 1
            elif item.is_final:
                if item.run_id != run.pk:
                    fan_out.done_before += 1
                continue
            elif has_live_job(item):
                if item.run_id != run.pk:
                    fan_out.in_progress += 1
                continue
            elif item.state == Item.FAILED and item.run_id != run.pk:
                item.retries = Item.FAILED
                fan_out.retried += 1
            release_lost_job(item)
            item.run = run
            item.state = Item.QUEUED
            item.reason = item.reason_kind = ""
            item.job = None
            if live < limit:
                item.job = queue_item(item)
                live += 1
                fan_out.queued.append(item.pk)
            else:
                fan_out.waiting += 1
            item.save(update_fields=["run", "state", "reason", "reason_kind", "job", "retries"])
    return fan_out


def live_jobs(run: CatalogueRun) -> int:
    """Items of the run, not final, whose build job is queued or running (and not lost)."""
    jobs = Job.objects.filter(
        pk__in=run.items.exclude(state__in=CatalogueItem.FINAL_STATES).values("job"),
        state__in=LIVE_JOB_STATES,
    )
    return sum(not lost_with_its_process(job) for job in jobs)


def top_up(
    run_id: int, queue_item: Callable[[CatalogueItem], Job], limit: int | None = None
) -> list[int]:
    """Give waiting items of the run build jobs until `limit` are live again (called as each
    build ends, and when one gives up), by `turns`; the run row is locked so two endings queue
    no more than the window between them. Returns the items given a job."""
    limit = window() if limit is None else limit
    given: list[int] = []
    with transaction.atomic():
        run = CatalogueRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return given
        free = limit - live_jobs(run)
        if free <= 0:
            return given
        waiting = list(
            run.items.filter(state=Item.QUEUED)
            .exclude(job__state__in=LIVE_JOB_STATES)
            .values_list("pk", "key", "document_id")
        )
        chosen = turns(waiting, part_counts(run))[:free]
        for item in CatalogueItem.objects.filter(pk__in=chosen).order_by("key"):
            item.job = queue_item(item)
            item.save(update_fields=["job"])
            given.append(item.pk)
    return given


def part_counts(run: CatalogueRun) -> dict[int, int]:
    """Each split document's parts in the run (current rows), by the document's item."""
    rows = (
        run.items.filter(superseded=False, document__isnull=False)
        .values("document")
        .annotate(n=Count("pk"))
    )
    return {row["document"]: row["n"] for row in rows}


def turns(waiting: list[tuple[int, str, int | None]], parts: dict[int, int]) -> list[int]:
    """The waiting items (pk, key, document) in the order they get places: a document takes
    turn 1; a part of a split document the turn after its siblings already given a place, so
    a document of 1,265 parts takes one place at a time among the documents listed after it,
    never all of them in a row."""
    left = Counter(document for _, _, document in waiting if document is not None)
    seen: Counter = Counter()
    ordered = []
    for pk, key, document in sorted(waiting, key=lambda row: row[1]):
        turn = 1
        if document is not None:
            seen[document] += 1
            turn = parts.get(document, left[document]) - left[document] + seen[document]
        ordered.append((turn, key, pk))
    return [pk for _, _, pk in sorted(ordered)]


def claim(item_id: int, job: Job) -> CatalogueItem | None:
    """Mark the item building for this job; None when it is final or another live job has it."""
    with transaction.atomic():
        item = CatalogueItem.objects.select_for_update().filter(pk=item_id).first()
        if item is None or item.is_final:
            return None
        if item.job_id not in (None, job.pk) and has_live_job(item):
            return None
        item.state, item.job, item.started_at = Item.BUILDING, job, timezone.now()
        item.save(update_fields=["state", "job", "started_at"])
        return item


def record_part(item_id: int, field_name: str, index: int, value: int) -> None:
    """Record part `index`'s theme or environment id on the item (at most once per part)."""
    with transaction.atomic():
        item = CatalogueItem.objects.select_for_update().get(pk=item_id)
        values = list(getattr(item, field_name) or [])
        if len(values) > index:
            return
        values.append(value)
        setattr(item, field_name, values)
        item.save(update_fields=[field_name])


def finish(item_id: int, state: str, reason: str = "", **fields: Any) -> None:
    """The item's outcome, in one write: state, reason, its label and the time it took."""
    now = timezone.now()
    item = CatalogueItem.objects.get(pk=item_id)
    seconds = (now - item.started_at).total_seconds() if item.started_at else None
    CatalogueItem.objects.filter(pk=item_id).exclude(state__in=CatalogueItem.FINAL_STATES).update(
        state=state,
        reason=reason[:5000],
        reason_kind=reason_kind(reason) if reason else "",
        seconds=round(seconds, 2) if seconds is not None else None,
        finished_at=now,
        **fields,
    )


def give_up(item_id: int, reason: str) -> None:
    """The item's job gave up (its worker died on the last attempt): a later run retries it."""
    finish(item_id, Item.FAILED, f"the build job gave up: {reason}")
    document = CatalogueItem.objects.filter(pk=item_id).values_list("document", flat=True).first()
    if document is not None:
        settle_document(document)


# --- a document built part by part ------------------------------------------------------------


def part_key(document_key: str, label: str) -> str:
    """A part's key: the document's path and the part's label ("a.com/openapi.json#users")."""
    return f"{document_key}#{label}"[:500]


def take_part(document: CatalogueItem, label: str, sha256: str) -> CatalogueItem | None:
    """The part's item (made once: its key and the part's sha256), pointed at `document`, or
    None when it needs no build (published or rejected already, unless the run retries
    rejections; a live job has it). A taken part is BUILDING without a job until
    `queue_part`: no other build's `top_up` gives it a job before its theme is stored."""
    run = document.run
    with transaction.atomic():
        item = current_item(
            part_key(document.key, label),
            sha256,
            {"run": run, "part": label[:200], "state": Item.BUILDING},
        )
        if retries(item, run):
            item = supersede(item, run, state=Item.BUILDING)
        item.document = document
        item.save(update_fields=["document"])
        if item.is_final or has_live_job(item):
            return None
        release_lost_job(item)
        if item.state == Item.FAILED and item.run_id != run.pk:
            item.retries = Item.FAILED
        item.run, item.state, item.job = run, Item.BUILDING, None
        item.reason = item.reason_kind = ""
        item.save(update_fields=["run", "state", "job", "reason", "reason_kind", "retries"])
        return item


def queue_part(item_id: int, category: str) -> None:
    """The part's theme is stored: it waits for a place in the run's window (`top_up`)."""
    CatalogueItem.objects.filter(pk=item_id, state=Item.BUILDING).update(
        state=Item.QUEUED, job=None, category=category
    )


def split_document(item_id: int, parts: int, category: str) -> None:
    """The document's job has handed its parts over: the document waits for them, holding no
    job (so it takes no place in the window)."""
    CatalogueItem.objects.filter(pk=item_id).exclude(state__in=CatalogueItem.FINAL_STATES).update(
        parts=parts, category=category, job=None
    )


def settle_document(item_id: int) -> str | None:
    """Once every part of a split document has an outcome, the document's: published when one
    part was, failed when one part's job failed (a later run builds only those parts again),
    else rejected with its first part's reason. None while parts are still to build."""
    with transaction.atomic():
        document = CatalogueItem.objects.select_for_update().filter(pk=item_id).first()
        if document is None or document.is_final or not document.parts:
            return None
        parts = list(document.part_items.filter(superseded=False).order_by("pk"))
        if len(parts) < document.parts or any(
            p.state in (Item.QUEUED, Item.BUILDING) for p in parts
        ):
            return None
        published = [p for p in parts if p.state == Item.PUBLISHED]
        failed = [p for p in parts if p.state == Item.FAILED]
        if failed:
            state = Item.FAILED
            reason = (
                f"{len(failed)} of {len(parts)} parts failed; {failed[0].part}: {failed[0].reason}"
            )
        elif published:
            state, reason = Item.PUBLISHED, ""
        else:
            state, reason = Item.REJECTED, parts[0].reason
        finish(
            item_id,
            state,
            reason,
            themes=[pk for p in parts for pk in p.themes],
            environments=[pk for p in parts for pk in p.environments],
            verified_tools=sum(p.verified_tools for p in published),
        )
        return state


# --- what a run shows -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    run: int
    listed: int
    done_before: int  # built by an earlier run: skipped
    counts: dict[str, int]  # this run's documents by state (superseded ones not counted)
    remaining: int  # documents queued or building (a split one until its parts are built)
    environments_published: int
    verified_tools: int
    tasks_kept: int
    top_reasons: list[tuple[str, int]]  # rejected (and failed), by reason, most first
    seconds_median: float | None
    seconds_p95: float | None
    part_counts: dict[str, int]  # parts of split documents built by this run, by state
    part_remaining: int
    part_top_reasons: list[tuple[str, int]]
    retried: int = 0  # documents an earlier run rejected or failed, built again by this run
    superseded: int = 0  # documents of this run a later run built again: counted there
    part_retried: int = 0
    part_superseded: int = 0
    tasks_goal: int = 0  # goal tasks asked per published environment (the run's --tasks)
    short_of_tasks: int = 0  # published environments whose synthesis ended below the goal
    short_reasons: list[tuple[str, int]] = field(default_factory=list)  # why, most first

    @property
    def finished(self) -> bool:
        return self.remaining == 0

    def as_dict(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["top_reasons"] = [{"reason": r, "count": c} for r, c in self.top_reasons]
        data["part_top_reasons"] = [{"reason": r, "count": c} for r, c in self.part_top_reasons]
        data["short_reasons"] = [{"reason": r, "count": c} for r, c in self.short_reasons]
        data["finished"] = self.finished
        return data


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)


def run_summary(run: CatalogueRun, top: int = 10) -> RunSummary:
    """Built, rejected by reason, remaining: the run's progress as the ledger records it, for
    its documents and, apart, for the parts of those that were split. A row a later run
    superseded (it retried the rejection) is counted there, by its newest outcome, not here."""
    rows = list(
        run.items.values(
            "state",
            "reason_kind",
            "environments",
            "verified_tools",
            "seconds",
            "part",
            "parts",
            "superseded",
            "retries",
        )
    )
    items = [i for i in rows if not i["superseded"]]
    documents = [i for i in items if not i["part"]]
    parts = [i for i in items if i["part"]]
    counts, part_counts = (Counter(i["state"] for i in group) for group in (documents, parts))
    environment_ids = {pk for i in items for pk in i["environments"] or []}
    published = Environment.objects.filter(
        pk__in=environment_ids, status__in=(Environment.Status.VERIFIED, Environment.Status.RETIRED)
    )
    seconds = [i["seconds"] for i in documents if i["seconds"] is not None]
    short = shortfalls(published, run.tasks_per_environment)
    return RunSummary(
        run=run.pk,
        listed=run.listed,
        done_before=run.done_before,
        counts={state: counts.get(state, 0) for state in Item.values},
        remaining=counts.get(Item.QUEUED, 0) + counts.get(Item.BUILDING, 0),
        environments_published=published.count(),
        # a split document's tools are its parts' (counted as each part is built)
        verified_tools=sum(i["verified_tools"] for i in items if not i["parts"]),
        tasks_kept=sum(published.values_list("task_count", flat=True)),
        top_reasons=rejections(documents).most_common(top),
        seconds_median=round(statistics.median(seconds), 2) if seconds else None,
        seconds_p95=percentile(seconds, 0.95),
        part_counts={state: part_counts.get(state, 0) for state in Item.values},
        part_remaining=part_counts.get(Item.QUEUED, 0) + part_counts.get(Item.BUILDING, 0),
        part_top_reasons=rejections(parts).most_common(top),
        retried=sum(bool(i["retries"]) for i in rows if not i["part"]),
        superseded=sum(i["superseded"] for i in rows if not i["part"]),
        part_retried=sum(bool(i["retries"]) for i in rows if i["part"]),
        part_superseded=sum(i["superseded"] for i in rows if i["part"]),
        tasks_goal=run.tasks_per_environment,
        short_of_tasks=sum(short.values()),
        short_reasons=short.most_common(top),
    )


TASKS_JOB = "tasks.synthesize"  # what the tasks app queues for a published environment


def shortfalls(published, goal: int) -> Counter:
    """Published environments whose goal-task synthesis has ended with fewer than `goal` tasks,
    counted by why: the newest goal-tier synthesis job of each (a retried or re-asked one
    counts once, by its last outcome) says it, a failed one by its error, else by the discard
    its account counts most (a walk that cannot start, an audit check). Environments whose
    newest synthesis is still to run are not counted."""
    if goal <= 0:
        return Counter()
    below = set(published.filter(task_count__lt=goal).values_list("pk", flat=True))
    if not below:
        return Counter()
    newest: dict[str, tuple[str, dict, str]] = {}
    jobs = Job.objects.filter(
        kind=TASKS_JOB,
        target__in=[f"environment:{pk}" for pk in below],
        arguments__tier="goal",
    ).order_by("pk")
    for target, state, result, error in jobs.values_list("target", "state", "result", "error"):
        newest[target] = (state, result or {}, error)
    reasons: Counter = Counter()
    for state, result, error in newest.values():
        if state in (Job.State.SUCCEEDED, Job.State.FAILED):
            reasons[reason_kind(shortfall_reason(state, result, error))] += 1
    return reasons


def shortfall_reason(state: str, result: dict[str, Any], error: str) -> str:
    """Why one environment's synthesis kept fewer tasks than asked, in its own words."""
    if state == Job.State.FAILED:
        return f"the task synthesis failed: {error or 'no error recorded'}"
    discarded = Counter(result.get("discarded") or {})
    for check, count in ((result.get("audit") or {}).get("discarded") or {}).items():
        discarded[f"the audit's {check} check discarded them"] += count
    if not discarded:
        return "the walks found fewer distinct tasks than asked"
    return discarded.most_common(1)[0][0]


def rejections(items: list[dict[str, Any]]) -> Counter:
    return Counter(i["reason_kind"] for i in items if i["state"] in (Item.REJECTED, Item.FAILED))
