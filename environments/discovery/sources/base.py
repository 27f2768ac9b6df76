"""One mined SQLite database, built in a temp file and renamed into place only on success.

Every source adapter (CSV, JSON, SQL, HTML, Python data packages) feeds rows into a
`DatabaseBuilder`. It infers column types and primary keys per table, infers foreign keys across
tables (by column name and value containment), records provenance for every table, checks
`PRAGMA foreign_key_check`, and only then renames the file into place: a malformed input leaves
nothing half-written.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..naming import split_camel

PROVENANCE_TABLE = "aw_provenance"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INT = re.compile(r"^[+-]?(0|[1-9][0-9]*)$")
_REAL = re.compile(r"^[+-]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][+-]?[0-9]+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_KEY_NAMES = ("id", "code", "key", "symbol", "iso", "slug", "uuid")
_REQUIRED_NAMES = ("name", "title", "label", "code", "symbol")


class SourceError(ValueError):
    """A source could not be ingested; the message says which input and why."""


@dataclass
class Provenance:
    table: str
    source: str
    kind: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class TableSpec:
    """What the builder inferred about one table before it is written."""

    name: str
    columns: list[str]
    types: dict[str, str]
    primary_key: str
    not_null: set[str] = field(default_factory=set)
    foreign_keys: dict[str, tuple[str, str]] = field(default_factory=dict)
    declared: bool = False  # created by SQL: its declared keys are kept as they are
    link_by_value: bool = False  # JSON: id-like TEXT columns link to any key holding all values
    key_columns: list[str] = field(default_factory=list)  # a composite primary key, in order
    # JSON list children: column -> the field whose list it holds ("value" -> "reservations"),
    # so a list of ids links by the field's name and by value like any id column.
    list_of: dict[str, str] = field(default_factory=dict)


def sql_name(raw: str) -> str:
    """A safe SQL identifier from any header or key ("Unit Price ($)" -> "unit_price").

    Words written together in camel case are split ("InvoiceLineId" -> "invoice_line_id",
    "HTTPStatus" -> "http_status"), so the tools and tasks read them as words and key names
    match their tables ("CustomerId" -> customer)."""
    text = split_camel(str(raw).strip(), "_")
    name = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if not name:
        name = "column"
    if name[0].isdigit():
        name = f"c_{name}"
    return name


def singular(word: str) -> str:
    if word in ("species", "series", "news", "data") or word.endswith(("us", "is", "ss")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def infer_type(values: Iterable[Any], strings_hold_numbers: bool = True) -> str:
    """SQLite declared type for a column: INTEGER, REAL, BOOLEAN, DATE, DATETIME or TEXT.

    Text files (CSV, HTML) carry numbers as strings, so digits read as numbers and empty cells
    as missing; JSON has typed numbers, so its strings stay text (``strings_hold_numbers``
    False keeps ids such as "0095721084" TEXT).
    """
    seen: set[str] = set()
    for value in values:
        if value is None or (strings_hold_numbers and value == ""):
            continue
        if isinstance(value, bool):
            seen.add("BOOLEAN")
        elif isinstance(value, int):
            seen.add("INTEGER")
        elif isinstance(value, float):
            seen.add("REAL")
        elif isinstance(value, str):
            text = value.strip() if strings_hold_numbers else value
            if strings_hold_numbers and _INT.match(text) and len(text) < 18:
                seen.add("INTEGER")
            elif (
                strings_hold_numbers and _REAL.match(text) and ("." in text or "e" in text.lower())
            ):
                seen.add("REAL")
            elif _DATE.match(text):
                seen.add("DATE")
            elif _DATETIME.match(text):
                seen.add("DATETIME")
            else:
                return "TEXT"
        else:
            return "TEXT"
    return merged_type(seen)


def merged_type(seen: set[str]) -> str:
    """One column type for the kinds of value seen: numbers widen to REAL, dates to
    DATETIME, anything else mixed is TEXT."""
    if not seen:
        return "TEXT"
    if len(seen) == 1:
        return next(iter(seen))
    if seen <= {"INTEGER", "REAL"}:
        return "REAL"
    if seen <= {"DATE", "DATETIME"}:
        return "DATETIME"
    return "TEXT"


def convert(value: Any, declared: str) -> Any:
    """A value in the Python type matching its column's declared type (None for blanks)."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return None
    if declared == "INTEGER":
        return int(value) if not isinstance(value, str) else int(value.strip())
    if declared == "REAL":
        return float(value)
    if declared == "BOOLEAN":
        if isinstance(value, str):
            return 1 if value.strip().lower() in ("1", "true", "yes", "y", "t") else 0
        return 1 if value else 0
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, str):
        return value.strip()
    return str(value)


def _pick_primary_key(table: str, columns: list[str], rows: list[dict], types: dict) -> str | None:
    stem = singular(table)
    preferred = ["id", f"{table}_id", f"{stem}_id", f"{stem}_code", "code", f"{stem}_key"]
    ordered = [c for c in preferred if c in columns]
    ordered += [c for c in columns if c not in ordered and c.endswith(_KEY_NAMES)]
    ordered += [c for c in columns if c not in ordered and _code_like(rows, c)]
    ordered += [c for c in columns if c not in ordered and c in ("name", "symbol", "title")]
    for column in ordered:
        if types.get(column) in ("REAL", "BOOLEAN"):
            continue
        values = [row.get(column) for row in rows]
        if all(v is not None for v in values) and len(set(values)) == len(values):
            return column
    return None


def _code_like(rows: list[dict], column: str) -> bool:
    """Short identifiers without spaces (ISO codes, tickers): natural keys."""
    values = [row.get(column) for row in rows]
    return all(isinstance(v, str) and 0 < len(v) <= 12 and " " not in v for v in values)


class DatabaseBuilder:
    """Collects tables into a temp SQLite file; `finish()` renames it to `target` atomically."""

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.temp_path = self.target.with_name(f".{self.target.name}.{uuid.uuid4().hex}.tmp")
        self.conn = sqlite3.connect(self.temp_path)
        self.conn.execute("PRAGMA foreign_keys = OFF")
        self.tables: dict[str, TableSpec] = {}
        self.provenance: list[Provenance] = []
        self._finished = False

    def __enter__(self) -> DatabaseBuilder:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or not self._finished:
            self.abort()

    def abort(self) -> None:
        """Drop the temp file: nothing half-written is left behind."""
        try:
            self.conn.close()
        except sqlite3.Error:
            pass
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(f"{self.temp_path}{suffix}").unlink(missing_ok=True)

    def add_provenance(self, table: str, source: str, kind: str, detail: str) -> None:
        self.provenance.append(Provenance(table, source, kind, detail))

    def add_table(
        self,
        name: str,
        rows: list[dict[str, Any]],
        *,
        source: str,
        kind: str,
        detail: str = "",
        primary_key: str | None = None,
        types: dict[str, str] | None = None,
        avoid_key: tuple[str, ...] = (),
        key_columns: list[str] | None = None,
    ) -> TableSpec:
        """Write one table of real rows (dicts) with inferred types and primary key
        (``key_columns``: a composite key instead, whose value tuples must be unique)."""
        table = sql_name(name)
        if table in self.tables:
            raise SourceError(f"table {table!r} is defined twice (from {source})")
        if not rows:
            raise SourceError(f"{source}: table {table!r} has no rows")
        columns: list[str] = []
        clean_rows: list[dict[str, Any]] = []
        for row in rows:
            clean: dict[str, Any] = {}
            for key, value in row.items():
                column = sql_name(key)
                if column not in columns:
                    columns.append(column)
                clean[column] = value
            clean_rows.append(clean)
        inferred = {c: infer_type(r.get(c) for r in clean_rows) for c in columns}
        inferred.update({sql_name(k): v for k, v in (types or {}).items()})
        for row in clean_rows:
            for column in columns:
                try:
                    row[column] = convert(row.get(column), inferred[column])
                except (TypeError, ValueError) as exc:
                    raise SourceError(
                        f"{source}: {table}.{column}: bad value {row.get(column)!r}"
                    ) from exc
        composite = [sql_name(c) for c in key_columns or []]
        if len(composite) > 1:
            spec = self._composite(table, columns, inferred, composite, clean_rows, source)
            self._insert(spec, clean_rows)
            self.add_provenance(table, source, kind, detail or f"{len(clean_rows)} rows")
            return spec
        pk = sql_name(primary_key) if primary_key else None
        if pk is None:
            candidates = [c for c in columns if c not in avoid_key]
            pk = _pick_primary_key(table, candidates, clean_rows, inferred)
        elif any(r.get(pk) is None for r in clean_rows) or len(
            {r.get(pk) for r in clean_rows}
        ) != len(clean_rows):
            raise SourceError(f"{source}: primary key {table}.{pk} is not unique and non-null")
        if pk is None:
            pk = "id" if "id" not in columns else f"{table}_rowid"
            columns.insert(0, pk)
            inferred[pk] = "INTEGER"
            for index, row in enumerate(clean_rows, start=1):
                row[pk] = index
            detail = f"{detail}; surrogate key {pk}".strip("; ")
        not_null = {pk}
        for column in columns:
            if column in _REQUIRED_NAMES and all(r.get(column) is not None for r in clean_rows):
                not_null.add(column)
        spec = TableSpec(table, columns, inferred, pk, not_null)
        self._insert(spec, clean_rows)
        self.add_provenance(table, source, kind, detail or f"{len(clean_rows)} rows")
        return spec

    def _composite(
        self,
        table: str,
        columns: list[str],
        types: dict[str, str],
        key: list[str],
        rows: list[dict[str, Any]],
        source: str,
    ) -> TableSpec:
        """A table keyed by several columns together (parent key + date, two links)."""
        unknown = [c for c in key if c not in columns]
        if unknown:
            raise SourceError(f"{source}: key columns {unknown} are not columns of {table}")
        tuples = [tuple(r.get(c) for c in key) for r in rows]
        if any(None in t for t in tuples) or len(set(tuples)) != len(tuples):
            raise SourceError(
                f"{source}: primary key {table}({', '.join(key)}) is not unique and non-null"
            )
        return TableSpec(table, columns, types, "", set(key), key_columns=list(key))

    def _insert(self, spec: TableSpec, rows: list[dict[str, Any]]) -> None:
        self._create(spec)
        placeholders = ", ".join("?" for _ in spec.columns)
        self.conn.executemany(
            f'INSERT INTO "{spec.name}" ({", ".join(_quoted(c) for c in spec.columns)}) '
            f"VALUES ({placeholders})",
            [tuple(r.get(c) for c in spec.columns) for r in rows],
        )
        self.tables[spec.name] = spec

    def _create(self, spec: TableSpec, name: str | None = None) -> None:
        parts = []
        for column in spec.columns:
            text = f'"{column}" {spec.types[column]}'
            if column == spec.primary_key:
                text += " PRIMARY KEY"
            if column in spec.not_null:
                text += " NOT NULL"
            parts.append(text)
        if len(spec.key_columns) > 1:
            parts.append(f"PRIMARY KEY ({', '.join(_quoted(c) for c in spec.key_columns)})")
        for column, (ref_table, ref_column) in spec.foreign_keys.items():
            parts.append(f'FOREIGN KEY ("{column}") REFERENCES "{ref_table}" ("{ref_column}")')
        self.conn.execute(f'CREATE TABLE "{name or spec.name}" ({", ".join(parts)})')

    def declare_foreign_key(self, table: str, column: str, ref_table: str, ref_column: str) -> None:
        self.tables[table].foreign_keys[column] = (ref_table, ref_column)

    def infer_foreign_keys(self) -> None:
        """Link columns to other tables' keys when the name fits and every value is contained."""
        pk_values: dict[str, set] = {}
        for spec in self.tables.values():
            if not spec.primary_key:
                continue
            rows = self.conn.execute(f'SELECT "{spec.primary_key}" FROM "{spec.name}"').fetchall()
            pk_values[spec.name] = {r[0] for r in rows}
        for spec in self.tables.values():
            if spec.declared:
                continue
            for column in spec.columns:
                if column == spec.primary_key or column in spec.foreign_keys:
                    continue
                for other in self.tables.values():
                    if other.name == spec.name or not other.primary_key:
                        continue
                    if not _name_suggests_reference(column, other):
                        continue
                    if spec.types[column] != other.types[other.primary_key]:
                        continue
                    rows = self.conn.execute(
                        f'SELECT DISTINCT "{column}" FROM "{spec.name}" WHERE "{column}" IS NOT NULL'
                    ).fetchall()
                    values = {r[0] for r in rows}
                    if values and values <= pk_values[other.name]:
                        spec.foreign_keys[column] = (other.name, other.primary_key)
                        break
                if column in spec.foreign_keys:
                    continue
                if column in spec.list_of:
                    target = self._list_target(spec, column, pk_values)
                    if target is not None:
                        spec.foreign_keys[column] = target
                    else:
                        self._note_unlinked_list(spec, column, pk_values)
                    continue
                if not spec.link_by_value:
                    continue
                if spec.types[column] != "TEXT":
                    continue
                rows = self.conn.execute(
                    f'SELECT DISTINCT "{column}" FROM "{spec.name}" WHERE "{column}" IS NOT NULL'
                ).fetchall()
                values = {r[0] for r in rows}
                if not values or not all(_id_like_value(v) for v in values):
                    continue
                for other in self.tables.values():
                    if other.name == spec.name or not other.primary_key:
                        continue
                    if other.types.get(other.primary_key) != "TEXT":
                        continue
                    if values <= pk_values[other.name]:
                        spec.foreign_keys[column] = (other.name, other.primary_key)
                        break

    def _list_target(
        self, spec: TableSpec, column: str, pk_values: dict[str, set]
    ) -> tuple[str, str] | None:
        """The table a list of ids points at: every value is one of its keys, and the list's
        field names it (`reservations` -> reservations) or, for text, the values are tokens
        (no spaces). A list of plain numbers links only by name: small numbers match any key."""
        rows = self.conn.execute(
            f'SELECT DISTINCT "{column}" FROM "{spec.name}" WHERE "{column}" IS NOT NULL'
        ).fetchall()
        values = {r[0] for r in rows}
        if not values:
            return None
        field_name = sql_name(spec.list_of[column])
        named, unnamed = [], []
        for other in self.tables.values():
            if other.name == spec.name or not other.primary_key:
                continue
            if spec.types[column] != other.types.get(other.primary_key):
                continue
            if not values <= pk_values[other.name]:
                continue
            suggested = _name_suggests_reference(field_name, other) or _name_suggests_reference(
                singular(field_name), other
            )
            (named if suggested else unnamed).append(other)
        if named:
            return named[0].name, named[0].primary_key
        tokens = all(
            isinstance(v, str) and 0 < len(v) <= 64 and not any(ch.isspace() for ch in v)
            for v in values
        )
        if unnamed and tokens:
            return unnamed[0].name, unnamed[0].primary_key
        return None

    def _note_unlinked_list(self, spec: TableSpec, column: str, pk_values: dict) -> None:
        """Say in the provenance why a list stayed plain values: the table its field names (or
        whose keys hold most of its values) misses some of them, or no table's key holds any."""
        rows = self.conn.execute(
            f'SELECT DISTINCT "{column}" FROM "{spec.name}" WHERE "{column}" IS NOT NULL'
        ).fetchall()
        values = {r[0] for r in rows}
        if not values:
            return
        field_name = sql_name(spec.list_of[column])
        best: tuple[int, int, str] | None = None
        for other in self.tables.values():
            if other.name == spec.name or not other.primary_key:
                continue
            named = _name_suggests_reference(field_name, other) or _name_suggests_reference(
                singular(field_name), other
            )
            hits = len(values & pk_values.get(other.name, set()))
            if (named or hits) and (best is None or (named, hits) > best[:2]):
                best = (int(named), hits, other.name)
        where = f"{spec.name}.{column}"
        if best is None:
            why = f"no table's key holds its {len(values)} distinct values"
        elif best[1] == len(values):
            why = f"its values are {best[2]} keys, but its field's name does not name {best[2]}"
        else:
            missing = len(values) - best[1]
            why = f"{missing} of {len(values)} values name no {best[2]} row"
        self._note(spec.name, f"{where}: {why}, so the list is not linked")

    def _note(self, table: str, detail: str) -> None:
        """A provenance note on a table, under the source and kind that made it."""
        first = next((p for p in self.provenance if p.table == table), None)
        source, kind = (first.source, first.kind) if first else (table, "note")
        self.add_provenance(table, source, kind, detail)

    def link_lists(self) -> None:
        """A list of another table's keys under a parent becomes a link table: (parent key,
        target key) keyed by both (by parent key and position when a parent repeats a value),
        so the link tools (add_/remove_/list_ either side) apply."""
        for spec in list(self.tables.values()):
            for column in [c for c in spec.list_of if c in spec.foreign_keys]:
                parents = [c for c in spec.foreign_keys if c != column]
                if len(parents) == 1 and "position" in spec.columns:
                    self._as_link_table(spec, column, parents[0])

    def _as_link_table(self, spec: TableSpec, column: str, parent: str) -> None:
        ref_table, ref_column = spec.foreign_keys[column]
        named = ref_column != "id" and ref_column.endswith(("_id", "_code", "_key"))
        target = ref_column if named else f"{singular(ref_table)}_{ref_column}"
        if target in (parent, "position"):
            target = f"{singular(sql_name(spec.list_of[column]))}_{target}"
        rows = self.conn.execute(
            f'SELECT "{parent}", "position", "{column}" FROM "{spec.name}" '
            f'WHERE "{column}" IS NOT NULL ORDER BY "{spec.primary_key or parent}"'
        ).fetchall()
        unique = len({(p, v) for p, _, v in rows}) == len(rows)
        columns = [parent, target] if unique else [parent, "position", target]
        key = [parent, target] if unique else [parent, "position"]
        types = {parent: spec.types[parent], "position": "INTEGER", target: spec.types[column]}
        spec.columns, spec.primary_key, spec.key_columns = columns, "", key
        spec.types = {c: types[c] for c in columns}
        spec.not_null = set(columns)
        spec.foreign_keys = {parent: spec.foreign_keys[parent], target: (ref_table, ref_column)}
        spec.list_of = {}
        self.conn.execute(f'DROP TABLE "{spec.name}"')
        self._insert(
            spec,
            [dict(zip([parent, "position", target], r, strict=True)) for r in rows],
        )
        order = "" if unique else " and position (a value repeats within a list)"
        self._note(
            spec.name,
            f"a list of {ref_table} keys: link rows ({', '.join(columns)}) keyed by "
            f"{', '.join(key)}{order}",
        )

    def finish(self) -> Path:
        """Declare foreign keys, normalise dates, check keys, store provenance, rename into place."""
        try:
            self.infer_foreign_keys()
            self.link_lists()
            retyped = self.normalise_dates()
            for spec in self.tables.values():
                if (spec.foreign_keys or spec.name in retyped) and not spec.declared:
                    self._rebuild(spec)
            problems = self.conn.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise SourceError(f"foreign key check failed: {problems[:5]}")
            store_provenance(self.conn, [p.as_dict() for p in self.provenance])
            self.conn.commit()
            self.conn.close()
            os.replace(self.temp_path, self.target)
            self._finished = True
            return self.target
        except Exception:
            self.abort()
            raise

    def normalise_dates(self) -> set[str]:
        """Rewrite date columns of every source kind to ISO 8601 (`dates`), noting each in the
        provenance; the names of builder-made tables whose declared types changed."""
        from .dates import normalise_dates

        before = {name: dict(spec.types) for name, spec in self.tables.items()}
        for table, _column, detail in normalise_dates(self.conn, self.tables):
            first = next((p for p in self.provenance if p.table == table), None)
            source, kind = (first.source, first.kind) if first else (table, "dates")
            self.add_provenance(table, source, kind, detail)
        return {n for n, s in self.tables.items() if s.types != before[n]}

    def _rebuild(self, spec: TableSpec) -> None:
        temp_name = f"{spec.name}__aw_new"
        self._create(spec, temp_name)
        cols = ", ".join(f'"{c}"' for c in spec.columns)
        self.conn.execute(f'INSERT INTO "{temp_name}" ({cols}) SELECT {cols} FROM "{spec.name}"')
        self.conn.execute(f'DROP TABLE "{spec.name}"')
        self.conn.execute(f'ALTER TABLE "{temp_name}" RENAME TO "{spec.name}"')


def _id_like_value(value: Any) -> bool:
    """An identifier rather than a word: no spaces, and a digit or '#' in it."""
    return (
        isinstance(value, str)
        and 2 <= len(value) <= 64
        and not any(ch.isspace() for ch in value)
        and any(ch.isdigit() or ch == "#" for ch in value)
    )


def _quoted(name: str) -> str:
    """An SQL identifier, quoted: data files may name columns `from`, `order` or `group`."""
    return '"' + name.replace('"', '""') + '"'


def _name_suggests_reference(column: str, other: TableSpec) -> bool:
    table, stem, pk = other.name, singular(other.name), other.primary_key
    names = {table, stem, f"{table}_{pk}", f"{stem}_{pk}", f"{stem}_id", f"{stem}_code"}
    if pk not in ("id", "name", "code"):
        names.add(pk)
    return column in names or any(column.endswith(f"_{n}") for n in (stem, f"{stem}_id"))


def store_provenance(conn: sqlite3.Connection, records: list[dict[str, str]]) -> None:
    """Add provenance records (table, source, kind, detail) to a database, creating the table."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {PROVENANCE_TABLE} "
        "(id INTEGER PRIMARY KEY, tbl TEXT, source TEXT, kind TEXT, detail TEXT)"
    )
    conn.executemany(
        f"INSERT INTO {PROVENANCE_TABLE} (tbl, source, kind, detail) VALUES (?, ?, ?, ?)",
        [(r["table"], r["source"], r["kind"], r["detail"]) for r in records],
    )


def restore_provenance(db_path: Path, records: list[dict[str, str]]) -> None:
    """Put a published package's provenance back into its database, which publishing dropped,
    so a version derived from it (complexify) carries where every row came from."""
    conn = sqlite3.connect(db_path)
    try:
        with conn:
            store_provenance(conn, records)
    finally:
        conn.close()


def read_provenance(db_path: Path) -> list[dict[str, str]]:
    """The provenance records stored in a mined database."""
    with sqlite3.connect(db_path) as conn:
        rows = conn.execute(f"SELECT tbl, source, kind, detail FROM {PROVENANCE_TABLE}").fetchall()
    return [{"table": t, "source": s, "kind": k, "detail": d} for t, s, k, d in rows]


def check_identifier(name: str) -> str:
    if not _IDENT.match(name):
        raise SourceError(f"not a valid identifier: {name!r}")
    return name
