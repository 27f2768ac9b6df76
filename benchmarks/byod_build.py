"""Bring your own database: build time, tables, inferred keys, verified tools and peak memory.

Generates a ~3 MB nested retail JSON document and a ~50 MB real ``pg_dump`` (see
``benchmarks/byod_data.py``), then builds each through the same entry point users have
(``manage.py build_environment --file``) in a scratch database and storage root, one process per
build so its peak memory is its own.

    .venv/bin/python benchmarks/byod_build.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from byod_data import postgres_dump, retail_json  # noqa: E402


def build(path: Path, name: str, scratch: Path) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{scratch / 'django.sqlite3'}",
        "AW_STORAGE_ROOT": str(scratch / "storage"),
    }
    env.pop("CELERY_BROKER_URL", None)
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    run = subprocess.run(
        [python, "manage.py", "build_environment", "--file", str(path), "--name", name],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    if run.returncode != 0:
        raise SystemExit(f"{name}: build failed\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    with sqlite3.connect(scratch / "django.sqlite3") as conn:
        (raw,) = conn.execute(
            "SELECT build_yield FROM environments_environment WHERE name = ? "
            "ORDER BY version DESC LIMIT 1",
            (name,),
        ).fetchone()
    built = json.loads(raw)
    return {
        "file": path.name,
        "megabytes": path.stat().st_size / 1e6,
        "seconds": seconds,
        "tables": built["schema"]["tables"],
        "rows": built["ingest"]["rows"],
        "foreign_keys": len(built["schema"]["foreign_keys"]),
        "enums": sum(len(v) for v in built["schema"].get("enums", {}).values()),
        "tools": built["tools"]["generated"],
        "verified": built["verify"]["verified"],
        "peak_mb": peak_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", default="", help="keep the generated files and builds here")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="aw-byod-"))
    work.mkdir(parents=True, exist_ok=True)
    inputs = [
        (retail_json(work / "retail.json"), "retail"),
        (postgres_dump(work / "shop_pg_dump.sql"), "shop_dump"),
    ]
    rows = []
    for path, name in inputs:
        result = build(path, name, work / name)
        rows.append(result)
        print(json.dumps(result), flush=True)
    print()
    print(
        "| input | size | build | tables | rows | inferred foreign keys | enum columns | tools verified | peak RSS |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['file']} | {r['megabytes']:.1f} MB | {r['seconds']:.1f} s | {r['tables']} | "
            f"{r['rows']:,} | {r['foreign_keys']} | {r['enums']} | {r['verified']}/{r['tools']} | "
            f"{r['peak_mb']:.0f} MB |"
        )


if __name__ == "__main__":
    main()
