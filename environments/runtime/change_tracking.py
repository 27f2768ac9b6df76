"""Incremental state hash and diff of an episode: which rows did its tools touch?

Why TEMP triggers: Python's sqlite3 does not expose SQLite's session extension, and
`total_changes` counts writes but says nothing about which table or row. AFTER INSERT / UPDATE
/ DELETE triggers record each touched (table, rowid) in a TEMP table. TEMP triggers and tables
live only on the episode's connection and in its temp schema: they are not part of the database
file, so they never enter the hash or the diff, and their records roll back with the writes
they describe.

The hash and diff then read only the touched rows: old rows from the package's initial
database, new rows from the episode's, both by rowid (see state.py for the multiset hash).

Tool code receives this connection, so the worker's SQLite authorizer asks `refuses` and denies
dropping or creating our triggers, dropping or altering the tracking table and writing it other
than from our own triggers. Tracking falls back to the full computation (state.state_hash,
state.state_diff) when it cannot be trusted:

- `PRAGMA schema_version` differs from the episode start (a tool created, altered or dropped a
  table, or ran VACUUM, which may renumber rowids);
- our triggers or the tracking table are missing or not as we created them;
- the connection's `total_changes` grew while nothing was recorded (the worker discounts the
  changes of calls it rolls back: their records rolled back with them).

Per table it falls back to reading that table in full when the row count that the touched rows
imply differs from `count(*)`: a REPLACE conflict deletes rows without firing DELETE triggers
(recursive_triggers is off), and this is how such a missed row shows. Tables without a usable
rowid (WITHOUT ROWID, or columns named rowid, _rowid_ and oid) are recorded as a whole and read
in full when touched; virtual and shadow tables take no triggers and are always read in full.

Standard library only: this module runs inside the sandbox worker.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

if __package__:  # imported as environments.runtime.change_tracking (tests, benchmarks)
    from . import state
else:  # inside the sandbox worker, next to state.py
    import state

TOUCHED = "aw_touched"
TRIGGER_PREFIX = "aw_track_"
_CHUNK = 500  # rowids per `IN (...)` query on the initial database

ROWS, WHOLE, ALWAYS = "rows", "whole", "always"  # how a table is tracked


@dataclass
class InitialTable:
    name: str
    meta: state.TableMeta
    mode: str
    rowid: str  # the name that reaches the rowid (when mode is ROWS)
    count: int
    total: int
    digest: bytes


class InitialState:
    """A package's initial state, summarised once per worker (at op_load): for each table its
    key metadata, row count, sum of row digests and digest."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.schema_version = conn.execute("PRAGMA schema_version").fetchone()[0]
        kinds = _table_kinds(conn)
        self.tables: dict[str, InitialTable] = {}
        for name in state._tables(conn):
            meta = state.table_meta(conn, name)
            count, total = state.table_sum(conn, name, meta.columns)
            kind, has_rowid = kinds.get(name, ("table", True))
            rowid = next((n for n in ("rowid", "_rowid_", "oid") if not _has(meta, n)), "")
            if kind != "table":
                mode = ALWAYS
            elif has_rowid and rowid:
                mode = ROWS
            else:
                mode = WHOLE
            digest = state.table_digest(name, meta.columns, count, total)
            self.tables[name] = InitialTable(name, meta, mode, rowid, count, total, digest)


class Tracker:
    """Records the rows an episode's tools touch; hashes and diffs from them.

    Create it on the episode's connection before the worker's authorizer is installed.
    """

    def __init__(self, initial: InitialState, db: sqlite3.Connection) -> None:
        self.initial = initial
        self.db = db
        db.execute(
            f"CREATE TEMP TABLE {TOUCHED} (tbl TEXT NOT NULL, rid INTEGER NOT NULL, "
            "PRIMARY KEY (tbl, rid)) WITHOUT ROWID"
        )
        for index, table in enumerate(initial.tables.values()):
            if table.mode == ALWAYS:
                continue
            name = _literal(table.name)
            old = f"old.{table.rowid}" if table.mode == ROWS else "0"
            new = f"new.{table.rowid}" if table.mode == ROWS else "0"
            for event, rids in (("INSERT", [new]), ("UPDATE", [old, new]), ("DELETE", [old])):
                # No INSERT OR IGNORE: an outer statement's OR clause (UPDATE OR FAIL, ...)
                # would override it and a duplicate record would fail the tool's statement.
                body = "".join(
                    f"INSERT INTO {TOUCHED} SELECT {name}, {rid} WHERE NOT EXISTS "
                    f"(SELECT 1 FROM {TOUCHED} WHERE tbl = {name} AND rid = {rid}); "
                    for rid in rids
                )
                db.execute(
                    f"CREATE TEMP TRIGGER {TRIGGER_PREFIX}{index}_{event.lower()} "
                    f"AFTER {event} ON main.{state._quote(table.name)} BEGIN {body}END"
                )
        db.commit()
        self.objects = self._temp_objects()
        self.schema_version = db.execute("PRAGMA schema_version").fetchone()[0]
        self.changes = db.total_changes

    # -- results -------------------------------------------------------------------------------

    def state_hash(self) -> str:
        """Same value as state.state_hash(db), from the touched rows only."""
        touched = self.touched()
        if touched is None:
            return state.state_hash(self.db)
        digests = []
        for table in self.initial.tables.values():
            if table.mode == ALWAYS or (table.mode == WHOLE and table.name in touched):
                digests.append(state.table_state_digest(self.db, table.name))
            elif table.name in touched:
                digests.append(self._table_hash(table, touched[table.name]))
            else:
                digests.append(table.digest)
        return state.database_digest(digests)

    def state_diff(self) -> dict[str, dict[str, Any]]:
        """Same value as state.state_diff(initial, db), from the touched rows only."""
        touched = self.touched()
        if touched is None:
            return state.state_diff(self.initial.conn, self.db)
        diff: dict[str, dict[str, Any]] = {}
        for table in sorted(self.initial.tables.values(), key=lambda t: t.name):
            if table.mode == ALWAYS or (table.mode == WHOLE and table.name in touched):
                changes = self._full_table_diff(table)
            elif table.name in touched:
                changes = self._table_diff(table, touched[table.name])
            else:
                continue
            if changes is not None:
                diff[table.name] = changes
        return diff

    def touched(self) -> dict[str, list[int]] | None:
        """{table: [rowid]} touched since the episode started, None when not to be trusted."""
        db = self.db
        if db.execute("PRAGMA schema_version").fetchone()[0] != self.schema_version:
            return None
        if self._temp_objects() != self.objects:
            return None
        touched: dict[str, list[int]] = {}
        for table, rid in _plain(db).execute(f"SELECT tbl, rid FROM temp.{TOUCHED}"):
            touched.setdefault(table, []).append(rid)
        if not touched and db.total_changes != self.changes:
            return None
        return touched

    def discount(self, changes_before: int) -> None:
        """A call was rolled back: the changes it made since `changes_before` (the connection's
        total_changes when it began) left no state and no records, so they do not count."""
        self.changes += self.db.total_changes - changes_before

    # -- per table -----------------------------------------------------------------------------

    def _rows(self, table: InitialTable, rowids: list[int]) -> tuple[dict, dict]:
        """({rowid: row} in the initial state, {rowid: row} now) for the touched rowids."""
        select = f"SELECT {table.rowid}, {state._column_list(table.meta.columns)} "
        select += f"FROM main.{state._quote(table.name)} WHERE {table.rowid} IN "
        before: dict[int, tuple] = {}
        initial = _plain(self.initial.conn)
        for start in range(0, len(rowids), _CHUNK):
            chunk = rowids[start : start + _CHUNK]
            sql = select + "(" + ", ".join("?" * len(chunk)) + ")"
            before.update((row[0], row[1:]) for row in initial.execute(sql, chunk))
        sql = select + f"(SELECT rid FROM temp.{TOUCHED} WHERE tbl = ?)"
        after = {row[0]: row[1:] for row in _plain(self.db).execute(sql, (table.name,))}
        return before, after

    def _table_hash(self, table: InitialTable, rowids: list[int]) -> bytes:
        before, after = self._rows(table, rowids)
        count = table.count - len(before) + len(after)
        actual = self.db.execute(f"SELECT count(*) FROM main.{state._quote(table.name)}")
        if actual.fetchone()[0] != count:  # a row went without a trigger (REPLACE)
            return state.table_state_digest(self.db, table.name)
        total = table.total
        total -= sum(state.row_digest(row) for row in before.values())
        total += sum(state.row_digest(row) for row in after.values())
        return state.table_digest(table.name, table.meta.columns, count, total)

    def _table_diff(self, table: InitialTable, rowids: list[int]) -> dict[str, Any] | None:
        before, after = self._rows(table, rowids)
        count = self.db.execute(f"SELECT count(*) FROM main.{state._quote(table.name)}")
        if count.fetchone()[0] != table.count - len(before) + len(after):
            return self._full_table_diff(table)
        columns, key = table.meta.columns, table.meta.key
        positions = [columns.index(c) for c in key]
        keyed = []
        for rows in (before, after):
            if not key:
                keyed.append(
                    {(rid,): dict(zip(columns, row, strict=True)) for rid, row in rows.items()}
                )
                continue
            keys = {rid: tuple(row[i] for i in positions) for rid, row in rows.items()}
            if any(None in k for k in keys.values()):  # NULL keys need not be unique
                return self._full_table_diff(table)
            keyed.append(
                {keys[rid]: dict(zip(columns, row, strict=True)) for rid, row in rows.items()}
            )
        return state.table_changes(keyed[0], keyed[1], table.meta)

    def _full_table_diff(self, table: InitialTable) -> dict[str, Any] | None:
        before = state._keyed_rows(self.initial.conn, table.name)
        after = state._keyed_rows(self.db, table.name)
        return state.table_changes(before, after, table.meta)

    def _temp_objects(self) -> list[tuple]:
        return (
            _plain(self.db)
            .execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_temp_master "
                "WHERE name = ? OR (type = 'trigger' AND substr(name, 1, ?) = ?) ORDER BY name",
                (TOUCHED, len(TRIGGER_PREFIX), TRIGGER_PREFIX),
            )
            .fetchall()
        )


def refuses(action: int, arg1: str | None, arg2: str | None, trigger: str | None) -> bool:
    """For the worker's SQLite authorizer: whether a statement would tamper with tracking.

    Our triggers may only be created before the authorizer is installed, and never dropped; the
    tracking table may only be written from inside our triggers, and never dropped or altered.
    """
    first, second = (arg1 or "").lower(), (arg2 or "").lower()
    if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE):
        return first == TOUCHED and not (trigger or "").lower().startswith(TRIGGER_PREFIX)
    if action in (
        sqlite3.SQLITE_CREATE_TRIGGER,
        sqlite3.SQLITE_CREATE_TEMP_TRIGGER,
        sqlite3.SQLITE_DROP_TRIGGER,
        sqlite3.SQLITE_DROP_TEMP_TRIGGER,
    ):
        return first.startswith(TRIGGER_PREFIX)
    if action in (sqlite3.SQLITE_DROP_TABLE, sqlite3.SQLITE_DROP_TEMP_TABLE):
        return first == TOUCHED
    if action == sqlite3.SQLITE_ALTER_TABLE:
        return second == TOUCHED
    return False


def _table_kinds(conn: sqlite3.Connection) -> dict[str, tuple[str, bool]]:
    """{table: (kind, has rowid)}; kind is "table", "virtual" or "shadow"."""
    try:
        rows = conn.execute("PRAGMA main.table_list").fetchall()
    except sqlite3.OperationalError:  # SQLite before 3.37
        rows = None
    if rows is not None:
        return {row[1]: (row[2], not row[4]) for row in rows if row[0] == "main"}
    kinds = {}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
        text = " ".join((sql or "").upper().split())
        virtual = text.startswith("CREATE VIRTUAL TABLE")
        kinds[name] = ("virtual" if virtual else "table", "WITHOUT ROWID" not in text)
    return kinds


def _has(meta: state.TableMeta, name: str) -> bool:
    return any(column.lower() == name for column in meta.columns)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _plain(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor that returns plain tuples, whatever the connection's row_factory."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor
