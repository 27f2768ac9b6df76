"""Everything downstream works on a released environment unchanged: MCP serving exports the
released tool names and schemas as released, rollouts (the gold chain and a scripted policy)
score through the one reward, the dataset export carries imported tasks without showing the
agent their answers or success criteria, and a tiny model takes an SFT step on their gold runs
and, in its own test, a GRPO step on them."""

from __future__ import annotations

import json
import socket
import threading
import time

import anyio
import pytest
import uvicorn
from datasets import load_dataset
from mcp import Client

from environments.agent_world.pipeline import run_agent_world_pipeline
from environments.builder.request import BuildRequest
from environments.package import load_package
from environments.runtime import SandboxPool
from serving.mcp_server import build_http_app
from tasks.export import export_tasks, export_trajectories, task_features
from tasks.released_questions import released_questions, replay_question
from tasks.reward import score
from tasks.service import synthesize_specs
from tasks.synthesis.replay import replay_gold
from tests.support.agent_world_release import LIBRARY, write_release
from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply
from training.policies import OpenAICompatiblePolicy
from training.rollout import GoldChainPolicy, run_episode


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return write_release(tmp_path_factory.mktemp("aw-downstream") / "release")


@pytest.fixture(scope="module")
def library(release, tmp_path_factory):
    root = tmp_path_factory.mktemp("aw-downstream-out")
    request = BuildRequest.for_agent_world(str(release), LIBRARY)
    outcome = run_agent_world_pipeline(request, root=root / "out", workdir=root / "work")
    return load_package(outcome.path)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as own:
        yield own


@pytest.fixture(scope="module")
def question(library, pool):
    """The released question that reproduces, as the import makes it a task."""
    questions, _ = released_questions(library)
    return replay_question(pool, library, questions[0], 0)


@pytest.fixture(scope="module")
def ours(library, pool):
    """One of our own graph tasks on the released environment."""
    return synthesize_specs(library, pool, kind="graph", count=1, max_walk_length=2).specs[0]


def serve(app):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    return server, thread, f"http://127.0.0.1:{port}/mcp"


def test_mcp_serves_the_released_names_and_schemas_and_scores_the_question(
    release, library, question
):
    checkpoint = json.loads((release / f"{LIBRARY}_step4_checkpoint.json").read_text("utf-8"))
    released = {  # the verified ones, read from the checkpoint as released
        tool["name"]: tool["parameters"]
        for tool in checkpoint["data"]["ToolDesignAgent"]["tool_schemas"]
        if tool["name"] in library.tool_names
    }
    assert len(released) == 6
    bare = serve(build_http_app(str(library.path)))
    bound = serve(build_http_app(str(library.path), task=question.to_dict()))

    async def environment_session():
        async with Client(bare[2], mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == set(released)
            for name, parameters in released.items():
                assert listed[name].input_schema == parameters, name
            book = await client.call_tool("get_book", {"book_id": "bk_002", "shelf": "ignored"})
            assert book.structured_content["book"]["author"] == "小津 安二郎"  # **_extra

    async def task_session():
        async with Client(bound[2], mode="legacy") as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert {"list_books", "get_book", "submit_answer"} <= set(listed)
            for name in set(listed) - {"submit_answer"}:
                assert listed[name].input_schema == released[name], name
            instructions = client.instructions or ""
            assert question.instruction in instructions
            for secret in ("says 2 copies", "bk_001", question.expected_state_hash):
                assert secret not in instructions  # no criteria, gold chain or state
            last = None
            for step in question.gold_chain:
                called = await client.call_tool(step["tool"], step["arguments"])
                assert not called.is_error
                last = called.structured_content
            assert last["book"]["title"] == "Cien años de soledad"
            result = await client.call_tool("submit_answer", {"answer": last})
            assert result.structured_content["success"] is True, result.structured_content

    try:
        anyio.run(environment_session)
        anyio.run(task_session)
    finally:
        for server, thread, _ in (bare, bound):
            server.should_exit = True
            thread.join(timeout=10)


def test_rollouts_score_the_gold_chain_and_a_scripted_policy(library, pool, question, ours):
    for task in (question, ours):
        trajectory = run_episode(GoldChainPolicy([task]), task, library, pool)
        breakdown = score(task, trajectory)
        assert breakdown.success and breakdown.total == 1.0, (task.instruction, breakdown)

    calls = [tool_call_reply(s["tool"], s["arguments"]) for s in question.gold_chain]
    script = [*calls, text_reply(json.dumps({"answer": question.reference_answer}))]
    with ScriptedOpenAIServer(lambda body: script[len(body["messages"]) // 2 - 1]) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, model="scripted")
        trajectory = run_episode(policy, question, library, pool)
    assert [s.tool_name for s in trajectory.steps if s.tool_call] == ["list_books", "get_book"]
    assert score(question, trajectory).success


def test_the_export_carries_imported_tasks_without_showing_their_answers(
    tmp_path, library, pool, question, ours
):
    paths = export_tasks([question, ours], [library], tmp_path)
    rows = load_dataset(
        "json", data_files=str(paths["jsonl"]), split="train", features=task_features()
    )
    row = rows[0]
    assert row["reference_answer"] == question.reference_answer
    assert [c["tool"] for c in row["gold_chain"]] == ["list_books", "get_book"]
    shown = json.dumps(row["messages"] + row["tools"], ensure_ascii=False)
    assert json.dumps(question.instruction, ensure_ascii=False)[1:-1] in shown
    for secret in ("says 2 copies", "names Cien", "bk_001", '"copies": 2'):
        assert secret not in shown, secret
    assert {t["function"]["name"] for t in row["tools"]} >= {"list_books", "get_book"}
    gold = replay_gold(question, pool, library)
    pairs = [(question, gold, score(question, gold))]
    trajectories = export_trajectories(pairs, [library], tmp_path)
    saved = json.loads(trajectories["jsonl"].read_text("utf-8").splitlines()[0])
    assert saved["reward"] == 1.0
    assert "García Márquez" in json.dumps(saved["messages"], ensure_ascii=False)  # as returned


@pytest.mark.timeout(240)
def test_a_tiny_model_grpo_step_trains_on_imported_tasks(tmp_path, library, question, ours):
    from tests.support.scripted_generator import ScriptedGenerator
    from training.grpo.config import TrainingConfig
    from training.grpo.trainer import run_training

    generator = ScriptedGenerator(None, [question, ours], wrong_rate=0.5, seed=1)
    config = TrainingConfig(
        packages=[str(library.path)],
        output_dir=str(tmp_path / "run"),
        use_cpu=True,
        sft_epochs=0,  # GRPO only: the warm-up doubles the time
        grpo_steps=1,
        num_generations=2,
        per_device_train_batch_size=2,
        max_completion_length=128,
        save_steps=10,
        eval_before_after=False,
    )
    result = run_training(config, tasks=[question, ours], generator_factory=generator)
    assert result.gold["success_rate"] == 1.0  # both gold chains replay to full marks
    assert result.grpo["steps"] == 1 and result.grpo["environments"] == [library.name]


@pytest.mark.timeout(120)
def test_a_tiny_model_sft_step_trains_on_the_gold_runs_of_imported_tasks(
    tmp_path, library, question, ours
):
    import torch
    from transformers import AutoModelForCausalLM

    from training.grpo.config import TrainingConfig
    from training.grpo.trainer import run_training

    config = TrainingConfig(
        packages=[str(library.path)],
        output_dir=str(tmp_path / "run"),
        use_cpu=True,
        sft_epochs=1,
        sft_batch_size=2,
        grpo_steps=0,  # SFT only: the GRPO step has its own test
        eval_before_after=False,
    )
    result = run_training(config, tasks=[question, ours])
    assert result.gold["success_rate"] == 1.0
    sft = result.sft
    assert (sft["examples"], sft["steps"], sft["dropped"], sft["skipped_steps"]) == (2, 1, 0, 0)
    assert sft["loss_first"] is not None and sft["loss_first"] > 0
    assert result.final_checkpoint == str(tmp_path / "run" / "sft") and not result.grpo
    initial = AutoModelForCausalLM.from_pretrained(tmp_path / "run" / "initial")
    trained = AutoModelForCausalLM.from_pretrained(result.final_checkpoint)
    assert all(torch.isfinite(p).all() for p in trained.parameters())
    assert not torch.equal(  # the step moved the weights
        trained.model.layers[0].self_attn.q_proj.weight,
        initial.model.layers[0].self_attn.q_proj.weight,
    )
