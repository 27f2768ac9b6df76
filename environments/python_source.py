"""Parsing and compiling Python source safely from several threads.

CPython 3.11 can fail ``ast.parse`` / ``compile`` with "AST constructor recursion depth
mismatch" when two threads build ASTs at once (in-process job threads do); one lock avoids it.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<source>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename=filename)


def compile_python(source: str | ast.Module, filename: str = "<source>") -> CodeType:
    with _LOCK:
        return compile(source, filename, "exec")


def python_name(tool: str) -> str:
    """The function a tool's code lives in: the tool name with each character that cannot be
    in a Python identifier ("-" in `get-stations`, an OpenAPI operationId) replaced by "_".
    The sandbox worker repeats this rule (it imports nothing from the project)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in tool)
