"""One normaliser for state diffs, shared by the reward and by diagnosis.

A row diff (``environments.runtime.state.state_diff``) is turned into atomic writes: a row
added, a row removed, one column of an existing row changed. Rows a run *added* are identified
by their content, not by the surrogate key SQLite assigned them (an INTEGER PRIMARY KEY, or the
rowid), and a foreign key that points at a row added in the same run is replaced by that row's
content identity: two creates made in the other order give the same writes. Rows that existed
before are identified by their primary key, which is meaningful. Everything is order-independent.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, order=True)
class Write:
    """One atomic change of the state."""

    op: str  # "added" | "removed" | "changed"
    table: str
    row: str  # content identity (added/removed) or canonical primary key (changed)
    column: str = ""  # changed: the column
    value: str = ""  # changed: the canonical new value

    def describe(self) -> str:
        if self.op == "changed":
            return f"{self.table} {self.row} set {self.column}={self.value}"
        return f"{self.table} row {self.op}"


def _plain(value: Any) -> Any:
    """Canonical scalar: integral floats read as ints (1 and 1.0 are the same stored value)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def canonical(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), default=str)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


@dataclass
class _Table:
    """What the normaliser needs to know of one table in a diff."""

    name: str
    key: list[str]
    surrogate: bool
    references: dict[str, str]
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[dict[str, Any]]

    @property
    def surrogate_column(self) -> str | None:
        return self.key[0] if self.surrogate and len(self.key) == 1 else None


def _tables(diff: Mapping[str, Any] | None, given_keys: frozenset[str] = frozenset()):
    """``given_keys``: tables whose new rows got their key from the task itself (a create
    called with ``id=1778``): there the key is content, not a surrogate."""
    tables = {}
    for name, change in (diff or {}).items():
        added = list(_get(change, "added") or [])
        key = list(_get(change, "key") or [])
        surrogate = _get(change, "surrogate")
        if surrogate is None:  # a diff recorded before the diff carried its keys
            surrogate = any(isinstance(row.get("id"), int) for row in added)
            key = key or (["id"] if surrogate else [])
        tables[name] = _Table(
            name,
            key,
            bool(surrogate) and name not in given_keys,
            dict(_get(change, "references") or {}),
            added,
            list(_get(change, "removed") or []),
            list(_get(change, "changed") or []),
        )
    return tables


class _Identities:
    """Content identities of the rows a diff added, resolving references among them."""

    def __init__(self, tables: dict[str, _Table]):
        self.tables = tables
        self.new_rows: dict[tuple[str, Any], dict[str, Any]] = {}
        for table in tables.values():
            column = table.surrogate_column
            for row in table.added:
                if column and row.get(column) is not None:
                    self.new_rows[(table.name, row[column])] = row
        self.cache: dict[tuple[str, Any], str] = {}

    def value(self, table: _Table, column: str, value: Any, depth: int = 0) -> Any:
        target = table.references.get(column)
        if target is not None and (target, value) in self.new_rows:
            return {"new": self.identity(target, value, depth + 1)}
        return value

    def identity(self, table_name: str, row_id: Any, depth: int = 0) -> str:
        cached = self.cache.get((table_name, row_id))
        if cached is not None:
            return cached
        if depth > 16:  # a reference cycle among new rows: stop at the table
            return f"{table_name}:cycle"
        table = self.tables[table_name]
        row = self.new_rows[(table_name, row_id)]
        content = self.content(table, row, depth)
        identity = hashlib.sha256(canonical([table_name, content]).encode()).hexdigest()[:16]
        self.cache[(table_name, row_id)] = identity
        return identity

    def content(self, table: _Table, row: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        skip = table.surrogate_column
        return {
            column: self.value(table, column, value, depth)
            for column, value in row.items()
            if column != skip
        }


def writes(diff: Mapping[str, Any] | None, given_keys: frozenset[str] = frozenset()):
    """The diff as a multiset of atomic writes (see module docstring)."""
    tables = _tables(diff, given_keys)
    ids = _Identities(tables)
    found: Counter[Write] = Counter()
    for table in tables.values():
        for row in table.added:
            found[Write("added", table.name, canonical(ids.content(table, row)))] += 1
        for row in table.removed:
            found[Write("removed", table.name, canonical(ids.content(table, row)))] += 1
        for item in table.changed:
            before, after = _get(item, "before") or {}, _get(item, "after") or {}
            key = canonical(_get(item, "key"))
            for column in sorted(set(before) | set(after)):
                if canonical(before.get(column)) != canonical(after.get(column)):
                    value = canonical(ids.value(table, column, after.get(column)))
                    found[Write("changed", table.name, key, column, value)] += 1
    return found


@dataclass
class StateComparison:
    """Gold writes against a run's writes: what matched, what is missing, what is extra."""

    expected: Counter[Write]
    made: Counter[Write]
    matched: Counter[Write] = field(default_factory=Counter)
    missing: Counter[Write] = field(default_factory=Counter)
    extra: Counter[Write] = field(default_factory=Counter)

    @property
    def same(self) -> bool:
        return not self.missing and not self.extra

    @property
    def credit(self) -> float:
        """Share of the requested writes made, extra writes counting against it; 0 when the
        task requested no write (leaving the state alone earns nothing)."""
        requested = sum(self.expected.values())
        if not requested:
            return 0.0
        return sum(self.matched.values()) / (requested + sum(self.extra.values()))

    def summary(self) -> str:
        requested = sum(self.expected.values())
        parts = [f"{sum(self.matched.values())}/{requested} requested writes made"]
        if self.missing:
            parts.append("missing: " + "; ".join(w.describe() for w in sorted(self.missing)[:3]))
        if self.extra:
            parts.append(
                f"{sum(self.extra.values())} writes not requested: "
                + "; ".join(w.describe() for w in sorted(self.extra)[:3])
            )
        return ", ".join(parts)


def given_key_tables(expected: Mapping[str, Any] | None, calls: list[Any]) -> frozenset[str]:
    """Tables where the gold run created a row with a key its own calls passed explicitly."""
    passed = {
        canonical(value)
        for call in calls or []
        for value in (_get(call, "arguments") or {}).values()
        if isinstance(value, int | str) and not isinstance(value, bool)
    }
    found = set()
    for table in _tables(expected).values():
        column = table.surrogate_column
        if column and any(canonical(row.get(column)) in passed for row in table.added):
            found.add(table.name)
    return frozenset(found)


def compare_diffs(
    expected: Mapping[str, Any] | None,
    actual: Mapping[str, Any] | None,
    given_keys: frozenset[str] = frozenset(),
):
    """Compare the gold run's diff with a run's diff, write by write."""
    gold, made = writes(expected, given_keys), writes(actual, given_keys)
    return StateComparison(gold, made, gold & made, gold - made, made - gold)


def row_pairs(expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None):
    """Diagnosis's view: gold rows missing, rows written wrongly, rows written but not asked.

    Returns {"missing", "wrong", "extra"}: lists of {"table", "op", "expected"/"actual"} with the
    original rows, paired by the same identities the reward uses.
    """
    gold_tables, got_tables = _tables(expected), _tables(actual)
    gold_ids, got_ids = _Identities(gold_tables), _Identities(got_tables)
    missing: list[dict[str, Any]] = []
    wrong: list[dict[str, Any]] = []
    extra: list[dict[str, Any]] = []
    empty = _Table("", [], False, {}, [], [], [])
    for name in sorted(set(gold_tables) | set(got_tables)):
        gold = gold_tables.get(name) or empty
        got = got_tables.get(name) or empty
        for op in ("added", "removed"):
            left = [(canonical(got_ids.content(got, r)), r) for r in getattr(got, op)]
            unmatched = []
            for row in getattr(gold, op):
                identity = canonical(gold_ids.content(gold, row))
                hit = next((i for i, (c, _) in enumerate(left) if c == identity), None)
                if hit is None:
                    unmatched.append(row)
                else:
                    left.pop(hit)
            for row in unmatched:
                if left:
                    wrong.append(
                        {"table": name, "op": op, "expected": row, "actual": left.pop(0)[1]}
                    )
                else:
                    missing.append({"table": name, "op": op, "expected": row})
            extra.extend({"table": name, "op": op, "actual": r} for _, r in left)
        gold_changed = {canonical(_get(c, "key")): c for c in gold.changed}
        got_changed = {canonical(_get(c, "key")): c for c in got.changed}
        for key, change in gold_changed.items():
            if key not in got_changed:
                missing.append({"table": name, "op": "changed", "expected": change})
                continue
            want = {
                c: canonical(gold_ids.value(gold, c, v))
                for c, v in (_get(change, "after") or {}).items()
            }
            have = {
                c: canonical(got_ids.value(got, c, v))
                for c, v in (_get(got_changed[key], "after") or {}).items()
            }
            if want != have:
                wrong.append(
                    {"table": name, "op": "changed", "expected": change, "actual": got_changed[key]}
                )
        extra.extend(
            {"table": name, "op": "changed", "actual": c}
            for k, c in got_changed.items()
            if k not in gold_changed
        )
    return {"missing": missing, "wrong": wrong, "extra": extra}
