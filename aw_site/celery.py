"""The Celery application: queues default, sandbox and gpu; late acks so a killed worker's job
is redelivered rather than lost."""

from __future__ import annotations

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "aw_site.settings")

app = Celery("agent_world")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="default",
    task_queues=[Queue("default"), Queue("sandbox"), Queue("gpu")],
    task_track_started=True,
    broker_connection_retry_on_startup=True,
    beat_schedule={
        "reap-stale-jobs": {"task": "aw_site.reap_stale_jobs", "schedule": 60.0},
    },
)
app.autodiscover_tasks(related_name="jobs")
