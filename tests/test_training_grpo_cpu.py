"""Multi-environment GRPO on the CPU: tiny policy, SFT warm-up, GRPO steps, checkpoints, metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM
from transformers.utils import get_json_schema

from environments.runtime import SandboxPool, load_package
from tests.support.gold_tasks import read_task, write_task
from tests.support.sample_package import build_sample_package
from training.grpo.config import TrainingConfig
from training.grpo.dataset import build_rows
from training.grpo.environments import ToolCallFailed, close_all, environment_class
from training.grpo.reward import agent_world_reward
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
        "submit_answer",
    }
    submit = get_json_schema(cls.submit_answer)["function"]
    assert submit["parameters"]["required"] == ["answer"]
    assert submit["parameters"]["properties"]["answer"]["type"] == "string"
    assert submit["description"].startswith("Submit your final answer")


def test_submit_answer_is_recorded_and_scored(tmp_path):
    package = load_package(build_sample_package(tmp_path))
    with SandboxPool(workers=1) as pool:
        read, write = read_task(pool, package), write_task(pool, package)
        tasks = {read.task_id: read, write.task_id: write}
        cls = environment_class("bookstore", package, pool=pool, tasks=tasks)
        try:
            env = cls()
            env.reset(task_id=read.task_id)
            env.get_book(book_id=1)
            with pytest.raises(ToolCallFailed, match="invalid_arguments: 2 candidates"):
                env.submit_answer('["Dune", "Solaris"]')  # a hedge is refused, not recorded
            assert env._submission is None
            assert env.submit_answer("Dune") == "Answer recorded; the task is finished."
            assert env._submission == {"answer": "Dune"}  # plain text stays text
            env.submit_answer('{"answer": "Dune"}')
            assert env._submission == {"answer": "Dune"}
            done = [{"role": "assistant", "content": "All done."}]
            assert agent_world_reward([done], [env]) == [1.0]
            trajectory = env._trajectory
            assert trajectory.final_answer == '{"answer": "Dune"}'
            assert trajectory.verification is None and trajectory.reward["success"] is True
            assert [s.tool_call["name"] for s in trajectory.steps if s.tool_call] == ["get_book"]

            env.reset(task_id=write.task_id)  # a new rollout forgets the submission
            assert env._submission is None
            env.get_book(book_id=4)
            env.update_stock(book_id=4, stock=0)
            env.submit_answer("11.25")
            assert env._submission == {"answer": 11.25}  # JSON text is parsed
            assert agent_world_reward([done], [env]) == [1.0]

            env.reset(task_id=write.task_id)  # no submission: the final text is the answer
            env.get_book(book_id=4)
            env.update_stock(book_id=4, stock=0)
            final = [{"role": "assistant", "content": '```json\n{"answer": 11.25}\n```'}]
            assert agent_world_reward([final], [env]) == [1.0]
        finally:
            close_all([cls])


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
