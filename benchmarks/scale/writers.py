"""Row writers for the scale generator: PostgreSQL COPY (fast) or bulk_create (any database).

Rows are dicts keyed by field ``attname`` with explicit primary keys, so foreign keys are known
without reading anything back. Fields a row leaves out take the model field's default.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

from django.core.management.color import no_style
from django.db import connection, models


def _fields(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields]


def _defaults(model: type[models.Model]) -> dict[str, Any]:
    return {f.attname: f.get_default() for f in _fields(model) if not f.primary_key}


class RowWriter:
    """Writes rows of one model in batches; ``finish`` resets the id sequences it touched."""

    def __init__(self, batch_size: int = 5000):
        self.batch_size = batch_size
        self.touched: list[type[models.Model]] = []

    def write(self, model: type[models.Model], rows: Iterable[dict[str, Any]]) -> int:
        raise NotImplementedError

    def finish(self) -> None:
        statements = connection.ops.sequence_reset_sql(no_style(), self.touched)
        if statements:
            with connection.cursor() as cursor:
                for sql in statements:
                    cursor.execute(sql)


class BulkCreateWriter(RowWriter):
    """Portable writer: ``bulk_create`` in batches (SQLite in tests, tiny scales)."""

    def write(self, model, rows) -> int:
        if model not in self.touched:
            self.touched.append(model)
        defaults = _defaults(model)
        written, batch = 0, []
        for row in rows:
            batch.append(model(**{**defaults, **row}))
            if len(batch) >= self.batch_size:
                model.objects.bulk_create(batch)
                written += len(batch)
                batch = []
        if batch:
            model.objects.bulk_create(batch)
            written += len(batch)
        return written


class CopyWriter(RowWriter):
    """PostgreSQL ``COPY ... FROM STDIN`` through psycopg 3: hundreds of thousands of rows/s."""

    def write(self, model, rows) -> int:
        if model not in self.touched:
            self.touched.append(model)
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return 0
        # Auto-created through tables: let the database number the rows.
        fields = [f for f in _fields(model) if not f.primary_key or f.attname in first]
        defaults = _defaults(model)
        attnames = [f.attname for f in fields]
        json_fields = {f.attname for f in fields if isinstance(f, models.JSONField)}
        columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
        table = connection.ops.quote_name(model._meta.db_table)
        written = 0
        with connection.cursor() as wrapper:
            cursor = wrapper.cursor  # the psycopg cursor under Django's wrapper
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in itertools.chain([first], rows):
                    merged = {**defaults, **row}
                    values = []
                    for name in attnames:
                        value = merged.get(name)
                        if name in json_fields and value is not None:
                            value = json.dumps(value, separators=(",", ":"))
                        values.append(value)
                    copy.write_row(values)
                    written += 1
        return written


def writer_for_connection(batch_size: int = 5000) -> RowWriter:
    if connection.vendor == "postgresql":
        return CopyWriter(batch_size)
    return BulkCreateWriter(batch_size)
