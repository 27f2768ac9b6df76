"""Verified graph tasks per minute per core on the starter catalogue.

Builds a few starter-catalogue environments into a temporary directory (the bookstore sample
package when the catalogue is not available), then synthesizes graph tasks on each for a fixed
time. Every task counted was executed step by step in a sandbox episode (no step errored) and is
distinct by canonical signature; a sample of them is replayed and must score 1.0.

CPU time counts this process and its sandbox worker, so "per core" is tasks per CPU-minute.

    python benchmarks/task_synthesis_bench.py [--seconds 5] [--envs airports,penguins,...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.runtime import SandboxPool, load_package  # noqa: E402
from tasks.reward import score  # noqa: E402
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer  # noqa: E402
from tasks.synthesis.replay import replay_gold  # noqa: E402

DEFAULT_ENVS = "penguins,cars,elements,countries,languages,airports"
MIXES = {
    "read-only, 3 steps": Difficulty(steps=3, writes=0, distractors=3),
    "1 write, 4 steps": Difficulty(steps=4, writes=1, joins=1, distractors=3),
}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def build_packages(root: Path, names: list[str], pool) -> list:
    try:
        from environments.discovery.catalogue import STARTER_SPECS, build_environment
    except ImportError:
        from tests.support.sample_package import build_sample_package

        return [load_package(build_sample_package(root))]
    packages = []
    for spec in STARTER_SPECS:
        if spec["name"] in names:
            entry = build_environment(spec, root, root / ".mining", pool)
            if entry.path:
                packages.append(load_package(entry.path))
            else:
                print(f"  {spec['name']}: not built ({entry.error or 'unverified'})")
    return packages


def run(seconds: float, names: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, SandboxPool(workers=1) as pool:
        packages = build_packages(Path(tmp), names, pool)
        worker_pid = pool.slots[0].process.pid
        print(f"{len(packages)} environments: {', '.join(p.name for p in packages)}")
        for label, difficulty in MIXES.items():
            total, wall_total, cpu_total, replayed, perfect = 0, 0.0, 0.0, 0, 0
            for package in packages:
                wall0, cpu0 = time.perf_counter(), time.process_time()
                worker0 = _cpu_seconds(pool.slots[0].process.pid)
                with GraphTaskSynthesizer(package, pool, llm=None) as synthesizer:
                    tasks, seed = [], 0
                    while time.perf_counter() - wall0 < seconds:
                        tasks += synthesizer.synthesize(10, difficulty, seed=seed)
                        seed += 10
                wall = time.perf_counter() - wall0
                if pool.slots[0].process.pid == worker_pid:
                    cpu = time.process_time() - cpu0 + _cpu_seconds(worker_pid) - worker0
                else:  # worker replaced mid-run: count wall time for both processes
                    cpu, worker_pid = 2 * wall, pool.slots[0].process.pid
                for task in tasks[:: max(1, len(tasks) // 5)]:
                    replayed += 1
                    perfect += score(task, replay_gold(task, pool, package)).total == 1.0
                total += len(tasks)
                wall_total += wall
                cpu_total += cpu
                print(
                    f"  {label:20} {package.name:12} {len(tasks):5} tasks "
                    f"{len(tasks) / wall * 60:8.0f}/min wall {len(tasks) / cpu * 60:8.0f}/CPU-min"
                )
            print(
                f"{label}: {total} verified graph tasks, {total / wall_total * 60:.0f} per minute "
                f"(1 synthesis process + 1 sandbox worker), {total / cpu_total * 60:.0f} per "
                f"CPU-minute; gold replays scoring 1.0: {perfect}/{replayed}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="synthesis time per env")
    parser.add_argument("--envs", default=DEFAULT_ENVS, help="catalogue environments to build")
    args = parser.parse_args()
    run(args.seconds, args.envs.split(","))


if __name__ == "__main__":
    main()
