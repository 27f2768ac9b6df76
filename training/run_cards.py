"""The eight metric cards of a training run page, each filled from the rows the trainer stored.

A run stores one `TrainingMetric` row per log: SFT steps (`sft_step`: loss), GRPO logs (`grpo`:
reward_mean, kl, tokens_per_s, ...), and one row per finished phase (`gold`, `eval_before`,
`sft`, `eval_after_sft`, `eval_after`: the phase's summary). No single row holds every card's
value (the last row of a run without GRPO is an SFT step: a loss and nothing else), so each card
takes the newest row that has its value, in the phases that measure it, falling back to the
run's summary; and it says where the value came from, or why there is none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from training.models import TrainingMetric, TrainingRun

PHASE_NAMES = {
    "grpo": "GRPO",
    "sft": "SFT warm-up",
    "sft_step": "SFT",
    "gold": "gold runs",
    "eval_before": "held-out, before training",
    "eval_after_sft": "held-out, after SFT",
    "eval_after": "held-out, after training",
}

Reading = Callable[[dict[str, Any]], Any]


def _key(name: str) -> Reading:
    return lambda values: values.get(name)


def _per_episode(name: str) -> Reading:
    """An evaluation's total (tool calls) over its episodes."""

    def read(values: dict[str, Any]) -> Any:
        total, episodes = values.get(name), values.get("episodes")
        if isinstance(total, int | float) and isinstance(episodes, int | float) and episodes:
            return total / episodes
        return None

    return read


def _finished_share(reason: str) -> Reading:
    """Share of an evaluation's episodes that ended for ``reason`` (token_budget, ...)."""

    def read(values: dict[str, Any]) -> Any:
        finished, episodes = values.get("finished"), values.get("episodes")
        if isinstance(finished, dict) and isinstance(episodes, int | float) and episodes:
            return float(finished.get(reason, 0)) / episodes
        return None

    return read


@dataclass(frozen=True)
class CardSpec:
    """One card: where its value may come from, newest-first within the preferred phase."""

    name: str  # the data-card attribute and the key tests look for
    label: str
    unit: str  # score | percent | compact
    sources: tuple[tuple[str, Reading], ...]  # (phase, reading), most wanted first
    summary: tuple[tuple[str, str], ...] = ()  # (summary section, key) when no row has it
    missing: str = "not measured in this run"


POLICY_PHASES = ("grpo", "eval_after", "eval_after_sft", "eval_before")

CARDS = (
    CardSpec(
        "reward_mean",
        "reward mean",
        "score",
        tuple((p, _key("reward_mean")) for p in POLICY_PHASES),
        (("eval_after", "reward_mean"),),
    ),
    CardSpec(
        "success_rate",
        "success rate",
        "percent",
        tuple((p, _key("success_rate")) for p in POLICY_PHASES),
        (("eval_after", "success_rate"),),
    ),
    CardSpec(
        "kl",
        "KL to the base policy",
        "score",
        (("grpo", _key("kl")),),
        missing="no GRPO phase in this run",
    ),
    CardSpec(
        "tokens_per_s",
        "tokens / s",
        "compact",
        (("grpo", _key("tokens_per_s")), ("sft", _key("tokens_per_s"))),
        (("sft", "tokens_per_s"),),
    ),
    CardSpec(
        "frac_reward_zero_std",
        "groups with zero reward variance",
        "percent",
        (("grpo", _key("frac_reward_zero_std")),),
        missing="no GRPO phase in this run",
    ),
    CardSpec(
        "tool_calls",
        "tool calls per episode",
        "score",
        (
            ("grpo", _key("tools/call_frequency")),
            *((p, _per_episode("tool_calls")) for p in POLICY_PHASES[1:]),
        ),
    ),
    CardSpec(
        "unlearnable_tasks",
        "tasks dropped as unlearnable",
        "compact",
        (("grpo", _key("learnability/unlearnable_tasks")),),
        (("grpo", "unlearnable_tasks"),),
        missing="no GRPO phase in this run",
    ),
    CardSpec(
        "token_budget_ended",
        "episodes ended by the token budget",
        "percent",
        (
            ("grpo", _key("episodes/token_budget_ended")),
            *((p, _finished_share("token_budget")) for p in POLICY_PHASES[1:]),
        ),
    ),
)


@dataclass(frozen=True)
class Card:
    name: str
    label: str
    unit: str
    value: float | None
    source: str  # "GRPO step 12", "held-out, after training", "run summary: sft", or why none


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _source(phase: str, step: int) -> str:
    name = PHASE_NAMES.get(phase, phase)
    return f"{name} step {step}" if phase in ("grpo", "sft_step") else name


def run_cards(run: TrainingRun) -> list[Card]:
    """The cards of ``run``, from its metric rows in the order they were stored."""
    rows = (
        TrainingMetric.objects.filter(run=run).order_by("id").values_list("phase", "step", "values")
    )
    newest: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for phase, step, values in rows:
        if isinstance(values, dict):
            newest.setdefault(phase, []).append((step, values))
    summary = run.summary if isinstance(run.summary, dict) else {}
    cards = []
    for spec in CARDS:
        value, source = None, ""
        for phase, read in spec.sources:
            for step, values in reversed(newest.get(phase, [])):
                value = _number(read(values))
                if value is not None:
                    source = _source(phase, step)
                    break
            if value is not None:
                break
        if value is None:
            for section, key in spec.summary:
                part = summary.get(section)
                value = _number(part.get(key)) if isinstance(part, dict) else None
                if value is not None:
                    source = f"run summary, {PHASE_NAMES.get(section, section)}"
                    break
        if value is None:
            live = run.status in (TrainingRun.Status.QUEUED, TrainingRun.Status.RUNNING)
            source = "not measured yet" if live else spec.missing
        cards.append(Card(spec.name, spec.label, spec.unit, value, source))
    return cards
