"""What each tool of a theme environment does to its database, as the manifest records it.

A theme build knows exactly what every tool it generates does (its plan: the operation, the
table, the column each parameter binds, where the rows sit in the answer), but tool names come
from documents (`CreateProfilingGroup`, `getUserById`, `post_v1_customers`) and say little that a
reader can parse. The build writes this account into the manifest (``tool_operations``) so that
task synthesis reads the tools' meaning instead of guessing it from their names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OPERATION_ACTIONS = {  # a plan's operation -> the action task synthesis knows it by
    "get": "get",
    "get_by_fields": "get",
    "get_many": "search",
    "list": "search",
    "dump": "search",
    "create": "create",
    "batch_create": "create",
    "update": "update",
    "transition": "update",
    "append": "update",
    "remove": "update",
    "delete": "delete",
    "batch_delete": "delete",
}


@dataclass(frozen=True)
class ParamBinding:
    """What one parameter does: ``role`` is the plan's binding role (key, field, filter,
    filter_in, range_min, range_max, query, limit, offset, page, cursor, credential, ...);
    ``columns`` the column(s) of the tool's table it reads or writes."""

    role: str
    columns: tuple[str, ...] = ()

    @property
    def column(self) -> str | None:
        return self.columns[0] if len(self.columns) == 1 else None


@dataclass(frozen=True)
class ToolOperation:
    """One tool's effect on the database and the shape of its answer."""

    operation: str  # the plan's operation (get, list, create, update, delete, ...)
    table: str  # the SQLite table it reads or writes
    key: str = ""  # the column that names one row of that table
    params: dict[str, ParamBinding] = field(default_factory=dict)
    rows_at: tuple[str, ...] | None = ()  # where the rows sit in the answer: () = the answer
    #   itself, None = the answer holds no plain rows (a status, a text rendering)
    many: bool = True  # whether the answer holds a list of rows (else one row)

    @property
    def action(self) -> str:
        return OPERATION_ACTIONS.get(self.operation, "other")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["params"] = {
            name: {"role": b.role, "columns": list(b.columns)} for name, b in self.params.items()
        }
        out["rows_at"] = None if self.rows_at is None else list(self.rows_at)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolOperation:
        params = {
            str(name): ParamBinding(
                str(b.get("role", "")), tuple(str(c) for c in b.get("columns") or ())
            )
            for name, b in (data.get("params") or {}).items()
            if isinstance(b, dict)
        }
        return cls(
            operation=str(data.get("operation", "")),
            table=str(data.get("table", "")),
            key=str(data.get("key") or ""),
            params=params,
            rows_at=None
            if data.get("rows_at", ()) is None
            else tuple(str(p) for p in data.get("rows_at") or ()),
            many=bool(data.get("many", True)),
        )


def rows_in(answer: Any, rows_at: tuple[str, ...], many: bool) -> list[dict[str, Any]] | None:
    """The rows an answer holds where its tool's operation says, or None when they are not
    there (an error message, another shape)."""
    for prop in rows_at:
        if not isinstance(answer, dict) or prop not in answer:
            return None
        answer = answer[prop]
    if many:
        if not isinstance(answer, list):
            return None
        return [r for r in answer if isinstance(r, dict)]
    return [answer] if isinstance(answer, dict) else None


def binding_columns(binding: list) -> tuple[str, ...]:
    """The column(s) a plan binding names: ``["key", "id"]``, ``["query", ["name", "bio"]]``."""
    if len(binding) < 2:
        return ()
    named = binding[1]
    if isinstance(named, str):
        return (named,)
    if isinstance(named, list | tuple):
        return tuple(str(c) for c in named if isinstance(c, str))
    return ()


def manifest_operations(manifest: dict[str, Any]) -> dict[str, ToolOperation]:
    """The manifest's ``tool_operations`` (empty for environments built without them)."""
    found = manifest.get("tool_operations") or {}
    if not isinstance(found, dict):
        return {}
    return {
        str(name): ToolOperation.from_dict(data)
        for name, data in found.items()
        if isinstance(data, dict) and data.get("table")
    }
