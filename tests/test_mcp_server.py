"""The environment served as a real MCP server, exercised with the SDK's own client."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from serving.mcp_server import build_http_app
from tests.support.sample_package import build_sample_package

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def package_path(tmp_path_factory):
    return build_sample_package(tmp_path_factory.mktemp("mcp"))


@pytest.fixture(scope="module")
def http_url(package_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        build_http_app(str(package_path)), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


def test_stdio_server_lists_and_calls_tools(package_path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "serving.mcp_server", str(package_path)], cwd=REPO
    )

    async def session():
        async with Client(params) as client:
            listed = await client.list_tools()
            schemas = {tool.name: tool.input_schema for tool in listed.tools}
            assert schemas["get_book"]["required"] == ["book_id"]
            written = await client.call_tool("update_stock", {"book_id": 1, "stock": 0})
            assert not written.is_error
            book = await client.call_tool("get_book", {"book_id": 1})
            assert book.structured_content["stock"] == 0  # same episode for the connection
            bad = await client.call_tool("get_book", {"book_id": "one"})
            assert bad.is_error
            assert "invalid_arguments" in bad.content[0].text

    anyio.run(session)


def test_http_sessions_have_isolated_episodes(http_url):
    async def sessions():
        async with (
            Client(http_url, mode="legacy") as first,
            Client(http_url, mode="legacy") as second,
        ):
            assert len((await first.list_tools()).tools) == 5
            await first.call_tool("place_order", {"book_id": 1, "quantity": 5, "customer": "ada"})
            mine = await first.call_tool("get_book", {"book_id": 1})
            theirs = await second.call_tool("get_book", {"book_id": 1})
            assert mine.structured_content["stock"] == 0
            assert theirs.structured_content["stock"] == 5

    anyio.run(sessions)


def test_http_stateless_clients_name_their_episode(http_url):
    async def calls():
        async with Client(http_url) as client:
            mine = {"agent-world/episode": "episode-a"}
            await client.call_tool("update_stock", {"book_id": 2, "stock": 9}, meta=mine)
            named = await client.call_tool("get_book", {"book_id": 2}, meta=mine)
            fresh = await client.call_tool("get_book", {"book_id": 2})
            assert named.structured_content["stock"] == 9
            assert fresh.structured_content["stock"] == 3

    anyio.run(calls)
