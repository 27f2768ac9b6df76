"""N+1 guard: each API list and detail costs the same few queries with 5 rows as with 50."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from benchmarks.scale.generator import generate_catalogue, spec_with_rows

pytestmark = pytest.mark.django_db

QUERY_LIMIT = 10
LIST_URLS = [
    "/api/categories/",
    "/api/themes/",
    "/api/environments/",
    "/api/tools/",
    "/api/tasks/",
    "/api/policies/",
    "/api/training-runs/",
    "/api/trajectories/",
    "/api/jobs/",
    "/api/rounds/",
    "/api/evaluations/",
    "/api/diagnoses/",
    "/api/proposals/",
]


def queries_for(client, url: str) -> tuple[int, int]:
    """(queries, rows on the page) for one GET."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, {"page_size": 100})
    assert response.status_code == 200, (url, response.content[:300])
    return len(captured.captured_queries), len(response.json()["results"])


def test_list_queries_do_not_grow_with_rows(viewer_api):
    generate_catalogue(spec_with_rows(5))
    small = {url: queries_for(viewer_api, url) for url in LIST_URLS}
    generate_catalogue(spec_with_rows(45), seed=1)
    large = {url: queries_for(viewer_api, url) for url in LIST_URLS}
    problems = []
    for url in LIST_URLS:
        (q_small, rows_small), (q_large, rows_large) = small[url], large[url]
        assert rows_large > rows_small >= 1, (url, rows_small, rows_large)
        if q_large != q_small or q_large > QUERY_LIMIT:
            problems.append(
                f"{url}: {q_small} queries for {rows_small} rows, {q_large} for {rows_large}"
            )
    assert not problems, "\n".join(problems)


def test_trajectory_detail_queries_do_not_grow_with_steps(viewer_api):
    from training.models import Trajectory

    generate_catalogue(spec_with_rows(5).scaled(steps_per_trajectory=2))
    generate_catalogue(spec_with_rows(5).scaled(steps_per_trajectory=40), seed=1)
    short, long = (
        Trajectory.objects.order_by("step_count", "pk")[0],
        Trajectory.objects.order_by("-step_count", "pk")[0],
    )
    counts = []
    for trajectory in (short, long):
        with CaptureQueriesContext(connection) as captured:
            response = viewer_api.get(f"/api/trajectories/{trajectory.pk}/")
        assert response.status_code == 200
        assert len(response.json()["steps"]) == trajectory.step_count
        counts.append(len(captured.captured_queries))
    assert counts[0] == counts[1] <= QUERY_LIMIT, counts
