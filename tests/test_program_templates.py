"""Programmatic templates: every solution shape, on the bookstore and on starter environments.

Each template is tried on the sample bookstore and on two starter-catalogue environments
(``world_cities``: continents -> countries -> cities with stored populations; ``stocks``:
tickers -> monthly prices with dates). Every kept task passed the verifier audit, names no tool,
replays to a perfect score, and its verification script rejects a wrong answer on the gold
state. A template that does not fit an environment says so (``None``) instead of failing.
"""

from __future__ import annotations

import json
import random

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.answer_contract import task_contract
from tasks.audit import wrong_answer
from tasks.reward import score
from tasks.synthesis.program_templates import TEMPLATE_NAMES, TEMPLATES
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tasks.synthesis.replay import replay_gold
from tasks.verification import run_verification
from tests.support.sample_package import build_sample_package

STARTERS = ("world_cities", "stocks", "countries")
TRIES = 3


@pytest.fixture(scope="module")
def pool():
    # template and test code is trusted: skip the worker recycling after each program
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def packages(tmp_path_factory, starter_catalogue):
    # the session's shared builds: world_cities and stocks also serve the task-tier tests
    entries = list(starter_catalogue.entries(STARTERS).values())
    assert all(e.path and e.verified for e in entries), [e.error for e in entries]
    found = {e.name: load_package(e.path) for e in entries}
    found["bookstore"] = load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))
    return found


@pytest.fixture(scope="module")
def synthesizers(packages, pool):
    return {name: ProgrammaticTaskSynthesizer(p, pool, llm=None) for name, p in packages.items()}


@pytest.fixture(scope="module")
def kept(synthesizers):
    """(environment, task) for every template that yields a task on an environment."""
    tasks = []
    for name in ("bookstore", "world_cities", "stocks"):
        synthesizer = synthesizers[name]
        for template in TEMPLATES:
            for attempt in range(TRIES):
                rng = random.Random(f"{name}:{template.__name__}:{attempt}")
                task = synthesizer._keep(synthesizer.template_task(rng, attempt, template=template))
                if task is not None:
                    tasks.append((name, task))
                    break
    return tasks


def test_at_least_twelve_solution_shapes_across_environments(kept):
    templates = {task.metadata["template"] for _, task in kept}
    assert len(TEMPLATES) >= 12
    assert len(templates) >= 12, templates
    assert templates == set(TEMPLATE_NAMES), set(TEMPLATE_NAMES) - templates
    per_environment = {
        name: {t.metadata["template"] for n, t in kept if n == name} for name, _ in kept
    }
    assert len(per_environment["bookstore"]) >= 12, per_environment


def test_every_kept_task_passed_its_audit_and_names_no_tool(kept, packages):
    for name, task in kept:
        assert task.audit and task.audit["passed"], (task.metadata["template"], task.audit)
        assert (
            task.difficulty["steps"] == len(task.gold_chain) and task.difficulty["tier"] == "goal"
        )
        tools = json.loads(json.dumps(list(packages[name].manifest["tools"])))
        for tool in tools:
            assert tool["function"]["name"] not in task.instruction, task.instruction
        assert "def solve(call)" in task.solution
        assert "def verify(answer, call)" in task.verification


def test_gold_replays_to_a_perfect_score(kept, packages, pool):
    for name, task in kept:
        breakdown = score(task, replay_gold(task, pool, packages[name]))
        assert breakdown.total == 1.0, (task.metadata["template"], breakdown.to_dict())


def test_each_verification_script_rejects_a_wrong_answer(kept, packages, pool):
    checked = set()
    for name, task in kept:
        contract = task_contract(task)
        wrong = wrong_answer(contract, task.reference_answer)
        with pool.start_episode(packages[name]) as episode:
            for call in task.gold_chain:
                episode.call_tool(call["tool"], call["arguments"])
            right = run_verification(episode, task.verification, task.reference_answer)
            rejected = run_verification(episode, task.verification, wrong)
        template = task.metadata["template"]
        assert right == {"passed": True, "error": None}, (template, right)
        assert rejected["passed"] is False, (template, wrong)
        trajectory = replay_gold(task, pool, packages[name])
        trajectory.final_answer = json.dumps(wrong)
        trajectory.verification = rejected
        assert not score(task, trajectory).success, template
        checked.add(template)
    assert checked == set(TEMPLATE_NAMES)


def test_write_templates_change_the_state_and_read_templates_do_not(kept):
    writers = {"conditional_update", "group_update", "branch_update"}
    for _, task in kept:
        assert bool(task.expected_diff) == (task.metadata["template"] in writers), task.metadata


def test_ordered_and_object_answers_have_their_contracts(kept):
    contracts = {t.metadata["template"]: t.answer_contract for _, t in kept}
    assert contracts["top_parents"]["kind"] == "list" and contracts["top_parents"]["ordered"]
    assert contracts["filtered_list"]["kind"] == "list"
    assert not contracts["filtered_list"]["ordered"]
    assert contracts["partition"]["kind"] == "object"
    assert contracts["partition"]["fields"] == ["above", "below"]
    assert contracts["reconcile"]["kind"] == "object"


def test_templates_that_do_not_fit_return_none(synthesizers):
    bookstore = synthesizers["bookstore"]
    rng = random.Random(0)
    for name in ("date_span", "date_window", "two_hop", "reconcile"):
        template = TEMPLATES[TEMPLATE_NAMES.index(name)]
        assert all(template(bookstore.view, s, rng) is None for s in bookstore.shapes)
        check = bookstore.template_task(rng, 0, template=template)
        assert check.task is None and "does not fit" in check.reason
    # countries: country -> subdivisions, no numeric column at all: only counting applies
    countries = synthesizers["countries"]
    assert countries.shapes and not any(s.measures for s in countries.shapes)
    fitting = {
        name
        for name, template in zip(TEMPLATE_NAMES, TEMPLATES, strict=True)
        if any(template(countries.view, s, rng) is not None for s in countries.shapes)
    }
    assert fitting == {"count_distinct"}


def test_round_robin_records_the_template(synthesizers):
    tasks = synthesizers["world_cities"].synthesize(len(TEMPLATES), seed=100)
    assert len(tasks) == len(TEMPLATES)
    templates = [t.metadata["template"] for t in tasks]
    assert len(set(templates)) >= 10, templates
    assert all(t.metadata["template"] in TEMPLATE_NAMES for t in tasks)
    assert all(t.audit["passed"] for t in tasks)


def test_a_new_value_for_an_update_stays_within_what_the_tool_accepts():
    """Write templates set a value no row has yet; on an enum column it is another allowed
    value, on a capped scale one below the cap, and None when the column has no free value."""
    from tasks.synthesis.program_templates import _new_value
    from tasks.synthesis.tool_graph import ParamInfo

    rng = random.Random(3)
    cabin = ParamInfo("cabin", "string", False, "enum", enum=["basic", "economy", "business"])
    assert _new_value(["economy", "business"], rng, cabin) == "basic"
    assert _new_value(["basic", "economy", "business"], rng, cabin) is None
    rating = ParamInfo("rating", "integer", False, "value", maximum=5)
    for _ in range(20):
        assert _new_value([1, 3, 5], rng, rating) in (2, 4)
    assert _new_value([1, 2, 3, 4, 5], rng, rating) is None
    assert _new_value([1, 3, 5], rng) > 5  # no declared cap: above every stored value
    assert _new_value(["open"], rng) == "open (revised)"
