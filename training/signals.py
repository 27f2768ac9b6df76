"""Register the endpoint policy of the AW_POLICY_* variables when the app starts for real:
after migrations and when a Celery worker is ready (the embedded run and the policy lists call
``ensure_env_policy`` themselves). Nothing here touches the database at import time."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

logger = logging.getLogger(__name__)


def register_env_policy(**kwargs) -> None:
    from django.db import DatabaseError

    from training.service import ensure_env_policy

    try:
        policy = ensure_env_policy()
    except DatabaseError as exc:  # a database not migrated yet: the next start registers it
        logger.warning("endpoint policy from AW_POLICY_* not registered: %s", exc)
        return
    if policy is not None:
        logger.info("endpoint policy from AW_POLICY_*: %s", policy)


def after_migrate(sender=None, using: str = "default", **kwargs) -> None:
    if using != "default":
        return
    register_env_policy()


@worker_ready.connect
def on_worker_ready(sender=None, **kwargs) -> None:
    register_env_policy()
