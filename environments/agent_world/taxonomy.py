"""The release's taxonomy (20 / 46 / 245 categories) onto ours (20 primary / 50 secondary).

The release's three levels are kept on the environment as released (manifest `release`). Our
primary follows the release's first level where the two mean the same (the same name, or the
pairs in RELEASE_PRIMARY); our secondary is then the best keyword match within that primary
(environments.discovery.classify), from the release's level names, the environment's name,
description, collections and tools. Where the first level has no counterpart the classifier
chooses among all categories. The release's leaf (L3) becomes our tertiary topic, which is
free-form by design. The reason is kept in words.
"""

from __future__ import annotations

from environments.builder.request import CategoryPath
from environments.discovery.classify import classify_offline, secondary_scores
from environments.discovery.taxonomy import primary_names, primary_of

from .release import ReleaseEnvironment

# The release's first level -> our primary, where they mean the same thing.
RELEASE_PRIMARY = {
    "Finance & Markets": "Finance & Banking",
    "Media & Entertainment": "Entertainment & Media",
    "Social Media & Community": "Communication & Messaging",
    "Software Development": "Software & Developer Tools",
    "Data Storage & Databases": "Software & Developer Tools",
    "Cybersecurity & Network Analysis": "Security & Identity",
    "Academic & Scientific Research": "Science & Research",
    "Document & Design": "Productivity & Office",
}


def map_taxonomy(environment: ReleaseEnvironment) -> tuple[CategoryPath, str]:
    """Our category for a released environment, and why."""
    taxonomy = environment.taxonomy
    theme = {
        "name": environment.name,
        "title": f"{taxonomy.l2} {taxonomy.l3}",
        "description": f"{taxonomy.l1}. {environment.description}",
        "tables": {c.name: _fields(c.data) for c in environment.collections},
        "tools": [{"name": t.name, "description": t.description} for t in environment.tools],
    }
    released = " > ".join(p for p in (taxonomy.l1, taxonomy.l2, taxonomy.l3) if p) or "none"
    tertiary = taxonomy.l3[:120]
    primary = RELEASE_PRIMARY.get(taxonomy.l1) or (
        taxonomy.l1 if taxonomy.l1 in primary_names() else ""
    )
    if primary:
        scored = [s for s in secondary_scores(theme) if primary_of(s[1]) == primary]
        score, secondary, matched = max(scored, key=lambda s: s[0])  # ties: taxonomy order
        words = f"matched {', '.join(sorted(matched))}" if score > 0 else "no keyword matched"
        reason = f"release taxonomy {released}; {taxonomy.l1} is our {primary}; {words}"
        return CategoryPath(primary, secondary, tertiary), reason
    found = classify_offline(theme)
    reason = f"release taxonomy {released}; {found.reason}"
    return CategoryPath(found.primary, found.secondary, tertiary or found.tertiary), reason


def _fields(data: object) -> list[str]:
    """A collection's field names, as the classifier reads a table's columns."""
    row = data[0] if isinstance(data, list) and data else data
    return sorted(str(k) for k in row) if isinstance(row, dict) else []
