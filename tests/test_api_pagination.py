"""List pagination: numbered pages stop at a row limit; keyset cursor pages walk everything."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tasks.models import Task
from tests.support.factories import make_environment, make_task

pytestmark = pytest.mark.django_db


def walk(client, url: str, params: dict) -> list[list[int]]:
    """Follow `next` links from the first cursor page; the ids on each page."""
    pages = []
    response = client.get(url, params)
    while True:
        assert response.status_code == 200, response.content[:300]
        body = response.json()
        assert "count" not in body  # cursor pages never count the table
        pages.append([row["id"] for row in body["results"]])
        if body["next"] is None:
            return pages
        assert "cursor=" in body["next"]
        response = client.get(body["next"])


@pytest.fixture
def tasks_in_two_environments():
    first = make_environment(tasks=13)
    second = make_environment(tasks=8)
    return first, second


def test_cursor_walk_returns_every_row_once_in_id_order(viewer_api, tasks_in_two_environments):
    pages = walk(viewer_api, "/api/tasks/", {"cursor": "", "page_size": 5})
    ids = [task_id for page in pages for task_id in page]
    assert ids == sorted(Task.objects.values_list("id", flat=True))
    assert [len(page) for page in pages] == [5, 5, 5, 5, 1]


def test_cursor_walk_descending_and_filtered(viewer_api, tasks_in_two_environments):
    first, _ = tasks_in_two_environments
    pages = walk(
        viewer_api,
        "/api/tasks/",
        {"cursor": "", "page_size": 4, "ordering": "-id", "environment": first.pk},
    )
    ids = [task_id for page in pages for task_id in page]
    expected = sorted(first.tasks.values_list("id", flat=True), reverse=True)
    assert ids == expected and len(ids) == 13


def test_rows_added_during_a_walk_are_seen_once_and_nothing_repeats(
    viewer_api, tasks_in_two_environments
):
    first, _ = tasks_in_two_environments
    body = viewer_api.get("/api/tasks/", {"cursor": "", "page_size": 10}).json()
    seen = [row["id"] for row in body["results"]]
    added = make_task(first, instruction="Added while a reader walks the list.")
    Task.objects.filter(pk=seen[0]).delete()  # removing a row already read shifts nothing
    while body["next"]:
        body = viewer_api.get(body["next"]).json()
        seen += [row["id"] for row in body["results"]]
    assert len(seen) == len(set(seen)) == 22
    assert seen[-1] == added.pk


def test_cursor_page_uses_no_offset_and_no_count(viewer_api, tasks_in_two_environments):
    body = viewer_api.get("/api/tasks/", {"cursor": "", "page_size": 7}).json()
    with CaptureQueriesContext(connection) as captured:
        response = viewer_api.get(body["next"])
    assert response.status_code == 200
    task_queries = [q["sql"] for q in captured.captured_queries if '"tasks_task"' in q["sql"]]
    assert task_queries, captured.captured_queries
    for sql in task_queries:
        assert "OFFSET" not in sql.upper() and "COUNT(" not in sql.upper(), sql


def test_numbered_pages_stop_at_the_row_limit(viewer_api, settings, tasks_in_two_environments):
    settings.AW_API_MAX_PAGE_OFFSET = 10
    assert viewer_api.get("/api/tasks/", {"page": 2, "page_size": 5}).status_code == 200
    for page in (3, "last"):
        response = viewer_api.get("/api/tasks/", {"page": page, "page_size": 5})
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert "numbered pages stop at row 10" in error and "?cursor=" in error
    body = viewer_api.get("/api/tasks/", {"page": 1, "page_size": 5}).json()
    assert body["count"] == 21 and len(body["results"]) == 5


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "aWQ6LTE"}, "cursor"),  # "id:-1": well-formed base64, not ours
        ({"cursor": "", "ordering": "difficulty"}, "ordering"),
    ],
)
def test_bad_cursor_requests_are_clear_400s(viewer_api, tasks_in_two_environments, params, field):
    response = viewer_api.get("/api/tasks/", params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert field in body["detail"] and body["error"].startswith(field)


def test_cursor_pages_work_on_every_list(viewer_api, tasks_in_two_environments):
    for url in ("/api/environments/", "/api/tools/", "/api/jobs/", "/api/categories/"):
        response = viewer_api.get(url, {"cursor": "", "page_size": 2})
        assert response.status_code == 200, (url, response.content[:200])
        assert set(response.json()) == {"next", "results"}
