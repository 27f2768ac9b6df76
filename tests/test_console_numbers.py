"""Numbers on a page say what they count: plurals, stored tasks against the audit, theme tools,
and a diagnosis label's share of labels against the failed episodes that had it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.template import Context, Template
from django.urls import reverse

from arena.steps import episodes_by_label
from aw_site.templatetags.console import counted
from environments.models import Theme
from tests.support import factories


def test_counted_puts_the_noun_in_the_right_number():
    assert counted(1, "table") == "1 table"
    assert counted(3, "table") == "3 tables"
    assert counted(0, "step") == "0 steps"
    assert counted(1, "failed episode") == "1 failed episode"
    assert counted(66, "failed episode") == "66 failed episodes"
    assert counted(2, "entry") == "2 entries"
    assert counted(12000, "row") == "12,000 rows"
    assert counted(None, "row") == "– rows"
    rendered = Template('{% load console %}{{ n|counted:"step" }}').render(Context({"n": 1}))
    assert rendered == "1 step"


@pytest.mark.django_db
def test_environment_header_counts_in_words_and_the_audit_says_what_was_stored(
    client, viewer, tmp_path
):
    environment = factories.make_package_environment(tmp_path, task_count=36)
    environment.table_count = 1
    environment.task_audit = {"audited": 120, "kept": 108, "discarded": {"no_op": 12}}
    environment.save(update_fields=["table_count", "task_audit"])
    client.force_login(viewer)
    body = client.get(reverse("environment-detail", args=[environment.pk])).content.decode()
    header = body[body.index("data-counts>") : body.index("</span></p>")]
    assert "5 verified tools · 36 tasks stored · 1 table · 7 rows" in header
    assert "1 tables" not in body

    tab = client.get(reverse("environment-tab", args=[environment.pk, "tasks"])).content.decode()
    assert "<b>120</b> synthesized tasks audited, <b>108</b> kept (90%)" in tab
    stored = tab[tab.index("data-audit-stored>") : tab.index("</span></p>")]
    assert "<b>36</b> tasks are stored: the other kept ones repeated a task" in stored


@pytest.mark.django_db
def test_theme_list_says_which_tools_a_document_lists_and_what_a_build_made(client, viewer):
    listed = Theme.objects.create(
        name="petstore",
        title="Petstore",
        source_kind=Theme.SourceKind.TOOL_DOC,
        raw_spec={
            "source_kind": "tool_doc",
            "tools": [{"name": "get_pet"}, {"name": "add_pet"}],
        },
    )
    from_data = Theme.objects.create(
        name="elements",
        title="Elements",
        source_kind=Theme.SourceKind.MANUAL,
        raw_spec={"name": "elements", "datasets": ["elements"], "files": []},
    )
    factories.make_environment("elements", tools=7, theme=from_data)
    client.force_login(viewer)
    body = client.get(reverse("theme-list")).content.decode()
    row = body[body.index(f'id="theme-{listed.pk}"') :]
    assert '<b>2</b> listed in the document: <span class="mono">get_pet, add_pet' in row
    row = body[body.index(f'id="theme-{from_data.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "none listed: a build derives them from the data's schema" in row
    assert "7 verified tools" in row
    assert "<b>0</b>" not in body


@pytest.mark.django_db
def test_a_label_on_every_failure_says_so_beside_its_share_of_labels(client, viewer):
    evolution_round = factories.make_round(1, status="done")
    factories.make_diagnosis(
        evolution_round,
        distribution={
            "by_label": {"premature_answer": 66, "wrong_arguments": 50, "tool_error": 41},
            "episodes_by_label": {"premature_answer": 66, "wrong_arguments": 50, "tool_error": 41},
            "failed_episodes": 66,
            "episodes": 80,
        },
    )
    client.force_login(viewer)
    body = client.get(reverse("round-detail", args=[1])).content.decode()
    row = body[body.index('<tr data-label="premature_answer">') :]
    row = row[: row.index("</tr>")]
    assert '<td class="num">42%</td>' in row  # 66 of 157 labels
    assert "66 of 66 failed episodes" in row
    assert "Share of labels, this round" in body and "Failed episodes with it" in body


@pytest.mark.django_db
def test_an_older_diagnosis_counts_its_failed_episodes_from_its_labels(client, viewer):
    evolution_round = factories.make_round(1, status="done")
    report = factories.make_diagnosis(
        evolution_round, distribution={"by_label": {"premature_answer": 2, "tool_error": 3}}
    )
    task = factories.make_task(factories.make_environment("shop"))
    for labels in (["premature_answer", "tool_error"], ["premature_answer", "tool_error"]):
        factories.make_trajectory(task, labels=labels, report=report)
    factories.make_trajectory(task, labels=["tool_error"], report=report)
    client.force_login(viewer)
    body = client.get(reverse("round-detail", args=[1])).content.decode()
    row = body[body.index('<tr data-label="premature_answer">') :]
    assert "2 of 3 failed episodes" in row[: row.index("</tr>")]
    row = body[body.index('<tr data-label="tool_error">') :]
    assert "3 of 3 failed episodes" in row[: row.index("</tr>")]


def test_the_diagnosis_counts_each_label_once_per_failed_episode():
    failures = [
        SimpleNamespace(kinds=["tool_error", "tool_error", "premature_answer"]),
        SimpleNamespace(kinds=["premature_answer"]),
    ]
    assert episodes_by_label(failures) == {"tool_error": 1, "premature_answer": 2}
