"""Real English table and column names (inflect): no "orderses", no "addresss"."""

from __future__ import annotations

from functools import lru_cache

_UNCOUNTABLE = {"data", "metadata", "species", "series", "news", "info", "information", "status",
                "media", "equipment", "feedback", "stock", "inventory", "analytics"}  # fmt: skip


@lru_cache(maxsize=1)
def _engine():
    import inflect

    return inflect.engine()


@lru_cache(maxsize=4096)
def singular(name: str) -> str:
    """`orders` -> `order`, `addresses` -> `address`, `payment_methods` -> `payment_method`."""
    head, _, last = name.rpartition("_")
    if not last or last.lower() in _UNCOUNTABLE or last.isdigit():
        return name
    word = _engine().singular_noun(last)
    if not word:
        return name
    return f"{head}_{word}" if head else word


@lru_cache(maxsize=4096)
def plural(name: str) -> str:
    """`order` -> `orders`, `address` -> `addresses`; a plural stays as it is."""
    head, _, last = name.rpartition("_")
    if not last or last.lower() in _UNCOUNTABLE or last.isdigit():
        return name
    if _engine().singular_noun(last):  # already plural
        return name
    word = _engine().plural_noun(last)
    return f"{head}_{word}" if head else word
