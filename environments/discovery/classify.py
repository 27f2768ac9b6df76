"""Classify a theme into the taxonomy: (primary, secondary, tertiary).

Offline: keyword scoring of the theme's name, title, description and tool names against each
secondary category's keywords (title words count double). A database's theme also carries its
tables and their columns (`{"tables": {"invoice_lines": ["invoice_id", ...]}}`): a table whose
head noun (the last word: `invoice_lines` is about lines) is a category's keyword adds 1.5, one
with the keyword elsewhere in its name 0.5 (child tables repeat their parent's name), and each
distinct column word 0.5. Tables are what the data is about, so a music store with tracks,
albums, artists and playlists is music even though it has invoices. A description that only says
where the data came from ("Built from the uploaded file github.csv.") is not evidence: its
words (`file`) would file every upload under Documents & Notes. When nothing matches, the theme
goes to the neutral Encyclopedic Data and its `reason` says that nothing matched. With an LLM configured
(aw_site.llm), the LLM picks among the same categories; an unusable answer falls back offline.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .naming import singular, split_camel
from .taxonomy import TAXONOMY, is_valid, primary_of
from .themes import tokens

FALLBACK = ("Reference & Standards", "Encyclopedic Data")


@dataclass(frozen=True)
class Classification:
    primary: str
    secondary: str
    tertiary: str
    score: float
    method: str  # keywords | llm | fallback
    reason: str = ""  # the words that decided, or that nothing matched

    def as_category(self) -> dict:
        return {"primary": self.primary, "secondary": self.secondary, "tertiary": self.tertiary}


def _stem(word: str) -> str:
    return word.rstrip("s") if len(word) > 3 else word


TABLE_WEIGHT = 1.5  # per table whose head noun is one of a category's keywords
TABLE_OTHER_WEIGHT = 0.5  # per table with such a keyword elsewhere in its name
COLUMN_WEIGHT = 0.5  # per distinct column word among a category's keywords
_WORD = re.compile(r"[A-Za-z]+|[0-9]+")  # within a name split at its camel-case boundaries


def _word_list(name: str) -> list[str]:
    return [_stem(singular(w.lower())) for w in _WORD.findall(split_camel(str(name)))]


def name_words(name: str) -> set[str]:
    """The words of a table or column name, singular and stemmed like the keywords:
    invoice_lines -> {invoice, line}; InvoiceLine -> {invoice, line}; AlbumId -> {album, id}."""
    return set(_word_list(name))


def _table_words(theme: dict) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """Per table, its head noun and its other words; and the database's distinct column words."""
    tables = theme.get("tables") or {}
    per_table = []
    for name in tables:
        words = _word_list(name) or [""]
        per_table.append((words[-1], set(words[:-1])))
    columns = {w for cols in tables.values() for c in cols or () for w in name_words(c)}
    return per_table, columns


def _table_score(tables: list[tuple[str, set[str]]], keys: set[str]) -> float:
    return sum(
        TABLE_WEIGHT if head in keys else TABLE_OTHER_WEIGHT if others & keys else 0.0
        for head, others in tables
    )


_PROVENANCE_SENTENCE = re.compile(r"[^.]*\buploaded file\b[^\s]*\s*\S*\.?", re.IGNORECASE)


def topic_description(description: str) -> str:
    """The description without sentences that only say where the data came from."""
    return _PROVENANCE_SENTENCE.sub(" ", description or "")


def tertiary_topic(theme: dict) -> str:
    """A free-form topic: the theme's title, tidied."""
    title = (theme.get("title") or theme.get("name") or "General").replace("_", " ").strip()
    for suffix in (" MCP Server", " MCP server", " API", " Server", " Service"):
        if title.endswith(suffix):
            title = title[: -len(suffix)]
    return title[:80] or "General"


def secondary_scores(theme: dict) -> list[tuple[float, str, set[str]]]:
    """Every secondary category's keyword score for the theme, in taxonomy order, with the
    words that matched: (score, secondary, matched)."""
    title_words = tokens(f"{theme.get('title', '')} {theme.get('name', '')}".replace("_", " "))
    body = f"{topic_description(theme.get('description', ''))} " + " ".join(
        f"{t.get('name', '').replace('_', ' ')} {t.get('description', '')}"
        for t in theme.get("tools", [])
    )
    body_words = tokens(body)
    table_words, column_words = _table_words(theme)
    table_names = {head for head, _ in table_words} | {w for _, o in table_words for w in o}
    scores = []
    for primary in TAXONOMY:
        for secondary in primary.secondaries:
            keys = {_stem(k.lower()) for k in secondary.keywords}
            score = 2.0 * len(keys & title_words) + 1.0 * len(keys & body_words)
            score += _table_score(table_words, keys)
            score += COLUMN_WEIGHT * len(keys & column_words)
            matched = keys & (title_words | body_words | table_names | column_words)
            scores.append((score, secondary.name, matched))
    return scores


def classify_offline(theme: dict) -> Classification:
    """Deterministic keyword scoring; ties break by taxonomy order."""
    best: tuple[float, str, set[str]] = (0.0, FALLBACK[1], set())
    for scored in secondary_scores(theme):
        if scored[0] > best[0]:
            best = scored
    score, secondary, matched = best
    if score > 0:
        method, reason = "keywords", f"matched {', '.join(sorted(matched))}"
    else:
        method = "fallback"
        reason = (
            "no category's keywords matched the name, description, tables or columns; "
            f"filed under the neutral {secondary}"
        )
    return Classification(
        primary_of(secondary), secondary, tertiary_topic(theme), score, method, reason
    )


def classify_with_llm(theme: dict, settings) -> Classification:
    """Ask the LLM to choose; fall back to keywords when it fails or answers off-taxonomy."""
    from aw_site.llm import LLMError, complete_json, report_llm_failure

    options = {p.name: [s.name for s in p.secondaries] for p in TAXONOMY}
    messages = [
        {
            "role": "system",
            "content": "You classify tool-environment themes into a fixed "
            'taxonomy. Answer only JSON: {"primary": ..., "secondary": ..., "tertiary": ...}.',
        },
        {
            "role": "user",
            "content": "Taxonomy (primary -> secondaries):\n"
            + json.dumps(options, indent=1)
            + "\n\nTheme:\n"
            + json.dumps({k: theme.get(k) for k in ("name", "title", "description")})
            + "\nTools: "
            + ", ".join(t.get("name", "") for t in theme.get("tools", [])[:30])
            + "\nTables: "
            + ", ".join(list(theme.get("tables") or {})[:40]),
        },
    ]
    try:
        answer = complete_json(settings, messages)
    except LLMError as exc:
        report_llm_failure(
            f"theme classification of {theme.get('name') or theme.get('title')}", exc
        )
        return classify_offline(theme)
    if not isinstance(answer, dict) or not is_valid(
        answer.get("primary", ""), answer.get("secondary", "")
    ):
        return classify_offline(theme)
    tertiary = str(answer.get("tertiary") or tertiary_topic(theme))[:80]
    return Classification(answer["primary"], answer["secondary"], tertiary, 1.0, "llm")


def classify_theme(theme: dict, settings=None) -> Classification:
    """LLM when settings are given (see aw_site.llm.llm_settings), keywords otherwise."""
    if settings is None:
        return classify_offline(theme)
    return classify_with_llm(theme, settings)
