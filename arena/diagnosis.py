"""Diagnosis of an arena evaluation: where the policy fails, how, and in which capability.

Input is the evaluated episodes of one round (trajectory, task, reward breakdown, environment
and its category). Every failed episode is labelled with the error taxonomy from executable
evidence (see ``arena.error_taxonomy``); the labels are counted per environment and per
category, and turned into scores for environments, categories and agent capabilities. The
written analysis comes from an LLM grounded in sampled labelled failures when one is configured,
and otherwise from a deterministic summary of the same counts.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.error_taxonomy import (
    CAPABILITIES,
    CAPABILITY_OF_LABEL,
    ERROR_LABELS,
    ErrorLabel,
    label_failure,
    required_tools,
    write_count,
)
from aw_site.labels import in_words
from tasks.reward_breakdown import RewardBreakdown
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Trajectory

_AUTO = object()


@dataclass
class EvaluatedEpisode:
    """One arena episode with everything needed to judge it: the trajectory record, its task,
    and the reward breakdown it earned (a stored one read with ``RewardBreakdown.from_dict``)."""

    trajectory: Trajectory
    task: TaskSpec
    reward: RewardBreakdown
    environment: str
    category: Mapping[str, str] | str = ""
    tool_kinds: Mapping[str, str] = field(default_factory=dict)
    trajectory_id: int | None = None  # the stored trajectory's row, where there is one

    @property
    def task_id(self) -> str:
        return self.trajectory.task_id or self.task.task_id

    @property
    def task_kind(self) -> str:
        return self.task.kind or "unknown"

    @property
    def difficulty(self) -> str:
        return difficulty_bucket(self.task.difficulty)


def category_name(category: Mapping[str, str] | str | None, level: str = "primary") -> str:
    """The category at ``level`` ("primary" or "secondary"), as a readable path."""
    if not category:
        return "uncategorised"
    if isinstance(category, str):
        return category
    primary = category.get("primary") or "uncategorised"
    if level == "primary":
        return primary
    secondary = category.get("secondary")
    return f"{primary} / {secondary}" if secondary else primary


def difficulty_bucket(difficulty: object) -> str:
    """Difficulty as a stable label: numbers rounded, dicts by their level or walk length."""
    if difficulty is None:
        return "unknown"
    if isinstance(difficulty, Mapping):
        for key in ("level", "label", "tier", "walk_length", "score"):
            if difficulty.get(key) is not None:
                return difficulty_bucket(difficulty[key])
        return "unknown"
    if isinstance(difficulty, bool):
        return str(difficulty).lower()
    if isinstance(difficulty, int | float):
        return str(round(difficulty)) if float(difficulty).is_integer() else f"{difficulty:.1f}"
    return str(difficulty)


def is_success(episode: EvaluatedEpisode) -> bool:
    """Solved, as the reward's gate decided (answer and final state right)."""
    return episode.reward.success


@dataclass
class FailureDiagnosis:
    """The labels of one failed episode, with what proposals need to know about its task."""

    task_id: str
    environment: str
    category: Mapping[str, str] | str
    task_kind: str
    difficulty: str
    gold_chain_length: int
    gold_write_count: int
    reward_total: float
    labels: list[ErrorLabel]
    instruction: str = ""
    gold_tools: list[str] = field(default_factory=list)  # what the solution needs
    gold_write_tools: list[str] = field(default_factory=list)  # those of them that write

    @property
    def kinds(self) -> list[str]:
        return [label.kind for label in self.labels]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["labels"] = [label.to_dict() for label in self.labels]
        return data


@dataclass
class GroupScore:
    """How one environment or category did: success rate and mean reward."""

    name: str
    episodes: int
    successes: int
    mean_reward: float
    top_errors: list[str] = field(default_factory=list)

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "success_rate": round(self.success_rate, 4)}


@dataclass
class CapabilityScore:
    """Share of episodes showing no error against this capability (1.0 = never failed it)."""

    capability: str
    score: float
    failed_episodes: int
    labels: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DiagnosisSummary:
    episodes: int
    failures: list[FailureDiagnosis]
    label_counts: dict[str, int]
    by_environment: dict[str, dict[str, int]]
    by_category: dict[str, dict[str, int]]
    environment_scores: list[GroupScore]
    category_scores: list[GroupScore]
    subcategory_scores: list[GroupScore]
    capability_scores: list[CapabilityScore]
    environment_categories: dict[str, Mapping[str, str] | str]
    analysis: str = ""
    analysis_source: str = "offline"

    @property
    def failure_count(self) -> int:
        return len(self.failures)

    @property
    def success_rate(self) -> float:
        return 1 - self.failure_count / self.episodes if self.episodes else 0.0

    def weakest_environments(self, limit: int = 3) -> list[GroupScore]:
        return [s for s in self.environment_scores if s.successes < s.episodes][:limit]

    def weakest_categories(self, limit: int = 3) -> list[GroupScore]:
        return [s for s in self.category_scores if s.successes < s.episodes][:limit]

    def weakest_subcategories(self, limit: int = 3) -> list[GroupScore]:
        return [s for s in self.subcategory_scores if s.successes < s.episodes][:limit]

    def weakest_capabilities(self, limit: int = 3) -> list[CapabilityScore]:
        return [c for c in self.capability_scores if c.failed_episodes][:limit]

    def to_dict(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "failure_count": self.failure_count,
            "success_rate": round(self.success_rate, 4),
            "label_counts": self.label_counts,
            "by_environment": self.by_environment,
            "by_category": self.by_category,
            "environment_scores": [s.to_dict() for s in self.environment_scores],
            "category_scores": [s.to_dict() for s in self.category_scores],
            "subcategory_scores": [s.to_dict() for s in self.subcategory_scores],
            "capability_scores": [c.to_dict() for c in self.capability_scores],
            "weakest_environments": [s.name for s in self.weakest_environments()],
            "weakest_categories": [s.name for s in self.weakest_categories()],
            "weakest_capabilities": [c.capability for c in self.weakest_capabilities()],
            "environment_categories": self.environment_categories,
            "failures": [f.to_dict() for f in self.failures],
            "analysis": self.analysis,
            "analysis_source": self.analysis_source,
        }


def diagnose_episode(episode: EvaluatedEpisode) -> FailureDiagnosis | None:
    """Labels for one episode, or None when it succeeded."""
    if is_success(episode):
        return None
    task = episode.task
    tools = required_tools(task)
    return FailureDiagnosis(
        task_id=episode.task_id,
        environment=episode.environment,
        category=episode.category,
        task_kind=episode.task_kind,
        difficulty=episode.difficulty,
        gold_chain_length=len(task.gold_chain) or len(tools),
        gold_write_count=write_count(task.expected_diff or {}),
        reward_total=episode.reward.total,
        labels=label_failure(episode.trajectory, task, episode.reward, episode.tool_kinds),
        instruction=task.instruction or "",
        gold_tools=tools,
        gold_write_tools=[t for t in tools if episode.tool_kinds.get(t) == "write"],
    )


def _group_scores(
    episodes: list[EvaluatedEpisode],
    key: Callable[[EvaluatedEpisode], str],
    failures_by_id: dict[int, FailureDiagnosis],
) -> list[GroupScore]:
    groups: dict[str, list[EvaluatedEpisode]] = defaultdict(list)
    for episode in episodes:
        groups[key(episode)].append(episode)
    scores = []
    for name, members in groups.items():
        errors: Counter[str] = Counter()
        for member in members:
            failure = failures_by_id.get(id(member))
            errors.update(failure.kinds if failure else [])
        scores.append(
            GroupScore(
                name=name,
                episodes=len(members),
                successes=sum(1 for m in members if id(m) not in failures_by_id),
                mean_reward=round(sum(m.reward.total for m in members) / len(members), 4),
                top_errors=[
                    label for label, _ in sorted(errors.items(), key=lambda i: (-i[1], i[0]))
                ][:3],
            )
        )
    return sorted(scores, key=lambda s: (s.success_rate, s.mean_reward, s.name))


def _count_labels(
    failures: Iterable[FailureDiagnosis], key: Callable[[FailureDiagnosis], str]
) -> dict[str, dict[str, int]]:
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for failure in failures:
        table[key(failure)].update(failure.kinds)
    return {
        name: {label: counts[label] for label in ERROR_LABELS if counts[label]}
        for name, counts in sorted(table.items())
    }


def _capability_scores(
    episode_count: int, failures: list[FailureDiagnosis]
) -> list[CapabilityScore]:
    scores = []
    for capability in CAPABILITIES:
        labels: Counter[str] = Counter()
        failed = 0
        for failure in failures:
            hits = [k for k in failure.kinds if CAPABILITY_OF_LABEL[k] == capability]
            labels.update(hits)
            failed += bool(hits)
        score = 1 - failed / episode_count if episode_count else 1.0
        scores.append(
            CapabilityScore(capability, round(score, 4), failed, dict(sorted(labels.items())))
        )
    return sorted(scores, key=lambda c: (c.score, CAPABILITIES.index(c.capability)))


def diagnose(
    episodes: Iterable[EvaluatedEpisode],
    *,
    llm: Any = _AUTO,
    sample_size: int = 6,
    seed: int = 0,
) -> DiagnosisSummary:
    """Label every failure of a round and summarise where the policy is weak.

    ``llm``: LLMSettings to write the analysis with an LLM, None for the offline summary, or
    left out to use ``aw_site.llm.llm_settings()`` (the LLM path only when it is configured).
    """
    episodes = list(episodes)
    failures_by_id: dict[int, FailureDiagnosis] = {}
    for episode in episodes:
        failure = diagnose_episode(episode)
        if failure is not None:
            failures_by_id[id(episode)] = failure
    failures = [failures_by_id[id(e)] for e in episodes if id(e) in failures_by_id]
    totals: Counter[str] = Counter(k for f in failures for k in f.kinds)
    summary = DiagnosisSummary(
        episodes=len(episodes),
        failures=failures,
        label_counts={label: totals[label] for label in ERROR_LABELS if totals[label]},
        by_environment=_count_labels(failures, lambda f: f.environment),
        by_category=_count_labels(failures, lambda f: category_name(f.category)),
        environment_scores=_group_scores(episodes, lambda e: e.environment, failures_by_id),
        category_scores=_group_scores(
            episodes, lambda e: category_name(e.category), failures_by_id
        ),
        subcategory_scores=_group_scores(
            episodes, lambda e: category_name(e.category, "secondary"), failures_by_id
        ),
        capability_scores=_capability_scores(len(episodes), failures),
        environment_categories={e.environment: e.category for e in episodes},
    )
    summary.analysis = offline_analysis(summary)
    settings = _resolve_llm(llm)
    if settings is not None and failures:
        summary.analysis, summary.analysis_source = llm_analysis(
            summary, settings, sample_size=sample_size, seed=seed
        )
    return summary


def _resolve_llm(llm: Any) -> Any:
    if llm is not _AUTO:
        return llm
    from aw_site.llm import llm_settings

    return llm_settings()


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def offline_analysis(summary: DiagnosisSummary) -> str:
    """A deterministic written summary of the counts, for when no LLM is configured."""
    if not summary.episodes:
        return "No episodes were evaluated."
    envs = len(summary.environment_scores)
    lines = [
        f"Evaluated {summary.episodes} episodes in {envs} environment(s); "
        f"{summary.failure_count} failed (success rate {_percent(summary.success_rate)})."
    ]
    if not summary.failures:
        lines.append("No failures to diagnose.")
        return "\n".join(lines)
    ranked = sorted(summary.label_counts.items(), key=lambda i: (-i[1], ERROR_LABELS.index(i[0])))
    lines.append(
        "Most frequent errors: "
        + ", ".join(f"{in_words(label)} ({count})" for label, count in ranked)
        + "."
    )
    weak_caps = summary.weakest_capabilities()
    if weak_caps:
        lines.append(
            "Weakest capabilities: "
            + ", ".join(f"{c.capability} (score {c.score:.2f})" for c in weak_caps)
            + "."
        )
    for score in summary.weakest_environments():
        lines.append(
            f"Environment {score.name}: success {_percent(score.success_rate)}, mean reward "
            f"{score.mean_reward:.2f}, mostly "
            f"{', '.join(in_words(e) for e in score.top_errors) or 'unlabelled failures'}."
        )
    for score in summary.weakest_categories(1):
        lines.append(
            f"Weakest category: {score.name} (success {_percent(score.success_rate)} over "
            f"{score.episodes} episodes)."
        )
    for label, _ in ranked[:3]:
        example = next(f for f in summary.failures if label in f.kinds)
        evidence = next(lab for lab in example.labels if lab.kind == label)
        lines.append(
            f"Example of {in_words(label)}: task {example.task_id or '?'} in {example.environment}: "
            f"{evidence.explanation}."
        )
    return "\n".join(lines)


def sample_failures(
    summary: DiagnosisSummary, sample_size: int, seed: int
) -> list[FailureDiagnosis]:
    """A seeded sample of labelled failures, at least one per label where possible."""
    rng = random.Random(seed)
    chosen: list[FailureDiagnosis] = []
    for label in ERROR_LABELS:
        taken = {id(f) for f in chosen}
        pool = [f for f in summary.failures if label in f.kinds and id(f) not in taken]
        if pool and len(chosen) < sample_size:
            chosen.append(rng.choice(pool))
    taken = {id(f) for f in chosen}
    rest = [f for f in summary.failures if id(f) not in taken]
    chosen.extend(rng.sample(rest, min(len(rest), max(0, sample_size - len(chosen)))))
    return chosen


def llm_analysis(
    summary: DiagnosisSummary, settings: Any, *, sample_size: int = 6, seed: int = 0
) -> tuple[str, str]:
    """Ask the LLM for a written analysis grounded in the labels; offline text if it fails."""
    from aw_site.llm import LLMError, chat_completion, report_llm_failure

    sampled = [
        {
            "task_id": f.task_id,
            "environment": f.environment,
            "category": category_name(f.category, "secondary"),
            "instruction": f.instruction[:400],
            "labels": [
                {"kind": lab.kind, "steps": list(lab.steps), "evidence": lab.explanation}
                for lab in f.labels
            ],
        }
        for f in sample_failures(summary, sample_size, seed)
    ]
    facts = {
        "episodes": summary.episodes,
        "failures": summary.failure_count,
        "label_counts": summary.label_counts,
        "weakest_environments": [s.to_dict() for s in summary.weakest_environments()],
        "weakest_categories": [s.to_dict() for s in summary.weakest_categories()],
        "capability_scores": [c.to_dict() for c in summary.capability_scores],
        "sampled_failures": sampled,
    }
    messages = [
        {
            "role": "system",
            "content": "You analyse failures of a tool-using agent evaluated in executable "
            "environments. Every failure below is labelled from executable evidence. Write a "
            "short analysis (at most 200 words) of the agent's weaknesses and what training data "
            "would address them. Cite labels, environments and task ids; claim nothing the "
            "evidence does not show. Write for a person: label names in words (wrong answer, not "
            "wrong_answer), values as plain text, no JSON, code or Python literals.",
        },
        {"role": "user", "content": json.dumps(facts, indent=1, default=str)},
    ]
    try:
        text = chat_completion(settings, messages, temperature=0.0)["content"].strip()
    except LLMError as exc:
        report_llm_failure("diagnosis analysis (the offline analysis is used)", exc)
        return f"{summary.analysis}\n(LLM analysis unavailable: {exc})", "offline"
    if not text:
        return summary.analysis, "offline"
    return text, "llm"
