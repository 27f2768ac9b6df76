"""Environment runtime benchmark: per-call overhead, reset time, concurrent episodes.

    .venv/bin/python benchmarks/runtime_bench.py

Targets: sandboxed call overhead < 0.5 ms median, reset of a 1 MB state < 5 ms, 256 concurrent
episodes on 2 workers.
"""

from __future__ import annotations

import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.runtime import SandboxPool, load_package  # noqa: E402
from tests.support.sample_package import build_sample_package  # noqa: E402


def timed(function, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered):.3f} ms, p95 {p95:.3f} ms"


def call_overhead(pool: SandboxPool, package) -> None:
    # Direct, in-process: the same tool function on an in-memory copy of the same state.
    namespace: dict = {}
    exec(compile(package.tools_source, "tools.py", "exec"), namespace)  # noqa: S102 - trusted here
    db = sqlite3.connect(":memory:")
    with sqlite3.connect(package.state_path) as source:
        source.backup(db)
    db.row_factory = sqlite3.Row
    get_book = namespace["get_book"]
    rows = db.execute("SELECT count(*) FROM book").fetchone()[0]
    direct = timed(lambda: get_book(db, book_id=5000 + 100), 3000)

    episode = pool.start_episode(package)
    for _ in range(200):
        episode.call_tool("get_book", {"book_id": 5100})
    sandboxed = timed(lambda: episode.call_tool("get_book", {"book_id": 5100}), 3000)
    episode.close()
    overhead = [s - statistics.median(direct) for s in sandboxed]
    print(f"read tool get_book on a {rows}-row table")
    print(f"  direct in-process call:   {summary(direct)}")
    print(f"  sandboxed call (pool):    {summary(sandboxed)}")
    print(f"  sandbox overhead:         {summary(overhead)}   (target: median < 0.5 ms)")


def reset_time(pool: SandboxPool, package, label: str) -> None:
    episode = pool.start_episode(package)
    episode.call_tool("update_stock", {"book_id": 1, "stock": 0})
    samples = timed(episode.reset, 30)
    start = timed(lambda: pool.start_episode(package).close(), 10)
    episode.close()
    size_mb = package.state_path.stat().st_size / 1e6
    print(f"episode reset, {label} ({size_mb:.1f} MB state): {summary(samples)}")
    print(f"  start + close of an episode: {summary(start)}")


def concurrent_episodes(pool: SandboxPool, package, count: int = 256) -> None:
    before = sum(pool.stats()["worker_rss_bytes"])
    started = time.perf_counter()
    episodes = [pool.start_episode(package) for _ in range(count)]
    results = [e.call_tool("get_book", {"book_id": 1 + i % 4}) for i, e in enumerate(episodes)]
    elapsed = time.perf_counter() - started
    after = sum(pool.stats()["worker_rss_bytes"])
    ok = sum(r.ok for r in results)
    size_mb = package.state_path.stat().st_size / 1e6
    print(
        f"{count} concurrent episodes on {len(pool.slots)} workers ({size_mb:.1f} MB state each): "
        f"{ok}/{count} calls ok, opened and called in {elapsed:.2f} s"
    )
    print(
        f"  worker RSS {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB, "
        f"{(after - before) / count / 1e6:.2f} MB per episode"
    )
    for episode in episodes:
        episode.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small = load_package(build_sample_package(root, name="bench_small", extra_books=10_000))
        one_mb = load_package(build_sample_package(root, name="bench_1mb", extra_books=12_800))
        big = load_package(build_sample_package(root, name="bench_big", extra_books=650_000))
        with SandboxPool(workers=2) as pool:
            print(f"worker pids {pool.stats()['worker_pids']}, hello {pool.slots[0].process.hello}")
            call_overhead(pool, small)
            reset_time(pool, one_mb, "in-memory copy")
            reset_time(pool, big, "file copy")
            concurrent_episodes(pool, one_mb)


if __name__ == "__main__":
    main()
