"""LLM-designed domain tools (e.g. cancel_order that checks status and refunds) and their tests.

The LLM sees the schema and a few real rows and answers JSON: imports plus tools, each with a
name, description, JSON-schema parameters, kind, source (`def name(db, **params)`) and tests
(`def test_<name>__<case>(call)`). Every source is parsed and checked by `code_safety` (only
allowlisted imports, functions only, no eval/open/dunder tricks) before it is kept; verification
then runs the kept ones in the sandbox.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .code_safety import UnsafeCode, check_tool_source, function_sources
from .schema import read_schema
from .tool_generator import ToolSet, prelude_source

_SYSTEM = (
    "You write Python tools for an LLM agent over a SQLite database. Each tool is a function "
    "`def <name>(db, **params)` using db.execute (sqlite3, rows are sqlite3.Row); raise "
    "ValueError/LookupError/PermissionError for domain errors; return JSON-serialisable data. "
    "Write domain operations that combine reads and writes (checks, then updates). Allowed "
    "imports: math, re, datetime, json, statistics, decimal. For each tool write 2-4 tests "
    "`def test_<name>__<case>(call)` that call tools with call('<tool>', **args) and assert on "
    'values from the rows shown. Answer only JSON: {"imports": [..], "tools": [{"name", '
    '"description", "parameters", "kind": "read"|"write", "source", "tests": [..]}]}'
)


def describe_database(db_path: Path | str, sample_rows: int = 3) -> str:
    schema = read_schema(db_path)
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    parts = []
    try:
        for table in schema.values():
            cols = ", ".join(f"{c.name} {c.kind}" for c in table.columns)
            links = ", ".join(f"{c}->{t}.{k}" for c, (t, k) in table.foreign_keys.items())
            rows = [
                dict(r) for r in conn.execute(f'SELECT * FROM "{table.name}" LIMIT {sample_rows}')
            ]
            parts.append(
                f"TABLE {table.name} ({cols}) key={table.primary_key} links=[{links}] "
                f"rows={table.row_count}\nsample: {json.dumps(rows, default=str)}"
            )
    finally:
        conn.close()
    return "\n".join(parts)


def parse_design(answer: dict) -> tuple[ToolSet, list[str]]:
    """LLM answer -> ToolSet of safe tools, and the reasons for every tool dropped."""
    tools = ToolSet(prelude=prelude_source())
    problems: list[str] = []
    imports = [f"import {m}" for m in answer.get("imports", []) if isinstance(m, str)]
    tools.imports = imports
    for item in answer.get("tools", []):
        name = item.get("name", "?")
        try:
            source = "\n".join(imports) + "\n\n" + item["source"]
            check_tool_source(source, f"{name}.py")
            functions = function_sources(item["source"])
            if name not in functions:
                raise UnsafeCode(f"source does not define {name}()")
            tests = []
            for test in item.get("tests", []):
                check_tool_source(test, f"test_{name}.py")
                tests += [
                    src
                    for fn, src in function_sources(test).items()
                    if fn.startswith(f"test_{name}__")
                ]
        except (UnsafeCode, KeyError, TypeError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        tools.functions[name] = functions[name]
        tools.schemas[name] = {
            "type": "function",
            "function": {
                "name": name,
                "description": item.get("description", ""),
                "parameters": item.get("parameters") or {"type": "object", "properties": {}},
            },
        }
        tools.kinds[name] = "write" if item.get("kind") == "write" else "read"
        tools.tests[name] = tests
        tools.origin[name] = "llm"
    return tools, problems


def design_domain_tools(settings, db_path: Path | str, theme: dict) -> ToolSet:
    """Ask the LLM for domain tools; returns only those that pass the static checks."""
    from aw_site.llm import complete_json

    messages = [
        {"role": "system", "content": _SYSTEM},
        {
            "role": "user",
            "content": f"Environment: {theme.get('title')}: "
            f"{theme.get('description', '')}\n\n{describe_database(db_path)}",
        },
    ]
    answer = complete_json(settings, messages)
    if not isinstance(answer, dict):
        return ToolSet(prelude=prelude_source())
    tools, _problems = parse_design(answer)
    return tools
