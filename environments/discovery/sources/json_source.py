"""JSON and JSON Lines documents -> related tables.

Shapes understood, at any depth:

- a list of objects -> a table (a top-level object whose values are such lists: one table each);
- an object keyed by id (a dict whose values are all objects of one shape, e.g.
  `{"products": {"9523456873": {...}}}`) -> a table with the key as a column (or, when every
  object repeats its key in a field such as `product_id`, that field);
- nested plain objects -> flattened columns (`address_city`);
- a nested keyed object or list of objects -> a child table `<parent>_<field>` (`order_items`)
  whose rows carry the parent's key as a foreign key column (`order_id`);
- a list of scalars -> a child table `(parent key, position, value)`; when every value is
  another table's key (a list of ids) it becomes a link table `(parent key, <target>_id)` keyed
  by both (by parent key and position when a list repeats a value), and when not, the
  provenance says why (`DatabaseBuilder.link_lists`);
- a model fixture (Django's dumpdata: a list of `{"model": "app.name", "pk": 1, "fields":
  {...}}`) -> one table per model (`FixtureLoader`): key `id`, fields as columns, a field of
  another model's pks a foreign key `<field>_id`, a list of them a link table;
- an object keyed by values of one ordered kind (ISO dates or datetimes, months `2024-05`,
  years) whose values are objects -> a series: rows with a typed column for the key (`date`,
  `month`, `year`, `time`), keyed by (parent key, that column), e.g. `flights.*.dates` ->
  `flight_dates(flight_number, date, status, prices_economy, ...)`; the objects need not share
  one shape (a cancelled day has no prices); such an object of plain values becomes
  `(parent key, date, value)` rows;
- a sparse option map (many distinct keys, mostly absent) -> a key/value child table
  `(parent key, key, value)` instead of columns; a table never gets more than `max_columns`
  columns: wider objects are reshaped the same way or refused naming the JSON path.

JSON strings stay TEXT (ids such as "9523456873", "0042" or "#W2378156" are never made
INTEGER), except ISO dates and datetimes. Foreign keys between the resulting tables are inferred
by value (every value of a column, or of a list child, is another table's key) when the builder
finishes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..naming import singular, squashed
from .base import (
    DatabaseBuilder,
    SourceError,
    TableSpec,
    _pick_primary_key,
    infer_type,
    sql_name,
)
from .limits import DEFAULT_LIMITS

_SCALARS = (str, int, float, bool, type(None))
SPARSE_MIN_KEYS = 8  # an object field with more distinct keys than this...
SPARSE_MAX_FILL = 0.5  # ...of which a record holds fewer than this share on average is sparse

# Keys of a series, by kind: the column they become and how a key is stored.
_SERIES_KINDS: tuple[tuple[str, re.Pattern, str], ...] = (
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}$"), "DATE"),
    (
        "time",
        re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$"),
        "DATETIME",
    ),
    ("month", re.compile(r"^\d{4}-(0[1-9]|1[0-2])$"), "TEXT"),
    ("year", re.compile(r"^(1[5-9]|2[0-9])\d{2}$"), "INTEGER"),
)


def read_json(path: Path, name: str | None = None) -> Any:
    path = Path(path)
    name = name or path.name
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{name}: cannot read as UTF-8 text ({exc})") from exc
    if not text.strip():
        raise SourceError(f"{name}: empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        what = "invalid JSON (the file looks truncated)" if truncated else "invalid JSON"
        raise SourceError(
            f"{name}: {what} at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError as exc:
        raise SourceError(f"{name}: JSON nested too deeply") from exc


def read_jsonl(path: Path, name: str | None = None) -> list[dict]:
    path = Path(path)
    name = name or path.name
    records = []
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SourceError(
                        f"{name}: line {line_no}: invalid JSON ({exc.msg} at column {exc.colno})"
                    ) from exc
                if not isinstance(record, dict):
                    raise SourceError(
                        f"{name}: line {line_no}: a JSON Lines record must be an object"
                    )
                records.append(record)
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{name}: cannot read as UTF-8 text ({exc})") from exc
    if not records:
        raise SourceError(f"{name}: no JSON records")
    return records


# ---------------------------------------------------------------------------------------------
# Shape analysis


@dataclass
class Node:
    # scalar, json, object, keyed, series, series_values, list_obj, list_scalar, kv, empty
    kind: str
    fields: dict[str, Node] = field(default_factory=dict)  # object: its fields
    fill: float = 1.0  # object: average share of its keys a record holds

    def width(self) -> int:
        if self.kind in ("scalar", "json"):
            return 1
        if self.kind == "object":
            return sum(n.width() for n in self.fields.values())
        return 0

    def has_children(self) -> bool:
        if self.kind == "object":
            return any(n.has_children() for n in self.fields.values())
        return self.kind in ("keyed", "series", "series_values", "list_obj", "list_scalar", "kv")


def _is_scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS)


def _id_like(key: str) -> bool:
    return any(ch.isdigit() for ch in key) or key.startswith("#")


def is_keyed_map(maps: list[dict]) -> bool:
    """Dicts whose values are all objects of one shape, keyed by ids (or many keys)."""
    entries = [(k, v) for m in maps for k, v in m.items()]
    if not entries or not all(isinstance(v, dict) and v for _, v in entries):
        return False
    keysets = [set(v) for _, v in entries]
    union = set().union(*keysets)
    common = set.intersection(*keysets)
    # One shape: most of every object's fields are shared by all (sparse extras allowed).
    shared = sum(len(k & common) for k in keysets) / max(1, sum(len(k) for k in keysets))
    if not common or shared < 0.5:
        return False
    if any(_id_like(k) for k, _ in entries):
        return True
    if any(any(str(v.get(f)) == k for f in v) for k, v in entries[:20]):
        return True  # the key repeated in a field
    distinct = {k for k, _ in entries}
    return len(distinct) >= 3 and len(union) >= 2


def series_kind(maps: list[dict]) -> str | None:
    """The kind of a series ("date", "time", "month", "year"): dicts keyed only by values of
    that ordered kind, whose values are all objects. None for anything else."""
    keys = [k for m in maps for k in m]
    if not keys or not all(isinstance(v, dict) and v for m in maps for v in m.values()):
        return None
    for kind, pattern, _ in _SERIES_KINDS:
        if all(isinstance(k, str) and pattern.match(k) for k in keys):
            return kind
    return None


def value_series_kind(maps: list[dict]) -> str | None:
    """Like `series_kind`, for dicts whose values are plain numbers or strings
    (`{"2024-05-01": 140, "2024-05-02": 152}`): at least two keys in all."""
    keys = [k for m in maps for k in m]
    if len(keys) < 2 or not all(_is_scalar(v) for m in maps for v in m.values()):
        return None
    for kind, pattern, _ in _SERIES_KINDS:
        if all(isinstance(k, str) and pattern.match(k) for k in keys):
            return kind
    return None


def series_key(kind: str, key: str) -> Any:
    """A series key as stored: years as numbers, dates and months as their ISO text."""
    return int(key) if kind == "year" else key


def series_type(kind: str) -> str:
    return next(sql_type for name, _, sql_type in _SERIES_KINDS if name == kind)


def analyze(values: list[Any]) -> Node:
    present = [v for v in values if v is not None]
    if all(_is_scalar(v) for v in present):
        return Node("scalar")
    if all(isinstance(v, dict) for v in present):
        if series_kind(present):
            return Node("series")
        if value_series_kind(present):
            return Node("series_values")
        if is_keyed_map(present):
            return Node("keyed")
        order: list[str] = []
        seen: set[str] = set()
        for value in present:
            for key in value:
                if key not in seen:
                    seen.add(key)
                    order.append(key)
        fields = {key: analyze([v.get(key) for v in present if key in v]) for key in order}
        fill = (
            sum(len(v) for v in present) / (len(present) * len(order)) if present and order else 1
        )
        return Node("object", fields, fill)
    if all(isinstance(v, list) for v in present):
        items = [item for v in present for item in v if item is not None]
        if not items:
            return Node("empty")
        if all(isinstance(i, dict) for i in items):
            return Node("list_obj")
        if all(_is_scalar(i) for i in items):
            return Node("list_scalar")
    return Node("json")


def _sparse(node: Node) -> bool:
    return (
        node.kind == "object"
        and not node.has_children()
        and len(node.fields) > SPARSE_MIN_KEYS
        and node.fill < SPARSE_MAX_FILL
    )


def _reshape(root: Node, extra: int, max_columns: int, path: str, source: str) -> None:
    """Sparse option maps -> key/value children; then the widest objects until the table fits."""

    def walk(node: Node):
        for name, child in node.fields.items():
            if child.kind == "object":
                yield node, name, child
                yield from walk(child)

    for parent, name, child in list(walk(root)):
        if _sparse(child):
            parent.fields[name] = Node("kv")
    while root.width() + extra > max_columns:
        candidates = [
            (child.width(), parent, name)
            for parent, name, child in walk(root)
            if not child.has_children() and child.width() > 1
        ]
        if not candidates:
            raise SourceError(
                f"{source}: {path} has {root.width() + extra} fields, more than the "
                f"{max_columns}-column limit of a table; nest them in objects or lists"
            )
        _, parent, name = max(candidates, key=lambda c: c[0])
        parent.fields[name] = Node("kv")


# ---------------------------------------------------------------------------------------------
# Tables


@dataclass
class Parent:
    table: str
    entity: str  # singular stem of the parent rows ("order")
    fk_column: str  # column in the child holding the parent's key ("order_id")
    ref_column: str  # the parent's key column


def _json_type(values: list[Any]) -> str:
    return infer_type(values, strings_hold_numbers=False)


class JsonLoader:
    def __init__(self, builder: DatabaseBuilder, source: str, name: str, max_columns: int):
        self.builder, self.source, self.name, self.max_columns = builder, source, name, max_columns
        self.specs: list[TableSpec] = []
        self.kind = "json"

    def table_name(self, raw: str) -> str:
        base = sql_name(raw)
        name, n = base, 2
        while name in self.builder.tables or name in (s.name for s in self.specs):
            name, n = f"{base}_{n}", n + 1
        return name

    # -- documents ------------------------------------------------------------------------------
    def document(self, document: Any, stem: str) -> list[TableSpec]:
        if isinstance(document, list):
            if not document:
                raise SourceError(
                    f"{self.name}: the JSON document is an empty list: nothing to ingest"
                )
            fixture = model_fixture(document)
            if fixture:
                FixtureLoader(self, *fixture).load(document)
            else:
                self.array(document, stem, "$")
        elif isinstance(document, dict):
            if not document:
                raise SourceError(
                    f"{self.name}: the JSON document is an empty object: nothing to ingest"
                )
            if series_kind([document]):
                kind = series_kind([document])
                self.collection(stem, list(document.items()), "$.*", None, series=kind)
            elif value_series_kind([document]):
                kind = value_series_kind([document])
                rows = [{kind: series_key(kind, k), "value": v} for k, v in document.items()]
                self.value_series(stem, rows, [kind], "$.*", None)
            elif is_keyed_map([document]):
                self.collection(stem, list(document.items()), "$.*", None)
            else:
                meta = {}
                for key, value in document.items():
                    path = f"$.{key}"
                    if isinstance(value, list) and value:
                        self.array(value, key, path)
                    elif isinstance(value, dict) and value and series_kind([value]):
                        kind = series_kind([value])
                        self.collection(key, list(value.items()), f"{path}.*", None, series=kind)
                    elif isinstance(value, dict) and value_series_kind([value]):
                        kind = value_series_kind([value])
                        rows = [{kind: series_key(kind, k), "value": v} for k, v in value.items()]
                        self.value_series(key, rows, [kind], f"{path}.*", None)
                    elif isinstance(value, dict) and value and is_keyed_map([value]):
                        self.collection(key, list(value.items()), f"{path}.*", None)
                    elif isinstance(value, list | dict) and not value:
                        continue
                    else:
                        meta[key] = value
                if meta:
                    name = stem if not self.specs else f"{stem}_info"
                    self.collection(name, [(None, meta)], "$", None)
        else:
            raise SourceError(f"{self.name}: the JSON document is a single value, not records")
        if not self.specs:
            raise SourceError(f"{self.name}: the JSON document holds no records")
        return self.specs

    def array(self, items: list, name: str, path: str) -> None:
        if all(isinstance(i, dict) for i in items):
            self.collection(name, [(None, i) for i in items], f"{path}[*]", None)
        elif all(_is_scalar(i) for i in items):
            rows = [{"position": n, "value": v} for n, v in enumerate(items, start=1)]
            spec = self.write(name, rows, "position", path, {"value": _json_type(items)})
            spec.list_of["value"] = name
        else:
            raise SourceError(
                f"{self.name}: {path} mixes objects and other values; expected a list of objects"
            )

    # -- one collection of records ---------------------------------------------------------------
    def collection(
        self,
        raw_name: str,
        items: list[tuple[str | None, dict]],
        path: str,
        parent: Parent | None,
        parent_values: list[Any] | None = None,
        entity: str | None = None,
        series: str | None = None,
    ) -> TableSpec | None:
        """One table from records (keyed by `items`' keys when given); `series` names the kind
        of ordered key ("date", ...) that becomes a typed column instead of an id."""
        records = [rec for _, rec in items]
        for rec in records:
            if not isinstance(rec, dict):
                raise SourceError(f"{self.name}: {path} holds a non-object item {rec!r:.60}")
        table = self.table_name(raw_name)
        entity = entity or singular(sql_name(raw_name))
        root = analyze(records)
        if root.kind != "object":  # records are objects, so analyze gives an object node
            root = Node("object", {}, 1.0)
        key_column = None
        keyed = any(k is not None for k, _ in items)
        if keyed:
            for fname in root.fields:
                if root.fields[fname].kind == "scalar" and all(
                    fname in rec and str(rec[fname]) == k for k, rec in items
                ):
                    key_column = sql_name(fname)
                    break
        extra_key = keyed and key_column is None
        if extra_key and series:
            key_column = series if series not in map(sql_name, root.fields) else f"{series}_key"
        elif extra_key:
            key_column = (
                f"{entity}_id"
                if f"{entity}_id" not in map(sql_name, root.fields)
                else f"{entity}_key"
            )
        extra = (1 if extra_key else 0) + (1 if parent else 0)
        _reshape(root, extra, self.max_columns, path, self.name)

        rows: list[dict[str, Any]] = []
        children: list[list[tuple[str, str, Node, Any]]] = []
        for index, (key, rec) in enumerate(items):
            row: dict[str, Any] = {}
            if parent:
                row[parent.fk_column] = parent_values[index]
            if extra_key:
                row[key_column] = series_key(series, key) if series else key
            found: list[tuple[str, str, Node, Any]] = []
            self.flatten(root, rec, "", row, found)
            rows.append(row)
            children.append(found)
        columns: list[str] = []
        for row in rows:
            for column in row:
                if column not in columns:
                    columns.append(column)
        if len(columns) > self.max_columns:
            raise SourceError(
                f"{self.name}: {path} makes {len(columns)} columns, more than the "
                f"{self.max_columns}-column limit of a table"
            )
        rows = [{c: r.get(c) for c in columns} for r in rows]
        types = {c: _json_type([r[c] for r in rows]) for c in columns}
        if series and extra_key:
            types[key_column] = series_type(series)
        if series and parent and not root.has_children():
            # A series under a parent: one row per (parent, date), keyed by both.
            key = [parent.fk_column, key_column]
            if len({(r[key[0]], r[key[1]]) for r in rows}) == len(rows):
                spec = self.write(table, rows, "", path, types, key)
                self.builder.declare_foreign_key(
                    spec.name, parent.fk_column, parent.table, parent.ref_column
                )
                return spec
        if key_column and len({r[key_column] for r in rows}) == len(rows):
            pk = key_column
        elif keyed or parent:
            pk = None  # keys unique only within their parent: a surrogate key
        else:
            avoid = {parent.fk_column} if parent else set()
            pk = _pick_primary_key(table, [c for c in columns if c not in avoid], rows, types)
        if pk is None:
            pk = "id" if "id" not in columns else f"{table}_rowid"
            for n, row in enumerate(rows, start=1):
                row[pk] = n
            types[pk] = "INTEGER"
            rows = [{pk: r.pop(pk), **r} for r in rows]
        spec = self.write(table, rows, pk, path, types)
        if parent:
            self.builder.declare_foreign_key(
                table, parent.fk_column, parent.table, parent.ref_column
            )
        # Children, grouped by the field that produced them.
        # The children's column for this table's key: a named key as it is ("order_id",
        # "item_id"), anything else qualified by this table ("country_alpha_2", "order_item_id").
        natural = pk != "id" and pk.endswith(("_id", "_key", "_code"))
        me_fk = pk if natural or pk.startswith(f"{entity}_") else f"{singular(table)}_{pk}"
        grouped: dict[str, tuple[str, Node, list]] = {}
        for row, found in zip(rows, children, strict=True):
            for column, field_path, node, value in found:
                grouped.setdefault(column, (field_path, node, []))[2].append((row[pk], value))
        for column, (field_path, node, pairs) in grouped.items():
            self.child(table, entity, pk, me_fk, column, field_path, node, pairs, path)
        return spec

    def flatten(self, node: Node, rec: dict, prefix: str, row: dict, found: list) -> None:
        for fname, sub in node.fields.items():
            column = f"{prefix}{sql_name(fname)}"
            value = rec.get(fname) if isinstance(rec, dict) else None
            if sub.kind == "scalar":
                row[column] = value
            elif sub.kind == "json":
                row[column] = None if value is None else json.dumps(value, sort_keys=True)
            elif sub.kind == "object":
                self.flatten(
                    sub, value if isinstance(value, dict) else {}, f"{column}_", row, found
                )
            elif sub.kind == "empty":
                continue
            elif value is not None:
                found.append((column, fname, sub, value))

    def child(self, table, entity, pk, fk, column, field_path, node, pairs, path) -> None:
        name = f"{entity}_{column}" if not column.startswith(f"{entity}_") else column
        parent = Parent(table, entity, fk, pk)
        child_entity = singular(column)
        sub_path = f"{path}.{field_path}"
        if node.kind in ("keyed", "series"):
            items, values = [], []
            for parent_key, mapping in pairs:
                for key, rec in mapping.items():
                    items.append((key, rec))
                    values.append(parent_key)
            series = series_kind([m for _, m in pairs]) if node.kind == "series" else None
            if items:
                self.collection(name, items, f"{sub_path}.*", parent, values, child_entity, series)
        elif node.kind == "list_obj":
            items, values = [], []
            for parent_key, lst in pairs:
                for rec in lst:
                    if rec is not None:
                        items.append((None, rec))
                        values.append(parent_key)
            if items:
                self.collection(name, items, f"{sub_path}[*]", parent, values, child_entity)
        elif node.kind == "list_scalar":
            rows = [
                {fk: parent_key, "position": n, "value": v}
                for parent_key, lst in pairs
                for n, v in enumerate(lst, start=1)
                if v is not None
            ]
            if rows:
                spec = self.scalar_child(name, rows, fk, parent, sub_path + "[*]")
                spec.list_of["value"] = field_path
        elif node.kind == "series_values":
            kind = value_series_kind([m for _, m in pairs])
            rows = [
                {fk: parent_key, kind: series_key(kind, key), "value": value}
                for parent_key, mapping in pairs
                for key, value in mapping.items()
            ]
            if rows:
                self.value_series(name, rows, [fk, kind], sub_path + ".*", parent)
        elif node.kind == "kv":
            rows = []
            for parent_key, mapping in pairs:
                for key, value in _leaves(mapping, ""):
                    rows.append({fk: parent_key, "key": key, "value": value})
            if rows:
                self.scalar_child(name, rows, fk, parent, sub_path + ".*")

    def value_series(
        self, raw: str, rows: list[dict], key: list[str], path: str, parent: Parent | None
    ) -> TableSpec:
        """A series of plain values -> (parent key, date, value) rows keyed by both, or
        (date, value) rows keyed by the date at the top of a document."""
        kind = key[-1]
        types = {"value": _json_type([r["value"] for r in rows]), kind: series_type(kind)}
        if parent is None:
            return self.write(self.table_name(raw), rows, kind, path, types)
        types[parent.fk_column] = self.builder.tables[parent.table].types[parent.ref_column]
        spec = self.write(self.table_name(raw), rows, "", path, types, key)
        self.builder.declare_foreign_key(
            spec.name, parent.fk_column, parent.table, parent.ref_column
        )
        return spec

    def scalar_child(
        self, raw: str, rows: list[dict], fk: str, parent: Parent, path: str
    ) -> TableSpec:
        table = self.table_name(raw)
        types = {c: _json_type([r.get(c) for r in rows]) for c in rows[0]}
        types[fk] = self.builder.tables[parent.table].types[parent.ref_column]
        pk = "id" if "id" not in rows[0] else f"{table}_rowid"
        rows = [{pk: n, **r} for n, r in enumerate(rows, start=1)]
        types[pk] = "INTEGER"
        spec = self.write(table, rows, pk, path, types)
        self.builder.declare_foreign_key(spec.name, fk, parent.table, parent.ref_column)
        return spec

    def write(
        self,
        table: str,
        rows: list[dict],
        pk: str,
        path: str,
        types: dict,
        key_columns: list[str] | None = None,
    ) -> TableSpec:
        table = self.table_name(table) if table in self.builder.tables else table
        try:
            spec = self.builder.add_table(
                table,
                rows,
                source=self.source,
                kind=self.kind,
                detail=f"{len(rows)} records from {path}",
                primary_key=pk or None,
                types=types,
                key_columns=key_columns,
            )
        except SourceError as exc:
            raise SourceError(f"{self.name}: {path}: {exc}") from exc
        except Exception as exc:  # sqlite3 errors: name the JSON path that produced the table
            raise SourceError(
                f"{self.name}: {path} -> table {table}: cannot be stored ({exc})"
            ) from exc
        spec.link_by_value = True
        self.specs.append(spec)
        return spec


# ---------------------------------------------------------------------------------------------
# Model fixtures: Django dumpdata and the like

_FIXTURE_TYPE_KEYS = ("model", "type")
_FIXTURE_KEY_KEYS = ("pk", "id")


def model_fixture(items: list) -> tuple[str, str] | None:
    """(type key, key key) when a list is a model fixture such as Django's dumpdata: every
    item is `{"model": "app.name", "pk": 1, "fields": {...}}` (or `type`/`id`) and nothing
    else; None for any other list."""
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for type_key in _FIXTURE_TYPE_KEYS:
        for key_key in _FIXTURE_KEY_KEYS:
            if all(
                set(i) == {type_key, key_key, "fields"}
                and isinstance(i[type_key], str)
                and i[type_key]
                and isinstance(i["fields"], dict)
                and _is_scalar(i[key_key])
                and i[key_key] is not None
                for i in items
            ):
                return type_key, key_key
    return None


class FixtureLoader:
    """One table per model (`chinook.track` -> `track`), keyed by its pk (column `id`), with
    the fields as columns. A field whose name names another model and whose values are all
    that model's pks is a foreign key stored as `<field>_id` (Django's own column); a field of
    lists of such pks (many-to-many) is a link table `(<model>_id, <other>_id)` keyed by both."""

    def __init__(self, loader: JsonLoader, type_key: str, key_key: str):
        self.loader, self.type_key, self.key_key = loader, type_key, key_key
        self.tables: dict[str, str] = {}  # model label -> table
        self.keys: dict[str, set] = {}  # model label -> its pks
        self.pending: list[tuple[str, str, str]] = []  # (table, column, model it refers to)

    def load(self, items: list[dict]) -> None:
        by_model: dict[str, list[dict]] = {}
        for item in items:
            by_model.setdefault(item[self.type_key], []).append(item)
        for model, records in by_model.items():
            self.keys[model] = {r[self.key_key] for r in records}
        links: list[tuple[str, str, str, list]] = []
        for model, records in by_model.items():
            links += self.model_table(model, records)
        builder = self.loader.builder
        for table, column, model in self.pending:
            other = self.tables[model]
            builder.declare_foreign_key(table, column, other, builder.tables[other].primary_key)
        for model, field_name, target, pairs in links:
            self.link_table(model, field_name, target, pairs)

    def path(self, model: str) -> str:
        return f"$[?{self.type_key}=={model}]"

    def target(self, field_name: str, model: str, values: list) -> str | None:
        """The model a field refers to: its name names it (`album`, `media_type` for
        `mediatype`, `parent_category` for `category`) and every value is one of its pks."""
        name = squashed(field_name)
        if name.endswith("id") and len(name) > 2:
            name = name[:-2]
        names = {name, squashed(singular(field_name))}
        candidates = []
        for other in self.keys:
            other_name = squashed(other.rsplit(".", 1)[-1])
            named = other_name in names or (len(other_name) >= 3 and name.endswith(other_name))
            if named and values and set(values) <= self.keys[other]:
                candidates.append((other_name not in names, -len(other_name), other))
        return min(candidates)[2] if candidates else None

    def model_table(self, model: str, records: list[dict]) -> list[tuple[str, str, str, list]]:
        fields: list[str] = []
        for record in records:
            fields += [f for f in record["fields"] if f not in fields]
        key_column = "id" if "id" not in map(sql_name, fields) else "pk"
        renames, links, drop = {}, [], set()
        for field_name in fields:
            values = [r["fields"].get(field_name) for r in records]
            present = [v for v in values if v is not None]
            if present and all(_is_scalar(v) and not isinstance(v, bool) for v in present):
                target = self.target(field_name, model, present)
                column = f"{sql_name(field_name)}_id"
                if target and not sql_name(field_name).endswith("_id"):
                    if column not in map(sql_name, fields):
                        renames[field_name] = (column, target)
                elif target:
                    renames[field_name] = (sql_name(field_name), target)
            elif present and all(
                isinstance(v, list) and all(_is_scalar(i) and i is not None for i in v)
                for v in present
            ):
                flat = [i for v in present for i in v]
                target = self.target(field_name, model, flat)
                if target:
                    pairs = [
                        (r[self.key_key], v)
                        for r in records
                        for v in r["fields"].get(field_name) or []
                    ]
                    links.append((model, field_name, target, pairs))
                    drop.add(field_name)
        rows = []
        for record in records:
            row = {key_column: record[self.key_key]}
            for field_name, value in record["fields"].items():
                if field_name in drop:
                    continue
                row[renames[field_name][0] if field_name in renames else field_name] = value
            rows.append(row)
        raw = model.rsplit(".", 1)[-1]
        spec = self.loader.collection(raw, [(None, r) for r in rows], self.path(model), None)
        self.tables[model] = spec.name
        for column, target in renames.values():
            self.pending.append((spec.name, sql_name(column), target))
        return links

    def link_table(self, model: str, field_name: str, target: str, pairs: list) -> None:
        table, other = self.tables[model], self.tables[target]
        mine = f"{singular(table)}_id"
        theirs = f"{singular(other)}_id"
        if theirs == mine:
            theirs = f"{singular(sql_name(field_name))}_id"
        unique = list(dict.fromkeys(pairs))
        builder = self.loader.builder
        types = {mine: builder.tables[table].types[builder.tables[table].primary_key]}
        types[theirs] = builder.tables[other].types[builder.tables[other].primary_key]
        rows = [{mine: a, theirs: b} for a, b in unique]
        name = self.loader.table_name(f"{singular(table)}_{sql_name(field_name)}")
        spec = self.loader.write(
            name, rows, "", f"{self.path(model)}.fields.{field_name}[*]", types, [mine, theirs]
        )
        builder.declare_foreign_key(spec.name, mine, table, builder.tables[table].primary_key)
        builder.declare_foreign_key(spec.name, theirs, other, builder.tables[other].primary_key)


def _leaves(mapping: Any, prefix: str):
    if isinstance(mapping, dict):
        for key, value in mapping.items():
            yield from _leaves(value, f"{prefix}{key}" if not prefix else f"{prefix}.{key}")
    elif isinstance(mapping, list):
        yield prefix, json.dumps(mapping, sort_keys=True)
    else:
        yield prefix, mapping


def load_json(
    builder: DatabaseBuilder,
    path: Path,
    table: str | None = None,
    *,
    source: str | None = None,
    max_columns: int = DEFAULT_LIMITS.max_columns,
    lines: bool | None = None,
) -> list[TableSpec]:
    """Ingest a JSON document (or JSON Lines file) into related tables."""
    path = Path(path)
    name = source if source and ":" in source else Path(source or path).name
    if lines is None:
        lines = path.suffix.lower() in (".jsonl", ".ndjson")
    document = read_jsonl(path, name) if lines else read_json(path, name)
    loader = JsonLoader(builder, source or str(path), name, max_columns)
    loader.kind = "jsonl" if lines else "json"
    return loader.document(document, table or Path(name.split(":")[-1]).stem.split(".")[0])
