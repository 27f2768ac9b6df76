"""A theme tool checked against its document, not only against tests generated with it.

Its own tests say a tool agrees with the generator that wrote it; the contract says it does what
the document promises. For every tool kept by verification, in the sandbox on the environment's
own rows (a fresh episode per call, at most two calls per tool):

- parameters: arguments valid for the advertised schema (every parameter, required and
  optional, with enums, formats and bounds honoured; keys and references drawn from the rows so
  the call reaches a real row) are never refused as an unknown parameter or a type/format error
  (a "not found" for a valid key that is absent is an answer, not a refusal);
- response schema: a result validates against the document's result schema (MCP
  `outputSchema`, the OpenAPI 2xx body) where the document has one (`jsonschema`);
- effect: the rows before and after match the operation kind: create adds one row of its
  entity, delete removes the one named, update changes only the fields given on the row named,
  reads change nothing. An effect that was not seen (every call refused, a delete of a row
  still referred to) fails: a tool that never acts must not pass for one that does.

`check_rows` checks the generated database against the document's enums, patterns, formats and
references once per build. A tool whose contract fails is not verified, whatever its accuracy.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema

from environments.json_schemas import validate

from .theme_model import EntitySpec, ThemeModel, ToolPlan, all_of, plain_type
from .theme_patterns import matching_value
from .theme_schemas import readable_schema
from .theme_values import json_schema, schema_value, valid

READ_OPERATIONS = ("get", "get_by_fields", "get_many", "list", "dump")
REFUSAL = re.compile(
    r"unknown parameter|is not supported by this environment|is not a field of|"
    r"must be (an integer|a number|true or false|an ISO|a list|an object|a string|one of|a "
    r"non-negative)|values .* are not among|unexpected keyword argument|invalid_arguments",
    re.I,
)
ITEM_TYPES: dict[str, Any] = {
    "object": dict,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}
FORMAT_CHECKS = {
    "date": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    "date-time": re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}"),
    "email": re.compile(r"^[^@\s]+@[^@\s]+$"),
    "uuid": re.compile(
        r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    ),
}


@dataclass
class ContractCheck:
    """One check of a tool (or of the database) against its document, in words."""

    name: str  # parameters | response schema | effect | data
    passed: bool
    detail: str


@dataclass
class ToolContract:
    tool: str
    operation: str
    checks: list[ContractCheck] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[str]:
        return [f"document contract, {c.name}: {c.detail}" for c in self.checks if not c.passed]

    @property
    def summary(self) -> str:
        """ "document contract: parameters 5/5 accepted, response schema valid, effect: ..." """
        return "document contract: " + ", ".join(c.detail for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "operation": self.operation,
            "passed": self.passed,
            "summary": self.summary,
            "checks": [asdict(c) for c in self.checks],
        }


@dataclass
class ContractCall:
    """Arguments for one contract call, chosen from the schema and the rows."""

    label: str  # "every parameter" | "required parameters"
    arguments: dict[str, Any]
    target: Any = None  # the key of the row the call names, when it names one
    skipped: list[str] = field(default_factory=list)  # parameters no valid value was found for


# --- the calls -----------------------------------------------------------------------------------


class CallPlanner:
    """Contract calls for one plan over the rows of its entity (read-only connection)."""

    def __init__(self, conn: sqlite3.Connection, model: ThemeModel, plan: ToolPlan) -> None:
        self.conn = conn
        self.model = model
        self.plan = plan
        self.entity: EntitySpec = model.entities[plan.entity]
        self.rng = random.Random(plan.name)
        self.rows = self.table_rows(self.entity)
        self.target = self.choose_target()

    def table_rows(self, entity: EntitySpec) -> list[dict]:
        sql = f'SELECT * FROM "{entity.table}" ORDER BY "{entity.key}" LIMIT 200'
        return [dict(r) for r in self.conn.execute(sql)]

    def decoded(self, column: str, value: Any) -> Any:
        spec = self.entity.fields.get(column)
        if spec is None or value is None:
            return value
        if spec.type in ("array", "object") and isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        if spec.type == "boolean":
            return bool(value)
        return value

    def choose_target(self) -> dict | None:
        """The row a call names: one that has every scope the call filters on (a parent's key
        left empty names no parent to give), and for a delete one no other row refers to."""
        scopes = [
            b[1]
            for b in self.plan.bindings.values()
            if b and b[0] == "filter" and len(b) > 1 and isinstance(b[1], str)
        ]
        rows = [r for r in self.rows if all(r.get(c) is not None for c in scopes)] or self.rows
        if not rows:
            return None
        if self.plan.operation == "transition":
            column, target = self.plan.options.get("column"), self.plan.options.get("target")
            movable = [r for r in rows if r.get(column) != target]
            return (movable or rows)[len(movable or rows) // 2]
        if self.plan.operation not in ("delete", "batch_delete"):
            return rows[len(rows) // 2]
        referenced: set = set()
        for other in self.model.entities.values():
            for column, spec in other.fields.items():
                if spec.ref == self.entity.name:
                    referenced |= {
                        r[0]
                        for r in self.conn.execute(
                            f'SELECT "{column}" FROM "{other.table}" WHERE "{column}" IS NOT NULL'
                        )
                    }
        leaves = [r for r in rows if r[self.entity.key] not in referenced]
        return (leaves or rows)[-1]

    def fresh_key(self) -> Any:
        spec = self.entity.fields[self.entity.key]
        if spec.type == "integer":
            return max((r[self.entity.key] or 0 for r in self.rows), default=0) + 1000
        taken = {r[self.entity.key] for r in self.rows}
        if spec.pattern:
            for attempt in range(20):
                rng = random.Random(f"{self.plan.name}/{attempt}")
                value = matching_value(spec.pattern, rng, spec.min_length, spec.max_length)
                if value is not None and value not in taken:
                    return value
        if spec.enum:
            return next((v for v in spec.enum if v not in taken), spec.enum[0])
        return f"contract-{self.entity.name}-zz9"

    def reference_key(self, entity_name: str) -> Any:
        entity = self.model.entities.get(entity_name)
        if entity is None:
            return None
        rows = self.table_rows(entity)
        return rows[0][entity.key] if rows else None

    def value(self, param: str, schema: dict, binding: list) -> Any:
        """A valid value for one parameter, reaching the target row where it names one."""
        role = binding[0] if binding else "unsupported"
        column = binding[1] if len(binding) > 1 and isinstance(binding[1], str) else ""
        target = self.target or {}
        creating = self.plan.operation in ("create", "batch_create")
        hint: Any = None
        spec = self.entity.fields.get(column) if column else None
        if role in ("key", "keys") or (role == "field" and column == self.entity.key):
            hint = self.fresh_key() if creating else self.decoded(column, target.get(column))
            if role == "keys":
                hint = [hint]
        elif role == "field" and spec is not None and spec.ref:
            hint = self.reference_key(spec.ref)
        elif role == "field" and self.plan.operation in ("update", "transition"):
            hint = self.changed_value(spec, self.decoded(column, target.get(column)))
        elif role in ("field", "filter", "range_min", "range_max") and column:
            hint = self.decoded(column, target.get(column))
        elif role == "filter_in" and column:
            hint = [self.decoded(column, target.get(column))]
        elif role == "query":
            columns = binding[1] if len(binding) > 1 and isinstance(binding[1], list) else []
            text = next((str(target[c]) for c in columns if target.get(c)), "")
            hint = text[1:5] if len(text) > 5 else text
        elif role == "under" and column:
            hint = str(target.get(column, "")).rsplit("/", 1)[0]
        elif role == "list_items" and len(binding) > 3:
            hint = [self.list_item(binding, target)]
        elif role == "items" and isinstance(binding[1], list):
            item = {c: self.decoded(c, target.get(c)) for c in binding[1]}
            if creating:
                fresh = self.fresh_key()
                key = self.entity.key if self.entity.key in item else None
                text = next(
                    (c for c in binding[1] if isinstance(item.get(c), str) and c != key), None
                )
                if key is not None and not self.entity.fields[key].hidden:
                    item[key] = fresh
                elif text is not None:
                    item[text] = f"{item[text]} (contract)"
            hint = [item]
        elif role == "lookup" and column:
            # `slug__empty=false` keeps the rows that have one; other lookups take its value
            hint = False if binding[2] == "empty" else self.decoded(column, target.get(column))
        elif role == "member" and column:
            nested = self.decoded(column, target.get(column))
            nested = nested if isinstance(nested, dict) else {}
            hint = next((v for v in nested.values() if isinstance(v, str | int)), None)
        elif role == "order":
            shown = [n for n, f in self.entity.fields.items() if not f.hidden]
            hint = self.entity.key if self.entity.key in shown else (shown or [None])[0]
        elif role == "cursor":
            hint = ""  # the first page: a real token comes only from an answer
        elif role == "glob":
            hint = "*"
        elif role == "limit":
            hint = 5
        elif role == "offset":
            hint = 0
        if spec is not None and spec.type in ("date", "datetime") and not schema.get("format"):
            # a field the document says is a date in words: a placeholder would be refused
            schema = {**schema, "format": "date" if spec.type == "date" else "date-time"}
        return schema_value(schema, self.rng, spelled(hint, schema))

    def list_item(self, binding: list, target: dict) -> dict:
        """{reference: the row named, values: [a value]} for append/remove of a list field."""
        column, ref, values = binding[1], binding[2], binding[3]
        current = self.decoded(column, target.get(column)) or []
        if self.plan.operation == "remove":
            chosen = current[:1] or ["contract value"]
        else:
            chosen = ["contract note zz9"]
        return {ref: target.get(self.entity.key), values: chosen}

    def changed_value(self, spec: Any, current: Any) -> Any:
        """A value for an update that differs from the stored one where the document allows."""
        if spec is None:
            return None
        if spec.enum:
            return next((v for v in spec.enum if v != current), current)
        if spec.type == "integer":
            return (current or 0) + 7
        if spec.type == "number":
            return round((current or 0) + 1.25, 2)
        if spec.type == "boolean":
            return not current
        if spec.type in ("date", "datetime"):
            return _day_later(current)
        if spec.type == "string" and not spec.pattern and not spec.format:
            return f"{current or ''} (contract)".strip()
        return None

    def calls(self) -> list[ContractCall]:
        props = (self.plan.parameters or {}).get("properties") or {}
        required = set((self.plan.parameters or {}).get("required") or [])
        every = ContractCall("every parameter", {}, self.target_key())
        for param, schema in props.items():
            binding = self.plan.bindings.get(param) or ["unsupported"]
            value = self.value(param, schema if isinstance(schema, dict) else {}, binding)
            if not valid(value, schema if isinstance(schema, dict) else {}):
                every.skipped.append(param)
                continue
            every.arguments[param] = value
        calls = [every]
        if self.plan.operation in READ_OPERATIONS and set(props) - required:
            calls.append(
                ContractCall(
                    "required parameters",
                    {p: v for p, v in every.arguments.items() if p in required},
                    every.target,
                )
            )
        return calls

    def target_key(self) -> Any:
        if self.plan.operation in ("create", "batch_create"):
            given = any(
                b[0] == "field" and b[1] == self.entity.key for b in self.plan.bindings.values()
            )
            return "new" if given else None
        return (self.target or {}).get(self.entity.key)


def spelled(hint: Any, schema: dict) -> Any:
    """A row's number as the document spells it where the parameter is a string: an integer
    key the document sends as text (`id` of a query, a list of ids) is "42", not 42."""
    plain = plain_type(all_of(schema))
    if (
        plain.get("type") == "string"
        and isinstance(hint, int | float)
        and not isinstance(hint, bool)
    ):
        return str(hint)
    if plain.get("type") == "array" and isinstance(hint, list):
        items = plain.get("items") if isinstance(plain.get("items"), dict) else {}
        return [spelled(h, items) for h in hint]
    return hint


# --- running and judging ------------------------------------------------------------------------


def refused(error: str, kind: str | None) -> bool:
    """A call turned away for its arguments (not for the state of the data)."""
    return kind == "invalid_arguments" or bool(REFUSAL.search(error or ""))


def parameters_check(plan: ToolPlan, outcomes: list[tuple[ContractCall, Any]]) -> ContractCheck:
    props = list(((plan.parameters or {}).get("properties") or {}).keys())
    rejected: dict[str, str] = {}
    for call, result in outcomes:
        if result.ok or not refused(result.error or "", result.error_kind):
            continue
        named = [p for p in call.arguments if re.search(rf"['\"]{re.escape(p)}['\"]", result.error)]
        for param in named or list(call.arguments):
            rejected.setdefault(param, (result.error or "")[:200])
    skipped = [p for p in outcomes[0][0].skipped if p not in rejected]
    accepted = len(props) - len(rejected) - len(skipped)
    detail = f"parameters {accepted}/{len(props)} accepted"
    if skipped:
        detail += f" ({', '.join(skipped)}: no valid value could be made from the schema)"
    if rejected:
        first = next(iter(rejected.items()))
        detail += f"; refused {', '.join(rejected)} (first: {first[1]})"
    return ContractCheck("parameters", not rejected, detail)


def response_check(
    plan: ToolPlan, outcomes: list[tuple[ContractCall, Any]]
) -> ContractCheck | None:
    if not plan.response_schema:
        return None
    answered = [r for _, r in outcomes if r.ok]
    if not answered:
        return ContractCheck(
            "response schema",
            False,
            "no answer to check against the document's schema: no contract call returned a "
            f"result ({_first_error(outcomes)})",
        )
    schema, unreadable, left_out = answer_schema(plan.response_schema)
    if schema is None:
        return ContractCheck(
            "response schema", True, f"response schema unreadable, not checked ({unreadable})"
        )
    for result in answered:
        try:
            validate(result.result, schema)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "the result"
            return ContractCheck(
                "response schema",
                False,
                f"response breaks the document's schema at {where}: {_broken(exc)}",
            )
        except Exception as exc:  # noqa: BLE001 - the validator itself failed on this answer
            return ContractCheck(
                "response schema", True, f"response schema unreadable, not checked ({exc})"[:200]
            )
        problem = envelope_problem(plan, result.result)
        if problem:
            return ContractCheck("response schema", False, problem)
    said = [f"rows under {plan.envelope.where()}"] if plan.envelope and plan.envelope.rows else []
    if left_out:  # what the check could not read is said, never passed over in silence
        said.append(f"{len(left_out)} part(s) no validator reads left out: {left_out[0]}")
    shown = f" ({'; '.join(said)})" if said else ""
    return ContractCheck("response schema", True, f"response schema valid{shown}"[:300])


def answer_schema(document_schema: dict) -> tuple[dict | None, str, list[str]]:
    """The document's answer schema as a validator reads it: patterns `re` cannot run
    (`json_schema`) and keywords the meta-schema refuses (OpenAPI's `examples` map, a
    `definitions` of things that are not schemas) are left out, so the rest still checks the
    answer. (schema, "", what was left out), or (None, why, []) when nothing readable is
    left."""
    notes: list[str] = []
    schema = json_schema(document_schema)
    problem = _unreadable(schema)
    if not problem:
        return schema, "", []
    repaired = readable_schema(schema, notes)
    if repaired is not None and not _unreadable(repaired):
        return repaired, "", notes
    return None, problem, []


def _unreadable(schema: Any) -> str:
    """Why a validator cannot read the schema ("" when it can)."""
    try:
        validate(None, schema)
    except jsonschema.ValidationError:
        pass
    except Exception as exc:  # noqa: BLE001 - refused by the meta-schema, a `$ref` left unresolved
        return f"{type(exc).__name__}: {exc}"[:160]
    return ""


def _first_error(outcomes: list[tuple[ContractCall, Any]]) -> str:
    error = next((r.error for _, r in outcomes if not r.ok and r.error), "") or "no answer"
    return f"first error: {error[:160]}"


def envelope_problem(plan: ToolPlan, body: Any) -> str:
    """What a schema-valid answer says untruly about its rows: rows missing where the
    document's envelope puts them, a count that is not the number of rows, a total below it."""
    envelope = plan.envelope
    if envelope is None or not envelope.rows:
        return ""
    rows = envelope.rows_in(body)
    if rows is None:
        return f"the rows are not under {envelope.where()}, where the document puts them"
    for item in envelope.fields:
        present, value = envelope.value_at(body, item.path)
        if not present or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        where = ".".join(item.path)
        if item.role == "count" and value != len(rows):
            return f"{where} is {value} but the answer holds {len(rows)} rows"
        if item.role == "total" and value < len(rows):
            return f"{where} is {value}, fewer than the {len(rows)} rows the answer holds"
    return ""


def _broken(exc: jsonschema.ValidationError) -> str:
    """What the result broke, short: the instance is left out (it may be the whole result)."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if exc.validator == "type":
        got = next((w for t, w in kinds.items() if isinstance(exc.instance, t)), "a number")
        got = "null" if exc.instance is None else got
        return f"{got} where the document says type {exc.validator_value!r}"
    if exc.validator in ("anyOf", "oneOf", "allOf"):
        return f"matches none of the document's {exc.validator} alternatives"
    return exc.message[:200]


def effect_check(
    plan: ToolPlan, model: ThemeModel, call: ContractCall, result: Any, diff: dict
) -> ContractCheck:
    """The rows before/after against the operation kind."""
    entity = model.entities[plan.entity]
    table, noun = entity.table, entity.name.replace("_", " ")
    mine = diff.get(table) or {}
    added, removed = mine.get("added") or [], mine.get("removed") or []
    changed = mine.get("changed") or []
    elsewhere = {t: d for t, d in diff.items() if t != table}
    op = plan.operation

    def fail(what: str) -> ContractCheck:
        return ContractCheck("effect", False, f"effect: {what} ({op} of one {noun} expected)")

    if not result.ok:
        # nothing was seen: a refusal, a row "still referred to" or "not found" proves no
        # effect, and a tool that always answers so would otherwise pass without doing anything
        return fail(f"the call with valid arguments was refused: {(result.error or '')[:160]}")
    if op in READ_OPERATIONS:
        if diff:
            return fail(f"a read changed {', '.join(sorted(diff))}")
        return ContractCheck("effect", True, f"effect: reads {noun} rows, changes nothing")
    if op in ("create", "batch_create"):
        count = len(added)
        expected = 1 if op == "create" else max(1, _items_given(plan, call))
        if count != expected or removed or changed or _changes(elsewhere, allow_added=False):
            return fail(_described(diff))
        return ContractCheck("effect", True, f"effect: creates one {noun}")
    if op in ("delete", "batch_delete"):
        keys = [r.get(entity.key) for r in removed]
        cascade = plan.options.get("cascade")
        if len(removed) != 1 or added or changed or call.target not in keys:
            return fail(_described(diff))
        if _changes(elsewhere, allow_added=False) and not cascade:
            return fail(_described(diff))
        return ContractCheck("effect", True, f"effect: deletes the {noun} named")
    if op in ("update", "transition", "append", "remove"):
        given = {b[1] for p, b in plan.bindings.items() if p in call.arguments and b[0] == "field"}
        if op == "transition":
            given.add(plan.options.get("column", ""))
        if op in ("append", "remove"):
            given |= {b[1] for p, b in plan.bindings.items() if b[0] == "list_items"}
        if added or removed or len(changed) > 1 or _changes(elsewhere, allow_added=False):
            return fail(_described(diff))
        if not changed:
            return fail("no row changed")
        change = changed[0]
        if call.target is not None and call.target not in change.get("key", {}).values():
            return fail(f"changed {change.get('key')} instead of the row named ({call.target!r})")
        columns = {c for c in change["after"] if change["before"].get(c) != change["after"][c]}
        extra = columns - given
        if extra:
            return fail(f"changed {', '.join(sorted(extra))}, which the call did not give")
        return ContractCheck(
            "effect", True, f"effect: changes {', '.join(sorted(columns))} of the {noun} named"
        )
    return ContractCheck("effect", True, f"effect: {op} not checked")


def _items_given(plan: ToolPlan, call: ContractCall) -> int:
    for param, binding in plan.bindings.items():
        if binding[0] in ("items", "keys") and isinstance(call.arguments.get(param), list):
            return len(call.arguments[param])
    return 1


def _changes(diff: dict, allow_added: bool) -> bool:
    return any(
        d.get("removed") or d.get("changed") or (d.get("added") and not allow_added)
        for d in diff.values()
    )


def _described(diff: dict) -> str:
    if not diff:
        return "no row changed"
    parts = []
    for table, d in sorted(diff.items()):
        for what in ("added", "removed", "changed"):
            if d.get(what):
                parts.append(f"{len(d[what])} {table} row(s) {what}")
    return ", ".join(parts)


def check_tool(pool: Any, package: Any, model: ThemeModel, plan: ToolPlan, conn) -> ToolContract:
    """The contract calls of one tool, each in a fresh episode, and the checks they give."""
    contract = ToolContract(plan.name, plan.operation)
    if plan.entity not in model.entities:
        return contract
    calls = CallPlanner(conn, model, plan).calls()
    outcomes = []
    diffs = []
    for call in calls:
        with pool.start_episode(package) as episode:
            result = episode.call_tool(plan.name, call.arguments)
            diffs.append(episode.state_diff() if result.ok else {})
        outcomes.append((call, result))
    contract.checks.append(parameters_check(plan, outcomes))
    response = response_check(plan, outcomes)
    if response is not None:
        contract.checks.append(response)
    effects = [
        effect_check(plan, model, call, result, diff)
        for (call, result), diff in zip(outcomes, diffs, strict=True)
    ]
    contract.checks.append(next((e for e in effects if not e.passed), effects[0]))
    return contract


def check_contracts(
    pool: Any, package: Any, model: ThemeModel, db_path: str | Path, names: list[str]
) -> dict[str, ToolContract]:
    """Every named tool of the package that has a plan, against the document."""
    plans = {p.name: p for p in model.plans if not p.rejected or p.name in names}
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        out = {}
        for name in names:
            plan = plans.get(name)
            if plan is None or plan.entity not in model.entities:
                continue
            try:
                out[name] = check_tool(pool, package, model, plan, conn)
            except Exception as exc:  # noqa: BLE001 - a contract that could not run fails the tool
                out[name] = ToolContract(
                    name,
                    plan.operation,
                    [
                        ContractCheck(
                            "calls",
                            False,
                            f"the contract calls could not run ({type(exc).__name__}: {exc})",
                        )
                    ],
                )
        return out
    finally:
        conn.close()


def contract_package(root: str | Path, tools: Any, db_path: str | Path, name: str) -> Path:
    """The kept tools as a package the sandbox can run (no tests: the contract calls them)."""
    from environments.package import write_package

    names = tools.names()
    manifest = {
        "name": name,
        "version": 1,
        "title": name,
        "description": "contract check candidate",
        "category": {"primary": "", "secondary": "", "tertiary": ""},
        "tools": tools.manifest_tools(names),
        "tool_kinds": {n: tools.kinds[n] for n in names},
    }
    return write_package(root, manifest, db_path, tools.tools_source(names), "", [])


def run_contracts(
    tools: Any, model: ThemeModel, db_path: str | Path, name: str, pool: Any = None
) -> dict[str, ToolContract]:
    """Package the tools, call each against its document in the sandbox, return the contracts."""
    from environments.package import load_package
    from environments.runtime import SandboxPool

    names = tools.names()
    if not names:
        return {}
    own_pool = pool is None
    pool = pool or SandboxPool(workers=1)
    try:
        with tempfile.TemporaryDirectory(prefix="aw-contract-") as root:
            package = load_package(contract_package(root, tools, db_path, name))  # loaded once
            return check_contracts(pool, package, model, db_path, names)
    finally:
        if own_pool:
            pool.close()


# --- the database against the document ----------------------------------------------------------


def _day_later(current: Any) -> str | None:
    """An ISO date or datetime one day after `current`, in its own form (None when `current`
    is not one): an update's new value that still reads as the date it is."""
    text = str(current or "")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    later = moment + timedelta(days=1)
    if len(text) == 10:
        return later.date().isoformat()
    shown = later.isoformat()
    return shown.replace("+00:00", "Z") if text.endswith("Z") else shown


def check_rows(model: ThemeModel, db_path: str | Path, limit: int = 5) -> ContractCheck:
    """The generated rows against the document's enums, patterns, formats and references."""
    problems: list[str] = []
    rows_seen = 0
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        keys: dict[str, set] = {}
        for entity in model.entities.values():
            if entity.table in tables and entity.key:
                keys[entity.name] = {
                    r[0] for r in conn.execute(f'SELECT "{entity.key}" FROM "{entity.table}"')
                }
        for entity in model.entities.values():
            if entity.table not in tables:
                continue
            for row in conn.execute(f'SELECT * FROM "{entity.table}"'):
                rows_seen += 1
                row = dict(row)
                for name, spec in entity.fields.items():
                    problem = _field_problem(spec, row.get(name), keys)
                    if problem:
                        problems.append(f"{entity.table}.{name} = {row.get(name)!r}: {problem}")
    finally:
        conn.close()
    if problems:
        shown = "; ".join(problems[:limit])
        more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
        return ContractCheck(
            "data", False, f"{len(problems)} stored values break the document: {shown}{more}"
        )
    return ContractCheck(
        "data",
        True,
        f"{rows_seen} rows honour the document's enums, patterns, formats and references",
    )


def _field_problem(spec: Any, value: Any, keys: dict[str, set]) -> str:
    if value is None or spec.hidden:
        return ""
    if spec.enum:
        values = value
        if spec.type == "array" and isinstance(value, str):
            try:
                values = json.loads(value)
            except ValueError:
                return "not a JSON list"
        values = values if isinstance(values, list) else [values]
        stored = {str(v) for v in spec.enum} | {  # an enum of lists or objects: unhashable
            v for v in spec.enum if isinstance(v, int | float | bool)
        }
        if spec.type == "boolean":
            stored |= {1 if v else 0 for v in spec.enum if isinstance(v, bool)}
        bad = [v for v in values if v not in spec.enum and str(v) not in stored]
        if bad:
            return f"not among the document's values {spec.enum!r}"
    if spec.type == "array" and spec.items in ITEM_TYPES and isinstance(value, str):
        try:
            items = json.loads(value)
        except ValueError:
            return "not a JSON list"
        wanted = ITEM_TYPES[spec.items]
        if not isinstance(items, list) or any(
            not isinstance(i, wanted) or isinstance(i, bool) != (spec.items == "boolean")
            for i in items
        ):
            return f"holds items that are not of type {spec.items}"
    if spec.pattern and isinstance(value, str) and spec.type not in ("array", "object"):
        try:
            if not re.search(spec.pattern, value):
                return f"does not match the pattern {spec.pattern!r}"
        except re.error:
            pass
    fmt = "date" if spec.type == "date" else "date-time" if spec.type == "datetime" else spec.format
    check = FORMAT_CHECKS.get(fmt)
    if check is not None and isinstance(value, str) and not check.search(value):
        return f"is not a valid {fmt}"
    if spec.ref and spec.ref in keys and value not in keys[spec.ref]:
        return f"refers to no {spec.ref}"
    return ""
