"""Arguments drawn from real rows: keys that exist, values that occur, fresh values for writes."""

from __future__ import annotations

import functools
import json
import random
import re
import string
from collections import Counter
from typing import Any

from environments.discovery.naming import is_serial_name, singular
from tasks.synthesis.environment_view import EnvironmentView

_UNSET = object()
UNSET = _UNSET  # what sample_param returns when no real value can be drawn


def coerce(value: Any, ptype: str) -> Any:
    """Fit a database value to the JSON type a parameter declares."""
    try:
        if ptype == "integer" and not isinstance(value, bool):
            return int(value)
        if ptype == "number" and not isinstance(value, bool):
            return float(value) if not isinstance(value, int) else value
        if ptype == "string":
            return value if isinstance(value, str) else str(value)
        if ptype == "boolean":
            return bool(value)
    except (TypeError, ValueError):
        return value
    return value


def _search_word(text: str, rng: random.Random) -> str:
    words = [w for w in re.findall(r"[A-Za-z0-9]{3,}", text)]
    return rng.choice(words) if words else text


def sample_param(view: EnvironmentView, p, rng: random.Random) -> Any:
    """A real value for a read parameter, or _UNSET when none can be drawn."""
    if p.role == "enum" and p.enum:
        return rng.choice(p.enum)
    if p.role in ("key", "value"):
        source = p.key or p.column
        value = view.sample_value(*source, rng) if source else None
        return _UNSET if value is None else coerce(value, p.type)
    if p.role in ("min", "max") and p.column:
        values = view.column_values(*p.column)
        if not values:
            return _UNSET
        half = len(values) // 2
        pool = values[: half + 1] if p.role == "min" else values[half:]
        return coerce(rng.choice(pool), p.type)
    if p.role == "text" and p.column:
        value = view.sample_value(*p.column, rng)
        return _UNSET if value is None else _search_word(str(value), rng)
    if p.role == "limit" and p.required:
        return int(p.maximum) if p.maximum else 50
    return _UNSET


def sample_arguments(
    view: EnvironmentView,
    node,
    rng: random.Random,
    fixed: dict[str, Any] | None = None,
    optional_rate: float = 0.0,
) -> dict[str, Any] | None:
    """Arguments for a read tool: ``fixed`` values win, required ones are drawn from real rows.

    Returns None when a required parameter cannot be drawn.
    """
    fixed = fixed or {}
    arguments: dict[str, Any] = {}
    together = one_row_values(view, node, rng, fixed)
    optional_left = 1 if optional_rate > 0 else 0  # one filter keeps results non-empty
    for name, p in node.params.items():
        if name in fixed:
            arguments[name] = fixed[name]
            continue
        if not p.required:
            if p.role in ("limit", "other") or p.orders:  # no filter: not an optional one
                continue
            if optional_left <= 0 or rng.random() >= optional_rate:
                continue
            optional_left -= 1
            if p.role in ("min", "max", "text") and p.column and is_serial_name(p.column[1]):
                continue  # "whose id is at least 45" narrows nothing a person cares about
        value = together[name] if name in together else sample_param(view, p, rng)
        if value is _UNSET:
            if p.required:
                return None
            continue
        arguments[name] = value
    if arguments.get("metric") == "sum" and is_non_additive(str(arguments.get("column", ""))):
        return None  # a total of latitudes or years answers nothing anyone asks
    return arguments


ROW_ROLES = ("key", "value")


def one_row_values(
    view: EnvironmentView, node, rng: random.Random, fixed: dict[str, Any]
) -> dict[str, Any]:
    """Values for the parameters that filter one table together, from one real row that
    agrees with the `fixed` ones. A nested path scopes a resource by several of its columns
    (subscription, resource group, job, name): drawn one by one, they almost never meet on a
    row and every call finds nothing. Empty when fewer than two required parameters share a
    table, or no row agrees."""
    on_table = Counter(
        p.column[0] for p in node.params.values() if p.required and p.role in ROW_ROLES and p.column
    )
    if not on_table:
        return {}
    table, count = on_table.most_common(1)[0]
    if count < 2 or table not in view.tables:
        return {}
    params = {
        name: p
        for name, p in node.params.items()
        if p.role in ROW_ROLES and p.column and p.column[0] == table
    }
    wanted = [p.column[1] for name, p in params.items() if p.required and name not in fixed]
    rows = [
        row
        for row in view.rows(table)
        if all(row.get(column) is not None for column in wanted)
        and all(
            coerce(row.get(p.column[1]), p.type) == fixed[name]
            for name, p in params.items()
            if name in fixed
        )
    ]
    if not rows:
        return {}
    row = rng.choice(rows)
    return {
        name: coerce(row[p.column[1]], p.type)
        for name, p in params.items()
        if name not in fixed and row.get(p.column[1]) is not None
    }


NON_ADDITIVE = frozenset(
    {"lat", "latitude", "lon", "lng", "longitude", "year", "zip", "zipcode", "postcode", "fips",
     "rank", "position", "ordinal", "index", "elevation", "altitude", "temperature", "temp"}
)  # fmt: skip


def is_non_additive(column: str) -> bool:
    """Whether adding a column's values over rows means nothing (coordinates, years, ranks,
    codes, temperatures): it may be compared or averaged, not totalled."""
    words = column.lower().replace("-", "_").split("_")
    return bool(words) and (words[-1] in NON_ADDITIVE or words[0] in ("lat", "lon", "temp"))


def fresh_value(view: EnvironmentView, table: str, column: str, ptype: str, rng) -> Any:
    """A value for a write: an occurring one for categorical columns, a new one otherwise."""
    info = view.tables[table]
    values = view.column_values(table, column)
    rows = max(1, len(view.rows(table)))
    if info.is_numeric(column) or ptype in ("integer", "number"):
        if not values:
            return rng.randint(1, 3)
        value = rng.choice(values)
        if isinstance(value, float) or ptype == "number":
            return round(float(value) * rng.choice((0.5, 0.8, 1.25, 1.5)) + 1, 2)
        return coerce(value, ptype)
    distinct = set(map(str, values))
    unique = len(distinct) == rows > 1  # every row its own value: no category
    if values and not unique and (len(values) < 0.5 * rows or len(distinct) <= 12):
        return coerce(rng.choice(values), ptype)  # categorical (a status, a code): seen values
    base = str(rng.choice(values)) if values else column
    moved = _shifted_date(base, rng)
    if moved is not None:
        return moved  # a date or timestamp stays one
    faked = _faked(table, column, distinct, rng)
    if faked is not None:
        return faked  # an email an address, a phone a phone number, a city a city
    if CODE_LIKE.fullmatch(base):
        # its own draw, seeded by the code: the walk's draws stay as they were
        reshaped = _reshaped(base, distinct, random.Random(f"{table}.{column}.{base}"))
        if reshaped is not None:
            return reshaped  # "PRT" -> "QZK", "U+0130" -> "U+7342": a code, not "new-PRT"
    return f"{base} II" if " " in base else f"new-{base}"


CODE_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._/-]{0,11}")


def _reshaped(code: str, taken: set[str], rng: random.Random) -> str | None:
    """Another code of the same shape (letters for letters in the same case, digits for
    digits, separators and a prefix before the last separator kept: "U+0130" -> "U+7342",
    "cus_8Fk2" -> "cus_3Qp7") that no row holds; None after a few tries."""
    cut = max(code.rfind(c) for c in "+._/-") + 1
    prefix, code = code[:cut], code[cut:]
    for _ in range(8):
        value = prefix + "".join(
            rng.choice(string.ascii_uppercase)
            if c.isupper()
            else rng.choice(string.ascii_lowercase)
            if c.islower()
            else rng.choice(string.digits)
            if c.isdigit()
            else c
            for c in code
        )
        if value not in taken:
            return value
    return None


@functools.cache
def _faker() -> Any:
    """One Faker for the process (building one loads every provider: too slow per value);
    each value seeds it afresh, so values do not depend on what was drawn before."""
    from faker import Faker

    return Faker("en_US")


def _faked(table: str, column: str, taken: set[str], rng: random.Random) -> str | None:
    """A new value the column's name asks Faker for (``email``, ``phone``, ``city``,
    ``street``), none the column holds yet; None where its name asks for no provider."""
    from environments.builder.fake_values import name_rule

    rule = name_rule(column, singular(table))
    if rule is None:
        return None
    fake = _faker()
    fake.seed_instance(rng.randint(0, 2**31))
    for _ in range(5):
        value = str(rule.make(fake))
        if value and value not in taken:
            return value
    return None


IDENTITY_WORDS = ("name", "title", "code", "iso", "abbr", "symbol", "label", "slug")


def is_identity(view: EnvironmentView, table: str, column: str) -> bool:
    """Whether a column is what a row is known by (its name, title, code, or any text unique
    to each row): a request changes a row's state, not what it is called."""
    info = view.tables[table]
    if column == info.key:
        return True
    words = column.lower().replace("-", "_").split("_")
    if words and words[-1] in IDENTITY_WORDS:
        return True
    if info.is_numeric(column):
        return False
    values = view.column_values(table, column)
    rows = len(view.rows(table))
    return rows > 3 and len(values) == rows


_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})([T ]\d{2}:\d{2}(:\d{2})?)?")


def _shifted_date(text: str, rng: random.Random) -> str | None:
    """An ISO date or datetime moved by a few days, same format; None for other text."""
    import datetime

    match = _DATE.match(text)
    if match is None or match.end() != len(text):
        return None
    try:
        day = datetime.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None
    moved = day + datetime.timedelta(days=rng.randint(1, 30))
    return moved.isoformat() + (match[4] or "")


def fresh_key(view: EnvironmentView, table: str, column: str, ptype: str, rng) -> Any:
    """An unused primary-key value (for create tools that take the key explicitly)."""
    values = view.column_values(table, column)
    if ptype == "integer" or all(isinstance(v, int) for v in values):
        return (max(values) if values else 0) + 1000 + rng.randint(0, 999)
    taken = set(map(str, values))
    while True:
        candidate = f"NEW{rng.randint(100, 99999)}"
        if candidate not in taken:
            return candidate


def write_arguments(
    view: EnvironmentView, node, rng: random.Random, fixed: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """Arguments for create/update/delete: real keys to act on, fresh values to write."""
    fixed = dict(fixed or {})
    entity = node.entity
    if not entity or node.action not in ("create", "update", "delete"):
        return _generic_write_arguments(view, node, rng, fixed)
    if node.action == "update" and entity in view.derived_tables:
        return None  # a count derived from other rows is not set by hand
    info = view.tables[entity]
    key = getattr(node, "row_key", None) or info.key  # a profiling group by its name
    arguments: dict[str, Any] = {}
    target = [n for n, p in node.params.items() if p.key == (entity, key) and p.column]
    identifying = [n for n in target if p_is_own_key(node.params[n], entity, key)]
    if node.action in ("update", "delete"):
        for name in identifying[:1]:
            p = node.params[name]
            arguments[name] = fixed.pop(name, _UNSET)
            if arguments[name] is _UNSET:
                arguments[name] = coerce(view.sample_value(entity, key, rng), p.type)
        if not arguments and any(p.required for p in node.params.values()):
            return None
    settable = [
        (n, p)
        for n, p in node.params.items()
        if n not in arguments
        and p.role != "limit"
        and (p.column or (p.required and p.role == "enum" and p.enum))  # a required `format`
    ]
    if node.action == "update":
        optional = [(n, p) for n, p in settable if not p.required and n not in fixed]
        stateful = [(n, p) for n, p in optional if not is_identity(view, *p.column)]
        optional = stateful or optional  # a price, a status, a stock: not a row's name
        chosen = {n for n, _ in rng.sample(optional, min(len(optional), rng.choice((1, 1, 2))))}
        settable = [(n, p) for n, p in settable if p.required or n in chosen or n in fixed]
    elif node.action == "delete":
        settable = [(n, p) for n, p in settable if p.required]
    current = _current_row(view, entity, key, arguments) if arguments else {}
    scopes = _scope_params(view, node, entity) if current else set()
    for name, p in settable:
        if name in fixed:
            arguments[name] = fixed.pop(name)
            continue
        if name in scopes and current.get(p.column[1]) is not None:
            arguments[name] = coerce(current[p.column[1]], p.type)  # where the row lives
            continue
        if node.action == "create" and not p.required and rng.random() < 0.5:
            continue
        for _draw in range(REDRAWS):  # an update sets a value the row does not hold already
            arguments[name] = _write_value(view, node, p, entity, key, rng)
            if p.column is None or arguments[name] != current.get(p.column[1], _UNSET):
                break
        else:
            if not p.required:
                del arguments[name]  # every draw is the value it holds: leave it alone
                continue
        if arguments.get(name, 0) is None:
            return None
    for name, p in node.params.items():
        if p.required and name not in arguments:
            return None
    return arguments


REDRAWS = 4


def _write_value(view: EnvironmentView, node, p, entity: str, key: str | None, rng) -> Any:
    if p.role == "enum" and p.enum:
        return rng.choice(p.enum)
    if p.type in ("array", "object") and p.column:
        return _structured_value(view, p, rng)
    if p.key and p.key != (entity, key):
        return coerce(view.sample_value(*p.key, rng), p.type)
    if p.key == (entity, key) and node.action == "create":
        return fresh_key(view, entity, key, p.type, rng)
    return coerce(fresh_value(view, *p.column, p.type, rng), p.type)


def _scope_params(view: EnvironmentView, node, entity: str) -> set[str]:
    """Parameters an update or delete finds its row by besides its key (the subscription,
    resource group and job of `/subscriptions/{s}/.../jobs/{j}/transformations/{t}`), as the
    build recorded them: they must hold the row's own values, never fresh ones."""
    operation = view.operations.get(node.name)
    if operation is None or operation.table != entity:
        return set()
    return {
        name
        for name, binding in operation.params.items()
        if binding.role == "filter"
        and name in node.params
        and (node.params[name].column or ("",))[0] == entity
    }


def _structured_value(view: EnvironmentView, p, rng) -> Any:
    """A list or object for a write, as a row of the data holds one (a JSON column's text read
    back): never its text with a word appended, which no schema of a list accepts. None when
    no row holds one of that shape."""
    wanted = list if p.type == "array" else dict
    values = []
    for value in view.column_values(*p.column):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        if isinstance(value, wanted):
            values.append(value)
    return rng.choice(values) if values else None


def _current_row(view: EnvironmentView, entity: str, key: str | None, arguments) -> dict:
    """The row an update or delete acts on, as the published state holds it ({} when not
    found)."""
    if not key or not arguments:
        return {}
    value = next(iter(arguments.values()))
    return next((r for r in view.rows(entity) if r.get(key) == value), {})


def p_is_own_key(p, entity: str, key: str) -> bool:
    """Whether a parameter names the entity row a write acts on (``id``, ``book_id``)."""
    return p.column == (entity, key) or p.name in ("id", f"{entity}_id")


def _generic_write_arguments(view: EnvironmentView, node, rng, fixed: dict[str, Any]):
    """A write tool with no recognised shape (place_order): real keys, plausible values."""
    arguments: dict[str, Any] = {}
    for name, p in node.params.items():
        if name in fixed:
            arguments[name] = fixed[name]
        elif not p.required:
            continue
        elif p.role == "enum" and p.enum:
            arguments[name] = rng.choice(p.enum)
        elif p.key:
            arguments[name] = coerce(view.sample_value(*p.key, rng), p.type)
        elif p.column:
            arguments[name] = coerce(fresh_value(view, *p.column, p.type, rng), p.type)
        else:
            return None
        if arguments[name] is None:
            return None
    return arguments
