"""Schema-driven tool generator: the read, query and write tools every database supports.

For each table it writes get_<entity>, search_<entities> (typed filters, ranges, substring,
paging), list_<children>_for_<parent> through foreign keys, aggregate_<entities> (count, sum,
avg, min, max grouped by a low-cardinality column), and create/update/delete_<entity> with
validation (required columns, types, foreign keys, uniqueness) and the domain rules the rows
support (`domain_rules`: state columns change only through transition tools such as
cancel_<entity> along the transitions the data shows; categorical columns accept only their
observed or declared values; numeric columns keep their observed sign and declared bounds). Date
parameters take ISO 8601 (`format: date` / `date-time`), and a date alone bounds a date-time
filter by whole days.
A table keyed by several columns (a link table, parent key + date) gets add_/remove_ tools
(add_track_to_playlist refuses an existing link or unknown keys, remove_ names a link that does
not exist), get_/update_ by every key part when it has other fields (a flight date's status),
and a link between two tables lists either side (list_tracks_for_playlist). A key the caller
gives (text, a date) still gets a create tool; an empty create inserts the defaults.
Entity and tool names are English (`naming`): orders -> order / orders, people -> person.
Each tool comes with an OpenAI JSON schema, a kind (read/write) and several unit tests whose
expectations are computed now from the real rows, so a tool that passes them really answers
from this database.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .domain_rules import StateRule, TableRules, infer_rules
from .naming import with_article, words_of
from .schema import Table, read_schema
from .tool_prelude import __file__ as _PRELUDE_FILE
from .tool_prelude import _compare as _compare_clause

_JSON_TYPES = {"integer": "integer", "real": "number", "boolean": "boolean"}
_MARKER = "# --- tools.py prelude starts here ---\n"


@dataclass
class ToolSet:
    """Tools as separable parts, so only verified ones are published."""

    prelude: str = ""
    imports: list[str] = field(default_factory=list)  # allowlisted imports of LLM tools
    functions: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, dict] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    tests: dict[str, list[str]] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)  # "schema" | "llm"

    def names(self) -> list[str]:
        return list(self.functions)

    def as_dict(self) -> dict:
        """Plain JSON-able form, for job queues."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ToolSet:
        return cls(**data)

    def tools_source(self, names: list[str] | None = None) -> str:
        chosen = self.names() if names is None else names
        header = '"""Environment tools: one function per tool, `def name(db, **params)`."""\n\n'
        body = "\n\n".join(self.functions[n] for n in chosen)
        imports = "".join(f"{line}\n" for line in self.imports)
        return header + imports + "\n" + self.prelude + "\n\n" + body + "\n"

    def tests_source(self, names: list[str] | None = None) -> str:
        chosen = self.names() if names is None else names
        header = '"""Tool tests computed from the real rows of the state database."""\n\n'
        tests = [t for n in chosen for t in self.tests.get(n, [])]
        return header + _TEST_PRELUDE + "\n\n" + "\n\n".join(tests) + "\n"

    def manifest_tools(self, names: list[str] | None = None) -> list[dict]:
        chosen = self.names() if names is None else names
        return [self.schemas[n] for n in chosen]

    def merge(self, other: ToolSet, replace: bool = False) -> None:
        for name in other.functions:
            if name in self.functions and not replace:
                continue
            self.functions[name] = other.functions[name]
            self.schemas[name] = other.schemas[name]
            self.kinds[name] = other.kinds[name]
            self.tests[name] = other.tests.get(name, [])
            self.origin[name] = other.origin.get(name, "llm")


_TEST_PRELUDE = '''def _is_refusal(exc):
    """A failure in words: an argument or a rule refused, not a crash (a database error, a
    TypeError) nor an escape, timeout or unknown tool."""
    kind = getattr(exc, "error_kind", None)
    if kind is not None:
        return kind in ("tool_error", "invalid_arguments")
    slips = (KeyError, IndexError, UnicodeError)
    refusals = (ValueError, LookupError, PermissionError)
    return isinstance(exc, refusals) and not isinstance(exc, slips)


def _expect_error(call, tool, **arguments):
    """The call must fail in words: the runtime raises a refusal, or returns an error result."""
    try:
        result = call(tool, **arguments)
    except Exception as exc:
        if not _is_refusal(exc):
            raise  # a crash, an escape, a timeout or an unknown tool is never the expected error
        return str(exc)
    if isinstance(result, dict) and result.get("error"):
        return str(result["error"])
    raise AssertionError(f"{tool} should have failed for {arguments!r}, returned {result!r}")'''


def prelude_source() -> str:
    text = Path(_PRELUDE_FILE).read_text()
    return text.split(_MARKER, 1)[1].strip() + "\n"


def _spec(table: Table, rules: TableRules) -> dict:
    columns = {c.name: {"kind": c.kind, "not_null": c.not_null} for c in table.columns}
    required = [
        c.name
        for c in table.columns
        if c.not_null
        and c.default is None
        and not (c.name == table.primary_key and table.integer_key)
    ]
    key_kind = table.column(table.primary_key).kind if table.primary_key else "text"
    return {
        "table": table.name,
        "entity": table.entity,
        "pk": table.primary_key,
        "key_kind": key_kind,
        "columns": columns,
        "required": required,
        "fks": {k: list(v) for k, v in table.foreign_keys.items()},
        "children": [list(c) for c in table.children],
        "unique": sorted(table.unique),
        "group_columns": table.group_columns(),
        "measures": table.measure_columns(),
        **rules.spec(),
    }


def _prop(kind: str, description: str) -> dict:
    prop: dict[str, Any] = {"type": _JSON_TYPES.get(kind, "string"), "description": description}
    if kind == "date":
        prop["description"] += " (ISO date YYYY-MM-DD)"
        prop["format"] = "date"
    elif kind == "datetime":
        prop["description"] += (
            " (ISO date-time YYYY-MM-DDTHH:MM:SS; a date YYYY-MM-DD alone covers its whole day)"
        )
        prop["format"] = "date-time"
    return prop


def _number_text(value: Any) -> str:
    """5000 -> '5,000', 12.5 -> '12.5': observed values as a reader writes them."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.4f}".rstrip("0").rstrip(".")


def _tool_source(name: str, doc: str, body: str) -> str:
    """A generated tool's source: ``def name(db, **params)`` with ``doc``, returning ``body``."""
    return f'def {name}(db, **params):\n    """{doc}"""\n    return {body}\n'


def _refusal_test(name: str, case: str, arguments: str) -> str:
    """A generated test that calling tool ``name`` with ``arguments`` (source) fails."""
    return f"def test_{name}__{case}(call):\n    _expect_error(call, {name!r}, {arguments})\n"


def _schema(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_RESERVED = {"limit", "offset", "order_by", "descending"}
_PAGING = {
    "limit": {"type": "integer", "description": "Maximum rows to return (default 20, max 100)."},
    "offset": {"type": "integer", "description": "Rows to skip, for paging (default 0)."},
}


class _Generator:
    def __init__(self, db_path: Path, label: str) -> None:
        self.schema = read_schema(db_path)
        self.conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        self.conn.row_factory = sqlite3.Row
        self.label = label
        taken: set[str] = set()
        self.rules = {name: infer_rules(self.conn, t, taken) for name, t in self.schema.items()}
        self.specs = {name: _spec(t, self.rules[name]) for name, t in self.schema.items()}
        for name, t in self.schema.items():
            self.specs[name].setdefault("keys", list(t.key_columns))  # the key's columns
        self.out = ToolSet(prelude=prelude_source())
        self.spec_names: dict[str, str] = {}

    def spec_const(self, table: str) -> str:
        return f"_{table.upper()}"

    def add(self, name: str, kind: str, func: str, schema: dict, tests: list[str]) -> None:
        if name in self.out.functions or len(name) > 64:
            return
        self.out.functions[name] = func
        self.out.schemas[name] = schema
        self.out.kinds[name] = kind
        self.out.tests[name] = tests
        self.out.origin[name] = "schema"

    def rows(self, table: Table, where: str = "", args: tuple = (), limit: int = 5) -> list[dict]:
        # A composite key orders by its columns (a WITHOUT ROWID table has no rowid).
        order = ", ".join(f'"{c}"' for c in table.key_columns) or "rowid"
        sql = f'SELECT * FROM "{table.name}" {where} ORDER BY {order} LIMIT {limit}'
        return [dict(r) for r in self.conn.execute(sql, args)]

    def generate(self) -> ToolSet:
        constants = [f"{self.spec_const(n)} = {spec!r}" for n, spec in self.specs.items()]
        self.out.prelude += "\n\n" + "\n".join(constants) + "\n"
        for table in self.schema.values():
            if table.row_count == 0:
                continue
            if table.primary_key:
                self.get_tool(table)
            self.search_tool(table)
            for child_table, column in table.children:
                self.children_tool(table, self.schema[child_table], column)
            self.aggregate_tool(table)
            if table.primary_key:
                self.create_tool(table)
                self.update_tool(table)
                self.delete_tool(table)
                for rule in self.rules[table.name].states.values():
                    self.transition_tools(table, rule)
        for table in self.schema.values():
            self.link_tools(table)
        return self.out

    # --- read tools -----------------------------------------------------------------------
    def get_tool(self, t: Table) -> None:
        name, pk = f"get_{t.entity}", t.primary_key
        kind = t.column(pk).kind
        func = _tool_source(
            name, f"Get one {t.entity} by {pk}.", f"_get(db, {self.spec_const(t.name)}, params)"
        )
        cols = ", ".join(c.name for c in t.columns)
        schema = _schema(
            name,
            f"Get one {_noun(t)} from {self.label} by its key {pk}. Returns all fields: {cols}. "
            f"Fails with a not-found error when no {_noun(t)} has that {pk}.",
            {pk: _prop(kind, f"The {_noun(t)}'s {pk}.")},
            [pk],
        )
        sample = self.rows(t, limit=3)
        tests = []
        for i, row in enumerate(sample[:2]):
            other = next(
                (c.name for c in t.columns if c.name != pk and row[c.name] is not None), pk
            )
            tests.append(
                f"def test_{name}__existing_{i}(call):\n"
                f"    row = call({name!r}, {_kw({pk: row[pk]})})\n"
                f"    assert row[{pk!r}] == {row[pk]!r}\n"
                f"    assert row[{other!r}] == {row[other]!r}\n"
            )
        missing = _missing_key(kind)
        tests.append(_refusal_test(name, "missing", _kw({pk: missing})))
        self.add(name, "read", func, schema, tests)

    def search_tool(self, t: Table) -> None:
        name = f"search_{t.entities}"
        props: dict[str, dict] = {}
        for c in t.columns:
            if c.name in _RESERVED:
                continue
            if c.kind == "text":
                props[c.name] = _prop(c.kind, f"Exact {c.name}.")
                props[f"{c.name}_contains"] = _prop(
                    c.kind, f"Case-insensitive substring of {c.name}."
                )
            elif c.ordered:
                props[c.name] = _prop(c.kind, f"Exact {c.name}.")
                props[f"min_{c.name}"] = _prop(c.kind, f"Smallest {c.name} (inclusive).")
                props[f"max_{c.name}"] = _prop(c.kind, f"Largest {c.name} (inclusive).")
            else:
                props[c.name] = _prop(c.kind, f"Exact {c.name}.")
        props.update(_PAGING)
        names = [c.name for c in t.columns]
        props["order_by"] = {"type": "string", "enum": names, "description": "Column to sort by."}
        props["descending"] = {"type": "boolean", "description": "Sort from largest to smallest."}
        func = _tool_source(
            name,
            f"Search {_nouns(t)} by field filters; returns total and one page of rows.",
            f"_search(db, {self.spec_const(t.name)}, params)",
        )
        schema = _schema(
            name,
            f"Search the {_nouns(t)} of {self.label}. Filter by exact values, "
            f"by substring for text (<field>_contains), by inclusive range for numbers and dates "
            f"(min_<field>, max_<field>); sort and page with order_by, descending, limit, offset. "
            f"Returns {{total, count, rows}}.",
            props,
            [],
        )
        self.add(name, "read", func, schema, self.search_tests(t, name))

    def search_tests(self, t: Table, name: str) -> list[str]:
        tests = []
        text_col = next(
            (c.name for c in t.columns if c.kind == "text" and 1 < t.distinct[c.name]), None
        )
        sample = self.rows(t, limit=1)[0]
        if text_col and sample[text_col] is not None:
            value = sample[text_col]
            total = self.count(t, f'"{text_col}" = ?', (value,))
            tests.append(
                f"def test_{name}__exact_{text_col}(call):\n"
                f"    out = call({name!r}, {_kw({text_col: value, 'limit': 100})})\n"
                f"    assert out['total'] == {total}\n"
                f"    assert all(r[{text_col!r}] == {value!r} for r in out['rows'])\n"
            )
            fragment = value[1:4] if len(value) >= 4 else value
            total = self.count(t, f'instr(lower("{text_col}"), lower(?)) > 0', (fragment,))
            tests.append(
                f"def test_{name}__contains_{text_col}(call):\n"
                f"    out = call({name!r}, {_kw({text_col + '_contains': fragment})})\n"
                f"    assert out['total'] == {total}\n"
            )
        num = next((c for c in t.columns if c.ordered and t.distinct[c.name] > 2), None)
        if num is not None:
            values = [
                r[0]
                for r in self.conn.execute(
                    f'SELECT "{num.name}" FROM "{t.name}" WHERE "{num.name}" IS NOT NULL '
                    f'ORDER BY "{num.name}"'
                )
            ]
            low, high = values[len(values) // 4], values[(3 * len(values)) // 4]
            # counted with the tools' own comparison (date-times compare as instants)
            where = " AND ".join(
                _compare_clause(num.name, num.kind, op, v) for op, v in ((">=", low), ("<=", high))
            )
            total = self.count(t, where, (low, high))
            check = (
                ""
                if num.kind == "datetime"
                else f"    assert all({low!r} <= r[{num.name!r}] <= {high!r} for r in out['rows'])\n"
            )
            tests.append(
                f"def test_{name}__range_{num.name}(call):\n"
                f"    out = call({name!r}, {_kw({'min_' + num.name: low, 'max_' + num.name: high})})\n"
                f"    assert out['total'] == {total}\n" + check
            )
        tests.append(
            f"def test_{name}__paging(call):\n"
            f"    out = call({name!r}, limit=2, offset=1)\n"
            f"    assert out['total'] == {t.row_count}\n"
            f"    assert out['count'] == {min(2, max(0, t.row_count - 1))}\n"
        )
        tests.append(_refusal_test(name, "unknown_filter", "no_such_field=1"))
        return tests

    def count(self, t: Table, where: str, args: tuple) -> int:
        sql = f'SELECT COUNT(*) FROM "{t.name}" WHERE {where}'
        return self.conn.execute(sql, args).fetchone()[0]

    def children_tool(self, parent: Table, child: Table, column: str) -> None:
        if not parent.primary_key:
            return
        name = f"list_{child.entities}_for_{parent.entity}"
        if name in self.out.functions or sum(1 for c, _ in parent.children if c == child.name) > 1:
            name = f"list_{child.entities}_by_{column}"
        pk = parent.primary_key
        kind = parent.column(pk).kind
        func = _tool_source(
            name,
            f"{_nouns(child)} whose {column} is this {_noun(parent)}.",
            f"_list_children(db, {self.spec_const(child.name)}, {column!r}, "
            f"{self.spec_const(parent.name)}, params)",
        )
        schema = _schema(
            name,
            f"List the {_nouns(child)} that belong to one {_noun(parent)} "
            f"({child.name}.{column} = {parent.name}.{pk}) in {self.label}. "
            f"Fails when the {_noun(parent)} does not exist. Returns {{total, count, rows}}.",
            {pk: _prop(kind, f"The {_noun(parent)}'s {pk}."), **_PAGING},
            [pk],
        )
        busiest = self.conn.execute(
            f'SELECT "{column}", COUNT(*) FROM "{child.name}" WHERE "{column}" IS NOT NULL '
            f'GROUP BY "{column}" ORDER BY COUNT(*) DESC, "{column}" LIMIT 1'
        ).fetchone()
        tests = []
        if busiest is not None:
            key, total = busiest[0], busiest[1]
            tests.append(
                f"def test_{name}__busiest(call):\n"
                f"    out = call({name!r}, {_kw({pk: key, 'limit': 100})})\n"
                f"    assert out['total'] == {total}\n"
                f"    assert all(r[{column!r}] == {key!r} for r in out['rows'])\n"
            )
        tests.append(_refusal_test(name, "missing_parent", _kw({pk: _missing_key(kind)})))
        self.add(name, "read", func, schema, tests)

    def aggregate_tool(self, t: Table) -> None:
        numeric = self.specs[t.name]["measures"]
        ordered = [c.name for c in t.columns if c.ordered]
        groups = t.group_columns()
        if not numeric and not groups:
            return
        name = f"aggregate_{t.entities}"
        props = {
            "metric": {
                "type": "string",
                "enum": ["count", "sum", "avg", "min", "max"],
                "description": "count rows, or sum/avg/min/max of a column.",
            },
            "column": {
                "type": "string",
                "enum": sorted(set(numeric + ordered)) or [c.name for c in t.columns],
                "description": "Column to aggregate"
                + (f" (sum/avg: {', '.join(numeric)} only)." if numeric else " (no sum/avg)."),
            },
        }
        if groups:
            props["group_by"] = {
                "type": "string",
                "enum": groups,
                "description": "Group rows by this low-cardinality column.",
            }
        func = _tool_source(
            name,
            f"Count, sum, average, min or max over {_nouns(t)}, optionally grouped.",
            f"_aggregate(db, {self.spec_const(t.name)}, params)",
        )
        schema = _schema(
            name,
            f"Aggregate the {_nouns(t)} of {self.label}: count, sum, avg, min or max of a "
            f"column, over all rows"
            + (f" or grouped by one of {', '.join(groups)}" if groups else "")
            + ". Returns {value}"
            + (" or {groups: [{group, value}]}." if groups else "."),
            props,
            ["metric"],
        )
        tests = [
            f"def test_{name}__count(call):\n"
            f"    assert call({name!r}, metric='count')['value'] == {t.row_count}\n"
        ]
        if numeric:
            col = numeric[0]
            low, high, total = self.conn.execute(
                f'SELECT MIN("{col}"), MAX("{col}"), SUM("{col}") FROM "{t.name}"'
            ).fetchone()
            tests.append(
                f"def test_{name}__min_max_{col}(call):\n"
                f"    assert call({name!r}, metric='min', column={col!r})['value'] == {low!r}\n"
                f"    assert call({name!r}, metric='max', column={col!r})['value'] == {high!r}\n"
            )
            if total is not None:
                tests.append(
                    f"def test_{name}__sum_{col}(call):\n"
                    f"    value = call({name!r}, metric='sum', column={col!r})['value']\n"
                    f"    assert abs(value - {total!r}) <= 1e-6 * max(1.0, abs({total!r}))\n"
                )
        if groups:
            group = groups[0]
            counts = {
                r[0]: r[1]
                for r in self.conn.execute(
                    f'SELECT "{group}", COUNT(*) FROM "{t.name}" GROUP BY "{group}"'
                )
            }
            tests.append(
                f"def test_{name}__count_by_{group}(call):\n"
                f"    out = call({name!r}, metric='count', group_by={group!r})\n"
                f"    assert {{g['group']: g['value'] for g in out['groups']}} == {counts!r}\n"
            )
        tests.append(_refusal_test(name, "bad_metric", "metric='median'"))
        self.add(name, "read", func, schema, tests)

    # --- write tools ----------------------------------------------------------------------
    def field_props(self, t: Table, skip_key: bool, skip_states: bool = False) -> dict:
        rules = self.rules[t.name]
        props = {}
        for c in t.columns:
            if skip_key and c.name == t.primary_key:
                continue
            if skip_states and c.name in rules.states:
                continue
            note = ""
            if c.name in t.foreign_keys:
                ref = t.foreign_keys[c.name]
                note = f" Must be an existing {ref[0]}.{ref[1]}."
            prop = _prop(c.kind, f"{c.name} ({c.kind}).{note}")
            if c.name in rules.states:
                prop["enum"] = list(rules.states[c.name].values)
                prop["description"] += " One of the observed values."
            elif c.name in rules.enums:
                prop["enum"] = list(rules.enums[c.name])
                source = "declared" if c.name in rules.declared else "observed"
                listed = ", ".join(str(v) for v in prop["enum"])
                prop["description"] += f" One of the {source} values: {listed}."
            bound = rules.bounds.get(c.name, {})
            for limit in ("minimum", "maximum"):
                if limit not in bound:
                    continue
                exclusive = bound.get(f"exclusive_{limit}", False)
                key = f"exclusive{limit.capitalize()}" if exclusive else limit
                prop[key] = bound[limit]
                word = {"minimum": "at least", "maximum": "at most"}[limit]
                if exclusive:
                    word = {"minimum": "more than", "maximum": "less than"}[limit]
                why = "as declared" if c.name in rules.declared else f"like every stored {c.name}"
                prop["description"] += f" {word} {bound[limit]}, {why}."
            if bound.get("integer"):
                prop["multipleOf"] = 1
                prop["description"] += " Whole numbers only."
            if bound.get("min_length"):
                prop["minLength"] = bound["min_length"]
            if c.name in rules.ranges:
                low, high = rules.ranges[c.name]
                prop["description"] += f" Observed {_number_text(low)} to {_number_text(high)}."
            props[c.name] = prop
        return props

    def rule_tests(self, t: Table, name: str, base: dict, columns: list[str]) -> list[str]:
        """A value outside the observed states and a value of the wrong sign are refused."""
        rules, tests = self.rules[t.name], []
        state = next((c for c in columns if c in rules.states), None)
        enum = next((c for c in columns if c in rules.enums and c != state), None)
        for column in (state, enum):
            if column is None:
                continue
            bad = dict(base, **{column: "banana"})
            tests.append(
                f"def test_{name}__unknown_{column}(call):\n"
                f"    message = _expect_error(call, {name!r}, **{bad!r})\n"
                f"    assert {column!r} in message or 'banana' in message, message\n"
            )
        capped = next((c for c in columns if "maximum" in rules.bounds.get(c, {})), None)
        if capped is not None and rules.bounds[capped]["maximum"] > 0:
            over = rules.bounds[capped]["maximum"] + 1
            bad = dict(base, **{capped: over})
            tests.append(
                f"def test_{name}__above_{capped}(call):\n"
                f"    message = _expect_error(call, {name!r}, **{bad!r})\n"
                f"    assert {capped!r} in message, message\n"
            )
        signed = next((c for c in columns if "minimum" in rules.bounds.get(c, {})), None)
        signed = signed or next((c for c in columns if "maximum" in rules.bounds.get(c, {})), None)
        if signed is not None:
            sign = -1 if "minimum" in rules.bounds[signed] else 1
            value = sign * (5 if t.column(signed).kind == "integer" else 5.5)
            bad = dict(base, **{signed: value})
            tests.append(
                f"def test_{name}__sign_{signed}(call):\n"
                f"    message = _expect_error(call, {name!r}, **{bad!r})\n"
                f"    assert {signed!r} in message, message\n"
            )
        return tests

    def new_row(self, t: Table) -> dict | None:
        """A row to create: a real row's values with a fresh key (values stay realistic)."""
        base = self.rows(t, limit=1)
        if not base:
            return None
        row = dict(base[0])
        pk = t.primary_key
        kind = t.column(pk).kind
        # A fresh key the caller gives: past the largest number, a day no row has, text marked new.
        row[pk] = _fresh_value(kind, row[pk], self.max_value(t, pk))
        if row[pk] is None or self.count(t, f'"{pk}" = ?', (row[pk],)):
            return None
        for column in t.unique - {pk}:
            if isinstance(row.get(column), str):
                row[column] = f"{row[column]} (new)"
            elif column in row:
                row[column] = None
        return _booleans(t, {k: v for k, v in row.items() if v is not None or k == pk})

    def create_tool(self, t: Table) -> None:
        name, pk = f"create_{t.entity}", t.primary_key
        spec = self.specs[t.name]
        func = _tool_source(
            name,
            f"Create {_a(t)}; validates required fields, types, links, uniqueness.",
            f"_create(db, {self.spec_const(t.name)}, params)",
        )
        auto = " Leave out the key to get the next number." if t.integer_key else ""
        required = ", ".join(spec["required"]) or "nothing (every field is optional)"
        schema = _schema(
            name,
            f"Create {_a(t, 'new')} in {self.label}. Required: {required}."
            f"{auto} Links to other tables must exist and unique fields must be new. "
            f"Returns the created row.",
            self.field_props(t, skip_key=False),
            spec["required"],
        )
        row = self.new_row(t)
        if row is None:
            return
        tests = [
            f"def test_{name}__valid(call):\n"
            f"    created = call({name!r}, **{row!r})\n"
            f"    assert created[{pk!r}] == {row[pk]!r}\n"
        ]
        existing = self.rows(t, limit=1)[0]
        dup = _booleans(t, {k: v for k, v in existing.items() if v is not None})
        tests.append(_refusal_test(name, "duplicate_key", f"**{dup!r}"))
        tests.append(self.empty_create_test(t, name))
        if spec["required"]:
            partial = {k: v for k, v in row.items() if k != spec["required"][-1]}
            tests.append(
                f"def test_{name}__missing_required(call):\n"
                f"    message = _expect_error(call, {name!r}, **{partial!r})\n"
                f"    assert {spec['required'][-1]!r} in message\n"
            )
        fk_column = next((c for c in t.foreign_keys if c in row), None)
        if fk_column:
            ref_kind = (
                self.schema[t.foreign_keys[fk_column][0]].column(t.foreign_keys[fk_column][1]).kind
            )
            bad = dict(row, **{fk_column: _missing_key(ref_kind)})
            tests.append(_refusal_test(name, f"unknown_{fk_column}", f"**{bad!r}"))
        typed = next((c for c in t.columns if c.numeric and c.name in row), None)
        if typed is not None:
            bad = dict(row, **{typed.name: "not a number"})
            tests.append(_refusal_test(name, f"wrong_type_{typed.name}", f"**{bad!r}"))
        tests += self.rule_tests(t, name, row, [c.name for c in t.columns])
        self.add(name, "write", func, schema, tests)

    def empty_create_test(self, t: Table, name: str) -> str:
        """Called with no field: refused, naming a required field, or (every field optional,
        no CHECK the defaults might break) a row of defaults is created."""
        required = self.specs[t.name]["required"]
        if required:
            return (
                f"def test_{name}__no_fields(call):\n"
                f"    message = _expect_error(call, {name!r})\n"
                f"    assert {required[0]!r} in message, message\n"
            )
        sql = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (t.name,)
        ).fetchone()[0]
        search = f"search_{t.entities}"
        if "CHECK" in (sql or "").upper() or search not in self.out.functions:
            return _refusal_or_row_test(name)
        return (
            f"def test_{name}__no_fields(call):\n"
            f"    before = call({search!r}, limit=1)['total']\n"
            f"    created = call({name!r})\n"
            f"    assert isinstance(created, dict) and created, created\n"
            f"    assert call({search!r}, limit=1)['total'] == before + 1\n"
        )

    def update_tool(self, t: Table) -> None:
        name, pk = f"update_{t.entity}", t.primary_key
        rules = self.rules[t.name]
        editable = [
            c
            for c in t.columns
            if c.name != pk
            and c.name not in t.unique
            and c.kind != "boolean"
            and c.name not in rules.states
        ]
        if not editable:
            return
        func = _tool_source(
            name,
            f"Change fields of one {_noun(t)}; the key cannot change.",
            f"_update(db, {self.spec_const(t.name)}, params)",
        )
        kind = t.column(pk).kind
        props = {
            pk: _prop(kind, f"The {_noun(t)}'s {pk}."),
            **self.field_props(t, skip_key=True, skip_states=True),
        }
        states = "".join(
            f" Its {c} changes only through {', '.join(r.as_spec()['tools']) or 'no tool'}."
            for c, r in rules.states.items()
        )
        schema = _schema(
            name,
            f"Update fields of one existing {_noun(t)} in {self.label} (identified by {pk}). "
            f"Give only the fields to change; links must exist.{states} Returns the updated row.",
            props,
            [pk],
        )
        rows = self.rows(t, limit=3)
        row = rows[-1]
        column = editable[0]
        new_value = _changed_value(column.kind, row[column.name], rules.bounds.get(column.name))
        choices = rules.enums.get(column.name)
        if choices:
            new_value = next((v for v in choices if v != row[column.name]), choices[0])
        if column.name in t.foreign_keys:
            ref_table, ref_col = t.foreign_keys[column.name]
            other = self.conn.execute(
                f'SELECT "{ref_col}" FROM "{ref_table}" WHERE "{ref_col}" IS NOT ? LIMIT 1',
                (row[column.name],),
            ).fetchone()
            if other is None:
                return
            new_value = other[0]
        tests = [
            f"def test_{name}__changes_{column.name}(call):\n"
            f"    out = call({name!r}, {_kw({pk: row[pk], column.name: new_value})})\n"
            f"    assert out[{column.name!r}] == {new_value!r}\n",
            _refusal_test(name, "missing", _kw({pk: _missing_key(kind), column.name: new_value})),
            _refusal_test(name, "unknown_field", _kw({pk: row[pk], "no_such_field": 1})),
        ]
        tests += self.rule_tests(
            t, name, {pk: row[pk]}, [c.name for c in t.columns if c.name != pk]
        )
        self.add(name, "write", func, schema, tests)

    def transition_tools(self, t: Table, rule: StateRule) -> None:
        """<verb>_<entity> per target value with a verb, set_<entity>_<column> for the rest."""
        pk, column = t.primary_key, rule.column
        kind = t.column(pk).kind
        how = {
            "lifecycle": "a known lifecycle order",
            "free": "any change between observed values, never out of a final value",
        }.get(rule.how, f"the order in which values first appear by {rule.how[19:]}")
        moves = f"Allowed {column} moves ({how}): {rule.describe()}."
        const = self.spec_const(t.name)
        for target, name in rule.tools.items():
            sources = [v for v in rule.values if target in rule.transitions.get(v, [])]
            func = _tool_source(
                name,
                f"Set one {_noun(t)}'s {column} to {target!r} where the lifecycle allows.",
                f"_transition(db, {const}, {column!r}, {target!r}, {name!r}, params)",
            )
            schema = _schema(
                name,
                f"Set the {column} of one {_noun(t)} in {self.label} to '{target}'. Allowed only "
                f"when its {column} is {' or '.join(repr(v) for v in sources)}; any other move is "
                f"refused with the allowed ones. {moves} Returns the updated row.",
                {pk: _prop(kind, f"The {_noun(t)}'s {pk}.")},
                [pk],
            )
            tests = self.transition_tests(t, rule, name, target, {})
            self.add(name, "write", func, schema, tests)
        if not rule.set_tool:
            return
        name = rule.set_tool
        targets = [
            v
            for v in rule.values
            if v not in rule.tools and any(v in ts for ts in rule.transitions.values())
        ]
        func = _tool_source(
            name,
            f"Move one {_noun(t)}'s {column} to another value the lifecycle allows.",
            f"_transition(db, {const}, {column!r}, None, {name!r}, params)",
        )
        others = ", ".join(rule.tools.values())
        schema = _schema(
            name,
            f"Change the {column} of one {_noun(t)} in {self.label} to "
            f"{' or '.join(repr(v) for v in targets)}"
            f"{f' (other values through {others})' if others else ''}. Refused for a value "
            f"outside {rule.values} or a move the data never shows. {moves} "
            f"Returns the updated row.",
            {
                pk: _prop(kind, f"The {_noun(t)}'s {pk}."),
                column: {
                    "type": "string",
                    "enum": list(rule.values),
                    "description": f"The new {column}.",
                },
            },
            [pk, column],
        )
        tests = []
        for target in targets[:2]:
            tests += self.transition_tests(t, rule, name, target, {column: target})
        self.add(name, "write", func, schema, tests)

    def transition_tests(
        self, t: Table, rule: StateRule, name: str, target: str, extra: dict
    ) -> list[str]:
        pk, column = t.primary_key, rule.column
        tag = _ident(target)
        sources = [v for v in rule.values if target in rule.transitions.get(v, [])]
        refused = [v for v in rule.values if v not in sources]
        refused.sort(key=lambda v: (v == target, bool(rule.transitions.get(v))))
        tests = []
        allowed = self.row_with(t, column, sources)
        if allowed is not None:
            key, current = allowed
            tests.append(
                f"def test_{name}__{tag}_from_{_ident(current)}(call):\n"
                f"    out = call({name!r}, {_kw({pk: key, **extra})})\n"
                f"    assert out[{column!r}] == {target!r}\n"
                f"    assert call('get_{t.entity}', {_kw({pk: key})})[{column!r}] == {target!r}\n"
            )
        blocked = self.row_with(t, column, refused[:1])
        if blocked is not None:
            key, current = blocked
            tests.append(
                f"def test_{name}__{tag}_refused_from_{_ident(current)}(call):\n"
                f"    message = _expect_error(call, {name!r}, {_kw({pk: key, **extra})})\n"
                f"    assert {target!r} in message and {current!r} in message, message\n"
                f"    assert call('get_{t.entity}', {_kw({pk: key})})[{column!r}] == {current!r}\n"
            )
        if allowed is not None:
            tests.append(
                f"def test_{name}__{tag}_unknown_value(call):\n"
                f"    message = _expect_error(call, {name!r}, "
                f"{_kw({pk: allowed[0], **extra, column: 'banana'})})\n"
                f"    assert {column!r} in message or 'banana' in message, message\n"
            )
        tests.append(
            _refusal_test(
                name, f"{tag}_missing", _kw({pk: _missing_key(t.column(pk).kind), **extra})
            )
        )
        return tests

    def row_with(self, t: Table, column: str, values: list[str]) -> tuple[Any, str] | None:
        """(key, value) of the first row (by key) whose column holds one of values."""
        if not values:
            return None
        marks = ", ".join("?" for _ in values)
        found = self.conn.execute(
            f'SELECT "{t.primary_key}", "{column}" FROM "{t.name}" WHERE "{column}" IN ({marks}) '
            f'ORDER BY "{t.primary_key}" LIMIT 1',
            values,
        ).fetchone()
        return None if found is None else (found[0], found[1])

    def delete_tool(self, t: Table) -> None:
        name, pk = f"delete_{t.entity}", t.primary_key
        kind = t.column(pk).kind
        func = _tool_source(
            name,
            f"Delete one {_noun(t)}"
            + ("; refused while other rows refer to it." if t.children else "."),
            f"_delete(db, {self.spec_const(t.name)}, params)",
        )
        schema = _schema(
            name,
            f"Delete one {_noun(t)} from {self.label} by {pk}.{_referrers(t)}",
            {pk: _prop(kind, f"The {_noun(t)}'s {pk}.")},
            [pk],
        )
        leaf = self.leaf_row(t)
        tests = []
        if leaf is not None:
            tests.append(
                f"def test_{name}__leaf(call):\n"
                f"    assert call({name!r}, {_kw({pk: leaf})})['deleted'] is True\n"
                f"    _expect_error(call, 'get_{t.entity}', {_kw({pk: leaf})})\n"
            )
        referenced = self.referenced_row(t)
        if referenced is not None:
            tests.append(_refusal_test(name, "still_referenced", _kw({pk: referenced})))
        tests.append(_refusal_test(name, "missing", _kw({pk: _missing_key(kind)})))
        self.add(name, "write", func, schema, tests)

    def leaf_row(self, t: Table) -> Any:
        conditions = [
            f'"{t.primary_key}" NOT IN (SELECT "{col}" FROM "{child}" WHERE "{col}" IS NOT NULL)'
            for child, col in t.children
        ]
        where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
        sql = f'SELECT "{t.primary_key}" FROM "{t.name}" {where} ORDER BY "{t.primary_key}" DESC LIMIT 1'
        found = self.conn.execute(sql).fetchone()
        return None if found is None else found[0]

    def referenced_row(self, t: Table) -> Any:
        for child, col in t.children:
            found = self.conn.execute(
                f'SELECT "{col}" FROM "{child}" WHERE "{col}" IS NOT NULL LIMIT 1'
            ).fetchone()
            if found is not None:
                return found[0]
        return None

    # --- tables keyed by several columns: link tables, parent key + date ----------------------
    def link_tools(self, t: Table) -> None:
        """add_/remove_ for a table whose primary key is several columns, and list_ tools from
        either side of a link between two tables (playlist_track: tracks of a playlist and
        playlists of a track)."""
        if not t.composite_key or t.row_count == 0:
            return
        refs = {
            c: t.foreign_keys[c]
            for c in t.key_columns
            if c in t.foreign_keys
            and t.foreign_keys[c][0] in self.schema
            and t.foreign_keys[c][1] == self.schema[t.foreign_keys[c][0]].primary_key
        }
        add_name, remove_name = f"add_{t.entity}", f"remove_{t.entity}"
        if len(t.key_columns) == 2 and len(refs) == 2:
            a, b = (self.schema[refs[c][0]] for c in t.key_columns)
            if a.name != b.name:
                add_name = f"add_{b.entity}_to_{a.entity}"
                remove_name = f"remove_{b.entity}_from_{a.entity}"
        self.add_link_tool(t, add_name, refs)
        self.remove_link_tool(t, remove_name)
        self.get_link_tool(t)
        self.update_link_tool(t)
        if len(t.key_columns) == 2 and len(refs) == 2:
            first, second = t.key_columns
            self.linked_list_tool(t, first, second)
            self.linked_list_tool(t, second, first)

    def link_key_words(self, t: Table) -> str:
        return ", ".join(t.key_columns)

    def fresh_link(self, t: Table) -> dict | None:
        """A row with a key no row holds: a new combination of existing referenced rows, or a
        fresh value for a key column that references nothing; other fields from a real row."""
        order = ", ".join(f'"{c}"' for c in t.key_columns)
        first = self.conn.execute(f'SELECT * FROM "{t.name}" ORDER BY {order} LIMIT 1').fetchone()
        if first is None:
            return None
        row = {k: v for k, v in dict(first).items() if v is not None}
        for column in t.unique - set(t.key_columns):
            if isinstance(row.get(column), str):
                row[column] = f"{row[column]} (new)"
            else:
                row.pop(column, None)
        free = [c for c in t.key_columns if c not in t.foreign_keys]
        if free:
            column = free[-1]
            fresh = _fresh_value(t.column(column).kind, row[column], self.max_value(t, column))
            if fresh is None:
                return None
            row[column] = fresh
            return _booleans(t, row)
        sources = ", ".join(
            f'"{t.foreign_keys[c][0]}" AS r{i}' for i, c in enumerate(t.key_columns)
        )
        picked = ", ".join(f'r{i}."{t.foreign_keys[c][1]}"' for i, c in enumerate(t.key_columns))
        linked = " AND ".join(
            f'l."{c}" = r{i}."{t.foreign_keys[c][1]}"' for i, c in enumerate(t.key_columns)
        )
        found = self.conn.execute(
            f"SELECT {picked} FROM {sources} WHERE NOT EXISTS "
            f'(SELECT 1 FROM "{t.name}" AS l WHERE {linked}) ORDER BY {picked} LIMIT 1'
        ).fetchone()
        if found is None:
            return None
        row.update(zip(t.key_columns, found, strict=True))
        return _booleans(t, row)

    def max_value(self, t: Table, column: str) -> Any:
        return self.conn.execute(f'SELECT MAX("{column}") FROM "{t.name}"').fetchone()[0]

    def link_search(self, t: Table, key: dict) -> str:
        """Source of an expression: how many rows hold this key, through the search tool."""
        return f"call('search_{t.entities}', {_kw(key)})['total']"

    def add_link_tool(self, t: Table, name: str, refs: dict) -> None:
        spec, keys = self.specs[t.name], t.key_columns
        props = self.field_props(t, skip_key=False)  # enums, bounds and formats, as create
        for column in keys:
            props[column]["description"] += " Part of the key."
        required = list(dict.fromkeys(keys + [c for c in spec["required"] if c in props]))
        func = _tool_source(
            name,
            f"Add one {_noun(t)}, keyed by {self.link_key_words(t)}; refuses an existing one.",
            f"_add_link(db, {self.spec_const(t.name)}, {keys!r}, params)",
        )
        linked = "".join(
            f" {c} must be an existing {ref_table}.{ref_column}."
            for c, (ref_table, ref_column) in refs.items()
        )
        schema = _schema(
            name,
            f"Add {_a(t)} to {self.label}, identified by {self.link_key_words(t)} together."
            f"{linked} Refused when {_a(t)} with the same {self.link_key_words(t)} already "
            f"exists. Returns the added row.",
            props,
            required,
        )
        row = self.fresh_link(t)
        if row is None:
            return
        key = {c: row[c] for c in keys}
        tests = [
            f"def test_{name}__adds(call):\n"
            f"    assert {self.link_search(t, key)} == 0\n"
            f"    added = call({name!r}, **{row!r})\n"
            f"    assert {{k: added[k] for k in {keys!r}}} == {key!r}\n"
            f"    assert {self.link_search(t, key)} == 1\n"
        ]
        order = ", ".join(f'"{c}"' for c in keys)
        existing = dict(
            self.conn.execute(f'SELECT * FROM "{t.name}" ORDER BY {order} LIMIT 1').fetchone()
        )
        dup = _booleans(t, {k: v for k, v in existing.items() if v is not None})
        tests.append(
            f"def test_{name}__duplicate(call):\n"
            f"    message = _expect_error(call, {name!r}, **{dup!r})\n"
            f"    assert 'already exists' in message, message\n"
        )
        for column in refs:
            kind = t.column(column).kind
            bad = dict(row, **{column: _missing_key(kind)})
            tests.append(
                f"def test_{name}__unknown_{column}(call):\n"
                f"    message = _expect_error(call, {name!r}, **{bad!r})\n"
                f"    assert {column!r} in message, message\n"
            )
            break
        partial = {k: v for k, v in row.items() if k != keys[-1]}
        tests.append(
            f"def test_{name}__missing_{keys[-1]}(call):\n"
            f"    message = _expect_error(call, {name!r}, **{partial!r})\n"
            f"    assert {keys[-1]!r} in message, message\n"
        )
        self.add(name, "write", func, schema, tests)

    def remove_link_tool(self, t: Table, name: str) -> None:
        keys = t.key_columns
        func = _tool_source(
            name,
            f"Remove one {_noun(t)} by {self.link_key_words(t)}; refuses one that does not exist.",
            f"_remove_link(db, {self.spec_const(t.name)}, {keys!r}, params)",
        )
        schema = _schema(
            name,
            f"Remove the {_noun(t)} identified by {self.link_key_words(t)} from {self.label}. "
            f"Fails, naming it, when no such {_noun(t)} exists. Returns {{removed, "
            f"{self.link_key_words(t)}}}.",
            {c: _prop(t.column(c).kind, f"{c} of the {_noun(t)} to remove.") for c in keys},
            list(keys),
        )
        order = ", ".join(f'"{c}"' for c in keys)
        last = self.conn.execute(
            f'SELECT {order} FROM "{t.name}" ORDER BY {order} DESC LIMIT 1'
        ).fetchone()
        fresh = self.fresh_link(t)
        tests = []
        if last is not None:
            key = dict(zip(keys, last, strict=True))
            tests.append(
                f"def test_{name}__removes(call):\n"
                f"    assert {self.link_search(t, key)} == 1\n"
                f"    assert call({name!r}, {_kw(key)})['removed'] is True\n"
                f"    assert {self.link_search(t, key)} == 0\n"
                f"    _expect_error(call, {name!r}, {_kw(key)})\n"
            )
        if fresh is not None:
            key = {c: fresh[c] for c in keys}
            tests.append(
                f"def test_{name}__missing(call):\n"
                f"    message = _expect_error(call, {name!r}, {_kw(key)})\n"
                f"    assert all(repr(v) in message for v in {list(key.values())!r}), message\n"
            )
        tests.append(_refusal_test(name, "incomplete_key", _kw({keys[0]: last[0]} if last else {})))
        self.add(name, "write", func, schema, tests)

    def key_props(self, t: Table, purpose: str) -> dict:
        return {
            c: _prop(t.column(c).kind, f"{c} of the {_noun(t)}{purpose}.") for c in t.key_columns
        }

    def get_link_tool(self, t: Table) -> None:
        """get_<entity> by every part of a composite key (a flight on one date)."""
        name, keys = f"get_{t.entity}", t.key_columns
        if len(keys) == len(t.columns):
            return  # a pure link: the key is all there is to read
        func = _tool_source(
            name,
            f"Get one {_noun(t)} by {self.link_key_words(t)}.",
            f"_get_link(db, {self.spec_const(t.name)}, {keys!r}, params)",
        )
        cols = ", ".join(c.name for c in t.columns)
        schema = _schema(
            name,
            f"Get one {_noun(t)} from {self.label} by its key {self.link_key_words(t)} "
            f"(all together). Returns all fields: {cols}. Fails with a not-found error when no "
            f"{_noun(t)} has that key.",
            self.key_props(t, ""),
            list(keys),
        )
        tests = []
        for i, row in enumerate(self.rows(t, limit=2)):
            key = {c: row[c] for c in keys}
            other = next((c.name for c in t.columns if c.name not in keys), keys[-1])
            expected = _booleans(t, dict(row))[other]
            tests.append(
                f"def test_{name}__existing_{i}(call):\n"
                f"    row = call({name!r}, {_kw(key)})\n"
                f"    assert {{k: row[k] for k in {keys!r}}} == {key!r}\n"
                f"    assert row[{other!r}] == {expected!r}\n"
            )
        fresh = self.fresh_link(t)
        if fresh is not None:
            missing = {c: fresh[c] for c in keys}
            tests.append(_refusal_test(name, "missing", _kw(missing)))
        tests.append(
            _refusal_test(
                name, "incomplete_key", _kw({keys[0]: _missing_key(t.column(keys[0]).kind)})
            )
        )
        self.add(name, "read", func, schema, tests)

    def update_link_tool(self, t: Table) -> None:
        """update_<entity> of a composite-key row: its other fields, with the rules of create."""
        name, keys = f"update_{t.entity}", t.key_columns
        editable = [c for c in t.columns if c.name not in keys and c.name not in t.unique]
        if not editable:
            return
        func = _tool_source(
            name,
            f"Change fields of one {_noun(t)}; its key {self.link_key_words(t)} cannot change.",
            f"_update_link(db, {self.spec_const(t.name)}, {keys!r}, params)",
        )
        fields = {k: v for k, v in self.field_props(t, skip_key=False).items() if k not in keys}
        schema = _schema(
            name,
            f"Update fields of one existing {_noun(t)} in {self.label}, identified by "
            f"{self.link_key_words(t)} together (the key cannot change). Give only the fields "
            f"to change; links must exist. Returns the updated row.",
            {**self.key_props(t, " to change"), **fields},
            list(keys),
        )
        rules = self.rules[t.name]
        row = self.rows(t, limit=3)[-1]
        key = {c: row[c] for c in keys}
        column = editable[0]
        current = _booleans(t, dict(row))[column.name]
        if column.kind == "boolean":
            new_value = not current
        else:
            new_value = _changed_value(column.kind, current, rules.bounds.get(column.name))
        choices = rules.enums.get(column.name) or (
            rules.states[column.name].values if column.name in rules.states else None
        )
        if choices:
            new_value = next((v for v in choices if v != current), None)
        if column.name in t.foreign_keys:
            ref_table, ref_col = t.foreign_keys[column.name]
            other = self.conn.execute(
                f'SELECT "{ref_col}" FROM "{ref_table}" WHERE "{ref_col}" IS NOT ? LIMIT 1',
                (current,),
            ).fetchone()
            new_value = None if other is None else other[0]
        if new_value is None or new_value == current:
            return
        tests = [
            f"def test_{name}__changes_{column.name}(call):\n"
            f"    out = call({name!r}, {_kw({**key, column.name: new_value})})\n"
            f"    assert out[{column.name!r}] == {new_value!r}\n"
            f"    assert {{k: out[k] for k in {keys!r}}} == {key!r}\n",
            _refusal_test(name, "no_field", _kw(key)),
            _refusal_test(name, "unknown_field", _kw({**key, "no_such_field": 1})),
        ]
        fresh = self.fresh_link(t)
        if fresh is not None:
            missing = {c: fresh[c] for c in keys}
            tests.append(_refusal_test(name, "missing", _kw({**missing, column.name: new_value})))
        tests += self.rule_tests(t, name, key, [c.name for c in editable])
        self.add(name, "write", func, schema, tests)

    def linked_list_tool(self, t: Table, via: str, target_column: str) -> None:
        """list_<targets>_for_<parent>: the rows one parent is linked to through the link table."""
        parent = self.schema[t.foreign_keys[via][0]]
        target = self.schema[t.foreign_keys[target_column][0]]
        if parent.name == target.name:
            name = f"list_{target.entities}_linked_by_{via}"
        else:
            name = f"list_{target.entities}_for_{parent.entity}"
            if name in self.out.functions:
                name = f"list_{target.entities}_via_{t.name}"
        pk = parent.primary_key
        func = _tool_source(
            name,
            f"{_nouns(target)} linked to one {_noun(parent)} through {t.name}.",
            f"_list_linked(db, {self.spec_const(t.name)}, {via!r}, {target_column!r}, "
            f"{self.spec_const(target.name)}, {self.spec_const(parent.name)}, params)",
        )
        schema = _schema(
            name,
            f"List the {_nouns(target)} linked to one {_noun(parent)} in {self.label} "
            f"(through {t.name}: {via} = the {_noun(parent)}'s {pk}, {target_column} = the "
            f"{_noun(target)}). Fails when the {_noun(parent)} does not exist. "
            f"Returns {{total, count, rows}} with the {_nouns(target)}' fields.",
            {pk: _prop(parent.column(pk).kind, f"The {_noun(parent)}'s {pk}."), **_PAGING},
            [pk],
        )
        ref = t.foreign_keys[target_column][1]
        # A field only the target rows have, so returning the link rows fails the tests.
        own = [c.name for c in target.columns if c.name not in {x.name for x in t.columns}]
        shown = [ref, *own[:1]]
        picked = ", ".join(f'x."{c}"' for c in shown)
        tests = []
        busiest = self.conn.execute(
            f'SELECT "{via}", COUNT(*) FROM "{t.name}" GROUP BY "{via}" '
            f'ORDER BY COUNT(*) DESC, "{via}" LIMIT 3'
        ).fetchall()
        for rank, (key, total) in enumerate(busiest):
            expected = sorted(
                tuple(r)
                for r in self.conn.execute(
                    f'SELECT {picked} FROM "{target.name}" AS x JOIN "{t.name}" AS l '
                    f'ON l."{target_column}" = x."{ref}" WHERE l."{via}" = ? '
                    f'ORDER BY x."{ref}" LIMIT 100',
                    (key,),
                )
            )
            tests.append(
                f"def test_{name}__linked_{rank}(call):\n"
                f"    out = call({name!r}, {_kw({pk: key, 'limit': 100})})\n"
                f"    assert out['total'] == {total}\n"
                f"    got = sorted(tuple(r[c] for c in {shown!r}) for r in out['rows'])\n"
                f"    assert got == {expected!r}\n"
            )
        tests.append(
            _refusal_test(name, "missing_parent", _kw({pk: _missing_key(parent.column(pk).kind)}))
        )
        self.add(name, "read", func, schema, tests)


def _referrers(t: Table) -> str:
    """' Refused while rows of film_actor or inventory refer to it.', each table once; nothing
    when no table refers to this one."""
    tables = list(dict.fromkeys(child for child, _ in t.children))
    if not tables:
        return ""
    named = tables[0] if len(tables) == 1 else ", ".join(tables[:-1]) + " or " + tables[-1]
    return f" Refused while rows of {named} refer to it."


def _refusal_or_row_test(name: str) -> str:
    """An empty call either creates a row or is refused in words, never a crash."""
    return (
        f"def test_{name}__no_fields(call):\n"
        f"    try:\n"
        f"        created = call({name!r})\n"
        f"    except Exception as exc:\n"
        f"        if not _is_refusal(exc):\n"
        f"            raise\n"
        f"        return\n"
        f"    assert isinstance(created, dict) and created, created\n"
    )


def _noun(t: Table) -> str:
    """The entity in words for a description: order_item -> order item."""
    return words_of(t.entity)


def _nouns(t: Table) -> str:
    return words_of(t.entities)


def _a(t: Table, adjective: str = "") -> str:
    """'an order item', 'a new order item': the article by the sound of the next word."""
    return with_article(f"{adjective} {_noun(t)}".strip())


def _booleans(t: Table, row: dict) -> dict:
    """Stored 0/1 flags as JSON booleans, as a caller would send them."""
    for c in t.columns:
        if c.kind == "boolean" and row.get(c.name) is not None:
            row[c.name] = bool(row[c.name])
    return row


def _kw(arguments: dict) -> str:
    """Keyword arguments for a generated call, safe for any column name."""
    return f"**{_plain(arguments)!r}"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _missing_key(kind: str) -> Any:
    if kind == "integer":
        return -987654
    if kind == "real":
        return -987654.5
    if kind in ("date", "datetime"):
        return "1111-11-11"
    return "NO-SUCH-KEY-zz9"


def _ident(value: str) -> str:
    """A value as part of a test function name."""
    text = "".join(ch if ch.isalnum() else "_" for ch in str(value).lower()).strip("_")
    return text[:30] or "value"


def _fresh_value(kind: str, value: Any, largest: Any) -> Any:
    """A key value no row holds: past the largest stored one, or the value marked new."""
    if kind == "integer":
        return (largest or 0) + 1000
    if kind == "real":
        return float(largest or 0) + 1000.5
    if kind == "date":
        return "2999-12-31"
    if kind == "datetime":
        return "2999-12-31T00:00:00"
    if kind == "text":
        return f"{value}-NEW"
    return None


def _changed_value(kind: str, value: Any, bound: dict | None = None) -> Any:
    """A different value of the same kind, on the side of zero the column keeps."""
    bound = bound or {}
    step = -1 if "maximum" in bound else 1
    if kind in ("integer", "real"):
        size = 7 if kind == "integer" else (1.0 if bound.get("integer") else 1.25)
        low, high = bound.get("minimum"), bound.get("maximum")
        for delta in (size * step, -size * step, step, -step):
            new = round((value or 0) + delta, 4)
            if (
                low is None or new > low or (new == low and not bound.get("exclusive_minimum"))
            ) and (
                high is None or new < high or (new == high and not bound.get("exclusive_maximum"))
            ):
                return new
        return value
    if kind in ("date", "datetime"):
        return "2001-02-03"
    return f"{value or ''} (updated)".strip()


def generate_tools(db_path: Path | str, label: str = "this environment") -> ToolSet:
    """All schema-driven tools, schemas, kinds and tests for one database."""
    generator = _Generator(Path(db_path), label)
    try:
        return generator.generate()
    finally:
        generator.conn.close()
