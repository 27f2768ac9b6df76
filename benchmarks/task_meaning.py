"""Meaning of synthesized goal-tier graph tasks over the starter catalogue.

Two figures per run:
- the share of candidate tasks (walked, rendered, before any audit) each meaning detector of
  ``tasks.synthesis.meaning`` catches, and the share any of them catches;
- verified tasks per CPU-minute: tasks kept by the full verifier audit (whatever checks the
  audit of this commit runs), CPU time of this process and its sandbox worker.

Run it on two commits (the walker before and after its meaning fix) to compare.

    .venv/bin/python benchmarks/task_meaning.py [--packages DIR] [--only a,b] [--count 4]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from starter_packages import starter_packages  # noqa: E402
from task_synthesis_bench import _cpu_seconds  # noqa: E402

PLANS = {  # the goal-tier mix a synthesis job draws (read walks, a write, a branch, a join)
    "2 steps": dict(steps=2, distractors=2),
    "3 steps": dict(steps=3, distractors=3, min_steps=2),
    "3 steps, 1 conditional write": dict(steps=3, writes=1, branches=1, distractors=3),
    "4 steps, 1 write, 1 join": dict(steps=4, writes=1, joins=1, distractors=4, min_steps=2),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default="", help="reuse a built catalogue root")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--count", type=int, default=4, help="tasks per plan and environment")
    args = parser.parse_args()

    import django

    django.setup()
    from environments.package import load_package
    from environments.runtime import SandboxPool
    from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
    from tasks.synthesis.meaning import DETECTORS, MeaningFacts, meaning_failures

    paths = starter_packages(args.packages, [n for n in args.only.split(",") if n])
    caught: Counter = Counter()
    candidates = 0
    kept = 0
    discarded: Counter = Counter()
    cpu = wall = 0.0
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        for path in paths:
            package = load_package(path)
            # candidates: walks rendered, no audit
            with GraphTaskSynthesizer(package, pool, llm=None, tier="goal", audit=False) as s:
                facts = MeaningFacts.of(s.view, s.graph.nodes)
                for index, plan in enumerate(PLANS.values()):
                    for task in s.synthesize(args.count, Difficulty(**plan), seed=1000 * index):
                        candidates += 1
                        found = {n for n, r in meaning_failures(task, facts).items() if r}
                        caught.update(found)
                        caught["any"] += 1 if found else 0
            # verified tasks per CPU-minute: the same plans, the full audit
            worker = pool.slots[0].process.pid
            cpu0, worker0 = time.process_time(), _cpu_seconds(worker)
            wall0 = time.perf_counter()
            with GraphTaskSynthesizer(package, pool, llm=None, tier="goal") as s:
                for index, plan in enumerate(PLANS.values()):
                    kept += len(s.synthesize(args.count, Difficulty(**plan), seed=1000 * index))
                discarded.update(s.auditor.summary.discarded)
            spent = time.process_time() - cpu0
            if pool.slots[0].process.pid == worker:
                spent += _cpu_seconds(worker) - worker0
            cpu += spent
            wall += time.perf_counter() - wall0
    print(f"{len(paths)} environments, {candidates} candidate goal-tier graph tasks")
    print(f"{'detector':24} {'caught':>7} {'share':>7}")
    for name in [*DETECTORS, "any"]:
        share = caught[name] / candidates if candidates else 0.0
        print(f"{name:24} {caught[name]:>7} {share:>7.1%}")
    print(
        f"audit kept {kept} tasks in {cpu:.1f} CPU-s: {60 * kept / max(cpu, 1e-9):.1f} per CPU-minute"
    )
    print("audit discards by check: " + ", ".join(f"{k} {v}" for k, v in discarded.most_common()))


if __name__ == "__main__":
    main()
