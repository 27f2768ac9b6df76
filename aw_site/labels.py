"""Internal names in words, in one place: what a page shows for a label, a fault, a step, a queue.

The code names things in snake_case (``dropped_write``, ``eval_after``, ``invalid_tool_call``);
a reader sees "dropped write", "held-out, after training", "invalid tool call". Pages ask
``in_words`` (the template filter ``words``); a name not listed reads with its underscores turned
into spaces. ``value_in_words`` writes a stored value (a dict, a list) as text, never as a repr.
"""

from __future__ import annotations

import json
from typing import Any

from aw_site.metric_names import plain_metric_name

NAMES = {
    # training phases and the round steps that run them
    "eval_before": "held-out, before training",
    "eval_after_sft": "held-out, after SFT",
    "eval_after": "held-out, after training",
    "sft_step": "SFT step",
    "sft": "SFT warm-up",
    "grpo": "GRPO",
    # verifier audit checks
    "no_op": "no-op run",
    "given_answer": "answer given in the instruction",
    # round states
    "awaiting_approval": "awaiting approval",
    # error labels the diagnosis gives
    "step_budget_exhausted": "step budget exhausted",
    "repeated_call_loop": "repeated call loop",
}
QUEUE_NAMES = {"default": "general", "sandbox": "sandbox", "gpu": "training"}


def in_words(name: Any) -> str:
    """An internal name as a reader reads it."""
    text = str(name)
    return NAMES.get(text, text.replace("_", " "))


def queue_in_words(queue: str, *, has_gpu: bool) -> str:
    """The queue a job ran on; a training queue served by a CPU-only machine says so."""
    words = QUEUE_NAMES.get(queue, in_words(queue))
    if queue == "gpu":
        return f"{words} ({'GPU' if has_gpu else 'CPU'})"
    return words


def is_server_path(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("/") and "/" in value[1:]


def value_in_words(value: Any) -> str:
    """A stored value as text: ``{"code": "A-1"}`` -> ``code A-1``, a list joined by commas, a
    server path by its last part (the full path is for reviewers, in the raw data)."""
    if isinstance(value, dict):
        return "; ".join(
            f"{plain_metric_name(str(k))} {value_in_words(v)}" for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return ", ".join(value_in_words(v) for v in value) or "none"
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if is_server_path(value):
        return f"…/{value.rstrip('/').rsplit('/', 1)[-1]}"
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return value_in_words(json.loads(value))
        except ValueError:
            return value
    return str(value)


def facts_in_words(data: Any) -> list[tuple[str, str]]:
    """A stored mapping as rows of a table: (plain name, value in words); nested mappings give
    one row per inner key, named "outer: inner"."""
    if not isinstance(data, dict):
        return [("value", value_in_words(data))] if data not in (None, "", [], {}) else []
    rows = []
    for key, value in data.items():
        name = in_words(key) if key in NAMES else plain_metric_name(str(key))
        if isinstance(value, dict) and value:
            rows.extend((f"{name}: {inner}", shown) for inner, shown in facts_in_words(value))
        else:
            rows.append((name, value_in_words(value)))
    return rows
