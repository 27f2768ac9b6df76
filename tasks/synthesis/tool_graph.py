"""Tool dependency graph: an edge A -> B when an output field of A can fill a parameter of B.

Edges come from three kinds of evidence, recorded in ``via``:
- ``schema``: the field and the parameter are the same thing: the same key (``id`` of
  get_author -> ``author_id`` of list_books_for_author) or the same column (``genre`` of a
  book -> ``genre`` of search_books). Columns of two tables that share a name or some values
  (an item's price and a variant's price) are not joined;
- ``foreign_key``: the manifest's ``tables`` foreign keys tie the field to the parameter's key;
- ``observed``: read tools were called on real rows, their output values are real values of
  the parameter's key, and the field's name refers to that key (an inferred foreign key).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from environments.builder.theme_envelope import ROLE_NAMES, ROW_WRAPPERS
from environments.builder.theme_model import snake
from environments.discovery.naming import plural, singular, squashed
from environments.tool_operations import rows_in
from tasks.synthesis.environment_view import EnvironmentView

ACTION_ALIASES = {
    "get": "get",
    "fetch": "get",
    "describe": "get",
    "retrieve": "get",
    "lookup": "get",
    "find": "get",
    "search": "search",
    "query": "search",
    "filter": "search",
    "list": "list",
    "count": "count",
    "aggregate": "aggregate",
    "sum": "aggregate",
    "average": "aggregate",
    "avg": "aggregate",
    "stats": "aggregate",
    "top": "aggregate",
    "create": "create",
    "add": "create",
    "insert": "create",
    "update": "update",
    "set": "update",
    "edit": "update",
    "delete": "delete",
    "remove": "delete",
}
ROW_ACTIONS = {"get", "search", "list", "create", "update"}
LIMIT_PARAMS = {"limit", "offset", "page", "page_size", "per_page", "max_results"}
# Parameters that order a listing: a goal names them only where a cut page makes order matter.
ORDER_PARAMS = {
    "order_by",
    "orderby",
    "order",
    "ordering",
    "sort",
    "sort_by",
    "sortby",
    "sort_order",
    "sort_dir",
    "sort_direction",
    "order_dir",
    "order_direction",
    "direction",
    "descending",
    "ascending",
    "reverse",
}
TEXT_PARAMS = {"query", "q", "search", "text", "keyword", "term", "name_contains", "contains"}
DISPLAY_FIELDS = ("name", "title", "full_name", "label", "code", "username", "email")
ACTION_COLUMNS = ("get", "search", "list", "count", "aggregate", "create", "update", "delete")


def resolve_table(word: str, tables: dict[str, Any]) -> str | None:
    """Map a word from a tool or parameter name to a table name (singular/plural tolerant)."""
    if not word:
        return None
    for candidate in (word, singular(word), plural(word), plural(singular(word))):
        if candidate in tables:
            return candidate
    tokens = word.split("_")
    for size in range(len(tokens) - 1, 0, -1):  # longest leading or trailing phrase
        for part in ("_".join(tokens[:size]), "_".join(tokens[-size:])):
            for candidate in (part, singular(part), plural(part)):
                if candidate in tables:
                    return candidate
    return None


@dataclass
class ParamInfo:
    """One tool parameter and where its real values come from."""

    name: str
    type: str
    required: bool
    role: str  # key | value | min | max | text | limit | enum | other
    column: tuple[str, str] | None = None
    key: tuple[str, str] | None = None  # the primary key this parameter identifies
    enum: list[Any] | None = None
    maximum: float | None = None
    default: Any = None
    orders: bool = False  # sets the order of the rows (order_by, sort, direction), no filter


@dataclass
class ToolNode:
    name: str
    kind: str  # read | write
    action: str
    entity: str | None
    parent: str | None
    description: str
    params: dict[str, ParamInfo]
    output_fields: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    observed: bool = False
    row_key: str | None = None  # the column naming the row it acts on, when not the primary key
    rows_at: tuple[str, ...] | None = ()  # where its answer holds rows (None: it holds none)
    many: bool = True  # whether its answer holds a list of rows (else one row)
    recorded: bool = False  # read from the build's record of its operation, not its name

    def records(self, result: Any) -> list[dict[str, Any]]:
        """The rows in one of its answers: where its recorded operation puts them, else found
        in the answer's shape (``records_of``)."""
        if self.recorded and self.rows_at is not None:
            found = rows_in(result, self.rows_at, self.many)
            if found is not None:
                return found
        return records_of(result)

    @property
    def limit_param(self) -> str | None:
        """The parameter that sets its page size (``limit``, ``maxResults``, ``per_page``)."""
        if "limit" in self.params and self.params["limit"].role == "limit":
            return "limit"
        return next((n for n, p in self.params.items() if p.role == "limit"), None)

    @property
    def returns_rows(self) -> bool:
        return self.action in ROW_ACTIONS


@dataclass
class ToolEdge:
    source: str
    target: str
    field: str
    param: str
    via: set[str] = field(default_factory=set)


# Properties an answer's envelope carries beside its rows (counts, page tokens, a status), by
# their names lower-cased without separators: `{"user": {...}, "requestId": "..."}` wraps one row.
ENVELOPE_WORDS = frozenset(
    {word for names in ROLE_NAMES.values() for word in names}
    | {"object", "type", "kind", "url", "self", "href", "links", "requestid", "message", "status"}
)


def _envelope_word(name: str) -> bool:
    return squashed(name) in ENVELOPE_WORDS


def _unwrapped(result: dict[str, Any]) -> tuple[list[dict[str, Any]], bool] | None:
    """(rows, many) of an answer that wraps its rows in an envelope, else None (a row).

    ``{"data": [...], "has_more": false}``, ``{"profilingGroups": [...], "names": ["a"]}``: the
    one list of objects holds the rows. ``{"item": {...}}``, ``{"user": {...}, "requestId":
    "r1"}``: one object beside nothing but envelope properties is the one row."""
    lists = {k: v for k, v in result.items() if isinstance(v, list)}
    full = [k for k, v in lists.items() if v and all(isinstance(r, dict) for r in v)]
    if len(full) == 1:
        return lists[full[0]], True  # {"total": 3, "rows": [...]}: the rows are the records
    empty = [k for k, v in lists.items() if not v]
    if not full and len(empty) == 1:  # {"data": [], "has_more": false}, not {"tags": []}
        others = [k for k in result if k != empty[0]]
        if empty[0] in ROW_WRAPPERS or (others and all(_envelope_word(k) for k in others)):
            return [], True
    objects = [k for k, v in result.items() if isinstance(v, dict)]
    if len(objects) == 1 and not full:
        others = [k for k in result if k != objects[0]]
        if all(_envelope_word(k) for k in others):
            return [result[objects[0]]], False
    return None


def records_of(result: Any) -> list[dict[str, Any]]:
    """The row-like records in a tool result: a row, a list of rows, or rows in an envelope."""
    if isinstance(result, list):
        return [r for r in result if isinstance(r, dict)]
    if isinstance(result, dict):
        unwrapped = _unwrapped(result)
        return unwrapped[0] if unwrapped is not None else [result]
    return []


def is_row_list(result: Any) -> bool:
    """Whether a result is a list of rows (bare or in an envelope) rather than one row."""
    if isinstance(result, list):
        return True
    if not isinstance(result, dict):
        return False
    unwrapped = _unwrapped(result)
    return unwrapped is not None and unwrapped[1]


def row_of(result: Any) -> Any:
    """The one row a result names: the row an envelope wraps (``{"item": {...}}``), else the
    result itself."""
    if isinstance(result, dict) and not is_row_list(result):
        records = records_of(result)
        if len(records) == 1:
            return records[0]
    return result


def default_limit(description: str) -> int | None:
    """The default page size a tool's limit parameter documents ("default 20")."""
    match = re.search(r"default\D{0,3}(\d+)", description or "")
    return int(match.group(1)) if match else None


class ToolGraph:
    """Nodes are an environment's tools; edges say which output feeds which parameter."""

    def __init__(self, environment: str, nodes: dict[str, ToolNode], edges: list[ToolEdge]):
        self.environment = environment
        self.nodes = nodes
        self.edges = edges
        self._into: dict[tuple[str, str], list[ToolEdge]] = {}
        self._out: dict[str, list[ToolEdge]] = {}
        for edge in edges:
            self._into.setdefault((edge.target, edge.param), []).append(edge)
            self._out.setdefault(edge.source, []).append(edge)

    def edges_into(self, tool: str, param: str) -> list[ToolEdge]:
        return self._into.get((tool, param), [])

    def edges_from(self, tool: str) -> list[ToolEdge]:
        return self._out.get(tool, [])

    def successors(self, tool: str) -> list[str]:
        return sorted({e.target for e in self.edges_from(tool)})

    def layout(self) -> dict[str, tuple[int, int]]:
        """Deterministic positions: one column per action, tools sorted by name within it."""
        columns: dict[str, list[str]] = {}
        for name in sorted(self.nodes):
            action = self.nodes[name].action
            columns.setdefault(action if action in ACTION_COLUMNS else "other", []).append(name)
        order = [a for a in (*ACTION_COLUMNS, "other") if a in columns]
        return {
            name: (40 + 220 * col, 40 + 70 * row)
            for col, action in enumerate(order)
            for row, name in enumerate(columns[action])
        }

    def to_dict(self) -> dict[str, Any]:
        positions = self.layout()
        return {
            "environment": self.environment,
            "nodes": [
                {
                    "id": n.name,
                    "label": n.name,
                    "kind": n.kind,
                    "action": n.action,
                    "entity": n.entity,
                    "x": positions[n.name][0],
                    "y": positions[n.name][1],
                }
                for n in sorted(self.nodes.values(), key=lambda n: n.name)
            ],
            "edges": [
                {
                    "source": e.source,
                    "target": e.target,
                    "field": e.field,
                    "param": e.param,
                    "via": sorted(e.via),
                }
                for e in sorted(self.edges, key=lambda e: (e.source, e.target, e.param, e.field))
            ],
        }


# --- building the nodes -------------------------------------------------------------------


def parse_tool_name(name: str, tables: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """(action, entity table, parent table) from a tool name like list_books_for_author."""
    verb, _, rest = name.partition("_")
    action = ACTION_ALIASES.get(verb, "other")
    parent = None
    link = "_to_" if verb == "add" else "_from_" if verb == "remove" else ""
    if link and link in rest:  # add_track_to_playlist: a link between two rows, not a new row
        rest, _, parent_word = rest.partition(link)
        parent = resolve_table(parent_word, tables)
        if parent is not None:
            return ("link" if verb == "add" else "unlink"), resolve_table(rest, tables), parent
    if "_for_" in rest:
        rest, _, parent_word = rest.partition("_for_")
        parent = resolve_table(parent_word, tables)
    elif "_by_" in rest:
        rest = rest.partition("_by_")[0]
    if action == "list" and parent is None:
        action = "search"
    return action, resolve_table(rest, tables), parent


def tool_name_parts(name: str, tables: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """`parse_tool_name` of the name as written (`get_NationLanguage` names the table
    `NationLanguages`), else of its snake-case form (`getUser`: `get_user`)."""
    parts = parse_tool_name(name, tables)
    if parts[0] != "other" and parts[1] is not None:
        return parts
    snaked = parse_tool_name(snake(name), tables)
    return snaked if snaked[1] is not None or parts[0] == "other" else parts


def key_of(view: EnvironmentView, table: str, column: str) -> tuple[str, str] | None:
    """The primary key a column identifies: its own table's key, a FK target, or <t>_id."""
    info = view.tables.get(table)
    if info is None:
        return None
    if info.key == column or (table, column) in view.lookup_keys:
        return (table, column)
    if column in info.foreign_keys:
        return info.foreign_keys[column]
    if column.endswith("_id"):
        target = resolve_table(column[:-3], view.tables)
        if target and view.tables[target].key:
            return (target, view.tables[target].key)
    return None


def _param_column(
    view: EnvironmentView, pname: str, entity: str | None, parent: str | None
) -> tuple[str, str] | None:
    tables = view.tables
    for table in (entity, parent):
        if table and pname in tables[table].columns:
            return (table, pname)
    if pname.endswith("_id"):
        target = resolve_table(pname[:-3], tables)
        if target and tables[target].key:
            return (target, tables[target].key)
    if pname == "id" and entity and tables[entity].key:
        return (entity, tables[entity].key)
    head, _, tail = pname.partition("_")
    owner = resolve_table(head, tables) if tail else None
    if owner and tail in tables[owner].columns:  # author_name -> author.name
        return (owner, tail)
    owners = [t for t in sorted(tables) if pname in tables[t].columns]
    return (owners[0], pname) if len(owners) == 1 else None


def _text_column(view: EnvironmentView, table: str | None) -> tuple[str, str] | None:
    if not table:
        return None
    columns = view.tables[table].columns
    for name in DISPLAY_FIELDS:
        if name in columns:
            return (table, name)
    texts = [c for c, t in columns.items() if "CHAR" in t or "TEXT" in t or t == ""]
    return (table, texts[0]) if texts else None


def _schema_param(pname: str, schema: dict[str, Any], required: bool) -> ParamInfo:
    """A parameter as its JSON schema declares it (type, enum, bounds, default), no role yet."""
    ptype = schema.get("type", "string")
    if isinstance(ptype, list):
        ptype = next((t for t in ptype if t != "null"), "string")
    info = ParamInfo(pname, ptype, required, "other", enum=schema.get("enum"))
    info.maximum = schema.get("maximum")
    if info.maximum is None:
        found = re.search(r"max(?:imum)?\D{0,3}(\d+)", schema.get("description", ""))
        info.maximum = int(found.group(1)) if found else None
    info.default = schema.get("default")
    if info.default is None:
        info.default = default_limit(schema.get("description", ""))
    if info.enum:
        info.role = "enum"
    info.orders = pname.lower() in ORDER_PARAMS
    return info


def describe_param(
    view: EnvironmentView, pname: str, schema: dict[str, Any], required: bool, node_ctx
) -> ParamInfo:
    entity, parent = node_ctx
    info = _schema_param(pname, schema, required)
    if pname in LIMIT_PARAMS:
        info.role = "limit"
        return info
    if pname in TEXT_PARAMS:
        info.role, info.column = "text", _text_column(view, entity)
        return info
    if pname.endswith("_contains") or pname.endswith("_like"):
        col = _param_column(view, pname.rsplit("_", 1)[0], entity, parent)
        if col:
            info.role, info.column = "text", col
            return info
    bound = re.match(r"^(min|max)_(.+)$", pname) or re.match(r"^(.+)_(min|max)$", pname)
    if bound:
        groups = bound.groups()
        side, column = (groups[0], groups[1]) if groups[0] in ("min", "max") else groups[::-1]
        col = _param_column(view, column, entity, parent)
        if col:
            info.role, info.column = side, col
            return info
    col = _param_column(view, pname, entity, parent)
    if col:
        info.column = col
        info.key = key_of(view, *col)
        if info.role != "enum":
            info.role = "key" if info.key else "value"
    return info


# A recorded binding role -> the role synthesis gives the parameter (None: by its column).
BOUND_ROLES = {
    "key": None,
    "field": None,
    "filter": None,
    "range_min": "min",
    "range_max": "max",
    "query": "text",
    "limit": "limit",
}


def bound_param(
    view: EnvironmentView, pname: str, schema: dict[str, Any], required: bool, table: str, binding
) -> ParamInfo:
    """A parameter of a tool whose operation the build recorded: its role and column come from
    what the tool does with it (``binding``), not from its name."""
    info = _schema_param(pname, schema, required)
    if binding is None or binding.role not in BOUND_ROLES:
        return info  # paging tokens, credentials, lists of keys: nothing a walk feeds
    columns = view.tables[table].columns
    if binding.role == "query":
        texts = [c for c in binding.columns if c in columns]
        info.role = "text"
        info.column = (table, texts[0]) if len(texts) == 1 else _text_column(view, table)
        return info
    if binding.role == "limit":
        info.role = "limit"
        return info
    column = binding.column
    if not column or column not in columns:
        return info
    info.column = (table, column)
    if BOUND_ROLES[binding.role]:
        info.role = BOUND_ROLES[binding.role]
        return info
    info.key = key_of(view, table, column)
    if info.role != "enum":
        info.role = "key" if info.key else "value"
    return info


def operation_node(view: EnvironmentView, name: str, schema: dict[str, Any], op) -> ToolNode:
    """The node of a tool whose operation the build recorded (``view.operations``)."""
    function = schema["function"]
    parameters = function.get("parameters", {}) or {}
    required = set(parameters.get("required", []))
    params = {
        pname: bound_param(
            view, pname, pschema or {}, pname in required, op.table, op.params.get(pname)
        )
        for pname, pschema in (parameters.get("properties") or {}).items()
    }
    action = op.action
    kind = view.tool_kinds.get(name) or (
        "write" if action in ("create", "update", "delete") else "read"
    )
    parent = None
    if action == "search":  # rows of one parent: list_profiles(profilingGroupName=...)
        owners = {p.key[0] for p in params.values() if p.role == "key" and p.key}
        owners.discard(op.table)
        parent = sorted(owners)[0] if len(owners) == 1 else None
        action = "list" if parent else "search"
    columns = view.tables[op.table].columns
    keyed = [b.column for b in op.params.values() if b.role == "key" and b.column in columns]
    node = ToolNode(
        name,
        kind,
        action,
        op.table,
        parent,
        function.get("description", ""),
        params,
        row_key=keyed[0] if keyed else (op.key if op.key in columns else None),
        rows_at=op.rows_at,
        many=op.many,
        recorded=True,
    )
    if action in ROW_ACTIONS and op.rows_at is not None:
        node.output_fields = {c: (op.table, c) for c in columns}
    return node


def build_nodes(view: EnvironmentView) -> dict[str, ToolNode]:
    nodes: dict[str, ToolNode] = {}
    for name, schema in view.tool_schemas.items():
        if name in view.operations:
            nodes[name] = operation_node(view, name, schema, view.operations[name])
            continue
        function = schema["function"]
        action, entity, parent = tool_name_parts(name, view.tables)
        kind = view.tool_kinds.get(name) or (
            "write" if action in ("create", "update", "delete") else "read"
        )
        parameters = function.get("parameters", {}) or {}
        required = set(parameters.get("required", []))
        params = {
            pname: describe_param(view, pname, pschema or {}, pname in required, (entity, parent))
            for pname, pschema in (parameters.get("properties") or {}).items()
        }
        if entity is None:  # update_stock(book_id, ...) acts on the table its key names
            keyed = [p.key[0] for p in params.values() if p.role == "key" and p.key]
            entity = keyed[0] if keyed else None
        node = ToolNode(name, kind, action, entity, parent, function.get("description", ""), params)
        if action in ROW_ACTIONS and entity:
            node.output_fields = {c: (entity, c) for c in view.tables[entity].columns}
        nodes[name] = node
    return nodes


# --- building the edges -------------------------------------------------------------------


def _field_key(view: EnvironmentView, column: tuple[str, str] | None, fname: str):
    if column:
        return key_of(view, *column)
    if fname.endswith("_id"):
        target = resolve_table(fname[:-3], view.tables)
        if target and view.tables[target].key:
            return (target, view.tables[target].key)
    return None


def _schema_edges(view: EnvironmentView, nodes: dict[str, ToolNode]) -> dict[tuple, ToolEdge]:
    edges: dict[tuple, ToolEdge] = {}
    for a in nodes.values():
        for fname, column in a.output_fields.items():
            fkey = _field_key(view, column, fname)
            via_fk = bool(column and column[1] in view.tables[column[0]].foreign_keys)
            for b in nodes.values():
                if b.name == a.name:
                    continue
                for p in b.params.values():
                    if p.role == "key" and fkey and p.key == fkey:
                        via = {"foreign_key"} if via_fk or _param_is_fk(view, p) else {"schema"}
                    elif p.role == "value" and column is not None and column == p.column:
                        via = {"schema"}  # a column's value filters that very column
                    elif p.role == "text" and column and p.column == column:
                        via = {"schema"}  # title of a book -> title_contains of search_books
                    else:
                        continue
                    edge = edges.setdefault(
                        (a.name, b.name, fname, p.name), ToolEdge(a.name, b.name, fname, p.name)
                    )
                    edge.via |= via
    return edges


def _param_is_fk(view: EnvironmentView, p: ParamInfo) -> bool:
    return bool(p.column and p.column[1] in view.tables[p.column[0]].foreign_keys)


def _names_key(view: EnvironmentView, fname: str, p: ParamInfo) -> bool:
    """Whether a field's name refers to the key a parameter takes (``country`` to the
    countries' key, ``alpha_2`` to ``alpha_2``): with values inside that key's values, an
    inferred foreign key; without the name, values that only overlap."""
    if p.key is None:
        return False
    table, column = p.key
    return fname in (column, p.name) or resolve_table(fname, view.tables) == table


def observe_outputs(
    view: EnvironmentView,
    nodes: dict[str, ToolNode],
    episode: Any,
    rng: random.Random,
    samples: int,
) -> dict[str, dict[str, set]]:
    """Call each read tool on real rows; return tool -> field -> observed scalar values."""
    from tasks.synthesis.arguments import sample_arguments

    observed: dict[str, dict[str, set]] = {}
    for node in nodes.values():
        if node.kind != "read":
            continue
        for _ in range(samples):
            arguments = sample_arguments(view, node, rng)
            if arguments is None:
                break
            outcome = episode.call_tool(node.name, arguments)
            if not outcome.ok:
                continue
            for record in node.records(outcome.result)[:20]:
                for fname, value in record.items():
                    if isinstance(value, str | int | float) and not isinstance(value, bool):
                        observed.setdefault(node.name, {}).setdefault(fname, set()).add(value)
        if node.name in observed:  # what the tool really returns replaces the guess
            node.observed = True
            node.output_fields = {
                fname: _param_column(view, fname, node.entity, None)
                for fname in observed[node.name]
            }
    return observed


def _observed_edges(
    view: EnvironmentView,
    nodes: dict[str, ToolNode],
    observed: dict[str, dict[str, set]],
    edges: dict[tuple, ToolEdge],
) -> None:
    for a_name, fields_seen in observed.items():
        for fname, values in fields_seen.items():
            keyish = (
                fname == "id"
                or fname.endswith(("_id", "_code"))
                or all(isinstance(v, str) for v in values)
            )
            if not keyish:
                continue
            for b in nodes.values():
                if b.name == a_name:
                    continue
                for p in b.params.values():
                    if p.role != "key" or not p.key:
                        continue
                    own = _field_key(view, nodes[a_name].output_fields.get(fname), fname)
                    if own is not None and own != p.key:
                        continue  # author_id values can look like book ids; keys must agree
                    if own is None and not _names_key(view, fname, p):
                        continue  # codes that merely look alike (alpha_3 and iata)
                    domain = set(view.column_values(*p.key))
                    if not domain or len(values & domain) < max(1, 0.8 * len(values)):
                        continue
                    edge = edges.setdefault(
                        (a_name, b.name, fname, p.name), ToolEdge(a_name, b.name, fname, p.name)
                    )
                    edge.via.add("observed")


def build_tool_graph(
    package: Any, episode: Any = None, seed: int = 0, observe_samples: int = 4
) -> ToolGraph:
    """Graph of one environment; pass an ``episode`` to add edges from observed outputs."""
    view = package if isinstance(package, EnvironmentView) else EnvironmentView(package)
    nodes = build_nodes(view)
    observed = {}
    if episode is not None:
        observed = observe_outputs(view, nodes, episode, random.Random(seed), observe_samples)
    edges = _schema_edges(view, nodes)
    _observed_edges(view, nodes, observed, edges)
    return ToolGraph(view.name, nodes, list(edges.values()))
