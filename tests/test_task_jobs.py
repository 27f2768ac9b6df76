"""Task synthesis as a job, stored in the database, and fresh arena tasks per round."""

from __future__ import annotations

import pytest
from django.db import transaction

from aw_site.jobs import enqueue
from aw_site.models import Job
from environments.registry import record_package
from environments.runtime import SandboxPool
from tasks.audit import MEANING_CHECKS
from tasks.models import Task
from tasks.service import fresh_arena_tasks
from tests.support.sample_package import build_sample_package
from tests.support.worker import wait_for


@pytest.fixture
def bookstore(tmp_path):
    return record_package(build_sample_package(tmp_path, extra_books=30))


@pytest.mark.django_db(transaction=True)
def test_synthesize_job_stores_verified_tasks_with_splits(bookstore, settings):
    settings.AW_JOBS_MODE = "thread"
    with transaction.atomic():
        job = enqueue(
            "tasks.synthesize",
            {
                "environment": bookstore.pk,
                "count": 12,
                "min_walk_length": 1,
                "max_walk_length": 3,
                "write_steps": 1,
            },
        )
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=120, message="synthesis job")
    record = Job.objects.get(pk=job.pk)
    assert record.state == "succeeded", record.error
    tasks = Task.objects.filter(environment=bookstore)
    assert tasks.count() == record.result["created"] >= 6
    assert set(tasks.values_list("split", flat=True)) <= {"train", "arena", "heldout"}
    assert any(t.write_steps >= 1 and t.expected_diff for t in tasks)
    assert all(t.gold_chain and t.instruction for t in tasks)
    bookstore.refresh_from_db()
    assert bookstore.task_count == tasks.count()
    # Every stored task passed the verifier audit; the environment keeps the account.
    assert all(t.audit["passed"] and t.answer_contract for t in tasks)
    audit = bookstore.task_audit
    assert audit["kept"] >= tasks.count() and audit["audited"] == audit["kept"] + sum(
        audit["discarded"].values()
    )
    # a task the meaning checks discard is never replayed: every other one faces the gold run
    meaningless = sum(audit["discarded"].get(name, 0) for name in MEANING_CHECKS)
    assert audit["checks_applied"]["gold"] == audit["audited"] - meaningless
    # the job's result carries this run's account: the audit's and every other discard
    assert record.result["stored"] == record.result["created"]
    assert record.result["audit"]["kept"] >= record.result["created"]
    assert all(isinstance(n, int) for n in record.result["discarded"].values())


@pytest.mark.django_db
def test_fresh_arena_tasks_are_new_each_round_and_stable_on_rerun(bookstore):
    with SandboxPool(workers=1) as pool:
        first = fresh_arena_tasks(bookstore, round_number=1, count=3, pool=pool)
        again = fresh_arena_tasks(bookstore, round_number=1, count=3, pool=pool)
        second = fresh_arena_tasks(bookstore, round_number=2, count=3, pool=pool)
    assert first and [t.pk for t in first] == [t.pk for t in again]
    assert all(t.split == "arena" for t in first + second)
    assert not {t.signature for t in first} & {t.signature for t in second}
