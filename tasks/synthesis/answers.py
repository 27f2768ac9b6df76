"""What a task's answer is: a projection of the last gold step's result the instruction names."""

from __future__ import annotations

from typing import Any

from environments.discovery.naming import is_serial_name
from tasks.synthesis.tool_graph import DISPLAY_FIELDS, ROW_ACTIONS, is_row_list, records_of, row_of

SCALARS = (str, int, float, bool)


def display_field(record: dict[str, Any]) -> str | None:
    for name in DISPLAY_FIELDS:
        if isinstance(record.get(name), str):
            return name
    return None


def _measure_fields(record: dict[str, Any]) -> list[str]:
    return [
        k
        for k, v in record.items()
        if isinstance(v, int | float)
        and not isinstance(v, bool)
        and k != "id"
        and not k.endswith("_id")
    ]


def project_answer(action: str, kind: str, result: Any) -> tuple[dict[str, Any], Any]:
    """(answer spec, reference answer) for the last step of a gold chain.

    The spec says what the instruction asks for: ``shape`` in scalar | value | list | object |
    none, and the ``field`` reported.
    """
    if kind == "write" or result is None:
        return {"shape": "none", "field": None}, None
    if isinstance(result, SCALARS):
        return {"shape": "scalar", "field": None}, result
    if isinstance(result, list) and all(isinstance(v, SCALARS) for v in result):
        return {"shape": "list", "field": None}, list(result)
    records = records_of(result)
    if is_row_list(result):
        if not records:
            return {"shape": "list", "field": None}, []
        field = display_field(records[0])
        if field and all(field in r for r in records):
            return {"shape": "list", "field": field}, [r[field] for r in records]
        return {"shape": "list", "field": None}, records
    result = row_of(result)  # {"item": {...}}: the row the envelope wraps
    if isinstance(result, dict):
        field = display_field(result)
        if field and action in ROW_ACTIONS:
            return {"shape": "value", "field": field}, result[field]
        measures = _measure_fields(result)
        if len(measures) == 1:
            return {"shape": "value", "field": measures[0]}, result[measures[0]]
        if field:
            return {"shape": "value", "field": field}, result[field]
        return {"shape": "object", "field": None}, result
    return {"shape": "object", "field": None}, result


def other_answers(result: Any) -> list[tuple[dict[str, Any], Any]]:
    """Other fields of the last step's rows to ask for, best first, when the one
    `project_answer` chose is one the text already gives (a resource found by its name, asked
    its name): the row's other plain values (texts, then numbers), never an id or a value
    some row lacks."""
    if is_row_list(result):
        records = records_of(result)
        shape = "list"
    else:
        row = row_of(result)
        records = [row] if isinstance(row, dict) else []
        shape = "value"
    if not records:
        return []
    fields = [
        name
        for name in records[0]
        if not is_serial_name(name)
        and all(isinstance(r.get(name), SCALARS) and r.get(name) != "" for r in records)
    ]
    fields.sort(key=lambda name: (not isinstance(records[0][name], str), name in SECONDARY))
    return [
        (
            {"shape": shape, "field": name},
            [r[name] for r in records] if shape == "list" else records[0][name],
        )
        for name in fields
    ]


SECONDARY = frozenset({"type", "kind", "etag", "url", "href", "self", "uri"})
