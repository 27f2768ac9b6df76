"""Source adapters: real local data (CSV, JSON, SQL dumps, SQLite, HTML, archives, Python data
packages) -> one SQLite database.

- `detect_format(path)`: the file's format by content sniffing plus suffix.
- `probe_file(path, *, max_bytes=...)`: a fast check before a build is queued (`Probe`).
- `load_file(builder, path)`: ingest one file (or an archive of files) into a builder.
- `mine_sources(target, files=..., datasets=...)`: build the database, all or nothing.
Every failure is a `SourceError` naming the file (and table, column or line where they apply).
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from .archive import extract_archive
from .base import DatabaseBuilder, Provenance, SourceError, read_provenance
from .csv_source import load_csv
from .detect import FORMATS, detect_format
from .html_source import load_html
from .json_source import load_json
from .limits import DEFAULT_LIMITS, Limits
from .probe import Probe, probe_file
from .python_packages import PACKAGE_DATASETS, load_package_dataset
from .sql_source import load_sql_dump
from .sqlite_source import load_sqlite


def _load_one(builder: DatabaseBuilder, path: Path, fmt: str, source: str, limits: Limits):
    if fmt in ("csv", "tsv"):
        return load_csv(builder, path, source=source, limits=limits)
    if fmt in ("json", "jsonl"):
        return load_json(
            builder, path, source=source, max_columns=limits.max_columns, lines=fmt == "jsonl"
        )
    if fmt == "sqlite":
        return load_sqlite(builder, path, source=source)
    if fmt == "sql":
        return load_sql_dump(builder, path, source=source)
    if fmt == "html":
        return load_html(builder, path, source=source)
    raise SourceError(f"{source}: unsupported file type")


def load_file(builder: DatabaseBuilder, path: Path, *, limits: Limits = DEFAULT_LIMITS):
    """Ingest one file by its detected format; an archive's members each by their own."""
    path = Path(path)
    fmt = detect_format(path)
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise SourceError(f"{path.name}: {size} bytes, more than the {limits.max_bytes}-byte limit")
    try:
        if fmt not in ("zip", "tar"):
            return _load_one(builder, path, fmt, str(path), limits)
        specs = []
        with tempfile.TemporaryDirectory(prefix="aw-archive-") as folder:
            for member, file in extract_archive(path, fmt, Path(folder), limits):
                source = f"{path.name}:{member}"
                try:
                    member_fmt = detect_format(file)
                except SourceError as exc:
                    raise SourceError(
                        f"{source}: {str(exc).removeprefix(file.name + ': ')}"
                    ) from exc
                if member_fmt in ("zip", "tar"):
                    raise SourceError(f"{source}: nested archives are not supported")
                try:
                    found = _load_one(builder, file, member_fmt, source, limits)
                except SourceError as exc:
                    message = str(exc)
                    if not message.startswith(source):
                        message = f"{source}: {message.removeprefix(file.name + ': ')}"
                    raise SourceError(message) from exc
                specs.extend(found if isinstance(found, list) else [found])
        return specs
    except sqlite3.Error as exc:  # never a raw database error
        raise SourceError(f"{path.name}: cannot be stored ({exc})") from exc
    except RecursionError as exc:
        raise SourceError(f"{path.name}: nested too deeply") from exc


# File names an upload may carry; the content decides the format (detect_format).
SUPPORTED_SUFFIXES = (
    ".csv", ".tsv", ".txt", ".json", ".jsonl", ".ndjson", ".sql", ".html", ".htm",
    ".sqlite", ".sqlite3", ".db", ".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz",
)  # fmt: skip


def mine_sources(target: Path, files=(), datasets=(), *, limits: Limits = DEFAULT_LIMITS) -> Path:
    """Build one SQLite database from files and package datasets; atomic, all or nothing."""
    with DatabaseBuilder(target) as builder:
        for dataset in datasets:
            load_package_dataset(builder, dataset)
        for path in files:
            load_file(builder, path, limits=limits)
        try:
            return builder.finish()
        except sqlite3.Error as exc:
            raise SourceError(f"cannot finish the database ({exc})") from exc


__all__ = [
    "DEFAULT_LIMITS",
    "SUPPORTED_SUFFIXES",
    "FORMATS",
    "DatabaseBuilder",
    "Limits",
    "PACKAGE_DATASETS",
    "Probe",
    "Provenance",
    "SourceError",
    "detect_format",
    "load_csv",
    "load_file",
    "load_html",
    "load_json",
    "load_package_dataset",
    "load_sql_dump",
    "load_sqlite",
    "mine_sources",
    "probe_file",
    "read_provenance",
]
