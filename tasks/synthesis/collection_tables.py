"""JSON collections read as tables, so synthesis draws arguments from real rows of a released
environment (a package whose state is `collections/<name>.json`) as it does from SQLite.

- A collection that is a list of objects is a table: its columns are the scalar fields its rows
  hold (a field a write added to some rows included), typed from their values; nested lists and
  objects are not columns (no argument is drawn from them, and a set cannot hold them).
- Its key is `id` where every row has a distinct one, else `<singular>_id` (`book_id` in
  `books`) where that is distinct; otherwise it has none, as an SQLite table without a key.
- `<thing>_id` columns refer to the table named for the thing where it has a key (foreign
  keys, as the manifest's `tables` gives SQLite builds).
- A single document is a one-row table of its scalar fields (a settings object).
- Log collections (appended to on every call, found at verification) are no tables: what they
  hold is the history of the calls, not the world a task is about.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.discovery.naming import plural, singular
from environments.runtime import json_state

COLLECTIONS_DIR = "collections"


@dataclass(frozen=True)
class CollectionTable:
    """One table read from a collection: its columns (name -> SQLite-like type), key and rows."""

    name: str
    columns: dict[str, str]
    primary_key: list[str]
    foreign_keys: dict[str, tuple[str, str]]
    rows: list[dict[str, Any]]


def read_collection_tables(package_root: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """{table name: CollectionTable} of a collection package (see the module docstring)."""
    state = manifest.get("state") or {}
    logs = set(state.get("log_collections") or ())
    folder = Path(package_root) / COLLECTIONS_DIR
    raw: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob(f"*{json_state.SUFFIX}")):
        name = path.name[: -len(json_state.SUFFIX)]
        if name in logs:
            continue
        rows = table_rows(json_state.parse_collection(path.read_bytes()))
        if rows is not None:
            raw[name] = rows
    keys = {name: row_key(name, rows) for name, rows in raw.items()}
    tables = {}
    for name, rows in raw.items():
        columns = column_types(rows)
        key = keys[name]
        foreign = {
            column: (target, keys[target][0])
            for column in columns
            if column.endswith("_id") and column not in key
            for target in [referenced_table(column[: -len("_id")], keys)]
            if target is not None and target != name and keys[target]
        }
        scalars = [{c: row.get(c) for c in columns} for row in rows]
        if key:
            scalars.sort(key=lambda row: _order(row.get(key[0])))
        tables[name] = CollectionTable(name, columns, key, foreign, scalars)
    return tables


def table_rows(data: Any) -> list[dict[str, Any]] | None:
    """The rows of a collection: its objects, or the document as one row; None when it holds
    neither (a list of scalars, a file that is not JSON)."""
    if isinstance(data, dict):
        return None if json_state.UNREADABLE in data else [data]
    if isinstance(data, list) and data and all(isinstance(row, dict) for row in data):
        return data
    return None


def column_types(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Scalar fields in first-seen order, each typed INTEGER, REAL, BOOLEAN or TEXT ('' mixed)."""
    kinds: dict[str, set[str]] = {}
    nested: set[str] = set()
    for row in rows:
        for field, value in row.items():
            kind = _kind(value)
            if kind is None:
                nested.add(field)
            elif kind:
                kinds.setdefault(field, set()).add(kind)
            else:
                kinds.setdefault(field, set())
    columns = {}
    for field, seen in kinds.items():
        if field in nested:
            continue
        if seen == {"INTEGER", "REAL"}:
            seen = {"REAL"}
        columns[field] = next(iter(seen)) if len(seen) == 1 else ("TEXT" if not seen else "")
    return columns


def row_key(name: str, rows: list[dict[str, Any]]) -> list[str]:
    """["id"], ["<singular>_id"] or [] (see the module docstring)."""
    for column in ("id", f"{singular(name)}_id"):
        values = [row.get(column) for row in rows]
        scalar = all(isinstance(v, str | int) and not isinstance(v, bool) for v in values)
        if scalar and len(set(values)) == len(values) and len(rows) > 0:
            return [column]
    return []


def referenced_table(stem: str, keys: dict[str, list[str]]) -> str | None:
    """The table a `<stem>_id` column refers to: named for the stem, singular or plural."""
    for candidate in (stem, plural(stem), singular(stem)):
        if candidate in keys:
            return candidate
    return None


def _kind(value: Any) -> str | None:
    """The column type of one value; '' for null (no evidence), None for nested values."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INTEGER"
    if isinstance(value, float):
        return "REAL"
    if isinstance(value, str):
        return "TEXT"
    return None


def _order(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value if isinstance(value, str | int | float) else str(value))
