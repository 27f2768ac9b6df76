"""Targeted expansion proposals derived from a round's diagnosis.

Each proposal names what to add where, with the parameters the expansion job needs and the
labelled failures that justify it, so a reviewer approves evidence rather than a guess:

- planning failures (premature answer, step budget, call loops) -> more, longer graph tasks;
- state failures (missing / wrong writes) -> more write-heavy tasks;
- argument failures (wrong arguments, tool errors) -> complexify the database with edge rows
  around the tools involved;
- wrong answers -> more tasks of the kind that failed;
- the weakest subcategory -> mine a new environment there.

Proposals are deterministic for a given diagnosis and capped in number, most evidenced first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from arena.diagnosis import DiagnosisSummary, FailureDiagnosis, category_name
from arena.error_taxonomy import (
    ANSWER_SYNTHESIS,
    ARGUMENT_GROUNDING,
    MISSING_STATE_UPDATE,
    MULTI_STEP_PLANNING,
    PREMATURE_ANSWER,
    REPEATED_CALL_LOOP,
    STATE_UPDATES,
    STEP_BUDGET_EXHAUSTED,
    TOOL_ERROR,
    WRONG_ANSWER,
    WRONG_ARGUMENTS,
    WRONG_STATE_UPDATE,
)
from arena.proposal_params import (
    ComplexifyParams,
    MoreTasksParams,
    NewEnvironmentParams,
    params_for,
)

MORE_TASKS = "more_tasks"
COMPLEXIFY_DATABASE = "complexify_database"
NEW_ENVIRONMENT = "new_environment"
PROPOSAL_KINDS = (MORE_TASKS, COMPLEXIFY_DATABASE, NEW_ENVIRONMENT)

PLANNING_LABELS = (PREMATURE_ANSWER, STEP_BUDGET_EXHAUSTED, REPEATED_CALL_LOOP)
STATE_LABELS = (MISSING_STATE_UPDATE, WRONG_STATE_UPDATE)
ARGUMENT_LABELS = (WRONG_ARGUMENTS, TOOL_ERROR)
ANSWER_LABELS = (WRONG_ANSWER,)


@dataclass
class Proposal:
    """One expansion a reviewer can approve; ``params`` are what the expansion job reads."""

    kind: str
    environment: str | None
    category: Mapping[str, str] | str
    params: dict[str, Any]
    rationale: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in PROPOSAL_KINDS:
            raise ValueError(
                f"unknown proposal kind {self.kind!r}; expected one of {PROPOSAL_KINDS}"
            )
        self.params = params_for(self.kind, self.params).model_dump()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProposalPolicy:
    """How much to propose; every field is a knob the round configuration may expose."""

    max_proposals: int = 8
    min_failures: int = 2
    tasks_per_proposal: int = 20
    min_walk_length: int = 3
    extra_walk_steps: int = 3  # planning tasks: walks up to this much longer than the failed
    min_write_steps: int = 2
    edge_rows_per_table: int = 25
    new_environments: int = 1
    examples: int = 3
    tier: str = "goal"
    max_write_steps: int = 6  # a bulk program's many writes are no graph workflow to copy


def _examples(failures: list[FailureDiagnosis], labels: tuple[str, ...], limit: int) -> list[dict]:
    examples = []
    for failure in failures[:limit]:
        for label in failure.labels:
            if label.kind in labels:
                examples.append(
                    {
                        "task_id": failure.task_id,
                        "label": label.kind,
                        "steps": list(label.steps),
                        "explanation": label.explanation,
                    }
                )
    return examples


def _evidence(
    failures: list[FailureDiagnosis], labels: tuple[str, ...], policy: ProposalPolicy
) -> dict[str, Any]:
    counts = Counter(k for f in failures for k in f.kinds if k in labels)
    return {
        "failed_episodes": len(failures),
        "labels": {label: counts[label] for label in labels if counts[label]},
        "task_ids": [f.task_id for f in failures],
        "examples": _examples(failures, labels, policy.examples),
    }


def _with_labels(
    failures: list[FailureDiagnosis], labels: tuple[str, ...]
) -> list[FailureDiagnosis]:
    return [f for f in failures if any(k in labels for k in f.kinds)]


def _task_kind(failures: list[FailureDiagnosis]) -> str:
    """The kind most of the failed tasks were: more of the same kind trains what failed."""
    programs = sum(1 for f in failures if f.task_kind == "programmatic")
    return "programmatic" if programs * 2 > len(failures) else "graph"


def _graph_failures(failures: list[FailureDiagnosis]) -> list[FailureDiagnosis]:
    """Failures of graph tasks, whose chain length and writes a graph walk can copy (a
    program's calls loop over rows: 19 calls there are one loop, not a 19-step plan)."""
    return [f for f in failures if f.task_kind != "programmatic"]


def _planning(env: str, category: Any, failures: list, policy: ProposalPolicy) -> Proposal:
    longest = max((f.gold_chain_length for f in _graph_failures(failures)), default=0)
    walk = max(policy.min_walk_length, longest + 1)
    evidence = _evidence(failures, PLANNING_LABELS, policy)
    return Proposal(
        MORE_TASKS,
        env,
        category,
        MoreTasksParams(
            task_kind=_task_kind(failures),
            min_walk_length=walk,
            max_walk_length=min(40, walk + policy.extra_walk_steps),
            count=policy.tasks_per_proposal,
            tier="goal",  # planning failures: goals without the plan, longer chains
            tools=sorted({t for f in failures for t in f.gold_tools}),
            focus=MULTI_STEP_PLANNING,
        ).model_dump(),
        f"{len(failures)} episode(s) in {env} stopped planning early or ran in circles "
        f"({', '.join(f'{k} x{v}' for k, v in evidence['labels'].items())}); longer tool chains "
        f"(walk length >= {walk}, the longest failed chain had {longest}) train multi-step plans.",
        evidence,
    )


def _state(env: str, category: Any, failures: list, policy: ProposalPolicy) -> Proposal:
    most = max((f.gold_write_count for f in _graph_failures(failures)), default=0)
    writes = min(policy.max_write_steps, max(policy.min_write_steps, most))
    evidence = _evidence(failures, STATE_LABELS, policy)
    return Proposal(
        MORE_TASKS,
        env,
        category,
        MoreTasksParams(
            task_kind=_task_kind(failures),
            min_walk_length=writes,
            write_steps=writes,
            count=policy.tasks_per_proposal,
            tier=policy.tier,
            tools=sorted({t for f in failures for t in f.gold_write_tools}),
            focus=STATE_UPDATES,
        ).model_dump(),
        f"{len(failures)} episode(s) in {env} left the database in the wrong state "
        f"({', '.join(f'{k} x{v}' for k, v in evidence['labels'].items())}); write-heavy tasks "
        f"with at least {writes} writes each train state updates.",
        evidence,
    )


def _implicated_tools(failures: list[FailureDiagnosis]) -> list[str]:
    tools: set[str] = set()
    for failure in failures:
        for label in failure.labels:
            if label.kind == WRONG_ARGUMENTS:
                tools.update(m["tool"] for m in label.details.get("mismatches", []))
            elif label.kind == TOOL_ERROR:
                tools.update(t for t in label.details.get("tools", []) if t != "?")
    return sorted(tools)


def _arguments(env: str, category: Any, failures: list, policy: ProposalPolicy) -> Proposal:
    tools = _implicated_tools(failures)
    evidence = _evidence(failures, ARGUMENT_LABELS, policy)
    return Proposal(
        COMPLEXIFY_DATABASE,
        env,
        category,
        ComplexifyParams(
            tools=tools,
            rows_per_table=policy.edge_rows_per_table,
            tasks=policy.tasks_per_proposal,
            tier=policy.tier,
            focus=ARGUMENT_GROUNDING,
        ).model_dump(),
        f"{len(failures)} episode(s) in {env} grounded arguments badly "
        f"({', '.join(f'{k} x{v}' for k, v in evidence['labels'].items())}) around "
        f"{', '.join(tools) or 'its tools'}; edge rows (near-duplicate keys, nulls, boundary "
        f"values) make argument grounding matter.",
        evidence,
    )


def _answers(env: str, category: Any, failures: list, policy: ProposalPolicy) -> Proposal:
    kind = Counter(f.task_kind for f in failures).most_common(1)[0][0]
    evidence = _evidence(failures, ANSWER_LABELS, policy)
    return Proposal(
        MORE_TASKS,
        env,
        category,
        MoreTasksParams(
            task_kind=kind,
            count=policy.tasks_per_proposal,
            tier=policy.tier,
            focus=ANSWER_SYNTHESIS,
        ).model_dump(),
        f"{len(failures)} episode(s) in {env} gathered data but answered wrongly; more "
        f"{kind} tasks there train answer synthesis.",
        evidence,
    )


_RULES = (
    (PLANNING_LABELS, _planning),
    (STATE_LABELS, _state),
    (ARGUMENT_LABELS, _arguments),
    (ANSWER_LABELS, _answers),
)


def _new_environment(summary: DiagnosisSummary, policy: ProposalPolicy) -> Proposal | None:
    weakest = summary.weakest_subcategories(1)
    if not weakest:
        return None
    score = weakest[0]
    envs = sorted(
        env
        for env, cat in summary.environment_categories.items()
        if category_name(cat, "secondary") == score.name
    )
    category = summary.environment_categories[envs[0]] if envs else score.name
    failures = [f for f in summary.failures if f.environment in envs]
    counts = Counter(k for f in failures for k in f.kinds)
    return Proposal(
        NEW_ENVIRONMENT,
        None,
        category,
        NewEnvironmentParams(
            count=policy.new_environments,
            subcategory=score.name,
            exclude=envs,
            tasks=policy.tasks_per_proposal,
            tier=policy.tier,
        ).model_dump(),
        f"{score.name} is the weakest subcategory (success {100 * score.success_rate:.0f}% over "
        f"{score.episodes} episodes, mean reward {score.mean_reward:.2f}); a new environment mined "
        f"there widens the data the policy learns this domain from.",
        {
            "failed_episodes": len(failures),
            "labels": dict(sorted(counts.items())),
            "success_rate": round(score.success_rate, 4),
            "mean_reward": score.mean_reward,
            "environments": envs,
            "task_ids": [f.task_id for f in failures],
        },
    )


def propose_expansions(
    summary: DiagnosisSummary, policy: ProposalPolicy | None = None
) -> list[Proposal]:
    """Expansion proposals for a diagnosis, most evidenced first, at most ``max_proposals``."""
    policy = policy or ProposalPolicy()
    ranked: list[tuple[int, int, str, Proposal]] = []
    environments = sorted({f.environment for f in summary.failures})
    for env in environments:
        env_failures = [f for f in summary.failures if f.environment == env]
        category = summary.environment_categories.get(env, env_failures[0].category)
        for order, (labels, build) in enumerate(_RULES):
            matched = _with_labels(env_failures, labels)
            if len(matched) >= policy.min_failures:
                ranked.append((len(matched), order, env, build(env, category, matched, policy)))
    new_env = _new_environment(summary, policy)
    if new_env is not None and new_env.evidence["failed_episodes"] >= policy.min_failures:
        ranked.append((new_env.evidence["failed_episodes"], len(_RULES), "", new_env))
    ranked.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [proposal for *_, proposal in ranked[: policy.max_proposals]]
