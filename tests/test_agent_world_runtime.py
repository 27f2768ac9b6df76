"""Released tool code runs unmodified in the sandbox worker, each episode on its own copy of the
JSON collections: MCP_DB_DIR read at load and at call time, a frozen clock and seeded ids (the
same calls give the same results and state), log collections out of the state, nothing outside
the episode's files and no network."""

from __future__ import annotations

import json

import pytest

from environments.agent_world.package import CollectionPlan, write_collection_package
from environments.agent_world.release import read_environment
from environments.runtime import SandboxPool
from tests.support.agent_world_release import LIBRARY, SNOOPING_TOOLS, write_release

CLOCK = "2026-03-01T12:00:00Z"
CATEGORY = {"primary": "Reference & Standards", "secondary": "Encyclopedic Data", "tertiary": ""}


def publish(tmp_path, name="lantern", logs=("request_logs",), extra=()):
    mix = write_release(tmp_path / f"release-{name}", extra_library_tools=extra)
    environment = read_environment(mix, LIBRARY)
    plan = CollectionPlan(
        name, 1, "Lantern", "A library.", CATEGORY, environment.tools, {}, logs, CLOCK, str(mix)
    )
    return write_collection_package(tmp_path / "packages", environment, plan)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=1) as pool:
        yield pool


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return publish(tmp_path_factory.mktemp("aw"), extra=SNOOPING_TOOLS)


def test_load_time_and_call_time_reads_see_the_episodes_own_copy(pool, package):
    with pool.start_episode(package) as first, pool.start_episode(package) as second:
        lent = first.call_tool("create_loan", {"book_id": "bk_002", "member": "Ana"})
        assert lent.ok, lent.error
        # get_book read MCP_DB_DIR when its code loaded, list_books reads it at each call
        assert first.call_tool("get_book", {"book_id": "bk_002"}).result["book"]["copies"] == 0
        assert second.call_tool("get_book", {"book_id": "bk_002"}).result["book"]["copies"] == 1
        listed = second.call_tool("list_books", {"genre": "film"}).result
        assert listed["books"][0]["copies"] == 1
    books = json.loads((package / "collections" / "books.json").read_text("utf-8"))
    assert books[1]["copies"] == 1  # the package's files are never written


def test_a_tool_whose_code_does_not_load_is_unavailable_with_the_reason(pool, package):
    with pool.start_episode(package) as episode:
        problems = episode.load_problems()
        assert list(problems) == ["convert_fee"]
        assert problems["convert_fee"].startswith(
            "its code raised JSONDecodeError while loading: Expecting property name"
        )
        called = episode.call_tool("convert_fee", {"amount": 2})
        assert (called.ok, called.error_kind) == (False, "tool_error")
        assert called.error == f"convert_fee: {problems['convert_fee']}"
        assert episode.call_tool("get_book", {"book_id": "bk_001"}).ok


def run_story(pool, package, fail_first=False):
    with pool.start_episode(package) as episode:
        if fail_first:  # a raised error: rolled back, and later ids do not shift
            assert not episode.call_tool("cancel_loan", {"loan_id": "ln_nope"}).ok
        results = [
            episode.call_tool("list_books", {}).result,
            episode.call_tool("create_loan", {"book_id": "bk_001", "member": "Zoë"}).result,
            episode.call_tool("add_tag", {"book_id": "bk_003", "tag": "théâtre"}).result,
            episode.call_tool("update_settings", {"max_loans_per_member": 5}).result,
        ]
        return results, episode.state_hash(), episode.state_diff()


def test_the_same_calls_give_the_same_results_and_state(pool, package):
    first = run_story(pool, package)
    second = run_story(pool, package, fail_first=True)
    assert first == second
    loan = first[0][1]["loan"]
    assert loan["created_at"] == CLOCK  # datetime.utcnow() under the frozen clock
    assert loan["created_ts"] == 1772366400  # time.time()
    assert loan["id"].startswith("ln_") and len(loan["id"]) == 13  # a seeded uuid4


def test_the_diff_matches_rows_by_id_by_content_and_documents_whole(pool, package):
    _results, _hash, diff = run_story(pool, package)
    assert set(diff) == {"books", "loans", "settings", "tags"}  # request_logs is a log
    (changed,) = diff["books"]["changed"]
    assert changed["key"] == {"id": "bk_001"}
    assert changed["after"]["copies"] == 1
    assert changed["after"]["last_loaned_at"] == CLOCK  # a field the README does not list
    assert diff["books"]["key"] == ["id"]
    assert [row["member"] for row in diff["loans"]["added"]] == ["Zoë"]
    assert diff["tags"] == {
        "added": [{"book_id": "bk_003", "tag": "théâtre"}],
        "removed": [],
        "changed": [],
        "key": [],
        "surrogate": False,
        "references": {},
    }
    (setting,) = diff["settings"]["changed"]
    assert (setting["key"], setting["after"]["max_loans_per_member"]) == ({}, 5)
    assert setting["after"]["greeting"] == "¡Bienvenidos!"


def test_reads_that_append_to_the_log_leave_the_state_as_it_was(pool, package, tmp_path):
    with pool.start_episode(package) as fresh, pool.start_episode(package) as reading:
        for _ in range(3):
            assert reading.call_tool("list_books", {}).ok
            assert reading.call_tool("get_book", {"book_id": "bk_003"}).ok
        assert reading.state_diff() == {}
        assert reading.state_hash() == fresh.state_hash()
    unmarked = publish(tmp_path, name="lantern_unmarked", logs=())
    with pool.start_episode(unmarked) as episode:
        episode.call_tool("list_books", {})
        diff = episode.state_diff()
    assert list(diff) == ["request_logs"]
    assert diff["request_logs"]["added"][0]["at"] == "2026-03-01T12:00:00Z"


def test_errors_come_back_as_released(pool, package):
    with pool.start_episode(package) as episode:
        missing = episode.call_tool("get_book", {"book_id": "bk_404"})
        assert (missing.ok, missing.result) == (True, {"found": False})
        refused = episode.call_tool("create_loan", {"book_id": "bk_003", "member": "Ana"})
        assert refused.result["error"]["code"] == "UNAVAILABLE"
        raised = episode.call_tool("cancel_loan", {"loan_id": "ln_404"})
        assert (raised.ok, raised.error) == (False, "cancel_loan: no loan ln_404")
        extra = episode.call_tool("get_book", {"book_id": "bk_001", "verbose": True})
        assert extra.ok  # **_extra swallows what the schema does not name


def test_a_tool_sees_nothing_outside_its_episode_files(pool, package):
    packaged = next((pool.root / "packages").iterdir()) / "collections" / "books.json"
    with pool.start_episode(package) as episode, pool.start_episode(package) as other:
        cases = {
            "/etc/passwd": "reading '/etc/passwd' is not allowed in the sandbox",
            str(packaged): "is outside this episode's files: a tool sees only its own",
        }
        for path, words in cases.items():
            for tool in ("read_path", "read_path_quietly"):
                called = episode.call_tool(tool, {"path": path})
                assert (called.ok, called.error_kind) == (False, "sandbox_violation"), tool
                assert words in called.error
        peeked = episode.call_tool("peek_episode", {"episode": other.id})
        assert peeked.error_kind == "sandbox_violation"
        assert "outside this episode's files" in peeked.error
        wrote = episode.call_tool("write_path", {"path": "/tmp/aw-escape.txt"})
        assert wrote.error_kind == "sandbox_violation"
        assert "only the episode directory is writable" in wrote.error
        network = episode.call_tool("open_socket", {})
        assert network.error_kind == "sandbox_violation"
        assert "network access is not allowed in the sandbox" in network.error
        assert episode.state_diff() == {}


def test_open_without_an_encoding_reads_and_writes_utf8(pool, package):
    with pool.start_episode(package) as episode:
        episode.call_tool("create_loan", {"book_id": "bk_001", "member": "Zoë Ñúñez"})
        book = episode.call_tool("get_book", {"book_id": "bk_001"}).result["book"]
        assert book["author"] == "Gabriel García Márquez"
        (loan,) = episode.state_diff()["loans"]["added"]
        assert loan["member"] == "Zoë Ñúñez"


def test_a_replaced_worker_replays_the_episode_to_the_same_state(pool, package):
    with pool.start_episode(package) as episode:
        lent = episode.call_tool("create_loan", {"book_id": "bk_001", "member": "Ana"}).result
        before = episode.state_hash()
        pid = pool.stats()["worker_pids"][0]
        ran = episode.run_program("def solve(call):\n    return 1\n", recycle=True)
        assert ran.ok and pool.stats()["worker_pids"][0] != pid  # a fresh worker, replayed
        assert episode.state_hash() == before
        (loan,) = episode.state_diff()["loans"]["added"]
        assert loan == lent["loan"]  # the same seeded id and frozen stamp on the new worker
