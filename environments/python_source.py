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
