"""One directory document read and turned into the theme(s) its environments are built from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.discovery.themes import ThemeError, parse_theme_document

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024  # the directory's largest document is about 30 MB


def read_document(path: Path, key: str) -> dict[str, Any]:
    """The JSON document at `path`; a ThemeError naming the key when it cannot be one."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise ThemeError(f"{key}: {size} bytes, more than {MAX_DOCUMENT_BYTES} a document may")
        document = json.loads(path.read_bytes())
    except OSError as exc:
        raise ThemeError(f"{key}: cannot read the file ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ThemeError(f"{key}: not valid JSON ({exc})") from exc
    if not isinstance(document, dict):
        raise ThemeError(f"{key}: a document must be a JSON object, not {type(document).__name__}")
    return document


def document_themes(document: dict[str, Any], label: str) -> list[dict[str, Any]]:
    """The themes one document becomes, each built as its own environment.

    Today one theme per document. This is where a big document is split into parts of one
    theme family (environments.discovery.theme_split.split_theme(theme, max_tools)) once that
    lands: return its parts instead of [theme]. Each part needs a distinct `name`."""
    theme = parse_theme_document(document, label)
    return [theme]
