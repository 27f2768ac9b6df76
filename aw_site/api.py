"""Shared REST pieces: JSON errors with a clear message."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key in ("detail", "non_field_errors") else f"{key}: {inner}"
    if isinstance(detail, list | tuple) and detail:
        return _first_message(detail[0])
    return str(detail)


def json_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Every API error is JSON: {"error": one readable sentence, "detail": the full detail}."""
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        return Response(
            {"error": _first_message(detail), "detail": detail}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"error": f"request body too large (limit {limit} bytes)", "detail": str(exc)},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    detail = response.data
    response.data = {"error": _first_message(detail), "detail": detail}
    return response
