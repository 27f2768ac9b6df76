"""Complexify a mined database in rounds: more rows, edge cases, cross-table links.

New rows are derived from real rows only (a real row's values recombined with another real row's
values, numbers perturbed a little), and every round records what it added in the provenance
table as kind "derived", so a reader can always tell real rows from derived ones. Keys stay
unique, links stay valid: each round ends with `PRAGMA foreign_key_check` and is rolled back
(nothing written) if it fails. The database is edited in a temp copy and renamed on success.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .schema import Table, read_schema_conn
from .sources.base import PROVENANCE_TABLE


class ComplexifyError(RuntimeError):
    """A round would have broken the database's keys or links; nothing was written."""


@dataclass
class RoundRecord:
    round: int
    added_rows: dict[str, int] = field(default_factory=dict)
    edge_cases: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def _new_key(conn, table: Table, base) -> object:
    kind = table.column(table.primary_key).kind
    if kind == "integer":
        return conn.execute(
            f'SELECT COALESCE(MAX("{table.primary_key}"), 0) + 1 FROM "{table.name}"'
        ).fetchone()[0]
    for n in range(2, 10_000):
        candidate = f"{base}-{n}" if kind == "text" else None
        if candidate is None:
            return None
        sql = f'SELECT 1 FROM "{table.name}" WHERE "{table.primary_key}" = ?'
        if conn.execute(sql, (candidate,)).fetchone() is None:
            return candidate
    return None


def _perturb(value, kind: str, rng: random.Random):
    if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
        return value + rng.choice([-1, 1]) * max(1, abs(value) // 20)
    if kind == "real" and isinstance(value, float):
        return round(value * rng.uniform(0.95, 1.05), 4)
    return value


def _derive_rows(conn, table: Table, count: int, rng: random.Random, record: RoundRecord) -> None:
    """Recombine two real rows: key new, each column from one of the two, numbers nudged."""
    rows = [
        dict(r) for r in conn.execute(f'SELECT * FROM "{table.name}" ORDER BY RANDOM() LIMIT 50')
    ]
    if len(rows) < 2 or not table.primary_key:
        return
    added = 0
    for _ in range(count):
        a, b = rng.sample(rows, 2)
        new = {}
        for column in table.columns:
            source = a if rng.random() < 0.5 else b
            new[column.name] = _perturb(source[column.name], column.kind, rng)
        for column in table.unique - {table.primary_key}:
            if isinstance(new.get(column), str):
                new[column] = f"{new[column]} ({uuid.uuid4().hex[:4]})"
            else:
                new[column] = None
        for column in table.foreign_keys:
            new[column] = a[column]  # keep a real, existing link
        key = _new_key(conn, table, a[table.primary_key])
        if key is None:
            return
        new[table.primary_key] = key
        names = ", ".join(f'"{c}"' for c in new)
        marks = ", ".join("?" for _ in new)
        conn.execute(f'INSERT INTO "{table.name}" ({names}) VALUES ({marks})', list(new.values()))
        added += 1
    if added:
        record.added_rows[table.name] = record.added_rows.get(table.name, 0) + added


def _edge_cases(conn, table: Table, rng: random.Random, record: RoundRecord) -> None:
    if not table.primary_key:
        return
    nullable = [
        c.name for c in table.columns if not c.not_null and c.name not in table.foreign_keys
    ]
    row = conn.execute(f'SELECT * FROM "{table.name}" ORDER BY RANDOM() LIMIT 1').fetchone()
    if row is None:
        return
    row = dict(row)
    if nullable:
        column = rng.choice(nullable)
        key = _new_key(conn, table, row[table.primary_key])
        if key is not None:
            edge = dict(row, **{table.primary_key: key, column: None})
            _insert(conn, table, edge)
            record.edge_cases.append(f"{table.name}.{column} null in new row {key!r}")
    text = next(
        (
            c.name
            for c in table.columns
            if c.kind == "text"
            and c.name not in table.unique
            and c.name != table.primary_key
            and c.name not in table.foreign_keys
        ),
        None,
    )
    if text and isinstance(row.get(text), str):
        key = _new_key(conn, table, row[table.primary_key])
        if key is not None:
            twin = dict(row, **{table.primary_key: key, text: row[text].upper() + " "})
            _insert(conn, table, twin)
            record.edge_cases.append(f"{table.name}.{text} near-duplicate of {row[text]!r}")
    date = next(
        (c.name for c in table.columns if c.kind == "date" and c.name not in table.unique), None
    )
    if date:
        key = _new_key(conn, table, row[table.primary_key])
        if key is not None:
            _insert(conn, table, dict(row, **{table.primary_key: key, date: "2024-02-29"}))
            record.edge_cases.append(f"{table.name}.{date} boundary date 2024-02-29")


def _insert(conn, table: Table, row: dict) -> None:
    for column in table.unique - {table.primary_key}:
        if isinstance(row.get(column), str):
            row[column] = f"{row[column]} ({uuid.uuid4().hex[:4]})"
    names = ", ".join(f'"{c}"' for c in row)
    conn.execute(
        f'INSERT INTO "{table.name}" ({names}) VALUES ({", ".join("?" for _ in row)})',
        list(row.values()),
    )


def _cross_links(conn, tables: dict[str, Table], rng: random.Random, record: RoundRecord) -> None:
    """Re-point a few child rows at other real parents so more parents have children."""
    for table in tables.values():
        for column, (ref_table, ref_column) in table.foreign_keys.items():
            if not table.primary_key:
                continue
            parents = [
                r[0]
                for r in conn.execute(
                    f'SELECT "{ref_column}" FROM "{ref_table}" WHERE "{ref_column}" NOT IN '
                    f'(SELECT "{column}" FROM "{table.name}" WHERE "{column}" IS NOT NULL) LIMIT 20'
                )
            ]
            children = [
                r[0]
                for r in conn.execute(
                    f'SELECT "{table.primary_key}" FROM "{table.name}" ORDER BY RANDOM() LIMIT 2'
                )
            ]
            for parent, child in zip(parents, children, strict=False):
                conn.execute(
                    f'UPDATE "{table.name}" SET "{column}" = ? WHERE "{table.primary_key}" = ?',
                    (parent, child),
                )
                record.links.append(f"{table.name}[{child!r}].{column} -> {ref_table}[{parent!r}]")


def complexify(
    db_path: Path | str,
    rounds: int = 1,
    rows_per_table: int = 5,
    seed: int = 0,
    only_tables: set[str] | None = None,
) -> list[RoundRecord]:
    """Run `rounds` rounds on the database in place (atomically); return what each changed.

    ``only_tables``: only these get derived rows and edge cases (an expansion targeting the tables
    of the tools an agent misused); None: every table."""
    db_path = Path(db_path)
    temp = db_path.with_name(f".{db_path.name}.{uuid.uuid4().hex}.tmp")
    shutil.copyfile(db_path, temp)
    rng = random.Random(seed)
    records = []
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        for number in range(1, rounds + 1):
            conn.execute("BEGIN")
            tables = read_schema_conn(conn)
            record = RoundRecord(number)
            if only_tables is not None and not only_tables & set(tables):
                raise ComplexifyError(f"no table of {sorted(only_tables)} in the database")
            for table in tables.values():
                if only_tables is not None and table.name not in only_tables:
                    continue
                _derive_rows(conn, table, rows_per_table, rng, record)
                _edge_cases(conn, table, rng, record)
            _cross_links(conn, tables, rng, record)
            problems = conn.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                conn.execute("ROLLBACK")
                raise ComplexifyError(
                    f"round {number} broke links: {[tuple(p) for p in problems[:3]]}"
                )
            detail = (
                f"complexify round {number}: derived rows {record.added_rows}, "
                f"{len(record.edge_cases)} edge cases, {len(record.links)} re-links"
            )
            if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = ?", (PROVENANCE_TABLE,)
            ).fetchone():
                for table in set(record.added_rows) | {e.split(".")[0] for e in record.edge_cases}:
                    conn.execute(
                        f"INSERT INTO {PROVENANCE_TABLE} (tbl, source, kind, detail) VALUES (?, ?, ?, ?)",
                        (table, f"complexify(seed={seed})", "derived", detail),
                    )
            conn.execute("COMMIT")
            records.append(record)
        conn.close()
        os.replace(temp, db_path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return records
