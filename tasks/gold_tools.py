"""Which tools a task's gold solution uses: its gold chain, or the ``call("tool", ...)`` calls
its programmatic solution makes (read from the source, never run)."""

from __future__ import annotations

import ast
from typing import Any

from environments.python_source import parse_python


def tools_called_in_solution(source: str) -> list[str]:
    """Tool names a solution passes to ``call`` as a literal first argument, in source order."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError):
        return []
    names = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "call"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.append((node.lineno, node.col_offset, node.args[0].value))
    return [name for _, _, name in sorted(names)]


def gold_tools(task: Any) -> list[str]:
    """Distinct tools the gold solution needs, in first-use order (a TaskSpec or its dict)."""
    chain = task.get("gold_chain") if isinstance(task, dict) else getattr(task, "gold_chain", None)
    names = [str(step.get("tool")) for step in chain or [] if step.get("tool")]
    if not names:
        source = task.get("solution") if isinstance(task, dict) else getattr(task, "solution", "")
        names = tools_called_in_solution(source or "")
    return list(dict.fromkeys(names))
