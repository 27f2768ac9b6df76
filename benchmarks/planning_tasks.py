"""Planning tasks: verified tasks per CPU-minute per tier and walk plan, lengths, audit share.

For every environment of the starter catalogue (reused from ``--packages`` or built), every
instruction tier and every walk plan, graph tasks are synthesized for ``--seconds``: each walk
runs step by step in a sandbox episode, must pass the dependency check (every step consumes an
earlier output, every lookup feeds a later one) and the verifier audit; only tasks that pass
both count as verified. CPU time is this process plus its sandbox worker (Linux /proc), so
"per CPU-minute" is verified tasks per minute of one core. Then programmatic tasks per tier.

Plans: ``read N`` asks for an N-step read-only walk and keeps the longest dependent chain the
world allows (at least 2 steps); ``workflow`` asks for 8 steps with 2 dependent writes, a
conditional write (branch) and a join (at least 4 steps).

    .venv/bin/python benchmarks/planning_tasks.py --packages /tmp/cat [--seconds 2]
        [--plans 3,6,12] [--tiers explicit,goal,goal_hard] [--only a,b] [--programs] [--exact]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from starter_packages import starter_packages  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of another process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Clock:
    """Wall and CPU seconds of this process and the pool's worker between start and stop."""

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        self.pid = self.pool.slots[0].process.pid
        self.wall, self.cpu, self.worker = time.perf_counter(), time.process_time(), 0.0
        self.worker = cpu_seconds(self.pid)
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        pid = self.pool.slots[0].process.pid
        if pid == self.pid:
            self.cpu = time.process_time() - self.cpu + cpu_seconds(pid) - self.worker
        else:  # the worker was replaced: count wall time for both processes
            self.cpu = 2 * self.wall


def plans(lengths: list[int], exact: bool = False):
    """Walk plans by label; ``exact`` keeps only walks of the full length asked for."""
    from tasks.synthesis.graph_tasks import Difficulty

    found = {
        f"read {n}": Difficulty(steps=n, distractors=3, min_steps=n if exact else min(2, n))
        for n in lengths
    }
    found["workflow"] = Difficulty(
        steps=8, writes=2, branches=1, joins=1, distractors=3, min_steps=4
    )
    return found


def histogram(lengths: Counter) -> str:
    return " ".join(f"{n}:{k}" for n, k in sorted(lengths.items()))


def run_graph(packages, pool, tiers, lengths, seconds, exact=False) -> list[dict]:
    from tasks.synthesis.graph_tasks import GraphTaskSynthesizer

    rows = []
    for tier in tiers:
        for label, plan in plans(lengths, exact).items():
            row = {"tier": tier, "plan": label, "tasks": 0, "wall": 0.0, "cpu": 0.0}
            row.update(audited=0, kept=0, rejected=0, full=0, lengths=Counter(), reach={})
            row["discarded"] = Counter()
            for package in packages:
                with Clock(pool) as clock:
                    with GraphTaskSynthesizer(package, pool, llm=None, tier=tier) as synthesizer:
                        tasks, seed = [], 0
                        while time.perf_counter() - clock.wall < seconds:
                            tasks += synthesizer.synthesize(5, plan, seed=seed, max_walks=5)
                            seed += 5
                row["tasks"] += len(tasks)
                row["wall"] += clock.wall
                row["cpu"] += clock.cpu
                audit = synthesizer.auditor.summary
                row["audited"] += audit.audited
                row["kept"] += audit.kept
                row["discarded"] += Counter(audit.discarded)
                row["rejected"] += synthesizer.stats.dependency_rejected
                found = Counter(len(t.gold_chain) for t in tasks)
                row["lengths"] += found
                row["full"] += found.get(plan.steps, 0)
                row["reach"][package.name] = max(found, default=0)
            rows.append(row)
            print(
                f"{tier:9} {label:9} {row['tasks']:5} verified, "
                f"{row['tasks'] / row['cpu'] * 60:7.0f}/CPU-min, "
                f"{row['full'] / row['cpu'] * 60:6.0f}/CPU-min at full length, "
                f"audit kept {row['kept']}/{row['audited']} (discarded: "
                f"{dict(row['discarded'])}), dependency refused {row['rejected']}, "
                f"lengths {histogram(row['lengths'])}",
                flush=True,
            )
    return rows


def run_programs(packages, pool, tiers, seconds) -> list[dict]:
    from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer

    rows = []
    for tier in tiers:
        row = {"tier": tier, "tasks": 0, "cpu": 0.0, "wall": 0.0, "audited": 0, "kept": 0}
        row["lengths"] = Counter()
        for package in packages:
            with Clock(pool) as clock:
                synthesizer = ProgrammaticTaskSynthesizer(package, pool, llm=None, tier=tier)
                tasks, seed = [], 0
                while synthesizer.shapes and time.perf_counter() - clock.wall < seconds:
                    tasks += synthesizer.synthesize(3, seed=seed)
                    seed += 3
            row["tasks"] += len(tasks)
            row["cpu"] += clock.cpu
            row["wall"] += clock.wall
            row["audited"] += synthesizer.auditor.summary.audited
            row["kept"] += synthesizer.auditor.summary.kept
            row["lengths"] += Counter(t.difficulty["dependent_calls"] for t in tasks)
        rows.append(row)
        print(
            f"{tier:9} programs  {row['tasks']:5} verified, "
            f"{row['tasks'] / row['cpu'] * 60:7.0f}/CPU-min, audit kept "
            f"{row['kept']}/{row['audited']}, dependent calls {histogram(row['lengths'])}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default="", help="reuse a built package root")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--seconds", type=float, default=2.0, help="per env, tier and plan")
    parser.add_argument("--plans", default="3,6,12", help="read-only walk lengths asked for")
    parser.add_argument("--tiers", default="explicit,goal,goal_hard")
    parser.add_argument("--programs", action="store_true", help="programmatic tasks too")
    parser.add_argument(
        "--exact", action="store_true", help="read walks: keep only those of the full length"
    )
    args = parser.parse_args()

    from environments.runtime import SandboxPool, load_package

    paths = starter_packages(args.packages, [n for n in args.only.split(",") if n])
    packages = [load_package(p) for p in paths]
    tiers = args.tiers.split(",")
    print(f"{len(packages)} environments, {args.seconds:g} s per environment, tier and plan")
    with SandboxPool(workers=1) as pool:
        rows = run_graph(
            packages, pool, tiers, [int(n) for n in args.plans.split(",")], args.seconds, args.exact
        )
        program_rows = run_programs(packages, pool, tiers, args.seconds) if args.programs else []
    print(
        "\n| tier | plan | verified | per CPU-minute | at full length per CPU-minute "
        "| audit kept | lengths reached (length:tasks) |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        share = row["kept"] / row["audited"] if row["audited"] else 0.0
        print(
            f"| {row['tier']} | {row['plan']} | {row['tasks']} | "
            f"{row['tasks'] / row['cpu'] * 60:.0f} | {row['full'] / row['cpu'] * 60:.0f} | "
            f"{share:.1%} | {histogram(row['lengths'])} |"
        )
    for row in program_rows:
        share = row["kept"] / row["audited"] if row["audited"] else 0.0
        print(
            f"| {row['tier']} | programmatic | {row['tasks']} | "
            f"{row['tasks'] / row['cpu'] * 60:.0f} | – | {share:.1%} | dependent calls "
            f"{histogram(row['lengths'])} |"
        )
    twelve = [r for r in rows if r["plan"] == "read 12"]
    if twelve:
        reach = twelve[0]["reach"]
        print("\nlongest dependent chain per environment (read 12, first tier):")
        print(", ".join(f"{name} {n}" for name, n in sorted(reach.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
