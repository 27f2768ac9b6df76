"""A task's own tool subset (gold tools + distractors) is what its agent sees, everywhere.

The task sells out Solaris (gold chain ``get_book``, ``update_stock``) and offers
``search_books`` as a distractor; ``place_order`` and ``list_books_by_author`` are tools of the
bookstore it does not offer. Each interface is checked for showing exactly the subset (in
manifest order) plus ``submit_answer``, and for refusing a call to ``place_order`` without
running it: the rollout loop, the GRPO prompt and environment class, the HTTP episode API, an
MCP session bound to the stored task, and the dataset export.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from contextlib import contextmanager

import anyio
import pytest
import uvicorn
from mcp import Client

from environments.registry import record_package
from environments.runtime import SandboxPool, load_package
from serving.episode_service import episode_service
from serving.management.commands.serve_mcp import resolve_task
from serving.mcp_server import build_http_app
from tasks.agent_view import agent_view
from tasks.export import export_tasks, load_tasks
from tasks.records import record_tasks, spec_from_task
from tasks.reward import score
from tasks.tool_subset import offered_tools
from tests.support.gold_tasks import WRITE_CHAIN, WRITE_CONTRACT, write_task
from tests.support.openai_server import ScriptedOpenAIServer, tool_call_reply
from tests.support.sample_package import TOOLS, build_sample_package
from tests.support.scripted_generator import ScriptedGenerator
from training.grpo.dataset import build_rows
from training.policies import OpenAICompatiblePolicy
from training.policies.tiny_model import build_tiny_policy, load_policy_dir
from training.policies.tool_call_parser import render_tool_call
from training.rollout import run_episode
from training.rollout.agent_loop import RolloutSettings
from training.rollout.token_loop import ChatTokens, TokenBudget, close_episode, play, start_episode

DISTRACTOR = "search_books"
NOT_OFFERED = "place_order"
# As synthesis stores it: shuffled. Offered in manifest order, submit_answer last.
TASK_TOOLS = ["update_stock", DISTRACTOR, "get_book"]
OFFERED = ["get_book", DISTRACTOR, "update_stock", "submit_answer"]
ORDER = {"book_id": 4, "quantity": 1, "customer": "Ada"}


def names(tools) -> list[str]:
    return [t["function"]["name"] if "function" in t else t.name for t in tools]


@pytest.fixture(scope="module")
def package_path(tmp_path_factory):
    return build_sample_package(tmp_path_factory.mktemp("subset"))


@pytest.fixture(scope="module")
def package(package_path):
    return load_package(package_path)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def task(pool, package):
    gold = write_task(pool, package)
    return dataclasses.replace(gold, tools=TASK_TOOLS, signature="subset-sell-out-solaris")


def test_the_subset_is_a_strict_one_with_a_distractor(task):
    every = names(TOOLS)
    assert set(TASK_TOOLS) < set(every) and NOT_OFFERED in every
    assert DISTRACTOR not in {step["tool"] for step in task.gold_chain}
    offered = offered_tools(task, TOOLS)
    assert names(offered) == OFFERED
    assert offered[-1] == WRITE_CONTRACT.tool_schema()
    # An older task with no subset is offered every tool of the environment.
    older = dataclasses.replace(task, tools=[])
    assert names(offered_tools(older, TOOLS)) == [*every, "submit_answer"]


def test_rollout_loop_requests_and_prompt_carry_the_subset(task, package, pool):
    script = [
        tool_call_reply(NOT_OFFERED, ORDER),  # not offered: refused, never run
        tool_call_reply(DISTRACTOR, {"title_contains": "Sol"}),  # the distractor works
        *(tool_call_reply(c["tool"], c["arguments"]) for c in WRITE_CHAIN),
        tool_call_reply("submit_answer", {"answer": 11.25}),
    ]
    with ScriptedOpenAIServer(lambda body: script[len(server.requests) - 1]) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, model="scripted-model")
        trajectory = run_episode(policy, task, package, pool)

    assert len(server.requests) == len(script)
    for request in server.requests:
        assert names(request["tools"]) == OFFERED
    system = server.requests[0]["messages"][0]["content"]
    listed = [line[2:].split("(")[0] for line in system.splitlines() if line.startswith("- ")]
    assert listed == OFFERED[:-1]  # the same subset; submit_answer is in the rules
    assert names(trajectory.tools) == OFFERED

    refused = trajectory.steps[0]
    assert refused.tool_call.name == NOT_OFFERED and refused.error_kind == "unknown_tool"
    assert refused.error == "tool 'place_order' is not offered in this task"
    feedback = server.requests[1]["messages"][-1]
    assert feedback["role"] == "tool" and "not offered in this task" in feedback["content"]
    assert trajectory.steps[1].tool_result[0]["title"] == "Solaris"
    assert "purchase" not in {t for t, d in trajectory.state_diff.items() if d.get("added")}
    assert trajectory.final_state_hash == task.expected_state_hash  # place_order never ran
    assert score(task, trajectory).success


def test_grpo_prompt_and_rollouts_carry_the_subset(task, package, pool, tmp_path):
    """The GRPO row's prompt, the chat template the model reads and the calls its rollouts
    may run are the task's subset; a call to another tool is refused without running."""
    manifests = {"bookstore": package.manifest}
    rows = {r["task_id"]: r for r in build_rows([task], manifests, seed=0)}
    system = rows[task.task_id]["prompt"][0]["content"]
    listed = [line[2:].split("(")[0] for line in system.splitlines() if line.startswith("- ")]
    assert listed == OFFERED[:-1]

    path = build_tiny_policy(tmp_path / "tiny", [package.manifest], [task.to_dict()])
    _, tokenizer = load_policy_dir(path)
    chat = ChatTokens(tokenizer)
    view = agent_view(task, package.manifest)
    template = chat.decode(chat.prompt(view))
    assert f'"name": "{DISTRACTOR}"' in template and f'"name": "{NOT_OFFERED}"' not in template
    generator = ScriptedGenerator(tokenizer, [task], wrong_rate=0.0)
    generator.overrides[task.instruction] = [
        render_tool_call(NOT_OFFERED, ORDER),
        *[render_tool_call(c["tool"], c["arguments"]) for c in WRITE_CHAIN],
        '{"answer": 11.25}',
    ]
    budget = TokenBudget(max_completion_tokens=512)
    state = start_episode(task, view, package, pool, chat, budget)
    play([state], generator, chat, RolloutSettings(), budget)
    trajectory = close_episode(state)
    steps = trajectory.steps
    assert steps[0].error_kind == "unknown_tool" and steps[0].tool_call.name == NOT_OFFERED
    assert trajectory.final_state_hash == task.expected_state_hash  # the order was never placed
    assert score(task, trajectory).success


@pytest.mark.django_db
def test_episode_api_offers_the_subset_and_refuses_other_tools(viewer_api, task, tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    try:
        (stored,) = record_tasks(environment, [task])
        assert spec_from_task(stored).tools == TASK_TOOLS
        created = viewer_api.post("/api/episodes/", {"task": stored.pk}, format="json")
        assert created.status_code == 201, created.json()
        body = created.json()
        assert names(body["tools"]) == OFFERED
        key = body["episode"]
        listed = viewer_api.get(f"/api/episodes/{key}/tools/").json()["tools"]
        assert listed == body["tools"]

        def call(tool, arguments):
            payload = {"tool": tool, "arguments": arguments}
            return viewer_api.post(f"/api/episodes/{key}/call/", payload, format="json").json()

        refused = call(NOT_OFFERED, ORDER)
        assert refused["ok"] is False and refused["error_kind"] == "unknown_tool"
        assert refused["error"] == "tool 'place_order' is not offered in this task"
        assert call(DISTRACTOR, {"title_contains": "Sol"})["ok"] is True
        diff = viewer_api.get(f"/api/episodes/{key}/diff/").json()["diff"]
        assert not diff.get("purchase", {}).get("added")  # never run in the sandbox

        plain = viewer_api.post(
            "/api/episodes/", {"environment": environment.pk}, format="json"
        ).json()
        assert names(plain["tools"]) == names(TOOLS)  # environment episodes: every tool
        placed = viewer_api.post(
            f"/api/episodes/{plain['episode']}/call/",
            {"tool": NOT_OFFERED, "arguments": ORDER},
            format="json",
        ).json()
        assert placed["ok"] is True
    finally:
        episode_service().shutdown()


@contextmanager
def mcp_http(package_path, spec):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = build_http_app(str(package_path), task=spec)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.django_db
def test_mcp_session_bound_to_the_task_lists_the_subset(task, tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    (stored,) = record_tasks(environment, [task])
    spec = resolve_task(environment, stored.pk)  # what `serve_mcp ENV --task ID` serves

    async def session(url):
        async with Client(url, mode="legacy") as client:
            listed = (await client.list_tools()).tools
            assert names(listed) == OFFERED
            refused = await client.call_tool(NOT_OFFERED, ORDER)
            assert refused.is_error
            assert refused.content[0].text == (
                "unknown_tool: tool 'place_order' is not offered in this task"
            )
            found = await client.call_tool(DISTRACTOR, {"title_contains": "Sol"})
            assert not found.is_error
            book = await client.call_tool("get_book", {"book_id": 4})
            assert book.structured_content["stock"] == 2  # the order was never placed

    with mcp_http(environment.package_path, spec) as url:
        anyio.run(session, url)


def test_export_rows_carry_the_subset(task, package_path, tmp_path):
    paths = export_tasks([task], [package_path], tmp_path)
    [row] = list(load_tasks(paths["jsonl"]))
    assert names(row["tools"]) == OFFERED
    assert row["tools"] == offered_tools(task, TOOLS)
    lines = paths["jsonl"].read_text().splitlines()
    assert names(json.loads(lines[0])["tools"]) == OFFERED
