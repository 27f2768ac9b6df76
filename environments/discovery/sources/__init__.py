"""Source adapters: real local data (CSV, JSON, SQL, HTML, Python data packages) -> SQLite."""

from __future__ import annotations

from pathlib import Path

from .base import DatabaseBuilder, Provenance, SourceError, read_provenance
from .csv_source import load_csv
from .html_source import load_html
from .json_source import load_json
from .python_packages import PACKAGE_DATASETS, load_package_dataset
from .sql_source import load_sql_dump

_BY_SUFFIX = {
    ".csv": load_csv,
    ".tsv": load_csv,
    ".json": load_json,
    ".jsonl": load_json,
    ".sql": load_sql_dump,
    ".html": load_html,
    ".htm": load_html,
}


def load_file(builder: DatabaseBuilder, path: Path):
    """Ingest one file by its suffix."""
    loader = _BY_SUFFIX.get(Path(path).suffix.lower())
    if loader is None:
        raise SourceError(f"{Path(path).name}: unsupported file type")
    return loader(builder, Path(path))


def mine_sources(target: Path, files=(), datasets=()) -> Path:
    """Build one SQLite database from files and package datasets; atomic, all or nothing."""
    with DatabaseBuilder(target) as builder:
        for dataset in datasets:
            load_package_dataset(builder, dataset)
        for path in files:
            load_file(builder, path)
        return builder.finish()


__all__ = [
    "DatabaseBuilder",
    "PACKAGE_DATASETS",
    "Provenance",
    "SourceError",
    "load_csv",
    "load_file",
    "load_html",
    "load_json",
    "load_package_dataset",
    "load_sql_dump",
    "mine_sources",
    "read_provenance",
]
