"""Reading a theme into a ThemeModel, offline (no LLM): the entry of a theme build's ingest.

`read_theme` reads the database schema (OpenAPI `components/schemas` in `theme_openapi`, the
entities a PRD describes in `theme_prd`, the tools' own object schemas) and one plan per theme
tool (`theme_plans`), then drops entities no plan uses and gives every entity a key.
`theme_tools` lists the theme's tools as a client of its server or API sees them.
"""

from __future__ import annotations

from environments.tool_names import function_names, renamed_note

from .theme_model import ThemeModel
from .theme_openapi import openapi_entities, response_entity, response_schema
from .theme_plans import ToolReader, choose_key
from .theme_prd import prd_entities
from .theme_schemas import checkable_schema, readable_schema


def theme_tools(theme: dict) -> list[dict]:
    """The theme's tools as {name, description, parameters, annotations, outputSchema, http},
    each named as a client can call it (`tool_names`); a renamed tool keeps `original_name`
    and its description says the original."""
    tools = _listed_tools(theme)
    names = function_names([str(t.get("name", "")) for t in tools])
    for tool, name in zip(tools, names, strict=True):
        original = str(tool.get("name", ""))
        if name != original:
            tool["original_name"] = original
            note = renamed_note(original)
            tool["description"] = f"{tool.get('description') or ''} {note}".strip()
            tool["name"] = name
        if isinstance(tool.get("parameters"), dict):
            notes: list[str] = []
            checkable = checkable_schema(tool["parameters"], notes)
            readable = readable_schema(checkable, notes)
            if readable is None:  # the planner refuses this tool alone, saying why
                tool["unreadable_parameters"] = True
            tool["parameters"] = readable if readable is not None else checkable
            if notes:
                tool["notes"] = [*(tool.get("notes") or []), *notes]
                tool["description"] = f"{tool.get('description') or ''} (Note: {'; '.join(notes)}.)"
    return tools


def _listed_tools(theme: dict) -> list[dict]:
    raw = theme.get("raw_spec")
    kind = theme.get("source_kind", "")
    if kind == "mcp_spec" and isinstance(raw, dict):
        doc = raw.get("result", raw)
        if isinstance(doc, dict) and isinstance(doc.get("tools"), list):
            return [
                {
                    "name": t.get("name", ""),
                    "description": t.get("description", "") or "",
                    "parameters": t.get("inputSchema") or {"type": "object", "properties": {}},
                    "annotations": t.get("annotations") or {},
                    "outputSchema": t.get("outputSchema") or {},
                }
                for t in doc["tools"]
                if isinstance(t, dict)
            ]
    return [dict(t) for t in theme.get("tools") or [] if isinstance(t, dict)]


def read_theme(theme: dict) -> ThemeModel:
    """The entities and one plan per tool of a theme dict (as stored on a Theme row)."""
    kind = theme.get("source_kind", "")
    raw = theme.get("raw_spec")
    model = ThemeModel(theme.get("title") or theme.get("name") or "theme", kind=kind)
    tools = theme_tools(theme)
    if kind == "tool_doc" and isinstance(raw, dict) and "openapi" in raw:
        model.document = raw
        openapi_entities(model, raw)
        for tool in tools:
            if isinstance(tool.get("http"), dict) and not tool.get("outputSchema"):
                tool["response_schema"] = response_schema(raw, tool["http"])
                tool["response_entity"] = response_entity(raw, tool["http"])
    if kind == "prd":
        text = raw if isinstance(raw, str) else (raw or {}).get("markdown", "")
        prd_entities(model, text or "")
        tools = [dict(t) for t in tools]
    reader = ToolReader(model, tools)
    reader.read()
    _prune(model)
    for entity in model.entities.values():
        choose_key(entity)
        key = entity.fields[entity.key]
        if key.ref and key.ref != entity.name:
            key.ref = ""  # a key is the row's own identity: never drawn from another table
    return model


def _prune(model: ThemeModel) -> None:
    """Entities no tool plan uses (and none references) are dropped; references to unknown
    entities are cleared."""
    used = {p.entity for p in model.plans if p.entity}
    for plan in model.plans:
        for prop in (plan.output or {}).get("multi", {}).values():
            used.add(prop)
    changed = True
    while changed:
        changed = False
        for name in list(used):
            entity = model.entities.get(name)
            if entity is None:
                continue
            for spec in entity.fields.values():
                for ref in (spec.ref, spec.object_ref):
                    if ref and ref in model.entities and ref not in used:
                        used.add(ref)
                        changed = True
    if not used and model.entities:
        used = set(model.entities)
    for name in list(model.entities):
        if name not in used:
            del model.entities[name]
    for entity in model.entities.values():
        for spec in entity.fields.values():
            if spec.ref and spec.ref not in model.entities:
                spec.ref = ""
            if spec.object_ref and spec.object_ref not in model.entities:
                spec.object_ref = ""
