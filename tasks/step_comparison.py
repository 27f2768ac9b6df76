"""The agent's steps set against the gold run's, one gold step at a time.

For every gold-chain step: did the agent make the matching call, with which arguments, and did
it observe what the gold run observed? The trajectory page and API show this next to the
steps; diagnosis reads the same verdicts. Viewers of evaluation tasks get ``public_dict``, which
keeps the verdicts and step indices but no gold tool, argument or result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import SUBMIT_ANSWER
from tasks.gold_results import canonical_value, normalize_value, result_matches
from tasks.trajectory import Step

MATCH = "match"
DIFFERS = "differs"
MISSING = "missing"
STATUSES = (MATCH, DIFFERS, MISSING)
PUBLIC_KEYS = ("gold_index", "status", "agent_step", "arguments_match", "result_match")


@dataclass(frozen=True)
class AgentCall:
    """One tool call the agent made (any step with a named call, errors included)."""

    position: int  # place in the step list
    step: int  # the step's own index
    tool: str
    arguments: dict[str, Any]
    result: Any
    error_kind: str | None

    @property
    def canonical_arguments(self) -> str:
        return canonical_value(self.arguments)


@dataclass(frozen=True)
class StepComparison:
    """One gold step and the agent step matched to it (None when the agent never made it).

    ``status``: ``match`` (same tool, same arguments, same observation where the gold result
    is known), ``differs`` (the tool was called, but with other arguments or another result),
    ``missing`` (the tool was never called). ``result_match`` is None where there is nothing to
    compare: no agent step, or a gold chain stored before results were kept.
    """

    gold_index: int
    tool: str
    status: str
    agent_step: int | None
    arguments_match: bool | None
    result_match: bool | None
    differing_arguments: tuple[str, ...] = ()
    gold_arguments: dict[str, Any] = field(default_factory=dict)
    agent_arguments: dict[str, Any] | None = None
    gold_result: Any = None
    agent_result: Any = None
    agent_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "gold_index": self.gold_index,
            "tool": self.tool,
            "status": self.status,
            "agent_step": self.agent_step,
            "arguments_match": self.arguments_match,
            "result_match": self.result_match,
            "differing_arguments": list(self.differing_arguments),
            "gold_arguments": self.gold_arguments,
            "agent_arguments": self.agent_arguments,
            "gold_result": self.gold_result,
            "agent_result": self.agent_result,
            "agent_error": self.agent_error,
        }

    def public_dict(self) -> dict[str, Any]:
        """The verdict without gold data: indices and booleans only."""
        data = self.to_dict()
        return {key: data[key] for key in PUBLIC_KEYS}


def agent_calls(steps: Sequence[Step]) -> list[AgentCall]:
    """The named tool calls of a trajectory's steps, ``submit_answer`` aside."""
    return [
        AgentCall(
            position=position,
            step=step.index,
            tool=step.tool_call.name,
            arguments=dict(step.tool_call.arguments),
            result=step.tool_result,
            error_kind=step.error_kind or None,
        )
        for position, step in enumerate(steps)
        if step.tool_call is not None and step.tool_call.name not in ("", SUBMIT_ANSWER)
    ]


def _differing(gold: Mapping[str, Any], called: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        sorted(
            key
            for key in set(gold) | set(called)
            if normalize_value(gold.get(key)) != normalize_value(called.get(key))
        )
    )


def _observed_matches(call: AgentCall, gold_step: Mapping[str, Any]) -> bool | None:
    if "result" not in gold_step:
        return None
    if call.error_kind:
        return False
    return result_matches(gold_step["result"], call.result)


def _level(call: AgentCall, gold_step: Mapping[str, Any]) -> int:
    """How well a call answers a gold step: 3 same arguments and observation, 2 same
    arguments, 1 same tool only."""
    if call.canonical_arguments != canonical_value(dict(gold_step.get("arguments") or {})):
        return 1
    return 3 if _observed_matches(call, gold_step) is not False else 2


def _assign(chain: list[Mapping[str, Any]], calls: list[AgentCall]) -> dict[int, AgentCall]:
    """Gold step -> agent call, best matches first (a call repeated later in the chain must
    not steal an earlier step's answer), each in order after the previous step's call."""
    assigned: dict[int, AgentCall] = {}
    used: set[int] = set()
    for level in (3, 2, 1):
        for index, gold_step in enumerate(chain):
            if index in assigned:
                continue
            candidates = [
                c
                for c in calls
                if c.tool == gold_step["tool"]
                and c.position not in used
                and _level(c, gold_step) >= level
            ]
            if not candidates:
                continue
            before = [assigned[i].position for i in assigned if i < index]
            after = max(before, default=-1)
            call = next((c for c in candidates if c.position > after), candidates[0])
            assigned[index] = call
            used.add(call.position)
    return assigned


def compare_steps(gold_chain: Sequence[Any], steps: Sequence[Step]) -> list[StepComparison]:
    """One ``StepComparison`` per gold step; each agent call answers at most one gold step."""
    chain = [s for s in gold_chain if isinstance(s, Mapping) and isinstance(s.get("tool"), str)]
    assigned = _assign(chain, agent_calls(steps))
    comparisons = []
    for gold_index, gold_step in enumerate(chain):
        tool = gold_step["tool"]
        gold_arguments = dict(gold_step.get("arguments") or {})
        gold_result = gold_step.get("result")
        call = assigned.get(gold_index)
        if call is None:
            comparisons.append(
                StepComparison(
                    gold_index,
                    tool,
                    MISSING,
                    None,
                    None,
                    None,
                    gold_arguments=gold_arguments,
                    gold_result=gold_result,
                )
            )
            continue
        differing = _differing(gold_arguments, call.arguments)
        observed = _observed_matches(call, gold_step)
        status = (
            MATCH if not differing and observed is not False and not call.error_kind else DIFFERS
        )
        comparisons.append(
            StepComparison(
                gold_index,
                tool,
                status,
                call.step,
                not differing,
                observed,
                differing_arguments=differing,
                gold_arguments=gold_arguments,
                agent_arguments=call.arguments,
                gold_result=gold_result,
                agent_result=call.result,
                agent_error=call.error_kind,
            )
        )
    return comparisons


def comparison_counts(comparisons: Sequence[StepComparison]) -> dict[str, int]:
    """How many gold steps match, differ and are missing."""
    counts = Counter(c.status for c in comparisons)
    return {status: counts.get(status, 0) for status in STATUSES}


def comparison_payload(comparisons: Sequence[StepComparison], hide_gold: bool) -> dict[str, Any]:
    """What the API and the page show: per-step verdicts (redacted when ``hide_gold``) and
    the counts."""
    return {
        "steps": [c.public_dict() if hide_gold else c.to_dict() for c in comparisons],
        "counts": comparison_counts(comparisons),
        "gold_hidden": hide_gold,
    }
