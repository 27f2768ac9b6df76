"""Function names every client can call, from whatever a theme names its tools.

OpenAI function calling and MCP clients accept `^[a-zA-Z0-9_-]{1,64}$`; real documents name
operations `repos/get-content`, `apps.list` or with 100 characters. `function_names` is the one
rule every theme tool name goes through: a valid name is kept as it is; any other becomes its
words joined by "_" (a letter first, so it is also a Python function), cut to 64 with a short
stable hash of the original; names that would collide get a hash suffix of their original. The
same list of originals always gives the same names, so rebuilding a document names its tools
the same way.
"""

from __future__ import annotations

import hashlib
import re

from mcp.shared.tool_name_validation import TOOL_NAME_REGEX

MAX_LENGTH = 64
# What OpenAI and MCP clients accept, with a letter first (the tool's code is `def <name>`).
FUNCTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
# MCP's own rule for tool names (SEP-986), as the SDK checks it: dots allowed, no "/".
MCP_TOOL_NAME = TOOL_NAME_REGEX


def is_function_name(name: str) -> bool:
    return bool(FUNCTION_NAME.fullmatch(name or ""))


def _digest(original: str, length: int = 6) -> str:
    return hashlib.sha1(original.encode("utf-8")).hexdigest()[:length]


def _with_suffix(base: str, suffix: str) -> str:
    return f"{base[: MAX_LENGTH - len(suffix) - 1].rstrip('_-')}_{suffix}"


def function_name(original: str) -> str:
    """One name on its own: kept when valid, else its words joined by "_" (cut with a hash)."""
    original = str(original or "")
    if is_function_name(original):
        return original
    base = re.sub(r"[^A-Za-z0-9]+", "_", original).strip("_") or "tool"
    if not base[0].isalpha():
        base = f"op_{base}"
    if len(base) > MAX_LENGTH:
        base = _with_suffix(base, _digest(original))
    return base


def function_names(originals: list[str]) -> list[str]:
    """Valid, unique names for a list of tool names, in order (deterministic).

    Names valid as given keep priority; a changed name that meets a taken one gets a suffix
    from its original's hash (then a counter, should two hashes meet)."""
    names = [function_name(o) for o in originals]
    taken = {n for n, o in zip(names, originals, strict=True) if n == o}
    seen_original: set[str] = set()
    out: list[str] = []
    for name, original in zip(names, originals, strict=True):
        keep = name == original and original not in seen_original
        seen_original.add(original)
        if not keep:
            if name in taken:
                name = _with_suffix(name, _digest(original))
            count = 2
            while name in taken:
                name = _with_suffix(function_name(original), f"{_digest(original)}{count}")
                count += 1
        taken.add(name)
        out.append(name)
    return out


def renamed_note(original: str) -> str:
    """What a renamed tool's description says about the name its document gives it."""
    return f"(Operation {original!r} in the source document.)"


def mcp_names(names: list[str], originals: dict[str, str]) -> dict[str, str]:
    """Tool name -> the name an MCP server lists it under: the document's own name where MCP
    allows it (`apps.list`; not `repos/get-content`) and no other listed tool has it."""
    exposed: dict[str, str] = {}
    taken = set(names)
    for name in names:
        original = originals.get(name, "")
        if original and MCP_TOOL_NAME.fullmatch(original) and original not in taken:
            exposed[name] = original
            taken.add(original)
        else:
            exposed[name] = name
    return exposed
