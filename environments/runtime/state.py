"""Episode state: a canonical state hash and a row-level diff against the initial state.

Standard library only: this module also runs inside the sandbox worker, where the episode's
database lives. Both functions take an open sqlite3 connection or a path to a database file.
They are the full reference implementations: they read every row. Episodes use the incremental
versions in change_tracking.py, which are built from the same pieces (row_digest,
table_digest, database_digest, table_meta, table_changes) and give the same results.

The hash is a multiset hash, so that it can be updated row by row: a table's digest is
sha256 of (table name, column names, row count, sum of its row digests mod 2**256), the
database digest is sha256 over the table digests in table-name order. Each row digest is
sha256 of the row's typed canonical values (1, 1.0 and '1' differ).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

MODULUS = 2**256


def state_hash(db: sqlite3.Connection | str | os.PathLike[str]) -> str:
    """sha256 of all user tables, independent of row order and of physical storage."""
    with _opened(db) as conn:
        return database_digest(table_state_digest(conn, table) for table in _tables(conn))


def state_diff(
    initial: sqlite3.Connection | str | os.PathLike[str],
    current: sqlite3.Connection | str | os.PathLike[str],
) -> dict[str, dict[str, Any]]:
    """Row-level changes from `initial` to `current`, keyed by primary key (or rowid).

    Returns {"table": {"added": [row], "removed": [row], "changed": [{"key", "before",
    "after"}], "key": [column], "surrogate": bool, "references": {column: table}}} with only
    the tables that changed; rows are {column: value} dicts. `key` names the key columns
    (["rowid"] without a primary key); `surrogate` is true when SQLite assigns the key (a
    single INTEGER PRIMARY KEY, i.e. a rowid alias, or no primary key); `references` maps
    each single-column foreign key to the table it references.
    """
    with _opened(initial) as before_conn, _opened(current) as after_conn:
        before_tables = set(_tables(before_conn))
        after_tables = set(_tables(after_conn))
        diff: dict[str, dict[str, Any]] = {}
        for table in sorted(before_tables | after_tables):
            before = _keyed_rows(before_conn, table) if table in before_tables else {}
            after = _keyed_rows(after_conn, table) if table in after_tables else {}
            meta = table_meta(after_conn if table in after_tables else before_conn, table)
            changes = table_changes(before, after, meta)
            if changes is not None:
                diff[table] = changes
        return diff


# -- pieces shared with the incremental path (change_tracking.py) ------------------------------


def row_digest(row: Sequence[Any]) -> int:
    """One row's digest as an integer, to be summed mod 2**256 into its table's digest."""
    return int.from_bytes(hashlib.sha256(_canonical(row)).digest(), "big")


def table_digest(table: str, columns: list[str], count: int, total: int) -> bytes:
    """A table's digest from its row count and the sum of its row digests."""
    header = json.dumps([table, columns, count, format(total % MODULUS, "064x")])
    return hashlib.sha256(header.encode()).digest()


def database_digest(table_digests: Iterable[bytes]) -> str:
    """The state hash from the table digests, given in table-name order."""
    digest = hashlib.sha256()
    for one in table_digests:
        digest.update(one)
    return digest.hexdigest()


def table_sum(conn: sqlite3.Connection, table: str, columns: list[str]) -> tuple[int, int]:
    """(row count, sum of row digests mod 2**256) of one table, reading every row."""
    count = total = 0
    for row in conn.execute(f"SELECT {_column_list(columns)} FROM {_quote(table)}"):
        count += 1
        total += row_digest(row)
    return count, total % MODULUS


def table_state_digest(conn: sqlite3.Connection, table: str) -> bytes:
    """A table's digest, reading every row."""
    columns = _columns(conn, table)
    return table_digest(table, columns, *table_sum(conn, table, columns))


@dataclass(frozen=True)
class TableMeta:
    """What the diff needs to know about a table's keys."""

    columns: list[str]
    key: list[str]  # primary key columns, empty without one
    surrogate: bool
    references: dict[str, str]

    @property
    def key_names(self) -> list[str]:
        return self.key or ["rowid"]

    def describe(self) -> dict[str, Any]:
        """The metadata entries of a changed table in a diff."""
        return {
            "key": list(self.key_names),
            "surrogate": self.surrogate,
            "references": dict(self.references),
        }


def table_meta(conn: sqlite3.Connection, table: str) -> TableMeta:
    info = conn.execute(f"PRAGMA table_info({_quote(table)})").fetchall()
    columns = [row[1] for row in info]
    key_info = sorted((r for r in info if r[5]), key=lambda r: r[5])
    key = [row[1] for row in key_info]
    if not key:
        surrogate = True
    elif len(key_info) == 1 and str(key_info[0][2]).upper() == "INTEGER":
        # A rowid alias unless the table is WITHOUT ROWID or declared `INTEGER PRIMARY KEY
        # DESC`: both keep the key in an index of origin "pk", an alias has none.
        indexes = conn.execute(f"PRAGMA index_list({_quote(table)})").fetchall()
        surrogate = not any(row[3] == "pk" for row in indexes)
    else:
        surrogate = False
    foreign: dict[int, list[tuple]] = {}
    for row in conn.execute(f"PRAGMA foreign_key_list({_quote(table)})"):
        foreign.setdefault(row[0], []).append(row)
    references = {rows[0][3]: rows[0][2] for rows in foreign.values() if len(rows) == 1}
    return TableMeta(columns, key, surrogate, dict(sorted(references.items())))


def table_changes(
    before: dict[tuple, dict[str, Any]], after: dict[tuple, dict[str, Any]], meta: TableMeta
) -> dict[str, Any] | None:
    """One table's diff entry from its keyed rows before and after, None when unchanged."""
    if before == after:
        return None
    added = [after[key] for key in after.keys() - before.keys()]
    removed = [before[key] for key in before.keys() - after.keys()]
    changed = [
        {
            "key": dict(zip(meta.key_names, key, strict=True)),
            "before": before[key],
            "after": after[key],
        }
        for key in before.keys() & after.keys()
        if before[key] != after[key]
    ]
    return {
        "added": sorted(added, key=_sort_key),
        "removed": sorted(removed, key=_sort_key),
        "changed": sorted(changed, key=lambda c: _sort_key(c["key"])),
        **meta.describe(),
    }


# -- helpers -------------------------------------------------------------------------------------


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


def _canonical(row: Sequence[Any]) -> bytes:
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
