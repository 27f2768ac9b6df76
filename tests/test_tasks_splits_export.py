"""Splits never share a task; exports round-trip through Hugging Face datasets."""

from __future__ import annotations

import json

import pytest
from datasets import load_dataset

from environments.runtime import SandboxPool, load_package
from tasks.export import (
    export_tasks,
    export_trajectories,
    load_tasks,
    task_features,
    trajectory_features,
)
from tasks.reward import score
from tasks.splits import SplitPolicy, arena_round_tasks, round_seed
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tasks.synthesis.replay import replay_gold
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def tasks(pool, bookstore):
    with GraphTaskSynthesizer(bookstore, pool, llm=None) as synthesizer:
        graph = synthesizer.synthesize(12, Difficulty(steps=3, writes=1), seed=0)
    programmatic = ProgrammaticTaskSynthesizer(bookstore, pool, llm=None).synthesize(2, seed=0)
    return graph + programmatic


def test_splits_are_deterministic_and_disjoint(tasks):
    policy = SplitPolicy(train=0.5, arena=0.25, heldout=0.25)
    groups = policy.assign(tasks + tasks)  # a task seen twice is assigned once
    signatures = [{t.signature for t in group} for group in groups.values()]
    assert sum(len(s) for s in signatures) == len({t.signature for t in tasks})
    assert not (signatures[0] & signatures[1] or signatures[0] & signatures[2])
    assert not signatures[1] & signatures[2]
    assert all(policy.split_of(t.signature) == t.metadata["split"] for t in tasks)
    with pytest.raises(ValueError):
        SplitPolicy(train=0.9, arena=0.2, heldout=0.1)


def test_arena_rounds_get_fresh_tasks_from_round_seeds(pool, bookstore):
    assert round_seed(1) == round_seed(1) and round_seed(1) != round_seed(2)
    policy = SplitPolicy(train=0.5, arena=0.5, heldout=0.0)
    with GraphTaskSynthesizer(bookstore, pool, llm=None) as synthesizer:

        def synthesize(seed):
            synthesizer.seen.clear()  # the round filter, not the synthesizer, dedups here
            return synthesizer.synthesize(6, Difficulty(steps=3), seed=seed)

        first = arena_round_tasks(synthesize, 1, 3, policy=policy)
        used = {t.signature for t in first.tasks}
        second = arena_round_tasks(synthesize, 2, 3, policy=policy, exclude=used)
    assert len(first.tasks) == 3 and first.seed == round_seed(1)
    assert all(policy.split_of(t.signature) == "arena" for t in first.tasks + second.tasks)
    assert not used & {t.signature for t in second.tasks}
    assert all(t.metadata["round"] == 2 for t in second.tasks)


def test_task_export_round_trips(tmp_path, tasks, bookstore):
    paths = export_tasks(tasks, [bookstore], tmp_path)
    for kind, path in paths.items():
        loader = "parquet" if kind == "parquet" else "json"
        loaded = load_dataset(loader, data_files=str(path), split="train", features=task_features())
        assert len(loaded) == len(tasks)
        for row, task in zip(loaded, tasks, strict=True):
            assert row["task_id"] == task.task_id
            assert [m["role"] for m in row["messages"]] == ["system", "user"]
            assert row["messages"][1]["content"] == task.instruction
            assert row["reference_answer"] == task.reference_answer
            assert row["expected_diff"] == task.expected_diff
            assert {t["function"]["name"] for t in row["tools"]} == set(task.tools) | {
                "submit_answer"
            }
            assert row["answer_contract"] == task.answer_contract
            assert row["audit"]["passed"] is True
            assert [c["name"] for c in row["audit"]["checks"]] == [
                c["name"] for c in task.audit["checks"]
            ]
            assert row["gold_chain"] == [
                {"tool": c["tool"], "arguments": c["arguments"]} for c in task.gold_chain
            ]
    assert load_dataset("parquet", data_files=str(paths["parquet"]), split="train")[0]["tools"]
    assert len(load_tasks(paths["jsonl"])) == len(tasks)


def test_trajectory_export_uses_openai_tool_call_messages(tmp_path, tasks, pool, bookstore):
    pairs = []
    for task in tasks[:3]:
        trajectory = replay_gold(task, pool, bookstore)
        pairs.append((task, trajectory, score(task, trajectory)))
    paths = export_trajectories(pairs, [bookstore], tmp_path)
    loaded = load_dataset(
        "json", data_files=str(paths["jsonl"]), split="train", features=trajectory_features()
    )
    row = loaded[0]
    calls = [m for m in row["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    results = [m for m in row["messages"] if m["role"] == "tool"]
    assert len(calls) == len(results) == len(tasks[0].gold_chain)
    assert calls[0]["tool_calls"][0]["function"]["name"] == tasks[0].gold_chain[0]["tool"]
    assert (
        json.loads(calls[0]["tool_calls"][0]["function"]["arguments"])
        == (tasks[0].gold_chain[0]["arguments"])
    )
    assert results[0]["tool_call_id"] == calls[0]["tool_calls"][0]["id"]
    assert row["reward"] == 1.0 and row["reward_breakdown"]["success"] is True
    parquet = load_dataset("parquet", data_files=str(paths["parquet"]), split="train")
    assert parquet[2]["messages"] == loaded[2]["messages"]
