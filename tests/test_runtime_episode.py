"""Episodes: isolated state, checked calls, state hash and diff, programs, tool tests."""

from __future__ import annotations

import sqlite3

import pytest

from environments.runtime import SandboxLimits, SandboxPool, load_package, state_diff, state_hash
from tests.support.sample_package import build_sample_package


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return load_package(build_sample_package(tmp_path_factory.mktemp("pkg")))


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2, call_timeout=2.0) as pool:
        yield pool


def test_read_tool_returns_rows(pool, package):
    with pool.start_episode(package) as episode:
        result = episode.call_tool("search_books", {"title_contains": "Dune"})
        assert result.ok
        assert [book["title"] for book in result.result] == ["Dune", "Dune Messiah"]
        assert result.duration_ms > 0


def test_writes_are_isolated_between_episodes(pool, package):
    first, second = pool.start_episode(package), pool.start_episode(package)
    assert first.call_tool("update_stock", {"book_id": 1, "stock": 0}).ok
    assert first.call_tool("get_book", {"book_id": 1}).result["stock"] == 0
    assert second.call_tool("get_book", {"book_id": 1}).result["stock"] == 5
    assert first.state_hash() != second.state_hash()
    first.close()
    second.close()


def test_state_diff_and_hash_follow_writes(pool, package):
    with pool.start_episode(package) as episode:
        initial_hash = episode.state_hash()
        assert initial_hash == state_hash(package.state_path)
        assert episode.state_diff() == {}
        order = episode.call_tool("place_order", {"book_id": 2, "quantity": 1, "customer": "ada"})
        assert order.ok, order
        diff = episode.state_diff()
        assert diff["book"]["changed"] == [
            {
                "key": {"id": 2},
                "before": {
                    "id": 2,
                    "title": "Dune Messiah",
                    "author_id": 1,
                    "price": 8.5,
                    "stock": 3,
                },
                "after": {
                    "id": 2,
                    "title": "Dune Messiah",
                    "author_id": 1,
                    "price": 8.5,
                    "stock": 2,
                },
            }
        ]
        assert diff["purchase"]["added"][0]["customer"] == "ada"
        assert episode.state_hash() != initial_hash
        episode.reset()
        assert episode.state_hash() == initial_hash


def test_domain_error_is_a_tool_error_and_rolls_back(pool, package):
    with pool.start_episode(package) as episode:
        result = episode.call_tool("place_order", {"book_id": 4, "quantity": 9, "customer": "x"})
        assert not result.ok
        assert result.error_kind == "tool_error"
        assert "only 2 in stock" in result.error
        assert episode.state_diff() == {}


def test_unknown_tool_and_invalid_arguments(pool, package):
    with pool.start_episode(package) as episode:
        unknown = episode.call_tool("delete_everything", {})
        assert unknown.error_kind == "unknown_tool"
        missing = episode.call_tool("get_book", {})
        assert missing.error_kind == "invalid_arguments"
        assert "book_id" in missing.error
        wrong_type = episode.call_tool("get_book", {"book_id": "one"})
        assert wrong_type.error_kind == "invalid_arguments"
        extra = episode.call_tool("get_book", {"book_id": 1, "sql": "DROP TABLE book"})
        assert extra.error_kind == "invalid_arguments"


def test_run_program_calls_tools_and_returns_value(pool, package):
    source = """
def solve(call):
    herbert = call("list_books_by_author", author_name="Frank Herbert")
    cheapest = min((call("get_book", book_id=b["id"]) for b in herbert), key=lambda b: b["price"])
    call("place_order", book_id=cheapest["id"], quantity=1, customer="bob")
    try:
        call("get_book", book_id=999)
    except LookupError as exc:
        print("expected:", exc)
    return cheapest["title"]
"""
    with pool.start_episode(package) as episode:
        outcome = episode.run_program(source)
        assert outcome.ok, outcome
        assert outcome.value == "Dune Messiah"
        assert "expected: no book" in outcome.stdout
        assert [c["tool"] for c in outcome.calls][-1] == "place_order"
        # the program's writes stay in the episode, even across the worker recycle after it
        assert episode.call_tool("get_book", {"book_id": 2}).result["stock"] == 2


def test_run_program_errors_and_limits(pool, package):
    with pool.start_episode(package) as episode:
        failing = episode.run_program("def solve(call):\n    return 1 / 0\n")
        assert not failing.ok and failing.error_kind == "tool_error"
        assert "ZeroDivisionError" in failing.error
        looping = episode.run_program("def solve(call):\n    while True: pass\n", timeout=0.3)
        assert looping.error_kind == "timeout"
        escaping = episode.run_program("def solve(call):\n    import os\n    os.system('id')\n")
        assert escaping.error_kind == "sandbox_violation"
        missing = episode.run_program("x = 1\n", entry="solve")
        assert "no function 'solve'" in missing.error
        assert episode.call_tool("get_book", {"book_id": 1}).ok


def test_run_tool_tests_reports_per_tool(pool, package):
    report = pool.run_tool_tests(package)
    assert report["get_book"] == {"passed": 2, "failed": 0, "errors": []}
    assert all(r["failed"] == 0 for r in report.values())


def test_run_tool_tests_counts_failures(pool, tmp_path):
    path = build_sample_package(tmp_path, name="broken")
    tests = (path / "tool_tests.py").read_text()
    (path / "tool_tests.py").write_text(tests.replace('== "Dune"', '== "Dune II"'))
    report = pool.run_tool_tests(load_package(path))
    assert report["get_book"]["passed"] == 1
    assert report["get_book"]["failed"] == 1
    assert "test_get_book__existing" in report["get_book"]["errors"][0]


def test_big_state_lives_in_a_file_copy(tmp_path):
    package = load_package(build_sample_package(tmp_path, extra_books=20_000))
    limits = SandboxLimits(in_memory_max_mb=1)
    with SandboxPool(workers=1, limits=limits) as pool, pool.start_episode(package) as episode:
        assert package.state_path.stat().st_size > 1024 * 1024
        assert episode.call_tool("update_stock", {"book_id": 105, "stock": 99}).ok
        diff = episode.state_diff()
        assert diff["book"]["changed"][0]["after"]["stock"] == 99
        episode_dirs = list((pool.root / "workers").glob("*/episodes/*/state.sqlite"))
        assert len(episode_dirs) == 1


def test_state_functions_on_files(tmp_path, package):
    copy = tmp_path / "copy.sqlite"
    with sqlite3.connect(package.state_path) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    assert state_hash(copy) == state_hash(package.state_path)
    with sqlite3.connect(copy) as conn:
        # same rows inserted in a different physical order: same hash
        rows = conn.execute("SELECT * FROM author ORDER BY id DESC").fetchall()
        conn.execute("DELETE FROM author")
        conn.executemany("INSERT INTO author VALUES (?, ?, ?)", rows)
    assert state_hash(copy) == state_hash(package.state_path)
    with sqlite3.connect(copy) as conn:
        conn.execute("DELETE FROM author WHERE id = 3")
        conn.execute("INSERT INTO author VALUES (4, 'Iain Banks', 'UK')")
    diff = state_diff(package.state_path, copy)
    assert diff["author"]["removed"] == [{"id": 3, "name": "Stanislaw Lem", "country": "PL"}]
    assert diff["author"]["added"] == [{"id": 4, "name": "Iain Banks", "country": "UK"}]


def test_pool_is_usable_from_threads(pool, package):
    from concurrent.futures import ThreadPoolExecutor

    def one(i):
        with pool.start_episode(package) as episode:
            episode.call_tool("update_stock", {"book_id": 1, "stock": i})
            return episode.call_tool("get_book", {"book_id": 1}).result["stock"]

    with ThreadPoolExecutor(8) as executor:
        assert list(executor.map(one, range(32))) == list(range(32))
