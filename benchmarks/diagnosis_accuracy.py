"""Diagnosis accuracy: per-label precision and recall against faults injected on purpose.

For every environment of the starter catalogue (reused from ``--packages`` or built), graph
tasks (read walks and write workflows) and programmatic tasks are synthesized at the explicit
tier; the fault-injection policy (``training/policies/fault_injection.py``) then plays every task
once per fault (wrong argument, skipped write, wrong write, premature answer, unknown tool,
malformed call, repeated-call loop, budget exhaustion, wrong final answer) and once clean. A
fault a task does not allow alone plays as a clean run. The taxonomy's detectors label every
episode; ``arena.calibration`` sets the labels against the injected faults. Target: precision
and recall at least 0.9 per label, and no label at all on a clean gold run.

    .venv/bin/python benchmarks/diagnosis_accuracy.py [--packages /tmp/cat] [--only a,b]
        [--graph 6] [--programs 2] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from starter_packages import starter_packages  # noqa: E402


def _figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default="", help="reuse a built package root")
    parser.add_argument("--only", default="", help="comma-separated environment names")
    parser.add_argument("--graph", type=int, default=6, help="graph tasks per environment")
    parser.add_argument("--programs", type=int, default=2, help="programmatic tasks per env")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="sandbox workers")
    parser.add_argument("--json", default="", help="write the figures to this file")
    args = parser.parse_args()

    from arena.calibration import calibrate
    from arena.calibration_run import play_faults, synthesize_calibration_tasks
    from environments.runtime import SandboxPool, load_package

    started = time.perf_counter()
    paths = starter_packages(args.packages, [n for n in args.only.split(",") if n])
    packages = {path.parent.name: load_package(path) for path in paths}
    with SandboxPool(workers=args.workers) as pool:
        tasks = []
        for name, package in packages.items():
            found = synthesize_calibration_tasks(
                package, pool, graph=args.graph, programs=args.programs, seed=args.seed
            )
            tasks += found
            print(f"{name:22} {len(found):3} tasks", flush=True)
        kinds = Counter(t.kind for t in tasks)
        writes = sum(1 for t in tasks if t.expected_diff)
        print(f"{len(tasks)} tasks ({dict(kinds)}, {writes} writing) in {len(packages)} envs")
        episodes = play_faults(tasks, packages, pool, seed=args.seed)
    result = calibrate(episodes)
    elapsed = time.perf_counter() - started

    print(f"\n{result.episodes} episodes in {elapsed:.0f} s\n")
    print("| label | precision | recall | found right | found wrongly | missed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for row in result.labels:
        print(
            f"| {row.label} | {_figure(row.precision)} | {_figure(row.recall)} | "
            f"{row.true_positives} | {row.false_positives} | {row.false_negatives} |"
        )
    print(
        "\n| injected fault | episodes | all expected labels found | exactly those | other labels |"
    )
    print("| --- | ---: | ---: | ---: | --- |")
    for row in result.faults:
        other = ", ".join(f"{k} {v}" for k, v in row.other_labels.items()) or "–"
        print(f"| {row.fault} | {row.episodes} | {row.recovered} | {row.exact} | {other} |")
    print("\nAs a round diagnoses (failed episodes only; solved ones count as missed):\n")
    print("| label | precision | recall | missed |")
    print("| --- | ---: | ---: | ---: |")
    for row in result.round_labels:
        if row.true_positives + row.false_positives + row.false_negatives:
            print(
                f"| {row.label} | {_figure(row.precision)} | {_figure(row.recall)} | "
                f"{row.false_negatives} |"
            )
    print(
        f"\nclean gold runs: {result.clean_episodes}, with any label: {result.clean_with_labels}; "
        f"fault episodes solved anyway (escape a round's diagnosis): {result.escaped}; "
        f"unscored labels: {result.unscored_labels or '–'}; verdict: {result.verdict}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=2))
    return 0 if result.meets_target else 1


if __name__ == "__main__":
    sys.exit(main())
