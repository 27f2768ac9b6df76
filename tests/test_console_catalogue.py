"""The catalogue: taxonomy counts, search, filters, pages, and speed on 2,000 environments."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from environments.models import Category, Environment
from tests.support import factories


@pytest.fixture
def signed_in(client, viewer):
    client.force_login(viewer)
    return client


@pytest.mark.django_db
def test_tree_counts_roll_up_to_ancestors(signed_in):
    airports = factories.make_category("Travel", "Flights", "Airports")
    airlines = factories.make_category("Travel", "Flights", "Airlines")
    books = factories.make_category("Shopping", "Books", "Bookstore")
    factories.make_environment("airports", category=airports)
    factories.make_environment("airports-intl", category=airports)
    factories.make_environment("airlines", category=airlines)
    factories.make_environment("bookstore", category=books)
    response = signed_in.get(reverse("catalogue"))
    assert response.status_code == 200
    tree = {node["category"].name: node for node in response.context["tree"]}
    assert tree["Travel"]["count"] == 3
    assert tree["Shopping"]["count"] == 1
    flights = tree["Travel"]["children"][0]
    assert flights["count"] == 3
    assert {c["category"].name: c["count"] for c in flights["children"]} == {
        "Airlines": 1,
        "Airports": 2,
    }
    assert response.context["total"] == 4


@pytest.mark.django_db
def test_category_filter_includes_descendants(signed_in):
    airports = factories.make_category("Travel", "Flights", "Airports")
    factories.make_environment("airports", category=airports)
    factories.make_environment(
        "bookstore", category=factories.make_category("Shopping", "Books", "Bookstore")
    )
    travel = Category.objects.get(name="Travel")
    response = signed_in.get(reverse("catalogue"), {"category": travel.pk})
    names = [e.name for e in response.context["page"]]
    assert names == ["airports"]
    assert "Travel" in response.context["selected_path"]


@pytest.mark.django_db
def test_search_and_filters(signed_in):
    factories.make_environment(
        "airports", tools=12, tasks=30, description="Every airport of the world"
    )
    factories.make_environment("bookstore", tools=5, tasks=2)
    factories.make_environment("weather", tools=8, tasks=0, status=Environment.Status.DRAFT)
    url = reverse("catalogue")

    def names(**params):
        return sorted(e.name for e in signed_in.get(url, params).context["page"])

    assert names(q="airport") == ["airports"]
    assert names(q="WORLD") == ["airports"]
    assert names(status="draft") == ["weather"]
    assert names(min_tools=6) == ["airports", "weather"]
    assert names(max_tools=6) == ["bookstore"]
    assert names(min_tasks=1, max_tasks=10) == ["bookstore"]
    assert names(min_tools="x") == ["airports", "bookstore", "weather"]  # bad input is ignored


@pytest.mark.django_db
def test_htmx_search_returns_only_the_results_fragment(signed_in):
    factories.make_environment("airports")
    response = signed_in.get(reverse("catalogue"), {"q": "air"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert 'data-environment="airports"' in body
    assert "<html" not in body and "Taxonomy" not in body


@pytest.mark.django_db
def test_cards_show_counts_and_category_path(signed_in):
    category = factories.make_category("Travel", "Flights", "Airports")
    factories.make_environment("airports", category=category, tools=7, tasks=11)
    body = signed_in.get(reverse("catalogue")).content.decode()
    assert "Travel › Flights › Airports" in body
    assert "<b>7</b> tools" in body and "<b>11</b> tasks" in body


@pytest.mark.django_db
def test_three_thousand_environments_pages_fast_in_few_queries(
    signed_in, django_assert_max_num_queries
):
    """The catalogue at the size of the public API directory: search, category, origin and
    tool-count filters, the yield page and an environment page, each in a few queries."""
    factories.make_catalogue(3000)
    url = reverse("catalogue")
    signed_in.get(url)  # warm the session and templates
    timings = {}

    def timed(label, target, params=None, queries=10):
        with django_assert_max_num_queries(queries):
            started = time.perf_counter()
            response = signed_in.get(target, params or {})
            timings[label] = time.perf_counter() - started
        assert response.status_code == 200, label
        return response

    response = timed("filtered", url, {"page": 40, "status": "verified", "min_tools": 5})
    page = response.context["page"]
    assert page.paginator.count > 1500
    assert len(page.object_list) == 24
    primary = Category.objects.get(name="Primary 0")
    response = timed("category+search", url, {"category": primary.pk, "q": "environment 1"})
    assert response.context["page"].paginator.count > 0
    assert sum(node["count"] for node in response.context["tree"]) == 3000
    response = timed("origin", url, {"origin": "upload", "max_tools": 10})
    assert response.context["filters"]["origin"] == "upload"
    assert "theme (openapi)" in response.context["origins"]
    shown = response.context["page"].object_list
    assert shown and all(e.origin == "upload" and e.tool_count <= 10 for e in shown)
    assert (
        response.context["page"].paginator.count
        == Environment.objects.filter(origin="upload", tool_count__lte=10).count()
    )
    ignored = signed_in.get(url, {"origin": "no such origin"}).context["page"].paginator.count
    assert ignored == 3000  # an unknown origin is ignored, not an error
    response = timed("yield", reverse("environment-yield"))
    origins = {row["origin"]: row for row in response.context["rows"]}
    assert origins["all"]["builds"] == 3000
    assert origins["theme (openapi)"]["builds"] == 1500
    one = Environment.objects.get(name="catalogue-env-01234")
    timed("environment", reverse("environment-detail", args=[one.pk]), queries=15)
    slow = {label: round(seconds, 2) for label, seconds in timings.items() if seconds > 1.5}
    assert not slow, f"pages slower than 1.5 s at 3,000 environments: {slow}"


@pytest.mark.django_db
def test_api_filters_environments_by_origin(signed_in):
    factories.make_environment("from-upload", origin="upload")
    factories.make_environment("from-document", origin="theme (openapi)")
    response = signed_in.get("/api/environments/", {"origin": "theme (openapi)"})
    assert response.status_code == 200
    rows = response.json()["results"]
    assert [(r["name"], r["origin"]) for r in rows] == [("from-document", "theme (openapi)")]
