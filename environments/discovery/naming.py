"""English names for tables, entities and tools: `orders` -> order / orders, `people` -> person.

Table names come from data files and SQL dumps, singular or plural, snake_case. Only the last
word of a snake_case name is inflected (`order_items` -> `order_item`). `inflect` does the
English (irregular plurals included); a few guards keep it from mangling words it would
otherwise misread as plurals: Latin and Greek singulars ending in -us, -is, -ss (`status`,
`bus`, `iris`, `chassis`), a handful of -as singulars (`gas`, `atlas`), acronyms without a vowel
(`dns`), and uncountable nouns (`data`, `equipment`, `species`), which keep one form.
`plural` always pluralises the singular, so an already plural name never doubles
("orderses", "addresss").
"""

from __future__ import annotations

import re
from functools import lru_cache

import inflect

_ENGINE = inflect.engine()

UNCOUNTABLE = frozenset(
    {
        "data",
        "metadata",
        "information",
        "equipment",
        "news",
        "media",
        "software",
        "hardware",
        "feedback",
        "staff",
        "weather",
        "series",
        "species",
        "traffic",
        "evidence",
        "research",
        "advice",
        "furniture",
        "luggage",
        "baggage",
        "mail",
        "music",
        "sheep",
        "fish",
        "deer",
        "aircraft",
    }
)
_IRREGULAR_SINGULAR = {
    "indices": "index",
    "vertices": "vertex",
    "matrices": "matrix",
    "appendices": "appendix",
    "apices": "apex",
}
_PLURAL_LOOKALIKES = frozenset(  # plurals that end like Latin singulars
    {"menus", "gurus", "emus", "haikus", "tutus", "taxis", "skis", "kiwis", "wikis", "emojis"}
    # acronyms' plurals: Azure's `apis` were "the apiss", read as a singular like "analysis"
    | {"apis", "uris", "guis", "cpus", "gpus", "vcpus", "skus", "pdus"}
)
_AS_SINGULARS = frozenset(
    {"gas", "atlas", "canvas", "alias", "bias", "pancreas", "christmas", "texas", "kansas"}
)


# Nouns ending in -ch said /k/ take a plain -s (monarchs, epochs), which inflect, reading the
# -ch as in church, gets wrong for the ones it does not list.
_HARD_CH = ("narch", "iarch", "garch", "xarch", "rarch", "emarch", "epoch", "eunuch", "loch")
_HARD_CH += ("tech", "triptych", "czech", "psych", "stomach")


def _split(name: str) -> tuple[str, str]:
    head, sep, last = name.rpartition("_")
    return head + sep, last


@lru_cache(maxsize=4096)
def singular(name: str) -> str:
    """The singular of a (snake_case) table name: orders -> order, addresses -> address."""
    head, word = _split(name)
    lower = word.lower()
    if not lower or lower in UNCOUNTABLE or not any(v in lower for v in "aeiouy"):
        return name
    if lower in _IRREGULAR_SINGULAR:
        return head + _match_case(word, _IRREGULAR_SINGULAR[lower])
    if lower not in _PLURAL_LOOKALIKES and (
        lower.endswith(("ss", "us", "is")) or lower in _AS_SINGULARS
    ):
        return name
    found = _ENGINE.singular_noun(word)
    if not found or len(found) < 2:
        return name
    return head + found


@lru_cache(maxsize=4096)
def plural(name: str) -> str:
    """The plural of a (snake_case) name, singular or not: order -> orders, person -> people."""
    base = singular(name)
    head, word = _split(base)
    if not word or word.lower() in UNCOUNTABLE or not any(v in word.lower() for v in "aeiouy"):
        return base
    if word.lower().endswith(_HARD_CH):
        return head + word + ("S" if word.isupper() else "s")
    if word[:1].isupper():  # inflect reads a capital as a proper name: Currency -> Currencys
        cut = 0 if word.isupper() else max(i for i, ch in enumerate(word) if ch.isupper())
        lead, last = word[:cut], word[cut:]  # CamelCase: NationLanguage -> Nation, Language
        found = _ENGINE.plural_noun(last.lower())
        return head + lead + (found.upper() if last.isupper() else last[:1] + found[1:])
    return head + _ENGINE.plural_noun(word)


def _match_case(original: str, word: str) -> str:
    return word.capitalize() if original[:1].isupper() else word


# Word boundaries inside camel case: after a lower-case run of two or more letters or a digit
# ("invoiceId", "v4Address"; "eMail" and "iPhone" stay one word), and between an acronym and a
# capitalised word of two or more letters ("HTTPStatus"; "URLs" and "IPv4" stay one word).
_CAMEL_WORD = re.compile(r"([a-z]{2,}|[0-9])([A-Z])")
_ACRONYM_WORD = re.compile(r"([A-Z]+)([A-Z][a-z]{2,})")


def split_camel(name: str, sep: str = " ") -> str:
    """``name`` with ``sep`` at each camel-case word boundary: InvoiceLineId -> Invoice Line Id."""
    return _ACRONYM_WORD.sub(rf"\1{sep}\2", _CAMEL_WORD.sub(rf"\1{sep}\2", str(name)))


def squashed(name: str) -> str:
    """A name without case or separators (`starting_after`, `StartingAfter` -> startingafter),
    so the spellings of one name compare equal."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def with_article(words: str) -> str:
    """'a' or 'an' by the sound of the first word (inflect): an order item, a user, an hour."""
    return _ENGINE.a(words) if words else words


@lru_cache(maxsize=4096)
def words_of(name: str) -> str:
    """A table or column name as words for a sentence: order_items -> order items,
    ContinentCode -> continent code, AreaKm2 -> area km2; acronyms keep their capitals."""
    spaced = split_camel(name.replace("_", " "))
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in spaced.split())


def is_serial_name(column: str) -> bool:
    """``id``, ``track_id``, ``CustomerId``: a column named as a row's serial number."""
    lower = column.lower()
    return lower == "id" or lower.endswith("_id") or (column.endswith("Id") and len(column) > 2)
