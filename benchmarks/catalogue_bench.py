"""Benchmark: build and verify the whole starter catalogue; tools verified per minute per core.

    .venv/bin/python benchmarks/catalogue_bench.py [--workers 2]

Builds all STARTER_SPECS into a temporary folder (mining, tool generation, sandbox verification,
publishing), then prints the wall time, CPU time of the build processes and their sandbox
workers, verified tools, and throughput per core.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.discovery.catalogue import build_starter_catalogue  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="aw-catalogue-bench-") as root:
        started = time.perf_counter()
        entries = build_starter_catalogue(Path(root), workers=args.workers)
        wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    published = [e for e in entries if e.path]
    tools = sum(e.tools_verified for e in published)
    total = sum(e.tools_total for e in entries)
    cores = min(args.workers, os.cpu_count() or 1)
    print(f"environments published : {len(published)}/{len(entries)}")
    print(f"primary categories     : {len({e.category['primary'] for e in published})}")
    print(f"tools verified         : {tools}/{total}")
    print(f"wall time              : {wall:.1f} s ({args.workers} build processes, {cores} cores)")
    print(f"child CPU time         : {cpu:.1f} s")
    print(f"tools verified / min   : {tools / (wall / 60):.0f}")
    print(f"tools verified / min / core : {tools / (wall / 60) / cores:.0f}")
    slowest = sorted(entries, key=lambda e: -e.seconds)[:3]
    print("slowest                : " + ", ".join(f"{e.name} {e.seconds:.1f}s" for e in slowest))
    return 0 if len(published) == len(entries) else 1


if __name__ == "__main__":
    sys.exit(main())
