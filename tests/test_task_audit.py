"""The verifier audit: every task's reward passes its gold run and fails the corrupted runs."""

from __future__ import annotations

import dataclasses

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.answer_contract import AnswerContract
from tasks.audit import CHECKS, AuditSummary, VerifierAuditor, hedged_answer, wrong_answer
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.programmatic_tasks import (
    ProgrammaticTaskSynthesizer,
    programmatic_task_from_source,
)
from tasks.synthesis.task_spec import TaskSpec
from tasks.synthesis.tool_graph import build_tool_graph
from tests.support.programs import ACCEPT_ANYTHING, CHECK_TOTAL, HERBERT_TOTAL
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def graph_tasks(bookstore, pool):
    with GraphTaskSynthesizer(bookstore, pool, llm=None) as synthesizer:
        tasks = synthesizer.synthesize(4, Difficulty(steps=2), seed=3)
        tasks += synthesizer.synthesize(4, Difficulty(steps=3, writes=1), seed=5)
        return tasks, synthesizer.auditor.summary, synthesizer.stats


@pytest.fixture(scope="module")
def auditor(bookstore, pool):
    view = EnvironmentView(bookstore)
    with pool.start_episode(bookstore) as episode:
        graph = build_tool_graph(view, episode)
    return VerifierAuditor(bookstore, pool, view, graph.nodes)


def checks_of(task) -> dict[str, dict]:
    return {c["name"]: c for c in task.audit["checks"]}


def test_every_synthesized_graph_task_carries_a_passed_audit(graph_tasks):
    tasks, summary, stats = graph_tasks
    assert len(tasks) >= 6
    assert summary.audited == len(tasks) + stats.audit_discarded
    assert summary.kept == len(tasks)
    for task in tasks:
        checks = checks_of(task)
        assert task.audit["passed"] and set(checks) == set(CHECKS)
        assert checks["gold"]["total"] == 1.0
        assert checks["no_op"]["applicable"] and checks["no_op"]["total"] == 0.0
        for check in checks.values():
            if check["applicable"] and check["name"] != "gold":
                assert not check["solved"] and check["total"] <= 0.2


def test_write_tasks_face_the_dropped_write_and_the_extra_write(graph_tasks):
    writes = [t for t in graph_tasks[0] if t.expected_diff]
    assert writes
    for task in writes:
        checks = checks_of(task)
        assert checks["dropped_write"]["applicable"] and checks["dropped_write"]["passed"]
        assert checks["extra_write"]["applicable"] and checks["extra_write"]["passed"]


def test_read_tasks_face_a_perturbed_argument_wrong_and_hedged_answers(graph_tasks):
    reads = [t for t in graph_tasks[0] if not t.expected_diff]
    assert reads
    applied = {name for t in reads for name, c in checks_of(t).items() if c["applicable"]}
    assert {"perturbed_argument", "wrong_answer", "hedged_answer", "extra_write"} <= applied


def test_a_task_whose_expected_state_is_wrong_is_discarded(graph_tasks, auditor):
    task = next(t for t in graph_tasks[0] if t.expected_diff)
    corrupted = dataclasses.replace(task, expected_diff={}, expected_state_hash="nothing")
    audit = auditor.audit(corrupted)
    assert not audit.passed and audit.failed == "gold"


def test_a_write_task_whose_writes_change_nothing_is_discarded(auditor):
    # The gold write sets the stock book 1 already has: looking once and submitting nothing
    # would end in the gold state, so the task cannot tell a worker from an idler.
    task = TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="Set the stock of book 1 to 5.",
        gold_chain=[
            {"tool": "get_book", "arguments": {"book_id": 1}, "kind": "read"},
            {"tool": "update_stock", "arguments": {"book_id": 1, "stock": 5}, "kind": "write"},
        ],
        expected_state_hash=auditor.initial_hash(),
        expected_diff={},
        answer_contract=AnswerContract("none").to_dict(),
        signature="stock-unchanged",
    )
    audit = auditor.audit(task)
    # Named by its surrogate id (books have titles) and set to the stock it holds: the meaning
    # checks discard it before any replay ...
    checks = {c.name: c for c in audit.checks}
    assert not audit.passed and audit.failed == "surrogate_id_naming"
    assert not checks["self_assignment"].passed
    assert "gold" not in checks
    # ... and the replayed audit would too: dropping the write changes nothing.
    dropped = auditor._dropped_write(task, task.gold_chain, None)
    assert dropped.applicable and not dropped.passed


def test_a_task_whose_reference_answer_is_wrong_is_discarded(graph_tasks, auditor):
    task = next(t for t in graph_tasks[0] if t.reference_answer is not None)
    contract = AnswerContract.from_dict(task.answer_contract)
    corrupted = dataclasses.replace(
        task, reference_answer=wrong_answer(contract, task.reference_answer)
    )
    assert auditor.audit(corrupted).failed == "gold"


def test_a_read_task_whose_instruction_states_its_answer_is_discarded(graph_tasks, auditor):
    task = next(
        t
        for t in graph_tasks[0]
        if not t.expected_diff and isinstance(t.reference_answer, str | int) and t.reference_answer
    )
    assert auditor.audit(task).passed
    giveaway = dataclasses.replace(
        task, instruction=f"{task.instruction} (It is {task.reference_answer}.)"
    )
    audit = auditor.audit(giveaway)
    assert not audit.passed and audit.failed == "given_answer"


def test_the_given_answer_check_looks_for_whole_plain_answers():
    from tasks.audit import given_answer_check

    def task(instruction: str, diff=None) -> TaskSpec:
        return TaskSpec(kind="graph", environment="e", instruction=instruction, expected_diff=diff)

    assert not given_answer_check(task("Which city is 'Gibraltar' in?"), "Gibraltar").passed
    assert given_answer_check(task("Step 1: look up the author of Dune."), "1").passed  # short
    assert given_answer_check(task("How many books cost 120 or more?"), "12").passed  # not whole
    assert not given_answer_check(task("Report 12 for book 12."), 12).passed
    stated_write = given_answer_check(task("Set the stock to 40, report it.", {"b": {}}), 40)
    assert not stated_write.applicable  # a write task's state check carries the weight


def test_a_verification_script_that_accepts_anything_is_caught(bookstore, pool, auditor):
    check = programmatic_task_from_source(
        pool, bookstore, "Total price of Frank Herbert's books?", HERBERT_TOTAL, ACCEPT_ANYTHING
    )
    audit = auditor.audit(check.task)
    assert not audit.passed and audit.failed == "wrong_answer"
    sound = programmatic_task_from_source(
        pool, bookstore, "Total price of Frank Herbert's books?", HERBERT_TOTAL, CHECK_TOTAL
    )
    assert auditor.audit(sound.task).passed


def test_programmatic_synthesis_keeps_only_audited_tasks(bookstore, pool):
    synthesizer = ProgrammaticTaskSynthesizer(bookstore, pool, llm=None)
    tasks = synthesizer.synthesize(8, seed=0)
    assert tasks and all(t.audit["passed"] for t in tasks)
    assert synthesizer.auditor.summary.kept == len(tasks)
    for task in tasks:  # the verification script turned down every corrupted answer
        checks = checks_of(task)
        assert checks["wrong_answer"]["applicable"] and checks["hedged_answer"]["applicable"]
        assert not checks["wrong_answer"]["solved"] and not checks["hedged_answer"]["solved"]
    updates = [t for t in tasks if t.expected_diff]
    assert updates, "a conditional update writes"
    for task in updates:  # its writes face every state mutation
        checks = checks_of(task)
        for name in ("dropped_write", "perturbed_argument", "extra_write"):
            assert checks[name]["applicable"] and checks[name]["passed"], (name, checks[name])


def test_wrong_and_hedged_answers_keep_the_contract_shape():
    number = AnswerContract("scalar", "integer")
    assert wrong_answer(number, 4) == 5 and hedged_answer(number, 4) == [4, 5]
    names = AnswerContract("list", "string")
    assert wrong_answer(names, ["a", "b"]) == ["a"]
    assert hedged_answer(names, ["a", "b"]) == ["a", "b", "a (other)"]


def test_summaries_add_up():
    first = AuditSummary(3, 2, {"gold": 1}, {"gold": 3})
    second = AuditSummary(2, 1, {"gold": 1}, {"gold": 2})
    assert first.merge(second).to_dict() == {
        "audited": 5,
        "kept": 3,
        "discarded": {"gold": 2},
        "checks_applied": {"gold": 5},
    }
