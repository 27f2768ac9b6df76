"""An MCP server bound to a task: submit_answer ends a session's episode with its reward."""

from __future__ import annotations

import json
import socket
import threading
import time

import anyio
import pytest
import uvicorn
from mcp import Client

from environments.runtime import SandboxPool, load_package
from serving.mcp_server import build_http_app
from tests.support.gold_tasks import WRITE_CHAIN, WRITE_CONTRACT, write_task
from tests.support.sample_package import TOOLS, build_sample_package


@pytest.fixture(scope="module")
def package_path(tmp_path_factory):
    return build_sample_package(tmp_path_factory.mktemp("mcp-task"))


@pytest.fixture(scope="module")
def task(package_path):
    with SandboxPool(workers=1) as pool:
        return write_task(pool, load_package(package_path))


@pytest.fixture(scope="module")
def http_url(package_path, task):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = build_http_app(str(package_path), task=task.to_dict())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


def test_task_server_lists_submit_answer_and_gives_the_instruction(http_url, task):
    async def session():
        async with Client(http_url, mode="legacy") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == {t["function"]["name"] for t in TOOLS} | {"submit_answer"}
            schema = listed["submit_answer"].input_schema
            assert schema == WRITE_CONTRACT.tool_schema()["function"]["parameters"]
            assert schema["properties"]["answer"]["type"] == "number"
            instructions = client.instructions or ""
            assert task.instruction in instructions and "submit_answer" in instructions
            for secret in ("11.25", "update_stock", task.expected_state_hash):
                assert secret not in instructions  # no answer, gold chain or expected state

    anyio.run(session)


def test_gold_calls_and_submit_answer_solve_then_the_session_starts_afresh(http_url):
    async def session():
        async with Client(http_url, mode="legacy") as client:
            for call in WRITE_CHAIN:
                assert not (await client.call_tool(call["tool"], call["arguments"])).is_error
            result = await client.call_tool("submit_answer", {"answer": 11.25})
            assert not result.is_error
            reward = result.structured_content
            assert reward["success"] is True and reward["total"] == 1.0, reward
            assert reward["gate"].startswith("solved")
            assert reward["components"]["state"]["score"] == 1.0
            assert json.loads(result.content[0].text) == reward
            fresh = await client.call_tool("get_book", {"book_id": 4})
            assert fresh.structured_content["stock"] == 2  # a new episode: the write is gone

    anyio.run(session)


def test_malformed_submission_is_refused_and_the_episode_goes_on(http_url):
    async def session():
        async with Client(http_url, mode="legacy") as client:
            await client.call_tool("update_stock", {"book_id": 4, "stock": 0})
            hedged = await client.call_tool("submit_answer", {"answer": [11.25, 12.0]})
            assert hedged.is_error and "invalid_arguments" in hedged.content[0].text
            book = await client.call_tool("get_book", {"book_id": 4})
            assert book.structured_content["stock"] == 0  # same episode after the refusal
            wrong = await client.call_tool("submit_answer", {"answer": 12.0})
            reward = wrong.structured_content
            assert not wrong.is_error and reward["success"] is False
            assert 0.0 < reward["total"] <= 0.2  # the write was right, the answer wrong

    anyio.run(session)


def test_submit_answer_without_calls_scores_zero(http_url):
    async def session():
        async with Client(http_url, mode="legacy") as client:
            result = await client.call_tool("submit_answer", {"answer": 11.25})
            assert result.structured_content["success"] is False
            assert result.structured_content["total"] == 0.0

    anyio.run(session)
