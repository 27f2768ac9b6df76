"""Multi-environment GRPO on the CPU: tiny policy, SFT warm-up, GRPO steps, checkpoints, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM
from transformers.utils import get_json_schema

from environments.runtime import load_package
from tests.support.sample_package import build_sample_package
from training.grpo.config import TrainingConfig
from training.grpo.dataset import build_rows
from training.grpo.environments import environment_class
from training.grpo.trainer import run_training


def second_environment(root: Path) -> Path:
    """The bookstore under another name and category, so the run mixes two environments."""
    path = build_sample_package(root, name="library")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["category"] = {"primary": "Education", "secondary": "Libraries", "tertiary": "Books"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path


def test_environment_class_exposes_the_package_tools_with_their_schema(tmp_path):
    package = load_package(build_sample_package(tmp_path))
    cls = environment_class("bookstore", package, pool=None, tasks={})
    schema = get_json_schema(cls.place_order)["function"]
    assert schema["name"] == "place_order"
    assert schema["description"] == "Buy copies of a book."
    assert schema["parameters"]["required"] == ["book_id", "quantity", "customer"]
    assert schema["parameters"]["properties"]["book_id"]["type"] == "integer"
    search = get_json_schema(cls.search_books)["function"]["parameters"]
    assert search["properties"]["max_price"]["type"] == "number"
    assert "required" not in search or search["required"] == []
    public = {n for n in dir(cls) if not n.startswith("_")}
    assert public == {
        "reset",
        "get_book",
        "search_books",
        "list_books_by_author",
        "place_order",
        "update_stock",
    }


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
        max_steps=2,
        num_generations=2,
        per_device_train_batch_size=4,
        max_completion_length=48,
        save_steps=1,
        eval_step_budget=1,
        eval_max_new_tokens=16,
    )
    metrics, checkpoints = [], []
    result = run_training(
        config,
        on_metrics=lambda step, m: metrics.append((step, m)),
        on_checkpoint=checkpoints.append,
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
    phases = [m["phase"] for _, m in metrics]
    assert phases[:4] == ["gold", "eval_before", "sft", "eval_after_sft"]
    assert phases[-1] == "eval_after"
    assert result.eval_before["episodes"] == result.eval_after["episodes"] == 6
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == len(metrics)
    assert json.loads((tmp_path / "run" / "result.json").read_text())["final_checkpoint"]
