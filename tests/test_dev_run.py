"""`./dev run`'s parts without a server: the database-polling job worker, the main loop's plan
and estimate, the default (short) and --full loops, and the dashboard's loop panel and guide."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from arena.main_loop import KIND, estimate_seconds_left, loop_view, plan_stages, round_progress
from aw_site.job_worker import run_worker
from aw_site.jobs import enqueue
from aw_site.management.commands.run_embedded import FIRST_SOURCES, loop_arguments
from aw_site.models import Job
from environments.builder.request import builtin_names

pytestmark = pytest.mark.django_db(transaction=True)


def test_db_mode_leaves_jobs_queued_for_a_worker_process_that_runs_them(settings):
    settings.AW_JOBS_MODE = "db"
    with transaction.atomic():
        first = enqueue("system.worker_check", {"seconds": 0, "steps": 2})
        second = enqueue("system.worker_check", {"seconds": 0, "steps": 1})
    # Nothing runs in the enqueuing process (the web server's threads stay free).
    assert set(Job.objects.values_list("state", flat=True)) == {Job.State.QUEUED}
    ran = run_worker(threading.Event(), max_jobs=2, poll_seconds=0.05)
    assert ran == 2
    for job in (first, second):
        job.refresh_from_db()
        assert job.state == Job.State.SUCCEEDED and job.worker.startswith("in-process@")
    # Oldest first.
    assert first.started_at <= second.started_at


def test_the_main_loop_runs_catalogue_then_tasks_then_each_round():
    stages = plan_stages(["iris", "cars"], rounds=2)
    assert [s["key"] for s in stages] == ["catalogue", "tasks", "round-1", "round-2"]
    assert "2 sources" in stages[0]["label"] and "round 2 of 2" in stages[3]["label"]


def test_the_estimate_follows_progress_and_the_speed_of_finished_rounds():
    now = timezone.now()
    stages = plan_stages(["iris", "cars"], rounds=2)
    untouched = estimate_seconds_left(stages, now)
    assert untouched == pytest.approx(sum(s["expected_seconds"] for s in stages))
    for stage in stages[:2]:
        stage.update(started_at=now.isoformat(), finished_at=now.isoformat(), progress=1.0)
    # Round 1 took twice its a-priori time: round 2 is expected to take twice as long too.
    first = stages[2]
    first["started_at"] = (now - timedelta(seconds=2 * first["expected_seconds"])).isoformat()
    first["finished_at"] = now.isoformat()
    assert estimate_seconds_left(stages, now) == pytest.approx(2 * stages[3]["expected_seconds"])
    # Round 2 a quarter done in 60 s: 180 s more.
    stages[3].update(started_at=(now - timedelta(seconds=60)).isoformat(), progress=0.25)
    assert estimate_seconds_left(stages, now) == pytest.approx(180)


def test_a_rounds_progress_weighs_its_steps_by_their_time():
    assert round_progress("evaluating", 0.0) == 0.0
    assert round_progress("training", 0.0) == pytest.approx(0.55)
    assert round_progress("training", 1.0) == pytest.approx(1.0)
    assert round_progress("done", 0.0) == 1.0


def test_the_default_loop_is_short_and_full_is_the_long_one():
    first = loop_arguments(full=False, sources="", rounds=None, tasks_per_environment=None)
    assert first["sources"] == list(FIRST_SOURCES) and first["rounds"] == 1
    assert first["round_options"]["training"]["grpo_steps"] == 1
    full = loop_arguments(full=True, sources="", rounds=None, tasks_per_environment=None)
    assert full["sources"] == builtin_names() and full["rounds"] == 2
    assert full["tasks_per_environment"] > first["tasks_per_environment"]
    chosen = loop_arguments(full=False, sources="iris", rounds=3, tasks_per_environment=2)
    assert chosen["sources"] == ["iris"] and chosen["rounds"] == 3
    assert chosen["tasks_per_environment"] == 2


def running_loop() -> Job:
    now = timezone.now()
    stages = plan_stages(["iris"], rounds=1)
    stages[0].update(
        started_at=(now - timedelta(seconds=30)).isoformat(),
        finished_at=(now - timedelta(seconds=5)).isoformat(),
        progress=1.0,
        summary="1 verified environments, 7 verified tools",
    )
    stages[1].update(started_at=(now - timedelta(seconds=5)).isoformat(), progress=0.5)
    return Job.objects.create(
        kind=KIND,
        state=Job.State.RUNNING,
        arguments={"sources": ["iris"], "rounds": 1},
        result={"stages": stages},
        started_at=now - timedelta(seconds=30),
    )


def test_the_dashboard_says_what_runs_now_what_comes_next_and_an_estimate(client, viewer):
    job = running_loop()
    view = loop_view(job)
    assert view.current.label.startswith("synthesize tasks") and view.next.label.startswith(
        "evolution round 1"
    )
    client.force_login(viewer)
    page = client.get(reverse("home")).content.decode()
    assert 'id="main-loop"' in page and "synthesize tasks" in page
    assert "an estimate" in page and "1 verified environments, 7 verified tools" in page
    # The live part is polled while the loop runs, and answers on its own.
    assert f'hx-get="{reverse("home-live")}"' in page
    live = client.get(reverse("home-live")).content.decode()
    assert 'id="main-loop"' in live and "next:" in live


def test_the_first_visit_guide_is_shown_once_per_user(client, viewer):
    client.force_login(viewer)
    page = client.get(reverse("home")).content.decode()
    assert 'id="first-visit-guide"' in page
    for link in ("/environments/new/", "/api/docs/", "serve_mcp", "/rounds/"):
        assert link in page
    answer = client.post(reverse("guide-dismiss"))
    assert answer.status_code == 302
    assert 'id="first-visit-guide"' not in client.get(reverse("home")).content.decode()


def test_the_tiny_local_policy_is_said_to_run_the_loop_not_to_score(client, viewer):
    from tests.support import factories

    tiny = factories.make_policy("tiny-qwen2", kind="local_hf")
    factories.make_round(1, policy=tiny, status="training")
    factories.make_round(2, policy=factories.make_policy("my-agent"), status="training")
    client.force_login(viewer)
    note = "there to run the loop"
    assert note in client.get(reverse("round-detail", args=[1])).content.decode()
    assert note not in client.get(reverse("round-detail", args=[2])).content.decode()
    # The dashboard says it where the latest round evaluates the tiny policy.
    assert note not in client.get(reverse("home")).content.decode()
    factories.make_round(3, policy=tiny, status="evaluating")
    assert "expect 0 successes" in client.get(reverse("home")).content.decode()
