"""The HTTP episode API external trainers use: reset, tools, call, diff, finish with reward."""

from __future__ import annotations

import pytest

from environments.episode_service import episode_service
from environments.registry import record_package
from tasks.models import Task
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
