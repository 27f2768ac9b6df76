"""Template filters the console pages share: status colours, percentages, short numbers."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import inflect
from django import template

from aw_site import labels

register = template.Library()
_INFLECT = inflect.engine()

STATUS_TONES = {
    "verified": "good",
    "succeeded": "good",
    "done": "good",
    "approved": "good",
    "applied": "good",
    "success": "good",
    "answer": "good",
    "failed": "bad",
    "rejected": "bad",
    "policy_error": "bad",
    "format_error": "bad",
    "step_budget": "warn",
    "retired": "muted",
    "draft": "muted",
    "queued": "muted",
    "pending": "warn",
    "awaiting_approval": "warn",
    "retrying": "warn",
}


@register.filter
def tone(status: Any) -> str:
    """A CSS tone (good, bad, warn, muted, busy) for a status word."""
    return STATUS_TONES.get(str(status), "busy")


@register.filter
def percent(value: Any, digits: int = 0) -> str:
    try:
        return f"{float(value) * 100:.{int(digits)}f}%"
    except (TypeError, ValueError):
        return "–"


@register.filter
def score(value: Any) -> str:
    try:
        return f"{float(value):.2f}"
    except (TypeError, ValueError):
        return "–"


@register.filter
def compact(value: Any) -> str:
    """12345 -> 12.3k."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "–"
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= size:
            return f"{number / size:.1f}{suffix}"
    return f"{number:.0f}" if number == int(number) else f"{number:.2f}"


@register.filter
def counted(value: Any, noun: str) -> str:
    """A count with its noun in the right number: 1|counted:"table" -> "1 table", 3 -> "3 tables",
    1234 -> "1,234 tables". Only the last word inflects ("gold step" -> "gold steps"); a missing
    count reads "– tables"."""
    head, _, word = str(noun).rpartition(" ")
    try:
        number = float(value)
    except (TypeError, ValueError):
        return f"– {_INFLECT.plural_noun(noun)}"
    shown = f"{int(number):,}" if number == int(number) else f"{number:,.2f}"
    inflected = word if number == 1 else _INFLECT.plural_noun(word)
    return f"{shown} {head + ' ' if head else ''}{inflected}"


@register.filter
def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@register.filter
def humanize_label(value: Any) -> str:
    """The older name of ``words``: the same words for an internal name."""
    return labels.in_words(value)


@register.filter
def words(value: Any) -> str:
    """An internal name (error label, fault kind, audit check, phase, state) in words."""
    return labels.in_words(value)


@register.filter
def value_words(value: Any) -> str:
    """A stored value (a dict, a list, a path) written as text, not as JSON or a repr."""
    return labels.value_in_words(value)


@register.filter
def facts(value: Any) -> list[tuple[str, str]]:
    """A stored mapping as (plain name, value in words) rows for a table."""
    return labels.facts_in_words(value)


@cache
def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@register.filter
def queue_words(queue: Any) -> str:
    """The queue a job ran on, in words; the training queue says whether a GPU serves it."""
    return labels.queue_in_words(str(queue), has_gpu=_has_gpu())


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.simple_tag(takes_context=True)
def nav_active(context, names: str) -> str:
    """'active' when the current URL name is one of the comma-separated names."""
    match = getattr(context.get("request"), "resolver_match", None)
    current = getattr(match, "url_name", "") or ""
    return "active" if current in {n.strip() for n in names.split(",")} else ""


@register.filter
def trail(category: Any) -> str:
    """A category's path from its primary, joined by ' › '."""
    parts = []
    while category is not None:
        parts.append(category.name)
        category = category.parent
    return " › ".join(reversed(parts))
