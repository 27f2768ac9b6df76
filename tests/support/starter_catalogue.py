"""Starter-catalogue environments built at most once per test session, on first request.

Several test modules synthesize tasks on the same starter environments (world_cities, stocks,
airports, ...); building and verifying one costs seconds, so each is built once into a session
directory and handed to every module that asks. A published package is immutable: tests load it
read-only, and an episode works on its own copy of the state.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from environments.discovery.catalogue import (
    STARTER_SPECS,
    CatalogueEntry,
    build_starter_catalogue,
)


class SharedStarterCatalogue:
    """Builds the starter environments asked for under one root, each at most once."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._built: dict[str, CatalogueEntry] = {}

    def entries(self, names: Iterable[str]) -> dict[str, CatalogueEntry]:
        """name -> its catalogue entry (path, verification), building the ones not built yet."""
        names = list(names)
        unknown = set(names) - {spec["name"] for spec in STARTER_SPECS}
        assert not unknown, f"no starter environment named {sorted(unknown)}"
        missing = [spec for spec in STARTER_SPECS if spec["name"] in names]
        missing = [spec for spec in missing if spec["name"] not in self._built]
        if missing:
            for entry in build_starter_catalogue(self.root, workers=1, specs=missing):
                self._built[entry.name] = entry
        return {name: self._built[name] for name in names}

    def paths(self, names: Iterable[str]) -> dict[str, Path]:
        """name -> published package directory; fails, naming the source, if one did not build."""
        entries = self.entries(names)
        failed = {name: e.error or e.report for name, e in entries.items() if not e.path}
        assert not failed, f"starter environments did not build: {failed}"
        return {name: Path(e.path) for name, e in entries.items()}
