"""Validation of a policy endpoint's address.

Django's URL validator wants a dotted host name (or ``localhost``); endpoints on a cluster or a
compose network are reached by single-label names (``http://vllm:8000/v1``), so those pass
here. Only the scheme and a host are required."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError


def validate_endpoint_url(value: str) -> None:
    """An http(s) address with a host; its port, when given, a number."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        raise ValidationError(f"not a valid endpoint address: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("an endpoint address is http(s)://host[:port][/path]")
    if any(c.isspace() for c in value):
        raise ValidationError("an endpoint address has no spaces")
