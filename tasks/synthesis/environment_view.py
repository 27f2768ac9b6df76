"""Read-only view of an environment package: its manifest, tables and real rows.

Synthesis draws arguments from real rows, so it reads the package's canonical
``state.sqlite`` directly (opened read-only) instead of going through tools. A package whose
state is a folder of JSON collections (a released environment) is read as tables by
collection_tables.py: a list of rows is a table, keyed by `id` or `<singular>_id`.
"""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from environments.package import COLLECTION_BACKEND
from environments.tool_operations import ToolOperation, manifest_operations
from tasks.synthesis.collection_tables import read_collection_tables


def package_root(package: Any) -> Path:
    """The directory of a package object (runtime ``Package``) or a path."""
    if isinstance(package, str | Path):
        return Path(package)
    for attr in ("path", "root", "directory", "package_dir"):
        value = getattr(package, attr, None)
        if value is not None:
            return Path(value)
    raise TypeError(f"cannot find the directory of package {package!r}")


def package_manifest(package: Any) -> dict[str, Any]:
    """The manifest dict of a package object or a package directory."""
    manifest = getattr(package, "manifest", None)
    if isinstance(manifest, dict):
        return manifest
    if manifest is not None and hasattr(manifest, "to_dict"):
        return manifest.to_dict()
    return json.loads((package_root(package) / "manifest.json").read_text())


@dataclass
class TableInfo:
    name: str
    columns: dict[str, str]  # column -> declared SQLite type (upper case)
    primary_key: list[str]
    foreign_keys: dict[str, tuple[str, str]] = field(default_factory=dict)  # col -> (table, col)

    @property
    def key(self) -> str | None:
        return self.primary_key[0] if len(self.primary_key) == 1 else None

    def is_numeric(self, column: str) -> bool:
        kind = self.columns.get(column, "")
        return any(t in kind for t in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC"))


class EnvironmentView:
    """Manifest, tool schemas and read-only row access for one environment package."""

    def __init__(self, package: Any):
        self.package = package
        self.root = package_root(package)
        self.manifest = package_manifest(package)
        self.name: str = self.manifest.get("name", self.root.name)
        self.version = self.manifest.get("version")
        self.tool_schemas: dict[str, dict[str, Any]] = {
            t["function"]["name"]: t for t in self.manifest.get("tools", [])
        }
        self.tool_kinds: dict[str, str] = dict(self.manifest.get("tool_kinds", {}))
        self._values: dict[tuple[str, str], list[Any]] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}

    @property
    def collections(self) -> bool:
        """Whether the state is a folder of JSON collections (no state.sqlite)."""
        return (self.manifest.get("state") or {}).get("backend") == COLLECTION_BACKEND

    def _connect(self) -> sqlite3.Connection:
        uri = f"file:{self.root / 'state.sqlite'}?mode=ro&immutable=1"
        db = sqlite3.connect(uri, uri=True)
        db.row_factory = sqlite3.Row
        return db

    @cached_property
    def operations(self) -> dict[str, ToolOperation]:
        """What each tool does to which table, where the build recorded it (theme builds);
        tools without it are read from their names."""
        return {
            name: op
            for name, op in manifest_operations(self.manifest).items()
            if name in self.tool_schemas and op.table in self.tables
        }

    @cached_property
    def derived_tables(self) -> set[str]:
        """Tables the build derived from others (a lookup of distinct values with how many rows
        carry each): their counts follow the data, a request never sets them by hand."""
        path = self.root / "provenance.json"
        try:
            notes = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
        except (OSError, ValueError):
            return set()
        return {
            n["table"]
            for n in notes
            if isinstance(n, dict) and n.get("kind") == "derived" and n.get("table") in self.tables
        }

    @cached_property
    def lookup_keys(self) -> set[tuple[str, str]]:
        """(table, column) pairs a tool names one row by: the primary keys, and the columns the
        recorded operations look rows up by (a profiling group by its name, not its row id)."""
        found = {(t, info.key) for t, info in self.tables.items() if info.key}
        for op in self.operations.values():
            for binding in op.params.values():
                column = binding.column
                if binding.role == "key" and column and column in self.tables[op.table].columns:
                    found.add((op.table, column))
        return found

    @cached_property
    def tables(self) -> dict[str, TableInfo]:
        if self.collections:
            read = read_collection_tables(self.root, self.manifest)
            self._rows.update({name: table.rows for name, table in read.items()})
            return {
                name: TableInfo(name, t.columns, t.primary_key, t.foreign_keys)
                for name, t in read.items()
            }
        declared = self.manifest.get("tables", {})
        result: dict[str, TableInfo] = {}
        with self._connect() as db:
            names = [
                r[0]
                for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' "
                    "AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
            ]
            for name in names:
                info = db.execute(f'PRAGMA table_info("{name}")').fetchall()
                columns = {r["name"]: (r["type"] or "").upper() for r in info}
                pk = [r["name"] for r in sorted(info, key=lambda r: r["pk"]) if r["pk"]]
                meta = declared.get(name, {})
                pk = list(meta.get("primary_key") or pk)
                fks: dict[str, tuple[str, str]] = {}
                for fk in meta.get("foreign_keys", []):
                    table, _, column = str(fk["references"]).partition(".")
                    fks[fk["column"]] = (table, column or "id")
                for r in db.execute(f'PRAGMA foreign_key_list("{name}")'):
                    fks.setdefault(r["from"], (r["table"], r["to"] or "id"))
                result[name] = TableInfo(name, columns, pk, fks)
        return result

    def rows(self, table: str) -> list[dict[str, Any]]:
        """All rows of a table in primary-key order (cached; the state is immutable)."""
        if table not in self._rows:
            info = self.tables[table]
            if table in self._rows:  # read with the collections
                return self._rows[table]
            order = ", ".join(f'"{c}"' for c in info.primary_key) or "rowid"
            with self._connect() as db:
                self._rows[table] = [
                    dict(r) for r in db.execute(f'SELECT * FROM "{table}" ORDER BY {order}')
                ]
        return self._rows[table]

    def column_values(self, table: str, column: str) -> list[Any]:
        """Distinct non-null values of a column, sorted for determinism."""
        key = (table, column)
        if key not in self._values:
            values = {r[column] for r in self.rows(table) if r.get(column) is not None}
            self._values[key] = sorted(values, key=lambda v: (str(type(v)), v))
        return self._values[key]

    def is_flag(self, table: str | None, column: str) -> bool:
        """A yes/no column (booleans, or integers that are only ever 0 and 1): "is above -1"
        or "has is active 0" says nothing, so conditions and facts leave it out."""
        if not table or table not in self.tables:
            return False
        values = self.column_values(table, column)
        return bool(values) and all(v in (0, 1) for v in values)

    def sample_value(self, table: str, column: str, rng: random.Random) -> Any:
        values = self.column_values(table, column)
        return rng.choice(values) if values else None

    def sample_row(self, table: str, rng: random.Random) -> dict[str, Any] | None:
        rows = self.rows(table)
        return rng.choice(rows) if rows else None

    def openai_tools(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI tool schemas of the named tools (all when None), in manifest order."""
        if names is None:
            return list(self.tool_schemas.values())
        wanted = set(names)
        return [s for n, s in self.tool_schemas.items() if n in wanted]
