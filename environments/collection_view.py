"""What the environment page shows of a package of JSON collections (an Agent-World release's
environment): each collection as a table of rows, or a single document as key/value pairs, the
log collections flagged (left out of state comparison), and the README's business rules.

Plain Python over the package folder, read-only; the page (views.py) renders what it returns,
in the shape of the SQLite database view where the two meet (tables, rows, paging).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from environments.runtime.json_state import UNREADABLE, parse_collection

CELL_CHARS = 200
# README sections worth showing first: the rules an agent must respect.
RULE_HEADINGS = re.compile(r"business rules?|constraints?|lifecycles?|rules", re.IGNORECASE)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def collection_state(manifest: dict[str, Any] | None) -> dict[str, Any] | None:
    """The manifest's `state` when the package holds JSON collections, else None."""
    state = (manifest or {}).get("state") if isinstance(manifest, dict) else None
    if isinstance(state, dict) and state.get("backend") == "json_collections":
        return state
    return None


def read_collection_view(
    package: Path, state: dict[str, Any], selected: str | None, page: int, per_page: int
) -> dict[str, Any]:
    """The collections with their kind, size and log flag, and one collection's page."""
    folder = Path(package) / "collections"
    logs = set(state.get("log_collections") or [])
    keys = state.get("collections") or {}
    data = {
        path.stem: parse_collection(path.read_bytes()) for path in sorted(folder.glob("*.json"))
    }
    collections = [
        {
            "name": name,
            "kind": "rows" if isinstance(value, list) else "document",
            "rows": len(value) if isinstance(value, list) else 1,
            "key": (keys.get(name) or {}).get("key") or [],
            "log": name in logs,
        }
        for name, value in data.items()
    ]
    view: dict[str, Any] = {"backend": "json_collections", "tables": collections}
    if not collections:
        return {**view, "table": None}
    chosen = next((c for c in collections if c["name"] == selected), collections[0])
    value = data[chosen["name"]]
    view.update(table=chosen["name"], collection=chosen)
    if isinstance(value, dict) and UNREADABLE in value:
        return {**view, "unreadable": True}
    if isinstance(value, list):
        view.update(rows_view(value, page, per_page))
    else:
        view["pairs"] = document_pairs(value)
    return view


def rows_view(rows: list[Any], page: int, per_page: int) -> dict[str, Any]:
    """One page of a list collection: its columns (every field any row has, in the order they
    first appear, so fields a write added show too) and the cells."""
    rows = [row if isinstance(row, dict) else {"value": row} for row in rows]
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    total = len(rows)
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    shown = rows[(page - 1) * per_page : page * per_page]
    cells = [[cell(row[c]) if c in row else "" for c in columns] for row in shown]
    sparse = {c for c in columns if any(c not in row for row in rows)}
    return {
        "columns": [{"name": c, "sparse": c in sparse} for c in columns],
        "any_sparse": bool(sparse),
        "rows": cells,
        "total_rows": total,
        "row_page": page,
        "row_pages": pages,
        "first_row": (page - 1) * per_page + 1 if total else 0,
        "last_row": min(total, page * per_page),
    }


def document_pairs(document: Any) -> list[tuple[str, str]]:
    """A single-document collection as (key, value) pairs; nested values as compact JSON."""
    if isinstance(document, dict):
        return [(str(key), cell(value)) for key, value in document.items()]
    return [("value", cell(document))]


def cell(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def readme_of(package: Path) -> str:
    path = Path(package) / "README.md"
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def rule_sections(readme: str) -> list[dict[str, str]]:
    """The README's sections on business rules, constraints and lifecycles: heading and text,
    each up to the next heading of the same or a higher level."""
    lines = readme.splitlines()
    found = []
    for index, line in enumerate(lines):
        heading = HEADING.match(line)
        if not heading or not RULE_HEADINGS.search(heading.group(2)):
            continue
        level, body = len(heading.group(1)), []
        for following in lines[index + 1 :]:
            deeper = HEADING.match(following)
            if deeper and len(deeper.group(1)) <= level:
                break
            body.append(following)
        text = "\n".join(body).strip()
        if text:
            found.append({"heading": heading.group(2), "text": text})
    return found
