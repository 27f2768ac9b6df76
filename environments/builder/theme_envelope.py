"""Where a tool's rows live in its document's response body, and what else the body says.

Real APIs rarely answer a bare list: `{"data": [...], "total": 12}`, `{"items": [...],
"nextToken": null}`, `{"result": {"records": [...], "count": 3}}`, `{"user": {...}}`. An
`Envelope` is read once from the document's 2xx JSON schema (`read_envelope`): the property path
to the rows (one or two levels; empty when the body is the rows themselves), whether they are a
list or one object, and every other property of the wrapping objects the answer fills, each with
a role: `total` (rows matching), `count` (rows returned), `has_more`, `next` (a page token the
tool reads back), `page`, `page_size`, `offset`, or `value` (a required property no data gives:
a value valid for its schema, the document's own example/default/enum first).

The generated tool wraps its rows in it at run time (`theme_prelude._th_envelope`, from
`Envelope.runtime()`), its unit tests find the rows with `rows_expr`, and the contract check
finds them with `rows_in` to check that counts and totals tell the truth about the rows.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from environments.discovery.naming import squashed
from environments.discovery.themes import flat_object

from .theme_model import all_of, allows_null, plain_type, schema_options, words
from .theme_values import schema_value, valid

ROLE_NAMES: dict[str, set[str]] = {
    "total": {
        "total", "totalcount", "totalresults", "totalitems", "totalrecords", "totalsize",
        "totalrows", "totalhits", "hits", "numfound", "totalelements", "totalentries",
        "matches", "totalmatches", "recordcount", "resultcount", "totalnumber",
    },
    "count": {
        "count", "size", "length", "numitems", "numresults", "itemcount", "resultscount",
        "returned", "numberofitems", "numberofelements", "resultsize", "pagecount_",
    },
    "has_more": {
        "hasmore", "more", "istruncated", "truncated", "hasnext", "hasnextpage", "morerecords",
        "moreresults", "moreavailable", "hasmoreitems", "hasmoreresults",
    },
    "next": {
        "next", "nexttoken", "nextpagetoken", "nextlink", "nextcursor", "cursor", "nextmarker",
        "marker", "continuationtoken", "nextcontinuationtoken", "nextpage", "odatanextlink",
        "nexturl", "nextpageurl", "pagetoken", "nextpagecursor", "endcursor", "nextkey",
        "lastevaluatedkey", "skiptoken", "nextskiptoken",
    },
    "page": {"page", "pagenumber", "currentpage", "pageindex", "pagenum"},
    "page_size": {"pagesize", "perpage", "limit", "maxresults", "maxitems", "pagelength"},
    "offset": {"offset", "skip", "start", "startindex", "from"},
    "done": {"success", "ok", "succeeded", "successful", "acknowledged"},
}  # fmt: skip
ROLE_TYPES = {
    "total": ("integer", "number"),
    "count": ("integer", "number"),
    "has_more": ("boolean",),
    "next": ("string", "integer"),
    "page": ("integer", "number"),
    "page_size": ("integer", "number"),
    "offset": ("integer", "number"),
    "done": ("boolean",),
}
ROW_WRAPPERS = ("data", "items", "results", "result", "records", "value", "values", "list", "rows")


@dataclass(frozen=True)
class EnvelopeField:
    """One property of the wrapping object(s) the answer fills, besides the rows."""

    path: tuple[str, ...]  # from the body's root
    role: str  # total | count | has_more | next | page | page_size | offset | done | value
    type: str = ""  # the schema's type (a page token is a string or an integer)
    required: bool = False
    nullable: bool = False
    value: Any = None  # for `value`, and what a required, non-nullable field falls back to


@dataclass(frozen=True)
class Envelope:
    """The shape of a document's response body around the rows of one entity."""

    rows: tuple[str, ...] = ()  # property path to the rows; () = the body is the rows
    many: bool = True  # a list of rows (else one row object)
    fields: tuple[EnvelopeField, ...] = ()
    no_null: tuple[str, ...] = ()  # row properties the document does not let be null

    @property
    def bare(self) -> bool:
        return not self.rows and not self.fields and not self.no_null

    def where(self) -> str:
        """ "data.items" / "the body" (for reports)."""
        return ".".join(self.rows) if self.rows else "the body"

    def runtime(self) -> dict[str, Any]:
        """The envelope as the generated tool's plan constant holds it (plain data)."""
        out = asdict(self)
        out["rows"] = list(self.rows)
        out["fields"] = [f | {"path": list(f["path"])} for f in out["fields"]]
        out["no_null"] = list(self.no_null)
        return out

    def rows_expr(self, var: str = "out") -> str:
        """A Python expression giving the rows (always a list) from an answer in `var`."""
        expr = var + "".join(f"[{p!r}]" for p in self.rows)
        return expr if self.many else f"[{expr}]"

    def rows_in(self, body: Any) -> list | None:
        """The rows of an answer, or None when the answer does not hold them where it says."""
        for prop in self.rows:
            if not isinstance(body, dict) or prop not in body:
                return None
            body = body[prop]
        if self.many:
            return body if isinstance(body, list) else None
        return [body] if isinstance(body, dict) else None

    def value_at(self, body: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
        """(present, value) of a property of the answer."""
        for prop in path:
            if not isinstance(body, dict) or prop not in body:
                return False, None
            body = body[prop]
        return True, body


# --- reading the document ----------------------------------------------------------------------


def _plain(schema: Any) -> dict:
    if not isinstance(schema, dict):
        return {}
    schema = flat_object(schema, {})
    return plain_type(all_of(schema)) if isinstance(schema, dict) else {}


def _kind(schema: dict) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "")
    if not kind and isinstance(schema.get("properties"), dict):
        return "object"
    if not kind and "items" in schema:
        return "array"
    return kind if isinstance(kind, str) else ""


def _nullable(schema: Any) -> bool:
    """Whether the schema lets a value be null (no type at all says nothing against it)."""
    if not isinstance(schema, dict):
        return True
    schema = all_of(schema)
    if schema.get("type") is None and not any(
        k in schema for k in ("anyOf", "oneOf", "enum", "const")
    ):
        return True
    if allows_null(schema):
        return True
    return any(o.get("nullable") for o in schema_options(schema))


def _overlap(schema: dict, fields: set[str]) -> int:
    """How many of the entity's fields an object schema has (case and spelling aside)."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    wanted = {squashed(f) for f in fields}
    return sum(1 for p in props if squashed(p) in wanted)


@dataclass
class _Candidate:
    path: tuple[str, ...]
    many: bool
    row_schema: dict
    score: tuple = field(default_factory=tuple)


def _candidates(schema: dict, entity: str, fields: set[str], depth: int = 0) -> list[_Candidate]:
    """Every place under an object schema that can hold rows: arrays of objects and objects,
    one or two levels deep."""
    found: list[_Candidate] = []
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    entity_words = {squashed(entity), squashed(entity) + "s", squashed(entity) + "es"}
    for prop, sub in props.items():
        sub = _plain(sub)
        kind = _kind(sub)
        named = 2 if squashed(prop) in entity_words else 1 if prop.lower() in ROW_WRAPPERS else 0
        if kind == "array":
            items = _plain(sub.get("items") or {})
            if _kind(items) == "object" or items.get("properties"):
                score = (_overlap(items, fields), named)
                found.append(_Candidate((prop,), True, items, score))
        elif kind == "object" and isinstance(sub.get("properties"), dict):
            found.append(_Candidate((prop,), False, sub, (_overlap(sub, fields), named)))
            if depth == 0:
                for inner in _candidates(sub, entity, fields, depth + 1):
                    found.append(
                        _Candidate((prop, *inner.path), inner.many, inner.row_schema, inner.score)
                    )
    return found


def read_envelope(
    schema: Any,
    entity: str,
    fields: set[str],
    many: bool,
    rng_seed: str = "",
    deleting: bool = False,
) -> Envelope | None:
    """The envelope of a response schema around the rows of `entity` (its column names
    `fields`), for a tool answering a list of rows (`many`) or one row (the one removed, when
    `deleting`). None when the schema says nothing usable (no JSON body, a scalar, no place the
    rows fit): the tool answers as before and the contract check says where it breaks the
    document."""
    body = _plain(schema)
    kind = _kind(body)
    if kind == "array":
        items = _plain(body.get("items") or {})
        return Envelope((), True, (), _no_null(items))
    if kind != "object" or not isinstance(body.get("properties"), dict):
        return None
    own = _overlap(body, fields)
    candidates = _candidates(body, entity, fields)
    lists = sorted((c for c in candidates if c.many), key=lambda c: c.score, reverse=True)
    objects = sorted((c for c in candidates if not c.many), key=lambda c: c.score, reverse=True)
    chosen: _Candidate | None = None
    if many:
        if lists and (lists[0].score[0] > 0 or lists[0].score[1] > 0 or own == 0):
            chosen = lists[0]
    else:
        if own > 0 and (not objects or own >= objects[0].score[0]):
            fixed = _fixed_fields(body, fields, deleting, random.Random(rng_seed or entity))
            return Envelope((), False, fixed, _no_null(body))
        best = [c for c in objects + lists if c.score[0] > own or (own == 0 and c.score[1])]
        best.sort(key=lambda c: (c.score, not c.many), reverse=True)
        chosen = best[0] if best else None
    if chosen is None:
        return None
    rng = random.Random(rng_seed or entity)
    wrapped: list[EnvelopeField] = []
    level, parent = body, ()
    for prop in chosen.path:
        wrapped += _fields_of(level, parent, skip=prop, rng=rng)
        level = _plain((level.get("properties") or {}).get(prop) or {})
        parent = (*parent, prop)
    return Envelope(chosen.path, chosen.many, tuple(wrapped), _no_null(chosen.row_schema))


def _fields_of(
    schema: dict, parent: tuple[str, ...], skip: str, rng: random.Random
) -> list[EnvelopeField]:
    """The properties of one wrapping object the answer fills: those with a paging role, and
    the required ones (a value valid for their schema)."""
    out = []
    required = set(schema.get("required") or [])
    for prop, raw in (schema.get("properties") or {}).items():
        if prop == skip:
            continue
        sub = _plain(raw)
        kind = _kind(sub)
        role = _role(prop, kind)
        nullable = _nullable(raw)
        if role is None and prop not in required:
            continue
        fallback = _value(sub, rng)
        out.append(
            EnvelopeField(
                (*parent, prop),
                role or "value",
                kind,
                prop in required,
                nullable,
                fallback,
            )
        )
    return out


def _fixed_fields(
    row_schema: dict, fields: set[str], deleting: bool, rng: random.Random
) -> tuple[EnvelopeField, ...]:
    """Required properties of a row body that the entity has no column for and the document
    fixes: a constant (`const`, a one-value enum), a `done` flag, a delete's `deleted`."""
    wanted = {squashed(f) for f in fields}
    out = []
    for prop in row_schema.get("required") or []:
        raw = (row_schema.get("properties") or {}).get(prop)
        if squashed(prop) in wanted or not isinstance(raw, dict):
            continue
        sub = _plain(raw)
        kind = _kind(sub)
        role = _role(prop, kind)
        if deleting and squashed(prop) == "deleted" and kind == "boolean":
            role = "done"
        constant = "const" in sub or (isinstance(sub.get("enum"), list) and len(sub["enum"]) == 1)
        if role == "done" or constant:
            value = _value(sub, rng)
            out.append(EnvelopeField((prop,), role or "value", kind, True, _nullable(raw), value))
    return tuple(out)


def bookkeeping(prop: str, kind: str) -> bool:
    """Whether a property of a list envelope pages or counts its rows (`nextPageToken`,
    `total`) rather than saying something of its own."""
    return _role(prop, kind) is not None


def _role(prop: str, kind: str) -> str | None:
    name = squashed(prop)
    for role, names in ROLE_NAMES.items():
        if name in names and kind in ROLE_TYPES[role]:
            return role
    if kind in ("integer", "number") and words(prop)[:1] == ["total"]:
        return "total"
    return None


def _value(schema: dict, rng: random.Random) -> Any:
    """A value the schema accepts: its example or default when valid, else one made from it."""
    for hint in (schema.get("example"), schema.get("default")):
        if hint is not None and valid(hint, schema):
            return hint
    value = schema_value(schema, rng)
    return value if valid(value, schema) else None


def _no_null(row_schema: dict) -> tuple[str, ...]:
    """Row properties whose schema does not allow null: a row leaves them out when empty."""
    props = row_schema.get("properties") if isinstance(row_schema.get("properties"), dict) else {}
    return tuple(p for p, s in props.items() if not _nullable(s))


# --- how many rows a body holds ------------------------------------------------------------------


def list_rows_property(schema: Any) -> str | None:
    """The property holding the rows when a body is a list envelope, else None.

    A list envelope wraps one array of objects in paging and bookkeeping only: Stripe's
    `{object: "list", data: [...], has_more, url}`, AWS's `{Certificates: [...], Marker}`,
    Azure's `{value: [...], nextLink}`. An object with one array among fields of its own (an
    order and its lines) is one row, not a list."""
    body = _plain(schema)
    props = body.get("properties") if isinstance(body.get("properties"), dict) else {}
    arrays, others = [], []
    for prop, raw in props.items():
        sub = _plain(raw)
        items = _plain(sub.get("items") or {}) if _kind(sub) == "array" else {}
        if items and (_kind(items) == "object" or items.get("properties")):
            arrays.append(prop)
        elif _role(prop, _kind(sub)) is None and not _constant(sub):
            others.append(prop)
    if len(arrays) != 1 or len(others) > 1:
        return None
    if others and arrays[0].lower() not in ROW_WRAPPERS and len(props) <= 2:
        return None  # {name, members: [...]}: a row with a list of its own
    return arrays[0]


def answers_many(schema: Any) -> bool | None:
    """Whether a response body holds a list of rows (a JSON array or a list envelope: True),
    one row (an object with no list of objects in it, two levels deep: False), or None when
    the schema does not say (no body, or an object holding lists besides fields of its own,
    which may be one row or a list in an envelope of another shape)."""
    body = _plain(schema)
    kind = _kind(body)
    if kind == "array":
        return True
    if kind == "object" and not body.get("properties"):
        return False  # a map (`additionalProperties`) or an object the document leaves open
    if kind != "object":
        return None
    if list_rows_property(body) is not None:
        return True
    if _lists_of_objects(body) > 1:
        return False  # an envelope holds one list: several make a row (`available`, `pending`)
    return None if _holds_lists(body, 2) else False


def _lists_of_objects(schema: dict) -> int:
    count = 0
    for raw in (schema.get("properties") or {}).values():
        sub = _plain(raw)
        items = _plain(sub.get("items") or {}) if _kind(sub) == "array" else {}
        count += bool(items) and (_kind(items) == "object" or bool(items.get("properties")))
    return count


def _holds_lists(schema: dict, depth: int) -> bool:
    """Whether an object schema has an array of objects among its properties, or inside a
    wrapper property (`Data`, `result`) `depth` deep."""
    for prop, raw in (schema.get("properties") or {}).items():
        sub = _plain(raw)
        if _kind(sub) == "array":
            items = _plain(sub.get("items") or {})
            if _kind(items) == "object" or items.get("properties"):
                return True
        elif (
            depth > 1
            and prop.lower() in ROW_WRAPPERS
            and isinstance(sub.get("properties"), dict)
            and _holds_lists(sub, depth - 1)
        ):
            return True
    return False


def single_object_property(schema: Any) -> str | None:
    """The property of a wrapper body holding one object and nothing else of its own
    (`{"ClusterMetadata": {...}}`, `{"user": {...}}`), else None."""
    body = _plain(schema)
    props = body.get("properties") if isinstance(body.get("properties"), dict) else {}
    own = [p for p, raw in props.items() if not _constant(_plain(raw))]
    own = [p for p in own if _role(p, _kind(_plain(props[p]))) is None]
    if len(own) == 1 and isinstance(_plain(props[own[0]]).get("properties"), dict):
        return own[0]
    return None


def _constant(schema: dict) -> bool:
    return "const" in schema or (isinstance(schema.get("enum"), list) and len(schema["enum"]) == 1)
