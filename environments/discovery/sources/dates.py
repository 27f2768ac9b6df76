"""Dates and times written in any common form, rewritten to ISO 8601 once every table is in.

Generated tools compare dates as ISO strings (`2021-01-31` sorts after `2021-01-05`), so a column
stored as `2021/1/5` or `5.1.2021` would answer range searches wrongly. `normalise_dates` reads
every TEXT (and DATE/DATETIME) column of the mining database and rewrites it when ALL its
non-null values parse under ONE format of `DATE_FORMATS` (with at most one time form): dates
become `YYYY-MM-DD`, date-times `YYYY-MM-DDTHH:MM:SS` (an offset kept as +HH:MM when the values
carry one; ISO values written with a space keep it), and the column is declared DATE or
DATETIME.

Columns already in ISO 8601 are brought to the same one form: seconds always written, a
fraction kept (as microseconds) only when some value of the column has a non-zero one
(`.000` is dropped), a `Z` written `+00:00`, and `T` between date and time unless every value
of the column uses a space (`2006-02-15 04:34:33` stays as dumps write it: the tools compare
both alike). Every date column gets a provenance line saying the form it holds. A column
declared TIMESTAMP/DATETIME whose every value is a plain date is declared DATE, so its tools
say `format: date`. The generated tools compare date-times through SQLite's datetime(), which reads both
separators and +HH:MM offsets (not PostgreSQL's short +00, which is why that is rewritten). Columns already in ISO form are only
re-declared. An INTEGER column is a date only when its name says so and every value is an
eight-digit YYYYMMDD; other numbers (years, counts) are never touched.

Day/month order: `D/M/YYYY` and `M/D/YYYY` both fit a column whose days are all <= 12. The
database's own evidence decides: a value with a first part > 12 fixes the order of its column,
and a column that is ambiguous follows the order every decided column of the same database
shows; with no evidence at all, `/` reads month first (the US form) and `.` or `-` day first,
and the provenance says the order was assumed. Columns joined by a foreign key are read as one
group, so a key and its references always get the same ISO values.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING

from .sql_retype import retype_table

if TYPE_CHECKING:
    from .base import TableSpec

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$"
)
_SHORT_OFFSET = re.compile(r"(\d[+-]\d{2})$")
_MAX_LENGTH = 40
_NAME_SAYS_DATE = re.compile(r"(^|_)(date|day|dt|dob)(_|$)|date$")


@dataclass(frozen=True)
class DateFormat:
    """One way of writing dates: a strptime pattern and the label provenance shows."""

    pattern: str
    label: str
    order: str = ""  # "DM" or "MD" where a swapped twin exists, else ""

    @property
    def has_time(self) -> bool:
        return "%H" in self.pattern or "%I" in self.pattern

    @property
    def twin(self) -> str:
        """The pattern with day and month swapped (the other reading of an ambiguous date)."""
        return self.pattern.replace("%d", "\0").replace("%m", "%d").replace("\0", "%m")


_DATE_PARTS: list[tuple[str, str, str]] = [
    ("%Y-%m-%d", "YYYY-M-D", ""),
    ("%Y/%m/%d", "YYYY/M/D", ""),
    ("%Y.%m.%d", "YYYY.M.D", ""),
    ("%m/%d/%Y", "M/D/YYYY", "MD"),
    ("%d/%m/%Y", "D/M/YYYY", "DM"),
    ("%d.%m.%Y", "D.M.YYYY", "DM"),
    ("%m.%d.%Y", "M.D.YYYY", "MD"),
    ("%d-%m-%Y", "D-M-YYYY", "DM"),
    ("%m-%d-%Y", "M-D-YYYY", "MD"),
    ("%m/%d/%y", "M/D/YY", "MD"),
    ("%d/%m/%y", "D/M/YY", "DM"),
    ("%d.%m.%y", "D.M.YY", "DM"),
    ("%m.%d.%y", "M.D.YY", "MD"),
    ("%b %d, %Y", "Mon D, YYYY", ""),
    ("%B %d, %Y", "Month D, YYYY", ""),
    ("%b %d %Y", "Mon D YYYY", ""),
    ("%B %d %Y", "Month D YYYY", ""),
    ("%d %b %Y", "D Mon YYYY", ""),
    ("%d %B %Y", "D Month YYYY", ""),
    ("%d-%b-%Y", "D-Mon-YYYY", ""),
    ("%d-%b-%y", "D-Mon-YY", ""),
    ("%a, %d %b %Y", "Day, D Mon YYYY", ""),
]
_TIME_PARTS: list[tuple[str, str]] = [
    ("", ""),
    (" %H:%M", " H:M"),
    (" %H:%M:%S", " H:M:S"),
    (" %H:%M:%S.%f", " H:M:S.F"),
    (" %I:%M %p", " h:M AM/PM"),
    (" %I:%M:%S %p", " h:M:S AM/PM"),
    (" %H:%M:%S %z", " H:M:S +ZONE"),
]
_ISO_TIME_PARTS: list[tuple[str, str]] = [
    ("T%H:%M", "TH:M"),
    ("T%H:%M:%S", "TH:M:S"),
    ("T%H:%M:%S.%f", "TH:M:S.F"),
    ("T%H:%M%z", "TH:M+ZONE"),
    ("T%H:%M:%S%z", "TH:M:S+ZONE"),
    ("T%H:%M:%S.%f%z", "TH:M:S.F+ZONE"),
    (" %H:%M%z", " H:M+ZONE"),
    (" %H:%M:%S%z", " H:M:S+ZONE"),
    (" %H:%M:%S.%f%z", " H:M:S.F+ZONE"),
]
DATE_FORMATS: list[DateFormat] = [
    DateFormat(d + t, label + tl, order)
    for d, label, order in _DATE_PARTS
    for t, tl in _TIME_PARTS + (_ISO_TIME_PARTS if d == "%Y-%m-%d" else [])
]
COMPACT = DateFormat("%Y%m%d", "YYYYMMDD")


def is_iso(value: str) -> str:
    """The ISO kind of value ("date" or "datetime"), or "" when it is not valid ISO."""
    if _ISO_DATE.match(value):
        kind = "date"
    elif _ISO_DATETIME.match(value):
        kind = "datetime"
    else:
        return ""
    try:
        date.fromisoformat(value[:10])
    except ValueError:
        return ""
    return kind


def to_iso(value: str, fmt: DateFormat) -> str | None:
    """value in ISO form when it parses under fmt exactly, else None."""
    text = value.strip()
    if "%z" in fmt.pattern:
        text = _SHORT_OFFSET.sub(r"\1:00", text)  # PostgreSQL writes +00 for +00:00
    try:
        parsed = datetime.strptime(text, fmt.pattern)
    except ValueError:
        return None
    if fmt is COMPACT and not 1800 <= parsed.year <= 2200:
        return None
    if not fmt.has_time and "%z" not in fmt.pattern:
        return parsed.date().isoformat()
    spec = "microseconds" if parsed.microsecond else "seconds"
    sep = " " if fmt.pattern.startswith("%Y-%m-%d ") else "T"  # ISO with a space keeps it
    return parsed.isoformat(sep=sep, timespec=spec)


def fitting_formats(
    values: Iterable[str], formats: list[DateFormat] | None = None
) -> list[DateFormat]:
    """Every format that ALL values parse under (in `DATE_FORMATS` order)."""
    remaining = list(DATE_FORMATS if formats is None else formats)
    for value in values:
        if not remaining:
            break
        remaining = [f for f in remaining if to_iso(value, f) is not None]
    return remaining


@dataclass
class Reading:
    """How one group of linked columns is read: its format, ISO values and why."""

    columns: list[tuple[str, str]]  # (table, column)
    values: list[str]
    iso_kind: str = ""  # already ISO: "date" | "datetime"
    formats: list[DateFormat] = field(default_factory=list)
    chosen: DateFormat | None = None
    note: str = ""
    canonical: dict[str, str] | None = None  # ISO values -> their one form, when any differ

    @property
    def ambiguous(self) -> bool:
        orders = {f.order for f in self.formats if f.order}
        return orders == {"DM", "MD"}


_ISO_FORM = re.compile(
    r"^\d{4}-\d{2}-\d{2}(?P<sep>[T ])?(?P<hm>\d{2}:\d{2})?(?P<s>:\d{2})?"
    r"(?P<f>\.\d+)?(?P<z>Z|[+-]\d{2}:\d{2})?$"
)


def iso_form(value: str) -> str:
    """The written form of an ISO value, as provenance shows it (`YYYY-MM-DDTHH:MM:SS.FZ`)."""
    match = _ISO_FORM.match(value)
    if not match:
        return "other"
    if not match["hm"]:
        return "YYYY-MM-DD"
    zone = {None: "", "Z": "Z"}.get(match["z"], "+HH:MM")
    seconds = ":SS" if match["s"] else ""
    return f"YYYY-MM-DD{match['sep']}HH:MM{seconds}{'.F' if match['f'] else ''}{zone}"


def iso_canonical(values: list[str]) -> dict[str, str] | None:
    """ISO values -> their one form (see the module's doc), or None when all are already in
    it. Plain dates stay as they are."""
    parsed = {}
    for value in values:
        if _ISO_DATE.match(value):
            continue
        try:
            parsed[value] = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not parsed:
        return None
    spaced = all(v[10] == " " for v in parsed)
    fractions = any(p.microsecond for p in parsed.values())
    mapping = {
        v: p.isoformat(
            sep=" " if spaced else "T", timespec="microseconds" if fractions else "seconds"
        )
        for v, p in parsed.items()
    }
    return mapping if any(k != v for k, v in mapping.items()) else None


def declared_kind(declared: str) -> str:
    """What a declared SQL type holds, for date detection: date | integer | text | other."""
    text = (declared or "").upper()
    if "DATE" in text or "TIME" in text:
        return "date"
    if "INT" in text and "POINT" not in text:
        return "integer"
    if not text or any(t in text for t in ("CHAR", "TEXT", "CLOB", "STRING")):
        return "text"
    return "other"


def _candidate_values(conn: sqlite3.Connection, table: str, column: str, kind: str) -> list | None:
    """Distinct non-null values when the column could hold dates at all, else None."""
    rows = conn.execute(
        f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'
    ).fetchall()
    values = [r[0] for r in rows]
    if not values:
        return None
    if kind == "integer":
        if not _NAME_SAYS_DATE.search(column.lower()):
            return None
        if not all(isinstance(v, int) and 10_000_000 <= v <= 99_999_999 for v in values):
            return None
        return [str(v) for v in values]
    if not all(isinstance(v, str) and 6 <= len(v) <= _MAX_LENGTH for v in values):
        return None
    if not all(any(ch.isdigit() for ch in v) for v in values):
        return None
    return values


def _groups(tables: dict[str, TableSpec]) -> list[list[tuple[str, str]]]:
    """Columns joined by foreign keys, as groups (every other column alone)."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(node):
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for spec in tables.values():
        for column in spec.columns:
            find((spec.name, column))
        for column, (ref_table, ref_column) in spec.foreign_keys.items():
            if ref_table in tables and ref_column:
                parent[find((spec.name, column))] = find((ref_table, ref_column))
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for node in list(parent):
        groups.setdefault(find(node), []).append(node)
    return list(groups.values())


def _read_group(
    conn: sqlite3.Connection, tables: dict[str, TableSpec], group: list[tuple[str, str]]
) -> Reading | None:
    kinds = {declared_kind(tables[t].types.get(c, "")) for t, c in group}
    if not kinds <= {"text", "date", "integer"} or ("integer" in kinds and len(kinds) > 1):
        return None
    values: set[str] = set()
    for table, column in group:
        found = _candidate_values(conn, table, column, next(iter(kinds)))
        if found is None:
            return None
        values.update(found)
    ordered = sorted(values)
    if kinds == {"integer"}:
        if fitting_formats(ordered, [COMPACT]):
            return Reading(group, ordered, formats=[COMPACT], chosen=COMPACT)
        return None
    iso = {is_iso(v) for v in ordered}
    if "" not in iso:
        kind = "datetime" if "datetime" in iso else "date"
        return Reading(group, ordered, iso_kind=kind, canonical=iso_canonical(ordered))
    formats = fitting_formats(ordered)
    if not formats:
        return None
    reading = Reading(group, ordered, formats=formats)
    if not reading.ambiguous:
        reading.chosen = formats[0]
    return reading


def _settle_ambiguity(readings: list[Reading]) -> None:
    """Pick day- or month-first for ambiguous columns from the database's own evidence."""
    decided = {r.chosen.order for r in readings if r.chosen is not None and r.chosen.order}
    for reading in readings:
        if reading.chosen is not None or not reading.ambiguous:
            continue
        first = reading.formats[0]
        if len(decided) == 1:
            order = next(iter(decided))
            why = "as the other dates of this database read"
        else:
            order = "MD" if "/" in first.pattern else "DM"
            why = "no value decides; assumed"
        reading.chosen = next(f for f in reading.formats if f.order == order)
        other = next(f for f in reading.formats if f.order != order)
        reading.note = f"; ambiguous ({other.label} fits too), read {reading.chosen.label} {why}"


def normalise_dates(
    conn: sqlite3.Connection, tables: dict[str, TableSpec]
) -> list[tuple[str, str, str]]:
    """Rewrite date columns of every table to ISO 8601 and declare them DATE / DATETIME.

    Returns (table, column, provenance detail) for every column changed. Tables created by the
    builder get their new types in `tables[...].types` (the caller rebuilds them); tables
    created by SQL are rebuilt here from their own CREATE statement.
    """
    readings = [r for g in _groups(tables) if (r := _read_group(conn, tables, g)) is not None]
    _settle_ambiguity(readings)
    changed: list[tuple[str, str, str]] = []
    retype: dict[str, dict[str, str]] = {}
    for reading in readings:
        if reading.iso_kind:
            new_type = reading.iso_kind.upper()
            mapping = reading.canonical
            if (
                mapping
                and len(set(mapping.values())) != len(mapping)
                and any(c in _unique_columns(conn, t) for t, c in reading.columns)
            ):
                mapping = None  # two spellings of one instant in a key column: leave them
        else:
            fmt = reading.chosen
            mapping = {v: to_iso(v, fmt) for v in reading.values}
            if any(m is None for m in mapping.values()):
                continue
            if len(set(mapping.values())) != len(mapping) and any(
                c in _unique_columns(conn, t) for t, c in reading.columns
            ):
                continue  # two spellings of one day in a key column: leave it as written
            new_type = "DATETIME" if fmt.has_time or "%z" in fmt.pattern else "DATE"
        done = _apply(conn, tables, reading, mapping, new_type)
        if done is None:
            continue  # a constraint refused one column: the whole group stays as written
        for table, column, target in done:
            if tables[table].types.get(column, "") != target:
                retype.setdefault(table, {})[column] = target
            changed.append((table, column, _detail(conn, reading, table, column, target)))
    for table, types in retype.items():
        spec = tables[table]
        spec.types.update(types)
        if spec.declared:
            retype_table(conn, table, types)
    return changed


def _apply(
    conn: sqlite3.Connection,
    tables: dict[str, TableSpec],
    reading: Reading,
    mapping: dict[str, str] | None,
    new_type: str,
) -> list[tuple[str, str, str]] | None:
    """Rewrite every column of one group (all or none): (table, column, type) of the columns to
    note, or None when a constraint refused a value."""
    done = []
    conn.execute("SAVEPOINT aw_dates")
    for table, column in reading.columns:
        declared = tables[table].types.get(column, "")
        dated = declared_kind(declared) == "date"
        if mapping is not None and not _rewrite(conn, table, column, mapping):
            conn.execute("ROLLBACK TO aw_dates")
            conn.execute("RELEASE aw_dates")
            return None
        if dated and new_type == "DATE" and "TIME" in declared.upper():
            target = "DATE"  # a TIMESTAMP column holding plain dates says what it holds
        else:
            target = declared if dated else new_type
        done.append((table, column, target))
    conn.execute("RELEASE aw_dates")
    return done


def _detail(conn: sqlite3.Connection, reading: Reading, table: str, column: str, target: str):
    """The provenance line of one column: the format read and how many values it covered."""
    count = conn.execute(f'SELECT COUNT("{column}") FROM "{table}"').fetchone()[0]
    kind = "date-times" if "TIME" in target.upper() else "dates"
    if reading.chosen is None:
        forms = sorted({iso_form(v) for v in reading.values})
        if reading.canonical is None:
            return f"{column}: {kind} in ISO 8601 as {' / '.join(forms)} ({_values(count)})"
        stored = sorted(
            {iso_form(v) for v in reading.canonical.values()}
            | ({"YYYY-MM-DD"} if "YYYY-MM-DD" in forms else set())
        )
        return (
            f"{column}: {kind} written {' / '.join(forms)}, stored as "
            f"{' / '.join(stored)} ({_values(count)})"
        )
    return (
        f"{column}: {kind} read as {reading.chosen.label}, stored as ISO 8601 "
        f"({_values(count)}){reading.note}"
    )


def _rewrite(conn: sqlite3.Connection, table: str, column: str, mapping: dict[str, str]) -> bool:
    """Rewrite one column's values; False (and nothing changed) when a constraint refuses."""
    conn.create_function("aw_iso_date", 1, lambda v: mapping.get(str(v), v), deterministic=True)
    try:
        conn.execute(
            f'UPDATE "{table}" SET "{column}" = aw_iso_date("{column}") WHERE "{column}" IS NOT NULL'
        )
    except sqlite3.Error:
        return False
    return True


def _unique_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    unique = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")') if r[5]}
    for index in conn.execute(f'PRAGMA index_list("{table}")').fetchall():
        if index[2]:
            cols = [r[2] for r in conn.execute(f'PRAGMA index_info("{index[1]}")')]
            if len(cols) == 1:
                unique.add(cols[0])
    return unique


def _values(count: int) -> str:
    return "1 value" if count == 1 else f"{count:,} values"
