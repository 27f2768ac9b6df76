"""The error taxonomy of the arena, and the detectors that label one failed episode.

Every label is computed from executable evidence only: the recorded steps of the trajectory
(tool calls, their results and error kinds), the task's gold chain and expected state diff, and
the reward breakdown. A label carries the step indices it rests on and a short explanation, so a
reviewer can open the trajectory and see the same thing the diagnosis saw.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tasks.gold_results import canonical_value
from tasks.gold_tools import tools_called_in_solution
from tasks.state_changes import compare_diffs, row_pairs
from tasks.step_comparison import DIFFERS, StepComparison, compare_steps

INVALID_TOOL_CALL = "invalid_tool_call"
TOOL_ERROR = "tool_error"
WRONG_ARGUMENTS = "wrong_arguments"
MISSING_STATE_UPDATE = "missing_state_update"
WRONG_STATE_UPDATE = "wrong_state_update"
PREMATURE_ANSWER = "premature_answer"
STEP_BUDGET_EXHAUSTED = "step_budget_exhausted"
WRONG_ANSWER = "wrong_answer"
FORMAT_ERROR = "format_error"
REPEATED_CALL_LOOP = "repeated_call_loop"

ERROR_LABELS: tuple[str, ...] = (
    INVALID_TOOL_CALL,
    TOOL_ERROR,
    WRONG_ARGUMENTS,
    MISSING_STATE_UPDATE,
    WRONG_STATE_UPDATE,
    PREMATURE_ANSWER,
    STEP_BUDGET_EXHAUSTED,
    WRONG_ANSWER,
    FORMAT_ERROR,
    REPEATED_CALL_LOOP,
)

MULTI_STEP_PLANNING = "multi-step planning"
STATE_UPDATES = "state updates"
ARGUMENT_GROUNDING = "argument grounding"
TOOL_CALL_FORMAT = "tool-call format"
ANSWER_SYNTHESIS = "answer synthesis"

# Which agent capability each error kind is evidence against.
CAPABILITY_OF_LABEL: dict[str, str] = {
    INVALID_TOOL_CALL: TOOL_CALL_FORMAT,
    FORMAT_ERROR: TOOL_CALL_FORMAT,
    TOOL_ERROR: ARGUMENT_GROUNDING,
    WRONG_ARGUMENTS: ARGUMENT_GROUNDING,
    MISSING_STATE_UPDATE: STATE_UPDATES,
    WRONG_STATE_UPDATE: STATE_UPDATES,
    PREMATURE_ANSWER: MULTI_STEP_PLANNING,
    STEP_BUDGET_EXHAUSTED: MULTI_STEP_PLANNING,
    REPEATED_CALL_LOOP: MULTI_STEP_PLANNING,
    WRONG_ANSWER: ANSWER_SYNTHESIS,
}
CAPABILITIES: tuple[str, ...] = (
    MULTI_STEP_PLANNING,
    STATE_UPDATES,
    ARGUMENT_GROUNDING,
    TOOL_CALL_FORMAT,
    ANSWER_SYNTHESIS,
)

# Step error kinds that mean the call never reached a tool because it was malformed.
_INVALID_CALL_KINDS = frozenset(
    {"unknown_tool", "invalid_arguments", "invalid_json", "malformed_tool_call", "bad_json"}
)
# Step error kinds that mean the tool ran and failed (raised, or was stopped by the sandbox).
_TOOL_FAILURE_KINDS = frozenset(
    {"tool_error", "timeout", "resource_limit", "output_too_large", "sandbox_violation"}
)
_FORMAT_KINDS = frozenset({"format_error", "malformed_output"})
LOOP_THRESHOLD = 3
_FULL_SCORE = 0.999


@dataclass(frozen=True)
class ErrorLabel:
    """One error kind found in one episode, with the evidence it rests on."""

    kind: str
    steps: tuple[int, ...]
    explanation: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def capability(self) -> str:
        return CAPABILITY_OF_LABEL[self.kind]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = list(self.steps)
        data["capability"] = self.capability
        return data


# --- reading the inputs -----------------------------------------------------------------------


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from a dict or an attribute holder (dataclass, model instance)."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


@dataclass(frozen=True)
class RewardView:
    """The reward breakdown reduced to what diagnosis reads: component scores and reasons."""

    answer: float | None
    state: float | None
    format: float | None
    efficiency: float | None
    total: float
    reasons: dict[str, str]


def _component_score(component: Any) -> float | None:
    if component is None:
        return None
    if isinstance(component, bool):
        return float(component)
    if isinstance(component, int | float):
        return float(component)
    for key in ("score", "value", "reward"):
        value = field_of(component, key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _component_reason(component: Any) -> str:
    reasons = field_of(component, "reasons") if not isinstance(component, int | float) else None
    if reasons is None and not isinstance(component, int | float):
        reasons = field_of(component, "reason")
    if isinstance(reasons, list | tuple):
        return "; ".join(str(r) for r in reasons)
    return str(reasons) if reasons else ""


def read_reward(reward: Any) -> RewardView:
    """Accept a RewardBreakdown, its dict form, or a bare float total."""
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        return RewardView(None, None, None, None, float(reward), {})
    if reward is not None and not isinstance(reward, Mapping) and hasattr(reward, "to_dict"):
        reward = reward.to_dict()
    components = field_of(reward, "components") or reward
    names = ("answer", "state", "format", "efficiency")
    scores = {name: _component_score(field_of(components, name)) for name in names}
    reasons = {name: _component_reason(field_of(components, name)) for name in names}
    total = field_of(reward, "total")
    if not isinstance(total, int | float):
        total = sum(s for s in scores.values() if s is not None)
    return RewardView(
        answer=scores["answer"],
        state=scores["state"],
        format=scores["format"],
        efficiency=scores["efficiency"],
        total=float(total),
        reasons={k: v for k, v in reasons.items() if v},
    )


def _steps(trajectory: Any) -> list[Mapping[str, Any]]:
    steps = field_of(trajectory, "steps") or []
    return [s if isinstance(s, Mapping) else vars(s) for s in steps]


def _step_index(step: Mapping[str, Any], position: int) -> int:
    index = step.get("index")
    return index if isinstance(index, int) else position


def _tool_call(step: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    call = step.get("tool_call")
    if not call:
        return None
    name = field_of(call, "name")
    arguments = field_of(call, "arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not isinstance(arguments, Mapping | type(None)):
        return None
    return name, dict(arguments or {})


def _gold_tools(task: Any) -> list[str]:
    """The tool of each gold-chain step (the step comparison reads arguments and results)."""
    chain = field_of(task, "gold_chain") or []
    return [name for name in (field_of(step, "tool") for step in chain) if isinstance(name, str)]


def required_tools(task: Any) -> list[str]:
    """Distinct tools the task's gold solution needs, in first-use order.

    Graph tasks name them in the gold chain; programmatic tasks call them in their solution as
    ``call("tool_name", ...)``, which the solution source shows without running it.
    """
    names = _gold_tools(task)
    if not names:
        names = tools_called_in_solution(field_of(task, "solution") or "")
    return list(dict.fromkeys(names))


def _canonical(value: Any) -> str:
    return canonical_value(value)


# --- the detectors ----------------------------------------------------------------------------


def detect_invalid_tool_calls(steps: list[Mapping[str, Any]]) -> ErrorLabel | None:
    hits, reasons, tools = [], [], []
    for position, step in enumerate(steps):
        kind = step.get("error_kind")
        unparsed = step.get("raw_tool_call") and _tool_call(step) is None
        if kind in _INVALID_CALL_KINDS or unparsed:
            hits.append(_step_index(step, position))
            name = field_of(step.get("tool_call"), "name") or "?"
            tools.append(name)
            reason = kind or "unparseable tool call"
            reasons.append(f"step {hits[-1]}: {reason} ({name})")
    if not hits:
        return None
    return ErrorLabel(
        INVALID_TOOL_CALL,
        tuple(hits),
        f"{len(hits)} tool call(s) rejected before reaching a tool: " + "; ".join(reasons[:3]),
        {"tools": sorted(set(tools))},
    )


def detect_tool_errors(steps: list[Mapping[str, Any]]) -> ErrorLabel | None:
    hits, messages, tools = [], [], []
    for position, step in enumerate(steps):
        if step.get("error_kind") in _TOOL_FAILURE_KINDS:
            hits.append(_step_index(step, position))
            name = field_of(step.get("tool_call"), "name") or "?"
            tools.append(name)
            error = str(step.get("error") or step["error_kind"])[:120]
            messages.append(f"step {hits[-1]} {name}: {error}")
    if not hits:
        return None
    return ErrorLabel(
        TOOL_ERROR,
        tuple(hits),
        f"{len(hits)} tool call(s) raised: " + "; ".join(messages[:3]),
        {"tools": sorted(set(tools))},
    )


def _reached_tool(step: Mapping[str, Any]) -> bool:
    return _tool_call(step) is not None and step.get("error_kind") not in _INVALID_CALL_KINDS


def _gold_kinds(task: Any, tool_kinds: Mapping[str, str]) -> list[str]:
    """Read or write, per gold-chain step (the chain's own ``kind``, else the manifest's)."""
    return [
        str(field_of(step, "kind") or tool_kinds.get(str(field_of(step, "tool"))) or "read")
        for step in field_of(task, "gold_chain") or []
        if isinstance(field_of(step, "tool"), str)
    ]


def compare_with_gold(
    steps: list[Mapping[str, Any]], task: Any, tool_kinds: Mapping[str, str]
) -> list[tuple[StepComparison, str]]:
    """Each gold step with the agent call that answers it and the step's kind; only calls that
    reached a tool count (a rejected call is an invalid tool call, not a wrong argument)."""
    chain = [s for s in field_of(task, "gold_chain") or [] if isinstance(field_of(s, "tool"), str)]
    reached = [s for s in steps if _reached_tool(s)]
    comparisons = compare_steps([dict(s) for s in chain if isinstance(s, Mapping)], reached)
    return list(zip(comparisons, _gold_kinds(task, tool_kinds), strict=False))


def detect_wrong_arguments(compared: list[tuple[StepComparison, str]]) -> ErrorLabel | None:
    """A gold call made with arguments unlike the gold chain's. A write with other arguments
    that went through shows in the final state and is a state label's evidence instead (one
    whose state still came out right is no error); one the tool refused changed nothing, so its
    arguments are the error."""
    mismatches = [
        {
            "tool": c.tool,
            "step": c.agent_step,
            "gold_step": c.gold_index,
            "keys": list(c.differing_arguments),
            "expected": {k: c.gold_arguments.get(k) for k in c.differing_arguments},
            "called": {k: (c.agent_arguments or {}).get(k) for k in c.differing_arguments},
        }
        for c, kind in compared
        if c.status == DIFFERS and not c.arguments_match and (kind != "write" or c.agent_error)
    ]
    if not mismatches:
        return None
    parts = [
        f"{m['tool']} at step {m['step']}: {', '.join(m['keys'])} "
        f"expected {m['expected']} got {m['called']}"
        for m in mismatches[:3]
    ]
    return ErrorLabel(
        WRONG_ARGUMENTS,
        tuple(sorted({m["step"] for m in mismatches})),
        "gold tool called with arguments unlike the gold chain: " + "; ".join(parts),
        {"mismatches": mismatches},
    )


def observation_drift(
    compared: list[tuple[StepComparison, str]],
    steps: list[Mapping[str, Any]],
    tool_kinds: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Gold reads made with the gold arguments that observed another result than the gold run,
    after the agent had written: its state had left the gold run's path by then."""
    writers = {name for name, kind in tool_kinds.items() if kind == "write"} | {
        c.tool for c, kind in compared if kind == "write"
    }
    first_write = next(
        (
            _step_index(s, p)
            for p, s in enumerate(steps)
            if _reached_tool(s) and not s.get("error_kind") and _tool_call(s)[0] in writers
        ),
        None,
    )
    return [
        {"tool": c.tool, "step": c.agent_step, "gold_step": c.gold_index}
        for c, kind in compared
        if kind != "write"  # a write's echo is judged by the state it leaves
        and c.arguments_match
        and c.result_match is False
        and first_write is not None
        and c.agent_step is not None
        and c.agent_step > first_write
    ]


def _write_argument_mismatches(compared: list[tuple[StepComparison, str]]) -> list[dict]:
    return [
        {"tool": c.tool, "step": c.agent_step, "keys": list(c.differing_arguments)}
        for c, kind in compared
        if kind == "write" and c.status == DIFFERS and not c.arguments_match and not c.agent_error
    ]


def _write_count(diff: Mapping[str, Any]) -> int:
    return sum(
        len(field_of(ops, kind) or [])
        for ops in diff.values()
        for kind in ("added", "removed", "changed")
    )


def compare_state_diffs(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, list]:
    """Pair gold writes with trajectory writes: ``missing``, ``wrong`` (same target, other
    values) and ``extra``. The reward's normaliser (``tasks.state_changes``) does the pairing,
    so diagnosis and reward agree on which writes match (surrogate ids and order ignored)."""
    return row_pairs(expected, actual)


def _write_steps(steps: list[Mapping[str, Any]], tool_kinds: Mapping[str, str]) -> tuple[int, ...]:
    """Steps where a write tool ran successfully: where the trajectory changed the state."""
    return tuple(
        _step_index(step, position)
        for position, step in enumerate(steps)
        if _reached_tool(step)
        and not step.get("error_kind")
        and tool_kinds.get(_tool_call(step)[0]) == "write"
    )


def _state_matches(trajectory: Any, task: Any) -> bool:
    expected_hash = field_of(task, "expected_state_hash")
    final_hash = field_of(trajectory, "final_state_hash")
    if expected_hash and expected_hash == final_hash:
        return True
    actual = field_of(trajectory, "state_diff")
    return actual is not None and compare_diffs(field_of(task, "expected_diff"), actual).same


def detect_state_errors(
    trajectory: Any,
    task: Any,
    steps: list[Mapping[str, Any]],
    tool_kinds: Mapping[str, str],
    compared: list[tuple[StepComparison, str]] = (),
) -> list[ErrorLabel]:
    expected = field_of(task, "expected_diff")
    drift = observation_drift(list(compared), steps, tool_kinds)
    if expected is None or _state_matches(trajectory, task):
        if not drift:
            return []
        return [
            ErrorLabel(
                WRONG_STATE_UPDATE,
                tuple(d["step"] for d in drift),
                f"the final state is right, but {len(drift)} gold read(s) made with the gold "
                "arguments after a write observed another result than the gold run: the state "
                "had diverged on the way",
                {"observation_drift": drift},
            )
        ]
    actual = field_of(trajectory, "state_diff") or {}
    comparison = compare_state_diffs(expected, actual)
    evidence_steps = _write_steps(steps, tool_kinds)
    # What the step comparison adds: writes made with other arguments than the gold run's, and
    # gold reads that observed the diverged state.
    extra_evidence = {
        key: value
        for key, value in (
            ("write_arguments", _write_argument_mismatches(list(compared))),
            ("observation_drift", drift),
        )
        if value
    }
    labels = []
    if comparison["missing"]:
        tables = sorted({m["table"] for m in comparison["missing"]})
        labels.append(
            ErrorLabel(
                MISSING_STATE_UPDATE,
                evidence_steps,
                f"{len(comparison['missing'])} of {_write_count(expected)} gold write(s) absent "
                f"from the final state (tables: {', '.join(tables)})",
                {"missing": comparison["missing"], **extra_evidence},
            )
        )
    if comparison["wrong"] or comparison["extra"]:
        tables = sorted({m["table"] for m in comparison["wrong"] + comparison["extra"]})
        labels.append(
            ErrorLabel(
                WRONG_STATE_UPDATE,
                evidence_steps,
                f"{len(comparison['wrong'])} write(s) with wrong values and "
                f"{len(comparison['extra'])} write(s) the gold run never made "
                f"(tables: {', '.join(tables)})",
                {"wrong": comparison["wrong"], "extra": comparison["extra"], **extra_evidence},
            )
        )
    return labels


def _answer_step(steps: list[Mapping[str, Any]]) -> int | None:
    for position in range(len(steps) - 1, -1, -1):
        step = steps[position]
        if step.get("role") == "assistant" and not step.get("tool_call"):
            return _step_index(step, position)
    return _step_index(steps[-1], len(steps) - 1) if steps else None


def detect_premature_answer(
    trajectory: Any, task: Any, steps: list[Mapping[str, Any]], tool_kinds: Mapping[str, str]
) -> ErrorLabel | None:
    """Answered before calling a tool the gold run reads with. A call that raised was still
    made (a tool error, not an early answer); a write never made is a missing state update."""
    if field_of(trajectory, "finished_reason") != "answer":
        return None
    needed = required_tools(task)
    if not needed:
        return None
    writes = {
        str(field_of(c, "tool"))
        for c in field_of(task, "gold_chain") or []
        if field_of(c, "kind") == "write"
    } | {name for name in needed if tool_kinds.get(name) == "write"}
    called = {_tool_call(s)[0] for s in steps if _reached_tool(s)}
    missing = [name for name in needed if name not in called]
    if not [name for name in missing if name not in writes]:
        return None
    answer_step = _answer_step(steps)
    return ErrorLabel(
        PREMATURE_ANSWER,
        (answer_step,) if answer_step is not None else (),
        f"answered after using {len(needed) - len(missing)} of {len(needed)} required tools; "
        f"never called {', '.join(missing)}",
        {"missing_tools": missing, "required_tools": needed},
    )


def detect_step_budget(trajectory: Any, steps: list[Mapping[str, Any]]) -> ErrorLabel | None:
    if field_of(trajectory, "finished_reason") != "step_budget":
        return None
    calls = sum(1 for s in steps if s.get("tool_call"))
    last = _step_index(steps[-1], len(steps) - 1) if steps else None
    return ErrorLabel(
        STEP_BUDGET_EXHAUSTED,
        (last,) if last is not None else (),
        f"step budget ran out after {len(steps)} steps ({calls} tool calls) without an answer",
        {"steps": len(steps), "tool_calls": calls},
    )


def detect_wrong_answer(
    trajectory: Any, task: Any, reward: RewardView, steps: list[Mapping[str, Any]]
) -> ErrorLabel | None:
    if field_of(trajectory, "finished_reason") != "answer":
        return None
    reference = field_of(task, "reference_answer")
    if reference is None or reward.answer is None or reward.answer >= _FULL_SCORE:
        return None
    answer_step = _answer_step(steps)
    given = field_of(trajectory, "final_answer")
    reason = reward.reasons.get("answer", "")
    return ErrorLabel(
        WRONG_ANSWER,
        (answer_step,) if answer_step is not None else (),
        f"answer {str(given)[:80]!r} does not match reference {str(reference)[:80]!r} "
        f"(answer score {reward.answer:.2f}{'; ' + reason if reason else ''})",
        {"final_answer": given, "reference_answer": reference, "answer_score": reward.answer},
    )


def detect_format_error(
    trajectory: Any, reward: RewardView, steps: list[Mapping[str, Any]]
) -> ErrorLabel | None:
    hits = [
        _step_index(s, p)
        for p, s in enumerate(steps)
        if s.get("role") == "assistant" and s.get("error_kind") in _FORMAT_KINDS
    ]
    reasons = []
    if field_of(trajectory, "finished_reason") == "format_error":
        reasons.append("episode ended on malformed assistant output")
        if not hits and steps:
            hits.append(_step_index(steps[-1], len(steps) - 1))
    elif hits:
        reasons.append(f"{len(hits)} malformed assistant message(s)")
    if not reasons:  # a low format score alone is the invalid tool calls' (or no call at all)
        return None
    if reward.format is not None and reward.format < _FULL_SCORE:
        detail = reward.reasons.get("format", "")
        reasons.append(f"format score {reward.format:.2f}" + (f": {detail}" if detail else ""))
    return ErrorLabel(FORMAT_ERROR, tuple(hits), "; ".join(reasons))


def detect_repeated_calls(steps: list[Mapping[str, Any]]) -> ErrorLabel | None:
    """The same tool with the same arguments at least LOOP_THRESHOLD times in a row."""
    runs: list[tuple[str, list[int]]] = []
    previous = None
    for position, step in enumerate(steps):
        call = _tool_call(step)
        if call is None:
            continue
        signature = call[0] + _canonical(call[1])
        if signature == previous:
            runs[-1][1].append(_step_index(step, position))
        else:
            runs.append((call[0], [_step_index(step, position)]))
        previous = signature
    loops = [(name, indices) for name, indices in runs if len(indices) >= LOOP_THRESHOLD]
    if not loops:
        return None
    return ErrorLabel(
        REPEATED_CALL_LOOP,
        tuple(i for _, indices in loops for i in indices),
        "; ".join(
            f"{name} called {len(idx)} times in a row with identical arguments"
            for name, idx in loops
        ),
        {"loops": [{"tool": name, "steps": idx} for name, idx in loops]},
    )


def label_failure(
    trajectory: Any, task: Any, reward: Any, tool_kinds: Mapping[str, str] | None = None
) -> list[ErrorLabel]:
    """All error labels the evidence supports for one episode, in taxonomy order.

    ``tool_kinds`` (the manifest's ``{"tool": "read" | "write"}``) lets state labels point at
    the write steps; without it they rest on the state diff alone.
    """
    steps = _steps(trajectory)
    kinds = tool_kinds or {}
    view = reward if isinstance(reward, RewardView) else read_reward(reward)
    compared = compare_with_gold(steps, task, kinds)
    found: Iterable[ErrorLabel | None] = [
        detect_invalid_tool_calls(steps),
        detect_tool_errors(steps),
        detect_wrong_arguments(compared),
        *detect_state_errors(trajectory, task, steps, kinds, compared),
        detect_premature_answer(trajectory, task, steps, kinds),
        detect_step_budget(trajectory, steps),
        detect_wrong_answer(trajectory, task, view, steps),
        detect_format_error(trajectory, view, steps),
        detect_repeated_calls(steps),
    ]
    labels = [label for label in found if label is not None]
    return sorted(labels, key=lambda label: ERROR_LABELS.index(label.kind))
