"""The directory's own category words mapped into our 20 primary / 50 secondary taxonomy.

APIs.guru files each document under a few words (`info.x-apisguru-categories`: cloud, media,
open_data, ...). Each word names the secondaries it can mean, most likely first
(`DIRECTORY_CATEGORIES`, data). The document's title, description, tags and operations are then
scored with the theme classifier's keywords (classify.secondary_scores): a candidate of the
directory's words gets `CANDIDATE_WEIGHT` on top of its keyword score, so the words decide
between candidates (a `media` API about songs is Music & Audio, one about films Movies & TV),
and a document whose own words point clearly elsewhere (an `open_data` weather service) still
lands where they point. No word and no keyword: the neutral fallback of the classifier.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from environments.discovery.classify import FALLBACK, secondary_scores, tertiary_topic
from environments.discovery.taxonomy import primary_of

# directory category word -> secondaries it can mean, most likely first
DIRECTORY_CATEGORIES: dict[str, tuple[str, ...]] = {
    "cloud": ("Code & DevOps", "Web Standards & Protocols", "Documents & Notes"),
    "hosting": ("Code & DevOps", "Web Standards & Protocols"),
    "backend": ("Code & DevOps", "Web Standards & Protocols"),
    "storage": ("Documents & Notes", "Code & DevOps"),
    "developer_tools": ("Code & DevOps", "Web Standards & Protocols", "Data Formats & Encodings"),
    "tools": ("Web Standards & Protocols", "Data Formats & Encodings", "Code & DevOps"),
    "monitoring": ("Code & DevOps", "Threat Intelligence"),
    "machine_learning": ("Data Formats & Encodings", "Code & DevOps"),
    "text": ("Languages & Scripts", "Data Formats & Encodings", "Documents & Notes"),
    "media": ("Movies & TV", "Music & Audio", "Social Media", "Documents & Notes"),
    "entertainment": ("Movies & TV", "Games", "Music & Audio", "Team Sports"),
    "open_data": (
        "Encyclopedic Data",
        "Public Administration",
        "Countries & Regions",
        "Weather & Climate",
        "Rail & Public Transit",
        "Biology & Ecology",
    ),
    "analytics": ("CRM & Sales", "Stock Markets & Investing", "Encyclopedic Data"),
    "ecommerce": ("Orders & Shopping", "Products & Inventory"),
    "financial": ("Banking & Payments", "Stock Markets & Investing", "Currencies & Exchange"),
    "payment": ("Banking & Payments", "Currencies & Exchange"),
    "messaging": ("Email & Chat", "Social Media"),
    "email": ("Email & Chat",),
    "telecom": ("Email & Chat", "Web Standards & Protocols"),
    "social": ("Social Media", "Email & Chat"),
    "collaboration": ("Project & Task Management", "Documents & Notes", "Calendars & Scheduling"),
    "project_management": ("Project & Task Management",),
    "time_management": ("Calendars & Scheduling", "Time Zones & Dates"),
    "forms": ("Documents & Notes",),
    "location": ("Maps & Geocoding", "Cities & Populations", "Countries & Regions"),
    "transport": ("Rail & Public Transit", "Flights & Airports", "Driving & Fleet"),
    "iot": ("Energy & Utilities", "Driving & Fleet"),
    "security": ("Authentication & Access", "Threat Intelligence"),
    "enterprise": ("CRM & Sales", "Jobs & Labour Statistics", "Project & Task Management"),
    "customer_relation": ("CRM & Sales",),
    "marketing": ("CRM & Sales", "Social Media", "Email & Chat"),
    "support": ("CRM & Sales", "Project & Task Management"),
    "search": ("Encyclopedic Data", "Web Standards & Protocols"),
    "education": ("Courses & Learning", "Languages & Scripts"),
}
CANDIDATE_WEIGHT = 3.0  # what the directory's word adds to its candidates' keyword scores


@dataclass(frozen=True)
class DirectoryCategory:
    """The chosen category and why: the directory's words and the keywords that matched."""

    primary: str
    secondary: str
    tertiary: str
    reason: str

    def as_path(self) -> str:
        return f"{self.primary}/{self.secondary}/{self.tertiary}".rstrip("/")

    @classmethod
    def from_path(cls, path: str) -> DirectoryCategory:
        """Back from `as_path` (primary and secondary names hold no "/"; a tertiary may)."""
        primary, secondary, tertiary = ([*path.split("/", 2), "", ""])[:3]
        return cls(primary, secondary, tertiary, reason="recorded on the ledger item")

    def as_dict(self) -> dict[str, str]:
        """As a build request takes it (a tertiary may hold "/": "Import/Export")."""
        return {"primary": self.primary, "secondary": self.secondary, "tertiary": self.tertiary}


def directory_words(document: dict[str, Any]) -> list[str]:
    """The document's `x-apisguru-categories`, lower-case (a lone string is one word)."""
    info = document.get("info") if isinstance(document.get("info"), dict) else {}
    words = info.get("x-apisguru-categories") or document.get("x-apisguru-categories") or []
    if isinstance(words, str):
        words = [words]
    if not isinstance(words, list):
        return []
    return [str(w).strip().lower() for w in words if str(w).strip()]


def tag_text(document: dict[str, Any]) -> str:
    """The document's tags, names and descriptions, as words for the classifier."""
    tags = document.get("tags") if isinstance(document.get("tags"), list) else []
    return " ".join(
        f"{tag.get('name', '')} {tag.get('description', '')}"
        for tag in tags
        if isinstance(tag, dict)
    )


def candidates(words: Iterable[str]) -> list[str]:
    """The secondaries the directory's words can mean, in the order the words give them."""
    chosen: list[str] = []
    for word in words:
        for secondary in DIRECTORY_CATEGORIES.get(word, ()):
            if secondary not in chosen:
                chosen.append(secondary)
    return chosen


def directory_category(document: dict[str, Any], theme: dict[str, Any]) -> DirectoryCategory:
    """The taxonomy path of one directory document, parsed as `theme`."""
    words = directory_words(document)
    listed = candidates(words)
    raw = theme.get("raw_spec") if isinstance(theme.get("raw_spec"), dict) else {}
    server = raw.get("server") if isinstance(raw.get("server"), dict) else {}
    description = theme.get("description") or server.get("instructions") or ""
    scored_theme = {  # an imported MCP server keeps its tools and words in raw_spec
        **theme,
        "description": f"{description} {tag_text(document)}",
        "tools": theme.get("tools") or raw.get("tools") or [],
    }
    best: tuple[float, str, set[str]] | None = None
    for score, secondary, matched in secondary_scores(scored_theme):
        if secondary in listed:
            # earlier candidates win ties: the word's most likely meaning
            score += CANDIDATE_WEIGHT + 0.01 * (len(listed) - listed.index(secondary))
        if score > 0 and (best is None or score > best[0]):
            best = (score, secondary, matched)
    if best is None:
        secondary = FALLBACK[1]
        reason = "no directory category and no keyword matched"
    else:
        _, secondary, matched = best
        from_words = [w for w in words if secondary in DIRECTORY_CATEGORIES.get(w, ())]
        parts = []
        if from_words:
            parts.append(f"directory category {', '.join(from_words)}")
        if matched:
            parts.append(f"keywords {', '.join(sorted(matched))}")
        reason = "; ".join(parts)
    return DirectoryCategory(primary_of(secondary), secondary, tertiary_topic(theme), reason)
