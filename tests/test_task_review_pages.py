"""The task review queue in the console and through the API: who sees which gold run, who may
mark, what a bad mark or note gets back, and the tally per template and intent."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tasks.models import TaskReview
from tasks.reviews import mark_task
from tests.support import factories

pytestmark = pytest.mark.django_db

GOLD_ARGUMENT = "Secret-Title-4711"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def arena_task(environment):
    return factories.make_task(
        environment,
        split="arena",
        instruction="Which arena book costs the most?",
        gold_chain=[
            {"tool": "search_books", "arguments": {"title": GOLD_ARGUMENT}, "kind": "read"}
        ],
        reference_answer=GOLD_ARGUMENT,
        write_steps=0,
    )


# --- console -----------------------------------------------------------------------------------


def test_reviewer_sees_one_task_beside_its_gold_run_with_marks_and_keys(reviewer):
    environment = factories.make_environment(tasks=0)
    task = arena_task(environment)
    page = signed_in(reviewer).get(reverse("task-review")).content.decode()
    assert f'data-task="{task.pk}"' in page
    assert "Which arena book costs the most?" in page
    assert GOLD_ARGUMENT in page  # reviewers see the gold run of evaluation tasks
    for mark in ("natural", "unclear", "wrong_gold", "meaningless"):
        assert f'data-mark="{mark}"' in page
    assert 'id="review-keys"' in page and "<kbd>Enter</kbd>" in page
    assert "js/task_review.js" in page


def test_viewer_reads_the_queue_without_arena_gold_and_without_marks(viewer):
    environment = factories.make_environment(tasks=0)
    arena_task(environment)
    page = signed_in(viewer).get(reverse("task-review")).content.decode()
    assert "Which arena book costs the most?" in page
    assert GOLD_ARGUMENT not in page
    assert "reviewers only" in page
    assert 'id="mark-form"' not in page and "Only reviewers mark tasks." in page


def test_marking_moves_to_the_next_task_of_the_same_environment(reviewer):
    environment = factories.make_environment(tasks=0)
    other = factories.make_environment(tasks=0)
    first, second = (factories.make_task(environment) for _ in range(2))
    factories.make_task(other)
    client = signed_in(reviewer)
    url = f"{reverse('task-review')}?environment={environment.pk}&seed=7"
    shown = int(client.get(url).content.decode().split('data-task="')[1].split('"')[0])
    response = client.post(
        reverse("task-mark", args=[shown]),
        {
            "mark": "meaningless",
            "note": "joins a price to a price",
            "environment": environment.pk,
            "seed": 7,
        },
        follow=True,
    )
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == url
    assert f"Task #{shown} marked meaningless: it leaves training and arena sampling." in page
    nxt = ({first.pk, second.pk} - {shown}).pop()
    assert f'data-task="{nxt}"' in page
    review = TaskReview.objects.get()
    assert (review.task_id, review.reviewer, review.mark) == (shown, reviewer, "meaningless")
    assert review.note == "joins a price to a price"
    client.post(
        reverse("task-mark", args=[nxt]), {"mark": "natural", "environment": environment.pk}
    )
    done = client.get(url).content.decode()
    assert 'id="review-done"' in done


def test_bad_marks_and_long_notes_are_refused_in_words(reviewer):
    task = factories.make_environment(tasks=1).tasks.get()
    client = signed_in(reviewer)
    page = client.post(
        reverse("task-mark", args=[task.pk]), {"mark": "great"}, follow=True
    ).content.decode()
    assert f"Task #{task.pk} was not marked: mark: Select a valid choice." in page
    page = client.post(
        reverse("task-mark", args=[task.pk]), {"mark": "unclear", "note": "x" * 2001}, follow=True
    ).content.decode()
    assert "at most 2000 characters" in page
    assert not TaskReview.objects.exists()
    assert client.post(reverse("task-mark", args=[987654]), {"mark": "natural"}).status_code == 404


def test_viewer_cannot_mark_and_marking_is_post_only(viewer, reviewer):
    task = factories.make_environment(tasks=1).tasks.get()
    response = signed_in(viewer).post(reverse("task-mark", args=[task.pk]), {"mark": "natural"})
    assert response.status_code == 403
    assert signed_in(reviewer).get(reverse("task-mark", args=[task.pk])).status_code == 405
    assert not TaskReview.objects.exists()
    anonymous = Client().post(reverse("task-mark", args=[task.pk]), {"mark": "natural"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_summary_page_shows_the_worst_generator_first(viewer, reviewer):
    environment = factories.make_environment(tasks=0)
    program = factories.make_task(
        environment, kind="programmatic", metadata={"extra": {"template": "reconcile"}}
    )
    walk = factories.make_task(environment, write_steps=0, gold_chain=[{"tool": "get_book"}])
    mark_task(program, reviewer, "wrong_gold")
    mark_task(walk, reviewer, "natural")
    page = signed_in(viewer).get(reverse("task-review-summary")).content.decode()
    template_table = page.split('id="marks-by-template"')[1].split("</table>")[0]
    assert template_table.index("program/reconcile") < template_table.index("walk/1/get")
    intent_table = page.split('id="marks-by-intent"')[1].split("</table>")[0]
    assert intent_table.index("comparison") < intent_table.index("look-up")
    assert "1 task out of training and arena sampling" in page


# --- API -----------------------------------------------------------------------------------------


def test_api_reviewer_marks_and_remarks(reviewer_api):
    task = factories.make_environment(tasks=1).tasks.get()
    url = f"/api/tasks/{task.pk}/mark/"
    response = reviewer_api.post(url, {"mark": "unclear", "note": "which customer?"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["mark"], body["excludes_task"], body["note"]) == (
        "unclear",
        True,
        "which customer?",
    )
    assert body["template"].startswith("walk/") and body["intent"] == "conditional_action"
    again = reviewer_api.post(url, {"mark": "natural"}, format="json").json()
    assert again["id"] == body["id"] and again["excludes_task"] is False
    assert TaskReview.objects.count() == 1


def test_api_refuses_viewers_bad_marks_long_notes_and_missing_tasks(viewer_api, reviewer_api):
    task = factories.make_environment(tasks=1).tasks.get()
    url = f"/api/tasks/{task.pk}/mark/"
    refused = viewer_api.post(url, {"mark": "natural"}, format="json")
    assert refused.status_code == 403 and "reviewer role" in refused.json()["error"]
    bad = reviewer_api.post(url, {"mark": "great"}, format="json")
    assert bad.status_code == 400 and "great" in str(bad.json())
    long = reviewer_api.post(url, {"mark": "unclear", "note": "x" * 2001}, format="json")
    assert long.status_code == 400 and "2000" in str(long.json())
    missing = reviewer_api.post("/api/tasks/987654/mark/", {"mark": "natural"}, format="json")
    assert missing.status_code == 404
    assert not TaskReview.objects.exists()


def test_api_sample_hides_arena_gold_from_viewers(viewer_api, reviewer_api, reviewer):
    environment = factories.make_environment(tasks=0)
    hidden = arena_task(environment)
    marked = factories.make_task(environment, split="train")
    mark_task(marked, reviewer, "natural")
    viewer_rows = viewer_api.get(f"/api/tasks/review-sample/?environment={environment.pk}").json()
    assert [row["id"] for row in viewer_rows] == [hidden.pk]  # marked tasks are not offered
    assert viewer_rows[0]["answers_hidden"] is True and viewer_rows[0]["gold_chain"] is None
    reviewer_rows = reviewer_api.get("/api/tasks/review-sample/?size=5&seed=3").json()
    assert reviewer_rows[0]["gold_chain"][0]["arguments"]["title"] == GOLD_ARGUMENT
    assert viewer_api.get("/api/tasks/review-sample/?size=0").status_code == 400
    assert viewer_api.get("/api/tasks/review-sample/?environment=987654").status_code == 400


def test_api_marks_summary(viewer_api, reviewer):
    environment = factories.make_environment(tasks=0)
    task = factories.make_task(environment, write_steps=0, gold_chain=[{"tool": "count_books"}])
    mark_task(task, reviewer, "meaningless")
    summary = viewer_api.get(f"/api/tasks/review-marks/?environment={environment.pk}").json()
    assert (summary["marks"], summary["tasks"], summary["excluded_tasks"]) == (1, 1, 1)
    assert summary["by_intent"][0]["label"] == "aggregation"
    assert summary["by_template"][0] == {
        "label": "walk/1/count/unknown",
        "words": "walk/1/count/unknown",
        "natural": 0,
        "unclear": 0,
        "wrong_gold": 0,
        "meaningless": 1,
        "total": 1,
        "not_natural": 1.0,
    }
