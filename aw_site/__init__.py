"""Agent-World site: settings, URLs, the Celery app and what every app shares."""

from aw_site.celery import app as celery_app

__all__ = ["celery_app"]
