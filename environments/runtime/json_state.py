"""Episode state of an environment whose database is a folder of JSON collections.

The same contract as state.py gives SQLite databases, so the reward, replay and diagnosis read
both alike: `collections_hash` is an order-independent sha256 of the parsed collections and
`collections_diff` has state.state_diff's shape ({collection: {"added", "removed", "changed",
"key", "surrogate", "references"}}, only the collections that changed).

- A collection is one `<name>.json` file: a list of rows, or one document.
- Rows are matched by their `id` where every row has a distinct one (the key is ["id"]; ids are
  what tools make from uuid4 or the clock, so they count as surrogate like an SQLite rowid);
  otherwise by content (the key is [] and a row is only ever added or removed).
- A document is one row with no key: a change is one `changed` entry whose columns are its
  top-level fields.
- Fields a write added to a row are part of the row, so they show in the diff.
- Log collections (appended to on every call, reads included) are left out of hash and diff.

Standard library only: it runs inside the sandbox worker, where the episode's files live.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any

SUFFIX = ".json"
UNREADABLE = "$unreadable"  # what a file that is not JSON (a tool broke it) reads as


def read_collections(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """{collection name: parsed JSON} of every `*.json` file in the folder."""
    found: dict[str, Any] = {}
    for entry in sorted(os.listdir(directory)):
        if not entry.endswith(SUFFIX):
            continue
        path = os.path.join(directory, entry)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as handle:
            raw = handle.read()
        found[entry[: -len(SUFFIX)]] = parse_collection(raw)
    return found


def parse_collection(raw: bytes) -> Any:
    """A collection file's content; one that is not JSON reads as a marker with its digest, so
    that a tool breaking a file still changes the state hash."""
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return {UNREADABLE: hashlib.sha256(raw).hexdigest()}


def canonical(value: Any) -> str:
    """One text per JSON value: keys sorted, no spacing, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def collections_hash(
    collections: dict[str, Any], ignore: frozenset[str] | set[str] = frozenset()
) -> str:
    """sha256 of the collections, independent of row order and file formatting."""
    digest = hashlib.sha256()
    for name in sorted(set(collections) - set(ignore)):
        value = collections[name]
        if isinstance(value, list):
            body = ["rows", sorted(canonical(row) for row in value)]
        else:
            body = ["document", canonical(value)]
        digest.update(canonical([name, body]).encode())
    return digest.hexdigest()


def collections_diff(
    before: dict[str, Any],
    after: dict[str, Any],
    ignore: frozenset[str] | set[str] = frozenset(),
) -> dict[str, dict[str, Any]]:
    """Changes from `before` to `after`, per collection (see the module docstring)."""
    diff: dict[str, dict[str, Any]] = {}
    for name in sorted((set(before) | set(after)) - set(ignore)):
        changes = collection_changes(before.get(name), after.get(name))
        if changes is not None:
            diff[name] = changes
    return diff


def collection_changes(before: Any, after: Any) -> dict[str, Any] | None:
    """One collection's diff entry, None when unchanged (None on a side: the file is absent)."""
    if canonical(before) == canonical(after):
        return None
    old_rows = _as_rows(before)
    new_rows = _as_rows(after)
    if old_rows is None or new_rows is None:  # a document on either side
        entry = _document_changes(before, after)
    elif rows_have_ids(old_rows) and rows_have_ids(new_rows):
        entry = _keyed_changes(old_rows, new_rows)
    else:
        entry = _content_changes(old_rows, new_rows)
    return entry if entry["added"] or entry["removed"] or entry["changed"] else None


class CollectionTracker:
    """An episode's state from its folder, against the package's initial collections (the
    worker's counterpart of change_tracking.Tracker for SQLite)."""

    def __init__(self, initial: dict[str, Any], directory: str, logs: frozenset[str]) -> None:
        self.initial = initial
        self.directory = directory
        self.logs = logs

    def state_hash(self) -> str:
        return collections_hash(read_collections(self.directory), self.logs)

    def state_diff(self) -> dict[str, dict[str, Any]]:
        return collections_diff(self.initial, read_collections(self.directory), self.logs)


# -- pieces ------------------------------------------------------------------------------------


def _as_rows(value: Any) -> list[Any] | None:
    if value is None:
        return []
    return value if isinstance(value, list) else None


def rows_have_ids(rows: list[Any]) -> bool:
    """Every row an object with an `id` of its own (a scalar, distinct from the others)."""
    ids = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str | int):
            return False
        ids.append(canonical(row["id"]))
    return len(set(ids)) == len(ids)


def _keyed_changes(old_rows: list[dict], new_rows: list[dict]) -> dict[str, Any]:
    before = {canonical(row["id"]): row for row in old_rows}
    after = {canonical(row["id"]): row for row in new_rows}
    changed = [
        {"key": {"id": after[key]["id"]}, "before": before[key], "after": after[key]}
        for key in sorted(before.keys() & after.keys())
        if canonical(before[key]) != canonical(after[key])
    ]
    return {
        "added": [after[key] for key in sorted(after.keys() - before.keys())],
        "removed": [before[key] for key in sorted(before.keys() - after.keys())],
        "changed": changed,
        "key": ["id"],
        "surrogate": True,
        "references": {},
    }


def _content_changes(old_rows: list[Any], new_rows: list[Any]) -> dict[str, Any]:
    before = Counter(canonical(row) for row in old_rows)
    after = Counter(canonical(row) for row in new_rows)
    return {
        "added": [json.loads(text) for text in sorted((after - before).elements())],
        "removed": [json.loads(text) for text in sorted((before - after).elements())],
        "changed": [],
        "key": [],
        "surrogate": False,
        "references": {},
    }


def _document_changes(before: Any, after: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "added": [],
        "removed": [],
        "changed": [],
        "key": [],
        "surrogate": False,
        "references": {},
        "document": True,
    }
    if before is None:
        entry["added"] = [after]
    elif after is None:
        entry["removed"] = [before]
    elif isinstance(before, dict) and isinstance(after, dict):
        entry["changed"] = [{"key": {}, "before": before, "after": after}]
    else:  # the file changed shape (rows <-> document, or a scalar)
        entry["removed"] = [before]
        entry["added"] = [after]
    return entry
