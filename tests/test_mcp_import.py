"""Importing themes from real MCP servers (reference servers from the registries)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from environments.mcp_import import MCPImportError, import_mcp_server
from tests.support.sample_package import build_sample_package

TIME_SERVER = Path(sys.executable).with_name("mcp-server-time")


@pytest.mark.skipif(not TIME_SERVER.exists(), reason="pip install mcp-server-time")
def test_import_reference_time_server():
    theme = import_mcp_server([sys.executable, "-m", "mcp_server_time"])
    assert theme["source_kind"] == "mcp_spec"
    assert theme["name"] == "mcp-time"
    tools = {tool["name"]: tool for tool in theme["raw_spec"]["tools"]}
    assert {"get_current_time", "convert_time"} <= set(tools)
    assert tools["convert_time"]["inputSchema"]["type"] == "object"
    assert theme["provenance"]["transport"] == "stdio"
    assert theme["provenance"]["tool_count"] == len(tools)


def test_import_our_own_environment_server(tmp_path):
    path = build_sample_package(tmp_path)
    theme = import_mcp_server(
        [sys.executable, "-m", "serving.mcp_server", str(path)], name="bookstore-mcp"
    )
    assert theme["name"] == "bookstore-mcp"
    assert theme["raw_spec"]["server"]["name"] == "bookstore"
    assert len(theme["raw_spec"]["tools"]) == 5


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")
def test_import_reference_memory_server_with_npx():
    try:
        theme = import_mcp_server(["npx", "-y", "@modelcontextprotocol/server-memory"], timeout=120)
    except MCPImportError as exc:
        pytest.skip(f"npx could not run @modelcontextprotocol/server-memory: {exc}")
    names = {tool["name"] for tool in theme["raw_spec"]["tools"]}
    assert {"create_entities", "read_graph"} <= names


def test_unreachable_server_is_a_clear_error():
    with pytest.raises(MCPImportError, match="could not list tools"):
        import_mcp_server("http://127.0.0.1:9/mcp", timeout=10)


def test_a_server_that_exits_is_refused_with_what_it_said_not_a_task_group():
    """Slack's and Google Maps' reference servers exit at start without their token: the
    message was "unhandled errors in a TaskGroup (1 sub-exception)"."""
    script = "import sys; sys.stderr.write('Please set SHOP_API_TOKEN first\\n'); sys.exit(1)"
    with pytest.raises(MCPImportError) as caught:
        import_mcp_server([sys.executable, "-c", script], timeout=30)
    message = str(caught.value)
    assert "TaskGroup" not in message
    assert message.startswith("could not list tools of MCP server {'transport': 'stdio'")
    assert message.endswith("the server said: Please set SHOP_API_TOKEN first")
