"""Jobs on the embedded default: the in-process worker thread, progress and the role command."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job
from aw_site.roles import role_of
from tests.support.worker import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_in_process_worker_runs_jobs_without_a_broker(settings):
    settings.AW_JOBS_MODE = "thread"
    with transaction.atomic():
        job = enqueue("system.worker_check", {"seconds": 0.2, "steps": 3})
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=30, message="in-process job")
    record = Job.objects.get(pk=job.pk)
    assert record.state == "succeeded" and record.result["steps"] == 3
    assert record.worker.startswith("in-process@")


def test_unknown_job_kind_is_refused_before_anything_is_recorded():
    with pytest.raises(KeyError, match="unknown job kind"):
        enqueue("no.such.job")
    assert Job.objects.count() == 0


def test_create_role_user_reads_the_password_from_the_environment(monkeypatch, django_user_model):
    from django.core.management.base import CommandError

    monkeypatch.delenv("AW_USER_PASSWORD", raising=False)
    with pytest.raises(CommandError, match="AW_USER_PASSWORD"):
        call_command("create_role_user", "rita", role="reviewer")
    monkeypatch.setenv("AW_USER_PASSWORD", "a-long-password")
    call_command("create_role_user", "rita", role="reviewer")
    user = django_user_model.objects.get(username="rita")
    assert user.check_password("a-long-password") and role_of(user) == "reviewer"
