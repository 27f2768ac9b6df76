"""Gold chains carry each step's result; the agent's steps are compared with them step by step.

Synthesis stores what the gold run observed at every step; the comparison of a replayed gold
run is all-match, and corrupted runs show where they differ (other arguments, another
observation, a call never made). The trajectory API and the replay page show the comparison,
with verdicts only (no gold values) for a viewer of an evaluation task.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.urls import reverse

from environments.runtime import SandboxPool, load_package
from tasks.gold_results import GOLD_RESULT_CHARS, TRUNCATED_KEY, result_matches, stored_result
from tasks.models import Task
from tasks.step_comparison import DIFFERS, MATCH, MISSING, compare_steps, comparison_counts
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.programmatic_tasks import synthesize_programmatic_tasks
from tasks.synthesis.replay import replay_gold, run_calls
from tests.conftest import token_client
from tests.support import factories
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def synthesized(bookstore, pool):
    with GraphTaskSynthesizer(bookstore, pool, llm=None, tier="explicit") as synthesizer:
        graph = synthesizer.synthesize(
            3, Difficulty(steps=3, writes=1, distractors=1, min_steps=2), seed=3
        )
    programs = synthesize_programmatic_tasks(bookstore, pool, 2, seed=1, llm=None)
    assert graph and programs
    return graph + programs


def test_gold_chains_carry_the_results_of_the_gold_run(synthesized, bookstore, pool):
    for task in synthesized:
        assert all("result" in step for step in task.gold_chain), task.kind
        replay = replay_gold(task, pool, bookstore)
        for step, gold in zip(replay.steps, task.gold_chain, strict=True):
            assert result_matches(gold["result"], step.tool_result)
        json.dumps(task.gold_chain)  # stored as JSON


def test_a_replayed_gold_run_matches_every_step(synthesized, bookstore, pool):
    for task in synthesized:
        comparisons = compare_steps(task.gold_chain, replay_gold(task, pool, bookstore).steps)
        assert [c.status for c in comparisons] == [MATCH] * len(task.gold_chain)
        assert all(c.arguments_match and c.result_match for c in comparisons)


def _perturbed(arguments: dict) -> tuple[str, dict]:
    key = next(k for k, v in arguments.items() if isinstance(v, int | str) and v != "")
    value = arguments[key]
    return key, {**arguments, key: value + 1000 if isinstance(value, int) else f"{value}-x"}


def test_corrupted_runs_show_where_they_differ(synthesized, bookstore, pool):
    task = next(t for t in synthesized if t.kind == "graph" and len(t.gold_chain) >= 2)
    calls = [{"tool": c["tool"], "arguments": dict(c["arguments"])} for c in task.gold_chain]
    # a dropped step is missing, the rest still match
    dropped = run_calls(pool, bookstore, calls[:-1])
    statuses = [c.status for c in compare_steps(task.gold_chain, dropped.steps)]
    assert statuses == [MATCH] * (len(calls) - 1) + [MISSING]
    # a perturbed argument differs, naming the argument
    position = next(i for i, c in enumerate(calls) if c["arguments"])
    key, arguments = _perturbed(calls[position]["arguments"])
    perturbed = calls[:position] + [{**calls[position], "arguments": arguments}]
    comparison = compare_steps(task.gold_chain, run_calls(pool, bookstore, perturbed).steps)
    assert comparison[position].status == DIFFERS
    assert comparison[position].differing_arguments == (key,)
    assert comparison[position].agent_arguments[key] == arguments[key]
    # the gold call on another state: same arguments, another observation
    drifted = replay_gold(task, pool, bookstore).steps
    drifted[0] = dataclasses.replace(drifted[0], tool_result={"not": "what the gold run saw"})
    first = compare_steps(task.gold_chain, drifted)[0]
    assert (first.status, first.arguments_match, first.result_match) == (DIFFERS, True, False)
    counts = comparison_counts(compare_steps(task.gold_chain, []))
    assert counts == {MATCH: 0, DIFFERS: 0, MISSING: len(task.gold_chain)}


def test_a_huge_result_is_cut_with_a_marker_that_still_decides_equality():
    rows = [{"id": i, "name": f"row {i}"} for i in range(500)]
    stored = stored_result(rows)
    assert set(stored) == {TRUNCATED_KEY}
    assert stored[TRUNCATED_KEY]["chars"] > GOLD_RESULT_CHARS
    assert len(json.dumps(stored)) < GOLD_RESULT_CHARS + 300
    assert result_matches(stored, [dict(r) for r in rows])
    assert not result_matches(stored, rows[:-1])
    assert stored_result({"id": 1}) == {"id": 1}


# --- the API and the replay page -------------------------------------------------------------

GOLD_ARGUMENT = "SENTINEL-GOLD-ARG-5521"
GOLD_RESULT = "SENTINEL-GOLD-RESULT-8830"


@pytest.fixture
def compared(db):
    environment = factories.make_environment("bookstore")
    task = factories.make_task(
        environment,
        split=Task.Split.ARENA,
        gold_chain=[
            {
                "tool": "search_books",
                "arguments": {"title_contains": "Dune"},
                "result": [{"id": 1, "title": "Dune", "price": 9.99, "stock": 5}],
            },
            {
                "tool": "place_order",
                "arguments": {"book_id": 1, "quantity": 2, "customer": GOLD_ARGUMENT},
                "result": {"purchase_id": 1, "note": GOLD_RESULT},
            },
            {"tool": "get_book", "arguments": {"book_id": 1}, "result": {"id": 1}},
        ],
    )
    return factories.make_trajectory(task)  # searches, orders 20 (tool error), answers


def test_the_trajectory_api_returns_the_comparison(compared, reviewer, viewer):
    url = f"/api/trajectories/{compared.pk}/"
    shown = token_client(reviewer).get(url).json()["step_comparison"]
    assert [s["status"] for s in shown["steps"]] == [MATCH, DIFFERS, MISSING]
    assert shown["counts"] == {MATCH: 1, DIFFERS: 1, MISSING: 1}
    order = shown["steps"][1]
    assert order["agent_step"] == 2 and order["differing_arguments"] == ["customer", "quantity"]
    assert order["gold_arguments"]["customer"] == GOLD_ARGUMENT and not order["result_match"]
    # a viewer of an arena task: the verdicts, no gold tool, argument or result
    response = token_client(viewer).get(url)
    hidden = response.json()["step_comparison"]
    assert hidden["gold_hidden"] is True
    assert [s["status"] for s in hidden["steps"]] == [MATCH, DIFFERS, MISSING]
    assert set(hidden["steps"][1]) == {
        "gold_index",
        "status",
        "agent_step",
        "arguments_match",
        "result_match",
    }
    body = response.content.decode()
    assert GOLD_ARGUMENT not in body and GOLD_RESULT not in body


def test_the_replay_page_shows_the_comparison_beside_the_steps(client, compared, reviewer, viewer):
    url = reverse("trajectory-detail", args=[compared.pk])
    client.force_login(reviewer)
    body = client.get(url).content.decode()
    assert 'id="step-comparison"' in body
    assert 'id="gold-step-2" data-status="missing"' in body
    assert 'data-gold-match="differs"' in body and 'data-gold-match="match"' in body
    assert "1 match · 1 differ · 1 missing" in body
    assert GOLD_ARGUMENT in body and GOLD_RESULT in body  # reviewers see the gold side
    client.force_login(viewer)
    body = client.get(url).content.decode()
    assert 'id="gold-step-1" data-status="differs"' in body
    assert GOLD_ARGUMENT not in body and GOLD_RESULT not in body


def test_the_task_page_shows_each_gold_result_to_reviewers(client, compared, reviewer, viewer):
    url = reverse("task-detail", args=[compared.task.pk])
    client.force_login(reviewer)
    body = client.get(url).content.decode()
    assert body.count('class="gold-result"') == 3 and GOLD_RESULT in body
    client.force_login(viewer)  # an arena task: no gold chain, no gold result
    assert GOLD_RESULT not in client.get(url).content.decode()
