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

from environments.python_source import python_name

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
            function = python_name(str(name))
            if function not in functions:
                raise UnsafeCode(f"source does not define {function}()")
            tests = []
            for test in item.get("tests", []):
                check_tool_source(test, f"test_{name}.py")
                tests += [
                    src
                    for fn, src in function_sources(test).items()
                    if fn.startswith(f"test_{function}__")
                ]
        except (UnsafeCode, KeyError, TypeError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        tools.functions[name] = functions[function]
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


_THEME_SYSTEM = (
    _SYSTEM
    + " Implement exactly the tools listed under THEME TOOLS: the same names and parameters "
    "(a client already knows them), with the business rules their descriptions imply "
    "(existence checks, allowed state changes, references that must exist), over the tables "
    "shown. Each tool's tests must use values from the rows shown."
)


def design_theme_tools(
    settings, db_path: Path | str, theme: dict, plans: list
) -> tuple[ToolSet, list[str]]:
    """The LLM's implementation of every theme tool (same names and schemas) with tests.

    Returns the tools that pass the static checks and one problem line per tool dropped
    (unsafe or broken code, a name that is not a theme tool). An unusable answer raises
    LLMError: the caller reports it, it is never silently replaced."""
    from aw_site.llm import LLMError, complete_json

    surface = [
        {"name": p.name, "description": p.description, "parameters": p.parameters}
        for p in plans
        if "function name" not in p.rejected
    ]
    messages = [
        {"role": "system", "content": _THEME_SYSTEM},
        {
            "role": "user",
            "content": f"Environment: {theme.get('title') or theme.get('name')}: "
            f"{theme.get('description', '')[:1500]}\n\nTHEME TOOLS: {json.dumps(surface)[:12000]}"
            f"\n\n{describe_database(db_path)}",
        },
    ]
    answer = complete_json(settings, messages)
    if not isinstance(answer, dict) or not isinstance(answer.get("tools"), list):
        raise LLMError("the tool-design answer has no 'tools' list")
    tools, problems = parse_design(answer)
    by_name = {p.name: p for p in plans}
    for name in list(tools.names()):
        plan = by_name.get(name)
        if plan is None:
            problems.append(f"{name}: not a tool of the theme (its surface is fixed)")
            for part in (tools.functions, tools.schemas, tools.kinds, tools.tests, tools.origin):
                part.pop(name, None)
            continue
        tools.schemas[name] = plan.schema()
        if plan.kind and not plan.rejected:
            tools.kinds[name] = plan.kind
        if not tools.tests.get(name):
            problems.append(f"{name}: came without tests")
            for part in (tools.functions, tools.schemas, tools.kinds, tools.tests, tools.origin):
                part.pop(name, None)
    return tools, problems
