"""A catalogue run through a real Celery worker over Redis, killed (SIGKILL) while it builds a
document and restarted: the run resumes and ends with every document exactly once on the
ledger, one Theme per document and one Environment per Theme, nothing left half-built."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import transaction

from aw_site.models import Job
from environments.directory.launch import start_run
from environments.directory.listing import Selection
from environments.jobs import UNFINISHED
from environments.models import CatalogueItem, Environment, Theme
from tests.support import directory_documents as docs
from tests.support.worker import celery_worker, redis_available, wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_available(), reason="Redis is not reachable on 127.0.0.1:6379"),
]

ITEM_JOB = "environments.build_directory_item"


def building_job() -> Job | None:
    """An item's job that has started building (past the theme, inside the pipeline)."""
    for item in CatalogueItem.objects.filter(state=CatalogueItem.State.BUILDING).select_related(
        "job"
    ):
        if item.job and item.job.progress > 0.05:
            return item.job
    return None


def test_a_catalogue_run_killed_with_its_worker_resumes_without_duplicates(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    directory = docs.write_directory(tmp_path / "directory")
    with celery_worker(tmp_path) as worker:
        with transaction.atomic():
            run = start_run(directory, Selection(), tasks=0)
        killed = wait_for(building_job, timeout=120, interval=0.05, message=worker.log()[-3000:])
        worker.kill()
        worker.start()  # the same worker back, as a supervisor restarts it
        wait_for(
            lambda: (
                CatalogueItem.objects.count() == 5
                and not CatalogueItem.objects.exclude(state__in=CatalogueItem.FINAL_STATES).exists()
            ),
            timeout=240,
            message=f"every document built\n{worker.log()[-4000:]}",
        )
    items = list(CatalogueItem.objects.all())
    assert Counter(i.key for i in items) == Counter([*docs.DOCUMENTS, docs.BROKEN])
    assert {i.run_id for i in items} == {run.pk}
    killed.refresh_from_db()
    assert killed.state == Job.State.SUCCEEDED and killed.attempts == 2, killed.log_tail
    published = [i for i in items if i.state == CatalogueItem.State.PUBLISHED]
    assert {i.key for i in published} == {docs.BOOKS, docs.LIBRARY, docs.MUSIC}
    for item in published:
        themes = Theme.objects.filter(provenance__directory_key=item.key)
        assert list(themes.values_list("pk", flat=True)) == item.themes
        environments = Environment.objects.filter(theme__in=themes)
        assert list(environments.values_list("pk", flat=True)) == item.environments
        assert environments.get().status == Environment.Status.VERIFIED
    assert not Environment.objects.filter(status__in=UNFINISHED).exists()
    assert Job.objects.filter(kind=ITEM_JOB).count() == 5  # one job per document, no re-queue
