"""LLM paths against a scripted OpenAI-compatible server: research agent and tool design."""

from __future__ import annotations

import json
import sqlite3
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from aw_site.llm import LLMSettings
from environments.builder.pipeline import design_tools
from environments.discovery.research_agent import run_python, run_research
from environments.discovery.search_providers import NoSearch, SearchHit, search_provider
from environments.discovery.sources import mine_sources, read_provenance
from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply

FIXTURES = Path(__file__).parent / "fixtures" / "discovery"


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        return


@pytest.fixture
def page_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(FIXTURES)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class FixedSearch:
    name = "fixed"

    def __init__(self, url):
        self.url = url

    def search(self, query, limit=5):
        return [SearchHit("HTTP status codes", self.url, "a table of codes")]


def test_research_agent_builds_a_database_from_a_fetched_page(tmp_path, page_server):
    url = f"{page_server}/http_status.html"
    seen = {}

    def responder(body):
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        if step == 0:
            return tool_call_reply("web_search", {"query": "http status codes table"})
        if step == 1:
            return tool_call_reply(
                "fetch_page", {"url": json.loads(tool_messages[-1]["content"])[0]["url"]}
            )
        if step == 2:
            page = json.loads(tool_messages[-1]["content"])
            seen["page"] = page
            header, rows = page["tables"][0]["header"], page["tables"][0]["rows"][:20]
            return tool_call_reply(
                "save_table",
                {
                    "name": "status",
                    "source_url": url,
                    "primary_key": "Code",
                    "rows": [dict(zip(header, r, strict=True)) for r in rows],
                },
            )
        if step == 3:
            return tool_call_reply("run_python", {"code": "print(sum(range(5)))"})
        return tool_call_reply("finish", {"summary": "done"})

    with ScriptedOpenAIServer(responder) as server:
        settings = LLMSettings(base_url=server.base_url, model="m", api_key="k")
        result = run_research(
            settings, "HTTP status codes", tmp_path / "r.sqlite", provider=FixedSearch(url)
        )
    assert result.error is None and result.tables == ["status"]
    assert seen["page"]["title"] == "HTTP status codes"
    with sqlite3.connect(result.db_path) as conn:
        assert conn.execute("SELECT phrase FROM status WHERE code = 404").fetchone() is None
        assert conn.execute("SELECT phrase FROM status WHERE code = 200").fetchone()[0] == "OK"
    assert read_provenance(result.db_path)[0] == {
        "table": "status",
        "source": url,
        "kind": "web",
        "detail": "research agent, topic 'HTTP status codes'",
    }
    python_reply = next(
        m
        for m in server.requests[-1]["messages"]
        if m["role"] == "tool" and "stdout" in m["content"]
    )
    assert json.loads(python_reply["content"])["stdout"].strip() == "10"


def test_research_agent_that_saves_nothing_writes_nothing(tmp_path):
    with ScriptedOpenAIServer(lambda body: tool_call_reply("finish", {})) as server:
        settings = LLMSettings(base_url=server.base_url, model="m", api_key="k")
        result = run_research(settings, "x", tmp_path / "none.sqlite", provider=NoSearch())
    assert result.db_path is None and "no tables" in result.error
    assert list(tmp_path.iterdir()) == []


def test_run_python_is_limited():
    assert run_python("print(6 * 7)")["stdout"].strip() == "42"
    assert not run_python("import time\ntime.sleep(5)", timeout=0.5)["ok"]
    assert not run_python("x = bytearray(2 * 1024**3)")["ok"]


def test_search_provider_from_environment(monkeypatch):
    monkeypatch.delenv("AW_SEARCH_PROVIDER", raising=False)
    assert search_provider().name == "none"
    monkeypatch.setenv("AW_SEARCH_PROVIDER", "searxng")
    monkeypatch.setenv("AW_SEARCH_URL", "http://127.0.0.1:9")
    assert search_provider().name == "searxng"
    monkeypatch.setenv("AW_SEARCH_PROVIDER", "bing-scraper")
    with pytest.raises(ValueError, match="unknown AW_SEARCH_PROVIDER"):
        search_provider()


def test_design_stage_asks_the_llm_for_domain_tools(tmp_path):
    db = mine_sources(tmp_path / "e.sqlite", files=[FIXTURES / "elements.sql"])
    answer = {
        "imports": ["math"],
        "tools": [
            {
                "name": "isotope_count",
                "kind": "read",
                "description": "Isotopes of an element.",
                "parameters": {"type": "object", "properties": {"number": {"type": "integer"}}},
                "source": "def isotope_count(db, **params):\n    return db.execute('SELECT COUNT(*) "
                "FROM isotope WHERE element_number = ?', (params['number'],)).fetchone()[0]\n",
                "tests": [
                    "def test_isotope_count__helium(call):\n"
                    "    assert call('isotope_count', number=2) > 2\n"
                ],
            },
            {
                "name": "evil",
                "kind": "read",
                "description": "x",
                "parameters": {},
                "source": "import subprocess\ndef evil(db, **params):\n    return 1\n",
                "tests": [],
            },
        ],
    }
    with ScriptedOpenAIServer(
        lambda body: text_reply("```json\n" + json.dumps(answer) + "\n```")
    ) as server:
        settings = LLMSettings(base_url=server.base_url, model="m", api_key="k")
        designed = design_tools(db, "Elements", llm_settings=settings)
    assert list(designed.llm_toolset.functions) == ["isotope_count"]
    assert designed.llm_toolset.imports == ["import math"]
    prompt = server.requests[0]["messages"][1]["content"]
    assert "TABLE element" in prompt and "helium" in prompt
