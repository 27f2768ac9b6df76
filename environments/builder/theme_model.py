"""What a theme says about its world, as types: its entities and fields, and one plan per tool.

`FieldSpec` and `EntitySpec` describe the database a theme implies (an entity is a table, its
fields the columns, one of them the key); `ToolPlan` says how one theme tool acts on it (its
operation kind, the entity, which column every parameter binds to, the output shape, or why it
was rejected); `ThemeModel` holds them all. The readers fill it: `theme_reading.read_theme` is
the entry (with `theme_openapi`, `theme_prd` and `theme_plans`); this module imports none of them.

The tool surface is the theme's own: names, descriptions and parameter schemas are those a real
client of the server or API sees (MCP `inputSchema`, OpenAPI parameters + body). PRD features
have no parameter schema; theirs are derived from the entity and the operation and recorded so.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from environments.discovery.naming import plural, singular

from .theme_schemas import unbounded_pattern

if TYPE_CHECKING:
    from .theme_envelope import Envelope

SQL_TYPES = {
    "integer": "INTEGER",
    "number": "REAL",
    "boolean": "BOOLEAN",
    "string": "TEXT",
    "date": "DATE",
    "datetime": "DATETIME",
    "array": "JSON",
    "object": "JSON",
}
STATE_NAMES = ("status", "state", "phase", "stage")
QUANTIFIERS = {"multiple", "many", "all", "batch", "bulk", "several", "each", "the", "a"}


class ThemeModelError(ValueError):
    """The theme cannot be read into a schema at all (no entity, no tool)."""


def words(name: str) -> list[str]:
    """Lower-case words of a camelCase / snake_case / kebab-case name."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def snake(name: str) -> str:
    return "_".join(words(name)) or "field"


def entity_name(name: str) -> str:
    """The singular snake_case name of an entity ("Pets" -> pet, "entityTypes" -> entity_type)."""
    parts = [w for w in words(name) if w not in QUANTIFIERS] or words(name) or ["item"]
    return singular("_".join(parts))


def named_key_column(param: str, entity: EntitySpec) -> str | None:
    """The key column a parameter names for this entity (petId -> id, branch_name -> name):
    a tool given `param` finds the entity's row by that column."""
    tokens = words(param)
    ent = words(entity.name)
    if tokens[: len(ent)] == ent and len(tokens) == len(ent) + 1:
        suffix = tokens[-1]
        if suffix in entity.fields:
            return suffix
        if suffix in ("id", "key", "code", "path", "name"):
            if param in entity.fields:
                return param
            if suffix not in entity.fields and entity.key in entity.fields:
                return entity.key  # `notificationId` of a notification keyed by `name`
            return suffix
    if param in entity.fields and param == entity.key:
        return param
    return None


def mirrored_columns(entity: EntitySpec) -> dict[str, str]:
    """Columns that name one row twice: the key spelled like the parameter that names a row
    (`transformationName`) beside the column the tools find that row by (`name`), or the
    other way round -> {field: column}. Their values must agree, else a row the data holds
    is never found by its name. Only where one of the two is the key: a user's `user_name`
    beside its `name` are two names."""
    mirrored: dict[str, str] = {}
    for name, spec in entity.fields.items():
        column = named_key_column(name, entity)
        if column is None or column == name or column not in entity.fields:
            continue
        if entity.key not in (name, column):
            continue
        other = entity.fields[column]
        if spec.hidden or other.hidden or spec.type != other.type or spec.ref or other.ref:
            continue
        mirrored[name] = column
    return mirrored


# --- fields and entities --------------------------------------------------------------------


# types one value may be described by in two places (a bound or example holds for both)
KINDRED_TYPES = ({"integer", "number"}, {"date", "datetime"})


@dataclass
class FieldSpec:
    name: str  # the property name as the theme spells it (also the column name)
    type: str = "string"  # integer number boolean string date datetime array object
    format: str = ""
    enum: list[Any] = field(default_factory=list)
    pattern: str = ""  # the document's regular expression for a string value
    ref: str = ""  # entity whose key this field holds (a scalar reference)
    object_ref: str = ""  # entity this object (or array item object) embeds
    items: str = ""  # array item type
    description: str = ""
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    hidden: bool = False  # a surrogate key the theme never shows
    examples: list[Any] = field(default_factory=list)  # the document's example/examples/default
    min_length: int | None = None
    max_length: int | None = None
    nullable: bool = False  # the document allows null (`nullable`, a "null" type or option)
    # the document's schema of an object or array value (its `$ref`s resolved against
    # `ThemeModel.document` when values are made): nested required properties are kept
    schema: dict[str, Any] = field(default_factory=dict)

    @property
    def sql_type(self) -> str:
        return SQL_TYPES.get(self.type, "TEXT")

    def merge(self, other: FieldSpec) -> None:
        """Fill what this field lacks from another description of the same field. Values'
        constraints (enum, pattern, format, examples, bounds) come only from a description of
        the same type: NetBox's `type` filter is a text of an enum, its rows' `type` an object
        {value, label}, and the object is no member of the text's enum."""
        if self.type == "string" and other.type != "string":
            self.type = other.type
            self.enum, self.examples, self.pattern, self.format = [], [], "", ""
            self.minimum = self.maximum = self.min_length = self.max_length = None
        for attr in ("ref", "object_ref", "items", "description", "schema"):
            if not getattr(self, attr) and getattr(other, attr):
                setattr(self, attr, getattr(other, attr))
        self.required = self.required or other.required
        self.nullable = self.nullable or other.nullable
        if other.type != self.type and {self.type, other.type} not in KINDRED_TYPES:
            return
        for attr in ("format", "pattern"):
            if not getattr(self, attr) and getattr(other, attr):
                setattr(self, attr, getattr(other, attr))
        if not self.enum and other.enum:
            self.enum = list(other.enum)
        self.examples += [e for e in other.examples if e not in self.examples]
        for attr in ("minimum", "maximum", "min_length", "max_length"):
            if getattr(self, attr) is None:
                setattr(self, attr, getattr(other, attr))


@dataclass
class EntitySpec:
    name: str
    fields: dict[str, FieldSpec] = field(default_factory=dict)
    key: str = ""
    origins: list[str] = field(default_factory=list)

    @property
    def table(self) -> str:
        return plural(self.name)

    def add(self, spec: FieldSpec) -> FieldSpec:
        """The field, merged into one already there under the same name in any case (SQLite
        column names ignore case: a path `name` and a body `Name` are one column)."""
        existing = self.column(spec.name)
        if existing is not None:
            existing.merge(spec)
            return existing
        self.fields[spec.name] = spec
        return spec

    def column(self, name: str) -> FieldSpec | None:
        """The field a name means: the same spelling, else the same name in another case."""
        if name in self.fields:
            return self.fields[name]
        lowered = str(name).lower()
        return next((f for n, f in self.fields.items() if n.lower() == lowered), None)

    def state_field(self) -> FieldSpec | None:
        for spec in self.fields.values():
            if spec.enum and (
                spec.name.lower() in STATE_NAMES or snake(spec.name).endswith(STATE_NAMES)
            ):
                return spec
        return None

    def text_fields(self) -> list[str]:
        return [
            n
            for n, f in self.fields.items()
            if not f.hidden and (f.type == "string" or (f.type == "array" and f.items == "string"))
        ]


def column_name_ok(name: object) -> bool:
    """Whether a property's name can be a column: not empty, no quote or control character."""
    return (
        isinstance(name, str)
        and bool(name.strip())
        and '"' not in name
        and all(c.isprintable() for c in name)
    )


def _runnable_pattern(pattern: Any) -> str:
    """The document's pattern for generated values, unless `re` could take exponential time
    on it (`theme_schemas.unbounded_pattern`): then values follow the field's format alone."""
    if not isinstance(pattern, str) or unbounded_pattern(pattern):
        return ""
    return pattern


def field_from_schema(name: str, schema: dict, required: bool = False) -> FieldSpec:
    schema = schema if isinstance(schema, dict) else {}
    nullable = allows_null(schema)
    schema = plain_type(all_of(schema))
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null" and isinstance(k, str)), "string")
    if not isinstance(kind, str):  # `"type": {...}`: a property named type, not a JSON type
        kind = "string"
    enum = schema.get("enum") if isinstance(schema.get("enum"), list) else []
    if kind in ("integer", "number") and enum and all(isinstance(v, str) for v in enum):
        kind = "string"  # `type: integer` with `enum: ["Full-Time", ...]`: the values decide
    fmt = str(schema.get("format", ""))
    spec = FieldSpec(
        name=name,
        type=kind if kind in SQL_TYPES else "string",
        format=fmt,
        pattern=_runnable_pattern(schema.get("pattern")),
        enum=[v for v in schema.get("enum", []) if v is not None] if "enum" in schema else [],
        description=str(schema.get("description", ""))[:300],
        required=required,
        minimum=_bound(schema.get("minimum")),
        maximum=_bound(schema.get("maximum")),
        examples=schema_examples(schema),
        min_length=_length(schema.get("minLength")),
        max_length=_length(schema.get("maxLength")),
        nullable=nullable,
    )
    if spec.type == "string" and fmt in ("date", "date-time"):
        spec.type = "date" if fmt == "date" else "datetime"
    elif spec.type == "string" and not fmt and not spec.enum and not spec.pattern:
        spec.type = documented_date(spec.description) or spec.type
    if spec.type == "array":
        items = plain_type(schema.get("items") or {})
        spec.items = items.get("type", "string") if isinstance(items.get("type"), str) else "string"
        if items.get("enum"):
            spec.enum = list(items["enum"])
        if items.get("x-entity"):
            spec.object_ref = items["x-entity"]
    if spec.type == "object" and schema.get("x-entity"):
        spec.object_ref = schema["x-entity"]
    if spec.type in ("object", "array"):
        spec.schema = schema
    if spec.type == "number" and fmt in ("int32", "int64"):
        spec.type = "integer"
    return spec


_STANDARD_DATE = re.compile(r"\bRFC[\s-]?3339\b|\bISO[\s-]?8601\b", re.I)
_NOT_A_MOMENT = re.compile(r"\b(?:duration|period|interval|week|offset|time ?zone)\b", re.I)


def documented_date(description: str) -> str:
    """ "datetime" or "date" for a string field whose description says it holds an RFC 3339 or
    ISO 8601 moment ("Due date of the task (as a RFC 3339 timestamp)"), "" otherwise: many
    documents say a field's format in words instead of `format`, and such a field is filled
    and checked as the date it is, not as words."""
    if not _STANDARD_DATE.search(description) or _NOT_A_MOMENT.search(description):
        return ""
    if re.search(r"timestamp|date[- ]?time|\btime\b|hh:mm", description, re.I):
        return "datetime"
    return "date" if re.search(r"\bdate\b|YYYY-MM-DD", description, re.I) else "datetime"


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1  # what an SQLite INTEGER holds
MAX_EXAMPLES = 10


def schema_examples(schema: dict) -> list[Any]:
    """The values a schema shows: `example`, `examples` (a JSON-schema list, or an OpenAPI map
    of {value}), `x-example`, then `default`; each once, None left out."""
    found: list[Any] = []
    listed = schema.get("examples")
    if isinstance(listed, dict):
        listed = [v.get("value") if isinstance(v, dict) else v for v in listed.values()]
    candidates = [
        schema.get("example"),
        *(listed if isinstance(listed, list) else []),
        schema.get("x-example"),
        schema.get("default"),
    ]
    for value in candidates:
        if value is not None and value not in found and len(found) < MAX_EXAMPLES:
            found.append(value)
    return found


def allows_null(schema: dict) -> bool:
    """Whether a schema admits null: OpenAPI 3.0 `nullable`, a 3.1 type list with "null", or
    an anyOf/oneOf option of type null."""
    if schema.get("nullable") is True:
        return True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(o.get("type") == "null" for o in schema_options(schema))


def schema_options(schema: dict) -> list[dict]:
    """The alternatives of an anyOf/oneOf schema (none where the document gives no list)."""
    options = []
    for combiner in ("anyOf", "oneOf"):
        listed = schema.get(combiner)
        if isinstance(listed, list):
            options += [o for o in listed if isinstance(o, dict)]
    return options


def _length(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _bound(value: Any) -> float | None:
    """A minimum/maximum as a finite number within SQLite's int64 (1e30 -> int64 max)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if value != value:  # NaN
        return None
    return max(INT64_MIN, min(INT64_MAX, value))


def all_of(schema: dict) -> dict:
    """allOf [A, B] -> one schema with A's and B's keywords (a type and its description, as
    generated documents split them)."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        if isinstance(part, dict):
            part = all_of(part)
            merged.update({k: v for k, v in part.items() if k not in merged or k == "type"})
    return merged


def plain_type(schema: dict) -> dict:
    """anyOf/oneOf [X, null] -> X."""
    for combiner in ("anyOf", "oneOf"):
        options = schema.get(combiner)
        if isinstance(options, list):
            real = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
            if len(real) == 1:
                merged = {**schema, **real[0]}
                merged.pop(combiner, None)
                return merged
    return schema


# --- tool plans -------------------------------------------------------------------------------


@dataclass
class ToolPlan:
    name: str
    description: str
    parameters: dict
    operation: str = ""  # get get_many list create batch_create update delete batch_delete
    #                      transition append remove dump
    entity: str = ""
    kind: str = "read"
    bindings: dict[str, list] = field(default_factory=dict)  # param -> [role, column, ...]
    output: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    rejected: str = ""
    notes: list[str] = field(default_factory=list)
    derived_parameters: bool = False  # PRD features: parameters derived from the entity
    response_schema: dict = field(default_factory=dict)  # the document's result schema, if any
    original_name: str = ""  # the name the theme gives it, when not a callable function name
    envelope: Envelope | None = None  # where its rows sit in the document's response body

    def reject(self, reason: str) -> ToolPlan:
        self.rejected = reason
        return self

    def schema(self) -> dict:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ThemeModel:
    title: str
    entities: dict[str, EntitySpec] = field(default_factory=dict)
    plans: list[ToolPlan] = field(default_factory=list)
    kind: str = ""
    # the OpenAPI document the theme was read from: the target of `$ref`s in field schemas
    document: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def implementable(self) -> list[ToolPlan]:
        return [p for p in self.plans if not p.rejected]

    @property
    def rejected(self) -> list[ToolPlan]:
        return [p for p in self.plans if p.rejected]

    def entity(self, name: str) -> EntitySpec:
        """The entity named `name`, or the one already stored in the same table: two names with
        one plural (`data` and `datum`, `Person` and `people`) are one noun, and SQLite table
        names ignore case."""
        if name not in self.entities:
            table = EntitySpec(name).table.lower()
            same = next((e for e in self.entities.values() if e.table.lower() == table), None)
            if same is not None:
                return same
            self.entities[name] = EntitySpec(name)
        return self.entities[name]

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "kind": self.kind,
            "entities": {n: asdict(e) | {"table": e.table} for n, e in self.entities.items()},
            "plans": [asdict(p) for p in self.plans],
        }


# --- order -----------------------------------------------------------------------------------


def entity_order(model: ThemeModel) -> list[EntitySpec]:
    """Entities with every referenced entity before its referrers (cycles broken by name)."""
    done: list[str] = []
    pending = sorted(model.entities)
    while pending:
        progressed = False
        for name in list(pending):
            refs = {
                f.ref or f.object_ref
                for f in model.entities[name].fields.values()
                if (f.ref or f.object_ref) and (f.ref or f.object_ref) != name
            }
            if refs <= set(done):
                done.append(name)
                pending.remove(name)
                progressed = True
        if not progressed:
            done.append(pending.pop(0))
    return [model.entities[n] for n in done]
