"""CSV files -> one table each (header row required, delimiter sniffed)."""

from __future__ import annotations

import csv
from pathlib import Path

from .base import DatabaseBuilder, SourceError, TableSpec, sql_name

MISSING = frozenset({"NA", "N/A", "NULL", "null", "NaN", "nan"})


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV file as dicts; raises SourceError naming the line of any malformed row."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path.name}: cannot read as UTF-8 text ({exc})") from exc
    if not text.strip():
        raise SourceError(f"{path.name}: empty CSV file")
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(text.splitlines(), dialect)
    header = next(reader)
    names = [sql_name(h) for h in header]
    if len(set(names)) != len(names):
        raise SourceError(f"{path.name}: duplicate column names in header {header}")
    rows = []
    for line_no, values in enumerate(reader, start=2):
        if not values:
            continue
        if len(values) != len(header):
            raise SourceError(
                f"{path.name}: line {line_no} has {len(values)} fields, header has {len(header)}"
            )
        rows.append(
            {h: (None if v.strip() in MISSING else v) for h, v in zip(header, values, strict=True)}
        )
    if not rows:
        raise SourceError(f"{path.name}: CSV file has a header but no rows")
    return rows


def load_csv(builder: DatabaseBuilder, path: Path, table: str | None = None, **kw) -> TableSpec:
    path = Path(path)
    rows = read_csv_rows(path)
    return builder.add_table(
        table or path.stem, rows, source=str(path), kind="csv", detail=f"{len(rows)} rows", **kw
    )
