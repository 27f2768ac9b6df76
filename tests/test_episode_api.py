"""The HTTP episode API external trainers use: reset, tools, call, diff, finish with reward."""

from __future__ import annotations

import pytest

from environments.package import load_package
from environments.registry import record_package
from serving.episode_service import episode_service
from tasks.models import Task
from tasks.records import record_tasks
from tests.support.gold_tasks import READ_CONTRACT, WRITE_CHAIN, read_task, write_task
from tests.support.sample_package import build_sample_package

pytestmark = pytest.mark.django_db


@pytest.fixture
def bookstore(tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    yield environment
    episode_service().shutdown()


def test_episode_lifecycle_with_isolated_state(viewer_api, bookstore):
    first = viewer_api.post("/api/episodes/", {"environment": bookstore.pk}, format="json")
    second = viewer_api.post("/api/episodes/", {"environment": bookstore.pk}, format="json")
    assert first.status_code == 201, first.json()
    one, two = first.json()["episode"], second.json()["episode"]
    assert first.json()["state_hash"] == second.json()["state_hash"]
    names = [
        t["function"]["name"] for t in viewer_api.get(f"/api/episodes/{one}/tools/").json()["tools"]
    ]
    assert "place_order" in names

    call = viewer_api.post(
        f"/api/episodes/{one}/call/",
        {"tool": "update_stock", "arguments": {"book_id": 1, "stock": 99}},
        format="json",
    ).json()
    assert call["ok"] is True and call["result"] == {"book_id": 1, "stock": 99}

    diff_one = viewer_api.get(f"/api/episodes/{one}/diff/").json()
    diff_two = viewer_api.get(f"/api/episodes/{two}/diff/").json()
    assert diff_one["diff"]["book"]["changed"], diff_one
    assert not any(diff_two["diff"].get(t, {}).get("changed") for t in diff_two["diff"])
    assert diff_one["state_hash"] != diff_two["state_hash"]

    bad = viewer_api.post(
        f"/api/episodes/{one}/call/", {"tool": "get_book", "arguments": {}}, format="json"
    ).json()
    assert (
        bad["ok"] is False
        and bad["error_kind"] == "invalid_arguments"
        and "book_id" in bad["error"]
    )

    finished = viewer_api.post(f"/api/episodes/{one}/finish/", {"answer": None}, format="json")
    assert finished.status_code == 200 and finished.json()["calls"] == 2
    gone = viewer_api.get(f"/api/episodes/{one}/diff/")
    assert gone.status_code == 404 and "no open episode" in gone.json()["error"]


def test_episodes_are_private_to_their_owner(viewer_api, reviewer_api, bookstore):
    key = viewer_api.post("/api/episodes/", {"environment": bookstore.pk}, format="json").json()[
        "episode"
    ]
    assert reviewer_api.get(f"/api/episodes/{key}/tools/").status_code == 404


def test_per_user_episode_limit(viewer_api, bookstore, settings):
    settings.AW_MAX_EPISODES_PER_USER = 2
    for _ in range(2):
        assert (
            viewer_api.post(
                "/api/episodes/", {"environment": bookstore.pk}, format="json"
            ).status_code
            == 201
        )
    refused = viewer_api.post("/api/episodes/", {"environment": bookstore.pk}, format="json")
    assert refused.status_code == 429 and "per-user limit" in refused.json()["error"]


def test_finish_of_a_task_episode_returns_the_reward(viewer_api, bookstore):
    task = Task.objects.create(
        environment=bookstore,
        kind="graph",
        instruction="What is the title of book 1?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}}],
        reference_answer="Dune",
        signature="book-1-title",
    )
    book = viewer_api.post("/api/episodes/", {"task": task.pk}, format="json").json()
    assert book["instruction"] == task.instruction
    key = book["episode"]
    result = viewer_api.post(
        f"/api/episodes/{key}/call/",
        {"tool": "get_book", "arguments": {"book_id": 1}},
        format="json",
    ).json()
    title = result["result"]["title"]
    reward = viewer_api.post(
        f"/api/episodes/{key}/finish/", {"answer": title}, format="json"
    ).json()["reward"]
    assert set(reward) >= {"total", "components"}
    assert reward["components"]["answer"]["score"] == (1.0 if title == "Dune" else 0.0)


def test_bad_episode_requests(viewer_api, bookstore):
    assert (
        "give a verified environment"
        in viewer_api.post("/api/episodes/", {}, format="json").json()["error"]
    )
    assert (
        viewer_api.post("/api/episodes/", {"environment": 424242}, format="json").status_code == 400
    )


@pytest.fixture
def gold_tasks(bookstore):
    """The read and the write task of tests/support/gold_tasks.py, stored for the bookstore."""
    package = load_package(bookstore.package_path)
    pool = episode_service().pool
    specs = [read_task(pool, package), write_task(pool, package)]
    read, write = record_tasks(bookstore, specs)
    return read, write


def _start(api, task) -> dict:
    created = api.post("/api/episodes/", {"task": task.pk}, format="json")
    assert created.status_code == 201, created.json()
    return created.json()


def _call(api, key: str, tool: str, arguments: dict) -> dict:
    body = {"tool": tool, "arguments": arguments}
    return api.post(f"/api/episodes/{key}/call/", body, format="json").json()


def _finish(api, key: str, **body) -> dict:
    finished = api.post(f"/api/episodes/{key}/finish/", body, format="json")
    assert finished.status_code == 200, finished.json()
    return finished.json()


def test_task_episode_offers_submit_answer_with_the_contract(viewer_api, bookstore, gold_tasks):
    read, _ = gold_tasks
    created = _start(viewer_api, read)
    assert created["answer_contract"] == READ_CONTRACT.to_dict()
    tools = {t["function"]["name"]: t for t in created["tools"]}
    assert tools["submit_answer"] == READ_CONTRACT.tool_schema()
    assert {"get_book", "place_order"} <= set(tools)
    listed = viewer_api.get(f"/api/episodes/{created['episode']}/tools/").json()["tools"]
    assert listed == created["tools"]
    plain = viewer_api.post("/api/episodes/", {"environment": bookstore.pk}, format="json").json()
    assert plain["answer_contract"] is None
    assert "submit_answer" not in {t["function"]["name"] for t in plain["tools"]}
    unknown = _call(viewer_api, plain["episode"], "submit_answer", {"answer": "Dune"})
    assert unknown["ok"] is False and unknown["error_kind"] == "unknown_tool"


def test_finishing_without_calls_or_answer_scores_zero(viewer_api, gold_tasks):
    for task in gold_tasks:  # a read task and a write task: doing nothing earns nothing
        finished = _finish(viewer_api, _start(viewer_api, task)["episode"])
        assert finished["reward"]["success"] is False, task.instruction
        assert finished["reward"]["total"] == 0.0, finished["reward"]
        assert finished["answer_source"] is None and finished["calls"] == 0


def test_gold_chain_and_submit_answer_solve_the_write_task(viewer_api, gold_tasks):
    _, write = gold_tasks
    key = _start(viewer_api, write)["episode"]
    for call in WRITE_CHAIN:
        assert _call(viewer_api, key, call["tool"], call["arguments"])["ok"] is True
    before = viewer_api.get(f"/api/episodes/{key}/diff/").json()["state_hash"]
    submitted = _call(viewer_api, key, "submit_answer", {"answer": 11.25})
    assert submitted["ok"] is True and submitted["error_kind"] is None
    assert submitted["result"] == {"recorded": {"answer": 11.25}, "read_as": 11.25}
    after = viewer_api.get(f"/api/episodes/{key}/diff/").json()["state_hash"]
    assert after == before  # submit_answer never reaches the sandbox
    finished = _finish(viewer_api, key)
    assert finished["answer_source"] == "submit_answer" and finished["calls"] == 2
    reward = finished["reward"]
    assert reward["success"] is True and reward["total"] == 1.0, reward
    assert reward["components"]["state"]["score"] == 1.0


def test_finish_answer_wins_over_the_recorded_submission(viewer_api, gold_tasks):
    read, _ = gold_tasks
    key = _start(viewer_api, read)["episode"]
    _call(viewer_api, key, "get_book", {"book_id": 1})
    assert _call(viewer_api, key, "submit_answer", {"answer": "Solaris"})["ok"] is True
    finished = _finish(viewer_api, key, answer="Dune")
    assert finished["answer_source"] == "finish"
    assert finished["reward"]["success"] is True and finished["reward"]["total"] == 1.0


@pytest.mark.parametrize(
    "answer",
    [
        "Dune",  # the value itself
        '{"answer": "Dune"}',  # the final JSON block the instructions describe
        'The title is:\n```json\n{"answer": "Dune"}\n```',  # a whole final message
        {"answer": "Dune"},
    ],
)
def test_finish_reads_the_answer_as_a_final_message_would_be(viewer_api, gold_tasks, answer):
    read, _ = gold_tasks
    key = _start(viewer_api, read)["episode"]
    _call(viewer_api, key, "get_book", {"book_id": 1})
    reward = _finish(viewer_api, key, answer=answer)["reward"]
    assert reward["success"] is True and reward["total"] == 1.0, (answer, reward)


def test_malformed_and_hedged_submissions_are_refused(viewer_api, gold_tasks):
    read, write = gold_tasks
    key = _start(viewer_api, read)["episode"]
    _call(viewer_api, key, "get_book", {"book_id": 1})
    hedged = _call(viewer_api, key, "submit_answer", {"answer": ["Dune", "Solaris"]})
    assert hedged["ok"] is False and hedged["error_kind"] == "invalid_arguments"
    assert "candidates" in hedged["error"]
    for arguments in ({}, {"answer": "Dune", "confidence": 0.9}, {"answer": None}):
        refused = _call(viewer_api, key, "submit_answer", arguments)
        assert refused["ok"] is False and refused["error_kind"] == "invalid_arguments", arguments
    finished = _finish(viewer_api, key)  # nothing was recorded
    assert finished["answer_source"] is None
    assert finished["reward"]["success"] is False
    assert finished["reward"]["total"] <= 0.2

    key = _start(viewer_api, write)["episode"]
    for call in WRITE_CHAIN:
        _call(viewer_api, key, call["tool"], call["arguments"])
    reward = _finish(viewer_api, key, answer=[11.25, 12.0])["reward"]  # a hedge given at finish
    assert reward["success"] is False and 0.0 < reward["total"] <= 0.2
    assert reward["components"]["answer"]["score"] == 0.0
    assert "reason" not in reward["components"]["answer"]  # the agent side gets scores only


def test_programmatic_task_is_judged_by_its_verification_script(viewer_api, bookstore):
    package = load_package(bookstore.package_path)
    spec = read_task(episode_service().pool, package)
    spec.kind, spec.signature = "programmatic", "programmatic-title-of-book-1"
    spec.verification = (
        "def verify(answer, call):\n    return call('get_book', book_id=1)['title'] == answer\n"
    )
    (task,) = record_tasks(bookstore, [spec])
    rewards = {}
    for answer in ("Dune", "Solaris"):
        key = _start(viewer_api, task)["episode"]
        _call(viewer_api, key, "get_book", {"book_id": 1})
        assert _call(viewer_api, key, "submit_answer", {"answer": answer})["ok"] is True
        rewards[answer] = _finish(viewer_api, key)["reward"]
    assert rewards["Dune"]["success"] is True and rewards["Dune"]["total"] == 1.0
    assert rewards["Dune"]["components"]["answer"]["score"] == 1.0
    assert rewards["Solaris"]["success"] is False
    assert rewards["Solaris"]["components"]["answer"]["score"] == 0.0
