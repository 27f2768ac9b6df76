"""The one reward: each component scores for the right reason against the gold run."""

from __future__ import annotations

import json

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.reward import AnswerMatcher, RewardWeights, score
from tasks.synthesis.replay import replay_gold, run_calls
from tasks.synthesis.task_spec import TaskSpec
from tests.support.openai_server import ScriptedOpenAIServer, text_reply
from tests.support.sample_package import build_sample_package

GOLD = [
    {"tool": "get_book", "arguments": {"book_id": 1}},
    {"tool": "update_stock", "arguments": {"book_id": 1, "stock": 0}},
    {"tool": "place_order", "arguments": {"book_id": 3, "quantity": 1, "customer": "ada"}},
]


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.delenv("AW_LLM_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def write_task(pool, bookstore):
    """Sell out Dune and sell one copy of The Left Hand of Darkness; report Dune's title."""
    gold = run_calls(pool, bookstore, GOLD)
    return TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="Set Dune's stock to 0, sell one copy of book 3 to ada, report Dune's title.",
        gold_chain=GOLD,
        reference_answer="Dune",
        expected_state_hash=gold["final_state_hash"],
        expected_diff=gold["state_diff"],
        signature="write-task",
    )


def test_gold_replay_scores_one(pool, bookstore, write_task):
    breakdown = score(write_task, replay_gold(write_task, pool, bookstore))
    assert breakdown.total == 1.0 and breakdown.success
    assert "hash matches" in breakdown["state"].reason


def test_wrong_answer_costs_the_answer_component(pool, bookstore, write_task):
    breakdown = score(write_task, run_calls(pool, bookstore, GOLD, final_answer="Solaris"))
    assert breakdown.total < 1.0
    assert breakdown["answer"].score == 0.0 and "answer wrong" in breakdown["answer"].reason
    assert breakdown["state"].score == 1.0
    assert "not solved" in breakdown["efficiency"].reason


def test_missing_write_costs_the_state_component(pool, bookstore, write_task):
    breakdown = score(write_task, run_calls(pool, bookstore, GOLD[:2], final_answer="Dune"))
    assert breakdown.total < 1.0 and breakdown["answer"].score == 1.0
    state = breakdown["state"]
    assert 0.0 < state.score < 1.0
    assert "missing writes" in state.reason and "purchase" in state.reason
    assert "extra writes" not in state.reason


def test_extra_write_costs_the_state_component(pool, bookstore, write_task):
    extra = GOLD + [{"tool": "update_stock", "arguments": {"book_id": 4, "stock": 9}}]
    breakdown = score(write_task, run_calls(pool, bookstore, extra, final_answer="Dune"))
    state = breakdown["state"]
    assert breakdown.total < 1.0 and 0.0 < state.score < 1.0
    assert "extra writes" in state.reason and '{"id":4}' in state.reason
    assert "missing writes" not in state.reason


def test_read_only_task_penalises_any_write(pool, bookstore):
    gold = run_calls(pool, bookstore, GOLD[:1])
    task = TaskSpec(
        "graph",
        "bookstore",
        "Title of book 1?",
        GOLD[:1],
        "Dune",
        gold["final_state_hash"],
        {},
        signature="read",
    )
    assert score(task, replay_gold(task, pool, bookstore)).total == 1.0
    wrote = score(task, run_calls(pool, bookstore, GOLD[:2], final_answer="Dune"))
    assert wrote["state"].score == 0.0 and "extra writes" in wrote["state"].reason


def test_malformed_calls_cost_format_and_extra_calls_cost_efficiency(pool, bookstore, write_task):
    trajectory = run_calls(pool, bookstore, GOLD, final_answer="Dune")
    trajectory["steps"].insert(0, {"index": 0, "tool_call": None, "raw_tool_call": "{bad json"})
    unknown = run_calls(pool, bookstore, [{"tool": "no_such_tool", "arguments": {}}])["steps"][0]
    trajectory["steps"].insert(1, unknown)
    breakdown = score(write_task, trajectory)
    assert breakdown["format"].score == pytest.approx(3 / 5)
    assert "3/5 tool calls well-formed" in breakdown["format"].reason
    assert breakdown["efficiency"].score == pytest.approx(3 / 5)
    assert breakdown["answer"].score == 1.0 and breakdown["state"].score == 1.0
    assert 0.0 < breakdown.total < 1.0


def test_weights_are_configurable_and_total_stays_in_range(pool, bookstore, write_task):
    trajectory = run_calls(pool, bookstore, GOLD, final_answer="Solaris")
    answer_only = RewardWeights(answer=1.0, state=0.0, format=0.0, efficiency=0.0)
    assert score(write_task, trajectory, answer_only).total == 0.0
    state_only = RewardWeights(answer=0.0, state=1.0, format=0.0, efficiency=0.0)
    assert score(write_task, trajectory, state_only).total == 1.0
    assert score(write_task.to_dict(), trajectory).total == score(write_task, trajectory).total


@pytest.mark.parametrize(
    ("reference", "answer", "expected"),
    [
        ("Dune", "  dune. ", 1.0),
        ("Dune", "The answer is Dune.", 1.0),
        ("Dune", "Solaris", 0.0),
        (18.49, "18.49", 1.0),
        (18.49, 18.490000000001, 1.0),
        (1 / 3, "0.33", 1.0),
        (18.49, "18.5", 0.0),
        (["Dune", "Solaris"], '["solaris", "Dune"]', 1.0),
        (["Dune", "Solaris"], "- Solaris\n- Dune", 1.0),
        (["Dune", "Solaris"], "Dune", pytest.approx(2 / 3)),
        ({"a": 1, "b": {"c": [1, 2]}}, {"b": {"c": [2, 1]}, "a": 1.0}, 1.0),
        ({"a": 1, "b": 2}, '{"a": 1, "b": 3}', 0.5),
        (True, "yes", 1.0),
    ],
)
def test_answer_matching(reference, answer, expected):
    assert AnswerMatcher(RewardWeights()).compare(reference, answer)[0] == expected


def test_ordered_lists_when_the_task_says_so():
    matcher = AnswerMatcher(RewardWeights(), ordered=True)
    assert matcher.compare(["a", "b"], ["a", "b"])[0] == 1.0
    assert matcher.compare(["a", "b"], ["b", "a"])[0] == 0.0


def test_llm_judge_rescues_a_paraphrase(pool, bookstore, write_task, monkeypatch):
    trajectory = run_calls(pool, bookstore, GOLD, final_answer="Herbert's first Arrakis novel")
    verdict = {"correct": True, "reason": "that novel is Dune"}
    with ScriptedOpenAIServer(lambda body: text_reply(json.dumps(verdict))) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        breakdown = score(write_task, trajectory)
        assert "Reference answer" in server.requests[0]["messages"][-1]["content"]
    assert breakdown["answer"].score == 1.0 and "LLM judge" in breakdown["answer"].reason
    off = score(write_task, trajectory, RewardWeights(llm_judge=False))
    assert off["answer"].score == 0.0
