"""A whole Agent-World release is one catalogue run: `build_environment --agent-world PATH`
fans it out as one build per environment on the ledger (environments/directory/releases.py),
with progress and a summary (published, rejected by reason); a second run builds nothing again;
the run shows on the console's and the API's catalogue-run pages."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from aw_site.models import Job
from environments.agent_world.release import ReleaseError
from environments.directory.ledger import run_summary
from environments.directory.releases import (
    environment_sha256,
    release_documents,
    start_release_run,
)
from environments.models import CatalogueItem, CatalogueRun, Environment
from tests.support.agent_world_release import write_small_release

GOOD, OTHER, BROKEN = "0300000", "0400000", "0500000"
ITEM_JOB = "environments.build_directory_item"


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


@pytest.fixture
def release(tmp_path):
    return write_small_release(tmp_path / "release", good=(GOOD, OTHER), broken=(BROKEN,))


@pytest.mark.django_db(transaction=True)
def test_a_release_is_one_run_published_two_rejected_one_and_a_rerun_builds_nothing(
    storage, release, client, viewer
):
    out = StringIO()
    call_command("build_environment", agent_world=str(release.parent), stdout=out)
    text = out.getvalue()
    run = CatalogueRun.objects.get()
    assert f"catalogue run #{run.pk} of {release.resolve()} queued" in text
    assert "listed 3: published 2, rejected 1, failed 0, remaining 0" in text
    assert "published 2 of 3:" in text
    assert f"{GOOD} -> aw_{GOOD}@v1: 1 verified tools, 1 collections, 1 rows" in text
    assert "rejected 1 (1 at ingest):" in text
    assert f"{BROKEN}: ingest stage failed: environment {BROKEN}: checkpoint" in text
    assert "not JSON (line 1, column 2" in text
    assert "rejected by reason:" in text

    items = {i.key: i for i in CatalogueItem.objects.filter(run=run)}
    assert {k: i.state for k, i in items.items()} == {
        f"agent_world/{GOOD}": "published",
        f"agent_world/{OTHER}": "published",
        f"agent_world/{BROKEN}": "rejected",
    }
    assert items[f"agent_world/{BROKEN}"].reason.startswith(
        f"ingest stage failed: environment {BROKEN}: checkpoint {BROKEN}_step4_checkpoint.json"
    )
    good = Environment.objects.get(pk=items[f"agent_world/{GOOD}"].environments[0])
    assert (good.name, good.origin, good.status) == (f"aw_{GOOD}", "agent_world", "verified")
    summary = run_summary(run)
    assert (summary.environments_published, summary.counts["rejected"]) == (2, 1)
    (reason, count), *_ = summary.top_reasons
    assert count == 1 and reason.startswith("ingest stage failed: environment N: checkpoint")
    assert run.selection_label == "Agent-World release: every environment"

    jobs, environments = Job.objects.filter(kind=ITEM_JOB).count(), Environment.objects.count()
    again = StringIO()
    call_command("build_environment", agent_world=str(release), stdout=again)
    assert "3 environments built by an earlier run: not built again" in again.getvalue()
    assert Job.objects.filter(kind=ITEM_JOB).count() == jobs
    assert Environment.objects.count() == environments
    second = CatalogueRun.objects.latest("pk")
    assert (second.listed, second.done_before, second.items.count()) == (3, 3, 0)

    # progress and summary on the console and the API, for any signed-in role
    client.force_login(viewer)
    page = client.get(reverse("catalogue-run", args=[run.pk])).content.decode()
    assert "Agent-World release: every environment" in page
    assert f"agent_world/{BROKEN}" in page and "ingest stage failed" in page
    api = client.get(f"/api/catalogue-runs/{run.pk}/").json()
    assert api["summary"]["counts"]["published"] == 2
    assert api["summary"]["environments_published"] == 2


@pytest.mark.django_db(transaction=True)
def test_an_environment_whose_files_change_is_built_again_and_only_it(storage, release):
    call_command("build_environment", agent_world=str(release), stdout=StringIO())
    (release / OTHER / "tides.json").write_text('{"station": "moved", "high": []}', "utf-8")
    out = StringIO()
    call_command("build_environment", agent_world=str(release), stdout=out)
    assert "2 environments built by an earlier run" in out.getvalue()
    assert "published 1 of 1:" in out.getvalue()
    assert f"{OTHER} -> aw_{OTHER}@v2" in out.getvalue()


def test_items_are_keyed_by_env_id_and_the_bytes_it_reads(release):
    documents = {d.key: d for d in release_documents(release)}
    assert sorted(documents) == [f"agent_world/{i}" for i in (GOOD, OTHER, BROKEN)]
    before = environment_sha256(release, GOOD)
    assert documents[f"agent_world/{GOOD}"].sha256 == before
    (release / GOOD / "README.md").write_text("# changed\n", "utf-8")
    assert environment_sha256(release, GOOD) != before
    assert environment_sha256(release, OTHER) == documents[f"agent_world/{OTHER}"].sha256


@pytest.mark.django_db
def test_a_run_is_refused_before_anything_is_queued(release, tmp_path):
    with pytest.raises(ReleaseError, match="not an Agent-World release"):
        start_release_run(tmp_path)
    with pytest.raises(ReleaseError, match="not a plain folder name"):
        start_release_run(release, ["../etc"])
    with pytest.raises(ReleaseError, match="has no environment '0900000'"):
        start_release_run(release, ["0900000"])
    with pytest.raises(CommandError, match="name one environment: give --env"):
        call_command("build_environment", agent_world=str(release), name="x", stdout=StringIO())
    assert not CatalogueRun.objects.exists() and not Job.objects.exists()
