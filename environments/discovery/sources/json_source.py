"""JSON documents -> tables; nested objects are flattened, nested lists become child tables.

A list of objects becomes one table; a top-level object whose values are lists becomes one table
per key; an object of objects keyed by id becomes a table with that key as a column. A list of
objects nested in a record becomes a child table `<table>_<field>` whose rows carry the parent's
key (a foreign key to the parent).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .base import DatabaseBuilder, SourceError, TableSpec, singular, sql_name


def read_json(path: Path) -> Any:
    path = Path(path)
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path.name}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path.name}: cannot read ({exc})") from exc


def _records(document: Any, name: str, source: str) -> dict[str, list[dict]]:
    if isinstance(document, list):
        if not document or not all(isinstance(d, dict) for d in document):
            raise SourceError(f"{source}: {name!r} must be a non-empty list of objects")
        return {name: document}
    if isinstance(document, dict):
        if document and all(isinstance(v, list) for v in document.values()):
            out: dict[str, list[dict]] = {}
            for key, value in document.items():
                out.update(_records(value, key, source))
            return out
        if document and all(isinstance(v, dict) for v in document.values()):
            key_col = f"{singular(sql_name(name))}_key"
            return {name: [{key_col: k, **v} for k, v in document.items()]}
    raise SourceError(f"{source}: expected a list of objects or an object of lists/objects")


def _flatten(record: dict, prefix: str = "") -> tuple[dict, dict[str, list]]:
    flat: dict[str, Any] = {}
    nested: dict[str, list] = {}
    for key, value in record.items():
        column = f"{prefix}{sql_name(key)}"
        if isinstance(value, dict):
            sub_flat, sub_nested = _flatten(value, f"{column}_")
            flat.update(sub_flat)
            nested.update(sub_nested)
        elif isinstance(value, list):
            nested[column] = value
        else:
            flat[column] = value
    return flat, nested


def load_documents(
    builder: DatabaseBuilder,
    records: list[dict],
    table: str,
    source: str,
    kind: str = "json",
    parent_column: str | None = None,
) -> TableSpec:
    """Write records (and, recursively, their nested lists as child tables)."""
    table = sql_name(table)
    flats, children = [], []
    for record in records:
        if not isinstance(record, dict):
            raise SourceError(f"{source}: {table!r} holds a non-object item {record!r:.60}")
        flat, nested = _flatten(record)
        flats.append(flat)
        children.append(nested)
    rows = [{k: f.get(k) for k in _ordered(flats)} for f in flats]
    spec = builder.add_table(
        table,
        rows,
        source=source,
        kind=kind,
        detail=f"{len(rows)} documents",
        avoid_key=(parent_column,) if parent_column else (),
    )
    pk_values = [
        r[0]
        for r in builder.conn.execute(f'SELECT "{spec.primary_key}" FROM "{table}" ORDER BY rowid')
    ]
    fields = sorted(set().union(*(c.keys() for c in children)))
    for field in fields:
        child_rows = []
        parent_col = f"{singular(table)}_{spec.primary_key}"
        for parent_key, nested in zip(pk_values, children, strict=True):
            for item in nested.get(field, []):
                if isinstance(item, dict):
                    flat_item = dict(item)
                else:
                    flat_item = {"value": item}
                child_rows.append({parent_col: parent_key, **flat_item})
        if not child_rows:
            continue
        child = load_documents(builder, child_rows, f"{table}_{field}", source, kind, parent_col)
        builder.declare_foreign_key(child.name, parent_col, table, spec.primary_key)
    return spec


def _ordered(flats: list[dict]) -> list[str]:
    order: list[str] = []
    for flat in flats:
        for key in flat:
            if key not in order:
                order.append(key)
    return order


def load_json(builder: DatabaseBuilder, path: Path, table: str | None = None) -> list[TableSpec]:
    path = Path(path)
    document = read_json(path)
    tables = _records(document, table or path.stem, path.name)
    return [load_documents(builder, rows, name, str(path)) for name, rows in tables.items()]
