"""The agent loop against a real OpenAI-compatible server and a real sandbox episode."""

from __future__ import annotations

import json

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.reward import score
from tasks.synthesis.task_spec import TaskSpec
from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply
from tests.support.sample_package import build_sample_package
from training.policies import OpenAICompatiblePolicy
from training.rollout import GoldChainPolicy, RolloutSettings, rollout_many, run_episode

TITLES = {1: "Dune", 2: "Dune Messiah", 3: "The Left Hand of Darkness", 4: "Solaris"}


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("env")))


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2) as pool:
        yield pool


@pytest.fixture(scope="module")
def initial_hash(package, pool):
    episode = pool.start_episode(package)
    try:
        return episode.state_hash()
    finally:
        episode.close()


def title_task(book_id: int, initial_hash: str) -> TaskSpec:
    return TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction=f"What is the title of the book with id {book_id}?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": book_id}}],
        reference_answer=TITLES[book_id],
        expected_state_hash=initial_hash,
        signature=f"title-of-book-{book_id:04d}",
    )


def missing_name_reply() -> dict:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_x", "type": "function", "function": {"arguments": "{}"}}],
    }


def test_malformed_calls_are_recorded_and_the_policy_recovers(package, pool, initial_hash):
    script = [
        tool_call_reply("get_book", '{"book_id": 4'),  # bad JSON arguments
        tool_call_reply("get_bok", {"book_id": 4}),  # unknown tool
        missing_name_reply(),
        tool_call_reply("get_book", {"book_id": "four"}),  # schema violation
        tool_call_reply("get_book", {"book_id": 4}),
        tool_call_reply("submit_answer", {"answer": "Solaris"}),  # the answer contract
    ]
    task = title_task(4, initial_hash)
    with ScriptedOpenAIServer(lambda body: script[len(server.requests) - 1]) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, model="scripted-model")
        trajectory = run_episode(policy, task, package, pool)

    kinds = [(s.tool_call and s.tool_call.name, s.error_kind) for s in trajectory.steps]
    assert kinds == [
        (None, "format_error"),
        ("get_bok", "unknown_tool"),
        (None, "format_error"),
        ("get_book", "invalid_arguments"),
        ("get_book", None),
        ("submit_answer", None),
    ]
    assert "not valid JSON" in trajectory.steps[0].error
    assert trajectory.steps[0].raw_tool_call
    assert trajectory.steps[2].error == "tool call has no function name"
    assert trajectory.steps[4].tool_result["title"] == "Solaris"
    assert trajectory.finished_reason == "answer"
    assert json.loads(trajectory.final_answer) == {"answer": "Solaris"}
    assert trajectory.final_state_hash == initial_hash
    # The policy saw the tools, the system prompt listing them, and every tool result.
    first = server.requests[0]
    assert {t["function"]["name"] for t in first["tools"]} >= {"get_book", "place_order"}
    submit = next(t for t in first["tools"] if t["function"]["name"] == "submit_answer")
    assert submit["function"]["parameters"]["required"] == ["answer"]
    assert "get_book(book_id: integer)" in first["messages"][0]["content"]
    last = server.requests[-1]["messages"]
    assert json.loads(last[-1]["content"])["title"] == "Solaris"
    assert any("could not be used" in m["content"] for m in last if m["role"] == "user")

    breakdown = score(task, trajectory)
    assert breakdown.success
    assert breakdown["format"].score < 1.0


def test_endless_malformed_calls_end_with_format_error(package, pool, initial_hash):
    with ScriptedOpenAIServer(lambda body: tool_call_reply("get_book", "{oops")) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)
        trajectory = run_episode(policy, title_task(1, initial_hash), package, pool)
    assert trajectory.finished_reason == "format_error"
    assert [s.error_kind for s in trajectory.steps] == ["format_error"] * 3


def test_step_budget_ends_an_episode_that_never_answers(package, pool, initial_hash):
    with ScriptedOpenAIServer(lambda body: tool_call_reply("get_book", {"book_id": 1})) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)
        trajectory = run_episode(
            policy, title_task(1, initial_hash), package, pool, RolloutSettings(step_budget=3)
        )
    assert trajectory.finished_reason == "step_budget"
    assert len(trajectory.steps) == 3
    assert trajectory.final_answer is None
    assert not score(title_task(1, initial_hash), trajectory).success


def test_endpoint_failure_is_a_policy_error(package, pool, initial_hash):
    def broken(body):
        raise RuntimeError("model crashed")

    with ScriptedOpenAIServer(broken) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)
        trajectory = run_episode(policy, title_task(1, initial_hash), package, pool)
    assert trajectory.finished_reason == "policy_error"
    assert trajectory.steps[-1].error_kind == "policy_error"


def test_many_episodes_run_concurrently_and_keep_task_order(package, pool, initial_hash):
    def answer_from_history(body):
        messages = body["messages"]
        tool_messages = [m for m in messages if m["role"] == "tool"]
        if tool_messages:
            title = json.loads(tool_messages[-1]["content"])["title"]
            return text_reply(f"The title is:\n```json\n{json.dumps({'answer': title})}\n```")
        book_id = int(messages[1]["content"].rstrip("?").split()[-1])
        return tool_call_reply("get_book", {"book_id": book_id})

    tasks = [title_task(i, initial_hash) for i in (1, 2, 3, 4, 1, 2)]
    with ScriptedOpenAIServer(answer_from_history) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)
        trajectories = rollout_many(policy, tasks, {"bookstore": package}, 4, pool)
    answers = [json.loads(t.final_answer.split("```json")[1].strip("`\n")) for t in trajectories]
    assert answers == [{"answer": TITLES[i]} for i in (1, 2, 3, 4, 1, 2)]
    assert all(score(task, t).success for task, t in zip(tasks, trajectories, strict=True))
    assert trajectories[0].tokens_in == 20  # usage of two scripted turns is recorded


def test_gold_chain_policy_scores_full_marks_on_a_write_task(package, pool):
    write_episode = pool.start_episode(package)
    try:
        write_episode.call_tool("update_stock", {"book_id": 3, "stock": 0})
        expected_hash, expected_diff = write_episode.state_hash(), write_episode.state_diff()
    finally:
        write_episode.close()
    task = TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="Book 3 sold out: set its stock to 0, then say done.",
        gold_chain=[{"tool": "update_stock", "arguments": {"book_id": 3, "stock": 0}}],
        reference_answer="done",
        expected_state_hash=expected_hash,
        expected_diff=expected_diff,
        signature="sold-out-book-3",
    )
    trajectory = run_episode(GoldChainPolicy([task]), task, package, pool)
    assert trajectory.state_diff == expected_diff
    assert score(task, trajectory).total == 1.0
