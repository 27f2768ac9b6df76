"""An Agent-World release of three environments imported with `build_environment --agent-world`
on a real Celery worker over Redis, the worker SIGKILLed while it builds one of them and
restarted: the command follows the run to its end, every environment is published exactly once,
the library's reproducing question is imported once as a held-out task, and the episode API
calls a released tool on the result."""

from __future__ import annotations

import threading
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from aw_site.models import Job
from environments.models import CatalogueItem, CatalogueRun, Environment
from serving.episode_service import episode_service
from tasks.models import Task
from tests.support.agent_world_release import (
    LIBRARY,
    TIDES,
    add_small_environment,
    questions,
    write_release,
)
from tests.support.worker import celery_worker, redis_available, wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not redis_available(), reason="Redis is not reachable on 127.0.0.1:6379"),
]

BUOYS = "0400000"
ITEM_JOB = "environments.build_directory_item"


def building_job() -> Job | None:
    """An environment's job that has started building (past its first message)."""
    for item in CatalogueItem.objects.filter(state=CatalogueItem.State.BUILDING).select_related(
        "job"
    ):
        if item.job and item.job.progress > 0.05:
            return item.job
    return None


def test_a_release_imported_on_a_killed_worker_is_published_once_and_served(
    settings, tmp_path, viewer_api
):
    settings.STORAGE_ROOT = tmp_path / "storage"
    release = write_release(tmp_path / "release")
    add_small_environment(release, BUOYS)
    out, failures = StringIO(), []

    def command() -> None:  # the operator's shell, following the run while the worker dies
        try:
            call_command("build_environment", agent_world=str(release.parent), stdout=out)
        except Exception as exc:  # reported below, with the command's output
            failures.append(exc)
        finally:
            connection.close()

    with celery_worker(tmp_path) as worker:
        follower = threading.Thread(target=command, daemon=True)
        follower.start()
        killed = wait_for(building_job, timeout=120, interval=0.05, message=worker.log()[-3000:])
        worker.kill()
        worker.start()  # the same worker back, as a supervisor restarts it
        follower.join(timeout=300)
        assert not follower.is_alive(), f"the command still follows\n{worker.log()[-4000:]}"
    text = out.getvalue()
    assert not failures, f"{failures}\n{text}"
    assert "listed 3: published 3, rejected 0, failed 0, remaining 0" in text, text
    assert "published 3 of 3:" in text
    assert (
        f"{LIBRARY} -> aw_{LIBRARY}@v1: 6 verified tools, 5 collections, 8 rows; 1 of 2 "
        "questions imported as held-out tasks (kept out: 1 does not reproduce)"
    ) in text

    killed.refresh_from_db()
    assert killed.state == Job.State.SUCCEEDED and killed.attempts == 2, killed.log_tail
    run = CatalogueRun.objects.get()
    items = list(CatalogueItem.objects.filter(run=run))
    assert Counter(i.key for i in items) == Counter(
        f"agent_world/{i}" for i in (LIBRARY, TIDES, BUOYS)
    )
    assert {i.state for i in items} == {CatalogueItem.State.PUBLISHED}
    assert Job.objects.filter(kind=ITEM_JOB).count() == 3  # one job per environment
    names = Counter(Environment.objects.values_list("name", flat=True))
    assert names == Counter(f"aw_{i}" for i in (LIBRARY, TIDES, BUOYS))  # none built twice
    for item in items:
        (pk,) = item.environments
        environment = Environment.objects.get(pk=pk)
        assert (environment.status, environment.origin) == ("verified", "agent_world")
    library = Environment.objects.get(name=f"aw_{LIBRARY}")
    (task,) = Task.objects.filter(environment__name=f"aw_{LIBRARY}")  # imported once
    assert task.split == "heldout" and task.instruction.startswith(questions()["tasks"][0]["task"])
    assert not Task.objects.exclude(environment=library).exists()

    try:
        created = viewer_api.post("/api/episodes/", {"environment": library.pk}, format="json")
        assert created.status_code == 201, created.json()
        key = created.json()["episode"]
        called = viewer_api.post(
            f"/api/episodes/{key}/call/",
            {"tool": "create_loan", "arguments": {"book_id": "bk_001", "member": "Ana"}},
            format="json",
        ).json()
        assert called["result"]["loan"]["book_id"] == "bk_001", called
        diff = viewer_api.get(f"/api/episodes/{key}/diff/").json()["diff"]
        assert sorted(diff) == ["books", "loans"]  # the request log left out
    finally:
        episode_service().shutdown()
