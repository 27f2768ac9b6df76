"""The starter catalogue's package directories for a benchmark: reused or built afresh."""

from __future__ import annotations

import tempfile
from pathlib import Path


def starter_packages(packages: str = "", only: list[str] | None = None) -> list[Path]:
    """``v1`` package directories under ``packages``, or of a catalogue built into a temporary
    directory when it is empty; ``only`` keeps those environment names."""
    only = only or []
    root = Path(packages) if packages else Path(tempfile.mkdtemp()) / "catalogue"
    if not packages:
        from environments.discovery.catalogue import main as build

        root.mkdir(parents=True)
        build(["--out", str(root)] + (["--only", ",".join(only)] if only else []))
    paths = sorted(p / "v1" for p in root.iterdir() if (p / "v1" / "manifest.json").is_file())
    return [p for p in paths if p.parent.name in only] if only else paths
