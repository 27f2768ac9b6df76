"""The tool structure programmatic templates loop over: parents -> children (-> details).

``find_shapes`` reads an environment's tool graph for read tools that take one parent value and
return that parent's child rows (``list_books_by_author``), the detail tool that fills in a
child column the list omits, the child columns a template can filter, sum, count or date, the
update tools that set a child column, a detail tool of the parent (for reconciliation) and the
next hop (children -> grandchildren). ``HELPERS`` is the code every template program starts with.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from environments.discovery.naming import is_serial_name
from tasks.synthesis.arguments import is_non_additive
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.tool_graph import DISPLAY_FIELDS, ToolGraph, ToolNode

HELPERS = textwrap.dedent(
    '''
    import datetime
    import json


    def _records(result):
        """Rows in a tool result: a row, a list of rows, or a wrapped list."""
        if isinstance(result, list):
            return [r for r in result if isinstance(r, dict)]
        if isinstance(result, dict):
            lists = [v for v in result.values() if isinstance(v, list)]
            return lists[0] if len(lists) == 1 else [result]
        return []


    def _rows_of(call, tool, param, parent, limit, offset_param):
        """Every row a list tool returns for one parent, page after page."""
        rows = []
        while True:
            arguments = {param: parent}
            if limit:
                arguments["limit"] = limit
            if offset_param and rows:
                arguments[offset_param] = len(rows)
            try:
                page = _records(call(tool, **arguments))
            except Exception:  # a parent with no (more) children may be an error
                return rows
            rows += page
            if not limit or len(page) < limit:
                return rows
            if not offset_param:
                raise ValueError("a full page: the children may be cut short")


    def _children(call, parent):
        return _rows_of(call, GROUP_TOOL, GROUP_PARAM, parent, GROUP_LIMIT, GROUP_OFFSET)


    def _measure(call, child, column):
        if column in child:
            return child[column]
        return call(DETAIL_TOOL, **{DETAIL_PARAM: child[CHILD_KEY]})[column]


    def _number(answer):
        return isinstance(answer, (int, float)) and not isinstance(answer, bool)


    def _day(value):
        """A date or datetime value ("2024-01-31", "2024/01/31 10:00") as a day number."""
        if value is None:
            return None
        return datetime.date.fromisoformat(str(value)[:10].replace("/", "-")).toordinal()
    '''
)

DATE = re.compile(r"^\d{4}[-/]\d{2}[-/]\d{2}([ T].*)?$")


@dataclass
class ProgramShape:
    """The tools a template loops over: parents -> children (-> child detail)."""

    group: ToolNode  # read tool: one parent value -> child records
    group_param: str
    parent_table: str
    parent_column: str
    child_table: str
    child_key: str
    child_fields: set[str]
    detail: ToolNode | None  # get_<child> when the group tool omits a measure
    detail_param: str | None
    measures: list[str]  # numeric child columns reachable
    display: str | None  # child column to report (title, name)
    updates: list[tuple[ToolNode, str, str]] = field(default_factory=list)  # (tool, key, column)
    dates: list[str] = field(default_factory=list)  # reachable date / datetime child columns
    categories: list[str] = field(default_factory=list)  # reachable columns worth counting
    parent_detail: ToolNode | None = None  # get_<parent> by the parent value
    parent_detail_param: str | None = None
    parent_numbers: list[str] = field(default_factory=list)  # numeric parent columns
    next_hops: list[ProgramShape] = field(default_factory=list)  # children -> grandchildren
    # parent value -> the name a person knows that parent by (a serial id's row's title)
    parent_names: dict[Any, str] = field(default_factory=dict)
    parent_name_column: str | None = None

    def additive(self) -> list[str]:
        """The measures a total means something of (no latitudes, years or ranks)."""
        return [m for m in self.measures if not is_non_additive(m)]

    def constants(self) -> str:
        return (
            f"GROUP_TOOL = {self.group.name!r}\nGROUP_PARAM = {self.group_param!r}\n"
            f"DETAIL_TOOL = {self.detail.name if self.detail else None!r}\n"
            f"DETAIL_PARAM = {self.detail_param!r}\nCHILD_KEY = {self.child_key!r}\n"
            f"GROUP_LIMIT = {self.page_limit()!r}\nGROUP_OFFSET = {self.offset_param()!r}\n"
        )

    def page_limit(self) -> int | None:
        limit = self.group.params.get("limit")
        if limit is None:
            return None
        return int(limit.maximum or limit.default or 100)

    def offset_param(self) -> str | None:
        return "offset" if "offset" in self.group.params else None

    def reachable(self, column: str) -> bool:
        return column in self.child_fields or self.detail is not None

    def write_updates(self) -> list[tuple[ToolNode, str, str]]:
        """Update tools (not creates that happen to take a key) setting a child column."""
        return [u for u in self.updates if u[0].action == "update"]


def _is_date_column(view: EnvironmentView, table: str, column: str) -> bool:
    values = view.column_values(table, column)
    return len(values) > 1 and all(isinstance(v, str) and DATE.match(v) for v in values)


def _get_tool(nodes: dict[str, ToolNode], table: str, column: str) -> tuple[ToolNode, str] | None:
    """A get tool whose one required parameter is ``table.column``."""
    for node in sorted(nodes.values(), key=lambda n: n.name):
        if node.kind == "read" and node.action == "get" and node.entity == table:
            keys = [q for q in node.params.values() if q.required]
            if len(keys) == 1 and (keys[0].key or keys[0].column) == (table, column):
                return node, keys[0].name
    return None


def find_shapes(view: EnvironmentView, graph: ToolGraph) -> list[ProgramShape]:
    """Parent -> children tool pairs whose outputs were observed on real rows."""
    shapes = []
    nodes = graph.nodes
    for node in sorted(nodes.values(), key=lambda n: n.name):
        required = [p for p in node.params.values() if p.required]
        if node.kind != "read" or not node.entity or len(required) != 1 or not node.output_fields:
            continue
        p = required[0]
        if p.role not in ("key", "value") or not p.column:
            continue
        parent_table, parent_column = p.key if p.key else p.column
        child = node.entity
        info = view.tables[child]
        if parent_table == child or not info.key or info.key not in node.output_fields:
            continue
        fields = set(node.output_fields)
        detail, detail_param = None, None
        found = _get_tool(nodes, child, info.key)
        if found:
            detail, detail_param = found
        reachable = set(info.columns) if detail else fields & set(info.columns)
        measures = [
            c
            for c in sorted(reachable)
            if info.is_numeric(c)
            and c != info.key
            and c not in info.foreign_keys
            and not c.endswith("_id")
            and len(view.column_values(child, c)) > 1
        ]
        links = {c for c, target in info.foreign_keys.items() if target[0] == parent_table}
        dates = [c for c in sorted(reachable) if _is_date_column(view, child, c)]
        categories = [
            c
            for c in sorted(reachable)
            if c != info.key
            and c not in links
            and c not in dates
            and len(view.column_values(child, c)) > 1
        ]
        display = next((f for f in ("title", "name", "full_name", "label") if f in fields), None)
        updates = []
        for other in sorted(nodes.values(), key=lambda n: n.name):
            if other.kind != "write":
                continue
            keys = [q for q in other.params.values() if q.key == (child, info.key)]
            for q in other.params.values():
                if (
                    keys
                    and q.column
                    and q.column[0] == child
                    and q.column[1] in measures
                    and q.name != keys[0].name
                    and all(
                        r.required is False or r.name in (keys[0].name, q.name)
                        for r in other.params.values()
                    )
                ):
                    updates.append((other, keys[0].name, q.name))
        parent_detail = _get_tool(nodes, parent_table, parent_column)
        parent_info = view.tables.get(parent_table)
        parent_numbers = [
            c
            for c in sorted(parent_info.columns if parent_info else [])
            if parent_info.is_numeric(c)
            and c != parent_column
            and c not in parent_info.foreign_keys
        ]
        shapes.append(
            ProgramShape(
                node,
                p.name,
                parent_table,
                parent_column,
                child,
                info.key,
                fields,
                detail,
                detail_param,
                measures,
                display,
                updates,
                dates,
                categories,
                parent_detail[0] if parent_detail else None,
                parent_detail[1] if parent_detail else None,
                parent_numbers,
            )
        )
    for shape in shapes:
        shape.parent_name_column, shape.parent_names = serial_names(
            view, nodes, shape.parent_table, shape.parent_column
        )
    for shape in shapes:
        shape.next_hops = [
            other
            for other in shapes
            if other.parent_table == shape.child_table and other.parent_column in shape.child_fields
        ]
    return shapes


def describe(shape: ProgramShape) -> dict[str, Any]:
    """A shape as plain data (for reports and debugging)."""
    return {
        "group": shape.group.name,
        "parent": f"{shape.parent_table}.{shape.parent_column}",
        "child": f"{shape.child_table}.{shape.child_key}",
        "measures": shape.measures,
        "dates": shape.dates,
        "categories": shape.categories,
        "updates": [f"{u[0].name}.{u[2]}" for u in shape.updates],
        "parent_detail": shape.parent_detail.name if shape.parent_detail else None,
        "next_hops": [s.group.name for s in shape.next_hops],
    }


def serial_names(
    view: EnvironmentView, nodes: dict[str, ToolNode], table: str, column: str
) -> tuple[str | None, dict[Any, str]]:
    """(column, value -> name): where ``column`` is a serial id of ``table`` and the table has
    a unique name, title, email or code that a read tool finds its rows by, each row's name,
    so a task names "the albums whose title is ..." and not "the albums whose album id is 3".
    (None, {}) where the serial is all the data has."""
    info = view.tables.get(table)
    if info is None or not is_serial_name(column):  # 86 or "c_01": a serial all the same
        return None, {}
    searchable = {q.column for n in nodes.values() if n.kind == "read" for q in n.params.values()}
    rows = view.rows(table)
    for name in DISPLAY_FIELDS:
        if name not in info.columns or (table, name) not in searchable:
            continue
        values = [r.get(name) for r in rows]
        texts = [v for v in values if isinstance(v, str) and 0 < len(v) <= 60]
        if len(texts) == len(rows) and len(set(texts)) == len(texts):
            return name, {r[column]: r[name] for r in rows if r.get(column) is not None}
    return None, {}
