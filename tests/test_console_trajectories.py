"""Finding failed trajectories and replaying one step by step."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.trajectory_views import reward_breakdown
from tests.support import factories


@pytest.fixture
def scene(db):
    return factories.make_review_scene()


@pytest.fixture
def signed_in(client, viewer):
    client.force_login(viewer)
    return client


def listed(client, **params) -> list[int]:
    return [t.pk for t in client.get(reverse("trajectory-list"), params).context["page"]]


@pytest.mark.django_db
def test_list_filters_by_outcome_label_round_and_environment(signed_in, scene):
    failed, passed = scene["failed"].pk, scene["passed"].pk
    other_env = factories.make_environment("weather")
    other = factories.make_trajectory(factories.make_task(other_env), labels=["premature_answer"])
    assert set(listed(signed_in)) == {failed, passed, other.pk}
    assert set(listed(signed_in, outcome="failed")) == {failed, other.pk}
    assert listed(signed_in, label="tool_error") == [failed]
    assert listed(signed_in, label="premature_answer") == [other.pk]
    assert set(listed(signed_in, round=scene["round"].number)) == {failed, passed}
    assert listed(signed_in, round=scene["round"].number, outcome="failed") == [failed]
    assert listed(signed_in, environment=other_env.pk) == [other.pk]
    assert listed(signed_in, environment="junk", outcome="failed") != []


@pytest.mark.django_db
def test_list_shows_labels_and_offers_filter_choices(signed_in, scene):
    response = signed_in.get(reverse("trajectory-list"))
    body = response.content.decode()
    assert "tool error" in body and "wrong arguments" in body
    assert list(response.context["labels"]) == ["tool_error", "wrong_arguments"]
    assert list(response.context["rounds"]) == [scene["round"].number, scene["previous"].number]


@pytest.mark.django_db
def test_replay_shows_each_step_gold_chain_reward_and_labels(client, reviewer, scene):
    # The scene's task is an arena task: its gold chain and reward reasons are for reviewers
    # (a viewer's replay hides them: tests/test_arena_answer_privacy.py).
    client.force_login(reviewer)
    trajectory = scene["failed"]
    response = client.get(reverse("trajectory-detail", args=[trajectory.pk]))
    body = response.content.decode()
    assert response.status_code == 200
    for index in (1, 2, 3):
        assert f'id="step-{index}"' in body
    assert "I will search for the book first." in body
    assert "&quot;quantity&quot;: 20" in body  # tool call arguments
    assert "ValueError: only 5 in stock" in body  # tool error
    assert "&quot;Dune&quot;" in body  # tool result
    assert 'data-action="play"' in body and 'data-action="jump"' in body
    assert "/static/js/replay.js" in body
    # gold chain beside it, marking what was called
    assert "search_books" in body and "place_order" in body
    # reward breakdown
    names = [c["name"] for c in response.context["reward"]["components"]]
    assert names == ["answer", "state", "format", "efficiency"]
    assert "purchase row missing" in body
    assert response.context["reward"]["total"] == pytest.approx(0.2)
    # diagnosis labels with evidence
    assert 'data-label="tool_error"' in body and 'data-label="wrong_arguments"' in body


@pytest.mark.django_db
def test_replay_shows_state_diff_of_a_writing_step(signed_in, scene):
    body = signed_in.get(reverse("trajectory-detail", args=[scene["passed"].pk])).content.decode()
    assert 'data-field="diff"' in body and "&quot;purchase&quot;" in body


@pytest.mark.django_db
def test_replay_of_a_trajectory_without_steps(signed_in, scene):
    empty = factories.make_trajectory(scene["task"], steps=[], reward={"total": 0.0})
    body = signed_in.get(reverse("trajectory-detail", args=[empty.pk])).content.decode()
    assert "no recorded steps" in body and "No reward breakdown" in body


def test_reward_breakdown_is_defensive():
    assert reward_breakdown(None, 0.3) == {"components": [], "total": 0.3}
    parsed = reward_breakdown({"answer": 1, "bonus": {"score": "x"}, "total": "0.5"}, 0.0)
    assert [c["name"] for c in parsed["components"]] == ["answer", "bonus"]
    assert parsed["components"][0]["score"] == 1.0 and parsed["components"][1]["score"] is None
    assert parsed["total"] == 0.5


def test_reward_breakdown_reads_the_shared_reward_shape():
    from tasks.reward import score
    from tasks.synthesis.task_spec import TaskSpec
    from tasks.trajectory import Trajectory

    task = TaskSpec(
        kind="graph",
        environment="bookstore",
        instruction="Title of book 1?",
        gold_chain=[{"tool": "get_book", "arguments": {"book_id": 1}}],
        reference_answer="Dune",
    )
    trajectory = Trajectory(
        task_id="", environment="bookstore", final_answer="Emma", finished_reason="answer"
    )
    shown = reward_breakdown(score(task, trajectory).to_dict(), 0.0)
    names = [component["name"] for component in shown["components"]]
    assert names[0] == "answer" and set(names) <= {"answer", "state", "format", "efficiency"}
    answer = next(c for c in shown["components"] if c["name"] == "answer")
    assert answer["score"] == 0.0 and answer["reason"]
