"""The gold data of evaluation tasks (arena, held-out) is for reviewers and admins only.

Every API endpoint (enumerated from the router registry: list, each row's detail, every GET
action) and every console page (enumerated from the console URL conf) is read as a viewer, and
the bodies must not contain any of the sentinel values planted in the gold data of an arena
and a held-out task: reference answers, gold-chain arguments and results, expected diff rows,
solutions, verification scripts, expected state hashes, and reward reasons, label evidence,
proposal evidence and a written diagnosis that quote them. A new serializer or page that
shows them fails here without editing this file (a new console page must be listed below).
Reviewers and admins still see them on the task detail; a train task's answer stays public.
The episode API (the agent side) returns none of them to anyone.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from arena.models import ArenaEvaluation, FailureLabel
from aw_site import console_urls
from aw_site.api_urls import router
from environments.page_tabs import tab_names
from environments.registry import record_package
from serving.episode_service import episode_service
from tasks.models import Task
from tasks.privacy import HIDDEN_NOTE
from tests.conftest import token_client
from tests.support import factories
from tests.support.sample_package import build_sample_package
from training.models import Trajectory

pytestmark = pytest.mark.django_db

# Planted in the gold data of the arena and held-out tasks (suffixed with the split).
SECRETS = {
    "reference_answer": "ZEBRA-7731",
    "gold_argument": "QUOKKA-4412",
    "gold_result": "AXOLOTL-3307",
    "expected_diff_row": "NARWHAL-5590",
    "solution": "OCELOT-2218",
    "verification_script": "PANGOLIN-9043",
    "template_param": "IBEX-6650",
    "expected_state_hash": "7731beef7731beef",  # the start of both tasks' hashes
}
TRAIN_ANSWER = "TRAIN-ANSWER-1188"
TRAIN_ARGUMENT = "TRAIN-ARGUMENT-2299"


def gold_fields(tag: str, *, state_hash: str) -> dict:
    s = {k: f"{v}-{tag}" for k, v in SECRETS.items() if k != "expected_state_hash"}
    return {
        "instruction": f"Find the code of the crate in aisle 4 ({tag}).",
        "reference_answer": {"code": s["reference_answer"]},
        "gold_chain": [
            {
                "tool": "lookup_crate",
                "arguments": {"serial": s["gold_argument"]},
                "result": {"code": s["gold_result"]},
            }
        ],
        "expected_diff": {"crate": {"added": [{"id": 9, "note": s["expected_diff_row"]}]}},
        "expected_state_hash": state_hash,
        "solution": f"def solve(call):\n    return {s['solution']!r}\n",
        "verification_script": f"assert answer == {s['verification_script']!r}\n",
        "metadata": {
            "difficulty": {"steps": 1, "level": "easy"},
            "tools": ["lookup_crate"],
            "extra": {
                "template_instruction": "Find the code of the crate in aisle {aisle}.",
                "gold_results": [{"code": s["gold_result"]}],
                "params": {"serial": s["template_param"]},
                "answer": {"shape": "value", "value": s["reference_answer"]},
            },
        },
    }


def leaked(body: str) -> list[str]:
    return [name for name, value in SECRETS.items() if value in body]


@pytest.fixture
def scene(db):
    environment = factories.make_environment("warehouse", tasks=0)
    arena = factories.make_task(
        environment,
        split=Task.Split.ARENA,
        **gold_fields("arena", state_hash=SECRETS["expected_state_hash"] + "a" * 48),
    )
    heldout = factories.make_task(
        environment,
        split=Task.Split.HELDOUT,
        **gold_fields("heldout", state_hash=SECRETS["expected_state_hash"] + "b" * 48),
    )
    train = factories.make_task(
        environment,
        split=Task.Split.TRAIN,
        instruction="Find the code of the crate in aisle 1.",
        reference_answer={"code": TRAIN_ANSWER},
        gold_chain=[{"tool": "lookup_crate", "arguments": {"serial": TRAIN_ARGUMENT}}],
    )
    policy = factories.make_policy("privacy-policy", kind="local_hf")
    evolution_round = factories.make_round(policy=policy)
    evaluation = factories.make_evaluation(evolution_round)
    arena_answer = SECRETS["reference_answer"] + "-arena"
    report = factories.make_diagnosis(
        evolution_round,
        evaluation=evaluation,
        analysis=(
            "Evaluated 2 episodes in 1 environment(s); 2 failed (success rate 0.0%).\n"
            f"Example of wrong_answer: task {arena.pk} in warehouse@v1: answer '42' does not "
            f"match reference {{'code': '{arena_answer}'}}.\n"
            f"The agent answered 42 where {arena_answer} was expected and never passed "
            f"{SECRETS['gold_argument']}-arena to lookup_crate."
        ),
    )
    reward = {
        "total": 0.2,
        "success": False,
        "components": {
            "answer": {
                "score": 0.0,
                "weight": 0.6,
                "reason": f"expected {{'code': '{arena_answer}'}}, got '42'",
                "applicable": True,
            },
            "state": {
                "score": 0.0,
                "weight": 0.3,
                "reason": f"missing row note={SECRETS['expected_diff_row']}-arena",
                "applicable": True,
            },
            "format": {"score": 1.0, "weight": 0.1, "reason": "1/1 tool calls well-formed"},
        },
    }
    steps = [
        {
            "role": "assistant",
            "content": "Looking the crate up.",
            "tool_name": "lookup_crate",
            "tool_arguments": {"serial": "wrong-serial"},
            "tool_result": {"code": "41"},
        },
        {"role": "assistant", "content": "42"},
    ]
    failed = factories.make_trajectory(
        arena, policy, steps=steps, reward=reward, evaluation=evaluation, final_answer="42"
    )
    FailureLabel.objects.create(
        trajectory=failed,
        report=report,
        label="wrong_answer",
        evidence={
            "kind": "wrong_answer",
            "steps": [2],
            "capability": "answer synthesis",
            "explanation": f"answer '42' does not match reference '{arena_answer}'",
            "details": {
                "final_answer": "42",
                "reference_answer": {"code": arena_answer},
                "mismatches": [
                    {"tool": "lookup_crate", "expected": {"serial": SECRETS["gold_argument"]}}
                ],
            },
        },
    )
    heldout_trajectory = factories.make_trajectory(
        heldout,
        policy,
        steps=steps,
        final_answer="42",
        reward={
            "answer": {"score": 0.0, "reason": f"expected {SECRETS['reference_answer']}-heldout"},
            "state": {"score": 0.0, "reason": f"missing {SECRETS['expected_diff_row']}-heldout"},
            "total": 0.1,
        },
    )
    train_trajectory = factories.make_trajectory(train, policy, steps=steps, final_answer="7")
    # Runs that quote the gold data: the gold chain played back with a fault, and a solved run.
    gold_steps = [
        {
            "role": "assistant",
            "content": f"Calling lookup_crate with {SECRETS['gold_argument']}-arena.",
            "tool_name": "lookup_crate",
            "tool_arguments": {"serial": f"{SECRETS['gold_argument']}-arena"},
            "tool_result": {"code": f"{SECRETS['gold_result']}-arena"},
            "state_diff": {"crate": {"added": [{"note": f"{SECRETS['expected_diff_row']}-arena"}]}},
        },
        {"role": "assistant", "content": f'{{"code": "{arena_answer}"}}'},
    ]
    faulty = factories.make_policy("privacy-faults", kind="fault_injection")
    oracle = factories.make_trajectory(
        arena,
        faulty,
        steps=gold_steps,
        evaluation=evaluation,
        final_answer=f'{{"code": "{arena_answer}"}}',
        state_diff={"crate": {"added": [{"note": f"{SECRETS['expected_diff_row']}-arena"}]}},
        metadata={"injected_fault": {"fault": "wrong_argument", "gold_step": 0, "seed": 3}},
        final_state_hash=arena.expected_state_hash,
    )
    heldout_steps = [
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_name": "lookup_crate",
            "tool_arguments": {"serial": f"{SECRETS['gold_argument']}-heldout"},
            "tool_result": {"code": f"{SECRETS['gold_result']}-heldout"},
        },
        {"role": "assistant", "content": f"The code is {SECRETS['reference_answer']}-heldout."},
    ]
    solved = factories.make_trajectory(
        heldout,
        policy,
        success=True,
        steps=heldout_steps,
        final_answer=f"The code is {SECRETS['reference_answer']}-heldout.",
    )
    proposal = factories.make_proposal(
        evolution_round,
        environment=environment,
        report=report,
        evidence={
            "failed_episodes": 2,
            "labels": {"wrong_answer": 2},
            "task_ids": [str(arena.pk), str(heldout.pk)],
            "examples": [
                {
                    "task_id": str(arena.pk),
                    "label": "wrong_answer",
                    "steps": [2],
                    "explanation": f"answer '42' does not match reference '{arena_answer}'",
                }
            ],
        },
    )
    factories.make_training_run(policy, metrics=2)
    factories.make_job("tasks.synthesize", result={"created": 3, "by_split": {"arena": 1}})
    return {
        "environment": environment,
        "arena": arena,
        "heldout": heldout,
        "train": train,
        "round": evolution_round,
        "report": report,
        "failed": failed,
        "heldout_trajectory": heldout_trajectory,
        "train_trajectory": train_trajectory,
        "oracle": oracle,
        "solved": solved,
        "proposal": proposal,
    }


# --- the REST API -----------------------------------------------------------------------------


def api_read_urls() -> list[str]:
    """Every GET the router serves: lists, the detail of every stored row, every GET action."""
    urls = []
    for prefix, viewset, _basename in router.registry:
        base = f"/api/{prefix}/"
        urls.append(base)
        field = getattr(viewset, "lookup_field", "pk")
        keys = list(viewset.queryset.model.objects.order_by("pk").values_list(field, flat=True))
        for action in viewset.get_extra_actions():
            if "get" not in action.mapping:
                continue
            if action.detail:
                urls.extend(f"{base}{key}/{action.url_path}/" for key in keys)
            else:
                urls.append(f"{base}{action.url_path}/")
        urls.extend(f"{base}{key}/" for key in keys)
    return urls


def test_no_api_endpoint_shows_a_viewer_evaluation_gold_data(scene, viewer_api):
    urls = api_read_urls()
    for needed in (
        f"/api/tasks/{scene['arena'].pk}/",
        f"/api/trajectories/{scene['failed'].pk}/",
        f"/api/diagnoses/{scene['report'].pk}/",
        f"/api/proposals/{scene['proposal'].pk}/",
    ):
        assert needed in urls
    for url in urls:
        response = viewer_api.get(url)
        assert response.status_code == 200, (url, response.status_code)
        assert not leaked(response.content.decode()), (url, leaked(response.content.decode()))


def test_viewer_task_api_nulls_gold_fields_of_evaluation_tasks_only(scene, viewer_api):
    for name in ("arena", "heldout"):
        data = viewer_api.get(f"/api/tasks/{scene[name].pk}/").json()
        assert data["answers_hidden"] is True
        for field in (
            "reference_answer",
            "gold_chain",
            "expected_diff",
            "expected_state_hash",
            "solution",
            "verification_script",
        ):
            assert data[field] is None, field
        assert data["instruction"] == scene[name].instruction
        assert data["metadata"]["extra"] == {
            "template_instruction": "Find the code of the crate in aisle {aisle}."
        }
    train = viewer_api.get(f"/api/tasks/{scene['train'].pk}/").json()
    assert train["answers_hidden"] is False
    assert train["reference_answer"] == {"code": TRAIN_ANSWER}
    assert train["gold_chain"][0]["arguments"] == {"serial": TRAIN_ARGUMENT}


def test_viewer_trajectory_api_keeps_scores_and_drops_reasons(scene, viewer_api):
    reward = viewer_api.get(f"/api/trajectories/{scene['failed'].pk}/").json()["reward"]
    assert reward["total"] == 0.2 and reward["success"] is False
    assert reward["components"]["answer"] == {"score": 0.0, "weight": 0.6, "applicable": True}
    flat = viewer_api.get(f"/api/trajectories/{scene['heldout_trajectory'].pk}/").json()["reward"]
    assert flat == {"answer": {"score": 0.0}, "state": {"score": 0.0}, "total": 0.1}
    train = viewer_api.get(f"/api/trajectories/{scene['train_trajectory'].pk}/").json()["reward"]
    assert "reason" in train["answer"]


def test_viewer_sees_a_fault_run_as_its_shape_and_a_solved_run_masked(scene, viewer_api):
    data = viewer_api.get(f"/api/trajectories/{scene['oracle'].pk}/").json()
    assert data["final_answer"] == HIDDEN_NOTE
    assert data["metadata"] == {"injected_fault": {"fault": "wrong_argument", "gold_step": 0}}
    call = data["steps"][0]
    assert call["role"] == "assistant"
    assert call["tool_name"] == call["tool_arguments"] == call["tool_result"] == "[hidden]"
    assert data["state_diff"] == "[hidden]"
    listed = viewer_api.get("/api/trajectories/", {"policy": scene["oracle"].policy_id}).json()
    assert listed["results"][0]["final_answer"] == HIDDEN_NOTE
    solved = viewer_api.get(f"/api/trajectories/{scene['solved'].pk}/").json()
    assert solved["final_answer"] == HIDDEN_NOTE  # the answer earned credit
    assert solved["steps"][0]["tool_name"] == "lookup_crate"  # what the agent did stays
    assert solved["steps"][0]["tool_arguments"] == {"serial": "[hidden]"}
    # A wrong answer on an evaluation task and a train task's run stay readable.
    assert viewer_api.get(f"/api/trajectories/{scene['failed'].pk}/").json()["final_answer"] == "42"
    train = viewer_api.get(f"/api/trajectories/{scene['train_trajectory'].pk}/").json()
    assert train["final_answer"] == "7"


def test_short_gold_values_and_long_gold_results_are_hidden_from_viewers(scene, viewer_api):
    """A count answer of 4 or a code "HN" cannot be masked inside text; whole values equal to
    a gold value are masked however short, the step that states a credited answer is hidden,
    and a read whose result was too long to store is matched by its digest."""
    from tasks.gold_results import stored_result

    rows = [{"id": n, "note": f"row {n}"} for n in range(400)]
    task = factories.make_task(
        scene["environment"],
        split=Task.Split.ARENA,
        instruction="How many crates does the aisle of code HN hold?",
        reference_answer=4,
        gold_chain=[
            {
                "tool": "lookup_crate",
                "kind": "read",
                "arguments": {"code": "HN"},
                "inputs": {},
                "result": {"count": 4},
            },
            {
                "tool": "list_rows",
                "kind": "read",
                "arguments": {},
                "inputs": {"aisle": {"step": 0, "field": "count", "item": None}},
                "result": stored_result(rows),
            },
        ],
    )
    steps = [
        {
            "role": "assistant",
            "content": "I read the count of the aisle first.",
            "tool_name": "lookup_crate",
            "tool_arguments": {"code": "HN"},
            "tool_result": {"count": 4, "aisle": "north"},
        },
        {"role": "assistant", "tool_name": "list_rows", "tool_arguments": {}, "tool_result": rows},
        {"role": "assistant", "content": '{"answer": 4}'},
    ]
    agent = factories.make_trajectory(
        task, scene["round"].policy, success=True, steps=steps, final_answer='{"answer": 4}'
    )
    data = viewer_api.get(f"/api/trajectories/{agent.pk}/").json()
    lookup, listing, answer = data["steps"]
    assert lookup["tool_arguments"] == {"code": "[hidden]"}
    assert lookup["tool_result"] == {"count": "[hidden]", "aisle": "north"}
    # The chain's structure ("read", the columns its bindings use) is no gold value.
    assert lookup["content"] == "I read the count of the aisle first."
    assert listing["tool_result"] == "[hidden]"
    assert answer["content"] == HIDDEN_NOTE and data["final_answer"] == HIDDEN_NOTE
    gold = factories.make_trajectory(
        task,
        factories.make_policy("privacy-gold", kind="gold"),
        success=True,
        steps=steps,
        final_answer='{"answer": 4}',
    )
    replayed = viewer_api.get(f"/api/trajectories/{gold.pk}/").json()
    assert {s["tool_name"] for s in replayed["steps"]} <= {"[hidden]", None, ""}


@pytest.mark.parametrize("role_client", ["reviewer_api", "admin_api"])
def test_reviewers_see_fault_runs_in_full(scene, role_client, request):
    client = request.getfixturevalue(role_client)
    data = client.get(f"/api/trajectories/{scene['oracle'].pk}/").json()
    assert SECRETS["reference_answer"] in data["final_answer"]
    assert data["steps"][0]["tool_arguments"] == {"serial": f"{SECRETS['gold_argument']}-arena"}
    assert data["metadata"]["injected_fault"]["seed"] == 3


def test_viewer_diagnosis_and_proposal_keep_counts_and_drop_quotes(scene, viewer_api):
    report = viewer_api.get(f"/api/diagnoses/{scene['report'].pk}/").json()
    assert report["analysis"].startswith("Evaluated 2 episodes")
    assert "Example of" not in report["analysis"] and "[hidden]" in report["analysis"]
    assert report["distribution"] == scene["report"].distribution
    evidence = viewer_api.get(f"/api/proposals/{scene['proposal'].pk}/").json()["evidence"]
    assert evidence["labels"] == {"wrong_answer": 2}
    assert evidence["examples"] == [
        {"task_id": str(scene["arena"].pk), "label": "wrong_answer", "steps": [2]}
    ]


@pytest.mark.parametrize("role_client", ["reviewer_api", "admin_api"])
def test_reviewers_and_admins_see_the_gold_data(scene, role_client, request):
    client = request.getfixturevalue(role_client)
    for name in ("arena", "heldout"):
        data = client.get(f"/api/tasks/{scene[name].pk}/").json()
        assert data["answers_hidden"] is False
        assert data["reference_answer"] == {"code": f"{SECRETS['reference_answer']}-{name}"}
        assert data["gold_chain"] == scene[name].gold_chain
        assert data["expected_diff"] == scene[name].expected_diff
        assert data["metadata"] == scene[name].metadata
    reward = client.get(f"/api/trajectories/{scene['failed'].pk}/").json()["reward"]
    assert SECRETS["reference_answer"] in reward["components"]["answer"]["reason"]
    report = client.get(f"/api/diagnoses/{scene['report'].pk}/").json()
    assert report["analysis"] == scene["report"].analysis
    proposal = client.get(f"/api/proposals/{scene['proposal'].pk}/").json()
    assert proposal["evidence"] == scene["proposal"].evidence


# --- the console ------------------------------------------------------------------------------

POST_ONLY_PAGES = {
    "round-start",
    "proposal-review",
    "round-review",
    "policy-create",
    "policy-create-fault",
    "theme-build",
    "guide-dismiss",
    "task-mark",
    "catalogue-run-start",
}
REVIEWER_PAGES = {"environment-new", "training-run-new"}  # viewers get 403: nothing to leak


def console_urls_for(scene) -> list[str]:
    """Every console page, with every stored row it can show; a new page must be listed."""
    from aw_site.models import Job
    from environments.models import CatalogueRun
    from training.models import TrainingRun

    environments = [e.pk for e in [scene["environment"]]]
    builds = Job.objects.filter(kind="environments.build").values_list("pk", flat=True)
    catalogue_runs = [{"pk": pk} for pk in CatalogueRun.objects.values_list("pk", flat=True)]
    rows = {
        "environment-detail": [{"pk": pk} for pk in environments],
        "environment-tab": [{"pk": pk, "tab": tab} for pk in environments for tab in tab_names()],
        "task-detail": [{"pk": pk} for pk in Task.objects.values_list("pk", flat=True)],
        "trajectory-detail": [{"pk": pk} for pk in Trajectory.objects.values_list("pk", flat=True)],
        "training-run-detail": [
            {"pk": pk} for pk in TrainingRun.objects.values_list("pk", flat=True)
        ],
        "training-run-metrics": [
            {"pk": pk} for pk in TrainingRun.objects.values_list("pk", flat=True)
        ],
        "round-detail": [{"number": scene["round"].number}],
        "round-progress": [{"number": scene["round"].number}],
        "evaluation-calibration": [
            {"pk": pk} for pk in ArenaEvaluation.objects.values_list("pk", flat=True)
        ],
        "job-detail": [{"pk": pk} for pk in Job.objects.values_list("pk", flat=True)],
        "job-progress": [{"pk": pk} for pk in Job.objects.values_list("pk", flat=True)],
        "environment-build": [{"job": pk} for pk in builds],
        "environment-build-progress": [{"job": pk} for pk in builds],
        "catalogue-run": catalogue_runs,
        "catalogue-run-progress": catalogue_runs,
    }
    urls = []
    for pattern in console_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name in POST_ONLY_PAGES:
            continue
        if not pattern.pattern.converters:
            urls.append(reverse(pattern.name))
            continue
        assert pattern.name in rows, f"list the rows of the new console page {pattern.name!r}"
        urls.extend(reverse(pattern.name, kwargs=kwargs) for kwargs in rows[pattern.name])
    return urls


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_no_console_page_shows_a_viewer_evaluation_gold_data(scene, viewer):
    client = signed_in(viewer)
    urls = console_urls_for(scene)
    assert reverse("task-detail", args=[scene["arena"].pk]) in urls
    assert reverse("trajectory-detail", args=[scene["failed"].pk]) in urls
    refused = {reverse(name) for name in REVIEWER_PAGES}
    for url in urls:
        response = client.get(url)
        assert response.status_code == (403 if url in refused else 200), (url, response.status_code)
        body = response.content.decode()
        assert not leaked(body), (url, leaked(body))


def test_viewer_replay_of_a_fault_run_names_the_fault_only(scene, viewer, reviewer):
    page = reverse("trajectory-detail", args=[scene["oracle"].pk])
    body = signed_in(viewer).get(page).content.decode()
    assert 'id="oracle-hidden"' in body and 'id="injected-fault"' in body
    assert "wrong argument" in body and "at gold step 0" in body
    assert not leaked(body)
    full = signed_in(reviewer).get(page).content.decode()
    assert 'id="oracle-hidden"' not in full and f"{SECRETS['gold_argument']}-arena" in full


def test_viewer_console_shows_the_note_and_keeps_train_answers(scene, viewer):
    client = signed_in(viewer)
    for name in ("arena", "heldout"):
        body = client.get(reverse("task-detail", args=[scene[name].pk])).content.decode()
        assert HIDDEN_NOTE in body and scene[name].instruction in body
    replay = client.get(reverse("trajectory-detail", args=[scene["failed"].pk]))
    body = replay.content.decode()
    assert HIDDEN_NOTE in body and 'data-label="wrong_answer"' in body
    assert [c["name"] for c in replay.context["reward"]["components"]] == [
        "answer",
        "state",
        "format",
    ]
    assert all(not c["reason"] for c in replay.context["reward"]["components"])
    train = client.get(reverse("task-detail", args=[scene["train"].pk])).content.decode()
    assert TRAIN_ANSWER in train and TRAIN_ARGUMENT in train and HIDDEN_NOTE not in train


@pytest.mark.parametrize("role", ["reviewer", "admin_user"])
def test_reviewer_and_admin_console_show_the_gold_data(scene, role, request):
    client = signed_in(request.getfixturevalue(role))
    for name in ("arena", "heldout"):
        body = client.get(reverse("task-detail", args=[scene[name].pk])).content.decode()
        assert HIDDEN_NOTE not in body
        for key in (
            "reference_answer",
            "gold_argument",
            "expected_diff_row",
            "solution",
            "verification_script",
            "expected_state_hash",
        ):
            assert SECRETS[key] in body, key
    replay = client.get(reverse("trajectory-detail", args=[scene["failed"].pk])).content.decode()
    assert SECRETS["reference_answer"] in replay and SECRETS["gold_argument"] in replay
    round_page = client.get(reverse("round-detail", args=[scene["round"].number])).content
    assert SECRETS["reference_answer"] in round_page.decode()


# --- the agent side ---------------------------------------------------------------------------


@pytest.fixture
def bookstore(tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    yield environment
    episode_service().shutdown()


@pytest.mark.parametrize("role", ["viewer", "reviewer", "admin_user"])
def test_episode_api_never_returns_gold_data(bookstore, role, request):
    client = token_client(request.getfixturevalue(role))
    task = factories.make_task(
        bookstore,
        split=Task.Split.ARENA,
        **{
            **gold_fields("episode", state_hash=SECRETS["expected_state_hash"] + "c" * 48),
            "gold_chain": [
                {"tool": "get_book", "arguments": {"book_id": 1, "note": SECRETS["gold_argument"]}}
            ],
        },
    )
    created = client.post("/api/episodes/", {"task": task.pk}, format="json")
    assert created.status_code == 201, created.json()
    assert set(created.json()) == {
        "episode",
        "environment",
        "task",
        "instruction",
        "tools",
        "state_hash",
        "answer_contract",  # the answer's shape, never its value
        "prompt",  # the agent view: system prompt and instruction, no gold data
    }
    assert not leaked(created.content.decode())
    key = created.json()["episode"]
    client.post(
        f"/api/episodes/{key}/call/", {"tool": "get_book", "arguments": {"book_id": 1}}, "json"
    )
    finished = client.post(f"/api/episodes/{key}/finish/", {"answer": "wrong"}, format="json")
    assert finished.status_code == 200
    assert not leaked(finished.content.decode())
    reward = finished.json()["reward"]
    if role == "viewer":  # no oracle: a viewer replaying an arena task learns no score
        assert reward is None and finished.json()["reward_hidden"]
        return
    assert set(reward) == {"total", "success", "components", "gate"}
    for component in reward["components"].values():
        assert set(component) <= {"score", "weight", "applicable"}
    assert reward["components"]["answer"]["score"] == 0.0
