"""What a mined SQLite database looks like, read back from SQLite itself.

The tool generator, complexifier and task code all work from this description, so a database
that came from a SQL dump is handled exactly like one built from CSV files.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .naming import plural, singular
from .sources.base import PROVENANCE_TABLE

LOW_CARDINALITY = 40
NEAR_UNIQUE = 0.8  # a column with more distinct values than this share of rows is near-unique


def _is_identifier(name: str) -> bool:
    """customer_id, CustomerId, id: a column that names a row rather than measuring it."""
    lower = name.lower()
    return lower == "id" or lower.endswith("_id") or (name.endswith("Id") and len(name) > 2)


@dataclass
class Column:
    name: str
    kind: str  # integer | real | boolean | date | datetime | text
    not_null: bool
    default: object = None

    @property
    def numeric(self) -> bool:
        return self.kind in ("integer", "real")

    @property
    def ordered(self) -> bool:
        return self.kind in ("integer", "real", "date", "datetime")


@dataclass
class Table:
    name: str
    columns: list[Column]
    primary_key: str  # "" for composite keys
    integer_key: bool
    foreign_keys: dict[str, tuple[str, str]] = field(default_factory=dict)
    children: list[tuple[str, str]] = field(default_factory=list)  # (child table, child column)
    unique: set[str] = field(default_factory=set)
    row_count: int = 0
    distinct: dict[str, int] = field(default_factory=dict)
    key_columns: list[str] = field(default_factory=list)  # the primary key's columns, in order

    @property
    def composite_key(self) -> bool:
        """Keyed by several columns together (a link table, parent key + date)."""
        return len(self.key_columns) > 1

    @property
    def entity(self) -> str:
        """English singular of the table name (naming.singular): orders -> order."""
        return singular(self.name)

    @property
    def entities(self) -> str:
        """English plural (naming.plural): order -> orders, person -> people, never orderses."""
        return plural(self.entity)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def group_columns(self) -> list[str]:
        """Columns with few distinct values: good GROUP BY candidates. A unique or near-unique
        column (an email, a phone: as many values as rows, or nearly) makes groups of one."""
        return [
            c.name
            for c in self.columns
            if c.name != self.primary_key
            and c.name not in self.unique
            and c.kind in ("text", "integer", "boolean")
            and 1 < self.distinct.get(c.name, 0) <= LOW_CARDINALITY
            and self.distinct.get(c.name, 0) <= NEAR_UNIQUE * self.row_count
        ]

    def measure_columns(self) -> list[str]:
        """Numeric columns that measure something (price, quantity), worth a sum or an average:
        not a key, a reference to another table, or an identifier."""
        return [
            c.name
            for c in self.columns
            if c.numeric
            and c.name not in self.key_columns
            and c.name != self.primary_key
            and c.name not in self.foreign_keys
            and not _is_identifier(c.name)
        ]


def column_kind(declared: str) -> str:
    text = (declared or "").upper()
    if "BOOL" in text:
        return "boolean"
    if "DATETIME" in text or "TIMESTAMP" in text:
        return "datetime"
    if "DATE" in text:
        return "date"
    if "INT" in text:
        return "integer"
    if any(t in text for t in ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL")):
        return "real"
    return "text"


def read_schema(db_path: Path | str) -> dict[str, Table]:
    """Tables of a database (the provenance table excluded), with keys, links and statistics."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return read_schema_conn(conn)
    finally:
        conn.close()


def read_schema_conn(conn: sqlite3.Connection) -> dict[str, Table]:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
        if r[0] != PROVENANCE_TABLE
    ]
    tables: dict[str, Table] = {}
    for name in names:
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        pk_cols = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
        columns = [
            Column(r[1], column_kind(r[2]), bool(r[3]) or r[1] in pk_cols, r[4]) for r in info
        ]
        pk = pk_cols[0] if len(pk_cols) == 1 else ""
        integer_key = (
            bool(pk) and (next(r[2] for r in info if r[1] == pk) or "").upper() == "INTEGER"
        )
        table = Table(name, columns, pk, integer_key, key_columns=pk_cols)
        for fk in conn.execute(f'PRAGMA foreign_key_list("{name}")').fetchall():
            table.foreign_keys[fk[3]] = (fk[2], fk[4] or "")
        for index in conn.execute(f'PRAGMA index_list("{name}")').fetchall():
            if index[2]:
                cols = [r[2] for r in conn.execute(f'PRAGMA index_info("{index[1]}")')]
                if len(cols) == 1:
                    table.unique.add(cols[0])
        if pk:
            table.unique.add(pk)
        table.row_count = conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
        for column in columns:
            table.distinct[column.name] = conn.execute(
                f'SELECT COUNT(DISTINCT "{column.name}") FROM "{name}"'
            ).fetchone()[0]
        tables[name] = table
    for table in tables.values():
        for column, (ref_table, ref_column) in list(table.foreign_keys.items()):
            if ref_table in tables:
                if not ref_column:
                    table.foreign_keys[column] = (ref_table, tables[ref_table].primary_key)
                tables[ref_table].children.append((table.name, column))
    return tables
