"""A controlled learning experiment: does targeting the diagnosed weaknesses help more than the
same training budget spent on untargeted tasks?

1. A base policy: the tiny Qwen policy, SFT-warmed on a shared base set of training tasks.
2. It is evaluated on fresh held-out arena tasks (explicit tier, seeds no training set uses);
   its failures are diagnosed and turned into expansion proposals (the arena's own code).
3. Targeted arm: the training tasks the "more tasks" proposals ask for (their tier, lengths,
   write steps and target tools), synthesized in the named environments.
   Control arm: as many tasks drawn at random from the environments' ordinary training tasks.
4. Both arms train from the base checkpoint with the same budget (SFT epochs, GRPO steps) and
   are evaluated on the same held-out tasks: success rate per category with Wilson 95% intervals.

    python benchmarks/learning_experiment.py --environments 6 --heldout 40 --seed 7
    python benchmarks/learning_experiment.py --model Qwen/Qwen3-0.6B ...   # GPU, real model

Prints a table and writes the figures to --out/learning_experiment.json. Reports what happens,
whichever way it goes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

from arena.diagnosis import EvaluatedEpisode, category_name, diagnose  # noqa: E402
from arena.proposal_params import MoreTasksParams  # noqa: E402
from arena.proposals import MORE_TASKS, propose_expansions  # noqa: E402
from aw_site.stats import wilson_interval  # noqa: E402
from benchmarks.starter_packages import starter_packages  # noqa: E402
from environments.runtime import SandboxPool, load_package  # noqa: E402
from tasks.gold_tools import gold_tools  # noqa: E402
from tasks.reward_breakdown import RewardBreakdown  # noqa: E402
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer  # noqa: E402
from training.grpo.config import TrainingConfig  # noqa: E402
from training.grpo.trainer import run_training  # noqa: E402
from training.policies import LocalHFPolicy  # noqa: E402
from training.policies.tiny_model import build_tiny_policy  # noqa: E402
from training.rollout import RolloutSettings  # noqa: E402
from training.rollout.evaluation import evaluate_policy  # noqa: E402


def synthesize(package, pool, tier: str, count: int, seed: int, **difficulty) -> list:
    with GraphTaskSynthesizer(package, pool, tier=tier) as synthesizer:
        return synthesizer.synthesize(count, Difficulty(**difficulty), seed=seed)


def evaluate(model_dir: str, tasks: list, packages: dict, pool, args) -> list:
    policy = LocalHFPolicy.from_pretrained(model_dir, max_new_tokens=args.max_new_tokens)
    _, trajectories = evaluate_policy(
        policy,
        tasks,
        packages,
        pool,
        concurrency=8,
        settings=RolloutSettings(step_budget=args.step_budget),
    )
    return trajectories


def signals(task, trajectory) -> dict[str, bool]:
    """What one episode shows: solved, and two weaker signs of learning that a policy too
    small to solve anything can still show (a well-formed call that ran; a needed tool used)."""
    calls = [s for s in trajectory.steps if s.tool_call is not None]
    needed = set(gold_tools(task))
    return {
        "success": trajectory.reward is not None and trajectory.reward.success,
        "valid_call": any(s.error_kind is None for s in calls),
        "needed_tool": any(s.error_kind is None and s.tool_call.name in needed for s in calls),
    }


def per_category(tasks: list, trajectories: list, packages: dict) -> dict[str, dict]:
    """Per category (and "all"): episodes, and for each signal its rate with a Wilson 95%
    interval."""
    cells: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for task, trajectory in zip(tasks, trajectories, strict=True):
        category = category_name(packages[task.environment].manifest.get("category", {}))
        seen = signals(task, trajectory)
        cells[category].append(seen)
        cells["all"].append(seen)
    table = {}
    for name, rows in sorted(cells.items()):
        entry: dict = {"episodes": len(rows)}
        for signal in rows[0]:
            hits = sum(row[signal] for row in rows)
            low, high = wilson_interval(hits, len(rows))
            rate = round(hits / len(rows), 4)
            entry[signal] = {
                "hits": hits,
                "rate": rate,
                "interval": [round(low, 4), round(high, 4)],
            }
        entry["success_rate"] = entry["success"]["rate"]
        entry["interval"] = entry["success"]["interval"]
        table[name] = entry
    return table


def targeted_tasks(proposals, packages: dict, pool, budget: int, seed: int) -> list:
    """The tasks the "more tasks" proposals ask for, in their environments, up to ``budget``."""
    chosen: list = []
    wanted = [p for p in proposals if p.kind == MORE_TASKS and p.environment in packages]
    for index, proposal in enumerate(wanted):
        params = MoreTasksParams.model_validate(proposal.params)
        share = max(1, budget // max(1, len(wanted)))
        candidates = synthesize(
            packages[proposal.environment],
            pool,
            "explicit",
            share * 3,
            seed + 101 * index,
            steps=min(params.longest, 6),
            writes=params.write_steps,
        )
        targets = set(params.tools)
        fitting = [t for t in candidates if not targets or targets & set(gold_tools(t))]
        chosen += fitting[:share]
    return chosen[:budget]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--packages", default="", help="Starter catalogue dir (default: build one).")
    add("--environments", type=int, default=6, help="Environments of the catalogue used.")
    add("--heldout", type=int, default=40, help="Held-out tasks per environment.")
    add("--base-tasks", type=int, default=8, help="Base SFT tasks per environment.")
    add("--budget", type=int, default=60, help="Training tasks per arm.")
    add("--sft-epochs", type=int, default=6, help="SFT epochs of each arm (and of the base).")
    add("--grpo-steps", type=int, default=4, help="GRPO steps of each arm after its SFT.")
    add("--step-budget", type=int, default=6, help="Turns per evaluation episode.")
    add("--max-new-tokens", type=int, default=96, help="Generation budget per turn.")
    add("--seed", type=int, default=7, help="Seed of synthesis, sampling and training.")
    add("--out", default="", help="Directory for learning_experiment.json (default: a temp dir).")
    parser.add_argument(
        "--model",
        default="",
        help="A pretrained checkpoint (hub id or directory) instead of the tiny policy; trains "
        "on the GPU when one is there.",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    import torch

    on_gpu = bool(args.model) and torch.cuda.is_available()
    out = Path(args.out or tempfile.mkdtemp(prefix="learning_"))
    paths = starter_packages(args.packages)[: args.environments]
    loaded = [load_package(p) for p in paths]
    packages = {p.name: p for p in loaded}
    with SandboxPool(workers=2) as pool:
        heldout, base, ordinary = [], [], []
        for index, package in enumerate(loaded):
            heldout += synthesize(package, pool, "explicit", args.heldout, 90_000 + index, steps=2)
            base += synthesize(package, pool, "explicit", args.base_tasks, 1_000 + index, steps=1)
            ordinary += synthesize(package, pool, "explicit", args.budget, 5_000 + index, steps=3)
        seen = {t.signature for t in base + ordinary}
        heldout = [t for t in heldout if t.signature not in seen]
        print(f"{len(heldout)} held-out tasks, {len(base)} base tasks", flush=True)

        def train(tasks: list, model_path: str | None, name: str, sft: int, steps: int) -> str:
            config = TrainingConfig(
                packages=[str(p) for p in paths],
                model_path=model_path,
                output_dir=str(out / name),
                seed=args.seed,
                use_cpu=not on_gpu,
                sft_epochs=sft,
                grpo_steps=steps,
                num_generations=4,
                per_device_train_batch_size=4,
                max_completion_length=192,
                eval_before_after=False,
                save_steps=10_000,
            )
            return run_training(config, tasks=tasks).final_checkpoint

        initial = args.model or out / "initial"
        if not args.model:
            build_tiny_policy(
                initial, [p.manifest for p in loaded], [t.to_dict() for t in base + ordinary]
            )
        base_dir = train(base, str(initial), "base", args.sft_epochs, 0)
        before = evaluate(base_dir, heldout, packages, pool, args)
        episodes = [
            EvaluatedEpisode(
                trajectory=trajectory,
                task=task,
                reward=trajectory.reward or RewardBreakdown.unscored(),
                environment=task.environment,
                category=packages[task.environment].manifest.get("category", {}),
                tool_kinds=packages[task.environment].manifest.get("tool_kinds", {}),
            )
            for task, trajectory in zip(heldout, before, strict=True)
        ]
        summary = diagnose(episodes, seed=args.seed)
        proposals = propose_expansions(summary)
        targeted = targeted_tasks(proposals, packages, pool, args.budget, args.seed)
        control = random.Random(args.seed).sample(ordinary, min(len(targeted), len(ordinary)))
        print(f"{len(proposals)} proposals; arms of {len(targeted)} tasks", flush=True)
        arms = {}
        for name, tasks in (("targeted", targeted), ("control", control)):
            trained = train(tasks, base_dir, name, args.sft_epochs, args.grpo_steps)
            arms[name] = per_category(
                heldout, evaluate(trained, heldout, packages, pool, args), packages
            )
    weak = sorted({category_name(c) for c in summary.to_dict().get("weakest_categories", [])})
    report = {
        "seed": args.seed,
        "environments": sorted(packages),
        "heldout_tasks": len(heldout),
        "arm_tasks": len(targeted),
        "proposals": [{"kind": p.kind, "environment": p.environment} for p in proposals],
        "weak_categories": weak,
        "before": per_category(heldout, before, packages),
        **arms,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"{'category':34} {'before':>16} {'targeted':>16} {'control':>16}")
    for category in report["before"]:
        cells = [report[arm].get(category, {}) for arm in ("before", "targeted", "control")]
        text = [
            f"{c.get('success_rate', 0):.2f} [{c['interval'][0]:.2f},{c['interval'][1]:.2f}]"
            if c
            else "-"
            for c in cells
        ]
        print(f"{category:34} {text[0]:>16} {text[1]:>16} {text[2]:>16}")
    print("\nall held-out episodes, rate [95% interval] per signal:")
    for signal in ("success", "valid_call", "needed_tool"):
        cells = [report[arm]["all"][signal] for arm in ("before", "targeted", "control")]
        text = [f"{c['rate']:.3f} [{c['interval'][0]:.3f},{c['interval'][1]:.3f}]" for c in cells]
        print(f"{signal:34} {text[0]:>20} {text[1]:>20} {text[2]:>20}")
    (out / "learning_experiment.json").write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps({k: report[k] for k in ("heldout_tasks", "arm_tasks", "seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
