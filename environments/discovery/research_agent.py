"""Research agent: an LLM that gathers topic-aligned data into a relational database.

Its tools: web_search (provider from AW_SEARCH_PROVIDER), fetch_page (HTTP GET + HTML parse:
title, text sections, tables), run_python (a subprocess with CPU, memory and time limits, for
reshaping data), save_table (rows plus the URL they came from) and finish. The tables land in
one SQLite database through DatabaseBuilder, with provenance for every table; an unusable
result writes nothing.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .search_providers import SearchProvider, search_provider
from .sources.base import DatabaseBuilder, SourceError
from .sources.html_source import parse_html

MAX_PAGE_BYTES = 2_000_000

AGENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": "Search the web; returns title, url, snippet.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "fetch_page",
            "description": "Fetch a URL; returns its title, text sections "
            "and tables (header + rows).",
            "parameters": {
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_python",
            "description": "Run Python code (no network) and return stdout; "
            "use it to reshape data.",
            "parameters": {
                "type": "object",
                "properties": {"code": {"type": "string"}},
                "required": ["code"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "save_table",
            "description": "Save a table of rows (list of objects) with the "
            "URL it came from. Use real data only.",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "rows": {"type": "array", "items": {"type": "object"}},
                    "source_url": {"type": "string"},
                    "primary_key": {"type": "string"},
                },
                "required": ["name", "rows", "source_url"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "Stop: the database is complete.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}},
        },
    },
]


@dataclass
class ResearchResult:
    db_path: Path | None
    tables: list[str] = field(default_factory=list)
    steps: int = 0
    transcript: list[dict] = field(default_factory=list)
    error: str | None = None


def fetch_page(url: str, timeout: float = 15.0) -> dict:
    if not url.startswith(("http://", "https://")):
        raise ValueError("only http(s) URLs can be fetched")
    request = urllib.request.Request(url, headers={"User-Agent": "agent-world-research/1"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        text = response.read(MAX_PAGE_BYTES).decode("utf-8", errors="replace")
    page = parse_html(text)
    tables = [
        {"name": t["name"] or t["heading"], "header": t["header"], "rows": t["rows"][:200]}
        for t in page.tables
    ]
    return {
        "url": url,
        "title": page.title.strip(),
        "sections": page.sections[:30],
        "tables": tables,
    }


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (10, 10))
    resource.setrlimit(resource.RLIMIT_FSIZE, (10 * 2**20, 10 * 2**20))


def run_python(code: str, timeout: float = 20.0) -> dict:
    """Run code in a separate, isolated (-I) interpreter with CPU/memory/time limits."""
    try:
        done = subprocess.run(  # noqa: S603
            [sys.executable, "-I", "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limit_child,
            cwd="/tmp",
            env={},
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "stdout": "", "stderr": f"timed out after {timeout}s"}
    return {
        "ok": done.returncode == 0,
        "stdout": done.stdout[-20000:],
        "stderr": done.stderr[-5000:],
    }


def run_research(
    settings,
    topic: str,
    target: Path | str,
    *,
    provider: SearchProvider | None = None,
    max_steps: int = 12,
) -> ResearchResult:
    """Run the agent loop for `topic`; on finish, write the saved tables to `target`."""
    from aw_site.llm import chat_completion

    provider = provider or search_provider()
    saved: list[dict] = []
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You build a small relational database of REAL data "
            "about a topic. Search, fetch pages, extract tables, save each table with its source "
            "URL (link tables by shared key columns), then call finish. Never invent rows.",
        },
        {"role": "user", "content": f"Topic: {topic}"},
    ]
    result = ResearchResult(None, transcript=messages)
    for step in range(1, max_steps + 1):
        result.steps = step
        reply = chat_completion(settings, messages, tools=AGENT_TOOLS)
        messages.append(
            {
                "role": "assistant",
                "content": reply["content"],
                **({"tool_calls": reply["tool_calls"]} if reply["tool_calls"] else {}),
            }
        )
        if not reply["tool_calls"]:
            messages.append({"role": "user", "content": "Use the tools; call finish when done."})
            continue
        finished = False
        for call in reply["tool_calls"]:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
                output = _dispatch(name, args, provider, saved)
                finished = finished or name == "finish"
            except Exception as exc:  # the agent sees the error and may retry
                output = {"error": f"{type(exc).__name__}: {exc}"}
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": json.dumps(output, default=str)[:20000],
                }
            )
        if finished:
            break
    if not saved:
        result.error = "the agent saved no tables"
        return result
    try:
        with DatabaseBuilder(Path(target)) as builder:
            for table in saved:
                builder.add_table(
                    table["name"],
                    table["rows"],
                    source=table["source_url"],
                    kind="web",
                    detail=f"research agent, topic {topic!r}",
                    primary_key=table.get("primary_key"),
                )
            result.db_path = builder.finish()
        result.tables = [t["name"] for t in saved]
    except SourceError as exc:
        result.error = str(exc)
    return result


def _dispatch(name: str, args: dict, provider: SearchProvider, saved: list[dict]) -> Any:
    if name == "web_search":
        return [hit.__dict__ for hit in provider.search(args["query"])]
    if name == "fetch_page":
        return fetch_page(args["url"])
    if name == "run_python":
        return run_python(args["code"])
    if name == "save_table":
        rows = args.get("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise ValueError("rows must be a non-empty list of objects")
        saved.append(args)
        return {"saved": args["name"], "rows": len(rows)}
    if name == "finish":
        return {"finished": True}
    raise ValueError(f"unknown tool {name!r}")
