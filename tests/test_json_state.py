"""The state hash and diff of JSON collections: the contract of state.py's, so the reward's
normaliser reads them unchanged."""

from __future__ import annotations

from environments.runtime.json_state import collections_diff, collections_hash
from tasks.state_changes import writes

BEFORE = {
    "orders": [{"id": "o1", "total": 5}, {"id": "o2", "total": 7}],
    "pairs": [{"a": 1}, {"a": 2}],
    "config": {"mode": "on", "limit": 3},
    "log": [{"at": "t0"}],
}


def test_the_hash_ignores_row_order_and_formatting_but_not_values():
    shuffled = dict(BEFORE, orders=list(reversed(BEFORE["orders"])))
    assert collections_hash(shuffled) == collections_hash(BEFORE)
    changed = dict(BEFORE, orders=[{"id": "o1", "total": 6}, {"id": "o2", "total": 7}])
    assert collections_hash(changed) != collections_hash(BEFORE)
    typed = dict(BEFORE, config={"mode": "on", "limit": 3.0})
    assert collections_hash(typed) != collections_hash(BEFORE)


def test_log_collections_are_left_out():
    logged = dict(BEFORE, log=[{"at": "t0"}, {"at": "t1"}])
    assert collections_hash(logged, {"log"}) == collections_hash(BEFORE, {"log"})
    assert collections_diff(BEFORE, logged, {"log"}) == {}
    assert list(collections_diff(BEFORE, logged)) == ["log"]


def test_rows_by_id_rows_by_content_and_documents():
    after = {
        "orders": [{"id": "o1", "total": 5, "note": "gift"}, {"id": "o3", "total": 1}],
        "pairs": [{"a": 2}, {"a": 3}],
        "config": {"mode": "off", "limit": 3},
        "log": [{"at": "t0"}],
        "refunds": [{"id": "r1"}],
    }
    diff = collections_diff(BEFORE, after)
    assert diff["orders"]["changed"] == [
        {"key": {"id": "o1"}, "before": BEFORE["orders"][0], "after": after["orders"][0]}
    ]
    assert diff["orders"]["added"] == [{"id": "o3", "total": 1}]
    assert diff["orders"]["removed"] == [{"id": "o2", "total": 7}]
    assert (diff["orders"]["key"], diff["orders"]["surrogate"]) == (["id"], True)
    assert (diff["pairs"]["added"], diff["pairs"]["removed"]) == ([{"a": 3}], [{"a": 1}])
    assert diff["pairs"]["key"] == []
    assert diff["config"]["changed"][0]["after"] == {"mode": "off", "limit": 3}
    assert diff["refunds"]["added"] == [{"id": "r1"}]
    assert "log" not in diff
    described = sorted(w.describe() for w in writes(diff))
    assert "orders row added" in described and "pairs row removed" in described
    assert any(d.startswith("config") and "mode" in d for d in described)
    assert any("note" in d for d in described)  # a field a write added is a write
