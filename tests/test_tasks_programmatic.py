"""Programmatic tasks: solution code run in the sandbox, verified, and kept only if deterministic."""

from __future__ import annotations

import json

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.reward import score
from tasks.synthesis.consistency import filter_by_pass_rate
from tasks.synthesis.programmatic_tasks import (
    ProgrammaticTaskSynthesizer,
    programmatic_task_from_source,
)
from tasks.synthesis.replay import replay_gold
from tasks.synthesis.task_spec import TaskSpec
from tests.support.openai_server import ScriptedOpenAIServer, text_reply
from tests.support.programs import CHECK_TOTAL, HERBERT_TOTAL
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def pool():
    # template and test code is trusted: skip the worker recycling after each program
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


def test_template_tasks_replay_to_a_perfect_score(pool, bookstore):
    synthesizer = ProgrammaticTaskSynthesizer(bookstore, pool, llm=None)
    tasks = synthesizer.synthesize(8, seed=0)
    assert len(tasks) == 8
    templates = {t.metadata["template"] for t in tasks}
    assert len(templates) >= 3
    assert any(t.expected_diff for t in tasks), "a conditional update writes"
    for task in tasks:
        assert (
            "def solve(call)" in task.solution and "def verify(answer, call)" in task.verification
        )
        assert task.gold_chain and task.reference_answer not in (None, [])
        breakdown = score(task, replay_gold(task, pool, bookstore))
        assert breakdown.total == 1.0, (breakdown.to_dict(), task.instruction)


def test_custom_solution_becomes_a_task_with_its_calls_as_gold_chain(pool, bookstore):
    check = programmatic_task_from_source(
        pool, bookstore, "Total price of Frank Herbert's books?", HERBERT_TOTAL, CHECK_TOTAL
    )
    assert check.task is not None, check.reason
    assert check.task.reference_answer == 18.49
    assert [c["tool"] for c in check.task.gold_chain] == ["list_books_by_author"] + ["get_book"] * 2


def test_nondeterministic_solution_is_dropped(pool, bookstore):
    flaky = HERBERT_TOTAL.replace(
        "return round(total, 2)", "import random\n    return random.random()"
    )
    check = programmatic_task_from_source(
        pool, bookstore, "?", flaky, "def verify(answer, call):\n    return True\n"
    )
    assert check.task is None and "nondeterministic" in check.reason


def test_solution_the_verifier_rejects_is_dropped(pool, bookstore):
    wrong = HERBERT_TOTAL.replace("return round(total, 2)", "return round(total, 2) + 1")
    check = programmatic_task_from_source(pool, bookstore, "?", wrong, CHECK_TOTAL)
    assert check.task is None and "verification" in check.reason


def test_llm_written_programmatic_task(pool, bookstore, monkeypatch):
    reply = {
        "instruction": "What is the total price of Frank Herbert's books?",
        "solution": HERBERT_TOTAL,
        "verification": CHECK_TOTAL,
    }
    with ScriptedOpenAIServer(lambda body: text_reply(json.dumps(reply))) as server:
        monkeypatch.setenv("AW_LLM_BASE_URL", server.base_url)
        synthesizer = ProgrammaticTaskSynthesizer(bookstore, pool)
        check = synthesizer.llm_task(__import__("random").Random(0), seed=1)
        assert server.requests
    assert check.task is not None, check.reason
    assert check.task.metadata["instruction_source"] == "llm"
    assert check.task.reference_answer == 18.49


def test_consistency_keeps_tasks_inside_the_pass_rate_window():
    tasks = [TaskSpec("graph", "bookstore", f"task {i}", signature=f"sig{i}") for i in range(3)]
    outcomes = {"sig0": iter([True] * 5), "sig1": iter([False] * 5)}
    outcomes["sig2"] = iter([True, False, True, False, False])
    report = filter_by_pass_rate(tasks, lambda t: next(outcomes[t.signature]), runs=5)
    assert report.kept == [tasks[2]]
    assert report.pass_rates == {"sig0": 1.0, "sig1": 0.0, "sig2": pytest.approx(0.4)}
    assert report.dropped == tasks[:2]
    crashing = filter_by_pass_rate(tasks[:1], lambda t: 1 / 0, runs=2, window=(0.0, 0.5))
    assert crashing.kept == tasks[:1] and crashing.pass_rates["sig0"] == 0.0
