"""A fast check of one uploaded file before a build is queued: `probe_file`.

It detects the format by content, enforces the size limit, and reads only a bounded prefix of
line-oriented formats (CSV, JSONL are streamed, not loaded into SQLite); a JSON document below
the size limit is parsed whole and its shape planned without writing anything, and a SQL script
is read by the build's own reader into a scratch in-memory database (see `_probe_sql`).
Every refusal is a SourceError whose message starts with the file's name.
"""

from __future__ import annotations

import csv
import io
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .base import DatabaseBuilder, SourceError
from .detect import detect_format, sql_dialect
from .limits import DEFAULT_LIMITS, Limits


@dataclass
class Probe:
    name: str
    format: str  # csv, tsv, json, jsonl, sqlite, sql, html, zip, tar
    size: int  # bytes on disk
    tables: int  # tables the file will make (an estimate for dumps and archives)
    records: int  # rows (exact when the whole file was read, else estimated)
    estimated: bool = False  # records extrapolated from a prefix
    detail: str = ""  # dialect, archive members, ...


def probe_file(
    path: Path, *, max_bytes: int | None = None, limits: Limits = DEFAULT_LIMITS
) -> Probe:
    """Check that `path` can become a database: SourceError naming the file when it cannot."""
    path = Path(path)
    if max_bytes is not None:
        limits = Limits(**{**limits.__dict__, "max_bytes": max_bytes})
    name = path.name
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"{name}: cannot read ({exc.strerror or exc})") from exc
    if size == 0:
        raise SourceError(f"{name}: empty file")
    if size > limits.max_bytes:
        raise SourceError(
            f"{name}: {_mb(size)} is larger than the {_mb(limits.max_bytes)} upload limit"
        )
    fmt = detect_format(path)
    probe = Probe(name, fmt, size, 0, 0)
    if fmt in ("csv", "tsv"):
        _probe_csv(path, probe, limits)
    elif fmt == "json":
        _probe_json(path, probe, limits)
    elif fmt == "jsonl":
        _probe_jsonl(path, probe, limits)
    elif fmt == "sqlite":
        _probe_sqlite(path, probe)
    elif fmt == "sql":
        _probe_sql(path, probe, limits)
    elif fmt == "html":
        _probe_html(path, probe, limits)
    else:
        _probe_archive(path, probe, limits)
    return probe


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def _prefix(path: Path, limits: Limits) -> tuple[str, bool]:
    """(text of the first probe_bytes, whole file read); a cut last line is dropped."""
    with open(path, "rb") as handle:
        raw = handle.read(limits.probe_bytes + 1)
    whole = len(raw) <= limits.probe_bytes
    if not whole:
        raw = raw[: limits.probe_bytes]
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    try:
        return raw.decode("utf-8-sig", errors="strict" if whole else "ignore"), whole
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path.name}: not UTF-8 text (byte {exc.start})") from exc


def _probe_csv(path: Path, probe: Probe, limits: Limits) -> None:
    text, whole = _prefix(path, limits)
    from .csv_source import MISSING  # noqa: F401  (same reader rules as ingestion)

    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if probe.format == "tsv" else csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise SourceError(f"{path.name}: no header row")
    if len(header) > limits.max_csv_columns:
        raise SourceError(
            f"{path.name}: {len(header)} columns, more than the {limits.max_csv_columns}-column "
            "limit of a table"
        )
    rows = 0
    for line_no, values in enumerate(reader, start=2):
        if not values:
            continue
        if len(values) != len(header):
            raise SourceError(
                f"{path.name}: line {line_no} has {len(values)} fields, header has {len(header)}"
            )
        rows += 1
    if rows == 0:
        raise SourceError(f"{path.name}: CSV file has a header but no rows")
    probe.tables = 1
    probe.records = rows if whole else int(rows * probe.size / max(1, len(text.encode())))
    probe.estimated = not whole
    probe.detail = f"{len(header)} columns"


def _plan(
    loader_call, path: Path, probe: Probe, deadline_s: float | None = None, check=None
) -> None:
    """Run a loader (the JSON planner, the SQL readers) against a throwaway in-memory database;
    with `deadline_s`, SQL that runs longer (a SQLite script's recursive INSERT) is stopped."""
    builder = DatabaseBuilder.__new__(DatabaseBuilder)
    builder.conn = sqlite3.connect(":memory:")
    builder.tables, builder.provenance, builder._finished = {}, [], True
    if deadline_s is not None:
        deadline = time.monotonic() + deadline_s
        builder.conn.set_progress_handler(lambda: time.monotonic() > deadline, 100_000)
    try:
        try:
            specs = loader_call(builder)
        except SourceError:
            if deadline_s is not None and time.monotonic() > deadline:
                raise SourceError(
                    f"{path.name}: reading it took longer than {deadline_s:.0f} s at upload "
                    "(a statement that generates rows without end?)"
                ) from None
            raise
        if check is not None:
            check(builder)
        probe.tables = len(specs)
        probe.records = sum(
            builder.conn.execute(f'SELECT COUNT(*) FROM "{s.name}"').fetchone()[0] for s in specs
        )
    finally:
        builder.conn.close()


def _probe_json(path: Path, probe: Probe, limits: Limits) -> None:
    from .json_source import load_json

    _plan(lambda b: load_json(b, path, max_columns=limits.max_columns, lines=False), path, probe)


def _probe_jsonl(path: Path, probe: Probe, limits: Limits) -> None:
    import json

    text, whole = _prefix(path, limits)
    rows = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{path.name}: line {line_no}: invalid JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise SourceError(f"{path.name}: line {line_no}: a JSON Lines record must be an object")
        rows += 1
    if rows == 0:
        raise SourceError(f"{path.name}: no JSON records")
    probe.tables = 1
    probe.records = rows if whole else int(rows * probe.size / max(1, len(text.encode())))
    probe.estimated = not whole


def _probe_sqlite(path: Path, probe: Probe) -> None:
    from .sqlite_source import sqlite_tables

    tables = sqlite_tables(path)
    if not tables:
        raise SourceError(f"{path.name}: the SQLite database has no tables")
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    try:
        probe.records = sum(
            conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name, _ in tables
        )
    except sqlite3.Error as exc:
        raise SourceError(f"{path.name}: damaged SQLite database ({exc})") from exc
    finally:
        conn.close()
    probe.tables = len(tables)


_SQL_SECONDS = 30.0  # the longest the upload probe reads one SQL script
_CREATE = re.compile(r"^\s*CREATE\s+(?:UNLOGGED\s+|TEMP\w*\s+)?TABLE\b", re.IGNORECASE)
_ROWS = re.compile(r"^\s*(INSERT\s|REPLACE\s|\()", re.IGNORECASE)


def _probe_sql(path: Path, probe: Probe, limits: Limits) -> None:
    """Read the script with the build's own reader into a scratch in-memory database, so the
    upload is refused with the message the build would give. A script above probe_sql_bytes is
    read that way up to that size, and its rows are counted by streaming (bounded memory)."""
    from .sql_dialects import DumpReader
    from .sql_source import load_sql_dump

    head, _ = _prefix(path, limits)
    dialect = sql_dialect(head[:65536])
    probe.detail = f"{dialect} dump"
    if probe.size <= limits.probe_sql_bytes:
        _plan(
            lambda builder: load_sql_dump(builder, path),
            path,
            probe,
            deadline_s=_SQL_SECONDS,
            check=lambda builder: _foreign_key_check(builder, path),
        )
        return
    if dialect in ("postgres", "mysql"):
        cut = Limits(**{**limits.__dict__, "probe_bytes": limits.probe_sql_bytes})
        text, _ = _prefix(path, cut)
        _plan(
            lambda builder: DumpReader(builder, path, dialect, str(path)).read(text, partial=True),
            path,
            probe,
        )
    _count_sql(path, probe)


def _foreign_key_check(builder: DatabaseBuilder, path: Path) -> None:
    """The build checks the declared foreign keys once every table is in; so does the probe."""
    problems = builder.conn.execute("PRAGMA foreign_key_check").fetchall()
    if problems:
        table, rowid, parent, _ = problems[0]
        raise SourceError(
            f"{path.name}: {len(problems)} row(s) break a declared foreign key (first: {table} "
            f"row {rowid} names a missing {parent} row)"
        )


def _count_sql(path: Path, probe: Probe) -> None:
    """Stream the script line by line (bounded memory): count tables and row lines."""
    tables = rows = 0
    in_copy = False
    try:
        with open(path, encoding="utf-8-sig", errors="strict") as handle:
            for line in handle:
                if in_copy:
                    if line.rstrip("\r\n") == "\\.":
                        in_copy = False
                    else:
                        rows += 1
                elif _CREATE.match(line):
                    tables += 1
                elif line.startswith("COPY ") and line.rstrip().endswith("FROM stdin;"):
                    in_copy = True
                elif _ROWS.match(line):
                    rows += 1
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc
    if tables == 0:
        raise SourceError(f"{path.name}: the SQL dump has no CREATE TABLE statement")
    probe.tables, probe.records, probe.estimated = tables, rows, True


def _probe_html(path: Path, probe: Probe, limits: Limits) -> None:
    from .html_source import parse_html

    text, _ = _prefix(path, limits)
    page = parse_html(text)
    if page.tables:
        probe.tables = len(page.tables)
        probe.records = sum(len(t["rows"]) for t in page.tables)
        wide = max(len(t["header"] or []) for t in page.tables)
        if wide > limits.max_csv_columns:
            raise SourceError(f"{path.name}: a table has {wide} columns, more than the limit")
    elif any(s["text"] for s in page.sections):
        probe.tables, probe.records = 1, len(page.sections)
    else:
        raise SourceError(f"{path.name}: no tables and no text sections found")


def _probe_archive(path: Path, probe: Probe, limits: Limits) -> None:
    import tempfile

    from .archive import extract_archive

    with tempfile.TemporaryDirectory(prefix="aw-probe-") as folder:
        for member, file in extract_archive(path, probe.format, Path(folder), limits):
            try:
                inner = probe_file(file, limits=limits)
            except SourceError as exc:
                message = str(exc).removeprefix(f"{file.name}: ")
                raise SourceError(f"{path.name}:{member}: {message}") from exc
            if inner.format in ("zip", "tar"):
                raise SourceError(f"{path.name}:{member}: nested archives are not supported")
            probe.tables += inner.tables
            probe.records += inner.records
            probe.estimated = probe.estimated or inner.estimated
            probe.detail += f"{', ' if probe.detail else ''}{member} ({inner.format})"
