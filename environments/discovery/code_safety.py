"""Static checks on generated tool source before it ever runs in the sandbox.

LLM-written tools may define functions and import a few harmless modules, nothing else: no
module-level statements that run code, no dunder attribute tricks, no eval/exec/open. The
sandbox would stop an escape anyway; this refuses the obvious ones earlier, with a clear reason.
"""

from __future__ import annotations

import ast

from environments.python_source import compile_python, parse_python

ALLOWED_IMPORTS = frozenset(
    {
        "math",
        "re",
        "datetime",
        "json",
        "statistics",
        "decimal",
        "fractions",
        "itertools",
        "collections",
        "functools",
        "string",
        "operator",
    }
)
FORBIDDEN_NAMES = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "breakpoint",
        "input",
        "memoryview",
    }
)


class UnsafeCode(ValueError):
    """The source does something a tool must not do; the message says what and where."""


def check_tool_source(source: str, filename: str = "tools.py") -> ast.Module:
    """Parse and compile `source`; raise UnsafeCode naming the first forbidden construct."""
    try:
        tree = parse_python(source, filename)
        compile_python(tree, filename)
    except SyntaxError as exc:
        raise UnsafeCode(f"{filename}: syntax error at line {exc.lineno}: {exc.msg}") from exc
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            continue
        raise UnsafeCode(
            f"{filename}: line {node.lineno}: only functions may be defined at top level"
        )
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                _check_module(alias.name, node.lineno, filename)
        elif isinstance(node, ast.ImportFrom):
            _check_module(node.module or "", node.lineno, filename)
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            raise UnsafeCode(f"{filename}: line {node.lineno}: {node.id}() is not allowed")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            raise UnsafeCode(f"{filename}: line {node.lineno}: dunder attribute {node.attr}")
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.AsyncFunctionDef, ast.Lambda)):
            if isinstance(node, ast.Lambda):
                continue
            raise UnsafeCode(f"{filename}: line {node.lineno}: {type(node).__name__} not allowed")
    return tree


def _check_module(module: str, line: int, filename: str) -> None:
    if module.partition(".")[0] not in ALLOWED_IMPORTS:
        raise UnsafeCode(f"{filename}: line {line}: import of {module!r} is not allowed")


def function_sources(source: str) -> dict[str, str]:
    """Top-level function name -> its source text (imports are re-added by the caller)."""
    tree = parse_python(source)
    lines = source.splitlines()
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[node.name] = "\n".join(lines[start - 1 : node.end_lineno]) + "\n"
    return out


def import_lines(source: str) -> list[str]:
    tree = parse_python(source)
    return [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
