"""The fault-injection policy and the calibration of diagnosis against it.

The policy follows a task's gold chain and injects one known failure per episode, chosen from a
seed and the task id (or fixed); the trajectory records it. On a small catalogue the taxonomy's
detectors must recover every injected fault's labels (precision and recall at least 0.9 per
label) and find nothing on a clean gold run. Through the database: a fault-injection policy
registered from the API is evaluated like any policy, and ``GET
/api/evaluations/{id}/calibration/`` and the console page report the per-label figures.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.calibration import EXPECTED_LABELS, TARGET, CalibrationEpisode, calibrate
from arena.calibration_run import play_faults, synthesize_calibration_tasks
from environments.runtime import SandboxPool, load_package
from tasks.models import Task
from tasks.records import record_tasks
from tests.conftest import token_client
from tests.support import factories
from training.models import Policy, Trajectory
from training.policies.fault_injection import FaultInjectionPolicy
from training.policies.fault_plans import FAULTS, NO_FAULT, plan_episode
from training.rollout.agent_loop import run_episode

CHAIN = [
    {"tool": "get_airport", "arguments": {"icao": "KJFK"}, "kind": "read"},
    {"tool": "list_flights", "arguments": {"origin": "KJFK"}, "kind": "read"},
    {"tool": "create_booking", "arguments": {"flight_id": 7, "passenger": "Ada Lovelace"}},
]
TASK = {
    "instruction": "Book the first flight out of JFK for Ada.",
    "gold_chain": [*CHAIN[:2], {**CHAIN[2], "kind": "write"}],
    "reference_answer": 1,
    "answer_contract": {},
}


def test_the_fault_is_drawn_per_task_from_the_seed_and_fixed_by_configuration():
    drawn = {plan_episode(TASK, f"task-{i}", seed=3).fault for i in range(40)}
    assert drawn <= set(FAULTS) and len(drawn) >= 5  # spread over the faults the task allows
    again = [plan_episode(TASK, f"task-{i}", seed=3) for i in range(10)]
    assert again == [plan_episode(TASK, f"task-{i}", seed=3) for i in range(10)]
    assert [p.fault for p in again] != [
        plan_episode(TASK, f"task-{i}", seed=4).fault for i in range(10)
    ]
    assert {plan_episode(TASK, f"t{i}", clean_share=1.0).fault for i in range(5)} == {NO_FAULT}
    for fault in FAULTS:
        plan = plan_episode(TASK, "x", fault=fault)
        assert plan.fault in (fault, NO_FAULT)
    skipped = plan_episode(TASK, "x", fault="skipped_write")
    assert [t.tool for t in skipped.turns if t.kind == "call"] == ["get_airport", "list_flights"]
    wrong = plan_episode(TASK, "x", fault="wrong_write").turns[2]
    assert wrong.arguments == {"flight_id": 7, "passenger": "Ada Lovelace (edited)"}
    read_only = {**TASK, "gold_chain": CHAIN[:1]}
    plan = plan_episode(read_only, "x", fault="skipped_write")
    assert plan.fault == NO_FAULT and "skipped_write does not apply" in plan.note
    with pytest.raises(ValueError):
        plan_episode(TASK, "x", fault="set_fire")


def test_the_trajectory_records_the_injected_fault(tmp_path):
    from tests.support.sample_package import build_sample_package

    package = load_package(build_sample_package(tmp_path))
    task = {
        "task_id": "t-1",
        "kind": "graph",
        "environment": package.name,
        "instruction": "What is the title of book 1?",
        "gold_chain": [{"tool": "get_book", "arguments": {"book_id": 1}, "kind": "read"}],
        "reference_answer": "Dune",
        "tools": ["get_book", "search_books"],
    }
    policy = FaultInjectionPolicy([task], fault="repeated_call_loop", seed=5)
    with SandboxPool(workers=1) as pool:
        trajectory = run_episode(policy, task, package, pool)
    assert trajectory.metadata == {
        "injected_fault": {"fault": "repeated_call_loop", "gold_step": 0, "seed": 5}
    }
    assert [s.tool_call.name for s in trajectory.steps if s.tool_call] == ["get_book"] * 3


@pytest.fixture(scope="module")
def small_catalogue(starter_catalogue):
    names = ("airports", "world_cities")
    paths = starter_catalogue.paths(names)
    with SandboxPool(workers=2) as pool:
        packages = {name: load_package(paths[name]) for name in names}
        tasks = []
        for package in packages.values():
            tasks += synthesize_calibration_tasks(package, pool, graph=4, programs=1)
        yield tasks, packages, pool


def test_the_fault_labels_are_recovered_on_a_small_catalogue(small_catalogue):
    tasks, packages, pool = small_catalogue
    assert len(tasks) >= 6 and any(t.expected_diff for t in tasks)
    episodes = play_faults(tasks, packages, pool)
    result = calibrate(episodes)
    played = {e.fault for e in episodes}
    assert played >= {NO_FAULT, "wrong_argument", "wrong_final_answer", "malformed_call"}
    assert result.clean_episodes and result.clean_with_labels == 0  # a clean run: no label
    scored = [row for row in result.labels if row.true_positives + row.false_negatives]
    assert len(scored) >= 7
    for row in scored:
        assert row.precision >= TARGET and row.recall >= TARGET, row
    for row in result.faults:  # every fault's own labels found in (nearly) every episode
        assert row.recovered >= TARGET * row.episodes, row


def _episodes(fault: str, count: int, labels: tuple[str, ...], success: bool = False):
    return [CalibrationEpisode(fault, labels, success=success) for _ in range(count)]


def test_the_verdict_needs_enough_episodes_and_judges_every_measured_label():
    assert calibrate([]).verdict == "not_measured" and not calibrate([]).meets_target
    clean = _episodes(NO_FAULT, 12, ())
    right = _episodes("wrong_final_answer", 12, ("wrong_answer",))
    assert calibrate(right + clean).verdict == "met"
    assert calibrate(right[:3] + clean).verdict == "too_few"  # recall 1.0 of three episodes
    missed = right[:10] + _episodes("wrong_final_answer", 2, ())
    assert calibrate(missed + clean).verdict == "below"  # recall 10/12
    wrongly = _episodes("premature_answer", 10, ("premature_answer", "wrong_answer"))
    assert calibrate(right + wrongly + clean).verdict == "below"  # wrong_answer precision 12/22
    labelled_clean = clean[:11] + _episodes(NO_FAULT, 1, ("wrong_answer",))
    assert calibrate(right + labelled_clean).verdict == "below"


def test_a_fault_the_reward_scores_as_solved_escapes_a_rounds_diagnosis():
    loops = _episodes("repeated_call_loop", 12, ("repeated_call_loop",), success=True)
    result = calibrate(loops + _episodes("wrong_final_answer", 12, ("wrong_answer",)))
    detectors = {row.label: row for row in result.labels}
    in_rounds = {row.label: row for row in result.round_labels}
    assert detectors["repeated_call_loop"].recall == 1.0
    assert in_rounds["repeated_call_loop"].recall == 0.0  # a round labels failed episodes only
    assert in_rounds["wrong_answer"].recall == 1.0 and result.escaped == 12


# --- through the database: the API and the console --------------------------------------------


def _fault_policy(api, **config) -> Policy:
    response = api.post(
        "/api/policies/",
        {"name": "faults", "kind": "fault_injection", "config": config},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return Policy.objects.get(pk=response.json()["id"])


@pytest.mark.django_db
def test_fault_policies_are_registered_by_reviewers_with_a_checked_config(reviewer_api, viewer_api):
    policy = _fault_policy(reviewer_api, seed=7)
    assert policy.kind == Policy.Kind.FAULT_INJECTION
    assert policy.config == {"fault": None, "seed": 7, "clean_share": 0.1}
    bad = reviewer_api.post(
        "/api/policies/",
        {"name": "f2", "kind": "fault_injection", "config": {"fault": "set_fire", "x": 1}},
        format="json",
    )
    assert bad.status_code == 400 and "fault" in bad.json()["detail"]["config"][0]
    for config, problem in (
        ({"seed": "7"}, "seed: Input should be a valid integer"),
        ({"seed": True}, "seed: Input should be a valid integer"),
        ([1], "must be a JSON object"),
    ):
        response = reviewer_api.post(
            "/api/policies/",
            {"name": "f5", "kind": "fault_injection", "config": config},
            format="json",
        )
        assert response.status_code == 400, config
        assert response.json()["detail"]["config"] == [problem], response.json()
    wrong_kind = reviewer_api.post(
        "/api/policies/",
        {"name": "f3", "kind": "gold", "config": {"seed": 1}},
        format="json",
    )
    assert wrong_kind.status_code == 400
    refused = viewer_api.post(
        "/api/policies/", {"name": "f4", "kind": "fault_injection"}, format="json"
    )
    assert refused.status_code == 403


@pytest.fixture
def calibrated(db, tmp_path, reviewer):
    """A fault-injection policy evaluated on arena tasks of the real bookstore package."""
    from tasks.synthesis.graph_tasks import Difficulty, GraphTaskSynthesizer
    from training.service import evaluate_tasks, record_trajectory

    environment = factories.make_package_environment(tmp_path)
    package = load_package(environment.package_path)
    policy = _fault_policy(token_client(reviewer), clean_share=0.2, seed=1)
    evolution_round = factories.make_round(policy=policy)
    evaluation = factories.make_evaluation(evolution_round)
    with SandboxPool(workers=1) as pool:
        with GraphTaskSynthesizer(package, pool, llm=None, tier="explicit") as synthesizer:
            specs = synthesizer.synthesize(
                6, Difficulty(steps=3, writes=1, distractors=1, min_steps=2), seed=2
            )
        tasks = record_tasks(environment, specs, split=Task.Split.ARENA)
        for task, trajectory in evaluate_tasks(policy, tasks, pool):
            evaluation.trajectories.add(record_trajectory(trajectory, task, policy))
    return evaluation


def test_an_evaluation_of_the_policy_is_calibrated_from_the_api(
    calibrated, reviewer_api, viewer_api, roleless
):
    rows = Trajectory.objects.filter(evaluations=calibrated)
    faults = [row.metadata["injected_fault"]["fault"] for row in rows]
    assert len(faults) >= 3 and set(faults) <= set(EXPECTED_LABELS)
    url = f"/api/evaluations/{calibrated.pk}/calibration/"
    data = reviewer_api.get(url).json()
    assert data["episodes"] == len(faults) and data["without_fault"] == 0
    labels = {row["label"]: row for row in data["labels"]}
    for fault in set(faults) - {NO_FAULT}:
        for label in EXPECTED_LABELS[fault]:
            assert labels[label]["true_positives"] >= 1, (fault, label)
            assert labels[label]["recall"] is not None
    assert data["clean_with_labels"] == 0
    assert data["verdict"] == "too_few" and data["meets_target"] is False
    assert {row["label"] for row in data["round_labels"]} == set(labels)
    # viewers read the figures (counts and label names: no gold data); others may not
    shown = viewer_api.get(url)
    assert shown.status_code == 200 and shown.json() == data
    for task in Task.objects.filter(trajectories__evaluations=calibrated):
        for step in task.gold_chain:
            for value in step["arguments"].values():
                if isinstance(value, str) and len(value) > 3:
                    assert value not in shown.content.decode()
    assert token_client(roleless).get(url).status_code == 403
    from rest_framework.test import APIClient

    assert APIClient().get(url).status_code in (401, 403)


def test_the_console_shows_the_calibration_and_registers_fault_policies(
    client, calibrated, viewer, reviewer
):
    client.force_login(viewer)
    page = client.get(reverse("evaluation-calibration", args=[calibrated.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="calibration-labels"' in body and 'id="calibration-faults"' in body
    assert 'id="clean-with-labels">0<' in body and 'id="calibration-round-labels"' in body
    assert 'data-verdict="too_few"' in body  # six episodes judge no label
    round_page = client.get(reverse("round-detail", args=[calibrated.round.number]))
    assert 'id="calibration-link"' in round_page.content.decode()
    ordinary = factories.make_evaluation(factories.make_round(policy=factories.make_policy()))
    empty = client.get(reverse("evaluation-calibration", args=[ordinary.pk])).content.decode()
    assert 'data-verdict="not_measured"' in empty and 'id="calibration-empty"' in empty
    form = {"name": "console-faults", "fault": "wrong_write", "seed": "3", "clean_share": "0"}
    assert client.post(reverse("policy-create-fault"), form).status_code == 403
    client.force_login(reviewer)
    assert client.post(reverse("policy-create-fault"), form).status_code == 302
    created = Policy.objects.get(name="console-faults")
    assert created.config == {"fault": "wrong_write", "seed": 3, "clean_share": 0.0}
    bad = client.post(reverse("policy-create-fault"), {**form, "clean_share": "2"})
    assert bad.status_code == 400 and "clean_share" in bad.content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_round_of_the_fault_policy_is_calibrated(tmp_path, settings, reviewer):
    """From the API end to end: register the policy, start a round with it (no training),
    read the calibration of its evaluation."""
    from environments.registry import record_package
    from tests.support.sample_package import build_sample_package
    from tests.test_round_flow import wait_round

    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    record_package(build_sample_package(tmp_path / "shop", extra_books=20))
    api = token_client(reviewer)
    policy = _fault_policy(api, seed=2, clean_share=0.2)
    trained = api.post("/api/rounds/start/", {"policy": policy.pk}, format="json")
    assert trained.status_code == 400 and "train: false" in str(trained.json()), trained.json()
    started = api.post(
        "/api/rounds/start/",
        {
            "policy": policy.pk,
            "train": False,
            "tasks_per_environment": 8,
            "instruction_tier": "explicit",
            "max_walk_length": 4,
        },
        format="json",
    )
    assert started.status_code == 202, started.json()
    number = started.json()["number"]
    done = wait_round(number, {"awaiting_approval", "done", "failed"}, timeout=300)
    assert done.status == "done", (done.status, done.failure_reason)
    assert not done.proposals.exists()  # injected failures are no weakness to expand on
    from arena.rounds import default_policy

    assert default_policy() != policy  # the next round goes on with an agent, not the instrument
    evaluation = done.evaluations.get()
    data = api.get(f"/api/evaluations/{evaluation.pk}/calibration/").json()
    assert data["episodes"] == evaluation.task_count >= 4 and data["without_fault"] == 0
    assert data["clean_with_labels"] == 0
    faults = {row["fault"] for row in data["faults"]} - {NO_FAULT}
    assert faults and all(
        row["recovered"] == row["episodes"] for row in data["faults"] if row["fault"] in faults
    )


def test_a_wrong_write_never_edits_the_serial_key_a_create_is_given():
    """A created row's serial is arbitrary (the state comparison ignores it): editing it would
    be no wrong write at all."""
    chain = [
        {"tool": "create_city", "arguments": {"geonameid": 9001, "name": "Oslo"}, "kind": "write"}
    ]
    diff = {"city": {"added": [], "key": ["geonameid"], "surrogate": True}}
    task = {**TASK, "gold_chain": chain, "expected_diff": diff, "reference_answer": None}
    for seed in range(8):
        turn = plan_episode(task, f"t{seed}", seed=seed, fault="wrong_write").turns[0]
        assert turn.arguments == {"geonameid": 9001, "name": "Oslo (edited)"}
