"""A theme document built into an environment the way a user does it (`build_environment`)."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command

from environments.discovery.themes import parse_theme_document
from environments.models import Environment
from environments.themes_import import store_theme


def build(document: dict, source: str, **options) -> Environment:
    """The environment the command built from `document` (verified or rejected)."""
    theme = store_theme(parse_theme_document(document, source))
    call_command("build_environment", theme=theme.pk, stdout=StringIO(), **options)
    return Environment.objects.filter(theme=theme).latest("pk")


def verified(document: dict, source: str, **options) -> Environment:
    """`build`, which must publish: a rejection fails the test with its reason."""
    environment = build(document, source, **options)
    assert environment.status == Environment.Status.VERIFIED, environment.failure_reason
    return environment
