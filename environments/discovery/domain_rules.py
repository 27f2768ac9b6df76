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

Numeric bounds
    An INTEGER or REAL column (not the key, not a link) with at least 3 observed values keeps
    their sign: all >= 0 gives `minimum: 0`, all <= 0 gives `maximum: 0` (in the JSON schema and
    checked by create/update), unless its name says it is a signed quantity (latitude,
    longitude, elevation, temperature, balance, change, delta, growth, profit, ...). A REAL
    column whose at least 10 observed values are all whole numbers takes whole numbers only.
    Upper ranges are not enforced: new rows may be larger than any seen so far.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field

from .schema import Table

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
SIGNED_NAMES = frozenset(
    "lat latitude lon lng long longitude elevation altitude temperature temp balance change "
    "delta diff difference offset profit loss net growth gain variance anomaly correlation "
    "coefficient x y z".split()
)


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
    bounds: dict[str, dict] = field(default_factory=dict)  # column -> {minimum|maximum, integer}

    def spec(self) -> dict:
        return {
            "states": {c: r.as_spec() for c, r in self.states.items()},
            "bounds": self.bounds,
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
    kind = table.column(column).kind
    if column == table.primary_key or column in table.foreign_keys:
        return {}
    if set(column.lower().split("_")) & SIGNED_NAMES:
        return {}
    count, low, high, whole = conn.execute(
        f'SELECT COUNT("{column}"), MIN("{column}"), MAX("{column}"), '
        f'SUM(CASE WHEN "{column}" = CAST("{column}" AS INTEGER) THEN 1 ELSE 0 END) '
        f"FROM \"{table.name}\" WHERE typeof(\"{column}\") IN ('integer', 'real')"
    ).fetchone()
    if count < 3:
        return {}
    bound: dict = {}
    if low >= 0:
        bound["minimum"] = 0
    elif high <= 0:
        bound["maximum"] = 0
    if kind == "real" and count >= 10 and whole == count:
        bound["integer"] = True
    return bound


def infer_rules(
    conn: sqlite3.Connection, table: Table, taken: set[str] | None = None
) -> TableRules:
    """State columns (with their transitions and tool names) and numeric bounds of one table.

    `taken` holds tool names already used; transition tool names are added to it.
    """
    taken = taken if taken is not None else set()
    rules = TableRules()
    if table.row_count == 0:
        return rules
    for c in table.columns:
        if c.numeric:
            bound = _bounds(conn, table, c.name)
            if bound:
                rules.bounds[c.name] = bound
        elif c.kind == "text" and table.primary_key and 2 <= table.distinct.get(c.name, 0):
            if table.distinct[c.name] > MAX_STATES:
                continue
            values = [
                r[0]
                for r in conn.execute(
                    f'SELECT DISTINCT "{c.name}" FROM "{table.name}" '
                    f'WHERE "{c.name}" IS NOT NULL ORDER BY "{c.name}"'
                )
            ]
            if all(isinstance(v, str) for v in values) and _is_state(conn, table, c.name, values):
                rule = _state_rule(conn, table, c.name, values)
                _name_tools(rule, table.entity, taken)
                rules.states[c.name] = rule
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
