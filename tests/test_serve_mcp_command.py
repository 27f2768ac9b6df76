"""`python manage.py serve_mcp ENV` serves a recorded environment over stdio MCP."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from environments.registry import record_package
from environments.runtime import SandboxPool, load_package
from tasks.records import record_tasks
from tests.support.gold_tasks import READ_CHAIN, read_task
from tests.support.sample_package import build_sample_package
from tests.support.worker import shared_database_url

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db(transaction=True)


def test_serve_mcp_over_stdio_by_environment_name(tmp_path):
    record_package(build_sample_package(tmp_path))
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "serve_mcp", "bookstore"],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": shared_database_url()},
    )

    async def session():
        async with Client(params) as client:
            listed = await client.list_tools()
            assert {"get_book", "place_order"} <= {tool.name for tool in listed.tools}
            result = await client.call_tool("get_book", {"book_id": 2})
            assert not result.is_error

    anyio.run(session)


def test_serve_mcp_refuses_an_unknown_environment():
    with pytest.raises(CommandError, match="no verified environment 'nowhere'"):
        call_command("serve_mcp", "nowhere")


def test_serve_mcp_bound_to_a_task_scores_submit_answer(tmp_path):
    environment = record_package(build_sample_package(tmp_path))
    with SandboxPool(workers=1) as pool:
        (task,) = record_tasks(environment, [read_task(pool, load_package(tmp_path / "bookstore"))])
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "serve_mcp", "bookstore", "--task", str(task.pk)],
        cwd=REPO,
        env={**os.environ, "DATABASE_URL": shared_database_url()},
    )

    async def session():
        async with Client(params) as client:
            assert task.instruction in (client.instructions or "")
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert {"get_book", "submit_answer"} <= listed
            for call in READ_CHAIN:
                await client.call_tool(call["tool"], call["arguments"])
            result = await client.call_tool("submit_answer", {"answer": "Dune"})
            assert result.structured_content["success"] is True

    anyio.run(session)


def test_serve_mcp_refuses_a_task_of_another_environment(tmp_path):
    bookstore = record_package(build_sample_package(tmp_path))
    library = record_package(build_sample_package(tmp_path, name="library"))
    with SandboxPool(workers=1) as pool:
        (task,) = record_tasks(bookstore, [read_task(pool, load_package(tmp_path / "bookstore"))])
    with pytest.raises(CommandError, match="belongs to bookstore@v1"):
        call_command("serve_mcp", library.label, "--task", str(task.pk))
    with pytest.raises(CommandError, match="no task 424242"):
        call_command("serve_mcp", "bookstore", "--task", "424242")
