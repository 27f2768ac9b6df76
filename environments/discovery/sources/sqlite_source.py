"""A SQLite database file -> its tables copied (schema, keys and rows) into the mining database.

The file is opened read-only with `query_only`, its tables' CREATE statements are re-run in the
mining database and its rows copied; views, triggers and internal tables are left out, and so is a
previous mining run's provenance table.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from .base import PROVENANCE_TABLE, DatabaseBuilder, SourceError, TableSpec
from .sql_source import register_existing_table

_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\b", re.IGNORECASE)


def sqlite_tables(path: Path) -> list[tuple[str, str]]:
    """(name, CREATE statement) of the database's user tables; SourceError if unreadable."""
    path = Path(path)
    try:
        conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SourceError(f"{path.name}: cannot open as a SQLite database ({exc})") from exc
    try:
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA trusted_schema = OFF")
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
        ).fetchall()
    except sqlite3.Error as exc:
        raise SourceError(f"{path.name}: not a readable SQLite database ({exc})") from exc
    finally:
        conn.close()
    return [
        (name, sql)
        for name, sql in rows
        if sql and not name.startswith("sqlite_") and name != PROVENANCE_TABLE
    ]


def load_sqlite(builder: DatabaseBuilder, path: Path, source: str | None = None) -> list[TableSpec]:
    path = Path(path)
    source = source or str(path)
    label = source if ":" in source else path.name
    tables = sqlite_tables(path)
    if not tables:
        raise SourceError(f"{label}: the SQLite database has no tables")
    src = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    src.execute("PRAGMA query_only = 1")
    src.execute("PRAGMA trusted_schema = OFF")
    specs = []
    try:
        for name, create in tables:
            if name in builder.tables:
                raise SourceError(f"{label}: table {name!r} is defined twice (from {source})")
            if not _CREATE_TABLE.match(create) or re.search(r"\bVIRTUAL\b", create[:40], re.I):
                raise SourceError(f"{label}: table {name!r} is not a plain table")
            try:
                builder.conn.execute(create)
                cols = [r[1] for r in src.execute(f'PRAGMA table_info("{name}")')]
                quoted = ", ".join(f'"{c}"' for c in cols)
                marks = ", ".join("?" for _ in cols)
                cursor = src.execute(f'SELECT {quoted} FROM "{name}"')
                while batch := cursor.fetchmany(5000):
                    builder.conn.executemany(
                        f'INSERT INTO "{name}" ({quoted}) VALUES ({marks})', batch
                    )
            except sqlite3.Error as exc:
                raise SourceError(f"{label}: table {name!r}: {exc}") from exc
            specs.append(register_existing_table(builder, name, source, "sqlite"))
    finally:
        src.close()
    return specs
