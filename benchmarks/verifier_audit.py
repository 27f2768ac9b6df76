"""Verifier audit over the whole starter catalogue: tasks audited, kept, discarded by reason.

Builds the starter packages (or reuses ``--packages``), synthesizes graph tasks (read-only and
write walks) and programmatic tasks in each, every one audited at synthesis, then replays every
kept task's *corrupted* runs once more with a fresh auditor to count false positives: a kept
task whose no-op, dropped-write, perturbed, extra-write, wrong or hedged run the reward solves.
That count must be 0. (The reward's state cost, full against incremental, is measured by
``benchmarks/reward_cost.py``.)

    .venv/bin/python benchmarks/verifier_audit.py [--graph 12] [--programs 4] [--only a,b]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=int, default=12, help="graph tasks per environment")
    parser.add_argument("--programs", type=int, default=4, help="programmatic tasks per env")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--packages", default="", help="reuse a built package root")
    args = parser.parse_args()

    import django

    django.setup()
    from environments.package import load_package
    from environments.runtime import SandboxPool
    from tasks.audit import AuditSummary, VerifierAuditor
    from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
    from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer

    paths = starter_packages(args.packages, [n for n in args.only.split(",") if n])
    plans = [
        Difficulty(steps=2, writes=0, distractors=2),
        Difficulty(steps=3, writes=1, distractors=3),
        Difficulty(steps=4, writes=2, joins=1, distractors=4),
    ]
    total = AuditSummary()
    false_positives: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    started = time.perf_counter()
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        for path in paths:
            package = load_package(path)
            t0 = time.perf_counter()
            kept = []
            with GraphTaskSynthesizer(package, pool, llm=None) as synthesizer:
                per_plan = max(1, args.graph // len(plans))
                for index, plan in enumerate(plans):
                    kept += synthesizer.synthesize(per_plan, plan, seed=101 * index)
                summary = synthesizer.auditor.summary
                recheck = VerifierAuditor(package, pool, synthesizer.view, synthesizer.graph.nodes)
            programs = ProgrammaticTaskSynthesizer(package, pool, llm=None)
            kept += programs.synthesize(args.programs, seed=7)
            summary = summary.merge(programs.auditor.summary)
            total = total.merge(summary)
            for task in kept:
                by_kind[task.kind] += 1
                audit = recheck.audit(task)  # an independent re-run of every check
                for check in audit.checks:
                    if check.name != "gold" and check.applicable and check.solved:
                        false_positives[check.name] += 1
                if not audit.passed:
                    false_positives[f"recheck:{audit.failed}"] += 1
            print(
                f"{package.name:22s} audited {summary.audited:3d} kept {summary.kept:3d} "
                f"discarded {dict(summary.discarded)} ({time.perf_counter() - t0:.1f}s)",
                flush=True,
            )
    elapsed = time.perf_counter() - started
    print()
    print(f"environments: {len(paths)}   wall time: {elapsed:.0f}s")
    print(f"tasks audited: {total.audited}   kept: {total.kept}   by kind: {dict(by_kind)}")
    print(f"discarded by first failed check: {dict(total.discarded)}")
    print(f"checks applied: {dict(total.checks_applied)}")
    print(
        f"false positives left (must be 0): {sum(false_positives.values())} {dict(false_positives)}"
    )


if __name__ == "__main__":
    main()
