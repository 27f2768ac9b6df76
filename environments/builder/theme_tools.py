"""The theme's own tools as code over the theme database, each with unit tests from its rows.

`implement_theme_tools(model, db_path)` turns every implementable `ToolPlan` into a function
`def <theme tool name>(db, **params)` (the plan as a constant, run by the helpers of
`theme_prelude`), the theme's own JSON schema (name, description, parameters unchanged), a kind
(read/write) and unit tests whose expectations are computed now, with SQL, from the rows of the
database: an existing key is found with its values, a missing one fails, a filter returns the
rows SQL counts, a write changes what it should and refuses what it must. A plan the generator
cannot test (no row to test it on) is rejected with that reason.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

from environments.discovery.tool_generator import ToolSet
from environments.python_source import python_name

from .theme_data import Generator
from .theme_model import EntitySpec, ThemeModel, ToolPlan
from .theme_prelude import __file__ as _PRELUDE_FILE
from .theme_values import schema_value

_MARKER = "# --- theme prelude starts here ---\n"
MAX_ROWS = 100
ORIGIN = "theme"


def theme_prelude() -> str:
    return Path(_PRELUDE_FILE).read_text().split(_MARKER, 1)[1].strip() + "\n"


def table_specs(model: ThemeModel) -> dict[str, dict]:
    """The runtime description of every table, keyed by entity name."""
    specs = {}
    for entity in model.entities.values():
        specs[entity.name] = {
            "table": entity.table,
            "entity": entity.name,
            "key": entity.key,
            "key_type": entity.fields[entity.key].type,
            "fields": {
                name: {
                    "type": f.type,
                    "json": f.type in ("array", "object"),
                    "enum": list(f.enum),
                    "ref": f.ref,
                    "hidden": f.hidden,
                    "required": f.required,
                }
                for name, f in entity.fields.items()
            },
            "children": [
                [other.name, column]
                for other in model.entities.values()
                for column, f in other.fields.items()
                if f.ref == entity.name
            ],
        }
    return specs


def runtime_plan(plan: ToolPlan, model: ThemeModel) -> dict[str, Any]:
    entity = model.entities[plan.entity]
    props = plan.parameters.get("properties") or {}
    limit_param = next((p for p, b in plan.bindings.items() if b[0] == "limit"), None)
    default = (props.get(limit_param) or {}).get("default") if limit_param else None
    fields = [b[1] for b in plan.bindings.values() if b[0] == "field"]
    return {
        "name": plan.name,
        "op": plan.operation,
        "table": plan.entity,
        "bindings": plan.bindings,
        "output": plan.output
        | ({"envelope": plan.envelope.runtime()} if plan.envelope is not None else {}),
        "options": plan.options,
        "fields": fields,
        "auto_key": entity.key not in fields,
        "default_limit": default if isinstance(default, int) and default > 0 else None,
    }


SERVER_ROW = 10_000  # the generator's row index for values a create fills (past every stored row)


def server_values(plan: ToolPlan, model: ThemeModel, generator: Generator) -> dict[str, Any]:
    """What a create fills as its server does: the entity's fields the document requires on
    every row (`created`, `object`, `livemode`, nested `_links`) that no parameter of the tool
    can give, each a value made for the field as the stored rows' are. A field a parameter
    gives stays the caller's (left empty when not given); references are never made up."""
    if plan.operation not in ("create", "batch_create"):
        return {}
    entity = model.entities[plan.entity]
    given = {str(b[1]) for b in plan.bindings.values() if len(b) > 1 and isinstance(b[1], str)}
    given |= {str(c) for b in plan.bindings.values() if b[0] == "items" for c in b[1]}
    params = {p.lower() for p in (plan.parameters.get("properties") or {})}
    out: dict[str, Any] = {}
    for offset, (name, spec) in enumerate(entity.fields.items()):
        if (
            not spec.required
            or spec.hidden
            or spec.ref
            or spec.object_ref
            or name == entity.key
            or name in given
            or name.lower() in params
        ):
            continue
        value = generator.value(entity, spec, SERVER_ROW + offset, {})
        if value is not None:
            out[name] = value
    if out:
        plan.notes.append(
            f"fields every {entity.name} holds and no parameter gives are filled as its server "
            f"does: {', '.join(out)}"
        )
    return out


def implement_theme_tools(model: ThemeModel, db_path: str | Path) -> ToolSet:
    """Code, schemas, kinds and tests for every implementable plan (others stay rejected)."""
    specs = table_specs(model)
    tools = ToolSet(prelude=theme_prelude(), imports=["import json"])
    constants = [f"_TH_TABLES = {specs!r}"]
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    taken: dict[str, str] = {}
    generator = Generator(model.title, model.document)
    try:
        for index, plan in enumerate(model.plans):
            if plan.rejected:
                continue
            if "__" in plan.name:
                plan.reject(f"{plan.name!r} holds '__', which tool test names reserve")
                continue
            const = f"_TH_PLAN_{index}"
            try:
                runtime = runtime_plan(plan, model)
                runtime["server_values"] = server_values(plan, model, generator)
                tests = _Tests(conn, model, specs, plan, runtime).build()
            except _Untestable as exc:
                plan.reject(f"cannot be verified: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - one tool falls, with its reason
                plan.reject(
                    f"could not be implemented: writing its tests over the {plan.entity} rows "
                    f"failed ({type(exc).__name__}: {exc})"
                )
                continue
            constants.append(f"{const} = {runtime!r}")
            function = python_name(plan.name)
            if function in taken:
                plan.reject(f"its function name {function!r} is taken by {taken[function]!r}")
                continue
            taken[function] = plan.name
            tools.functions[plan.name] = (
                f"def {function}(db, **params):\n"
                f"    {json.dumps((plan.description or plan.name).splitlines()[0][:200])}\n"
                f"    return _th_call(db, {const}, params)\n"
            )
            tools.schemas[plan.name] = plan.schema()
            tools.kinds[plan.name] = plan.kind
            tools.tests[plan.name] = tests
            tools.origin[plan.name] = ORIGIN
    finally:
        conn.close()
    tools.prelude += "\n\n" + "\n".join(constants) + "\n"
    return tools


class _Untestable(Exception):
    pass


def _decode(spec: dict, row: dict) -> dict:
    out = {}
    for name, value in row.items():
        field = spec["fields"].get(name, {})
        if field.get("hidden"):
            continue
        if field.get("json") and isinstance(value, str):
            value = json.loads(value)
        elif field.get("type") == "boolean" and value is not None:
            value = bool(value)
        out[name] = value
    return out


def _missing(kind: str) -> Any:
    return -987654 if kind == "integer" else "NO-SUCH-KEY-zz9"


class _Tests:
    """Unit tests for one plan, expectations computed from the database with SQL."""

    def __init__(self, conn, model: ThemeModel, specs, plan: ToolPlan, runtime: dict) -> None:
        self.conn = conn
        self.model = model
        self.specs = specs
        self.plan = plan
        self.runtime = runtime
        self.entity: EntitySpec = model.entities[plan.entity]
        self.spec = specs[plan.entity]
        self.key = self.entity.key
        self.out = plan.output or {"mode": "plain"}
        self.tests: list[str] = []
        self.matching = 0  # rows the last expected listing matched (before its page size)

    # -- helpers --
    def rows(self, where: str = "", args: tuple = (), table: str | None = None) -> list[dict]:
        spec = self.specs[table] if table else self.spec
        sql = f'SELECT * FROM "{spec["table"]}" {where} ORDER BY "{spec["key"]}"'
        return [dict(r) for r in self.conn.execute(sql, args)]

    def param(self, role: str) -> tuple[str, list] | None:
        for param, binding in self.plan.bindings.items():
            if binding[0] == role:
                return param, binding
        return None

    def params(self, role: str) -> list[tuple[str, list]]:
        return [(p, b) for p, b in self.plan.bindings.items() if b[0] == role]

    def rows_expr(self, single: bool) -> tuple[str, str]:
        """(expression giving a list of row dicts from `out`, the only column a text result
        carries or "")."""
        mode = self.out.get("mode", "plain")
        if mode == "envelope" and self.plan.envelope is not None:
            return self.plan.envelope.rows_expr("out"), ""
        if mode == "multi":
            prop = next(p for p, e in self.out["multi"].items() if e == self.plan.entity)
            return f"out[{prop!r}]", ""
        if mode == "wrap":
            return f"out[{self.out['prop']!r}]", ""
        if mode == "text":
            if single and self.out.get("column"):
                return "", self.out["column"]
            wrap = "[json.loads(out[{0!r}])]" if single else "json.loads(out[{0!r}])"
            return wrap.format(self.out["prop"]), ""
        if mode == "status":
            return "", "-"
        return ("[out]" if single else "out"), ""

    def add(self, case: str, body: list[str]) -> None:
        case = re.sub(r"\W+", "_", case).strip("_") or "case"
        lines = "\n".join("    " + line for line in body)
        function = python_name(self.plan.name)
        self.tests.append(f"def test_{function}__{case}(call):\n    import json\n{lines}\n")

    def credentials(self) -> dict:
        """Values for the required credentials a call sends (accepted, never checked)."""
        props = self.plan.parameters.get("properties") or {}
        required = set(self.plan.parameters.get("required") or [])
        values = {}
        for param, binding in self.plan.bindings.items():
            if binding[0] == "credential" and param in required:
                enum = (props.get(param) or {}).get("enum") or []
                values[param] = enum[0] if enum else "offline-credential"
            elif binding[0] == "ignored" and param in required:  # a required header
                values[param] = schema_value(props.get(param) or {}, random.Random(param))
        return values

    def call(self, arguments: dict) -> str:
        return f"out = call({self.plan.name!r}, **{self.credentials() | arguments!r})"

    def check_row(self, arguments: dict, expected: dict, single: bool = True) -> list[str]:
        """Lines asserting the result holds a row with the expected (decoded) values."""
        expr, only = self.rows_expr(single)
        lines = [self.call(arguments)]
        if only == "-":
            lines.append("assert out['success'] is True")
            return lines
        if only:
            if only in expected:
                lines.append(f"assert out[{self.out['prop']!r}] == {expected[only]!r}")
            else:
                lines.append(f"assert isinstance(out[{self.out['prop']!r}], str)")
            return lines
        lines.append(f"rows = {expr}")
        checks = " and ".join(f"r.get({k!r}) == {v!r}" for k, v in expected.items())
        lines.append(f"assert any({checks or 'True'} for r in rows), rows")
        return lines

    def scalar_field(self, row: dict, exclude: tuple = ()) -> str | None:
        for name, field in self.entity.fields.items():
            if field.hidden or name in exclude or field.type in ("array", "object"):
                continue
            if row.get(name) is not None:
                return name
        return None

    def expect_error(self, arguments: dict, case: str) -> None:
        arguments = self.credentials() | arguments
        self.add(case, [f"_expect_error(call, {self.plan.name!r}, **{arguments!r})"])

    def required_filters(self, sample: dict) -> dict:
        """Values for required parameters of a read tool, taken from a row."""
        required = set(self.plan.parameters.get("required") or [])
        values = {}
        for param in required:
            binding = self.plan.bindings.get(param, ["unsupported"])
            if binding[0] == "filter_in":
                values[param] = [
                    _decode(self.spec, {binding[1]: sample.get(binding[1])})[binding[1]]
                ]
            elif binding[0] in ("filter", "key", "under") and len(binding) > 1:
                value = sample.get(binding[1])
                if binding[0] == "under":
                    value = str(value).rsplit("/", 1)[0]
                values[param] = _decode(self.spec, {binding[1]: value}).get(binding[1], value)
            elif binding[0] == "query":
                values[param] = ""
            elif binding[0] in ("glob",):
                values[param] = "*"
            elif binding[0] in ("credential", "ignored"):
                continue  # every call sends it (`credentials`)
            else:
                raise _Untestable(f"no value for its required parameter {param!r}")
        return values

    # -- per operation --
    def build(self) -> list[str]:
        rows = self.rows()
        if not rows:
            raise _Untestable(f"the {self.entity.table} table has no rows")
        getattr(self, "op_" + self.plan.operation)(rows)
        if not self.tests:
            raise _Untestable("no test could be computed from the rows")
        return self.tests

    def op_get(self, rows: list[dict]) -> None:
        param, binding = self.param("key")
        for i, row in enumerate(rows[:2]):
            decoded = _decode(self.spec, row)
            other = self.scalar_field(decoded, (self.key,))
            expected = (
                {self.key: decoded.get(self.key)}
                if not self.spec["fields"][self.key]["hidden"]
                else {}
            )
            if other:
                expected[other] = decoded[other]
            arguments = {**self.required_filters(row), param: row[binding[1]]}
            self.add(f"existing_{i}", self.check_row(arguments, expected))
        arguments = {**self.required_filters(rows[0]), param: _missing(self.spec["key_type"])}
        self.expect_error(arguments, "missing")

    def op_get_by_fields(self, rows: list[dict]) -> None:
        filters = self.params("filter")
        row = rows[0]
        arguments = {p: _decode(self.spec, {b[1]: row[b[1]]})[b[1]] for p, b in filters}
        where = " AND ".join(f'"{b[1]}" IS ?' for _, b in filters)
        found = self.rows(f"WHERE {where}" if where else "", tuple(row[b[1]] for _, b in filters))
        decoded = _decode(self.spec, found[0])
        other = self.scalar_field(decoded, tuple(b[1] for _, b in filters))
        expected = {other: decoded[other]} if other else {}
        self.add("existing", self.check_row(arguments, expected))
        if not filters:  # a singleton (`GET /v1/balance`): the one row, nothing to miss
            return
        missing = dict(arguments)
        p, b = filters[0]
        missing[p] = _missing(self.spec["fields"][b[1]]["type"])
        self.expect_error(missing, "missing")

    def op_get_many(self, rows: list[dict]) -> None:
        param, binding = self.param("keys")
        keys = [r[binding[1]] for r in rows[:2]]
        expr, only = self.rows_expr(False)
        lines = [self.call({param: keys + [_missing(self.spec["key_type"])]})]
        if expr:
            lines += [
                f"rows = {expr}",
                f"assert sorted(r[{self.key!r}] for r in rows) == {sorted(keys)!r}",
            ]
        self.add("two_of_three", lines)
        self.expect_error({param: [_missing(self.spec["key_type"])]}, "none_found")

    def expected_list(self, where: str, args: tuple) -> int:
        """The rows a listing answers (one page); `self.matching` keeps how many match."""
        limit = self.runtime["default_limit"] or MAX_ROWS
        total = self.conn.execute(
            f'SELECT COUNT(*) FROM "{self.spec["table"]}" {where}', args
        ).fetchone()[0]
        self.matching = total
        return min(total, limit, MAX_ROWS)

    def count_lines(self, arguments: dict, expected: int) -> list[str]:
        expr, only = self.rows_expr(False)
        if not expr:
            return [self.call(arguments), "assert out is not None"]
        lines = [self.call(arguments), f"rows = {expr}", f"assert len(rows) == {expected}, rows"]
        envelope = self.plan.envelope if self.out.get("mode") == "envelope" else None
        for field in envelope.fields if envelope is not None else ():
            where = "out" + "".join(f"[{p!r}]" for p in field.path)
            if field.role == "total":  # the document's total: every matching row, not one page
                lines.append(f"assert {where} == {self.matching}, {where}")
            elif field.role == "count":
                lines.append(f"assert {where} == {expected}, {where}")
        return lines

    def op_list(self, rows: list[dict]) -> None:
        sample = rows[len(rows) // 2]
        base = self.required_filters(sample)
        where, args = self.where_for(base)
        self.add("base", self.count_lines(base, self.expected_list(where, args)))
        for param, binding in self.params("filter"):
            if param in base:
                continue
            value = sample.get(binding[1])
            if value is None:
                continue
            value = _decode(self.spec, {binding[1]: value})[binding[1]]
            arguments = {**base, param: value}
            where, args = self.where_for(arguments)
            self.add(f"by_{param}", self.count_lines(arguments, self.expected_list(where, args)))
            break
        query = self.param("query")
        if query is not None and query[1][1]:
            text = next((str(sample[c]) for c in query[1][1] if sample.get(c)), "")
            fragment = text[1:5] if len(text) > 5 else text
            if fragment:
                arguments = {**base, query[0]: fragment}
                where, args = self.where_for(arguments)
                self.add("query", self.count_lines(arguments, self.expected_list(where, args)))
        limit = self.param("limit")
        if limit is not None:
            arguments = {**base, limit[0]: 1}
            where, args = self.where_for(base)
            expected = min(1, self.expected_list(where, args))
            self.add("limit_one", self.count_lines(arguments, expected))
        for role in ("range_min", "range_max"):
            found = self.param(role)
            if found is None:
                continue
            param, binding = found
            values = sorted(r[binding[1]] for r in rows if r.get(binding[1]) is not None)
            if not values:
                continue
            middle = values[len(values) // 2]
            arguments = {**base, param: middle}
            where, args = self.where_for(arguments)
            self.add(f"{role}", self.count_lines(arguments, self.expected_list(where, args)))
        under = self.param("under")
        if under is not None and under[0] not in base:
            parent = str(sample[under[1][1]]).rsplit("/", 1)[0]
            arguments = {**base, under[0]: parent}
            where, args = self.where_for(arguments)
            self.add("under_parent", self.count_lines(arguments, self.expected_list(where, args)))

    def where_for(self, arguments: dict) -> tuple[str, tuple]:
        """The SQL the test expects for these arguments (written independently of the helpers)."""
        clauses, args = [], []
        for param, value in arguments.items():
            binding = self.plan.bindings[param]
            role = binding[0]
            if role == "filter":
                stored = value
                if self.spec["fields"][binding[1]]["type"] == "boolean":
                    stored = 1 if value else 0
                clauses.append(f'"{binding[1]}" = ?')
                args.append(stored)
            elif role == "query" and value:
                columns = binding[1] or [self.key]
                clauses.append(
                    "(" + " OR ".join(f'instr(lower("{c}"), lower(?)) > 0' for c in columns) + ")"
                )
                args.extend(value for _ in columns)
            elif role == "filter_in":
                marks = ", ".join("?" for _ in value) or "NULL"
                clauses.append(f'"{binding[1]}" IN ({marks})')
                args.extend(value)
            elif role == "range_min":
                clauses.append(f'"{binding[1]}" >= ?')
                args.append(value)
            elif role == "range_max":
                clauses.append(f'"{binding[1]}" <= ?')
                args.append(value)
            elif role == "under":
                keys = [r[binding[1]] for r in self.rows()]
                prefix = str(value).rstrip("/") + "/"
                recursive = self.plan.options.get("recursive")
                inside = [
                    k
                    for k in keys
                    if str(k).startswith(prefix) and (recursive or "/" not in str(k)[len(prefix) :])
                ]
                marks = ", ".join("?" for _ in inside) or "NULL"
                clauses.append(f'"{binding[1]}" IN ({marks})')
                args.extend(inside)
            elif role == "glob" and value not in ("*", None):
                clauses.append("0")
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        return where, tuple(args)

    def op_dump(self, rows: list[dict]) -> None:
        lines = [self.call({})]
        for prop, entity in self.out.get("multi", {}).items():
            total = self.conn.execute(
                f'SELECT COUNT(*) FROM "{self.specs[entity]["table"]}"'
            ).fetchone()[0]
            if entity == self.plan.entity:
                total = min(total, MAX_ROWS)
            lines.append(f"assert len(out[{prop!r}]) == {total}")
        self.add("everything", lines)

    def new_values(self, sample: dict, fields: list[str]) -> dict:
        """Values for a new row: the sample's, with a fresh key and fresh unique values."""
        values = {}
        for column in fields:
            field = self.spec["fields"][column]
            value = _decode(self.spec, {column: sample.get(column)}).get(column)
            if column == self.key:
                if field["type"] == "integer":
                    value = max(r[self.key] for r in self.rows()) + 1000
                elif "/" in str(value):
                    value = str(value).rsplit("/", 1)[0] + "/new-zz9.txt"
                else:
                    value = f"new-{self.entity.name}-zz9"
            if value is None:
                value = {
                    "integer": 7,
                    "number": 7.5,
                    "boolean": True,
                    "array": [],
                    "object": {},
                }.get(field["type"], "new value")
                if field["enum"]:
                    value = field["enum"][0]
                if field["type"] == "date":
                    value = "2024-05-06"
                if field["type"] == "datetime":
                    value = "2024-05-06T07:08:00"
            values[column] = value
        return values

    def op_create(self, rows: list[dict]) -> None:
        bound = {b[1]: p for p, b in self.plan.bindings.items() if b[0] == "field"}
        sample = rows[0]
        values = self.new_values(sample, list(bound))
        arguments = {bound[c]: v for c, v in values.items()}
        required = set(self.plan.parameters.get("required") or [])
        expected = {c: v for c, v in values.items() if not isinstance(v, (list, dict))}
        if self.entity.key not in bound:
            expected = {c: v for c, v in expected.items() if c != self.key}
        self.add("new", self.check_row(arguments, expected))
        if self.key in bound:
            existing = self.new_values(sample, list(bound))
            existing[self.key] = _decode(self.spec, {self.key: sample[self.key]})[self.key]
            dup = {bound[c]: v for c, v in existing.items()}
            if self.plan.options.get("upsert") or self.plan.options.get("idempotent"):
                self.add(
                    "existing_key_kept_once",
                    self.check_row(dup, {self.key: existing[self.key]})
                    + [f"assert call({self.plan.name!r}, **{dup!r}) == out"],
                )
            else:
                self.expect_error(dup, "duplicate_key")
        for column, param in bound.items():
            ref = self.spec["fields"][column]["ref"]
            if ref:
                bad = dict(arguments)
                bad[param] = _missing(self.specs[ref]["key_type"])
                self.expect_error(bad, f"unknown_{param}")
                break
        optional_missing = [p for p in arguments if p in required and p != bound.get(self.key)]
        if optional_missing:
            partial = {k: v for k, v in arguments.items() if k != optional_missing[-1]}
            self.expect_error(partial, "missing_required")

    def op_batch_create(self, rows: list[dict]) -> None:
        param, binding = self.param("items")
        columns = binding[1]
        items = []
        for i, sample in enumerate(rows[:2]):
            values = self.new_values(sample, columns)
            if self.key not in columns or self.spec["fields"][self.key]["hidden"]:
                text = next(
                    (
                        c
                        for c in columns
                        if self.spec["fields"][c]["type"] == "string"
                        and not self.spec["fields"][c]["ref"]
                        and not self.spec["fields"][c]["enum"]
                    ),
                    None,
                )
                if text is None:
                    raise _Untestable("no text field makes a new item unique")
                values[text] = f"new {text} {i} zz9"
            elif self.spec["fields"][self.key]["type"] == "integer":
                values[self.key] += i
            else:
                values[self.key] = f"{values[self.key]}-{i}"
            items.append(values)
        expr, only = self.rows_expr(False)
        lines = [self.call({param: items})]
        if expr:
            lines += [f"rows = {expr}", "assert len(rows) == 2, rows"]
            lines += [f"again = call({self.plan.name!r}, **{ {param: items}!r})"]
            lines += [f"assert len({expr.replace('out', 'again')}) == 0"]
        self.add("two_new", lines)
        existing = [_decode(self.spec, {c: rows[0][c] for c in columns})]
        lines = [self.call({param: existing})]
        if expr:
            lines += [f"assert len({expr}) == 0"]
        self.add("existing_skipped", lines)

    def op_update(self, rows: list[dict]) -> None:
        param, binding = self.param("key")
        fields = [(p, b[1]) for p, b in self.plan.bindings.items() if b[0] == "field"]
        sample = rows[-1]
        param_f, column = next(
            ((p, c) for p, c in fields if self.spec["fields"][c]["type"] not in ("object",)),
            fields[0],
        )
        field = self.spec["fields"][column]
        current = _decode(self.spec, {column: sample[column]})[column]
        if field["ref"]:
            others = [r[self.specs[field["ref"]]["key"]] for r in self.rows(table=field["ref"])]
            new = next((o for o in others if o != current), None)
            if new is None:
                raise _Untestable(f"no other {field['ref']} to move {column} to")
        elif field["enum"] and field["type"] != "array":
            new = (
                next(v for v in field["enum"] if v != current)
                if len(field["enum"]) > 1
                else current
            )
        elif field["type"] == "integer":
            new = (current or 0) + 7
        elif field["type"] == "number":
            new = round((current or 0) + 1.25, 2)
        elif field["type"] == "boolean":
            new = not current
        elif field["type"] == "array":
            new = ["updated"]
        elif field["type"] == "date":
            new = "2001-02-03"
        elif field["type"] == "datetime":
            new = "2001-02-03T04:05:00"
        else:
            new = f"{current or ''} (updated)".strip()
        expected = {column: new} if field["type"] not in ("array",) else {}
        self.add(
            f"changes_{param_f}",
            self.check_row({param: sample[binding[1]], param_f: new}, expected),
        )
        self.expect_error({param: _missing(self.spec["key_type"]), param_f: new}, "missing")

    def leaf_and_referenced(self, rows: list[dict]) -> tuple[Any, Any]:
        children = self.spec["children"]
        referenced = set()
        for child, column in children:
            table = self.specs[child]["table"]
            referenced |= {
                r[0]
                for r in self.conn.execute(
                    f'SELECT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL'
                )
            }
        leaf = next((r[self.key] for r in reversed(rows) if r[self.key] not in referenced), None)
        ref = next((r[self.key] for r in rows if r[self.key] in referenced), None)
        return leaf, ref

    def op_delete(self, rows: list[dict]) -> None:
        param, binding = self.param("key")
        leaf, referenced = self.leaf_and_referenced(rows)
        if leaf is not None:
            self.add(
                "leaf",
                [
                    self.call({param: leaf}),
                    f"_expect_error(call, {self.plan.name!r}, **{ {param: leaf}!r})",
                ],
            )
        if referenced is not None and not self.plan.options.get("cascade"):
            self.expect_error({param: referenced}, "still_referenced")
        elif referenced is not None:
            self.add(
                "cascade",
                [
                    self.call({param: referenced}),
                    f"_expect_error(call, {self.plan.name!r}, **{ {param: referenced}!r})",
                ],
            )
        self.expect_error({param: _missing(self.spec["key_type"])}, "missing")

    def op_batch_delete(self, rows: list[dict]) -> None:
        keys = self.param("keys")
        items = self.param("items")
        status = self.out.get("mode") == "status"
        if keys is not None:
            leaf, referenced = self.leaf_and_referenced(rows)
            target = (
                referenced if self.plan.options.get("cascade") and referenced is not None else leaf
            )
            if target is None:
                raise _Untestable("every row is still referenced")
            lines = [self.call({keys[0]: [target]})]
            lines.append(
                "assert out['success'] is True" if status else "assert out['deleted'] == 1"
            )
            lines.append(f"again = call({self.plan.name!r}, **{ {keys[0]: [target]}!r})")
            if not status:
                lines.append("assert again['deleted'] == 0")
            self.add("one", lines)
        if items is not None:
            columns = items[1][1]
            item = _decode(self.spec, {c: rows[0][c] for c in columns})
            lines = [self.call({items[0]: [item]})]
            lines.append(
                "assert out['success'] is True" if status else "assert out['deleted'] == 1"
            )
            if not status:
                lines.append(
                    f"assert call({self.plan.name!r}, **{ {items[0]: [item]}!r})['deleted'] == 0"
                )
            self.add("one_item", lines)

    def op_transition(self, rows: list[dict]) -> None:
        param, binding = self.param("key")
        column, target = self.plan.options["column"], self.plan.options["target"]
        movable = next((r for r in rows if r[column] != target), None)
        there = next((r for r in rows if r[column] == target), None)
        if movable is not None:
            self.add(
                f"to_{target}"[:40].replace("-", "_"),
                self.check_row({param: movable[binding[1]]}, {column: target}),
            )
        if there is not None:
            self.expect_error({param: there[binding[1]]}, "already_there")
        self.expect_error({param: _missing(self.spec["key_type"])}, "missing")

    def op_append(self, rows: list[dict]) -> None:
        param, binding = self.param("list_items")
        _column, ref, values = binding[1], binding[2], binding[3]
        sample = rows[0]
        item = {ref: sample[self.key], values: ["zz9 new note"]}
        lines = [self.call({param: [item]}), "assert 'zz9 new note' in json.dumps(out)"]
        lines.append(f"again = call({self.plan.name!r}, **{ {param: [item]}!r})")
        lines.append("assert 'zz9 new note' not in json.dumps(again)")
        self.add("new_value", lines)
        self.expect_error(
            {param: [{ref: _missing(self.spec["key_type"]), values: ["x"]}]}, "unknown"
        )

    def op_remove(self, rows: list[dict]) -> None:
        param, binding = self.param("list_items")
        column, ref, values = binding[1], binding[2], binding[3]
        sample = next((r for r in rows if json.loads(r[column] or "[]")), None)
        if sample is None:
            raise _Untestable(f"no {self.entity.name} has a value in {column}")
        value = json.loads(sample[column])[0]
        item = {ref: sample[self.key], values: [value]}
        self.add("existing_value", [self.call({param: [item]}), "assert out is not None"])
        self.expect_error(
            {param: [{ref: _missing(self.spec["key_type"]), values: ["x"]}]}, "unknown"
        )
