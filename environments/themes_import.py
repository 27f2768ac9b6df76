"""Storing imported themes: parse each document, split a big API into a family of parts
(`theme_split`), classify each theme, mark near-duplicates."""

from __future__ import annotations

import shlex
from typing import Any

from django.db import transaction

from aw_site.llm import llm_settings
from environments.discovery.classify import classify_theme
from environments.discovery.theme_split import split_theme
from environments.discovery.themes import (
    ThemeError,
    find_near_duplicates,
    normalized_name,
    parse_theme_document,
)
from environments.models import Category, Theme

KIND_ALIASES = {"tool_doc": "tool_doc", "mcp_spec": "mcp_spec", "prd": "prd", "manual": "manual"}


def existing_theme_dicts(limit: int = 2000) -> list[tuple[Theme, dict[str, Any]]]:
    rows = Theme.objects.exclude(source_kind=Theme.SourceKind.DIAGNOSIS).order_by("-created_at")[
        :limit
    ]
    return [
        (
            row,
            {
                "title": row.title,
                "name": row.name,
                "description": row.description,
                "tools": row.raw_spec.get("tools", []),
                "provenance": row.provenance or {},
            },
        )
        for row in rows
    ]


def store_themes(
    ctx, source_kind: str, documents: list[Any], mcp_command: str | None, mcp_url: str | None
) -> dict[str, Any]:
    parsed: list[dict[str, Any]] = []
    errors: list[str] = []
    families: list[dict[str, Any]] = []

    def add(theme: dict[str, Any]) -> None:
        """A theme, or the family of parts a big API splits into (`theme_split`)."""
        parts = split_theme(theme)
        parsed.extend(parts)
        if len(parts) > 1:
            family = parts[0]["provenance"]["family"]
            families.append(
                {
                    "key": family["key"],
                    "title": family["title"],
                    "parts": len(parts),
                    "tools": family["family_tools"],
                }  # fmt: skip
            )

    for index, document in enumerate(documents):
        try:
            theme = parse_theme_document(document, f"document {index}")
            if source_kind != "auto":
                theme["source_kind"] = KIND_ALIASES.get(source_kind, theme["source_kind"])
            add(theme)
        except (ThemeError, KeyError, TypeError, ValueError) as exc:
            errors.append(f"document {index}: {exc}")
    if mcp_command or mcp_url:
        from environments.mcp_import import MCPImportError, import_mcp_server

        try:
            target = mcp_url or shlex.split(mcp_command)
            add(import_mcp_server(target))
        except (MCPImportError, ValueError, OSError) as exc:
            errors.append(f"MCP server {mcp_url or mcp_command}: {exc}")
    split_note = "".join(
        f"; {f['title']} ({f['tools']} tools) split into {f['parts']} parts" for f in families
    )
    ctx.progress(0.3, f"parsed {len(parsed)} theme(s), {len(errors)} error(s){split_note}")

    existing = existing_theme_dicts()
    pool = [theme for _, theme in existing] + parsed
    duplicate_of: dict[int, int] = {}
    for pair in find_near_duplicates(pool):
        if pair["b"] >= len(existing) and pair["b"] not in duplicate_of:
            duplicate_of[pair["b"]] = pair["a"]
    settings = llm_settings()
    created = []
    with transaction.atomic():
        rows: list[Theme] = [row for row, _ in existing]
        for offset, theme in enumerate(parsed):
            position = len(existing) + offset
            classification = classify_theme(theme, settings)
            category = Category.ensure_path(
                classification.primary, classification.secondary, classification.tertiary
            )
            original = duplicate_of.get(position)
            row = Theme.objects.create(
                name=theme.get("name", "")[:200] or f"theme-{position}",
                title=theme.get("title", "")[:300],
                description=theme.get("description", ""),
                source_kind=theme.get("source_kind", Theme.SourceKind.MANUAL),
                raw_spec=theme,
                provenance={**theme.get("provenance", {}), "classified_by": classification.method},
                fingerprint=normalized_name(theme)[:64],
                category=category,
                duplicate_of=rows[original]
                if original is not None and original < len(rows)
                else None,
                created_by=ctx.job.created_by,
            )
            rows.append(row)
            created.append(row.pk)
            ctx.progress(0.3 + 0.7 * (offset + 1) / max(1, len(parsed)), f"stored {row.name}")
    duplicates = sum(
        1 for pk in created if Theme.objects.filter(pk=pk, duplicate_of__isnull=False).exists()
    )
    if errors:
        ctx.log("errors:\n" + "\n".join(errors[:50]))
    return {"created": created, "duplicates": duplicates, "errors": errors, "families": families}


def store_theme(
    theme: dict[str, Any],
    created_by: Any = None,
    category_path: tuple[str, str, str] | None = None,
) -> Theme:
    """One parsed or imported theme, classified and stored (a build's MCP import). A caller
    that knows the category (a directory document's own categories) gives `category_path`
    (primary, secondary, tertiary) and the theme is filed there unclassified."""
    if category_path is not None:
        category = Category.ensure_path(*category_path)
        method = "given"
    else:
        classification = classify_theme(theme, llm_settings())
        category = Category.ensure_path(
            classification.primary, classification.secondary, classification.tertiary
        )
        method = classification.method
    raw = theme.get("raw_spec")
    server = (raw.get("server") if isinstance(raw, dict) else None) or {}
    return Theme.objects.create(
        name=(theme.get("name") or "theme")[:200],
        title=(theme.get("title") or server.get("title") or theme.get("name") or "")[:300],
        description=theme.get("description") or server.get("instructions") or "",
        source_kind=theme.get("source_kind", Theme.SourceKind.MANUAL),
        raw_spec=theme,
        provenance={**theme.get("provenance", {}), "classified_by": method},
        fingerprint=normalized_name(theme)[:64],
        category=category,
        created_by=created_by,
    )


def theme_dict(row: Theme) -> dict[str, Any]:
    """The theme as the build reads it: the stored parse (or import) plus the row's fields."""
    raw = row.raw_spec
    if isinstance(raw, dict) and "source_kind" in raw:
        data = dict(raw)
    else:
        tools = raw.get("tools", []) if isinstance(raw, dict) else []
        data = {"raw_spec": raw, "tools": tools}
    return {
        **data,
        "name": row.name,
        "title": row.title or data.get("title") or row.name,
        "description": row.description or data.get("description", ""),
        "source_kind": row.source_kind,
        "provenance": row.provenance or data.get("provenance", {}),
    }
