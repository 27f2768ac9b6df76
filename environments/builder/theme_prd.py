"""The entities a PRD (product requirement document, markdown) describes under its headings.

A heading under an entities / data-model section names an entity; a table
`| field | type | description |` or bullets `- field (type): description` below it give its
fields (type words, "key", "required", "one of a | b", "ref <entity>"). A PRD's features carry
no parameter schema: `theme_plans` derives theirs from the entity and the operation.
"""

from __future__ import annotations

import re

from .theme_model import EntitySpec, FieldSpec, ThemeModel, entity_name

_PRD_ENTITY_SECTIONS = ("entit", "data", "model", "object", "resource", "schema", "record")
_TYPE_WORDS = {
    "int": "integer",
    "integer": "integer",
    "number": "number",
    "float": "number",
    "decimal": "number",
    "money": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "date": "date",
    "datetime": "datetime",
    "timestamp": "datetime",
    "text": "string",
    "string": "string",
    "list": "array",
    "array": "array",
}


def prd_entities(model: ThemeModel, markdown: str) -> None:
    """Entities from a PRD: a heading under an entities/data-model section names an entity;
    a markdown table or bullet list below it gives its fields."""
    section, current = "", None
    header: list[str] = []
    for raw_line in markdown.splitlines():
        line = raw_line.strip()
        level = len(line) - len(line.lstrip("#"))
        if level:
            title = line.lstrip("#").strip()
            if level <= 2:
                section, current = title.lower(), None
                continue
            if any(w in section for w in _PRD_ENTITY_SECTIONS):
                current = model.entity(entity_name(title))
                current.origins.append(f"PRD heading '{title}'")
                header = []
            continue
        if current is None:
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not header:
                header = [c.lower() for c in cells]
                continue
            if all(set(c) <= set("-: ") for c in cells):
                continue
            row = dict(zip(header, cells, strict=False))
            name = row.get("field") or row.get("name") or row.get("column") or cells[0]
            _prd_field(current, name, row.get("type", ""), row.get("description", ""))
        elif line.startswith(("- ", "* ")):
            match = re.match(r"[-*]\s+`?([A-Za-z_][\w]*)`?\s*(\(([^)]*)\))?\s*:?\s*(.*)", line)
            if match:
                _prd_field(current, match.group(1), match.group(3) or "", match.group(4))


def _prd_field(entity: EntitySpec, name: str, type_text: str, description: str) -> None:
    name = name.strip("` ")
    if not re.match(r"^[A-Za-z_]\w*$", name):
        return
    spec = FieldSpec(name=name, description=description.strip()[:300])
    head, found, values = type_text.lower().partition("one of")
    if found:
        spec.enum = [
            v.strip(" '\"`.") for v in re.split(r"[|,/]| or ", values) if v.strip(" '\"`.")
        ]
        type_text = head
    tokens = [t.strip().lower() for t in re.split(r"[,;/]", type_text) if t.strip()]
    for token in tokens:
        first = token.split()[0] if token.split() else token
        if first in _TYPE_WORDS:
            spec.type = _TYPE_WORDS[first]
        elif token in ("key", "primary key", "id"):
            entity.key = name
        elif token in ("required", "not null"):
            spec.required = True
        elif token.startswith(("one of", "enum")):
            values = token.split(" ", 2)[-1] if token.startswith("one of") else token[4:]
            spec.enum = [v.strip(" '\"") for v in re.split(r"[|]", values) if v.strip(" '\"")]
        elif token.startswith(("ref ", "references ", "-> ")):
            spec.ref = entity_name(token.split()[-1])
        elif first == "email":
            spec.format = "email"
    if spec.type == "array":
        spec.items = "string"
    entity.add(spec)
