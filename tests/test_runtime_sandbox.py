"""Hostile tools get a clear error of the right kind, and the episode and pool go on."""

from __future__ import annotations

import pytest

from environments.runtime import SandboxPool, load_package
from tests.support.sample_package import build_sample_package, simple_tool

HOSTILE_TOOLS = [
    (simple_tool("spin"), "read", "def spin(db):\n    while True:\n        pass\n"),
    (
        simple_tool("stubborn_spin"),
        "read",
        """
        def stubborn_spin(db):
            while True:
                try:
                    while True:
                        pass
                except BaseException:
                    pass
        """,
    ),
    (simple_tool("hog"), "read", "def hog(db):\n    return len(bytearray(10 * 1024**3))\n"),
    (simple_tool("fork"), "read", "def fork(db):\n    import os\n    return os.fork()\n"),
    (
        simple_tool("dial"),
        "read",
        """
        def dial(db):
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.connect(("127.0.0.1", 9))
        """,
    ),
    (
        simple_tool("raw_socket"),
        "read",
        """
        def raw_socket(db):
            import _socket
            return str(_socket.socket())
        """,
    ),
    (
        simple_tool("read_passwd"),
        "read",
        "def read_passwd(db):\n    return open('/etc/passwd').read()\n",
    ),
    (
        simple_tool("write_outside"),
        "read",
        "def write_outside(db):\n    open('/tmp/aw_sandbox_escape.txt', 'w').write('x')\n",
    ),
    (
        simple_tool("write_inside"),
        "read",
        """
        def write_inside(db):
            with open('scratch.txt', 'w') as handle:
                handle.write('fine')
            return open('scratch.txt').read()
        """,
    ),
    (
        simple_tool("shell"),
        "read",
        "def shell(db):\n    import subprocess\n    return subprocess.run(['id']).returncode\n",
    ),
    (simple_tool("system"), "read", "def system(db):\n    import os\n    return os.system('id')\n"),
    (simple_tool("native"), "read", "def native(db):\n    import ctypes\n    return 1\n"),
    (
        simple_tool("attach"),
        "write",
        "def attach(db):\n    db.execute(\"ATTACH DATABASE '/tmp/aw_evil.db' AS evil\")\n",
    ),
    (simple_tool("flood"), "read", "def flood(db):\n    return 'x' * 5_000_000\n"),
    (
        simple_tool("swallow_violation"),
        "read",
        """
        def swallow_violation(db):
            try:
                open('/etc/shadow')
            except Exception:
                pass
            return "nothing to see"
        """,
    ),
    (
        simple_tool("deep"),
        "read",
        "def deep(db, n=0):\n    return deep(db, n + 1)\n",
    ),
]


@pytest.fixture(scope="module")
def hostile_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    return load_package(build_sample_package(root, name="hostile", extra_tools=HOSTILE_TOOLS))


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2, call_timeout=0.5, kill_grace=0.5) as pool:
        yield pool


def _assert_still_works(episode):
    result = episode.call_tool("get_book", {"book_id": 2})
    assert result.ok, result
    assert result.result["title"] == "Dune Messiah"


@pytest.mark.parametrize(
    ("tool", "kind", "words"),
    [
        ("spin", "timeout", "time limit"),
        ("hog", "resource_limit", "memory"),
        ("fork", "sandbox_violation", "os.fork"),
        ("dial", "sandbox_violation", "network"),
        ("raw_socket", "sandbox_violation", "socket"),
        ("read_passwd", "sandbox_violation", "/etc/passwd"),
        ("write_outside", "sandbox_violation", "aw_sandbox_escape"),
        ("shell", "sandbox_violation", "subprocess"),
        ("system", "sandbox_violation", "os.system"),
        ("native", "sandbox_violation", "ctypes"),
        ("flood", "output_too_large", "limit"),
        ("swallow_violation", "sandbox_violation", "/etc/shadow"),
        ("deep", "resource_limit", "recursion"),
    ],
)
def test_hostile_tool_gets_a_clear_error_and_the_episode_goes_on(
    pool, hostile_package, tool, kind, words
):
    episode = pool.start_episode(hostile_package)
    result = episode.call_tool(tool, {})
    assert not result.ok
    assert result.error_kind == kind, result
    assert words in result.error
    _assert_still_works(episode)
    episode.close()


def test_attach_of_outside_database_is_refused(pool, hostile_package, tmp_path):
    with pool.start_episode(hostile_package) as episode:
        result = episode.call_tool("attach", {})
        assert not result.ok
        assert result.error_kind == "tool_error"
        assert "not authorized" in result.error
        _assert_still_works(episode)


def test_nothing_was_written_outside():
    import os

    assert not os.path.exists("/tmp/aw_sandbox_escape.txt")
    assert not os.path.exists("/tmp/aw_evil.db")


def test_writing_inside_the_episode_directory_is_allowed(pool, hostile_package):
    with pool.start_episode(hostile_package) as episode:
        result = episode.call_tool("write_inside", {})
        assert result.ok, result
        assert result.result == "fine"


def test_worker_killed_on_stubborn_loop_and_episodes_are_replayed(pool, hostile_package):
    # Two episodes on the same worker; one has written state that must survive the kill.
    survivor = pool.start_episode(hostile_package)
    culprit = next(
        e
        for e in (pool.start_episode(hostile_package) for _ in range(4))
        if e.slot is survivor.slot
    )
    assert survivor.call_tool("update_stock", {"book_id": 4, "stock": 42}).ok
    assert culprit.call_tool("update_stock", {"book_id": 4, "stock": 7}).ok
    old_pid = survivor.slot.process.pid

    result = culprit.call_tool("stubborn_spin", {})

    assert result.error_kind == "timeout"
    assert "worker replaced" in result.error
    assert survivor.slot.process.pid != old_pid
    assert survivor.call_tool("get_book", {"book_id": 4}).result["stock"] == 42
    assert culprit.call_tool("get_book", {"book_id": 4}).result["stock"] == 7


def test_network_namespace_or_python_refusal_reported(pool):
    hello = pool.slots[0].process.hello
    assert hello["ok"] is True
    assert "net_isolated" in hello
