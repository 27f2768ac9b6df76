"""Domain rules a database's own rows support, enforced by the generated write tools.

The generator reads these rules once from the real rows; the tools then refuse what the data
never shows. Everything here is deterministic: the same database always gives the same rules.

State columns
    A TEXT column that is not the key, not a link and not unique, with 2 to 12 distinct values
    and at most half as many distinct values as rows, is a *state column* when its name is or
    ends in status / stage / phase; when it is or ends in state and at least one value is a
    lifecycle word (so a `state` of US state codes is not one); or, whatever its name, when at
    least two and at least half of its values are lifecycle words (the lexicon below). A state
    column is never changed by `update_<entity>`; it changes only through transition tools, and
    create accepts only its observed values.

A transition the data shows (how `transitions` is built, first rule that applies)
    1. lifecycle: every observed value (lower-cased, spaces and hyphens as `_`) is a lifecycle
       word and at least one is a progress word. Progress words have a stage:
       0 open (pending, new, draft, submitted, ...) < 1 accepted (approved, confirmed, paid, ...)
       < 2 working (processing, in_progress, active, ...) < 3 moving (shipped, dispatched, ...)
       < 4 done (delivered, completed, closed, resolved, ...).
       A progress value moves forward to the observed values of the next observed stage only
       (pending -> processing, never pending -> delivered or delivered -> pending). Exit words
       (cancelled, rejected, failed, expired, ...) are reachable from every observed progress
       value below stage 4. After words (refunded, returned, reversed, archived) are reachable
       from the stage-4 values only. Exit and after values are terminal (no way out); stage-4
       values lead only to the observed after values.
    2. timestamp order: otherwise, when the table has a date/datetime column and every observed
       value appears on a row where it is set, values are ordered by their first appearance
       with the rows sorted by that column (then rowid); a value may move to any value after it
       in that order, except out of a value that looks terminal (an exit, after or stage-4
       word).
    3. free: otherwise every change between two different observed values is allowed, except
       out of a value that looks terminal.

Transition tools
    Each reachable target value gets `<verb>_<entity>(<key>)` when the value implies a verb
    (cancelled -> cancel, shipped -> ship, processing -> process; a short lexicon, then
    past-participle rules: -ied -> -y, doubled consonant, -ated/-ized/... keep their e, else
    drop -ed), the verb is not a generic tool verb (get, create, update, delete, ...) and the
    name is free; the other targets are reached through `set_<entity>_<column>(<key>,
    <column>)`. Every transition tool refuses a value outside the observed ones and a move from
    the row's current value that the transitions above do not allow, naming what is allowed.

Enumerated columns
    A TEXT column that is not a state column, not the key, not a link and not unique is an
    *enum* when it has 2 to `AW_ENUM_MAX_VALUES` (default 12) distinct values, at most
    `AW_ENUM_MAX_RATIO` (default 0.25: every value seen on four rows on average) distinct values per row, and its table has at least
    `AW_ENUM_MIN_ROWS` (default 10) rows, so a three-row table never makes every column an
    enum. The values must look like categories, not free text or identities: none longer than
    40 characters, on average at most 24 characters and 3 words, no e-mail address or link,
    not all identifiers (a digit and no space) or numbers, and the column name is not one of
    name / title / description / email / phone / address / note / comment / url / ... (see
    IDENTITY_NAMES), nor does it say the column holds an open set whose few observed values are
    only the ones this sample happens to have: places (country, state, city, location, origin,
    ...), codes and tickers (code, symbol, iata, ...), parties (company, brand, vendor, author,
    team, ...) -- see OPEN_SET_NAMES. Create and update accept only the observed values, named in the refusal
    and as `enum` in the JSON schema.

Declared rules (CHECK constraints)
    The table's own CREATE statement (`sqlite_master.sql`) is read by `sql_checks`:
    `CHECK ("col" IN ('a', 'b'))` is an enum, `CHECK ("col" >= 0)` / `> n` / `<= n` / `< n`
    a minimum or maximum (exclusive for `>` and `<`), `CHECK ("col" <> '')` a non-empty
    string. Unquoted names and `BETWEEN a AND b` (SQLite files, SQL scripts) are normalised to
    those forms first. A declared enum or bound replaces what the rows would suggest (a state
    column keeps its observed lifecycle: its transitions come from the rows).

Numeric bounds
    An INTEGER or REAL column (not the key, not a link) with at least 3 observed values keeps
    their sign: all >= 0 gives `minimum: 0`, all <= 0 gives `maximum: 0` (in the JSON schema and
    checked by create/update), unless its name says the sign is genuinely free (FREE_SIGN_NAMES:
    latitude, longitude, coordinates x/y/z, elevation, temperature, delta, change, difference,
    growth, offset, net, profit, loss, variance, anomaly, correlation, ...). Balances, amounts
    and prices keep their observed sign. A REAL column whose at least 10 observed values are
    all whole numbers takes whole numbers only. The observed range is shown in the schema
    ("observed 0 to 5,000"). Upper ranges are enforced only for bounded scales: a column named
    rating / score / stars / percent / pct (SCALE_NAMES) with at least 5 values, all >= 0, is
    capped at the smallest conventional top (5, 10 or 100; 1 for fractions named as percents)
    that holds every observed value. Other new rows may be larger than any seen so far.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from .schema import Table
from .sources.sql_checks import check_constraints

MAX_STATES = 12
STATE_NAMES = ("status", "state", "stage", "phase")
DONE_STAGE = 4

PROGRESS: dict[str, int] = {}
for _stage, _words in enumerate(
    (
        "draft new created open opened requested submitted pending planned scheduled queued "
        "waiting placed proposed applied todo to_do backlog unpaid awaiting_payment on_hold",
        "approved confirmed accepted authorized authorised paid assigned reviewed verified "
        "validated booked reserved ready",
        "processing in_progress active started running ongoing packed packing preparing "
        "picked in_review under_review testing",
        "shipped dispatched in_transit out_for_delivery sent released published departed",
        "delivered completed complete done fulfilled resolved closed finished succeeded "
        "successful settled arrived landed",
    )
):
    PROGRESS.update(dict.fromkeys(_words.split(), _stage))
EXITS = frozenset(
    "cancelled canceled rejected declined failed expired void voided withdrawn abandoned "
    "lost terminated denied aborted dropped".split()
)
AFTER = frozenset("refunded returned reversed archived charged_back".split())
LIFECYCLE = frozenset(PROGRESS) | EXITS | AFTER

VERBS = {
    "cancelled": "cancel",
    "canceled": "cancel",
    "shipped": "ship",
    "delivered": "deliver",
    "refunded": "refund",
    "approved": "approve",
    "closed": "close",
    "archived": "archive",
    "completed": "complete",
    "complete": "complete",
    "returned": "return",
    "processed": "process",
    "processing": "process",
    "confirmed": "confirm",
    "paid": "pay",
    "rejected": "reject",
    "declined": "decline",
    "accepted": "accept",
    "submitted": "submit",
    "published": "publish",
    "resolved": "resolve",
    "open": "open",
    "opened": "open",
    "reopened": "reopen",
    "started": "start",
    "in_progress": "start",
    "active": "activate",
    "inactive": "deactivate",
    "suspended": "suspend",
    "expired": "expire",
    "failed": "fail",
    "fulfilled": "fulfill",
    "dispatched": "dispatch",
    "assigned": "assign",
    "scheduled": "schedule",
    "settled": "settle",
    "void": "void",
    "voided": "void",
    "withdrawn": "withdraw",
    "verified": "verify",
    "finished": "finish",
    "sent": "send",
    "released": "release",
    "reviewed": "review",
    "authorized": "authorize",
    "authorised": "authorise",
    "packed": "pack",
    "terminated": "terminate",
    "booked": "book",
    "reserved": "reserve",
    "abandoned": "abandon",
    "aborted": "abort",
    "denied": "deny",
    "done": "finish",
    "on_hold": "hold",
    "in_transit": "dispatch",
}
GENERIC_VERBS = frozenset(
    "get search list aggregate create update delete set count find add remove new".split()
)
_KEEP_E = ("at", "iz", "is", "ur", "us", "os", "iv", "av", "ov", "ev", "uc", "rg", "ng", "ag")
FREE_SIGN_NAMES = frozenset(
    "lat latitude lon lng long longitude coord coords coordinate coordinates x y z elevation "
    "altitude temperature temp delta change diff difference offset profit loss net growth gain "
    "variance anomaly correlation coefficient".split()
)
SCALE_NAMES = frozenset("rating ratings score scores stars star percent percentage pct".split())
_PERCENT_NAMES = frozenset("percent percentage pct".split())
IDENTITY_NAMES = frozenset(
    "name names fullname firstname lastname surname email mail phone telephone mobile address "
    "street url link website description desc comment comments note notes remark remarks text "
    "message body summary title id uuid guid key token hash password".split()
)
OPEN_SET_NAMES = frozenset(
    "country countries nation state states province region city cities town location locations "
    "place places county district zip zipcode postal postcode airport origin destination "
    "departure arrival symbol ticker code codes iata icao isbn sku currency language locale "
    "timezone company companies brand vendor supplier manufacturer publisher author artist "
    "composer team player customer user owner host domain".split()
)
MIN_SCALE_VALUES = 5


@dataclass(frozen=True)
class EnumPolicy:
    """When a low-cardinality TEXT column is an enum (Django settings AW_ENUM_*)."""

    max_values: int = 12
    max_ratio: float = 0.25
    min_rows: int = 10


def enum_policy() -> EnumPolicy:
    """The thresholds from Django settings when configured, else the defaults."""
    try:
        from django.conf import settings

        if not settings.configured:
            return EnumPolicy()
        default = EnumPolicy()
        return EnumPolicy(
            int(getattr(settings, "AW_ENUM_MAX_VALUES", default.max_values)),
            float(getattr(settings, "AW_ENUM_MAX_RATIO", default.max_ratio)),
            int(getattr(settings, "AW_ENUM_MIN_ROWS", default.min_rows)),
        )
    except ImportError:
        return EnumPolicy()


@dataclass
class StateRule:
    column: str
    values: list[str]  # observed, in lifecycle / first-seen / alphabetical order
    transitions: dict[str, list[str]]
    how: str  # lifecycle | timestamp order by <column> | free
    tools: dict[str, str] = field(default_factory=dict)  # target value -> tool name
    set_tool: str = ""  # name of set_<entity>_<column> when some target has no verb tool

    def describe(self) -> str:
        """One line the agent reads: the allowed moves from every value."""
        parts = []
        for value in self.values:
            targets = self.transitions.get(value, [])
            parts.append(f"{value} -> {' | '.join(targets)}" if targets else f"{value}: final")
        return "; ".join(parts)

    def as_spec(self) -> dict:
        tools = sorted(set(self.tools.values()) | ({self.set_tool} if self.set_tool else set()))
        return {
            "values": self.values,
            "transitions": self.transitions,
            "how": self.how,
            "tools": tools,
        }


@dataclass
class TableRules:
    states: dict[str, StateRule] = field(default_factory=dict)
    # column -> {minimum, maximum, exclusive_minimum, exclusive_maximum, integer, min_length}
    bounds: dict[str, dict] = field(default_factory=dict)
    enums: dict[str, list] = field(default_factory=dict)  # column -> allowed values
    ranges: dict[str, tuple] = field(default_factory=dict)  # column -> observed (min, max)
    declared: set[str] = field(default_factory=set)  # columns whose rules a CHECK declares

    def spec(self) -> dict:
        return {
            "states": {c: r.as_spec() for c, r in self.states.items()},
            "bounds": self.bounds,
            "enums": self.enums,
        }


def normal(value: str) -> str:
    return re.sub(r"[\s\-]+", "_", value.strip().lower())


def looks_terminal(value: str) -> bool:
    word = normal(value)
    return word in EXITS or word in AFTER or PROGRESS.get(word) == DONE_STAGE


def verb_for(value: str) -> str | None:
    """The verb a target value implies (cancelled -> cancel), or None."""
    word = normal(value)
    if word in VERBS:
        return VERBS[word]
    if not re.fullmatch(r"[a-z]{4,}ed", word):
        return None
    if word.endswith("ied"):
        return word[:-3] + "y"
    stem = word[:-2]
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    if stem.endswith(_KEEP_E) or stem.endswith("e"):
        return stem if stem.endswith("e") else stem + "e"
    return stem


def _name_matches(column: str) -> str:
    lower = column.lower()
    return next((n for n in STATE_NAMES if lower == n or lower.endswith("_" + n)), "")


def _is_state(conn: sqlite3.Connection, table: Table, column: str, values: list[str]) -> bool:
    if table.column(column).kind != "text" or column == table.primary_key:
        return False
    if column in table.foreign_keys or column in table.unique:
        return False
    distinct = len(values)
    if not 2 <= distinct <= MAX_STATES or distinct * 2 > table.row_count:
        return False
    words = sum(1 for v in values if normal(v) in LIFECYCLE)
    name = _name_matches(column)
    if name in ("status", "stage", "phase"):
        return True
    if name == "state":
        return words >= 1
    return words >= 2 and words * 2 >= distinct


def _lifecycle(values: list[str]) -> tuple[list[str], dict[str, list[str]]] | None:
    words = {v: normal(v) for v in values}
    if not all(w in LIFECYCLE for w in words.values()):
        return None
    progress = [v for v in values if words[v] in PROGRESS]
    if not progress:
        return None
    stages = sorted({PROGRESS[words[v]] for v in progress})
    exits = sorted(v for v in values if words[v] in EXITS)
    after = sorted(v for v in values if words[v] in AFTER)
    transitions: dict[str, list[str]] = {}
    for v in progress:
        stage = PROGRESS[words[v]]
        if stage == DONE_STAGE:
            transitions[v] = list(after)
            continue
        later = [s for s in stages if s > stage]
        forward = sorted(p for p in progress if later and PROGRESS[words[p]] == later[0])
        transitions[v] = forward + exits
    for v in exits + after:
        transitions[v] = []
    ordered = sorted(progress, key=lambda v: (PROGRESS[words[v]], v)) + exits + after
    return ordered, transitions


def _timestamp_order(
    conn: sqlite3.Connection, table: Table, column: str, values: list[str]
) -> tuple[str, list[str]] | None:
    for stamp in (c.name for c in table.columns if c.kind in ("date", "datetime")):
        order: list[str] = []
        sql = (
            f'SELECT "{column}" FROM "{table.name}" WHERE "{stamp}" IS NOT NULL AND '
            f'"{column}" IS NOT NULL ORDER BY "{stamp}", rowid'
        )
        for (value,) in conn.execute(sql):
            if value not in order:
                order.append(value)
        if set(order) == set(values):
            return stamp, order
    return None


def _state_rule(conn: sqlite3.Connection, table: Table, column: str, values: list[str]):
    found = _lifecycle(values)
    if found is not None:
        ordered, transitions = found
        return StateRule(column, ordered, transitions, "lifecycle")
    timed = _timestamp_order(conn, table, column, values)
    if timed is not None:
        stamp, order = timed
        transitions = {
            v: ([] if looks_terminal(v) else order[i + 1 :]) for i, v in enumerate(order)
        }
        return StateRule(column, order, transitions, f"timestamp order by {stamp}")
    transitions = {v: ([] if looks_terminal(v) else [o for o in values if o != v]) for v in values}
    return StateRule(column, list(values), transitions, "free")


def _bounds(conn: sqlite3.Connection, table: Table, column: str) -> dict:
    """The observed sign (and whole-number and scale rules) of one numeric column."""
    kind = table.column(column).kind
    if column == table.primary_key or column in table.foreign_keys:
        return {}
    count, low, high, whole = conn.execute(
        f'SELECT COUNT("{column}"), MIN("{column}"), MAX("{column}"), '
        f'SUM(CASE WHEN "{column}" = CAST("{column}" AS INTEGER) THEN 1 ELSE 0 END) '
        f"FROM \"{table.name}\" WHERE typeof(\"{column}\") IN ('integer', 'real')"
    ).fetchone()
    if count < 3:
        return {}
    words = set(column.lower().split("_"))
    bound: dict = {}
    if not words & FREE_SIGN_NAMES:
        if low >= 0:
            bound["minimum"] = 0
        elif high <= 0:
            bound["maximum"] = 0
    if kind == "real" and count >= 10 and whole == count:
        bound["integer"] = True
    top = _scale_top(words, count, low, high, whole == count)
    if top is not None:
        bound["minimum"], bound["maximum"] = 0, top
    return bound


def _scale_top(words: set[str], count: int, low, high, whole: bool) -> int | None:
    """The top of a bounded scale (ratings, scores, percents) the column follows, or None."""
    if not words & SCALE_NAMES or count < MIN_SCALE_VALUES or low < 0:
        return None
    if words & _PERCENT_NAMES:
        if high <= 1 and not whole:
            return 1
        return 100 if high <= 100 else None
    return next((top for top in (5, 10, 100) if high <= top), None)


def _observed_range(conn: sqlite3.Connection, table: Table, column: str) -> tuple | None:
    low, high = conn.execute(
        f'SELECT MIN("{column}"), MAX("{column}") FROM "{table.name}" '
        f"WHERE typeof(\"{column}\") IN ('integer', 'real')"
    ).fetchone()
    return None if low is None else (low, high)


def _enum_values(
    conn: sqlite3.Connection, table: Table, column: str, policy: EnumPolicy
) -> list[str] | None:
    """The observed values of a categorical TEXT column, or None when it is not one."""
    if table.column(column).kind != "text" or column == table.primary_key:
        return None
    if column in table.foreign_keys or column in table.unique:
        return None
    distinct = table.distinct.get(column, 0)
    if not 2 <= distinct <= policy.max_values or table.row_count < policy.min_rows:
        return None
    if distinct > policy.max_ratio * table.row_count:
        return None
    words = set(column.lower().split("_"))
    if words & (IDENTITY_NAMES | OPEN_SET_NAMES):
        return None
    values = [
        r[0]
        for r in conn.execute(
            f'SELECT DISTINCT "{column}" FROM "{table.name}" '
            f'WHERE "{column}" IS NOT NULL ORDER BY "{column}"'
        )
    ]
    if not values or not all(isinstance(v, str) and v.strip() for v in values):
        return None
    return values if _categorical(values) else None


def _categorical(values: list[str]) -> bool:
    """Short labels, not prose, contacts, identifiers or numbers written as text."""
    lengths = [len(v) for v in values]
    if max(lengths) > 40 or sum(lengths) / len(values) > 24:
        return False
    if sum(len(v.split()) for v in values) / len(values) > 3:
        return False
    if any("@" in v or "://" in v for v in values):
        return False
    if all(_number(v) for v in values):
        return False
    return not all(any(ch.isdigit() for ch in v) and " " not in v for v in values)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_BARE = r'(?:"(?:[^"]|"")+"|`[^`]+`|\[[^\]]+\]|[A-Za-z_][A-Za-z0-9_]*)'
_NUM = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_BETWEEN = re.compile(rf"CHECK\s*\(\s*({_BARE})\s+BETWEEN\s+({_NUM})\s+AND\s+({_NUM})\s*\)", re.I)
_PLAIN = re.compile(rf"CHECK\s*\(\s*({_BARE})\s*(>=|>|<=|<|<>|!=|IN\b)", re.I)


def _quoted(name: str) -> str:
    if name.startswith('"'):
        return name
    return '"' + name.strip("`[]").replace('"', '""') + '"'


def normalised_checks(create_sql: str) -> str:
    """CHECK clauses rewritten to the quoted forms `sql_checks` reads: unquoted, `backtick`
    and [bracket] names double-quoted, `BETWEEN a AND b` as two bounds."""
    text = _BETWEEN.sub(
        lambda m: f"CHECK ({_quoted(m[1])} >= {m[2]}) CHECK ({_quoted(m[1])} <= {m[3]})",
        create_sql,
    )
    return _PLAIN.sub(lambda m: f"CHECK ({_quoted(m[1])} {m[2]}", text)


def declared_rules(conn: sqlite3.Connection, table: Table) -> dict[str, dict]:
    """Per column, the rules the table's CHECK constraints declare (`sql_checks`)."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table.name,)
    ).fetchone()
    if row is None or not row[0]:
        return {}
    names = {c.name for c in table.columns}
    found = check_constraints(normalised_checks(row[0]))
    return {c: r for c, r in found.items() if c in names}


def _apply_declared(rules: TableRules, declared: dict[str, dict]) -> None:
    """Declared CHECK rules replace the rules the rows suggest for the same column."""
    for column, rule in declared.items():
        rules.declared.add(column)
        if "enum" in rule and column not in rules.states:
            rules.enums[column] = list(rule["enum"])
        bound = dict(rules.bounds.get(column, {}))
        for side in ("minimum", "maximum"):
            if side in rule:
                bound[side] = rule[side]
                bound.pop(f"exclusive_{side}", None)
                if rule.get(f"exclusive_{side}"):
                    bound[f"exclusive_{side}"] = True
        if rule.get("min_length"):
            bound["min_length"] = rule["min_length"]
        if bound:
            rules.bounds[column] = bound


def infer_rules(
    conn: sqlite3.Connection,
    table: Table,
    taken: set[str] | None = None,
    policy: EnumPolicy | None = None,
) -> TableRules:
    """State columns (with their transitions and tool names), enums and numeric bounds of one
    table, from its rows and its CHECK constraints.

    `taken` holds tool names already used; transition tool names are added to it.
    """
    taken = taken if taken is not None else set()
    policy = policy or enum_policy()
    rules = TableRules()
    if table.row_count == 0:
        return rules
    for c in table.columns:
        if c.numeric:
            bound = _bounds(conn, table, c.name)
            if bound:
                rules.bounds[c.name] = bound
            observed = _observed_range(conn, table, c.name)
            if observed is not None:
                rules.ranges[c.name] = observed
        elif c.kind == "text" and 2 <= table.distinct.get(c.name, 0):
            if table.primary_key and table.distinct[c.name] <= MAX_STATES:
                values = [
                    r[0]
                    for r in conn.execute(
                        f'SELECT DISTINCT "{c.name}" FROM "{table.name}" '
                        f'WHERE "{c.name}" IS NOT NULL ORDER BY "{c.name}"'
                    )
                ]
                if all(isinstance(v, str) for v in values) and _is_state(
                    conn, table, c.name, values
                ):
                    rule = _state_rule(conn, table, c.name, values)
                    _name_tools(rule, table.entity, taken)
                    rules.states[c.name] = rule
                    continue
            enum = _enum_values(conn, table, c.name, policy)
            if enum is not None:
                rules.enums[c.name] = enum
    _apply_declared(rules, declared_rules(conn, table))
    return rules


def _name_tools(rule: StateRule, entity: str, taken: set[str]) -> None:
    targets = [v for v in rule.values if any(v in t for t in rule.transitions.values())]
    verbless = []
    for value in targets:
        verb = verb_for(value)
        name = f"{verb}_{entity}" if verb else ""
        if not verb or verb in GENERIC_VERBS or name in taken or len(name) > 64:
            verbless.append(value)
            continue
        rule.tools[value] = name
        taken.add(name)
    if verbless:
        name = f"set_{entity}_{rule.column}"
        if name not in taken and len(name) <= 64:
            rule.set_tool = name
            taken.add(name)
