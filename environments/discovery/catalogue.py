"""The starter catalogue: a thin bulk builder and CLI over the build pipeline.

The built-in sources are data (environments/builder/sources.json); the stages run through
environments.builder.stages (ingest -> schema -> tools -> verify -> publish). This module builds
many built-in sources at once in parallel worker processes, without a database:

    python -m environments.discovery.catalogue --out DIR [--workers 2] [--only airports,iris]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.builder.pipeline import run_pipeline
from environments.builder.request import BuildRequest, builtin_sources
from environments.builder.stage_results import Progress
from environments.builder.stages import BuildFailed


def _quiet(fraction: float, message: str) -> None:
    return None


# The built-in sources as plain dicts (name, title, description, category, datasets, files).
STARTER_SPECS: list[dict] = [dict(spec) for spec in builtin_sources()]


@dataclass
class CatalogueEntry:
    name: str
    category: dict
    path: str | None
    tools_total: int
    tools_verified: int
    verified: bool
    seconds: float
    tables: dict
    error: str | None = None
    report: str = ""
    build_yield: dict = field(default_factory=dict)


# --- whole environments ------------------------------------------------------------------


def build_environment(
    spec: dict, root: str | Path, workdir: str | Path, pool: Any = None
) -> CatalogueEntry:
    """The whole pipeline for one built-in source spec; errors are recorded, never raised."""
    started = time.perf_counter()
    entry = CatalogueEntry(spec["name"], spec["category"], None, 0, 0, False, 0.0, {})
    try:
        request = BuildRequest.for_source(
            spec["name"],
            title=spec["title"],
            description=spec["description"],
            category=spec["category"],
        )
        outcome = run_pipeline(request, root=root, workdir=workdir, pool=pool)
        entry.path = outcome.path
        entry.report = outcome.explanation
        entry.verified = True
        entry.tables = json.loads((Path(entry.path) / "manifest.json").read_text())["tables"]
        entry.build_yield = outcome.build_yield
    except BuildFailed as exc:  # one broken source must not stop the catalogue
        entry.error = None if exc.stage == "verify" else str(exc)
        entry.report = exc.reason if exc.stage == "verify" else ""
        entry.build_yield = exc.build_yield
    except Exception as exc:
        entry.error = f"{type(exc).__name__}: {exc}"
    built = entry.build_yield
    entry.tools_total = built.get("tools", {}).get("schema_tools", 0)
    entry.tools_verified = built.get("verify", {}).get("verified", 0)
    entry.seconds = time.perf_counter() - started
    return entry


def _build_batch(specs: list[dict], root: str, workdir: str) -> list[CatalogueEntry]:
    from environments.runtime import SandboxPool

    with SandboxPool(workers=1) as pool:
        return [build_environment(spec, root, workdir, pool) for spec in specs]


def build_starter_catalogue(
    root: Path,
    workers: int = 2,
    specs: list[dict] | None = None,
    progress: Progress = _quiet,
) -> list[CatalogueEntry]:
    """Build, verify and publish the starter catalogue under `root`, `workers` processes."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    workdir = root / ".mining"
    workdir.mkdir(exist_ok=True)
    specs = list(STARTER_SPECS if specs is None else specs)
    batches = [specs[i::workers] for i in range(max(1, workers))]
    entries: list[CatalogueEntry] = []
    try:
        if workers <= 1:
            entries = _build_batch(specs, str(root), str(workdir))
        else:
            with ProcessPoolExecutor(max_workers=workers) as executor:
                futures = [
                    executor.submit(_build_batch, batch, str(root), str(workdir))
                    for batch in batches
                    if batch
                ]
                for done, future in enumerate(as_completed(futures), start=1):
                    entries.extend(future.result())
                    progress(done / len(futures), f"{len(entries)} environments built")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    order = {spec["name"]: i for i, spec in enumerate(specs)}
    return sorted(entries, key=lambda e: order[e.name])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the starter environment catalogue.")
    parser.add_argument("--out", required=True, help="package root (AW_STORAGE_ROOT/environments)")
    parser.add_argument("--workers", type=int, default=2, help="parallel build processes")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    args = parser.parse_args(argv)
    specs = STARTER_SPECS
    if args.only:
        wanted = set(args.only.split(","))
        specs = [s for s in STARTER_SPECS if s["name"] in wanted]
    started = time.perf_counter()
    entries = build_starter_catalogue(Path(args.out), args.workers, specs)
    for e in entries:
        status = "ok" if e.path else f"FAILED {e.error or e.report}"
        print(
            f"{e.name:20} {e.category['primary']:28} {e.tools_verified:3}/{e.tools_total:3} "
            f"tools {e.seconds:6.1f}s {status}"
        )
    published = [e for e in entries if e.path]
    print(
        f"{len(published)} environments, "
        f"{len({e.category['primary'] for e in published})} primary categories, "
        f"{sum(e.tools_verified for e in published)} verified tools in "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0 if len(published) == len(entries) else 1


if __name__ == "__main__":
    sys.exit(main())


def entry_dict(entry: CatalogueEntry) -> dict:
    return asdict(entry)
