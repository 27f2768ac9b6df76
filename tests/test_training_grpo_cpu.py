"""Multi-environment GRPO on the CPU: tiny policy, SFT warm-up, GRPO steps, checkpoints, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from environments.runtime import SandboxPool, load_package
from tasks.agent_view import answer_text
from tests.support.gold_tasks import read_task, write_task
from tests.support.sample_package import build_sample_package
from tests.support.scripted_generator import ScriptedGenerator
from training.grpo.config import TrainingConfig
from training.grpo.dataset import build_rows
from training.grpo.trainer import run_training


def second_environment(root: Path) -> Path:
    """The bookstore under another name and category, so the run mixes two environments."""
    path = build_sample_package(root, name="library")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["category"] = {"primary": "Education", "secondary": "Libraries", "tertiary": "Books"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_dataset_alternates_categories():
    manifests = {
        "bookstore": {"name": "bookstore", "category": {"primary": "Shopping"}},
        "library": {"name": "library", "category": {"primary": "Education"}},
    }
    tasks = [
        {"task_id": f"{env}-{i}", "environment": env, "instruction": f"q{i}"}
        for env in ("bookstore", "library")
        for i in range(3)
    ]
    rows = build_rows(tasks, manifests, seed=1)
    assert [r["category"] for r in rows] == ["Education", "Shopping"] * 3
    assert rows[0]["prompt"][1] == {"role": "user", "content": rows[0]["prompt"][1]["content"]}


@pytest.mark.timeout(240)
def test_sft_then_grpo_on_cpu_writes_checkpoints_and_metrics(tmp_path):
    packages = [build_sample_package(tmp_path / "a"), second_environment(tmp_path / "b")]
    config = TrainingConfig(
        packages=[str(p) for p in packages],
        output_dir=str(tmp_path / "run"),
        tasks_per_environment=3,
        use_cpu=True,
        sft_epochs=2,
        grpo_steps=2,
        num_generations=2,
        per_device_train_batch_size=4,
        max_completion_length=48,
        save_steps=1,
        eval_step_budget=1,
        eval_max_new_tokens=16,
    )
    with SandboxPool(workers=1) as pool:  # held-out tasks, not among the synthesized ones
        bookstore = load_package(packages[0])
        held_out = [read_task(pool, bookstore), write_task(pool, bookstore)]
    metrics, checkpoints = [], []
    result = run_training(
        config,
        on_metrics=lambda step, m: metrics.append((step, m)),
        on_checkpoint=checkpoints.append,
        eval_tasks=held_out,
    )

    assert result.gold["success_rate"] == 1.0  # gold chains replay to full marks
    assert result.grpo["environments"] == ["bookstore", "library"]
    assert result.grpo["steps"] == 2
    assert result.sft["steps"] >= 2 and result.sft["loss_last"] < result.sft["loss_first"]
    assert checkpoints == result.checkpoints
    assert Path(checkpoints[0]).name == "sft"
    assert {Path(c).name for c in checkpoints} >= {"checkpoint-1", "checkpoint-2", "final"}
    final = AutoModelForCausalLM.from_pretrained(result.final_checkpoint)
    assert final.config.hidden_size == 64

    grpo = [m for _, m in metrics if m["phase"] == "grpo" and "loss" in m]
    assert len(grpo) == 2
    for record in grpo:
        assert {"reward_mean", "success_rate", "kl", "loss"} <= set(record)
        assert 0.0 <= record["reward_mean"] <= 1.0
    assert any("tokens_per_s" in record for record in grpo)
    # The warm-up reports each step while it runs (progress and the SFT loss curve).
    steps = [(step, m) for step, m in metrics if m["phase"] == "sft_step"]
    assert [step for step, _ in steps] == list(range(1, result.sft["steps"] + 1))
    assert all(m["steps_total"] == result.sft["steps"] and m["loss"] > 0 for _, m in steps)
    phases = [m["phase"] for _, m in metrics if m["phase"] != "sft_step"]
    assert phases[:4] == ["gold", "eval_before", "sft", "eval_after_sft"]
    assert phases[-1] == "eval_after"
    assert result.eval_before["episodes"] == result.eval_after["episodes"] == 2
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == len(metrics)
    assert json.loads((tmp_path / "run" / "result.json").read_text())["final_checkpoint"]


@pytest.mark.timeout(240)
def test_grpo_rollouts_call_tools_and_drop_tasks_without_signal(tmp_path):
    """GRPO through our agent loop with a scripted policy that calls tools: rewards vary within
    a group, tool calls are counted, and a task whose group always scores the same is replaced
    by a learnable one from the next step on."""
    package_dir = build_sample_package(tmp_path / "a")
    package = load_package(package_dir)
    with SandboxPool(workers=1) as pool:
        read, write = read_task(pool, package), write_task(pool, package)
    generator = ScriptedGenerator(None, [read, write], wrong_rate=0.5, seed=3)
    generator.overrides[read.instruction] = [answer_text("not the title")]  # never solved
    config = TrainingConfig(
        packages=[str(package_dir)],
        output_dir=str(tmp_path / "run"),
        use_cpu=True,
        sft_epochs=0,  # GRPO only (the default warms up with SFT first)
        grpo_steps=4,
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=256,
        save_steps=10,
        eval_before_after=False,
    )
    metrics = []
    result = run_training(
        config,
        tasks=[read, write],
        on_metrics=lambda step, m: metrics.append(m),
        generator_factory=generator,
    )
    grpo = [m for m in metrics if m["phase"] == "grpo" and "loss" in m]
    assert len(grpo) == 4
    # The write task calls two tools a rollout; the never-solved one none (its one step).
    assert sorted(m["tools/call_frequency"] for m in grpo)[1:] == [2.0, 2.0, 2.0]
    assert any(m["frac_reward_zero_std"] < 1.0 for m in grpo)  # some group had signal
    assert any(m["reward_std"] > 0 for m in grpo)
    assert result.grpo["unlearnable_tasks"] >= 1  # the never-solved task was marked ...
    assert result.grpo["substituted_groups"] >= 1  # ... and replaced when drawn again
    assert grpo[-1]["learnability/unlearnable_tasks"] >= 1
    assert set(generator.batches) <= {4, 3, 2, 1} and max(generator.batches) == 4


def test_cli_tasks_include_programmatic_tasks_when_asked(tmp_path):
    """Without a tasks file the trainer synthesises its own; programmatic tasks join the graph
    tasks when configured, and the chain-length cap still applies to their gold runs."""
    from training.grpo.trainer import load_tasks

    package = load_package(build_sample_package(tmp_path / "pkg"))
    packages = {package.name: package}
    with SandboxPool(workers=1) as pool:
        both = load_tasks(
            TrainingConfig(
                packages=[str(package.path)],
                tasks_per_environment=3,
                programmatic_tasks_per_environment=2,
                max_chain_length=40,
            ),
            packages,
            pool,
        )
        graph_only = load_tasks(
            TrainingConfig(packages=[str(package.path)], tasks_per_environment=3), packages, pool
        )
    kinds = [t.kind for t in both]
    assert kinds.count("programmatic") == 2 and "graph" in kinds, kinds
    assert {t.kind for t in graph_only} == {"graph"}
    assert all(len(t.gold_chain) <= 1 for t in graph_only)
