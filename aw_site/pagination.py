"""API list pagination: numbered pages for browsing, a keyset cursor for walking big lists.

Numbered pages cost an OFFSET scan and a COUNT(*) that grow with the table (page 2,000 of
200,000 tasks took ~200 ms); a keyset cursor (`WHERE id > last ORDER BY id LIMIT n`) costs the
same on every page and never skips or repeats a row when others are inserted meanwhile. So
numbered pages stop at AW_API_MAX_PAGE_OFFSET rows and deeper reads go through `?cursor=`:
an empty cursor starts at the first row, and each response's `next` link carries the next one.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings
from django.db.models import Model, QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

CURSOR_PREFIX = "id:"
CURSOR_ORDERINGS = {"id": False, "-id": True, "pk": False, "-pk": True}


def encode_cursor(last_pk: int) -> str:
    """An opaque token: clients pass it back and never build one."""
    raw = f"{CURSOR_PREFIX}{last_pk}".encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(token: str) -> int | None:
    """The primary key after which the page starts; None for an empty (first-page) cursor."""
    if token == "":
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        raw = ""
    if not raw.startswith(CURSOR_PREFIX) or not raw[len(CURSOR_PREFIX) :].isdigit():
        raise ValidationError(
            {"cursor": "not a cursor this API issued; start with an empty ?cursor= and follow next"}
        )
    return int(raw[len(CURSOR_PREFIX) :])


class StandardPagination(PageNumberPagination):
    """Numbered pages up to a row limit; `?cursor=` for keyset pages in id order."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    cursor_query_param = "cursor"

    def paginate_queryset(
        self, queryset: QuerySet, request: Request, view: Any = None
    ) -> list[Model] | None:
        self.request = request
        self.cursor_mode = self.cursor_query_param in request.query_params
        if not self.cursor_mode:
            return super().paginate_queryset(queryset, request, view)
        return self._keyset_page(queryset, request)

    def get_page_number(self, request: Request, paginator: Any) -> Any:
        number = super().get_page_number(request, paginator)
        try:
            first_row = (int(number) - 1) * paginator.per_page
        except (TypeError, ValueError):
            return number  # the paginator answers an invalid page with 404 as usual
        limit = settings.AW_API_MAX_PAGE_OFFSET
        if first_row >= limit:
            raise ValidationError(
                {
                    "page": (
                        f"page {number} starts at row {first_row + 1:,}; numbered pages stop at "
                        f"row {limit:,}. Walk long lists with ?cursor= (start empty, follow next)."
                    )
                }
            )
        return number

    def _keyset_page(self, queryset: QuerySet, request: Request) -> list[Model]:
        descending = self._cursor_descending(request)
        after = decode_cursor(request.query_params[self.cursor_query_param])
        size = self.get_page_size(request) or self.page_size
        queryset = queryset.order_by("-pk" if descending else "pk")
        if after is not None:
            queryset = (
                queryset.filter(pk__lt=after) if descending else queryset.filter(pk__gt=after)
            )
        rows = list(queryset[: size + 1])
        self.next_cursor = encode_cursor(rows[size - 1].pk) if len(rows) > size else None
        return rows[:size]

    def _cursor_descending(self, request: Request) -> bool:
        ordering = request.query_params.get("ordering", "id")
        if ordering not in CURSOR_ORDERINGS:
            raise ValidationError(
                {
                    "ordering": (
                        f"cursor pages run in id order; ordering={ordering} works only with "
                        "numbered pages (use ordering=id or ordering=-id with a cursor)"
                    )
                }
            )
        return CURSOR_ORDERINGS[ordering]

    def get_next_link(self) -> str | None:
        if not self.cursor_mode:
            return super().get_next_link()
        if self.next_cursor is None:
            return None
        url = remove_query_param(self.request.build_absolute_uri(), self.page_query_param)
        return replace_query_param(url, self.cursor_query_param, self.next_cursor)

    def get_paginated_response(self, data: list[Any]) -> Response:
        if not self.cursor_mode:
            return super().get_paginated_response(data)
        return Response({"next": self.get_next_link(), "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        paginated = super().get_paginated_response_schema(schema)
        paginated["required"] = ["results"]
        paginated["properties"]["count"]["description"] = "absent on cursor pages"
        return paginated

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        cursor = {
            "name": self.cursor_query_param,
            "required": False,
            "in": "query",
            "description": "Keyset page in id order: empty for the first page, then the value in next.",
            "schema": {"type": "string"},
        }
        return [*super().get_schema_operation_parameters(view), cursor]
