"""The environment page of an Agent-World environment (a package of JSON collections): the
database tab shows each collection as a table of rows or a document as keys and values, flags
the log collections, and shows the README's business rules; the overview names the release,
the env id and the release's taxonomy next to ours."""

from __future__ import annotations

import pytest
from django.urls import reverse

from environments.agent_world.package import CollectionPlan, write_collection_package
from environments.agent_world.release import read_environment
from environments.agent_world.taxonomy import map_taxonomy
from environments.collection_view import rows_view, rule_sections
from environments.registry import record_package
from tests.support.agent_world_release import LIBRARY, write_release


@pytest.fixture
def library(db, tmp_path):
    """The fixture release's library published as a package (its tools unverified: the page
    reads files, it runs nothing) and recorded."""
    mix = write_release(tmp_path / "release")
    environment = read_environment(mix, LIBRARY)
    category, _ = map_taxonomy(environment)
    plan = CollectionPlan(
        name="aw_0100000",
        version=1,
        title=environment.name,
        description=environment.description,
        category=category.as_dict(),
        tools=environment.tools[:2],
        tool_kinds={},
        log_collections=("request_logs",),
        clock="2026-03-01T12:00:00Z",
        release_path=str(mix),
    )
    path = write_collection_package(tmp_path / "packages", environment, plan)
    recorded = record_package(path)
    recorded.build_yield = {"schema": {"category_reason": "release L2 Books & Reading"}}
    recorded.save(update_fields=["build_yield"])
    return recorded


def tab(client, environment, name, **params) -> str:
    response = client.get(reverse("environment-tab", args=[environment.pk, name]), params)
    assert response.status_code == 200
    return response.content.decode()


def test_collections_are_tables_documents_pairs_and_logs_are_flagged(client, viewer, library):
    client.force_login(viewer)
    body = tab(client, library, "database")
    for name in ("books", "loans", "request_logs", "settings", "tags"):
        assert f'data-table="{name}"' in body
    assert 'id="collection-rows"' in body and "Cien años de soledad" in body  # books first
    assert 'matched by <span class="mono">id</span>' in body
    assert 'id="business-rules"' in body
    assert "A loan takes one copy; a book with no copy left cannot be lent." in body
    assert 'id="readme"' in body and "Lantern Lending Library" in body

    settings = tab(client, library, "database", table="settings")
    assert 'id="document-pairs"' in settings and "A single document" in settings
    assert '<td class="mono">greeting</td>' in settings and "¡Bienvenidos!" in settings

    logs = tab(client, library, "database", table="request_logs")
    assert 'id="log-collection"' in logs
    assert "Append-only log, left out of state comparison" in logs
    assert 'id="log-collection"' not in tab(client, library, "database", table="tags")
    assert "by content (no id)" in tab(client, library, "database", table="tags")


def test_the_overview_names_the_release_and_both_taxonomies(client, viewer, library):
    client.force_login(viewer)
    page = client.get(reverse("environment-detail", args=[library.pk])).content.decode()
    assert 'id="release-provenance"' in page
    assert f'<dd class="mono">{LIBRARY}</dd>' in page
    assert "Media &amp; Entertainment" in page and "Books &amp; Reading" in page
    assert "Library Lending &amp; Circulation" in page
    assert "Entertainment &amp; Media › Movies &amp; TV" in page  # ours, mapped
    assert "release L2 Books &amp; Reading" in page
    assert "request_logs" in page and "2026-03-01T12:00:00Z" in page
    assert f"agent_world:{LIBRARY}" in page  # the provenance table names the source


def test_a_missing_package_says_so(client, viewer, library):
    import shutil

    shutil.rmtree(library.package_path)
    client.force_login(viewer)
    body = tab(client, library, "database")
    assert 'id="database-missing"' in body and "collections/ folder" in body


def test_rows_view_shows_every_field_a_write_added_and_pages():
    rows = [{"id": i, "name": f"n{i}"} for i in range(30)] + [{"id": 30, "name": "x", "due": 1}]
    page = rows_view(rows, 2, 25)
    assert [c["name"] for c in page["columns"]] == ["id", "name", "due"]
    assert [c["sparse"] for c in page["columns"]] == [False, False, True]
    assert (page["first_row"], page["last_row"], page["row_pages"]) == (26, 31, 2)
    assert page["rows"][0] == ["25", '"n25"'.strip('"'), ""]
    assert page["rows"][-1] == ["30", "x", "1"]


def test_rule_sections_take_rules_constraints_and_lifecycles_to_the_next_heading():
    readme = (
        "# Shop\n## Schema\n- a\n## Business Rules\n- no refunds\n### Detail\n- after 30 days\n"
    )
    readme += "## Lifecycle\nopen -> closed\n## Other\nx\n"
    found = rule_sections(readme)
    assert [s["heading"] for s in found] == ["Business Rules", "Lifecycle"]
    assert found[0]["text"] == "- no refunds\n### Detail\n- after 30 days"
