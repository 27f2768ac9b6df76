"""Instruction text for a gold chain, at one of three tiers, offline or by the configured LLM.

- ``explicit``: one sentence per step ("Step 2: Look up the country ..."), saying how each step
  takes its inputs from earlier ones. No tool is named, and no row order is assumed: a value
  taken from a list of several rows comes from "the first of them when sorted by <field>",
  which the walker made true (see ``graph_tasks._binding_value``).
- ``goal``: what is wanted and the given facts, never the tools or the order of the steps. A
  nested noun phrase is composed backwards from the last step along the ``inputs`` bindings
  ("the name of the country of the airport whose iata is "OTS""); writes are imperative goals
  ("Delete ...", "Set the ... of ... to ..., then ...").
- ``goal_hard``: the goal plus a check true of the gold run ("First check that its
  population is above 1000"), a value the agent must discover (one sampled key is replaced by a
  description of its row: "the airport whose name is ..." instead of its iata), and a fact about
  an unrelated row.

Every literal the gold run sampled (``concrete_values``) is in the text, except the one a
``goal_hard`` task describes instead (``Rendered.discovered``).
"""

from __future__ import annotations

import json
import logging
import math
import random
import re
from dataclasses import dataclass, field
from typing import Any

from environments.discovery.naming import plural, singular, words_of
from tasks.synthesis.arguments import is_identity
from tasks.synthesis.intents import AGGREGATION, LOOKUP, MULTI_STEP_WORKFLOW, walk_intent
from tasks.synthesis.meaning import is_surrogate_name
from tasks.synthesis.tool_graph import DISPLAY_FIELDS, ParamInfo, ToolNode, is_row_list, records_of

log = logging.getLogger(__name__)

TIERS = ("explicit", "goal", "goal_hard")


def words(name: str) -> str:
    return words_of(name)


def fmt(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return json.dumps(value)


def _thing(node: ToolNode) -> str:
    return words(singular(node.entity)) if node.entity else "record"


def _things(node: ToolNode) -> str:
    return words(plural(singular(node.entity))) if node.entity else "records"


def _column(node: ToolNode, name: str) -> str:
    """The column a parameter filters on, in words; a column of another table (the parent a
    list is for: ``list_airports_for_country(alpha_2)``) names that table: "country alpha 2"."""
    p = node.params.get(name)
    if not p or not p.column:
        return words(name)
    table, column = p.column
    if (
        node.entity
        and table != node.entity
        and not words(column).startswith(words(singular(table)))
    ):
        return f"{words(singular(table))} {words(column)}"
    return words(column)


def _reference_words(node: ToolNode, name: str) -> str:
    """ "customer" for ``customer_id``: a reference column said as the thing it names."""
    column = _column(node, name)
    for tail in (" id", " key", " ref"):
        if column.endswith(tail) and len(column) > len(tail):
            return column[: -len(tail)]
    return column


def _rows(step: dict[str, Any]) -> int:
    """How many rows a step's result holds (1 for a single row)."""
    result = step.get("result")
    if not is_row_list(result):
        return 1
    return len(records_of(result))


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


METRICS = {"count": "number", "sum": "total", "avg": "average", "min": "smallest", "max": "largest"}


# --- explicit tier: the steps ---------------------------------------------------------------

ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _reference(steps: list[dict[str, Any]], nodes: dict[str, ToolNode], binding) -> str:
    source = steps[binding["step"]]
    node = nodes[source["tool"]]
    where = f"step {binding['step'] + 1}"
    item = binding.get("item")
    if item is None:
        owner = f"the {_thing(node)} from {where}"
    elif binding.get("sorted_by"):
        end = "last" if binding.get("descending") else "first"
        owner = (
            f"the {end} {_thing(node)} returned in {where} "
            f"when sorted by {words(binding['sorted_by'])}"
        )
    elif "result" in source and _rows(source) == 1:
        owner = f"the {_thing(node)} returned in {where}"
    else:  # a chain recorded before row picks were stated: its own words
        ordinal = ORDINALS[item] if item < len(ORDINALS) else f"#{item + 1}"
        owner = f"the {ordinal} {_thing(node)} returned in {where}"
    return f"the {words(binding['field'])} of {owner}"


# A filter parameter's role -> its words in a step ("price at least 5") and in a goal
# statement ("price is at least 5").
FILTER_WORDS = {
    "min": ("at least", "is at least"),
    "max": ("at most", "is at most"),
    "text": ("containing", "contains"),
}


def filter_phrase(role: str, column: str, shown: str, goal: bool) -> str | None:
    """The bound a min/max/text parameter puts on a column, or None for other roles."""
    pair = FILTER_WORDS.get(role)
    return f"{column} {pair[goal]} {shown}" if pair else None


def _argument_phrase(node: ToolNode, name: str, value: Any, binding, steps, nodes) -> str:
    p = node.params.get(name)
    role = p.role if p else "value"
    column = _column(node, name)
    shown = _reference(steps, nodes, binding) if binding else fmt(value)
    bounded = filter_phrase(role, column, shown, goal=False)
    if bounded:
        return bounded
    if role == "limit":
        return f"at most {shown} results"
    return f"{words(name)} {'equal to ' if binding else ''}{shown}"


def _aggregate_phrase(node: ToolNode, arguments: dict[str, Any], where: str = "") -> str:
    """ "the average "elevation_ft" of all airports": metric and column stay literal."""
    metric = arguments.get("metric")
    column = arguments.get("column")
    things = _things(node)
    scope = f"the {things}{where}" if where else f"all {things}"
    named = f"{METRICS.get(metric, 'result')} ({fmt(metric)})" if metric is not None else ""
    if metric == "count" or (metric is None and column is None):
        text = f"the {named or 'number'} of {things}{where}"
    elif column is not None:
        text = f"the {named or 'result'} of {fmt(column)} over {scope}"
    else:
        text = f"the {named} over {scope}"
    if arguments.get("group_by") is not None:
        text += f", for each value of {fmt(arguments['group_by'])}"
    return text


AGGREGATE_PARAMS = ("metric", "column", "group_by")


def _action_text(node: ToolNode, arguments: dict[str, Any], bindings, steps, nodes) -> str:
    """One step's action as a sentence ("Look up the book with id equal to ...")."""
    action = node.action
    shown = (
        {n: v for n, v in arguments.items() if n not in AGGREGATE_PARAMS}
        if action == "aggregate"
        else arguments
    )
    parts = [
        _argument_phrase(node, name, value, bindings.get(name), steps, nodes)
        for name, value in shown.items()
    ]
    args = _join(parts)
    with_args = f" with {args}" if args else ""
    thing = _thing(node)
    if action == "get":
        return f"Look up the {thing}{with_args}."
    if action in ("search", "list"):
        return f"Find the {_things(node)}{with_args}." if args else f"List all {_things(node)}."
    if action == "count":
        return f"Count the {_things(node)}{with_args}."
    if action == "aggregate":
        where = f" with {args}" if args else ""
        return f"Compute {_aggregate_phrase(node, arguments, where)}."
    if action == "create":
        return f"Create a new {thing}{with_args}."
    if action == "update":
        return f"Update the {thing}: {args}." if args else f"Update the {thing}."
    if action == "delete":
        return f"Delete the {thing}{with_args}."
    verb = node.name.split("_")[0]
    return f"{verb.capitalize()} the {_things(node)}{with_args}."


def test_words(branch: dict[str, Any]) -> str:
    """ "is above 7" or "is "Adelie"": what a branch tests its value against."""
    if branch["test"] == "above":
        return f"is above {fmt(branch['value'])}"
    return f"is {fmt(branch['value'])}"


def branch_actions(step: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arguments if the condition holds, arguments otherwise) of a conditional step."""
    other = step["branch"]["other"]["arguments"]
    return (step["arguments"], other) if step["branch"]["holds"] else (other, step["arguments"])


def _lower_first(text: str) -> str:
    if text.startswith("I "):
        return text
    return text[:1].lower() + text[1:]


def describe_step(index: int, steps: list[dict[str, Any]], nodes: dict[str, ToolNode]) -> str:
    step = steps[index]
    node = nodes[step["tool"]]
    bindings = step.get("inputs", {})
    branch = step.get("branch")
    if not branch:
        return f"Step {index + 1}: {_action_text(node, step['arguments'], bindings, steps, nodes)}"
    where = f"step {branch['step'] + 1}"
    subject = (
        f"the result of {where}" if branch["field"] is None else _reference(steps, nodes, branch)
    )
    texts = []
    for arguments in branch_actions(step):
        same = {n: b for n, b in bindings.items() if arguments.get(n) == step["arguments"].get(n)}
        texts.append(_lower_first(_action_text(node, arguments, same, steps, nodes)).rstrip("."))
    return (
        f"Step {index + 1}: If {subject} {test_words(branch)}, {texts[0]}; otherwise, {texts[1]}."
    )


def describe_answer(spec: dict[str, Any], steps, nodes: dict[str, ToolNode]) -> str:
    last = len(steps)
    thing = _thing(nodes[steps[-1]["tool"]])
    field_name = words(spec["field"]) if spec.get("field") else None
    shape = spec["shape"]
    if shape == "none":
        return ""  # the answer contract's sentence says how to finish
    if shape == "scalar":
        return f"Finally, report the result of step {last}."
    if shape == "value":
        return f"Finally, report the {field_name} of the {thing} from step {last}."
    if shape == "list" and field_name:
        return (
            f"Finally, report the {field_name} of every {thing} returned in step {last}, "
            "as a list (order does not matter)."
        )
    if shape == "list":
        return f"Finally, report every item returned in step {last}, as a list."
    return f"Finally, report the full result of step {last} as a JSON object."


def render_instruction(steps, nodes: dict[str, ToolNode], answer_spec: dict[str, Any]) -> str:
    """The explicit tier: one sentence per step, then what to report."""
    lines = [describe_step(i, steps, nodes) for i in range(len(steps))]
    lines.append(describe_answer(answer_spec, steps, nodes))
    return "\n".join(line for line in lines if line)


# --- goal tiers: noun phrases composed along the bindings -----------------------------------


class GoalPhrases:
    """Noun phrases for the rows each step reached, composed from the ``inputs`` bindings."""

    def __init__(self, steps, nodes: dict[str, ToolNode], described: dict | None = None, rng=None):
        self.steps = steps
        self.nodes = nodes
        self.rng = rng or random.Random(0)  # picks among sentence forms of one intent
        # (step, param) -> (column, value): a sampled key told by another attribute of its row
        self.described = described or {}
        self.labels = self._labels()
        self._defining: int | None = None
        self._said: set[str] = set()  # row phrases in the text so far, in the order said

    def _labels(self) -> dict[int, str]:
        """Names for the rows of a deep chain ("Let B be the country whose ... of A."): a
        phrase nested deeper than LABEL_DEPTH reads as a riddle, definitions read as a goal."""
        depth: list[int] = []
        used: set[int] = set()
        for step in self.steps:
            sources = {b["step"] for b in step.get("inputs", {}).values()}
            if step.get("branch"):
                sources.add(step["branch"]["step"])
            used |= sources
            depth.append(1 + max((depth[s] for s in sources), default=0))
        if max(depth, default=0) <= LABEL_DEPTH:
            return {}
        named = [i for i in sorted(used) if self.nodes[self.steps[i]["tool"]].kind == "read"]
        return {index: _label(n) for n, index in enumerate(named)}

    def definition(self, index: int) -> str:
        """ "Let A be ...": what a named row is."""
        self._defining = index
        try:
            return f"Let {self.labels[index]} be {self.row(index)}."
        finally:
            self._defining = None

    def node(self, index: int) -> ToolNode:
        return self.nodes[self.steps[index]["tool"]]

    def _shown(self, index: int, name: str, arguments: dict[str, Any] | None = None) -> str:
        step = self.steps[index]
        arguments = step["arguments"] if arguments is None else arguments
        binding = step.get("inputs", {}).get(name)
        if binding is None or arguments.get(name) != step["arguments"].get(name):
            return fmt(arguments[name])
        if binding.get("sorted_by"):
            return self.smallest(binding)
        return self.value_of(binding)

    def value_of(self, binding: dict[str, Any]) -> str:
        """ "the genus of the bacterium ...": the value a binding took from one earlier row. A
        row found by a key of another row holds that key as the other row does: its key is
        said as the other row's field ("the genus of the bacterium", never "the genus of the
        genus of the bacterium")."""
        lookup = self._key_lookup(binding["step"])
        if lookup is not None and binding["field"] == lookup[2].column[1]:
            inner = lookup[1]
            if inner.get("sorted_by"):
                return self.smallest(inner)
            return self.value_of(inner)
        return f"the {words(binding['field'])} of {self.row(binding['step'])}"

    def smallest(self, binding: dict[str, Any]) -> str:
        """ "the smallest (largest) body mass g among the penguins whose island is "Dream"": the
        value a binding took from a list of several rows, by content, never by row order."""
        word = self.pick_word(binding)
        return f"the {word} {words(binding['field'])} among {self.row(binding['step'], many=True)}"

    def pick_word(self, binding: dict[str, Any]) -> str:
        """smallest / largest, or alphabetically first / last: how a binding picked its row."""
        field_name = binding["field"]
        values = [r.get(field_name) for r in records_of(self.steps[binding["step"]]["result"])]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        timely = is_time_field(field_name, values)
        if binding.get("descending"):
            return "latest" if timely else "largest" if numeric else "alphabetically last"
        return "earliest" if timely else "smallest" if numeric else "alphabetically first"

    def _single(self, binding: dict[str, Any] | None) -> bool:
        """Whether a binding names one row an earlier step reached (not the smallest of many)."""
        return binding is not None and not binding.get("sorted_by")

    def condition(self, index: int, name: str, arguments: dict[str, Any] | None = None):
        """ "iata is "OTS"", "population is at least 1000", or None (no filter to state)."""
        node = self.node(index)
        p = node.params.get(name)
        role = p.role if p else "value"
        if (index, name) in self.described:
            column, value = self.described[(index, name)]
            if isinstance(column, tuple):  # a row told by two of its attributes
                return " and whose ".join(
                    f"{words(c)} is {fmt(v)}" for c, v in zip(column, value, strict=True)
                )
            if p is not None and p.key is not None and p.column != p.key:
                # a reference told by the row it names: "whose customer is "Ada Lind""
                return f"{_reference_words(node, name)} is {fmt(value)}"
            return f"{words(column)} is {fmt(value)}"
        column = _column(node, name)
        if role == "limit" or name in LIMIT_WORDS or (p is not None and p.orders):
            return None  # no filter: a limit or an order (named with a cut page, see row)
        carried = self._carried(index, name, arguments)
        if carried is not None:
            return f"{column} {carried}"
        shown = self._shown(index, name, arguments)
        return filter_phrase(role, column, shown, goal=True) or f"{column} is {shown}"

    def _carried(self, index: int, name: str, arguments=None) -> str | None:
        """ "contains "USA"": a value taken from the one row an earlier step found by a
        filter on that very value (the origin whose origin contains "USA"), said as that
        filter ("the cars whose origin contains "USA"", not "... is the origin of the origin
        whose origin contains "USA"")."""
        step = self.steps[index]
        arguments = step["arguments"] if arguments is None else arguments
        binding = step.get("inputs", {}).get(name)
        if not self._single(binding) or arguments.get(name) != step["arguments"].get(name):
            return None
        source = self.steps[binding["step"]]
        node = self.node(binding["step"])
        given = {n: v for n, v in source["arguments"].items() if n not in LIMIT_WORDS}
        if node.kind != "read" or len(given) != 1 or source.get("inputs"):
            return None
        ((filter_name, value),) = given.items()
        p = node.params.get(filter_name)
        if p is None or p.column != (node.entity, binding["field"]) or _rows(source) != 1:
            return None
        if p.role == "text":
            return f"contains {fmt(value)}"
        return f"is {fmt(value)}" if p.role in ("key", "value") else None

    def _key_lookup(self, index: int) -> tuple[ToolNode, dict[str, Any], ParamInfo] | None:
        """(node, binding, key parameter) when step ``index`` gets one row by its key, the key
        taken from a single earlier row; None otherwise."""
        step = self.steps[index]
        node = self.node(index)
        arguments = [  # paging and ordering say nothing of which row
            n
            for n in step["arguments"]
            if n not in LIMIT_WORDS
            and not ((q := node.params.get(n)) and (q.orders or q.role == "limit"))
        ]
        if len(arguments) != 1 or _rows(step) != 1:
            return None
        if node.action not in ("get", "search", "list"):
            return None
        (name,) = arguments
        binding = step.get("inputs", {}).get(name)
        p = node.params.get(name)
        if not self._single(binding) or p is None or p.key is None or p.column != p.key:
            return None
        return node, binding, p

    def _same_row(self, index: int) -> int | None:
        """The earlier step whose row this lookup re-reads by its key, if that is all it does."""
        lookup = self._key_lookup(index)
        if lookup is None:
            return None
        node, binding, p = lookup
        source = self.node(binding["step"])
        if source.entity == node.entity and binding["field"] == p.column[1]:
            return binding["step"]
        return None

    def _owner(self, index: int) -> str | None:
        """ "the country of the airport ...": a lookup by the key a foreign key names."""
        lookup = self._key_lookup(index)
        if lookup is None or not lookup[0].entity:
            return None
        node, binding, _ = lookup
        source = self.node(binding["step"])
        if source.entity != node.entity and singular(binding["field"]).startswith(
            singular(node.entity)
        ):
            return f"the {_thing(node)} of {self.row(binding['step'])}"
        return None

    def row(self, index: int, many: bool | None = None) -> str:
        """The row(s) step ``index`` reached, as a noun phrase (``many``: plural or not)."""
        if index in self.labels and index != self._defining:
            return self.labels[index]
        step = self.steps[index]
        node = self.node(index)
        same = self._same_row(index)
        if same is not None:
            return self.row(same)
        owner = self._owner(index)
        if owner is not None and (index, next(iter(step["arguments"]))) not in self.described:
            if owner in self._said:  # said once already: "that country"
                return f"that {_thing(node)}"
            self._said.add(owner)
            return owner
        action = node.action
        if node.kind == "write":
            done = {"create": "created", "update": "updated", "delete": "deleted"}.get(action)
            return f"the {_thing(node)} you {done or 'changed'}"
        serial = self.serial_name(index)
        if serial is not None and not many:
            return serial
        named = [n for n in step["arguments"] if n not in LIMIT_WORDS]
        if len(named) == 1 and _rows(step) == 1 and not many:
            picked = self.sorted_pick(index, named[0])
            if picked is not None:
                return picked
            itself = self.self_named(index, named[0])
            if itself is not None:
                return itself
        # Given values first, values found on the way last: a nested phrase then ends its
        # clause, and "and whose ..." cannot be read as part of it.
        inputs = step.get("inputs", {})
        conds = [
            c
            for name in sorted(step["arguments"], key=lambda n: n in inputs)
            if name not in AGGREGATE_PARAMS or action != "aggregate"
            if (c := self.condition(index, name))
        ]
        limit = next(
            (v for n, v in step["arguments"].items() if n in LIMIT_WORDS and n != "offset"), None
        )
        if action in ("count", "aggregate"):
            where = f" whose {_join(conds)}" if conds else ""
            return _aggregate_phrase(node, step["arguments"], where)
        many = _rows(step) != 1 if many is None else many
        head = f"the {_things(node) if many else _thing(node)}"
        if not conds:
            head = f"all {_things(node)}" if many else head
        text = f"{head} whose {' and whose '.join(conds)}" if conds else head
        text += self._order(index)
        if limit is not None and isinstance(limit, int) and _rows(step) >= limit:
            text += f" (at most {fmt(limit)} of them)"  # a cut page: the bound matters
        if conds and text in self._said:  # said once already: a person says "that book"
            return f"those {_things(node)}" if many else f"that {_thing(node)}"
        self._said.add(text)
        return text

    def many_rows(self, index: int) -> bool:
        """Whether the phrase of step ``index`` names several rows (not one row found by its
        key, a row an earlier step reached, or a row a write made)."""
        if self.node(index).kind == "write" or self._same_row(index) is not None:
            return False
        return self._key_lookup(index) is None and self.serial_name(index) is None

    def sorted_pick(self, index: int, name: str, arguments=None) -> str | None:
        """ "the flower with the largest id among the flowers whose ...": a row picked from
        rows an earlier step listed, by the value it is then looked up by (said once, not "the
        flower whose id is the largest id among the flowers ...")."""
        step = self.steps[index]
        arguments = step["arguments"] if arguments is None else arguments
        binding = step.get("inputs", {}).get(name)
        node = self.node(index)
        p = node.params.get(name)
        if (
            binding is None
            or not binding.get("sorted_by")
            or arguments.get(name) != step["arguments"].get(name)
            or p is None
            or p.column is None
            or self.node(binding["step"]).entity != node.entity
            or binding["field"] != p.column[1]
        ):
            return None
        word = self.pick_word(binding)
        among = self.row(binding["step"], many=True)
        return f"the {_thing(node)} with the {word} {words(binding['field'])} among {among}"

    def self_named(self, index: int, name: str) -> str | None:
        """'the species "Adelie"', 'the origin containing "USA"': a row of a table named like
        its one column, found by a value given in the text (never "the species whose species
        is ...")."""
        step = self.steps[index]
        node = self.node(index)
        p = node.params.get(name)
        if (
            p is None
            or p.column is None
            or p.column[0] != node.entity
            or name in step.get("inputs", {})
            or (index, name) in self.described
            or words(singular(p.column[1])) != _thing(node)
        ):
            return None
        value = step["arguments"][name]
        if p.role == "text":
            return f"the {_thing(node)} containing {fmt(value)}"
        return f"the {_thing(node)} {fmt(value)}" if p.role in ("key", "value") else None

    def serial_name(self, index: int, arguments: dict[str, Any] | None = None) -> str | None:
        """ "penguin #86", "order #W4817420": a row named by its serial id alone, said the way
        a person refers to it (the walker names a row by its serial only where its table has
        no name, title, email or code to name it by)."""
        step = self.steps[index]
        node = self.node(index)
        arguments = step["arguments"] if arguments is None else arguments
        names = [n for n in arguments if n not in LIMIT_WORDS]
        if len(names) != 1 or not node.entity or (index, names[0]) in self.described:
            return None
        (name,) = names
        p = node.params.get(name)
        if p is None or p.key is None or p.column != p.key or p.key[0] != node.entity:
            return None
        binding = step.get("inputs", {}).get(name)
        if binding is not None and arguments.get(name) == step["arguments"].get(name):
            return None  # a value found on the way is said as what it is
        value = arguments[name]
        if not is_serial(p.column[1], value):
            return None
        return f"{_thing(node)} #{value}"

    def _order(self, index: int) -> str:
        """ ", ordered by "elevation_ft" descending": a listing's order, said as an order
        (not as a filter "whose order by is ..."); the values stay literal."""
        node = self.node(index)
        column, rest = None, []
        for name, value in self.steps[index]["arguments"].items():
            p = node.params.get(name)
            if p is None or not p.orders:
                continue
            direction = DIRECTIONS.get(str(value).lower()) if isinstance(value, str) else None
            if isinstance(value, bool):
                reverse = value != (name.lower() in ("ascending",))
                rest.append("descending" if reverse else "ascending")
            elif direction:  # "desc", "ASC", "descending"
                rest.append(f"{direction} ({fmt(value)})")
            elif column is None and isinstance(value, str) and value[:1] in "-+" and value[1:]:
                column = fmt(value[1:])  # "-price": by price, descending
                rest.append(f"{'descending' if value[0] == '-' else 'ascending'} ({fmt(value)})")
            elif column is None and ("by" in name.lower() or name.lower() in ORDER_COLUMN):
                column = fmt(value)
            else:
                rest.append(f"({words(name)} {fmt(value)})")
        if column is None and not rest:
            return ""
        return ", ordered" + (f" by {column}" if column else "") + "".join(f" {r}" for r in rest)

    def write(self, index: int, arguments: dict[str, Any] | None = None) -> str:
        """An imperative goal for a write step (``arguments``: one branch of a conditional)."""
        step = self.steps[index]
        node = self.node(index)
        arguments = step["arguments"] if arguments is None else arguments
        keys = [
            n
            for n in arguments
            if (p := node.params.get(n))
            and p.key
            and p.column == p.key
            and p.column[0] == node.entity
        ]
        thing = _thing(node)
        if node.action in ("link", "unlink"):
            return self._link(index, arguments)
        if not keys and node.action in ("update", "delete"):
            # a row keyed by several columns (a link, a parent + date) is named by all of them:
            # the parameters the tool requires
            keys = [n for n in arguments if (p := node.params.get(n)) and p.required]
        target = self._target(index, keys, arguments)
        values = [n for n in arguments if n not in keys]
        if node.action == "create":
            parts = [f"{_column(node, n)} {self._shown(index, n, arguments)}" for n in arguments]
            return f"add a new {thing} with {_join(parts)}" if parts else f"add a new {thing}"
        if node.action == "delete":
            return f"delete {target}"
        if node.action == "update" and values:
            first, *rest = values
            parts = [
                f"the {_column(node, first)} of {target} to {self._shown(index, first, arguments)}"
            ]
            parts += [f"its {_column(node, n)} to {self._shown(index, n, arguments)}" for n in rest]
            return f"set {_join(parts)}"
        verb = words(node.name).split(" ")[0]  # cancel_order, cancelOrder: "cancel"
        parts = [
            f"{_column(node, n)} {self._shown(index, n, arguments)}"
            for n in values
            if n not in LIMIT_WORDS
        ]
        extra = f" with {_join(parts)}" if parts else ""
        return f"{verb} {target}{extra}"

    def _link(self, index: int, arguments: dict[str, Any]) -> str:
        """ "add the track whose track id is 7 to the playlist whose name is ...": a link
        between two existing rows, each named by its own parameters."""
        node = self.node(index)
        sides: dict[str, list[str]] = {}
        for name in arguments:
            p = node.params.get(name)
            table = p.column[0] if p is not None and p.column else None
            side = "parent" if table == node.parent and table != node.entity else "entity"
            if (cond := self.condition(index, name, arguments)) is not None:
                sides.setdefault(side, []).append(cond)
        entity = f"the {_thing(node)}"
        if sides.get("entity"):
            entity += " whose " + " and whose ".join(sides["entity"])
        parent = f"the {words(singular(node.parent))}" if node.parent else "the other record"
        if sides.get("parent"):
            parent += " whose " + " and whose ".join(sides["parent"])
        if node.action == "link":
            return f"add {entity} to {parent}"
        return f"remove {entity} from {parent}"

    def conditional(self, index: int) -> str:
        """ "if the price of the book ... is above 7, set ...; otherwise set ...": a write that
        depends on a value found on the way."""
        branch = self.steps[index]["branch"]
        source = self.row(branch["step"])
        subject = source if branch["field"] is None else f"the {words(branch['field'])} of {source}"
        then, otherwise = (self.write(index, a) for a in branch_actions(self.steps[index]))
        return f"if {subject} {test_words(branch)}, {then}; otherwise {otherwise}"

    def _target(self, index: int, keys: list[str], arguments=None) -> str:
        step = self.steps[index]
        node = self.node(index)
        if len(keys) == 1:
            binding = step.get("inputs", {}).get(keys[0])
            p = node.params[keys[0]]
            if self._single(binding):
                source = self.node(binding["step"])
                if source.entity == node.entity and binding["field"] == p.column[1]:
                    return self.row(binding["step"])  # the very row an earlier step reached
        serial = self.serial_name(index, {n: (arguments or step["arguments"])[n] for n in keys})
        if serial is not None:
            return serial
        if len(keys) == 1:
            picked = self.sorted_pick(index, keys[0], arguments)
            if picked is not None:
                return picked
        conds = [c for n in keys if (c := self.condition(index, n, arguments))]
        return (
            f"the {_thing(node)} whose {' and whose '.join(conds)}"
            if conds
            else (f"the {_thing(node)}")
        )

    def question(self, spec: dict[str, Any], intent: str = LOOKUP) -> str:
        """What to report, in a sentence form of the task's intent: "How many ...?" for a
        count, "What are the names of ...?" for the values of several rows, "What is ...?"
        or "Tell me ..." for one value."""
        index = len(self.steps) - 1
        shape = spec["shape"]
        phrase = self.row(index, many=True if shape == "list" else None)
        field_name = words(spec["field"]) if spec.get("field") else None
        pick = self.rng.choice
        if shape == "none":
            return ""
        if shape == "scalar":
            how_many = HOW_MANY.match(phrase)
            if how_many and intent == AGGREGATION:
                things, rest = how_many.group(1), how_many.group(2) or ""
                return f"How many {things}{' are there' if not rest else ''}{rest}?"
            return pick((f"What is {phrase}?", f"Work out {phrase}."))
        if shape == "value":
            return pick(
                (
                    f"What is the {field_name} of {phrase}?",
                    f"Tell me the {field_name} of {phrase}.",
                    f"I need the {field_name} of {phrase}.",
                )
            )
        if shape == "list" and field_name:
            fields = plural_words(field_name) if self.many_rows(index) else field_name
            if phrase.startswith("all "):
                return f"List the {fields} of all {phrase[4:]} (order does not matter)."
            if fields == field_name:  # one row: its value, still answered as a list
                return f"List the {field_name} of {phrase}."
            return pick(
                (
                    f"List the {fields} of {phrase} (order does not matter).",
                    f"What are the {fields} of {phrase}? Order does not matter.",
                )
            )
        if shape == "list":
            return pick((f"List {phrase}.", f"Find {phrase}."))
        return pick(
            (
                f"Report {phrase} in full, as a JSON object.",
                f"Show me {phrase} in full, as a JSON object.",
            )
        )


# "the number of penguins whose island is ..." -> "How many penguins ... ?"
HOW_MANY = re.compile(r"^the number of (\w[\w ]*?)( whose .*)?$")


TIME_WORDS = ("year", "date", "time", "day", "month", "at", "on", "timestamp", "created", "updated")
ISO_DAY = re.compile(r"^\d{4}-\d{2}(-\d{2})?([T ]\d{2}:\d{2}(:\d{2})?.*)?$")


def is_time_field(name: str, values: list[Any]) -> bool:
    """Whether a column orders rows in time (a year, a date, a timestamp): its smallest value
    is its earliest."""
    last = name.lower().replace("-", "_").split("_")[-1]
    if last in TIME_WORDS and values:
        return True
    texts = [v for v in values if isinstance(v, str)]
    return bool(texts) and len(texts) == len(values) and all(ISO_DAY.match(v) for v in texts)


def plural_words(name: str) -> str:
    """ "release date" -> "release dates": a field's words for the values of several rows."""
    head, _, last = name.rpartition(" ")
    many = plural(last) if last and last[-1:].isalpha() else last
    return f"{head} {many}".strip()


def is_serial(column: str, value: Any) -> bool:
    """Whether a key value is a row's serial (``id`` 86, ``order_id`` "W4817420"), said as
    "#86"; a natural key ("LT", "Dream") is said as a value."""
    if not is_surrogate_name(column) or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and 0 < len(value) <= 24 and not re.search(r"\s", value)


DIRECTIONS = {
    "asc": "ascending",
    "ascending": "ascending",
    "desc": "descending",
    "descending": "descending",
}
ORDER_COLUMN = ("sort", "order", "ordering")
LIMIT_WORDS = {"limit", "offset", "page", "page_size", "per_page", "max_results"}
LABEL_DEPTH = 4  # deeper chains name their rows (see GoalPhrases._labels)


def _label(n: int) -> str:
    """A, B, ..., Z, A2, B2, ...: the names of the rows of a deep chain."""
    letter = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[n % 26]
    return letter if n < 26 else f"{letter}{n // 26 + 1}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def render_goal(
    steps, nodes: dict[str, ToolNode], answer_spec, described=None, phrases=None, intent=None
) -> str:
    """The goal tier: the writes as goals in order, then the question, no plan, no tools, in
    the sentence forms of the task's ``intent`` (see ``tasks.synthesis.intents``).

    A conditional action is one request ("If ..., ...; otherwise ..."); a workflow is said as
    its steps ("First ... Next ... Finally ..."); plain writes in a row read as one sentence
    ("Set ..., then delete ..."). A deep chain defines its named rows where they are found,
    between the writes, so a row found after a write is defined after it.
    """
    phrases = phrases or GoalPhrases(steps, nodes, described)
    intent = intent or goal_intent(steps, nodes)
    workflow = intent == MULTI_STEP_WORKFLOW
    sentences: list[str] = []
    run: list[str] = []
    said = 0  # requests said so far

    def opener() -> str:
        if workflow:
            return "First, " if said == 0 else "Next, "
        return "" if said == 0 else "Then "

    def flush() -> None:
        nonlocal said
        if run:
            text = ", then ".join(run)
            head = opener()
            sentences.append((head + text if head else _capital(text)) + ".")
            said += 1
            run.clear()

    for index, step in enumerate(steps):
        if nodes[step["tool"]].kind == "write":
            if step.get("branch") or workflow:
                flush()
                text = phrases.conditional(index) if step.get("branch") else phrases.write(index)
                head = opener()
                sentences.append((head + text if head else _capital(text)) + ".")
                said += 1
            else:
                run.append(phrases.write(index))
        elif index in phrases.labels:
            flush()
            sentences.append(phrases.definition(index))
    flush()
    question = phrases.question(answer_spec, intent)
    if question:
        if said:
            lead = "Finally, " if workflow else phrases.rng.choice(AFTER_WRITES)
            question = lead + (question if lead.endswith(": ") else _lower_first(question))
        sentences.append(question)
    return " ".join(sentences)


AFTER_WRITES = ("After that: ", "Once that is done, ", "Then ")


def goal_intent(steps, nodes: dict[str, ToolNode]) -> str:
    """The intent of a walk (``tasks.synthesis.intents``)."""
    return walk_intent(
        (nodes[s["tool"]].kind for s in steps),
        any(s.get("branch") for s in steps),
        nodes[steps[-1]["tool"]].action if steps else None,
    )


# --- goal_hard: a condition, a value to discover, an unrelated fact -------------------------


def _scalar_columns(row: dict[str, Any], skip: set[str]) -> list[str]:
    return [
        c
        for c, v in row.items()
        if c not in skip
        and isinstance(v, str | int | float)
        and not isinstance(v, bool)
        and c != "id"
        and not c.endswith("_id")
        and (not isinstance(v, str) or 0 < len(v) <= 40)
    ]


def _discoverable(steps, nodes, view, answer_field=None) -> list[tuple[int, str, str, Any]]:
    """(step, param, column, value): a sampled key of a looked-up row, and another column
    whose value names that row alone, by which a read tool can find it."""
    found = []
    for index, step in enumerate(steps):
        node = nodes[step["tool"]]
        if node.kind != "read" or _rows(step) != 1 or not node.entity:
            continue
        found_rows = records_of(step["result"])
        if not found_rows:
            continue
        record = found_rows[0]
        for name in step["arguments"]:
            p = node.params.get(name)
            if name in step.get("inputs", {}) or not p or not p.key or p.column != p.key:
                continue
            table = p.column[0]
            for column in DISPLAY_FIELDS:
                shown = record.get(column)
                if column in (p.column[1], answer_field) or not isinstance(shown, str) or not shown:
                    continue
                rows = view.rows(table) if table in view.tables else []
                if sum(1 for r in rows if r.get(column) == shown) != 1:
                    continue
                searchable = any(
                    q.column == (table, column) and n.kind == "read"
                    for n in nodes.values()
                    for q in n.params.values()
                )
                if searchable:
                    found.append((index, name, column, shown))
                    break
    return found


def natural_names(steps, nodes, view, answer_field=None) -> list[tuple[int, str, str, Any]]:
    """(step, param, column, value): a serial id a read was given (``customer_id`` 1, its own
    ``id`` 86) whose row has a unique name, title, email or code a read tool finds rows by.
    A goal names that row as a person would ("whose customer is "Ada Lind"") and leaves the
    serial for the agent to find. Never by a value the task goes on to take from that row or
    asks for: "the language of the country language whose language is "fr"" is a circle."""
    found = []
    searchable = {q.column for n in nodes.values() if n.kind == "read" for q in n.params.values()}
    tested = {(b["step"], b["field"]) for s in steps if (b := s.get("branch"))}
    taken = {(b["step"], b["field"]) for s in steps for b in s.get("inputs", {}).values()}
    taken |= {(len(steps) - 1, answer_field)} if answer_field else set()
    for index, step in enumerate(steps):
        node = nodes[step["tool"]]
        if node.kind != "read":
            continue
        # a condition tests it, a later step takes it, the question asks it: not its name
        told = {c for (i, c) in tested | taken if i == index}
        for name, value in step["arguments"].items():
            p = node.params.get(name)
            if name in step.get("inputs", {}) or p is None or p.key is None:
                continue
            table, column = p.key
            if table not in view.tables or not is_serial(column, value):
                continue
            rows = view.rows(table)
            row = next((r for r in rows if r.get(column) == value), None)
            for natural in DISPLAY_FIELDS if row is not None else ():
                shown = row.get(natural)
                if natural == column or not isinstance(shown, str) or not 0 < len(shown) <= 60:
                    continue
                if natural in told:
                    continue
                if (table, natural) in searchable and sum(
                    1 for r in rows if r.get(natural) == shown
                ) == 1:
                    found.append((index, name, natural, shown))
                    break
            else:
                if row is not None and p.column == p.key:  # the row itself, not a reference
                    pair = _identifying_pair(table, column, row, rows, nodes, told)
                    if pair is not None:
                        found.append((index, name, *pair))
    return found


def _identifying_pair(table: str, key: str, row: dict[str, Any], rows, nodes, told=()):
    """((column, column), (value, value)): two attributes of a row that tell it apart from
    every other (a holiday by its country and its name), both filters of one read tool, for
    a row whose table has no single name; None where no such pair exists."""
    tools = [
        {q.column[1] for q in n.params.values() if q.column and q.column[0] == table}
        for n in nodes.values()
        if n.kind == "read" and n.entity == table
    ]
    candidates = [
        c
        for c, v in row.items()
        if c != key
        and c not in told
        and not is_surrogate_name(c)
        and isinstance(v, str)
        and 0 < len(v) <= 60
        and any(c in filters for filters in tools)
    ]
    candidates.sort(key=lambda c: (c not in DISPLAY_FIELDS, c))
    for i, first in enumerate(candidates):
        for second in candidates[i + 1 :]:
            if not any({first, second} <= filters for filters in tools):
                continue
            same = sum(
                1 for r in rows if r.get(first) == row[first] and r.get(second) == row[second]
            )
            if same == 1:
                return (first, second), (row[first], row[second])
    return None


def _condition(steps, nodes, view, phrases: GoalPhrases, rng, answer_field=None) -> str | None:
    """A check the gold run passes, on a row a read step reached: "check that ...; if it is
    not, stop" (the caller says when: first, or before anything is done)."""
    written = {n for s in steps if nodes[s["tool"]].kind == "write" for n in s["arguments"]}
    first_write = next(
        (i for i, s in enumerate(steps) if nodes[s["tool"]].kind == "write"), len(steps)
    )
    options = []
    for index, step in enumerate(steps[:first_write]):  # a check before anything changes
        node = nodes[step["tool"]]
        if node.kind != "read" or _rows(step) != 1 or node.action not in ("get", "search", "list"):
            continue
        found_rows = records_of(step["result"])
        if not found_rows:
            continue
        record = found_rows[0]
        skip = (
            set(step["arguments"])
            | written
            | {
                c
                for told, _ in phrases.described.values()
                for c in (told if isinstance(told, tuple) else (told,))
            }
        )
        skip.add(answer_field)
        options += [
            (index, c, record[c])
            for c in _scalar_columns(record, skip)
            if view is None
            or not (
                view.is_flag(node.entity, c)
                or (node.entity in view.tables and is_identity(view, node.entity, c))
            )  # a check on a state (a stock, a status), not on a name or a code
        ]
    if not options:
        return None
    index, column, value = rng.choice(options)
    phrase = phrases.row(index)
    subject = f"the {words(column)} of {phrase}"
    if isinstance(value, int | float):
        bound = math.floor(value) - 1
        return f"check that {subject} is above {bound}; if it is not, stop."
    node = nodes[steps[index]["tool"]]
    table = node.entity
    others = [
        v
        for v in (view.column_values(table, column) if table in view.tables else [])
        if isinstance(v, str) and v != value and 0 < len(v) <= 40
    ][:50]
    if others:
        return f"check that {subject} is not {fmt(rng.choice(others))}; if it is, stop."
    return f"check that {subject} is {fmt(value)}; if it is not, stop."


def _unrelated_fact(steps, nodes, view, rng) -> str | None:
    """A true fact about a row of a table in the task that the task does not touch."""
    used = {
        json.dumps(v)
        for s in steps
        for r in records_of(s.get("result"))
        for v in r.values()
        if isinstance(v, str | int | float)
    }
    for s in steps:
        used |= {json.dumps(v) for v in s["arguments"].values()}
    tables = sorted(
        {t for s in steps for t in (nodes[s["tool"]].entity, nodes[s["tool"]].parent) if t}
    )
    rng.shuffle(tables)
    for table in tables:
        if table not in view.tables:
            continue
        rows = view.rows(table)[:200]
        rows = [r for r in rows if not any(json.dumps(v) in used for v in r.values())]
        if not rows:
            continue
        row = rng.choice(rows)
        key = view.tables[table].key
        names = (*DISPLAY_FIELDS, *([key] if key else []))  # by name, else by its key
        name = next((c for c in names if isinstance(row.get(c), str) and row[c]), None)
        if name is None:
            continue
        others = [c for c in _scalar_columns(row, {name}) if not view.is_flag(table, c)]
        if not others:
            continue
        column = rng.choice(others)
        thing = words(singular(table))
        # 'the origin "Europe"' for a table named like its column, else "whose name is ..."
        said = "" if words(singular(name)) == thing else f" whose {words(name)} is"
        return (
            f"(I already know that the {thing}{said} {fmt(row[name])} has "
            f"{words(column)} {fmt(row[column])}.)"
        )
    return None


@dataclass
class Rendered:
    """An instruction's text, the literals it gives, and what the agent must discover."""

    text: str
    tier: str
    given: list[str] = field(default_factory=list)
    discovered: list[dict[str, Any]] = field(default_factory=list)
    intent: str = LOOKUP


def compose_instruction(
    tier: str, steps, nodes: dict[str, ToolNode], answer_spec, view=None, rng=None
) -> Rendered:
    """The instruction of a gold chain at ``tier`` (see the module docstring)."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
    rng = rng or random.Random(0)
    literals = concrete_values(steps)
    intent = goal_intent(steps, nodes)
    if tier == "explicit":
        text = render_instruction(steps, nodes, answer_spec)
        return Rendered(text, tier, literals, intent=intent)
    described: dict = {}
    discovered: list[dict[str, Any]] = []

    def describe(index: int, name: str, column: str, shown: Any) -> None:
        described[(index, name)] = (column, shown)
        value = steps[index]["arguments"][name]
        discovered.append(
            {
                "step": index,
                "param": name,
                "value": value if isinstance(value, str) else json.dumps(value),
                "described_by": (
                    dict(zip(column, shown, strict=True))
                    if isinstance(column, tuple)
                    else {column: shown}
                ),
            }
        )

    named = natural_names(steps, nodes, view, answer_spec.get("field")) if view else ()
    for index, name, column, shown in named:
        describe(index, name, column, shown)
    if tier == "goal" or view is None:
        phrases = GoalPhrases(steps, nodes, described, rng)
        text = render_goal(steps, nodes, answer_spec, described, phrases, intent)
        return Rendered(text, tier, _given(literals, discovered), discovered, intent)
    options = [
        o
        for o in _discoverable(steps, nodes, view, answer_spec.get("field"))
        if (o[0], o[1]) not in described
    ]
    if options:
        describe(*rng.choice(options))
    phrases = GoalPhrases(steps, nodes, described, rng)  # one text: a row said twice is "that"
    # the check comes first, as a person says it, naming its row in full (the request then
    # says "that ..."); a deep chain defines its rows in the text, so its check comes last
    first = not phrases.labels
    field_name = answer_spec.get("field")
    check = _condition(steps, nodes, view, phrases, rng, field_name) if first else None
    text = render_goal(steps, nodes, answer_spec, described, phrases, intent)
    if not first:
        check = _condition(steps, nodes, view, phrases, rng, field_name)
    aside = _unrelated_fact(steps, nodes, view, rng)
    if check:
        parts = [f"First {check}", text] if first else [text, f"Before you do, {check}"]
    else:
        parts = [text]
    text = " ".join(p for p in [*parts, aside] if p)
    return Rendered(text, tier, _given(literals, discovered), discovered, intent)


def _given(literals: list[str], discovered: list[dict[str, Any]]) -> list[str]:
    """The literals a text states: the sampled ones, a described key replaced by what tells
    its row."""
    given = list(literals)
    for d in discovered:
        if d["value"] in given:
            given.remove(d["value"])
        given.extend(d["described_by"].values())
    return given


# --- checks and the LLM rewrite -------------------------------------------------------------


def concrete_values(steps: list[dict[str, Any]]) -> list[str]:
    """The sampled (not chained) argument values an instruction must mention verbatim (page
    sizes are paging, not facts: a goal names them only where a page is cut short)."""
    values = []
    for step in steps:
        bound = step.get("inputs", {})
        branch = step.get("branch")
        calls = [step["arguments"]] + ([branch["other"]["arguments"]] if branch else [])
        for arguments in calls:
            for name, value in arguments.items():
                if name not in bound and value is not None and name not in LIMIT_WORDS:
                    values.append(value if isinstance(value, str) else json.dumps(value))
        if branch:  # the value the condition tests against
            value = branch["value"]
            values.append(value if isinstance(value, str) else json.dumps(value))
    return values


def mentions_all(text: str, values: list[str]) -> bool:
    return all(str(v) in text for v in values)


def names_a_tool(text: str, tools: list[str]) -> str | None:
    """The first tool name the text contains (as a word), or None."""
    for name in tools:
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text):
            return name
    return None


STEP_WORDS = re.compile(r"\bstep \d+\b", re.IGNORECASE)

_PROMPTS = {
    "explicit": (
        "You write tasks for tool-using agents. Rewrite the numbered steps as one natural "
        "user request. Keep every concrete value exactly as written, keep the order of the "
        "steps and what must be reported. Do not name the tools."
    ),
    "goal": (
        "You write tasks for tool-using agents. Rewrite the request below as one natural user "
        "request. Keep every concrete value exactly as written (quotes included) and what must "
        "be reported or changed. State the goal only: never name a tool, never number steps, "
        "never say in which order to look things up."
    ),
}
_PROMPTS["goal_hard"] = _PROMPTS["goal"] + (
    " Keep every condition and every aside exactly in meaning."
)


def llm_instruction(
    settings,
    template_text: str,
    steps: list[dict[str, Any]],
    tier: str = "explicit",
    given: list[str] | None = None,
    tools: list[str] | None = None,
) -> str | None:
    """Ask the LLM to rewrite the template as a natural request; None when it is unusable.

    The rewrite is accepted only if it keeps every given value verbatim, names no tool and,
    at the goal tiers, numbers no steps.
    """
    from aw_site.llm import LLMError, complete_json, report_llm_failure

    chain = [{"tool": s["tool"], "arguments": s["arguments"]} for s in steps]
    user = f"Request:\n{template_text}"
    if tier == "explicit":
        user = f"Steps:\n{template_text}\n\nGold tool chain:\n{json.dumps(chain)}"
    messages = [
        {"role": "system", "content": _PROMPTS[tier] + ' Reply with JSON {"instruction": "..."}.'},
        {"role": "user", "content": user},
    ]
    try:
        reply = complete_json(settings, messages)
    except LLMError as exc:
        report_llm_failure("task instruction (the template is used)", exc)
        return None
    text = reply.get("instruction") if isinstance(reply, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    if not mentions_all(text, concrete_values(steps) if given is None else given):
        log.info("LLM instruction dropped a concrete value; using the template")
        return None
    named = names_a_tool(text, tools or [s["tool"] for s in steps])
    if named:
        log.info("LLM instruction names the tool %s; using the template", named)
        return None
    if tier != "explicit" and STEP_WORDS.search(text):
        log.info("LLM instruction numbers the steps of a goal; using the template")
        return None
    return text.strip()


# --- programmatic tasks: the same tiers over a program's goal --------------------------------


def _some(node: ToolNode, count: int) -> str:
    """ "one book" or "3 books" (no article to get wrong)."""
    return f"one {_thing(node)}" if count == 1 else f"{count} {_things(node)}"


def _call_phrase(node: ToolNode, count: int, distinct: int) -> str:
    """What a run of ``count`` calls of one tool (``distinct`` apart from paging) does, in
    words (no tool name)."""
    times = "" if count == 1 else f" ({count} times)"
    if node.action == "get":
        return f"Look up {_some(node, count)}."
    if node.action in ("search", "list") and node.parent:
        parent = words(singular(node.parent))
        owner = f"one {parent}" if distinct == 1 else f"each of {distinct} {words(plural(parent))}"
        pages = f" ({count} pages)" if count > distinct else ""
        return f"List the {_things(node)} of {owner}{pages}."
    if node.action in ("search", "list"):
        return f"Find {_things(node)} matching a condition{times}."
    if node.action == "count":
        return f"Count {_things(node)}{times}."
    if node.action == "aggregate":
        return f"Compute a total over {_things(node)}{times}."
    if node.action == "create":
        return f"Add {_some(node, count)}."
    if node.action == "update":
        return f"Update {_some(node, count)}."
    if node.action == "delete":
        return f"Delete {_some(node, count)}."
    if node.action in ("link", "unlink") and node.parent:
        parent = words(plural(singular(node.parent)))
        if node.action == "link":
            return f"Add {_some(node, count)} to {parent}."
        return f"Remove {_some(node, count)} from {parent}."
    verb = node.name.split("_")[0]
    return f"{verb.capitalize()} {_things(node)}{times}."


def program_plan(calls: list[dict[str, Any]], nodes: dict[str, ToolNode]) -> str:
    """The explicit tier of a program: its gold run as steps, runs of one tool counted."""
    runs: list[list] = []
    for call in calls:
        key = json.dumps(
            {n: v for n, v in call["arguments"].items() if n not in LIMIT_WORDS},
            sort_keys=True,
            default=str,
        )
        if runs and runs[-1][0] == call["tool"]:
            runs[-1][1] += 1
            runs[-1][2].add(key)
        else:
            runs.append([call["tool"], 1, {key}])
    lines = []
    for index, (tool, count, keys) in enumerate(runs):
        node = nodes.get(tool)
        text = _call_phrase(node, count, len(keys)) if node else "Use one more tool."
        lines.append(f"Step {index + 1}: {text}")
    return "\n".join(lines)


def _program_condition(calls, results, nodes, view, rng) -> str | None:
    """A condition the gold run meets, on a row a call with given arguments found."""
    from tasks.synthesis.dependencies import value_flow

    written = {n for c in calls if c.get("kind") == "write" for n in c["arguments"]}
    options, counts = [], []
    for call, result, flow in zip(calls, results, value_flow(calls, results), strict=True):
        node = nodes.get(call["tool"])
        found = records_of(result)
        given = {n: v for n, v in call["arguments"].items() if n not in LIMIT_WORDS}
        if not node or node.kind != "read" or flow or not given or not node.entity:
            continue  # rows found from values the task gives
        if any(not isinstance(v, str | int) or isinstance(v, bool) for v in given.values()):
            continue
        which = " and whose ".join(f"{_column(node, n)} is {fmt(v)}" for n, v in given.items())
        if node.action == "get" and len(found) == 1:
            skip = set(call["arguments"]) | written
            phrase = f"the {_thing(node)} whose {which}"
            options += [(node, phrase, found[0], c) for c in _scalar_columns(found[0], skip)]
        elif node.action in ("search", "list") and is_row_list(result) and found:
            limit = call["arguments"].get("limit")
            cut = call["arguments"].get("offset") or (
                isinstance(limit, int) and len(found) >= limit
            )
            changed = {
                nodes[c["tool"]].entity
                for c in calls
                if c.get("kind") == "write" and c["tool"] in nodes
            }
            if cut or node.entity in changed:
                continue  # a page may hold part of the rows; a written table changes
            counts.append((node, given, len(found)))
    if counts and (not options or rng.random() < 0.5):
        node, given, found = rng.choice(counts)
        least = max(1, found - rng.randint(0, 1))
        things = f"one {_thing(node)}" if least == 1 else f"{least} {_things(node)}"
        if node.parent:
            which = " and whose ".join(f"{_column(node, n)} is {fmt(v)}" for n, v in given.items())
            return (
                f"Do this only if the {words(singular(node.parent))} whose {which} has at "
                f"least {things}."
            )
        have = " and ".join(
            f"{words(n) if not p or not p.column or p.column[0] != node.entity else _column(node, n)} "
            f"{fmt(v)}"
            for n, v in given.items()
            for p in [node.params.get(n)]
        )
        return f"Do this only if at least {things} {'has' if least == 1 else 'have'} {have}."
    if not options:
        return None
    node, phrase, record, column = rng.choice(options)
    value = record[column]
    subject = f"the {words(column)} of {phrase}"
    if isinstance(value, int | float):
        bound = math.floor(value) - 1
        return f"Before you do, check that {subject} is above {bound}; if it is not, stop."
    others = [
        v
        for v in (view.column_values(node.entity, column) if node.entity in view.tables else [])
        if isinstance(v, str) and v != value and 0 < len(v) <= 40
    ][:50]
    if others:
        return (
            f"Before you do, check that {subject} is not {fmt(rng.choice(others))}; if it is, stop."
        )
    return f"Before you do, check that {subject} is {fmt(value)}; if it is not, stop."


def program_instruction(
    tier: str,
    goal: str,
    calls: list[dict[str, Any]],
    results: list[Any],
    nodes: dict[str, ToolNode],
    view=None,
    rng=None,
) -> Rendered:
    """A programmatic task's text at ``tier``: the template's goal as written (``goal``); at
    ``explicit`` the goal and the gold run as steps (kinds of calls and how often, no tool
    named); at ``goal_hard`` the goal, a condition the gold run meets and a fact about a row
    the task does not touch."""
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
    rng = rng or random.Random(0)
    if tier == "goal" or view is None:
        return Rendered(goal, tier)
    if tier == "explicit":
        return Rendered(f"{goal}\n{program_plan(calls, nodes)}", tier)
    steps = [
        {"tool": c["tool"], "arguments": c["arguments"], "result": r}
        for c, r in zip(calls, results, strict=True)
        if c["tool"] in nodes
    ]
    extra = [
        _program_condition(calls, results, nodes, view, rng),
        _unrelated_fact(steps, nodes, view, rng),
    ]
    return Rendered(" ".join([goal, *(e for e in extra if e)]), tier)
