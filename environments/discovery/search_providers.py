"""Web search for the research agent, chosen by AW_SEARCH_PROVIDER.

- "none" (default): no search; the agent works from pages it is given and its own knowledge.
- "searxng": a SearxNG instance's JSON API at AW_SEARCH_URL (GET /search?q=...&format=json).
"""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Protocol


@dataclass
class SearchHit:
    title: str
    url: str
    snippet: str


class SearchProvider(Protocol):
    name: str

    def search(self, query: str, limit: int = 5) -> list[SearchHit]: ...


class NoSearch:
    name = "none"

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        return []


class SearxngSearch:
    """A real HTTP provider: SearxNG's JSON output format."""

    name = "searxng"

    def __init__(self, base_url: str, timeout: float = 15.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        url = f"{self.base_url}/search?" + urllib.parse.urlencode({"q": query, "format": "json"})
        with urllib.request.urlopen(url, timeout=self.timeout) as response:  # noqa: S310
            data = json.loads(response.read(2_000_000))
        return [
            SearchHit(r.get("title", ""), r.get("url", ""), r.get("content", ""))
            for r in data.get("results", [])[:limit]
        ]


def search_provider() -> SearchProvider:
    kind = os.environ.get("AW_SEARCH_PROVIDER", "none").strip().lower()
    if kind in ("", "none"):
        return NoSearch()
    if kind == "searxng":
        url = os.environ.get("AW_SEARCH_URL", "").strip()
        if not url:
            raise ValueError("AW_SEARCH_PROVIDER=searxng needs AW_SEARCH_URL")
        return SearxngSearch(url)
    raise ValueError(f"unknown AW_SEARCH_PROVIDER {kind!r} (none, searxng)")
