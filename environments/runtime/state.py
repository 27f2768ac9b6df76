"""Episode state: a canonical state hash and a row-level diff against the initial state.

Standard library only: this module also runs inside the sandbox worker, where the episode's
database lives. Both functions take an open sqlite3 connection or a path to a database file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from typing import Any


def state_hash(db: sqlite3.Connection | str | os.PathLike[str]) -> str:
    """sha256 of all user tables, independent of row order and of physical storage.

    Each row is hashed on its own (table, column names, typed values); the sorted row digests
    of a table are hashed together, then the table digests in table-name order.
    """
    with _opened(db) as conn:
        digest = hashlib.sha256()
        for table in _tables(conn):
            columns = _columns(conn, table)
            row_digests = sorted(
                hashlib.sha256(_canonical(row)).digest()
                for row in conn.execute(f"SELECT {_column_list(columns)} FROM {_quote(table)}")
            )
            table_digest = hashlib.sha256(json.dumps([table, columns]).encode())
            for row_digest in row_digests:
                table_digest.update(row_digest)
            digest.update(table_digest.digest())
        return digest.hexdigest()


def state_diff(
    initial: sqlite3.Connection | str | os.PathLike[str],
    current: sqlite3.Connection | str | os.PathLike[str],
) -> dict[str, dict[str, list[Any]]]:
    """Row-level changes from `initial` to `current`, keyed by primary key (or rowid).

    Returns {"table": {"added": [row], "removed": [row], "changed": [{"key", "before",
    "after"}]}} with only the tables that changed; rows are {column: value} dicts.
    """
    with _opened(initial) as before_conn, _opened(current) as after_conn:
        before_tables = set(_tables(before_conn))
        after_tables = set(_tables(after_conn))
        diff: dict[str, dict[str, list[Any]]] = {}
        for table in sorted(before_tables | after_tables):
            before = _keyed_rows(before_conn, table) if table in before_tables else {}
            after = _keyed_rows(after_conn, table) if table in after_tables else {}
            if before == after:
                continue
            added = [after[key] for key in after.keys() - before.keys()]
            removed = [before[key] for key in before.keys() - after.keys()]
            changed = [
                {
                    "key": _key_dict(after_conn, table, key),
                    "before": before[key],
                    "after": after[key],
                }
                for key in before.keys() & after.keys()
                if before[key] != after[key]
            ]
            diff[table] = {
                "added": sorted(added, key=_sort_key),
                "removed": sorted(removed, key=_sort_key),
                "changed": sorted(changed, key=lambda c: _sort_key(c["key"])),
            }
        return diff


class _opened:
    """Context manager: use a given connection as is, or open a path read-only."""

    def __init__(self, db: sqlite3.Connection | str | os.PathLike[str]) -> None:
        self.db = db
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        if isinstance(self.db, sqlite3.Connection):
            return self.db
        self.conn = sqlite3.connect(f"file:{os.fspath(self.db)}?mode=ro", uri=True)
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column_list(columns: list[str]) -> str:
    return ", ".join(_quote(c) for c in columns)


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]


def _primary_key(conn: sqlite3.Connection, table: str) -> list[str]:
    info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    return [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]


def _keyed_rows(conn: sqlite3.Connection, table: str) -> dict[tuple, dict[str, Any]]:
    columns = _columns(conn, table)
    key_columns = _primary_key(conn, table)
    if key_columns:
        key_positions = [columns.index(c) for c in key_columns]
        sql = f"SELECT {_column_list(columns)} FROM {_quote(table)}"
        rows = conn.execute(sql)
        return {
            tuple(row[i] for i in key_positions): dict(zip(columns, row, strict=True))
            for row in rows
        }
    sql = f"SELECT rowid, {_column_list(columns)} FROM {_quote(table)}"
    return {(row[0],): dict(zip(columns, row[1:], strict=True)) for row in conn.execute(sql)}


def _key_dict(conn: sqlite3.Connection, table: str, key: tuple) -> dict[str, Any]:
    key_columns = _primary_key(conn, table) or ["rowid"]
    return dict(zip(key_columns, key, strict=True))


def _canonical(row: tuple) -> bytes:
    """Typed, unambiguous bytes for one row (1 and 1.0 and '1' differ)."""
    return json.dumps([_tagged(value) for value in row], ensure_ascii=False).encode()


def _tagged(value: Any) -> list[Any]:
    if value is None:
        return ["n"]
    if isinstance(value, bool | int):
        return ["i", int(value)]
    if isinstance(value, float):
        return ["f", repr(value)]
    if isinstance(value, bytes | memoryview):
        return ["b", bytes(value).hex()]
    return ["s", str(value)]


def _sort_key(row: dict[str, Any]) -> str:
    return json.dumps([_tagged(v) for v in row.values()], ensure_ascii=False)
