"""CSV files -> one table each (header row required, delimiter sniffed)."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

from .base import DatabaseBuilder, SourceError, TableSpec, sql_name
from .limits import DEFAULT_LIMITS, Limits

MISSING = frozenset({"NA", "N/A", "NULL", "null", "NaN", "nan"})


def read_csv_rows(
    path: Path, name: str | None = None, max_columns: int = DEFAULT_LIMITS.max_csv_columns
) -> list[dict[str, str]]:
    """Rows of a CSV file as dicts; raises SourceError naming the line of any malformed row."""
    path = Path(path)
    label = name or path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{label}: cannot read as UTF-8 text ({exc})") from exc
    if not text.strip():
        raise SourceError(f"{label}: empty CSV file")
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(text.splitlines(), dialect)
    try:
        header = next(reader)
    except csv.Error as exc:
        raise SourceError(f"{label}: line 1: {exc}") from exc
    if len(header) > max_columns:
        raise SourceError(
            f"{label}: {len(header)} columns, more than the {max_columns}-column limit of a table"
        )
    names = [sql_name(h) for h in header]
    if len(set(names)) != len(names):
        raise SourceError(f"{label}: duplicate column names in header {header}")
    rows = []
    try:
        lines = list(enumerate(reader, start=2))
    except csv.Error as exc:
        raise SourceError(f"{label}: line {reader.line_num}: {exc}") from exc
    for line_no, values in lines:
        if not values:
            continue
        if len(values) != len(header):
            raise SourceError(
                f"{label}: line {line_no} has {len(values)} fields, header has {len(header)}"
            )
        rows.append(
            {h: (None if v.strip() in MISSING else v) for h, v in zip(header, values, strict=True)}
        )
    if not rows:
        raise SourceError(f"{label}: CSV file has a header but no rows")
    return rows


def load_csv(
    builder: DatabaseBuilder,
    path: Path,
    table: str | None = None,
    *,
    source: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    **kw,
) -> TableSpec:
    path = Path(path)
    source = source or str(path)
    label = source if ":" in source else path.name
    rows = read_csv_rows(path, label, limits.max_csv_columns)
    stem = Path(source.split(":")[-1]).stem
    try:
        return builder.add_table(
            table or stem, rows, source=source, kind="csv", detail=f"{len(rows)} rows", **kw
        )
    except sqlite3.Error as exc:
        raise SourceError(f"{label}: cannot be stored ({exc})") from exc
