"""Discovery as jobs: builds recorded as verified environments, failures explained, themes imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job
from environments.models import Environment, Theme, Tool, ToolTest
from tests.support.worker import celery_worker, redis_available, run_job, wait_for

THEMES = Path(__file__).resolve().parents[1] / "environments" / "data" / "themes"


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


@pytest.mark.django_db(transaction=True)
def test_build_environment_job_records_a_verified_version(storage):
    job = run_job("environments.build_environment", {"source": "elements"})
    assert job.state == "succeeded", job.error
    environment = Environment.objects.get(name="elements")
    assert environment.status == "verified" and environment.version == 1
    assert environment.category.primary().name == "Science & Research"
    assert environment.tool_count == Tool.objects.filter(environment=environment).count() >= 5
    assert environment.row_count > 100 and environment.table_count >= 1
    assert Path(environment.package_path).is_relative_to(storage)
    tool = environment.tools.filter(kind="write").first()
    assert tool is not None and tool.source.startswith("def ") and tool.tests.exists()
    # The verify stage's outcomes reach every tool and test (the Tools tab shows them).
    assert tool.verification["passed"] >= 1 and tool.test_accuracy is not None
    assert not ToolTest.objects.filter(tool__environment=environment, passed=None).exists()
    assert "Science" in job.log_tail or "published" in job.message
    again = run_job("environments.build_environment", {"source": "elements"})
    assert again.state == "succeeded"
    assert sorted(
        Environment.objects.filter(name="elements").values_list("version", flat=True)
    ) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_unknown_source_fails_with_reason_and_nothing_is_recorded(storage):
    job = run_job("environments.build_catalogue", {"sources": ["elements", "atlantis"]})
    assert job.state == "failed" and "unknown source 'atlantis'" in job.error
    assert not Job.objects.filter(kind="environments.build_environment").exists()
    assert not Job.objects.filter(kind="environments.build").exists()
    assert not Environment.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_themes_classifies_dedups_and_reports_bad_items(storage):
    mcp_spec = json.loads(next(THEMES.glob("*time*.json")).read_text())
    documents = [
        mcp_spec,
        mcp_spec,
        {"not": "a theme"},
        "# Pet clinic\n\nBook vet appointments for pets.",
    ]
    job = run_job("environments.import_themes", {"documents": documents})
    assert job.state == "succeeded", job.error
    assert len(job.result["created"]) == 3
    assert job.result["errors"] and "document 2" in job.result["errors"][0]
    themes = Theme.objects.order_by("pk")
    assert themes[0].category is not None and themes[0].category.level == 3
    assert themes[1].duplicate_of == themes[0]
    assert themes[2].source_kind == "prd" and themes[2].duplicate_of is None


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not redis_available(), reason="Redis is not reachable")
def test_catalogue_builds_fan_out_to_real_workers(storage, tmp_path):
    with celery_worker(tmp_path, extra_env={"AW_STORAGE_ROOT": str(storage)}) as worker:
        with transaction.atomic():
            parent = enqueue(
                "environments.build_catalogue", {"sources": ["elements", "http_status"]}
            )
        wait_for(
            lambda: Job.objects.filter(kind="environments.build", state="succeeded").count() == 2,
            timeout=180,
            message=f"two builds\n{worker.log()[-3000:]}",
        )
    assert Job.objects.get(pk=parent.pk).state == "succeeded"
    assert set(Environment.objects.filter(status="verified").values_list("name", flat=True)) == {
        "elements",
        "http_status",
    }


@pytest.mark.django_db(transaction=True)
def test_complexify_retry_removes_the_package_its_lost_attempt_never_recorded(storage):
    import shutil

    from aw_site.jobs import execute_job

    base = run_job("environments.build_environment", {"source": "elements"})
    v1 = Environment.objects.get(pk=base.result["environment"])
    # The earlier attempt's worker died between publishing v2 and recording it.
    orphan = storage / "environments" / "elements" / "v2"
    shutil.copytree(v1.package_path, orphan)
    lost = Job.objects.create(
        kind="environments.complexify",
        queue=Job.Queue.SANDBOX,
        arguments={"environment": v1.pk, "rounds": 1, "rows_per_table": 3},
        state=Job.State.RETRYING,
        attempts=1,
        result={"publishing": str(orphan)},
    )
    assert execute_job(lost.pk, "test-worker") == "succeeded", Job.objects.get(pk=lost.pk).error
    lost.refresh_from_db()
    assert lost.attempts == 2 and "published but never recorded" in lost.log_tail
    child = Environment.objects.get(pk=lost.result["environment"])
    assert child.version == 2 and child.parent == v1 and child.status == "verified"
    assert Path(child.package_path).resolve() == orphan.resolve()
    kinds = {record["kind"] for record in child.provenance}
    assert {"derived", "complexified"} <= kinds  # the new rows and the parent are both named
    assert {r["source"] for r in v1.provenance} <= {r["source"] for r in child.provenance}
    on_disk = sorted(p.name for p in (storage / "environments" / "elements").iterdir())
    assert on_disk == ["v1", "v2"]
    # The new version records its build yield through the same stages as every build.
    from environments.build_yield import funnel_of
    from environments.builder.stages import STAGES

    assert set(STAGES) <= set(child.build_yield)
    assert child.build_yield["ingest"]["complexified_from"] == v1.label
    assert sum(child.build_yield["ingest"]["rows_added"].values()) > 0
    assert child.build_yield["verify"]["verified"] == child.tool_count
    assert funnel_of(child)["origin"] == "complexified"
