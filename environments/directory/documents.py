"""One directory document read and turned into the theme(s) its environments are built from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.discovery.theme_split import split_theme
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
    """The themes one document becomes, each built as its own environment: the document's own
    theme, or, past AW_THEME_MAX_TOOLS operations, the parts of one theme family (each with its
    own name, its operations and the schemas they reference)."""
    return split_theme(parse_theme_document(document, label))
