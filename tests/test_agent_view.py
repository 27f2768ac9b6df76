"""One task rendered through every path the agent meets it on: evaluation rollouts, GRPO rows
and their tokens, SFT data, the dataset export and the HTTP episode API all agree with the one
agent view (``tasks.agent_view``)."""

from __future__ import annotations

import dataclasses

import pytest

from environments.registry import record_package
from environments.runtime import SandboxPool, load_package
from serving.episode_service import episode_service
from tasks.agent_view import TRUNCATION_MARKER, agent_view, describe_tool, render_tool_result
from tasks.export import task_record, trajectory_record
from tasks.records import record_tasks
from tests.support.gold_tasks import write_task
from tests.support.sample_package import build_sample_package
from training.grpo.dataset import build_rows
from training.grpo.sft import sft_conversations
from training.policies.tiny_model import build_tiny_policy, load_policy_dir
from training.rollout import GoldChainPolicy, run_episode
from training.rollout.agent_loop import package_manifest
from training.rollout.token_loop import ChatTokens

TOOLS = ["update_stock", "search_books", "get_book"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    path = build_sample_package(tmp_path_factory.mktemp("view"))
    package = load_package(path)
    with SandboxPool(workers=1) as pool:
        task = dataclasses.replace(write_task(pool, package), tools=TOOLS, signature="view-1")
        gold = run_episode(GoldChainPolicy([task]), task, package, pool=pool)
    yield path, package, task, gold


@pytest.mark.django_db
def test_every_path_renders_the_task_the_same_way(world, viewer_api, tmp_path):
    path, package, task, gold = world
    manifest = package_manifest(package)
    view = agent_view(task, manifest)
    opening, tools = view.messages(), view.tools
    assert [t["function"]["name"] for t in tools] == [
        "get_book",
        "search_books",
        "update_stock",
        "submit_answer",
    ]

    # Evaluation rollouts (and so SFT data, made from gold rollouts).
    assert gold.messages[:2] == opening and gold.tools == tools
    (conversation,) = sft_conversations([gold])
    assert conversation["messages"][:2] == opening and conversation["tools"] == tools
    # GRPO rows, and the tokens GRPO generates from equal what a local policy is prompted with.
    (row,) = build_rows([task], {"bookstore": manifest}, seed=0)
    assert row["prompt"] == opening
    _, tokenizer = load_policy_dir(build_tiny_policy(tmp_path / "tiny", [manifest], []))
    policy_prompt = tokenizer.apply_chat_template(
        opening, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
    )
    assert ChatTokens(tokenizer).prompt(view) == list(policy_prompt)
    # The dataset export: the task row and the trajectory row (tool results as the agent saw them).
    record = task_record(task, {"bookstore": manifest})
    assert record["messages"] == opening and record["tools"] == tools
    exported = trajectory_record(task, gold, {"bookstore": manifest})["messages"]
    seen = [m["content"] for m in gold.messages if m["role"] == "tool"]
    assert [m["content"] for m in exported if m["role"] == "tool"] == seen
    assert exported[: len(opening)] == opening
    # The HTTP episode API's suggested prompt.
    environment = record_package(path)
    try:
        (stored,) = record_tasks(environment, [task])
        body = viewer_api.post("/api/episodes/", {"task": stored.pk}, format="json").json()
        assert body["prompt"] == opening and body["tools"] == tools
    finally:
        episode_service().shutdown()


def test_enums_formats_and_the_truncation_marker_are_kept():
    schema = {
        "type": "function",
        "function": {
            "name": "set_status",
            "description": "Set an order's status.\nMore detail.",
            "parameters": {
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["open", "closed"]},
                    "when": {"type": "string", "format": "date"},
                    "ids": {"type": "array", "items": {"type": "integer"}},
                },
                "required": ["status"],
            },
        },
    }
    line = describe_tool(schema)
    assert line == (
        '- set_status(status: "open"|"closed", when?: string(date), ids?: array[integer]): '
        "Set an order's status."
    )
    long = render_tool_result(True, {"text": "x" * 100}, limit=20)
    assert long.startswith('{"text": "xxxxxxxxx') and long.endswith(
        TRUNCATION_MARKER.format(count=len('{"text": "' + "x" * 100 + '"}') - 20)
    )
    failed = render_tool_result(False, None, "no book 9", "not_found")
    assert failed == '{"error": "no book 9", "error_kind": "not_found"}'
