"""Environment themes parsed from real sources, bulk import, and near-duplicate detection.

A theme is a dict: {"name", "title", "description", "source_kind", "raw_spec", "provenance",
"tools"}. source_kind is one of mcp_spec (a `tools/list` result), tool_doc (OpenAPI 3 or a list
of OpenAI function schemas), prd (product requirement markdown) or manual.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .openapi_parameters import (
    DocumentParameters,
    left_out,
    read_document_parameters,
    transport_note,
)
from .openapi_refs import follow_ref
from .swagger import is_swagger, swagger_to_openapi

SOURCE_KINDS = ("mcp_spec", "tool_doc", "prd", "manual")
_HTTP_METHODS = ("get", "post", "put", "patch", "delete")
_STOP = frozenset(
    "a an and are as at be by for from in into is it of on or that the this to with you your "
    "can will api server tool tools".split()
)


class ThemeError(ValueError):
    """A theme source is malformed; the message names the source and the problem."""


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")[:60] or "theme"


def _theme(name, title, description, kind, raw, source, tools) -> dict:
    return {
        "name": slug(name),
        "title": title or name,
        "description": (description or "").strip(),
        "source_kind": kind,
        "raw_spec": raw,
        "provenance": {"source": source, "kind": kind},
        "tools": tools,
    }


def parse_mcp_spec(doc: Any, source: str = "mcp") -> dict:
    """A `tools/list` result (optionally a JSON-RPC response, with serverInfo) -> theme."""
    if isinstance(doc, dict) and "result" in doc:
        doc = doc["result"]
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), list) or not doc["tools"]:
        raise ThemeError(f"{source}: an MCP spec needs a non-empty 'tools' list")
    tools = []
    for index, tool in enumerate(doc["tools"]):
        if not isinstance(tool, dict) or not tool.get("name"):
            raise ThemeError(f"{source}: tools[{index}] has no name")
        tools.append(
            {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("inputSchema") or {"type": "object", "properties": {}},
            }
        )
    info = doc.get("serverInfo") or {}
    name = info.get("name") or doc.get("name") or Path(source).stem
    description = info.get("description") or doc.get("description") or _tools_summary(tools)
    return _theme(name, info.get("title") or name, description, "mcp_spec", doc, source, tools)


def parse_openapi(doc: Any, source: str = "openapi") -> dict:
    """An OpenAPI 3 (or Swagger 2.0) document -> theme with one tool per operation, named by
    the API's identity (provider, service, version), not its title alone."""
    if is_swagger(doc):
        doc = swagger_to_openapi(doc)
    if not isinstance(doc, dict) or not str(doc.get("openapi", "")).startswith("3"):
        raise ThemeError(
            f"{source}: not an OpenAPI 3 or Swagger 2.0 document (no 'openapi: 3.x' or "
            "'swagger: 2.0')"
        )
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    identity = openapi_identity(doc)
    title = str(info.get("title") or "").strip()
    if not title and (info.get("x-serviceName") or identity["provider"]):
        title = " ".join(filter(None, (str(info.get("x-serviceName") or ""), identity["provider"])))
    if not title:
        raise ThemeError(f"{source}: OpenAPI info.title is missing (and no server names the API)")
    operations = []
    paths = doc.get("paths") if isinstance(doc.get("paths"), dict) else {}
    for path, raw in paths.items():
        item = _deref(raw or {}, doc)
        if not isinstance(item, dict):
            continue
        raw_item = follow_ref(raw, doc)
        item = _with_own_parameters(item, raw_item, doc)
        for method in _HTTP_METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                raw_op = follow_ref(raw_item.get(method), doc)
                operations.append((str(path), method, _with_own_parameters(op, raw_op, doc), item))
    document = read_document_parameters(doc, [(m, op, item) for _, m, op, item in operations])
    tools = [_operation_tool(doc, path, m, op, item, document) for path, m, op, item in operations]
    if not tools:
        raise ThemeError(f"{source}: OpenAPI document has no operations")
    theme = _theme(
        identity["name"],
        title,
        str(info.get("description") or ""),
        "tool_doc",
        doc,
        source,
        tools,
    )
    theme["provenance"]["identity"] = {k: v for k, v in identity.items() if k != "name"}
    if doc.get("x-converted-from"):
        theme["provenance"]["converted_from"] = doc["x-converted-from"]
    left = list(dict.fromkeys(n for t in tools for n in t.get("notes") or []))
    if left:  # the document's own parameters no tool takes (a tool's notes say only that)
        theme["provenance"]["left_out_parameters"] = left
    return theme


def _operation_tool(
    doc: dict, path: str, method: str, op: dict, item: dict, document: DocumentParameters
) -> dict:
    """One operation as a tool: path, query and header parameters plus the body's fields.

    A header parameter is kept with its location (`http.headers`), except credentials (an
    `Authorization` header, an API key the document's security schemes name, AWS signing
    headers, an `access_token` query parameter), transport headers (`Content-Type`, `Accept`)
    and the document's standard query parameters (`openapi_parameters`): none says what the
    call asks, so none becomes a tool parameter; the tool's notes say which were left out and
    why (the standard ones in one note)."""
    props: dict[str, Any] = {}
    required: list[str] = []
    headers: list[str] = []
    notes: list[str] = []
    transport: list[str] = []
    listed = [p for p in (op.get("parameters"), item.get("parameters")) if isinstance(p, list)]
    for param in _deref([p for group in listed for p in group], doc):
        if not isinstance(param, dict) or not param.get("name") or param.get("in") == "cookie":
            continue
        name = str(param["name"])
        if name in props or name in headers or name in transport:  # the operation's own wins
            continue
        why, kind = left_out(name, str(param.get("in") or ""), param, document)
        if kind == "transport" and param.get("in") == "query":
            transport.append(name)
            continue
        if why:
            if why not in notes:
                notes.append(why)
            continue
        if param.get("in") == "header":
            headers.append(name)
        schema = param.get("schema")
        props[name] = dict(schema) if isinstance(schema, dict) else {"type": "string"}
        if param.get("description"):
            props[name]["description"] = param["description"]
        _carry_parameter_example(props[name], param)
        if param.get("required") and name not in required:
            required.append(name)
    http: dict[str, Any] = {"method": method.upper(), "path": path}
    if headers:
        http["headers"] = headers
    body = _deref(op.get("requestBody") or {}, doc)
    content = body.get("content") if isinstance(body, dict) else None
    content = content if isinstance(content, dict) else {}
    media = next((m for m in _BODY_MEDIA if m in content), next(iter(content), ""))
    if media:
        http["body"] = media
        schema = (content[media] or {}).get("schema") if isinstance(content[media], dict) else {}
        schema = flat_object(schema, doc) if isinstance(schema, dict) else {}
        if schema.get("type", "object") == "object" and isinstance(schema.get("properties"), dict):
            fields = _with_object_example(schema, content[media])
            read_only = _read_only(fields, doc, method, path)
            for name in read_only:  # the server's own (`id`, `url`, `created`): never sent
                del fields[name]
            for name in list(fields):  # a form body's `DryRun` asks what a query one does
                why, kind = left_out(name, "query", {}, document)
                if kind == "permission":
                    del fields[name]
                    if why not in notes:
                        notes.append(why.replace("query parameter", "field", 1))
            props.update(fields)
            required += [
                r for r in schema.get("required") or [] if r not in required and r not in read_only
            ]
        elif schema:
            props["body"] = schema
            if body.get("required"):
                required.append("body")
    tool = {
        "name": str(op.get("operationId") or slug(f"{method}_{path}")),
        "description": str(op.get("summary") or op.get("description") or f"{method} {path}"),
        "parameters": {
            "type": "object",
            "properties": props,
            "required": [r for r in required if r in props],
        },
        "http": http,
    }
    if transport:
        notes.append(transport_note(transport))
    if notes:
        tool["notes"] = notes
    tags = [str(t) for t in op.get("tags") or [] if isinstance(t, str | int) and str(t).strip()]
    if tags:  # how the document groups its operations: a big API splits along them
        tool["tags"] = tags
    return tool


BODY_KEYS = {"id", "uuid", "key"}
# a path that ends in the row it names: `/things/{thing}`, NetBox's `/dcim/sites/{id}/`
ENDS_IN_ROW = re.compile(r"\{[^}]+\}/?$")


def _read_only(properties: dict, doc: dict, method: str, path: str) -> list[str]:
    """The body properties the document marks `readOnly`: OpenAPI says a client does not
    send them (NetBox's `url`, `display`, `created`), so they are no parameters of a write.
    The row's own `id` stays where nothing else names the row a write changes (the
    Petstore's `PUT /pet`, whose body says which pet)."""
    changes_a_row = method.lower() in ("put", "patch", "delete")
    body_names_row = changes_a_row and not ENDS_IN_ROW.search(path)
    marked = []
    for name, sub in properties.items():
        if body_names_row and name.lower() in BODY_KEYS:
            continue
        sub = _deref(sub, doc, 1) if isinstance(sub, dict) else sub
        if isinstance(sub, dict) and sub.get("readOnly") is True:
            marked.append(name)
    return marked


def _carry_parameter_example(schema: dict, param: dict) -> None:
    """A parameter's own `example` / `examples` ({name: {value}}) / `x-example` (Swagger) put
    on its schema, where the row generator and a client of the tool read examples."""
    if any(k in schema for k in ("example", "examples")):
        return
    listed = param.get("examples")
    if isinstance(listed, dict):
        values = [v.get("value") for v in listed.values() if isinstance(v, dict)]
        values = [v for v in values if v is not None]
        if values:
            schema["examples"] = values
            return
    for key in ("example", "x-example"):
        if param.get(key) is not None:
            schema["example"] = param[key]
            return


def _with_object_example(schema: dict, media: Any) -> dict:
    """The properties of an object schema, each given its value from the object's example (the
    schema's own, or the body media type's `example` / first `examples` value) when it shows
    none of its own."""
    properties = dict(schema["properties"])
    shown = [schema.get("example")]
    if isinstance(media, dict):
        listed = media.get("examples")
        first = next(iter(listed.values()), None) if isinstance(listed, dict) else None
        shown += [media.get("example"), first.get("value") if isinstance(first, dict) else None]
    for example in shown:
        for name, value in (example if isinstance(example, dict) else {}).items():
            sub = properties.get(name)
            if isinstance(sub, dict) and value is not None and "example" not in sub:
                properties[name] = {**sub, "example": value}
    return properties


def openapi_identity(doc: dict) -> dict[str, str]:
    """Who serves the API, which service it is and which version: {provider, service, version,
    key, name}. Two documents with the same title from different hosts differ here; the same
    document read twice does not (its builds become versions of one environment)."""
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    servers = doc.get("servers") if isinstance(doc.get("servers"), list) else []
    url = str((servers[0] or {}).get("url", "")) if servers and isinstance(servers[0], dict) else ""
    host = urlsplit(url).hostname or ""
    provider = str(info.get("x-providerName") or doc.get("x-providerName") or host or "")
    service = str(info.get("x-serviceName") or doc.get("x-serviceName") or "")
    if not service:
        segment = urlsplit(url).path.strip("/").split("/")[0] if url else ""
        service = info.get("title") or segment or "api"
    version = str(info.get("version") or "")
    key = f"{provider}:{service}/{version}" if provider else f"{service}/{version}"
    words = re.sub(
        r"[^a-z0-9]+", "_", f"{service} {provider.removeprefix('www.')} {version}".lower()
    )
    name = words.strip("_") or "api"
    if len(name) > 60:  # cut with a hash of the whole key, so two long keys stay apart
        name = f"{name[:53].rstrip('_')}_{hashlib.sha1(key.encode()).hexdigest()[:6]}"
    return {"provider": provider, "service": str(service), "version": version, "key": key,
            "name": name}  # fmt: skip


_BODY_MEDIA = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")


REF_BUDGET = 5000  # schema nodes one dereference may write before references stay cut


def _with_own_parameters(node: dict, raw: dict, doc: dict) -> dict:
    """`node` (a dereferenced path item or operation) with its `parameters` dereferenced on
    their own budget: a path whose operations' schemas spend a dereference's budget would
    otherwise lose the parameters met after them (Xero's required `xero-tenant-id`, declared
    once per path, became `{"type": "object"}` on a ninth of its operations)."""
    parameters = raw.get("parameters")
    if not isinstance(parameters, list):
        return node
    return {**node, "parameters": _deref(parameters, doc)}


def _deref(value: Any, doc: dict, depth: int = 6) -> Any:
    """Local `#/...` references replaced by what they point to, so a tool's parameter schema
    stands on its own, as a client of the API sends it. A reference to a schema it is already
    inside (a recursive schema), one `depth` references deep, or one met after `REF_BUDGET`
    nodes (documents whose schemas nest each other combinatorially) becomes `{"type":
    "object"}`: never an endless or exponential expansion."""
    return resolve_refs(value, doc, depth)


def resolve_refs(value: Any, doc: dict, depth: int = 6, budget: int = REF_BUDGET) -> Any:
    """`_deref` for other readers of the same document (entities of `components/schemas`)."""
    return _resolve(value, doc, depth, (), [budget])


def _resolve(value: Any, doc: dict, depth: int, inside: tuple, budget: list[int]) -> Any:
    budget[0] -= 1
    if isinstance(value, list):
        return [_resolve(v, doc, depth, inside, budget) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        if depth <= 0 or ref in inside or budget[0] <= 0:
            return {"type": "object"}
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part, {}) if isinstance(target, dict) else {}
        rest = {k: v for k, v in value.items() if k != "$ref"}
        merged = {**target, **rest} if isinstance(target, dict) else rest
        return _resolve(merged, doc, depth - 1, (*inside, ref), budget)
    return {k: _resolve(v, doc, depth, inside, budget) for k, v in value.items()}


def flat_object(schema: Any, doc: dict, depth: int = 4) -> Any:
    """An `allOf` (or an `anyOf`/`oneOf` of objects) as one object schema: the parts' properties
    together, `required` from `allOf` parts only (a one-of part is not always there)."""
    schema = _deref(schema, doc)
    if not isinstance(schema, dict) or depth <= 0:
        return schema
    combined = [
        (k, schema[k]) for k in ("allOf", "anyOf", "oneOf") if isinstance(schema.get(k), list)
    ]
    if not combined:
        return schema
    out = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf")}
    properties = dict(out.get("properties") or {})
    required = list(out.get("required") or [])
    objects = 0
    for combiner, parts in combined:
        for part in parts:
            part = flat_object(part, doc, depth - 1)
            if not isinstance(part, dict) or not isinstance(part.get("properties"), dict):
                continue
            objects += 1
            for name, sub in part["properties"].items():
                properties.setdefault(name, sub)
            if combiner == "allOf":
                required += [r for r in part.get("required") or [] if r not in required]
    if not objects:
        return schema
    out.update({"type": "object", "properties": properties})
    if required:
        out["required"] = required
    return out


def parse_function_schemas(doc: Any, source: str = "tools") -> dict:
    """OpenAI function-format tool list (or {"name", "description", "tools": [...]}) -> theme."""
    meta: dict = {}
    items = doc
    if isinstance(doc, dict) and isinstance(doc.get("tools"), list):
        meta, items = doc, doc["tools"]
    if not isinstance(items, list) or not items:
        raise ThemeError(f"{source}: expected a non-empty list of function schemas")
    tools = []
    for index, item in enumerate(items):
        function = item.get("function", item) if isinstance(item, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise ThemeError(f"{source}: item {index} is not a function schema with a name")
        tools.append(
            {
                "name": function["name"],
                "description": function.get("description", ""),
                "parameters": function.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    name = meta.get("name") or Path(source).stem
    description = meta.get("description") or _tools_summary(tools)
    return _theme(name, meta.get("title") or name, description, "tool_doc", doc, source, tools)


def parse_prd(markdown: str, source: str = "prd.md") -> dict:
    """Product requirement markdown -> theme; bullets under feature/requirement headings -> tools."""
    lines = markdown.splitlines()
    title = next((ln[2:].strip() for ln in lines if ln.startswith("# ")), "")
    if not title:
        raise ThemeError(f"{source}: a PRD needs a '# Title' line")
    paragraphs, tools, section = [], [], ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            section = stripped.lstrip("#").strip().lower()
            continue
        if not section and stripped and not stripped.startswith(("-", "*")):
            paragraphs.append(stripped)
        wanted = ("feature", "requirement", "capabilit", "user stor", "function", "action")
        if stripped.startswith(("- ", "* ")) and any(w in section for w in wanted):
            text = stripped[2:].strip()
            label, _, rest = text.partition(":")
            name = slug(label if rest else " ".join(text.split()[:4]))
            tools.append({"name": name, "description": (rest or text).strip(), "parameters": {}})
    if not paragraphs:
        for line in lines:
            if (
                line.strip()
                and not line.startswith("#")
                and not line.strip().startswith(("-", "*"))
            ):
                paragraphs.append(line.strip())
                break
    return _theme(title, title, " ".join(paragraphs), "prd", markdown, source, tools)


def parse_manual(data: dict, source: str = "manual") -> dict:
    if not isinstance(data, dict) or not data.get("title"):
        raise ThemeError(f"{source}: a manual theme needs a title")
    return _theme(
        data.get("name") or data["title"],
        data["title"],
        data.get("description", ""),
        "manual",
        data,
        source,
        data.get("tools", []),
    )


def _tools_summary(tools: list[dict]) -> str:
    return "Tools: " + "; ".join(f"{t['name']}: {t.get('description', '')}" for t in tools[:20])


def parse_theme_document(doc: Any, source: str) -> dict:
    """Detect the format of an already-loaded document and parse it."""
    if isinstance(doc, str):
        return parse_prd(doc, source)
    if isinstance(doc, dict):
        if "openapi" in doc or is_swagger(doc):
            return parse_openapi(doc, source)
        if "result" in doc or (isinstance(doc.get("tools"), list) and _looks_mcp(doc["tools"])):
            return parse_mcp_spec(doc, source)
        if isinstance(doc.get("tools"), list):
            return parse_function_schemas(doc, source)
        if doc.get("source_kind") in SOURCE_KINDS and doc.get("title"):
            return parse_manual(doc, source)
        if "kind" in doc and "spec" in doc:
            return _parse_tagged(doc, source)
    if isinstance(doc, list):
        return parse_function_schemas(doc, source)
    raise ThemeError(f"{source}: unrecognised theme format")


def _parse_tagged(doc: dict, source: str) -> dict:
    parsers = {
        "mcp_spec": parse_mcp_spec,
        "openapi": parse_openapi,
        "tool_doc": parse_function_schemas,
        "prd": parse_prd,
        "manual": parse_manual,
    }
    parser = parsers.get(doc["kind"])
    if parser is None:
        raise ThemeError(f"{source}: unknown theme kind {doc['kind']!r}")
    return parser(doc["spec"], source)


def _looks_mcp(tools: list) -> bool:
    return bool(tools) and all(isinstance(t, dict) and "inputSchema" in t for t in tools)


def load_theme_file(path: Path) -> dict:
    """Parse one file: .json, .yaml/.yml (OpenAPI, needs pyyaml) or .md (PRD)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{path.name}: cannot read ({exc})") from exc
    if path.suffix in (".md", ".markdown"):
        return parse_prd(text, str(path))
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError as exc:  # pragma: no cover - pyyaml is installed here
            raise ThemeError(f"{path.name}: YAML needs pyyaml") from exc
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ThemeError(f"{path.name}: invalid YAML ({exc})") from exc
        return parse_theme_document(doc, str(path))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ThemeError(f"{path.name}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    return parse_theme_document(doc, str(path))


@dataclass
class ImportResult:
    themes: list[dict] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (item, message)


def import_themes(path: Path) -> ImportResult:
    """Bulk import: a folder of theme files or a JSONL file of theme documents.

    Every item is parsed on its own; a bad item is reported in `errors` and does not stop the
    others.
    """
    path = Path(path)
    result = ImportResult()
    if path.is_dir():
        for item in sorted(path.iterdir()):
            if item.suffix not in (".json", ".yaml", ".yml", ".md", ".markdown"):
                continue
            try:
                result.themes.append(load_theme_file(item))
            except ThemeError as exc:
                result.errors.append((item.name, str(exc)))
        return result
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item = f"{path.name}:{line_no}"
        try:
            result.themes.append(parse_theme_document(json.loads(line), item))
        except json.JSONDecodeError as exc:
            result.errors.append((item, f"{item}: invalid JSON: {exc.msg}"))
        except ThemeError as exc:
            result.errors.append((item, str(exc)))
    return result


# --- near-duplicate detection ------------------------------------------------------------


def tokens(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {w.rstrip("s") if len(w) > 3 else w for w in words if w not in _STOP}


def normalized_name(theme: dict) -> str:
    words = sorted(tokens(theme.get("title") or theme.get("name", "")) - {"mcp", "service"})
    return " ".join(words)


def minhash(token_set: set[str], permutations: int = 64) -> list[int]:
    """MinHash signature: estimate of Jaccard similarity by matching positions."""
    if not token_set:
        return [0] * permutations
    signature = []
    for seed in range(permutations):
        salt = seed.to_bytes(2, "big")
        signature.append(
            min(
                int.from_bytes(hashlib.blake2b(salt + t.encode(), digest_size=8).digest(), "big")
                for t in token_set
            )
        )
    return signature


def theme_text(theme: dict) -> str:
    tool_text = " ".join(
        f"{t['name'].replace('_', ' ')} {t.get('description', '')}" for t in theme.get("tools", [])
    )
    return f"{theme.get('title', '')} {theme.get('description', '')} {tool_text}"


def identity_key(theme: dict) -> str:
    """ "provider:service/version" of an API theme (OpenAPI), else ""."""
    identity = (theme.get("provenance") or {}).get("identity") or {}
    return str(identity.get("key") or "") if isinstance(identity, dict) else ""


def find_near_duplicates(themes: list[dict], threshold: float = 0.7) -> list[dict]:
    """Pairs of themes that are the same thing: equal normalized names or similar text."""
    signatures = [minhash(tokens(theme_text(t))) for t in themes]
    names = [normalized_name(t) for t in themes]
    keys = [identity_key(t) for t in themes]
    pairs = []
    for i in range(len(themes)):
        for j in range(i + 1, len(themes)):
            if keys[i] and keys[j] and keys[i] != keys[j]:
                continue  # two APIs that say who serves them and differ: never one theme
            if names[i] and names[i] == names[j]:
                pairs.append({"a": i, "b": j, "score": 1.0, "reason": "same normalized name"})
                continue
            same = sum(x == y for x, y in zip(signatures[i], signatures[j], strict=True))
            score = same / len(signatures[i])
            if score >= threshold:
                pairs.append(
                    {
                        "a": i,
                        "b": j,
                        "score": round(score, 3),
                        "reason": "similar descriptions (MinHash Jaccard)",
                    }
                )
    return pairs


def deduplicate(themes: list[dict], threshold: float = 0.7) -> tuple[list[dict], list[dict]]:
    """(kept themes, near-duplicate pairs); the first of each duplicate group is kept."""
    pairs = find_near_duplicates(themes, threshold)
    dropped = {p["b"] for p in pairs}
    return [t for i, t in enumerate(themes) if i not in dropped], pairs
