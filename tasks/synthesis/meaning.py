"""Meaning checks: does a synthesized task read like something a person would ask?

The verifier audit proves a task can be scored; these detectors look for the ways a template
task means nothing: a row named by its surrogate id where it has a name, a hop that lands back
on a row already named, a clause said twice, a join of two columns whose values merely
coincide, a write that sets a field to its own value, internal names in the text, and an answer
unlike the one the instruction asks for. Each detector is a small function of the typed task
and the environment's schema facts (``MeaningFacts``) returning a reason in words, or None.

Plain Python: the audit runs them before any replay (``tasks.audit.CHECKS``), the walker uses
``MeaningFacts.same_thing`` to bind only values that are the same thing, and the tests call
each detector on hand-written tasks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from environments.discovery.naming import is_serial_name, singular, words_of
from tasks.synthesis.dependencies import value_flow
from tasks.synthesis.environment_view import EnvironmentView, TableInfo
from tasks.synthesis.task_spec import TaskSpec
from tasks.synthesis.tool_graph import (
    DISPLAY_FIELDS,
    ParamInfo,
    ToolNode,
    key_of,
    records_of,
    resolve_table,
)

Column = tuple[str, str]
INCLUSION_SHARE = 0.8  # an inferred foreign key: this share of a column's values are keys
NATURAL_MAX_CHARS = 60  # a longer unique text is prose, not a name
SUBMIT_TOOLS = ("submit_answer",)


is_surrogate_name = is_serial_name  # the name the detectors read it by


@dataclass
class MeaningFacts:
    """What the schema and data say about an environment's columns: keys, links, names."""

    tables: dict[str, TableInfo]
    nodes: dict[str, ToolNode]
    natural: dict[str, list[str]] = field(default_factory=dict)  # table -> natural identifiers
    inferred: dict[Column, Column] = field(default_factory=dict)  # column -> key it holds
    view: EnvironmentView | None = None

    @classmethod
    def of(cls, view: EnvironmentView, nodes: dict[str, ToolNode]) -> MeaningFacts:
        """Facts of one environment: natural identifiers and inferred foreign keys from its
        rows (read once; the published state is immutable)."""
        tables = view.tables
        facts = cls(tables, nodes, view=view)
        for name, info in tables.items():
            facts.natural[name] = _natural_identifiers(view, info)
        facts.inferred = _inclusion_keys(view)
        return facts

    # -- keys --------------------------------------------------------------------------------

    def is_surrogate_key(self, table: str, column: str) -> bool:
        """A primary key that is a number named id (``id``, ``track_id``): a row's serial,
        not a name a person knows it by."""
        info = self.tables.get(table)
        return bool(
            info and info.key == column and info.is_numeric(column) and is_surrogate_name(column)
        )

    def key_of(self, column: Column | None) -> Column | None:
        """The primary key a column identifies: its own, a declared or named foreign key, or
        one inferred from the data (its values are that key's values)."""
        if column is None or column[0] not in self.tables:
            return None
        if self.view is not None:
            found = key_of(self.view, *column)
        else:
            found = _declared_key(self.tables, column)
        return found or self.inferred.get(column)

    def output_column(self, tool: str, field_name: str | None) -> Column | None:
        node = self.nodes.get(tool)
        if node is None or field_name is None:
            return None
        column = node.output_fields.get(field_name)
        if column is None and node.entity in self.tables:
            if field_name in self.tables[node.entity].columns:
                column = (node.entity, field_name)
        return column

    def same_thing(self, source: Column | None, field_name: str, param: ParamInfo) -> bool:
        """Whether a value read from ``source`` (a result's ``field_name``) is the same thing
        ``param`` takes: the same column, or both name the same key (declared or inferred
        foreign keys, a key referenced by name). Values that merely overlap are not."""
        if param.column is not None and source == param.column:
            return True
        mine = self.key_of(source) if source else None
        if mine is None and source is None and field_name.endswith("_id"):
            mine = self.key_of((param.key[0], field_name)) if param.key else None
        theirs = param.key or self.key_of(param.column)
        return mine is not None and mine == theirs


def _declared_key(tables: dict[str, TableInfo], column: Column) -> Column | None:
    info = tables[column[0]]
    if info.key == column[1]:
        return column
    return info.foreign_keys.get(column[1])


def _natural_identifiers(view: EnvironmentView, info: TableInfo) -> list[str]:
    """Text columns whose values name every row alone (a name, a title, an email, a code):
    all present, all different, short. Display names first."""
    rows = view.rows(info.name)
    if len(rows) < 2:
        return []
    found = []
    for column in info.columns:
        if column == info.key or info.is_numeric(column) or is_surrogate_name(column):
            continue
        values = [r.get(column) for r in rows]
        if not all(isinstance(v, str) and v.strip() for v in values):
            continue
        if len(set(values)) != len(values):
            continue
        if sum(len(v) for v in values) / len(values) > NATURAL_MAX_CHARS:
            continue
        found.append(column)
    order = {name: i for i, name in enumerate(DISPLAY_FIELDS)}
    return sorted(found, key=lambda c: (order.get(c, len(order)), c))


def _inclusion_keys(view: EnvironmentView) -> dict[Column, Column]:
    """Text columns whose values are (mostly) the values of another table's text key and whose
    name refers to that key: a foreign key the schema did not declare (airports.country holding
    countries' codes)."""
    keys = {
        (name, info.key): set(view.column_values(name, info.key))
        for name, info in view.tables.items()
        if info.key and not info.is_numeric(info.key)
    }
    found: dict[Column, Column] = {}
    for name, info in view.tables.items():
        for column in info.columns:
            if info.is_numeric(column) or column == info.key or column in info.foreign_keys:
                continue
            values = set(view.column_values(name, column))
            if len(values) < 2 or not all(isinstance(v, str) for v in values):
                continue
            for key, domain in keys.items():
                if key[0] == name or len(domain) < 2:
                    continue
                if column != key[1] and resolve_table(column, view.tables) != key[0]:
                    continue  # no name ties them: codes that only look alike
                if len(values & domain) >= INCLUSION_SHARE * len(values):
                    found[(name, column)] = key
                    break
    return found


# --- reading a gold chain -------------------------------------------------------------------


def request_text(task: TaskSpec) -> str:
    """The instruction without the answer contract's closing sentence (which names the fields
    of an object answer and the submit tool by design)."""
    from tasks.answer_contract import answer_instruction, task_contract

    text = task.instruction
    try:
        closing = answer_instruction(task_contract(task))
    except (TypeError, ValueError, KeyError):
        return text
    return text[: -len(closing)].rstrip() if closing and text.endswith(closing) else text


def _results(task: TaskSpec) -> list[Any]:
    results = (task.metadata or {}).get("gold_results")
    if isinstance(results, list) and len(results) == len(task.gold_chain):
        return results
    return [c.get("result") for c in task.gold_chain]


def _flows(task: TaskSpec) -> list[set[str]]:
    """Per step, the parameters fed by an earlier result: the recorded bindings of a walk, or
    for a program's trace (no bindings) the values an earlier call returned."""
    chain = task.gold_chain
    if any("inputs" in step for step in chain):
        return [set(step.get("inputs") or {}) for step in chain]
    return [set(flow) for flow in value_flow(chain, _results(task))]


def _states(text: str, value: Any) -> bool:
    """Whether the text states a literal (as a whole token)."""
    shown = value if isinstance(value, str) else json.dumps(value, default=str)
    return re.search(rf"(?<![\w.]){re.escape(shown)}(?![\w]|\.\d)", text) is not None


def _described(task: TaskSpec) -> set[tuple[int, str]]:
    """(step, param) of a key the text tells by another attribute instead (goal_hard)."""
    return {
        (d.get("step"), d.get("param"))
        for d in (task.metadata or {}).get("discovered") or []
        if isinstance(d, dict)
    }


def _fed(task: TaskSpec, index: int, node: ToolNode):
    """(parameter name, its ParamInfo, source step, binding) of every parameter of step
    ``index`` an earlier step's result fed."""
    for name, binding in (task.gold_chain[index].get("inputs") or {}).items():
        p = node.params.get(name)
        source = binding.get("step")
        if p is not None and isinstance(source, int) and 0 <= source < index:
            yield name, p, source, binding


def _single_row(node: ToolNode | None, result: Any) -> dict[str, Any] | None:
    """The one row a read returned (a row, or a list of exactly one), else None."""
    if node is None or not node.returns_rows:
        return None
    records = records_of(result)
    if len(records) != 1:
        return None
    return records[0]


def _row_id(facts: MeaningFacts, table: str | None, record: dict[str, Any]) -> tuple | None:
    info = facts.tables.get(table or "")
    if info is None or not info.key or info.key not in record:
        return None
    return (table, json.dumps(record[info.key], default=str))


def _literal_rows(facts: MeaningFacts, task: TaskSpec, index: int) -> set[tuple]:
    """Rows a step names by a given key value ("the media type whose media type id is 5")."""
    step = task.gold_chain[index]
    node = facts.nodes.get(step["tool"])
    if node is None:
        return set()
    described = _described(task)
    named = set()
    for name, value in (step.get("arguments") or {}).items():
        p = node.params.get(name)
        if name in (step.get("inputs") or {}) or (index, name) in described:
            continue
        if p is not None and p.role == "key" and p.key and not isinstance(value, dict | list):
            named.add((p.key[0], json.dumps(value, default=str)))
    return named


# --- the detectors --------------------------------------------------------------------------


def surrogate_id_naming(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """A row named by its surrogate id ("the track whose id is 497", "the orders whose
    customer id is 1") where its table has a natural identifier a person would use (a name,
    a title, an email, a code); for a reference to another table's row, one a read tool can
    find that row by."""
    described = _described(task)
    text = request_text(task)
    flows = _flows(task)
    searchable = {
        q.column for n in facts.nodes.values() if n.kind == "read" for q in n.params.values()
    }
    for index, step in enumerate(task.gold_chain):
        node = facts.nodes.get(step["tool"])
        if node is None or (node.kind == "write" and node.action == "create"):
            continue
        for name, value in (step.get("arguments") or {}).items():
            p = node.params.get(name)
            if p is None or p.key is None or name in flows[index]:
                continue
            if (index, name) in described or not _states(text, value):
                continue
            table, column = p.key
            natural = facts.natural.get(table) or []
            if p.column != p.key:  # a reference: only where the agent can find the row
                natural = [n for n in natural if (table, n) in searchable]
            if facts.is_surrogate_key(table, column) and natural:
                return (
                    f"step {index + 1} names a {words_of(singular(table))} by its surrogate "
                    f"{words_of(column)} {value!r} where it has a {words_of(natural[0])}"
                )
    return None


def tautological_hop(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """A hop that passes on a value the text already gave for the same key ("the tracks whose
    media type id is the media type id of the media type whose media type id is 5"), or a read
    that lands back on a row already named since the last write."""
    results = _results(task)
    named: dict[tuple, int] = {}  # row -> the step that named it (since the last write)
    for index, step in enumerate(task.gold_chain):
        node = facts.nodes.get(step["tool"])
        if node is None:
            continue
        for name, p, source, _ in _fed(task, index, node):
            if p.key is None:
                continue
            value = (step.get("arguments") or {}).get(name)
            row = (p.key[0], json.dumps(value, default=str))
            if row in _literal_rows(facts, task, source):
                return (
                    f"step {index + 1} takes {words_of(name)} {value!r} from step {source + 1}, "
                    f"which was given that very {words_of(singular(p.key[0]))}"
                )
        if node.kind == "write":
            named.clear()  # a read after a write may look again: the row has changed
            continue
        record = _single_row(node, results[index] if index < len(results) else None)
        row = _row_id(facts, node.entity, record) if record is not None else None
        sources = {b.get("step") for b in (step.get("inputs") or {}).values()}
        if (
            row is not None
            and row in named
            and sources
            and row
            not in {
                _row_id(facts, facts.nodes[task.gold_chain[s]["tool"]].entity, r)
                for s in sources
                if isinstance(s, int) and task.gold_chain[s]["tool"] in facts.nodes
                for r in [_single_row(facts.nodes[task.gold_chain[s]["tool"]], results[s])]
                if r is not None
            }
        ):  # a round trip back to it (a lookup of the details of that very row is no hop)
            return (
                f"step {index + 1} lands back on the {words_of(singular(node.entity))} "
                f"step {named[row] + 1} already named"
            )
        for found in _literal_rows(facts, task, index) | ({row} if row else set()):
            named.setdefault(found, index)
    return None


CLAUSE_WORDS = 5  # a repeated run of this many words with a "whose" in it is a clause said twice
LONG_CLAUSE = 8  # ... when it carries a value ("... is 7"), or is this long


def repeated_clause(task: TaskSpec, facts: MeaningFacts | None = None) -> str | None:
    """The same clause ("the product variant whose item id is 7") twice in one instruction,
    where a person would say "it"."""
    text = request_text(task)
    tokens = re.findall(r'"[^"]*"|[\w.\-]+', text.lower())
    width = CLAUSE_WORDS
    seen: dict[tuple[str, ...], int] = {}
    for start in range(len(tokens) - width + 1):
        gram = tuple(tokens[start : start + width])
        if "whose" not in gram or gram[0] != "the":
            continue
        if gram in seen and start >= seen[gram] + width:
            end = start + width  # the longest repeat from here
            while (
                end < len(tokens)
                and seen[gram] + end - start < start
                and tokens[end] == tokens[seen[gram] + end - start]
            ):
                end += 1
            span = tokens[start:end]
            literal = any(t.startswith('"') or re.fullmatch(r"-?[\d.]+", t) for t in span)
            if literal or len(span) >= LONG_CLAUSE:  # the same row, not two rows alike
                return f"the clause {' '.join(span)!r} is said twice"
        seen.setdefault(gram, start)
    return None


def coincidental_join(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """A step fed a value from an earlier result where the two columns are not the same thing
    (no key, foreign key or shared column ties them): an item's price taken as a variant's
    price, an employee's first name as a customer's."""
    for index, step in enumerate(task.gold_chain):
        node = facts.nodes.get(step["tool"])
        if node is None:
            continue
        for name, p, source, binding in _fed(task, index, node):
            field_name = binding.get("field")
            if field_name is None:
                continue
            column = facts.output_column(task.gold_chain[source]["tool"], field_name)
            if not facts.same_thing(column, field_name, p):
                where = f"{column[0]}.{column[1]}" if column else field_name
                target = f"{p.column[0]}.{p.column[1]}" if p.column else name
                return (
                    f"step {index + 1} takes its {words_of(name)} from {where} of step "
                    f"{source + 1}: {target} is not the same thing, the values only coincide"
                )
    return None


def _target_row(node: ToolNode, arguments: dict[str, Any], facts: MeaningFacts):
    """(table, key value) of the row an update acts on, with the parameter naming it."""
    info = facts.tables.get(node.entity or "")
    if info is None or not info.key:
        return None
    for name, value in arguments.items():
        p = node.params.get(name)
        if p is not None and (p.column == (node.entity, info.key) or name == "id"):
            return (node.entity, json.dumps(value, default=str)), name
    return None


def _row_before(facts: MeaningFacts, task: TaskSpec, index: int, row: tuple) -> dict | None:
    """The row as it stood before step ``index``: the latest read of it since the last write,
    else the initial state when no earlier write touched its table."""
    results = _results(task)
    table = row[0]
    for earlier in range(index - 1, -1, -1):
        step = task.gold_chain[earlier]
        node = facts.nodes.get(step["tool"])
        if node is None:
            continue
        if node.kind == "write":
            if node.entity == table:
                return None
            continue
        for record in records_of(results[earlier]) if earlier < len(results) else []:
            if node.entity == table and _row_id(facts, table, record) == row:
                return record
    if facts.view is None or table not in facts.tables:
        return None
    key = facts.tables[table].key
    for record in facts.view.rows(table):
        if json.dumps(record.get(key), default=str) == row[1]:
            return record
    return None


def self_assignment(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """A write that sets a field to its current value, or to a value read from the same
    field of the same row ("set the product id of the variant whose item id is 7 to the
    product id of the variant whose item id is 7")."""
    results = _results(task)
    for index, step in enumerate(task.gold_chain):
        node = facts.nodes.get(step["tool"])
        if node is None or node.kind != "write" or node.action != "update":
            continue
        arguments = step.get("arguments") or {}
        target = _target_row(node, arguments, facts)
        if target is None:
            continue
        row, key_param = target
        before = _row_before(facts, task, index, row)
        for name, value in arguments.items():
            p = node.params.get(name)
            if name == key_param or p is None or p.column is None or p.column[0] != node.entity:
                continue
            column = p.column[1]
            binding = (step.get("inputs") or {}).get(name)
            if binding is not None and isinstance(binding.get("step"), int):
                source = binding["step"]
                source_node = facts.nodes.get(task.gold_chain[source]["tool"])
                records = records_of(results[source]) if source < len(results) else []
                item = binding.get("item") or 0
                record = records[item] if 0 <= item < len(records) else None
                if (
                    source_node is not None
                    and source_node.entity == node.entity
                    and binding.get("field") == column
                    and record is not None
                    and _row_id(facts, node.entity, record) == row
                ):
                    return (
                        f"step {index + 1} sets the {words_of(column)} of a "
                        f"{words_of(singular(node.entity))} to its own {words_of(column)}"
                    )
            if before is not None and column in before and before[column] == value:
                return (
                    f"step {index + 1} sets the {words_of(column)} of a "
                    f"{words_of(singular(node.entity))} to {value!r}, its current value"
                )
    return None


PLAIN_WORD = re.compile(r"[a-z]+")
ORDER_WORDS = re.compile(r"\b(order|sort|group) by\b(?! \")", re.IGNORECASE)
KEY_VALUE_WORDS = re.compile(r"\b(the|its|whose) (value|key)\b", re.IGNORECASE)


def _unquoted(text: str) -> str:
    return re.sub(r'"[^"]*"', '""', text)


def leaked_internal_name(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """Internal names in the text: a tool name, a table or column identifier outside quotes
    (``user_order``, ``CustomerId``), "order by" as a field, the "value"/"key" of a key-value
    table."""
    text = _unquoted(request_text(task))
    plain_words = {
        word
        for table, info in facts.tables.items()
        for word in (table, singular(table), *info.columns)
        if PLAIN_WORD.fullmatch(word)
    }
    tools = sorted(set(facts.nodes) | set(task.tools) - set(SUBMIT_TOOLS), key=len, reverse=True)
    for name in tools:
        if name in SUBMIT_TOOLS or name in plain_words:
            continue  # a tool named `account` after its table reads as the word it is
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
            return f"the text names the tool {name}"
    identifiers = {t for t in facts.tables} | {c for i in facts.tables.values() for c in i.columns}
    for token in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text):
        internal = "_" in token or re.search(r"[a-z][A-Z]", token) is not None
        if internal and token in identifiers and token not in SUBMIT_TOOLS:
            return f"the text uses the identifier {token}"
    found = ORDER_WORDS.search(text)
    if found:
        return f"the text says {found.group(0)!r} as if it were a field"
    key_value = any(
        {"value"} & set(i.columns) and ({"key", "name"} & set(i.columns))
        for i in facts.tables.values()
    )
    found = KEY_VALUE_WORDS.search(text)
    if key_value and found:
        return f"the text says {found.group(0)!r}: a column of a key-value table"
    return None


ID_WORDS = {"id", "ids", "key", "keys", "code", "codes", "number", "numbers", "email", "emails"}
COUNT_QUESTION = re.compile(
    r"(?:^|: |, |Then )(how many|what is the number of|count the)\b", re.IGNORECASE
)  # at the head of the question: "the number of the element" may be a column
QUESTION_HEAD = re.compile(
    r"\b(?:List|What (?:is|are)|Report|Give|Find|Tell me|I need|Show me|Work out)\s+(?:the\s+|all\s+|every\s+)?"
    r"([a-z0-9 ]+?)(?=\s+(?:of|whose|that|which|with|where|in|for|from|you|among)\b|[.?(,]|$)",
    re.IGNORECASE,
)


def _answer_kind(task: TaskSpec, facts: MeaningFacts) -> str:
    """rows | mapping | values | number | none: what the reference answer is made of. An
    object keyed by data values ({"PK": "higher", "US": "equal"}) is a mapping the instruction
    asked for by its keys, not a row."""
    answer = task.reference_answer
    spec = (task.metadata or {}).get("answer") or {}
    if spec.get("shape") == "none" or (answer is None and not task.answer_contract):
        return "none"
    if isinstance(answer, dict):
        columns = {c for info in facts.tables.values() for c in info.columns}
        return "rows" if not answer or set(answer) & columns else "mapping"
    if isinstance(answer, list) and any(isinstance(a, dict) for a in answer):
        return "rows"
    if isinstance(answer, int | float) and not isinstance(answer, bool):
        return "number"
    return "values"


def answer_shape_mismatch(task: TaskSpec, facts: MeaningFacts) -> str | None:
    """The answer expected is not the one asked for: "List the ... ids" or "the emails" while
    whole rows are expected, "how many" answered by rows, or rows asked for and values
    expected."""
    kind = _answer_kind(task, facts)
    if kind in ("none", "mapping"):
        return None
    questions = re.split(r"(?<=[.?])\s+", request_text(task))
    asked = next(
        (q for q in reversed(questions) if QUESTION_HEAD.search(q) or COUNT_QUESTION.search(q)),
        "",
    )
    if kind == "rows" and COUNT_QUESTION.search(asked) and "in full" not in asked:
        return "the instruction asks how many, the answer expected is rows"
    head = QUESTION_HEAD.search(asked)
    if head is None:
        return None
    last = head.group(1).split()[-1].lower() if head.group(1).split() else ""
    field_words = {
        words_of(c).split()[-1]
        for info in facts.tables.values()
        for c in info.columns
        if words_of(c).split()
    }
    entity_words = {words_of(singular(t)).split()[-1] for t in facts.tables if words_of(t)}
    asks_values = last in ID_WORDS or (
        singular(last) in field_words and singular(last) not in entity_words
    )
    if kind == "rows" and asks_values and "in full" not in asked:
        return f"the instruction asks for the {head.group(1)}, the answer expected is whole rows"
    if kind == "values" and "in full" in asked:
        return "the instruction asks for rows in full, the answer expected is values"
    return None


Detector = Callable[[TaskSpec, MeaningFacts], str | None]
DETECTORS: dict[str, Detector] = {
    "surrogate_id_naming": surrogate_id_naming,
    "tautological_hop": tautological_hop,
    "repeated_clause": repeated_clause,
    "coincidental_join": coincidental_join,
    "self_assignment": self_assignment,
    "leaked_internal_name": leaked_internal_name,
    "answer_shape_mismatch": answer_shape_mismatch,
}


def meaning_failures(task: TaskSpec, facts: MeaningFacts) -> dict[str, str | None]:
    """Every detector's reason (None where it found nothing)."""
    return {name: detector(task, facts) for name, detector in DETECTORS.items()}


# The checks a walk applies to every step it takes (the rest are about the text).
WALK_CHECKS: tuple[Detector, ...] = (coincidental_join, tautological_hop, self_assignment)
