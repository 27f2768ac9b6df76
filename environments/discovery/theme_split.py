"""A big API split into a family of environment themes of the size one environment holds.

The paper's environments have 10-40 tools; GitHub's document has 1,223 operations. A theme with
more than `max_tools` tools becomes several themes of one family, each a part of the API that
belongs together:

1. operations are grouped by their first tag, else by the first meaningful segment of their path
   (path parameters, version segments such as `v1` and the prefix every path shares are not
   meaningful; an RPC path such as `/#Action=DescribeInstances` means its entity, `Instance`);
2. a group still too big is split where its paths part ways (`/repos/{owner}/{repo}/branches`
   and `.../issues`), then by the entity its operation names name, and only as a last resort
   into equal runs in document order;
3. neighbouring small groups are merged, siblings first (same path root), then groups whose
   keys sort next to each other, so every part has between `min_tools` and `max_tools` tools
   where the document allows.

Each part keeps the document's own tools (same names, same parameters) and, for OpenAPI, a
document cut to its operations plus every component they reference (its related entities), so
a build of the part reads only its part. A part's name, title and identity carry its label, so
parts never become versions of one another, and the same document always gives the same parts.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .naming import singular, split_camel
from .themes import slug

DEFAULT_MAX_TOOLS = 40
LABEL_LENGTH = 60  # characters of a merged part's label before its middle is elided
_VERSION = re.compile(r"v?\d+(\.\d+)*([a-z]+\d*)?|\d{4}-\d{2}-\d{2}", re.IGNORECASE)
_EXTENSION = re.compile(r"\.(json|xml|ya?ml|csv|txt|html?)$", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z0-9]+")
_ARGUMENTS = re.compile(r"\{[^}]*\}|\(.*\)$")  # `{id}` anywhere, OData call arguments `(...)`


def max_tools_default() -> int:
    """Tools one environment of a family holds at most (AW_THEME_MAX_TOOLS, default 40)."""
    try:
        return max(2, int(os.environ.get("AW_THEME_MAX_TOOLS", DEFAULT_MAX_TOOLS)))
    except ValueError:
        return DEFAULT_MAX_TOOLS


@dataclass
class Operation:
    """One tool of the theme with the keys it is grouped by."""

    index: int  # position in the theme's tool list (parts keep document order)
    tool: dict
    group: str  # first tag, else the first meaningful path segment, else the named entity
    segments: tuple[str, ...]  # meaningful path segments (the shared prefix left out)
    entity: str  # the entity the operation's name names (RPC paths, tools without a path)


@dataclass
class Part:
    """Operations that go into one environment, and the group labels they came from."""

    leaves: list[tuple[str, ...]]
    operations: list[Operation] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.operations)


def split_theme(theme: dict, max_tools: int | None = None) -> list[dict]:
    """The theme itself when it has at most `max_tools` tools, else its family of parts."""
    max_tools = max(2, max_tools or max_tools_default())
    tools = [t for t in theme.get("tools") or [] if isinstance(t, dict)]
    if len(tools) <= max_tools:
        return [theme]
    min_tools = max(1, max_tools // 4)
    groups = _grouped(_operations(tools), lambda op: op.group)
    splitter = _Splitter(max_tools, min_tools)
    parts = splitter.pack(
        [p for key in sorted(groups, key=_order) for p in splitter.split(groups[key], (key,))]
    )
    labels = _unique([_label(part.leaves) for part in parts])
    return [
        _part_theme(theme, part, label, number, len(parts))
        for number, (part, label) in enumerate(zip(parts, labels, strict=True), start=1)
    ]


# --- grouping ------------------------------------------------------------------------------


def _operations(tools: list[dict]) -> list[Operation]:
    paths = [_path_segments(str((t.get("http") or {}).get("path") or "")) for t in tools]
    shared = len(os.path.commonprefix(paths))  # `/api/...` everywhere names nothing
    operations = []
    for index, (tool, path) in enumerate(zip(tools, paths, strict=True)):
        segments = path[shared:]
        entity = _entity_of(str(tool.get("name") or ""))
        tags = [str(t).strip() for t in tool.get("tags") or [] if str(t).strip()]
        group = tags[0] if tags else (segments[0] if segments else entity)
        operations.append(Operation(index, tool, group or "general", segments, entity))
    return operations


def _path_segments(path: str) -> tuple[str, ...]:
    """The segments of a path that name something: no parameters, versions or empty parts; an
    RPC action (`#Action=DescribeInstances`, `microsoft.graph.createUploadSession`) is read as
    the entity it acts on."""
    out = []
    for raw in path.split("/"):
        if raw.strip().startswith((":", "<")):  # `:id`, `<id>`: parameters of other styles
            continue
        segment = _EXTENSION.sub("", _ARGUMENTS.sub("", raw).strip().lstrip("$"))
        if not segment.strip("#=.") or _VERSION.fullmatch(segment):
            continue
        pieces = [piece for piece in re.split(r"[=.#]", segment) if piece]
        if len(pieces) > 1 or segment.startswith("#"):  # an action, named for what it acts on
            segment = _entity_of(pieces[-1]) or pieces[-1]
        else:
            segment = pieces[0]
        out.append(segment)
    return tuple(out)


def _entity_of(name: str) -> str:
    """The entity an operation name acts on: `DescribeInstances` -> `Instance`,
    `repos/get-content` -> `content`, `get_weather` -> `weather`."""
    words = _WORDS.findall(split_camel(name.rsplit("/", 1)[-1].rsplit(".", 1)[-1]))
    if len(words) > 1:
        words = words[1:]  # the verb
    if not words:
        return ""
    words[-1] = singular(words[-1])
    if name[:1].isupper():  # CamelCase actions keep their style: AddressTransfer
        return "".join(w[:1].upper() + w[1:] for w in words)
    return "_".join(w.lower() for w in words)


def _order(key: str) -> tuple[str, str]:
    return (key.casefold(), key)


class _Splitter:
    """Recursive splitting of groups too big, and the packing of groups too small."""

    def __init__(self, max_tools: int, min_tools: int):
        self.max_tools = max_tools
        self.min_tools = min_tools

    def split(self, operations: list[Operation], label: tuple[str, ...]) -> list[Part]:
        if len(operations) <= self.max_tools:
            return [Part([label], operations)]
        children = self._by_path(operations)
        if len(children) < 2:
            children = _grouped(operations, lambda op: op.entity)
        if len(children) < 2:
            return self._runs(operations, label)
        parts = []
        for key in sorted(children, key=_order):
            child_label = (*label, key) if key and key not in label else label
            parts += self.split(children[key], child_label)
        return self.pack(parts)

    def _by_path(self, operations: list[Operation]) -> dict[str, list[Operation]]:
        """Operations by the first segment where their paths part ways ("" for those that end
        before it: the group's own root)."""
        depth = len(os.path.commonprefix([op.segments for op in operations]))
        return _grouped(
            operations, lambda op: op.segments[depth] if len(op.segments) > depth else ""
        )

    def _runs(self, operations: list[Operation], label: tuple[str, ...]) -> list[Part]:
        """Equal runs in document order: the last resort for operations nothing tells apart."""
        count = math.ceil(len(operations) / self.max_tools)
        size = math.ceil(len(operations) / count)
        return [
            Part([(*label, str(number))], operations[start : start + size])
            for number, start in enumerate(range(0, len(operations), size), start=1)
        ]

    def pack(self, parts: list[Part]) -> list[Part]:
        """Neighbours merged into parts of at most `max_tools`, a part of `min_tools` or more
        never with another such (two groups big enough stay two environments): the fewest
        parts under `min_tools`, then the fewest parts, then the most even sizes."""
        best: list[tuple[tuple[int, int, int], int]] = [((0, 0, 0), 0)]
        for end in range(1, len(parts) + 1):
            choice: tuple[tuple[int, int, int], int] | None = None
            size = solid = 0
            for start in range(end - 1, -1, -1):  # the last part is parts[start:end]
                size += len(parts[start])
                solid += len(parts[start]) >= self.min_tools
                if start < end - 1 and (size > self.max_tools or solid > 1):
                    break
                under, count, squares = best[start][0]
                cost = (under + (size < self.min_tools), count + 1, squares + size * size)
                if choice is None or cost < choice[0]:
                    choice = (cost, start)
            assert choice is not None
            best.append(choice)
        packed: list[Part] = []
        end = len(parts)
        while end > 0:
            start = best[end][1]
            run = parts[start:end]
            packed.append(
                Part(
                    [leaf for p in run for leaf in p.leaves], [o for p in run for o in p.operations]
                )
            )
            end = start
        return packed[::-1]


def _grouped(operations: list[Operation], key) -> dict[str, list[Operation]]:
    groups: dict[str, list[Operation]] = {}
    for operation in operations:
        groups.setdefault(key(operation), []).append(operation)
    return groups


# --- naming --------------------------------------------------------------------------------


def _label(leaves: list[tuple[str, ...]]) -> str:
    """`repos/branches` for one group; `repos: branches, collaborators` for siblings;
    `billing, checks, classroom` for merged groups; the middle elided past LABEL_LENGTH."""
    if len(leaves) == 1:
        return "/".join(leaves[0])
    prefix = os.path.commonprefix(leaves)
    tails = list(dict.fromkeys("/".join(leaf[len(prefix) :]) for leaf in leaves))
    tails = [t for t in tails if t] or ["/".join(prefix)]
    text = ", ".join(tails)
    if len(text) > LABEL_LENGTH and len(tails) > 2:
        text = f"{tails[0]} … {tails[-1]}"
    head = "/".join(prefix)
    return f"{head}: {text}" if head and text != head else text


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _part_name(family: str, label: str) -> str:
    """A stable theme (and environment) name for a part, at most 60 characters: the family's
    name and the label's words, cut with a hash of both when too long."""
    name = f"{family}_{slug(label)}"
    if len(name) <= 60:
        return name
    digest = hashlib.sha1(f"{family}#{label}".encode()).hexdigest()[:6]
    words = slug(label)[:28].rstrip("_")
    head = family[: max(16, 60 - len(words) - len(digest) - 2)].rstrip("_")
    return f"{head}_{words}"[: 60 - len(digest) - 1].rstrip("_") + f"_{digest}"


def _part_theme(theme: dict, part: Part, label: str, number: int, count: int) -> dict:
    operations = sorted(part.operations, key=lambda op: op.index)
    tools = [op.tool for op in operations]
    provenance = dict(theme.get("provenance") or {})
    identity = dict(provenance.get("identity") or {})
    family_key = str(identity.get("key") or theme.get("name") or "")
    title = theme.get("title") or theme.get("name") or "theme"
    if identity:
        provenance["identity"] = {**identity, "part": label, "key": f"{family_key}#{label}"}
    provenance["family"] = {
        "key": family_key,
        "name": theme.get("name", ""),
        "title": title,
        "label": label,
        "part": number,
        "parts": count,
        "tools": len(tools),
        "family_tools": len(theme.get("tools") or []),
    }
    description = (theme.get("description") or "").strip()
    scope = f"Part {number} of {count} of {title}: {label} ({len(tools)} operations)."
    return {
        **theme,
        "name": _part_name(str(theme.get("name") or "theme"), label),
        "title": f"{title} — {label}",
        "description": f"{description}\n\n{scope}".strip(),
        "raw_spec": _part_source(theme, tools),
        "provenance": provenance,
        "tools": tools,
    }


# --- the part's own document ---------------------------------------------------------------


def _part_source(theme: dict, tools: list[dict]) -> Any:
    """The source a build of the part reads: an OpenAPI document cut to the part's operations
    and what they reference; an MCP `tools/list` cut to the part's tools; else the source."""
    raw = theme.get("raw_spec")
    if isinstance(raw, dict) and "openapi" in raw and isinstance(raw.get("paths"), dict):
        return openapi_part(raw, [t.get("http") or {} for t in tools])
    if isinstance(raw, dict):
        listing = raw.get("result", raw)
        if isinstance(listing, dict) and isinstance(listing.get("tools"), list):
            names = {t.get("name") for t in tools}
            kept = [t for t in listing["tools"] if isinstance(t, dict) and t.get("name") in names]
            cut = {**listing, "tools": kept}
            return {**raw, "result": cut} if "result" in raw else cut
    return raw


def openapi_part(doc: dict, operations: list[dict]) -> dict:
    """`doc` with only the given operations ({method, path}) and the components they reach
    through `$ref` (transitively), so the part's entities are the ones its operations use."""
    wanted: dict[str, set[str]] = {}
    for http in operations:
        wanted.setdefault(str(http.get("path", "")), set()).add(str(http.get("method", "")).lower())
    paths: dict[str, Any] = {}
    for path, item in doc["paths"].items():
        methods = wanted.get(str(path))
        if not methods or not isinstance(item, dict):
            continue
        paths[path] = {k: v for k, v in item.items() if k in methods or k not in _METHOD_KEYS}
    part = {k: v for k, v in doc.items() if k not in ("paths", "components", "tags")}
    part["paths"] = paths
    used_tags = {
        str(tag)
        for item in paths.values()
        for key, op in item.items()
        if key in _METHOD_KEYS and isinstance(op, dict)
        for tag in op.get("tags") or []
    }
    if isinstance(doc.get("tags"), list):
        part["tags"] = [
            t for t in doc["tags"] if isinstance(t, dict) and str(t.get("name")) in used_tags
        ]
    components = doc.get("components") if isinstance(doc.get("components"), dict) else {}
    kept: dict[str, dict[str, Any]] = {}
    if isinstance(components.get("securitySchemes"), dict):
        kept["securitySchemes"] = components["securitySchemes"]
    for section, name in _references(paths, components):
        kept.setdefault(section, {})[name] = components[section][name]
    if kept:
        part["components"] = {
            section: {n: values[n] for n in sorted(values)} for section, values in kept.items()
        }
    return copy.deepcopy(part)


_METHOD_KEYS = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))
_REF = re.compile(r'"\$ref":\s*"#/components/([^/"]+)/([^"]+)"')


def _references(value: Any, components: dict) -> list[tuple[str, str]]:
    """Every (section, name) of `components` that `value` reaches through local references."""
    found: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    pending = [value]
    while pending:
        text = json.dumps(pending.pop(), ensure_ascii=False)
        for section, escaped in _REF.findall(text):
            name = escaped.replace("~1", "/").replace("~0", "~")
            target = (components.get(section) or {}).get(name)
            if (section, name) in seen or target is None:
                continue
            seen.add((section, name))
            found.append((section, name))
            pending.append(target)
    return found
