"""Cost of scoring a write episode: the full state hash + diff against the incremental one.

    env -u DATABASE_URL .venv/bin/python benchmarks/reward_cost.py [--rows 10000] [--repeats 50]

Builds the sample bookstore package (tests/support/sample_package.py) with filler books so its
database holds --rows rows (author <- book <- purchase, with foreign keys), runs a write
episode (update_stock twice, place_order twice) in a real SandboxPool, and times, median over
--repeats:

(a) full: state.state_hash + state.state_diff on in-memory copies of the initial and the
    episode state (the episode's writes replayed locally by the same tool functions), which is
    what the worker did for every episode before change tracking;
(b) incremental: episode.state_hash() + episode.state_diff(), through the pool and the worker's
    pipe, as the reward uses them.

It checks that both give the same hash and diff before timing.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from environments.runtime import SandboxPool, load_package, state  # noqa: E402
from tests.support.sample_package import AUTHORS, BOOKS, build_sample_package  # noqa: E402

WRITES = [
    ("update_stock", {"book_id": 3, "stock": 11}),
    ("place_order", {"book_id": 2, "quantity": 1, "customer": "ada"}),
    ("update_stock", {"book_id": 5000, "stock": 0}),
    ("place_order", {"book_id": 1, "quantity": 2, "customer": "bob"}),
]


def median_ms(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as root:
        extra = args.rows - len(AUTHORS) - len(BOOKS)
        package = load_package(build_sample_package(Path(root), extra_books=extra))
        initial = sqlite3.connect(":memory:")
        with sqlite3.connect(package.state_path) as source:
            source.backup(initial)
        rows = sum(
            initial.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("author", "book", "purchase")
        )

        current = sqlite3.connect(":memory:")
        initial.backup(current)
        current.row_factory = sqlite3.Row
        tools: dict = {}
        exec(package.tools_source, tools)  # noqa: S102 - the package's own tools, locally
        for name, arguments in WRITES:
            tools[name](current, **arguments)
            current.commit()

        with SandboxPool(workers=1) as pool, pool.start_episode(package) as episode:
            for name, arguments in WRITES:
                result = episode.call_tool(name, arguments)
                assert result.ok, result
            full_hash = state.state_hash(current)
            full_diff = json.loads(json.dumps(state.state_diff(initial, current)))
            assert episode.state_hash() == full_hash, "incremental hash differs from the full one"
            assert episode.state_diff() == full_diff, "incremental diff differs from the full one"

            def full() -> None:
                state.state_hash(current)
                state.state_diff(initial, current)

            def incremental() -> None:
                episode.state_hash()
                episode.state_diff()

            full_ms = median_ms(full, args.repeats)
            incremental_ms = median_ms(incremental, args.repeats)
            hash_ms = median_ms(episode.state_hash, args.repeats)
            diff_ms = median_ms(episode.state_diff, args.repeats)

    print(f"database: {rows} rows; write episode: {len(WRITES)} tool calls")
    print(f"(a) full        state_hash + state_diff:  {full_ms:8.2f} ms (median of {args.repeats})")
    print(f"(b) incremental episode hash + diff:      {incremental_ms:8.2f} ms")
    print(f"    of which    episode.state_hash():     {hash_ms:8.2f} ms")
    print(f"                episode.state_diff():     {diff_ms:8.2f} ms")
    print(f"speed-up: {full_ms / incremental_ms:.0f}x")


if __name__ == "__main__":
    main()
