"""Rows for a theme's database: the closest local data where one matches, else a generator.

`build_theme_database(model, target, candidates, rows, seed)` writes one SQLite database with a
table per entity of the theme model (declared keys and foreign keys, JSON columns for arrays and
embedded objects) and records provenance for every table:

- a table of a local data source (a built-in source's mined database, or an upload) whose
  columns match the entity's fields by name gives its rows, for the matched columns
  (kind "package" or "file");
- every value no source gives comes from a deterministic generator (seeded by the theme): the
  document's own enum values and examples (`example`, `examples`, `default`) first, then
  Faker chosen by the field's format and name (`fake_values`: names, emails, addresses,
  phones, dates, money, URLs), ids shaped like the document's example ids; it honours the
  field's type, pattern, minimum/maximum, min/max length, uniqueness of keys and references
  to other entities. Those tables or columns are recorded with kind "synthetic", with which
  fields came from the document's examples and which from Faker, so the console can say which
  rows are invented and how.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
import string
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.discovery.naming import plural, singular
from environments.discovery.schema import read_schema
from environments.discovery.sources.base import store_provenance
from environments.discovery.themes import resolve_refs

from .fake_values import FakeValues, looks_like_id, shaped_like
from .theme_contract import FORMAT_CHECKS, ITEM_TYPES
from .theme_model import (
    INT64_MAX,
    INT64_MIN,
    EntitySpec,
    FieldSpec,
    ThemeModel,
    entity_order,
    mirrored_columns,
    snake,
    words,
)
from .theme_patterns import matching_value
from .theme_values import schema_value

SYNTHETIC = "synthetic"
_NOUNS = (
    "amber apple atlas birch cedar comet coral delta ember falcon fern garnet harbor iris jade "
    "juniper kestrel lagoon lotus maple meadow nova onyx orchid pebble quartz raven river saffron "
    "sierra sparrow summit thistle topaz tundra umber valley willow zephyr"
).split()
_SENTENCE = (
    "checked updated reviewed prefers likes visited noted scheduled reported shared the a "
    "weekly monthly project meeting budget garden library kitchen travel notes plan draft"
).split()
_NAME_NAMES = ("name", "title", "label", "username", "nickname")


@dataclass
class Candidate:
    """A table of a local data source that may give an entity its rows."""

    label: str  # "built-in source airports" / "upload cities.csv"
    kind: str  # package | file
    db_path: str
    table: str


def candidate_tables(db_path: str | Path, label: str, kind: str) -> list[Candidate]:
    return [Candidate(label, kind, str(db_path), name) for name in read_schema(db_path)]


def builtin_matches(model: ThemeModel) -> list[str]:
    """Built-in sources whose name or title names an entity of the theme (airport ~ airports)."""
    from .request import builtin_sources

    entities = {n for n in model.entities} | {plural(n) for n in model.entities}
    found = []
    for spec in builtin_sources():
        names = {spec["name"], singular(spec["name"])} | {
            snake(d) for d in spec.get("datasets", [])
        }
        tail = {n.split("_")[-1] for n in names}
        if entities & (names | tail):
            found.append(spec["name"])
    return found


def _norm(name: str) -> str:
    return "".join(words(name))


def match_table(entity: EntitySpec, candidates: list[Candidate]) -> tuple[Candidate, dict] | None:
    """The candidate whose columns cover most of the entity's fields: (candidate, field->column)."""
    best: tuple[int, Candidate, dict] | None = None
    visible = [n for n, f in entity.fields.items() if not f.hidden and f.type != "object"]
    for candidate in candidates:
        with sqlite3.connect(f"file:{candidate.db_path}?mode=ro", uri=True) as conn:
            columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{candidate.table}")')]
        by_norm = {_norm(c): c for c in columns}
        mapping = {}
        for name in visible:
            column = by_norm.get(_norm(name))
            if column is None and _norm(name).startswith(_norm(entity.name)):
                column = by_norm.get(_norm(name)[len(_norm(entity.name)) :])
            if column is not None:
                mapping[name] = column
        table_named = singular(candidate.table) == entity.name or candidate.table == entity.table
        score = len(mapping) + (2 if table_named else 0)
        enough = len(mapping) >= 2 and len(mapping) * 2 >= len(visible)
        if (enough or (table_named and mapping)) and (best is None or score > best[0]):
            best = (score, candidate, mapping)
    return None if best is None else (best[1], best[2])


# --- the generator ------------------------------------------------------------------------------

# Where a generated value came from, for the provenance (`Generator.origins`).
FROM_EXAMPLE = "example"  # the document's example / examples / default
FROM_EXAMPLE_SHAPE = "example shape"  # an id varied from the document's example
FROM_ENUM = "enum"
FROM_PATTERN = "pattern"
FROM_REFERENCE = "reference"
FROM_RANGE = "named range"  # a natural range for the field's name (latitude, price)
FROM_FAKER = "faker"
FROM_TYPE = "type"  # the generator's own value for the type
FROM_SCHEMA = "schema"  # an object made from the document's schema of it
NESTED_DEPTH = 8  # `$ref`s resolved in a nested object's schema (recursion cut there)


class Generator:
    """Deterministic values for one theme (the same theme and seed give the same database).

    For each field: a reference takes a key of the entity it names; an enum its values; then
    the document's own examples (each first row one of them); then Faker by format and name
    (`fake_values`); then a plain value of the type. A `pattern` the value does not match is
    answered by a value made from the pattern, and min/max length and bounds are honoured.
    `origins` counts, per entity and field, where the values came from."""

    def __init__(self, seed: str, document: dict | None = None) -> None:
        self.seed = seed
        self.fake = FakeValues(seed)
        self.document = document or {}
        self.schemas: dict[tuple[str, str], dict] = {}  # (entity, field) -> resolved schema
        self.origins: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))

    def rng(self, *parts: Any) -> random.Random:
        digest = hashlib.sha256("/".join([self.seed, *map(str, parts)]).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def value(
        self,
        entity: EntitySpec,
        spec: FieldSpec,
        index: int,
        refs: dict[str, list],
        attempt: int = 0,
    ) -> Any:
        """One value; `attempt` > 0 asks for another one (a key already taken)."""
        parts: tuple = (entity.name, spec.name, index, *((attempt,) if attempt else ()))
        value, origin = self.choose(entity, spec, index, refs, parts, fresh=attempt > 0)
        self.origins[entity.name][spec.name][origin] += 1
        return value

    def choose(
        self,
        entity: EntitySpec,
        spec: FieldSpec,
        index: int,
        refs: dict[str, list],
        parts: tuple,
        fresh: bool = False,
    ) -> tuple[Any, str]:
        rng = self.rng(*parts)
        name = snake(spec.name)
        if spec.ref:
            keys = refs.get(spec.ref) or []
            if not keys:
                return None, FROM_REFERENCE
            if spec.ref == entity.name:  # a reference to an earlier row of the same table
                earlier = keys[:index]
                chosen = earlier[index % len(earlier)] if earlier and index % 3 else None
                return chosen, FROM_REFERENCE
            # the last row is never drawn: a row nothing refers to, which a delete can remove
            drawn = keys[:-1] if len(keys) > 1 else keys
            return drawn[(index * 7 + rng.randrange(3)) % len(drawn)], FROM_REFERENCE
        if spec.enum and spec.type != "array":
            return spec.enum[index % len(spec.enum)], FROM_ENUM
        examples = usable_examples(spec)
        if examples and not fresh and index < len(examples):
            return examples[index], FROM_EXAMPLE
        kind = spec.type
        if kind in ("integer", "number"):
            named = self.fake.number(spec.name, kind == "integer", spec.minimum, spec.maximum, rng)
            if named is not None:
                return named[0], FROM_RANGE
            return self.number(spec, name, rng), FROM_TYPE
        if kind == "boolean":
            return index % 2 == 0, FROM_TYPE
        if kind in ("date", "datetime"):
            return self.fake.date(spec.name, kind == "datetime", parts)[0], FROM_FAKER
        if kind == "array":
            return self.array(entity, spec, index, refs, rng, parts)
        if kind == "object":
            if spec.object_ref:
                rows = refs.get(spec.object_ref + ":rows") or []
                return (rows[index % len(rows)] if rows else {}), FROM_REFERENCE
            return self.nested(entity, spec, rng, parts), FROM_SCHEMA
        text, origin = self.string_value(entity, spec, index, rng, parts, examples, fresh)
        text = _fit_length(text, spec, rng)
        if spec.pattern and not _matches(spec.pattern, text):
            made = matching_value(spec.pattern, rng, spec.min_length, spec.max_length)
            return made, FROM_PATTERN  # the document's pattern
        return text, origin

    def nested(self, entity: EntitySpec, spec: FieldSpec, rng: random.Random, parts: tuple) -> Any:
        """An object (or list of objects) valid for the field's schema in the document: its
        nested required properties filled, however deep; strings by their property's name."""
        cached = (entity.name, spec.name)
        if cached not in self.schemas:
            self.schemas[cached] = resolve_refs(spec.schema, self.document, NESTED_DEPTH)
        schema = self.schemas[cached]
        if not schema:
            return [] if spec.type == "array" else {}

        def text(path: str) -> str:
            """Faker by the property's name, else a value like a column's of the thing the
            nested object is (`device.name` -> "Cedar device 12"), never a placeholder."""
            prop = path.rsplit(".", 1)[-1]
            faked = self.fake.string(prop, "", entity.name, (*parts, path))
            if faked:
                return faked[0]
            owner = path.rsplit(".", 2)[-2] if "." in path else spec.name
            local = self.rng(*parts, path)
            thing = EntitySpec(singular(snake(owner)) or entity.name)
            return self.string(thing, FieldSpec(prop), local.randrange(40), local)

        return schema_value(schema, rng, text=text, name=spec.name)

    def number(self, spec: FieldSpec, name: str, rng: random.Random) -> int | float:
        if spec.type == "integer":
            low = (
                int(spec.minimum)
                if spec.minimum is not None
                else (1 if "quant" in name or "count" in name else 0)
            )
            high = int(spec.maximum) if spec.maximum is not None else max(low + 10, 100)
            high = max(low, min(high, low + 10**6))  # near the bound, never past int64
            return rng.randint(low, high)
        low = float(spec.minimum) if spec.minimum is not None else 1.0
        high = float(spec.maximum) if spec.maximum is not None else 500.0
        high = max(low, min(high, low + 10**6))
        return round(rng.uniform(low, high), 2)

    def array(
        self,
        entity: EntitySpec,
        spec: FieldSpec,
        index: int,
        refs: dict[str, list],
        rng: random.Random,
        parts: tuple,
    ) -> tuple[list, str]:
        if spec.object_ref:
            keys = refs.get(spec.object_ref + ":rows") or []
            return [keys[(index + k) % len(keys)] for k in range(min(2, len(keys)))], FROM_REFERENCE
        if spec.items == "object":  # objects of a schema no entity keeps: made from it
            made = self.nested(entity, spec, rng, parts)
            return (made if isinstance(made, list) else []), FROM_SCHEMA
        count = 1 + rng.randrange(3)
        if spec.enum:
            chosen = {spec.enum[(index + k) % len(spec.enum)] for k in range(count)}
            return sorted(chosen, key=spec.enum.index), FROM_ENUM
        if spec.items in ("integer", "number"):
            return [rng.randint(1, 100) for _ in range(count)], FROM_TYPE
        if spec.items == "boolean":
            return [rng.random() < 0.5 for _ in range(count)], FROM_TYPE
        item = FieldSpec(singular(spec.name) or spec.name)  # `emails` holds emails
        values, origin = [], FROM_TYPE
        for k in range(count):
            faked = self.fake.string(item.name, "", entity.name, (*parts, k))
            if faked is None:
                values.append(self.text(rng, snake(spec.name), index, k))
            else:
                values.append(faked[0])
                origin = FROM_FAKER
        return values, origin

    def string_value(
        self,
        entity: EntitySpec,
        spec: FieldSpec,
        index: int,
        rng: random.Random,
        parts: tuple,
        examples: list,
        fresh: bool = False,
    ) -> tuple[str, str]:
        """Faker by format and name; else a value shaped like the document's example id (or,
        unless a fresh value is asked for, one of its examples); else the generator's own."""
        faked = self.fake.string(spec.name, spec.format, entity.name, parts)
        if faked is not None:
            return faked[0], FROM_FAKER
        shown = [e for e in examples if isinstance(e, str)]
        if shown:
            example = shown[index % len(shown)]
            if looks_like_id(example, spec.name):
                return shaped_like(example, rng), FROM_EXAMPLE_SHAPE
            if not fresh:
                return example, FROM_EXAMPLE
        return self.string(entity, spec, index, rng), FROM_TYPE

    def text(self, rng: random.Random, name: str, index: int, part: int = 0) -> str:
        count = 4 + rng.randrange(5)
        chosen = [_SENTENCE[rng.randrange(len(_SENTENCE))] for _ in range(count)]
        return f"{_NOUNS[(index + part) % len(_NOUNS)].capitalize()} " + " ".join(chosen)

    def string(self, entity: EntitySpec, spec: FieldSpec, index: int, rng: random.Random) -> str:
        """The generator's own value for a string Faker has no provider for."""
        name = snake(spec.name)
        noun = _NOUNS[(index * 11 + len(entity.name)) % len(_NOUNS)]
        if name in ("sha", "revision", "hash", "commit", "commit_sha") or name.endswith(
            ("_sha", "_hash")
        ):
            return hashlib.sha1(f"{self.seed}/{entity.name}/{index}".encode()).hexdigest()
        if name == "path" or name.endswith("_path"):
            return self.path(entity, index, noun)
        if name.split("_")[-1] in _NAME_NAMES or name in ("name", "title"):
            return f"{noun.capitalize()} {_named_thing(name, entity)} {index + 1}"
        if name.endswith(("_type", "type", "kind", "category")):
            return ("primary", "secondary", "archive", "shared")[index % 4]
        if name.endswith(("code", "_key", "key")):
            return f"{entity.name[:3].upper()}-{index + 1:04d}"
        return f"{noun}-{index + 1}"

    def path(self, entity: EntitySpec, index: int, noun: str) -> str:
        is_dir = any(w in entity.name for w in ("dir", "folder", "repo", "project"))
        if is_dir:
            return (
                f"/workspace/{noun}"
                if index < 4
                else f"/workspace/{_NOUNS[index % 4 * 11 % len(_NOUNS)]}/{noun}-{index}"
            )
        folder = _NOUNS[(index % 4) * 11 % len(_NOUNS)]
        return f"/workspace/{folder}/{noun}-{index + 1}.txt"

    def summary(self, entity: EntitySpec) -> str:
        """Which fields came from the document's examples and which from Faker, in words."""
        by_origin: dict[str, list[str]] = defaultdict(list)
        for field_name, counts in self.origins.get(entity.name, {}).items():
            for origin in counts:
                by_origin[origin].append(field_name)
        said = []
        for origin, label in (
            (FROM_EXAMPLE, "the document's examples"),
            (FROM_EXAMPLE_SHAPE, "ids shaped like the document's examples"),
            (FROM_ENUM, "the document's enums"),
            (FROM_PATTERN, "the document's patterns"),
            (FROM_FAKER, "Faker"),
            (FROM_RANGE, "ranges by field name"),
            (FROM_SCHEMA, "the document's object schemas"),
        ):
            if by_origin.get(origin):
                said.append(f"{label}: {_listed(by_origin[origin])}")
        return "; ".join(said)


# words before `_name` that say which name, not whose (`display_name`, `first_name`)
_NAME_KINDS = frozenset(
    {"display", "full", "first", "last", "given", "family", "nick", "short", "long", "friendly",
     "common", "legal", "screen", "real", "middle", "sur", "user", "file", "host", "domain"}
)  # fmt: skip


def _named_thing(column: str, entity: EntitySpec) -> str:
    """Whose name a name column holds, in words: the entity's own (`name`, `title`,
    `display_name`), or the thing it names (`resource_group_name` -> "resource group"), so a
    resource group is not called "Jade transformation 1"."""
    owner = column.split("_")[:-1]
    if not owner or owner[0] in _NAME_KINDS or "_".join(owner) == entity.name:
        return entity.name.replace("_", " ")
    return " ".join(owner)


def _listed(names: list[str], limit: int = 12) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def usable_examples(spec: FieldSpec) -> list[Any]:
    """The document's examples for a field that the field itself accepts (documents show
    examples that break their own patterns or types; those are left out)."""
    return [e for e in spec.examples if _example_fits(e, spec)]


def _example_fits(value: Any, spec: FieldSpec) -> bool:
    kind = spec.type
    if kind == "integer":
        fits = (
            isinstance(value, int)
            and not isinstance(value, bool)
            and INT64_MIN <= value <= INT64_MAX
        )
    elif kind == "number":
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind == "boolean":
        fits = isinstance(value, bool)
    elif kind == "array":
        wanted = ITEM_TYPES.get(spec.items)
        fits = isinstance(value, list) and not spec.object_ref and spec.items != "object"
        fits = fits and all(
            (wanted is None or isinstance(i, wanted)) and (not spec.enum or i in spec.enum)
            for i in value
        )
    elif kind == "object":
        fits = isinstance(value, dict) and not spec.object_ref
    else:
        fits = isinstance(value, str)
    if not fits:
        return False
    if spec.enum and kind != "array" and value not in spec.enum:
        return False
    if kind in ("integer", "number"):
        return (spec.minimum is None or value >= spec.minimum) and (
            spec.maximum is None or value <= spec.maximum
        )
    if isinstance(value, str):
        fmt = "date" if kind == "date" else "date-time" if kind == "datetime" else spec.format
        check = FORMAT_CHECKS.get(fmt)
        return (
            (spec.min_length is None or len(value) >= spec.min_length)
            and (spec.max_length is None or len(value) <= spec.max_length)
            and (not spec.pattern or _matches(spec.pattern, value))
            and (check is None or check.search(value) is not None)
        )
    return True


def _fit_length(text: str, spec: FieldSpec, rng: random.Random) -> str:
    """A string within the document's minLength/maxLength."""
    if spec.max_length is not None and len(text) > spec.max_length:
        text = text[: spec.max_length].rstrip() or text[: spec.max_length]
    if spec.min_length is not None and len(text) < spec.min_length:
        text += "".join(
            rng.choice(string.ascii_lowercase) for _ in range(spec.min_length - len(text))
        )
    return text


# --- the database -------------------------------------------------------------------------------


def _ddl(entity: EntitySpec, model: ThemeModel) -> str:
    parts, fks = [], []
    for name, spec in entity.fields.items():
        sql_type = spec.sql_type
        if spec.ref and spec.ref in model.entities:  # a reference has its target key's type
            target = model.entities[spec.ref]
            sql_type = (
                target.fields[target.key].sql_type if target.key in target.fields else sql_type
            )
        column = f'"{name}" {sql_type}'
        if name == entity.key:
            column += " PRIMARY KEY" if spec.sql_type == "INTEGER" else " PRIMARY KEY NOT NULL"
        parts.append(column)
        if spec.ref and spec.ref in model.entities:
            target = model.entities[spec.ref]
            fks.append(f'FOREIGN KEY ("{name}") REFERENCES "{target.table}" ("{target.key}")')
    return f'CREATE TABLE "{entity.table}" ({", ".join(parts + fks)})'


def build_theme_database(
    model: ThemeModel,
    target: str | Path,
    candidates: list[Candidate] | None = None,
    rows: int = 12,
    seed: str = "",
) -> dict[str, Any]:
    """Write the database; returns {"db_path", "provenance", "synthetic_tables", "matched"}."""
    target = Path(target)
    target.unlink(missing_ok=True)
    generator = Generator(seed or model.title, model.document)
    refs: dict[str, list] = {}
    provenance: list[dict[str, str]] = []
    matched: dict[str, str] = {}
    conn = sqlite3.connect(target)
    try:
        with conn:
            for entity in entity_order(model):
                conn.execute(_ddl(entity, model))
                source = match_table(entity, candidates or []) if candidates else None
                source_rows: list[dict] = []
                mapping: dict[str, str] = {}
                if source is not None:
                    candidate, mapping = source
                    with sqlite3.connect(f"file:{candidate.db_path}?mode=ro", uri=True) as src:
                        src.row_factory = sqlite3.Row
                        source_rows = [
                            dict(r)
                            for r in src.execute(
                                f'SELECT * FROM "{candidate.table}" LIMIT {max(rows, 1) * 4}'
                            )
                        ]
                count = min(len(source_rows), max(rows, 1) * 4) if source_rows else rows
                written = _fill(conn, entity, generator, count, refs, source_rows, mapping)
                keys = [row[entity.key] for row in written]
                refs[entity.name] = keys
                refs[entity.name + ":rows"] = [
                    {k: v for k, v in row.items() if not entity.fields[k].hidden} for row in written
                ]
                generated = [
                    n for n, f in entity.fields.items() if n not in mapping and not f.hidden
                ]
                if source is not None:
                    candidate = source[0]
                    matched[entity.table] = f"{candidate.label}: {candidate.table}"
                    provenance.append(
                        {
                            "table": entity.table,
                            "source": candidate.label,
                            "kind": candidate.kind,
                            "detail": f"columns {', '.join(f'{k}<-{v}' for k, v in mapping.items())} "
                            f"from table {candidate.table}",
                        }
                    )
                    if generated:
                        provenance.append(
                            {
                                "table": entity.table,
                                "source": "theme generator",
                                "kind": SYNTHETIC,
                                "detail": f"columns {', '.join(generated)} generated (seed "
                                f"{generator.seed!r})" + _said(generator.summary(entity)),
                            }
                        )
                else:
                    provenance.append(
                        {
                            "table": entity.table,
                            "source": "theme generator",
                            "kind": SYNTHETIC,
                            "detail": f"{len(written)} rows generated from the theme's schema "
                            f"({', '.join(entity.origins[:3]) or 'tool parameters'}; seed "
                            f"{generator.seed!r}): types, formats, enums and references honoured"
                            + _said(generator.summary(entity)),
                        }
                    )
            store_provenance(conn, provenance)
        _drop_dangling_references(conn)
    finally:
        conn.close()
    return {
        "db_path": str(target),
        "provenance": provenance,
        "synthetic_tables": sorted(
            {
                p["table"]
                for p in provenance
                if p["kind"] == SYNTHETIC and "rows generated" in p["detail"]
            }
        ),
        "matched": matched,
    }


def _said(summary: str) -> str:
    return f"; values from {summary}" if summary else ""


def _drop_dangling_references(conn: sqlite3.Connection) -> None:
    """A reference no row answers becomes NULL (an optional link left out), so the database
    always keeps its own foreign keys; a key that is itself a dangling reference cannot be
    emptied, and the build says which table and column."""
    problems = conn.execute("PRAGMA foreign_key_check").fetchall()
    with conn:
        for table, rowid, parent, fk_id in problems:
            links = {row[0]: row[3] for row in conn.execute(f'PRAGMA foreign_key_list("{table}")')}
            column = links.get(fk_id)
            try:
                conn.execute(f'UPDATE "{table}" SET "{column}" = NULL WHERE rowid = ?', (rowid,))
            except sqlite3.IntegrityError as exc:
                raise ValueError(
                    f"the generated rows of {table} cannot refer to {parent}: column {column} "
                    f"is both the key and a reference ({exc})"
                ) from exc


def _fill(
    conn: sqlite3.Connection,
    entity: EntitySpec,
    generator: Generator,
    count: int,
    refs: dict[str, list],
    source_rows: list[dict],
    mapping: dict[str, str],
) -> list[dict]:
    written: list[dict] = []
    seen_keys: set = set()
    key_spec = entity.fields[entity.key]
    mirrored = {
        f: c for f, c in mirrored_columns(entity).items() if f not in mapping and c not in mapping
    }
    for index in range(count):
        row: dict[str, Any] = {}
        source = source_rows[index] if index < len(source_rows) else None
        for name, spec in entity.fields.items():
            value = None
            if (
                name == entity.key
                and key_spec.type == "integer"
                and name not in mapping
                and not key_spec.enum  # an enum key takes the document's values
            ):
                value = index + 1
            elif source is not None and name in mapping:
                value = _coerce(source.get(mapping[name]), spec)
            left_out = spec.ref and spec.nullable and not spec.required and index % 4 == 3
            if value is None and not left_out:  # an optional link, where the document allows
                value = generator.value(
                    entity, spec, index, refs | {entity.name: [r[entity.key] for r in written]}
                )
            row[name] = value
        key = row[entity.key]
        for attempt in range(1, 6):  # a key already taken: ask again (another Faker value)
            if key_spec.enum or key_spec.type == "integer":
                break
            if key is not None and _store(key, key_spec) not in seen_keys:
                break
            key = row[entity.key] = generator.value(entity, key_spec, index, refs, attempt)
        if key is None or _store(key, key_spec) in seen_keys:
            if key_spec.enum:  # every value the document allows is taken: no more rows
                break
            if key_spec.pattern:
                key = _fresh_match(key_spec.pattern, generator, entity, index, seen_keys)
                if key is None:
                    break
            elif key_spec.type == "integer":
                key = max([k for k in seen_keys if isinstance(k, int)], default=0) + 1
            else:
                base, suffix = f"{key or entity.name}", index + 1
                while f"{base}-{suffix}" in seen_keys:
                    suffix += count
                key = f"{base}-{suffix}"
            row[entity.key] = key
        seen_keys.add(_store(key, key_spec))
        for name, column in mirrored.items():  # one thing named twice: the key's value wins
            if column == entity.key:
                row[name] = row[column]
            else:
                row[column] = row[name]
        written.append(row)
        columns = ", ".join(f'"{n}"' for n in row)
        marks = ", ".join("?" for _ in row)
        conn.execute(
            f'INSERT INTO "{entity.table}" ({columns}) VALUES ({marks})',
            [_store(v, entity.fields[n]) for n, v in row.items()],
        )
    return written


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True  # a pattern Python cannot read constrains nothing we can check


def _fresh_match(
    pattern: str, generator: Generator, entity: EntitySpec, index: int, taken: set
) -> str | None:
    """A key matching the document's pattern that no earlier row holds."""
    spec = entity.fields[entity.key]
    for attempt in range(20):
        rng = generator.rng(entity.name, "key", index, attempt)
        value = matching_value(pattern, rng, spec.min_length, spec.max_length)
        if value is not None and value not in taken:
            return value
    return None


def _coerce(value: Any, spec: FieldSpec) -> Any:
    if value is None:
        return None
    if spec.enum and value not in spec.enum:
        return None
    if spec.pattern and isinstance(value, str) and not _matches(spec.pattern, value):
        return None
    try:
        if spec.type == "integer":
            return int(value)
        if spec.type == "number":
            return float(value)
        if spec.type == "boolean":
            return bool(value)
        if spec.type in ("date", "datetime"):
            text = str(value)
            return text if re.match(r"^\d{4}-\d{2}-\d{2}", text) else None
        if spec.type in ("array", "object"):
            return None
    except (TypeError, ValueError):
        return None
    return str(value)


def _store(value: Any, spec: FieldSpec) -> Any:
    if (spec.type in ("array", "object") and value is not None) or isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True, default=str)  # a document's list example
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return str(value)  # an SQLite INTEGER holds int64; a larger enum value stays text
    if spec.type == "boolean" and value is not None:
        return 1 if value else 0
    return value
