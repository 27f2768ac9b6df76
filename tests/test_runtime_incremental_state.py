"""Incremental state hash and diff (change_tracking.py) agree with the full ones (state.py).

Random writes (inserts, updates, key changes, deletes, delete + reinsert, REPLACE, rollbacks) on
tables with an INTEGER, TEXT, composite and no primary key, a UNIQUE column, a WITHOUT ROWID
table and a cascading foreign key: first directly on connections with a Tracker, then through
real episodes in a SandboxPool. Also: tool code cannot switch tracking off, a tool that changes
the schema makes the worker fall back to the full computation, and the diff's key metadata.
"""

from __future__ import annotations

import json
import sqlite3
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from environments.runtime import SandboxPool, load_package, state_diff, state_hash
from environments.runtime.change_tracking import InitialState, Tracker
from tests.support.sample_package import build_sample_package, simple_tool

SCHEMA = """
CREATE TABLE ip (id INTEGER PRIMARY KEY, v);
CREATE TABLE tp (code TEXT PRIMARY KEY, v);
CREATE TABLE cp (a INTEGER NOT NULL, b TEXT NOT NULL, v, PRIMARY KEY (a, b));
CREATE TABLE np (x INTEGER, v);
CREATE TABLE uq (id INTEGER PRIMARY KEY, email TEXT UNIQUE, v);
CREATE TABLE wr (k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE ch (
    id INTEGER PRIMARY KEY,
    parent INTEGER REFERENCES ip(id) ON DELETE CASCADE ON UPDATE CASCADE,
    v);
INSERT INTO ip VALUES (1, 'one'), (2, 2), (3, 3.0), (4, NULL);
INSERT INTO tp VALUES ('a', 1), ('b', '1'), ('c', 1.0);
INSERT INTO cp VALUES (1, 'x', 'p'), (2, 'y', 'q');
INSERT INTO np VALUES (1, 'same'), (2, 'same'), (2, 'same');
INSERT INTO uq VALUES (1, 'e1', 'u'), (2, 'e2', 'w');
INSERT INTO wr VALUES ('a', 1), ('b', 2);
INSERT INTO ch VALUES (1, 1, 'c1'), (2, 2, 'c2'), (3, 2, 'c3');
"""

# table -> (key columns, other columns); np has no primary key, x is only what we select by
TABLES = {
    "ip": (["id"], ["v"]),
    "tp": (["code"], ["v"]),
    "cp": (["a", "b"], ["v"]),
    "np": (["x"], ["v"]),
    "uq": (["id"], ["email", "v"]),
    "wr": (["k"], ["v"]),
    "ch": (["id"], ["parent", "v"]),
}
KEYS = {
    "ip": st.tuples(st.integers(1, 8)),
    "tp": st.tuples(st.sampled_from("abcdef")),
    "cp": st.tuples(st.integers(1, 3), st.sampled_from("xy")),
    "np": st.tuples(st.integers(1, 4)),
    "uq": st.tuples(st.integers(1, 6)),
    "wr": st.tuples(st.sampled_from("abcd")),
    "ch": st.tuples(st.integers(1, 5)),
}
SCALARS = st.one_of(
    st.none(),
    st.sampled_from([1, 1.0, "1", 0, -2, 2.5, "", "same"]),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=3),
)
SPECIAL = {
    ("uq", "email"): st.sampled_from(["e1", "e2", "e3", "e4", None]),
    ("ch", "parent"): st.integers(1, 8),
}

# Applied by the tool in the sandbox and by the test on its local replica, statement by
# statement: a constraint error skips the statement, "RAISE" fails the whole call.
APPLY_SOURCE = textwrap.dedent(
    """
    def run_sql(db, statements):
        done = 0
        for sql, params in statements:
            if sql == "RAISE":
                raise ValueError("the tool fails; its writes roll back")
            try:
                rows = db.execute(sql, params).fetchall()
            except Exception as exc:
                if type(exc).__name__ != "IntegrityError":
                    raise
                continue
            done += 1
            if sql.startswith("DELETE") and sql.endswith("RETURNING *"):
                table = sql.split()[2]
                for row in rows:
                    marks = ", ".join("?" * len(row))
                    db.execute(f"INSERT INTO {table} VALUES ({marks})", tuple(row))
        return done
    """
).strip()
_namespace: dict = {}
exec(APPLY_SOURCE, _namespace)  # noqa: S102 - our own test code
run_sql = _namespace["run_sql"]


@st.composite
def statements(draw, values=SCALARS):
    """One SQL statement with its parameters (or the RAISE marker)."""
    if draw(st.integers(0, 30)) == 0:
        return ["RAISE", []]
    table = draw(st.sampled_from(sorted(TABLES)))
    keys, others = TABLES[table]
    key = list(draw(KEYS[table]))
    where = " AND ".join(f"{column} = ?" for column in keys)
    row = key + [draw(SPECIAL.get((table, column), values)) for column in others]
    columns, marks = ", ".join(keys + others), ", ".join("?" * len(row))
    kind = draw(
        st.sampled_from(
            [
                "insert",
                "insert or ignore",
                "insert or replace",
                "update",
                "rekey",
                "update or replace",
                "delete",
                "reinsert",
            ]
        )
    )
    if kind.startswith("insert"):
        return [f"{kind.upper()} INTO {table} ({columns}) VALUES ({marks})", row]
    if kind == "update":
        column = draw(st.sampled_from(others))
        value = draw(SPECIAL.get((table, column), values))
        return [f"UPDATE {table} SET {column} = ? WHERE {where}", [value, *key]]
    if kind in ("rekey", "update or replace"):
        new_key = list(draw(KEYS[table]))
        assign = ", ".join(f"{column} = ?" for column in keys)
        verb = "UPDATE OR IGNORE" if kind == "rekey" else "UPDATE OR REPLACE"
        if table == "uq" and kind == "update or replace":
            assign, new_key = "email = ?", [draw(SPECIAL[("uq", "email")])]
        return [f"{verb} {table} SET {assign} WHERE {where}", new_key + key]
    if kind == "delete":
        return [f"DELETE FROM {table} WHERE {where}", key]
    return [f"DELETE FROM {table} WHERE {where} RETURNING *", key]


def tool_calls(values=SCALARS, max_calls=6):
    return st.lists(st.lists(statements(values), min_size=1, max_size=5), max_size=max_calls)


def apply_call(conn, batch, tracker=None):
    """One tool call on a local connection: commit on success, roll back on error (and, with a
    tracker, discount the rolled-back changes as the worker does)."""
    changes_before = conn.total_changes
    try:
        run_sql(conn, batch)
        conn.commit()
    except ValueError:
        conn.rollback()
        if tracker is not None:
            tracker.discount(changes_before)


def build_initial() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.commit()
    return conn


# -- directly on connections ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def initial():
    conn = build_initial()
    yield InitialState(conn)
    conn.close()


def tracked_copy(initial: InitialState) -> tuple[sqlite3.Connection, Tracker]:
    db = sqlite3.connect(":memory:")
    initial.conn.backup(db)
    db.execute("PRAGMA foreign_keys = ON")
    return db, Tracker(initial, db)


def assert_agrees(tracker: Tracker, initial: InitialState, db: sqlite3.Connection) -> None:
    assert tracker.state_hash() == state_hash(db)
    assert tracker.state_diff() == state_diff(initial.conn, db)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=tool_calls(values=st.one_of(SCALARS, st.binary(max_size=2))))
def test_incremental_equals_full_on_random_writes(initial, calls):
    db, tracker = tracked_copy(initial)
    assert tracker.touched() == {}
    for batch in calls:
        apply_call(db, batch, tracker)
        # None (the full fallback) only while nothing is recorded: a statement that failed a
        # constraint still counted its changes in total_changes
        assert (
            tracker.touched() is not None or not db.execute("SELECT 1 FROM aw_touched").fetchall()
        )
        assert_agrees(tracker, initial, db)
    db.close()


def test_replace_on_a_text_key_deletes_a_row_no_trigger_sees(initial):
    db, tracker = tracked_copy(initial)
    # the old 'a' row (rowid 1) goes by REPLACE: no DELETE trigger fires; the new row gets a
    # new rowid. The count check notices and reads tp in full.
    db.execute("INSERT OR REPLACE INTO tp VALUES ('a', 'new')")
    db.execute("UPDATE OR REPLACE uq SET email = 'e1' WHERE id = 2")
    db.commit()
    assert tracker.touched() == {"tp": [4], "uq": [2]}
    assert_agrees(tracker, initial, db)
    diff = tracker.state_diff()
    assert diff["tp"]["changed"] == [
        {"key": {"code": "a"}, "before": {"code": "a", "v": 1}, "after": {"code": "a", "v": "new"}}
    ]
    assert diff["uq"]["removed"] == [{"id": 1, "email": "e1", "v": "u"}]


def test_delete_and_reinsert_under_a_new_rowid_is_no_change(initial):
    db, tracker = tracked_copy(initial)
    run_sql(db, [["DELETE FROM tp WHERE code = ? RETURNING *", ["b"]]])
    db.commit()
    assert tracker.touched() == {"tp": [2, 4]}
    assert tracker.state_diff() == {} == state_diff(initial.conn, db)
    assert tracker.state_hash() == state_hash(initial.conn)


def test_cascades_and_rollbacks_are_tracked(initial):
    db, tracker = tracked_copy(initial)
    db.execute("UPDATE ip SET id = 7 WHERE id = 2")  # cascades to ch 2 and 3
    db.commit()
    assert sorted(tracker.touched()["ch"]) == [2, 3]
    db.execute("DELETE FROM ip WHERE id = 1")
    db.rollback()
    assert sorted(tracker.touched()) == ["ch", "ip"]
    assert_agrees(tracker, initial, db)


def test_schema_change_falls_back_to_the_full_computation(initial):
    db, tracker = tracked_copy(initial)
    db.execute("CREATE TABLE extra (x)")
    db.execute("INSERT INTO extra VALUES (1)")
    db.execute("UPDATE tp SET v = 9 WHERE code = 'a'")
    db.commit()
    assert tracker.touched() is None
    assert_agrees(tracker, initial, db)
    assert "extra" in tracker.state_diff()


def test_missing_triggers_or_unrecorded_changes_fall_back(initial):
    db, tracker = tracked_copy(initial)
    db.execute("DROP TRIGGER aw_track_0_update")  # no authorizer on this bare connection
    db.execute("UPDATE ch SET v = 'changed' WHERE id = 1")
    db.commit()
    assert tracker.touched() is None
    assert_agrees(tracker, initial, db)

    db, tracker = tracked_copy(initial)
    db.execute("CREATE TEMP TABLE scratch (x)")
    db.execute("INSERT INTO scratch VALUES (1)")  # changes, and nothing recorded
    assert tracker.touched() is None
    assert_agrees(tracker, initial, db)


# -- the hash definition -----------------------------------------------------------------------


def test_hash_is_typed_and_order_independent():
    def one(*rows, order="ASC"):
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE t (a, b)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
        return state_hash(conn)

    assert len({one((1, 0)), one((1.0, 0)), one(("1", 0)), one((b"1", 0))}) == 4
    assert one((1, 2), (3, 4)) == one((3, 4), (1, 2))
    assert one((1, 2), (1, 2)) != one((1, 2))  # a multiset: duplicates count
    assert one() != one((None, None))


# -- diff metadata -------------------------------------------------------------------------------


def test_diff_metadata_key_surrogate_references():
    before = sqlite3.connect(":memory:")
    before.executescript(
        """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE book (id integer PRIMARY KEY, author_id INTEGER REFERENCES author(id),
                           translator INTEGER REFERENCES author);
        CREATE TABLE tag (name TEXT PRIMARY KEY);
        CREATE TABLE book_tag (book_id INTEGER REFERENCES book(id), tag TEXT REFERENCES tag(name),
                               PRIMARY KEY (book_id, tag));
        CREATE TABLE log (line TEXT);
        CREATE TABLE edition (id INTEGER PRIMARY KEY, n INT) WITHOUT ROWID;
        CREATE TABLE legacy (id INTEGER PRIMARY KEY DESC, n INT);
        CREATE TABLE bigint_key (id BIGINT PRIMARY KEY);
        CREATE TABLE pair (a INT, b INT, x INT, y INT, PRIMARY KEY (a, b),
                           FOREIGN KEY (x, y) REFERENCES pair(a, b));
        """
    )
    after = sqlite3.connect(":memory:")
    before.backup(after)
    after.executescript(
        """
        INSERT INTO author VALUES (1, 'Le Guin');
        INSERT INTO book VALUES (1, 1, 1);
        INSERT INTO tag VALUES ('sf');
        INSERT INTO book_tag VALUES (1, 'sf');
        INSERT INTO log VALUES ('x');
        INSERT INTO edition VALUES (1, 1);
        INSERT INTO legacy VALUES (1, 1);
        INSERT INTO bigint_key VALUES (1);
        INSERT INTO pair VALUES (1, 1, NULL, NULL);
        """
    )
    diff = state_diff(before, after)
    meta = {t: (d["key"], d["surrogate"], d["references"]) for t, d in diff.items()}
    assert meta == {
        "author": (["id"], True, {}),
        "book": (["id"], True, {"author_id": "author", "translator": "author"}),
        "tag": (["name"], False, {}),
        "book_tag": (["book_id", "tag"], False, {"book_id": "book", "tag": "tag"}),
        "log": (["rowid"], True, {}),
        "edition": (["id"], False, {}),
        "legacy": (["id"], False, {}),
        "bigint_key": (["id"], False, {}),
        "pair": (["a", "b"], False, {}),  # composite foreign keys are left out
    }
    assert list(diff["log"]) == ["added", "removed", "changed", "key", "surrogate", "references"]


# -- through real episodes -----------------------------------------------------------------------

TAMPERING_TOOLS = {
    "drop_trigger": "DROP TRIGGER aw_track_0_insert",
    "drop_temp_trigger": "DROP TRIGGER temp.aw_track_0_update",
    "clear_tracking": "DELETE FROM aw_touched",
    "fake_record": "INSERT INTO aw_touched VALUES ('book', 1)",
    "edit_record": "UPDATE temp.aw_touched SET rid = 0",
    "drop_tracking": "DROP TABLE temp.aw_touched",
    "rename_tracking": "ALTER TABLE temp.aw_touched RENAME TO mine",
    "shadow_trigger": (
        "CREATE TEMP TRIGGER aw_track_mine AFTER UPDATE ON book BEGIN DELETE FROM aw_touched; END"
    ),
}


def _extra_tools():
    tools = [
        (
            simple_tool("run_sql", {"statements": {"type": "array"}}, ["statements"]),
            "write",
            APPLY_SOURCE,
        ),
        (
            simple_tool("add_table"),
            "write",
            """
            def add_table(db):
                db.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)")
                db.execute("INSERT INTO note (text) VALUES ('hello')")
                db.execute("UPDATE book SET stock = 42 WHERE id = 1")
                return "ok"
            """,
        ),
    ]
    for name, sql in TAMPERING_TOOLS.items():
        source = f"def {name}(db):\n    db.execute({sql!r})\n    return 'tampered'\n"
        tools.append((simple_tool(name), "write", source))
    return tools


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    path = build_sample_package(
        tmp_path_factory.mktemp("incremental"), name="incremental", extra_tools=_extra_tools()
    )
    with sqlite3.connect(path / "state.sqlite") as conn:
        conn.executescript(SCHEMA)
    return load_package(path)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1, call_timeout=5.0) as pool:
        yield pool


def local_replica(package, tmp_path_factory) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path_factory.mktemp("replica") / "state.sqlite")
    with sqlite3.connect(package.state_path) as source:
        source.backup(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def assert_episode_agrees(episode, package, replica: sqlite3.Connection) -> None:
    assert episode.state_hash() == state_hash(replica)
    expected = json.loads(json.dumps(state_diff(package.state_path, replica)))
    assert episode.state_diff() == expected


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(calls=tool_calls(max_calls=4))
def test_episode_hash_and_diff_equal_the_full_ones(pool, package, tmp_path_factory, calls):
    replica = local_replica(package, tmp_path_factory)
    with pool.start_episode(package) as episode:
        for batch in calls:
            result = episode.call_tool("run_sql", {"statements": batch})
            apply_call(replica, batch)
            assert result.ok == all(sql != "RAISE" for sql, _ in batch), result
        assert episode.call_tool("place_order", {"book_id": 2, "quantity": 1, "customer": "a"}).ok
        apply_call(replica, [["UPDATE book SET stock = stock - 1 WHERE id = 2", []]])
        apply_call(
            replica,
            [
                [
                    "INSERT INTO purchase (book_id, quantity, customer, total) "
                    "VALUES (2, 1, 'a', 8.5)",
                    [],
                ]
            ],
        )
        assert_episode_agrees(episode, package, replica)
    replica.close()


@pytest.mark.parametrize("tool", sorted(TAMPERING_TOOLS))
def test_tool_cannot_tamper_with_tracking(pool, package, tmp_path_factory, tool):
    replica = local_replica(package, tmp_path_factory)
    with pool.start_episode(package) as episode:
        assert episode.call_tool("update_stock", {"book_id": 3, "stock": 1}).ok
        replica.execute("UPDATE book SET stock = 1 WHERE id = 3")
        replica.commit()
        result = episode.call_tool(tool)
        assert not result.ok
        assert result.error_kind == "tool_error"
        assert "not authorized" in result.error
        assert episode.call_tool("update_stock", {"book_id": 4, "stock": 0}).ok
        replica.execute("UPDATE book SET stock = 0 WHERE id = 4")
        replica.commit()
        assert_episode_agrees(episode, package, replica)
        assert sorted(c["key"]["id"] for c in episode.state_diff()["book"]["changed"]) == [3, 4]
    replica.close()


def test_tool_that_creates_a_table_gets_the_full_hash(pool, package, tmp_path_factory):
    replica = local_replica(package, tmp_path_factory)
    with pool.start_episode(package) as episode:
        assert episode.call_tool("add_table").ok
        replica.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)")
        replica.execute("INSERT INTO note (text) VALUES ('hello')")
        replica.execute("UPDATE book SET stock = 42 WHERE id = 1")
        replica.commit()
        assert_episode_agrees(episode, package, replica)
        diff = episode.state_diff()
        assert diff["note"]["added"] == [{"id": 1, "text": "hello"}]
        assert diff["note"]["key"] == ["id"] and diff["note"]["surrogate"] is True
        assert diff["book"]["references"] == {"author_id": "author"}


def test_null_keys_are_diffed_in_full():
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE legacy (k TEXT PRIMARY KEY, v);"  # a rowid table: k may be NULL
        "INSERT INTO legacy VALUES (NULL, 1), (NULL, 2), ('a', 3);"
    )
    initial = InitialState(conn)
    db, tracker = tracked_copy(initial)
    db.execute("UPDATE legacy SET v = 9 WHERE v = 2")
    db.execute("INSERT INTO legacy VALUES (NULL, 4)")
    db.commit()
    assert_agrees(tracker, initial, db)
