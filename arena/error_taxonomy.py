"""The error taxonomy of the arena, and the detectors that label one failed episode.

Every label is computed from executable evidence only: the recorded steps of the trajectory
(tool calls, their results and error kinds), the task's gold chain and expected state diff, and
the reward breakdown. A label carries the step indices it rests on and a short explanation, so a
reviewer can open the trajectory and see the same thing the diagnosis saw.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from aw_site.labels import value_in_words
from tasks.gold_results import canonical_value
from tasks.gold_tools import tools_called_in_solution
from tasks.reward_breakdown import RewardBreakdown
from tasks.state_changes import compare_diffs, row_pairs
from tasks.step_comparison import DIFFERS, StepComparison, compare_steps
from tasks.synthesis.task_spec import TaskSpec
from tasks.trajectory import Step, Trajectory

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


def _gold_steps(task: TaskSpec) -> list[dict[str, Any]]:
    """The gold chain's steps that name a tool."""
    return [step for step in task.gold_chain if isinstance(step.get("tool"), str)]


def required_tools(task: TaskSpec) -> list[str]:
    """Distinct tools the task's gold solution needs, in first-use order.

    Graph tasks name them in the gold chain; programmatic tasks call them in their solution as
    ``call("tool_name", ...)``, which the solution source shows without running it.
    """
    names = [step["tool"] for step in _gold_steps(task)]
    if not names:
        names = tools_called_in_solution(task.solution or "")
    return list(dict.fromkeys(names))


# --- the detectors ----------------------------------------------------------------------------


def detect_invalid_tool_calls(steps: Sequence[Step]) -> ErrorLabel | None:
    hits, reasons, tools = [], [], []
    for step in steps:
        kind = step.error_kind
        unparsed = step.raw_tool_call and step.tool_call is None
        if kind in _INVALID_CALL_KINDS or unparsed:
            hits.append(step.index)
            name = step.tool_name or "?"
            tools.append(name)
            reason = kind or "unparseable tool call"
            reasons.append(f"step {step.index}: {reason} ({name})")
    if not hits:
        return None
    return ErrorLabel(
        INVALID_TOOL_CALL,
        tuple(hits),
        f"{len(hits)} tool call(s) rejected before reaching a tool: " + "; ".join(reasons[:3]),
        {"tools": sorted(set(tools))},
    )


def detect_tool_errors(steps: Sequence[Step]) -> ErrorLabel | None:
    hits, messages, tools = [], [], []
    for step in steps:
        if step.error_kind in _TOOL_FAILURE_KINDS:
            hits.append(step.index)
            name = step.tool_name or "?"
            tools.append(name)
            error = str(step.error or step.error_kind).removeprefix(f"{name}: ")[:120]
            messages.append(f"step {step.index} {name}: {error}")  # tool errors start with it
    if not hits:
        return None
    return ErrorLabel(
        TOOL_ERROR,
        tuple(hits),
        f"{len(hits)} tool call(s) raised: " + "; ".join(messages[:3]),
        {"tools": sorted(set(tools))},
    )


def _reached_tool(step: Step) -> bool:
    return step.tool_call is not None and step.error_kind not in _INVALID_CALL_KINDS


def _gold_kinds(task: TaskSpec, tool_kinds: Mapping[str, str]) -> list[str]:
    """Read or write, per gold-chain step (the chain's own ``kind``, else the manifest's)."""
    return [
        str(step.get("kind") or tool_kinds.get(step["tool"]) or "read")
        for step in _gold_steps(task)
    ]


def compare_with_gold(
    steps: Sequence[Step], task: TaskSpec, tool_kinds: Mapping[str, str]
) -> list[tuple[StepComparison, str]]:
    """Each gold step with the agent call that answers it and the step's kind; only calls that
    reached a tool count (a rejected call is an invalid tool call, not a wrong argument)."""
    reached = [s for s in steps if _reached_tool(s)]
    comparisons = compare_steps(_gold_steps(task), reached)
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


def _writers(tool_kinds: Mapping[str, str]) -> set[str]:
    return {name for name, kind in tool_kinds.items() if kind == "write"}


def _wrote(step: Step, writers: set[str]) -> bool:
    """The step ran a write tool successfully: the trajectory changed the state there."""
    return _reached_tool(step) and not step.error_kind and step.tool_call.name in writers


def observation_drift(
    compared: list[tuple[StepComparison, str]],
    steps: Sequence[Step],
    tool_kinds: Mapping[str, str],
) -> list[dict[str, Any]]:
    """Gold reads made with the gold arguments that observed another result than the gold run,
    after the agent had written: its state had left the gold run's path by then."""
    writers = _writers(tool_kinds) | {c.tool for c, kind in compared if kind == "write"}
    first_write = next((s.index for s in steps if _wrote(s, writers)), None)
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


def write_count(diff: Mapping[str, Mapping[str, list]]) -> int:
    """The rows a state diff adds, removes or changes."""
    return sum(
        len(ops.get(kind) or [])
        for ops in diff.values()
        for kind in ("added", "removed", "changed")
    )


def compare_state_diffs(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, list]:
    """Pair gold writes with trajectory writes: ``missing``, ``wrong`` (same target, other
    values) and ``extra``. The reward's normaliser (``tasks.state_changes``) does the pairing,
    so diagnosis and reward agree on which writes match (surrogate ids and order ignored)."""
    return row_pairs(expected, actual)


def _state_matches(trajectory: Trajectory, task: TaskSpec) -> bool:
    expected_hash = task.expected_state_hash
    if expected_hash and expected_hash == trajectory.final_state_hash:
        return True
    actual = trajectory.state_diff
    return actual is not None and compare_diffs(task.expected_diff, actual).same


def detect_state_errors(
    trajectory: Trajectory,
    task: TaskSpec,
    tool_kinds: Mapping[str, str],
    compared: list[tuple[StepComparison, str]] = (),
) -> list[ErrorLabel]:
    steps = trajectory.steps
    expected = task.expected_diff
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
    comparison = compare_state_diffs(expected, trajectory.state_diff or {})
    evidence_steps = tuple(s.index for s in steps if _wrote(s, _writers(tool_kinds)))
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
                f"{len(comparison['missing'])} of {write_count(expected)} gold write(s) absent "
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


def _answer_step(steps: Sequence[Step]) -> int | None:
    for step in reversed(steps):
        if step.role == "assistant" and not step.tool_call:
            return step.index
    return steps[-1].index if steps else None


def detect_premature_answer(
    trajectory: Trajectory, task: TaskSpec, tool_kinds: Mapping[str, str]
) -> ErrorLabel | None:
    """Answered before calling a tool the gold run reads with. A call that raised was still
    made (a tool error, not an early answer); a write never made is a missing state update."""
    if trajectory.finished_reason != "answer":
        return None
    needed = required_tools(task)
    if not needed:
        return None
    writes = {str(c.get("tool")) for c in task.gold_chain if c.get("kind") == "write"} | {
        name for name in needed if tool_kinds.get(name) == "write"
    }
    called = {s.tool_call.name for s in trajectory.steps if _reached_tool(s)}
    missing = [name for name in needed if name not in called]
    if not [name for name in missing if name not in writes]:
        return None
    answer_step = _answer_step(trajectory.steps)
    return ErrorLabel(
        PREMATURE_ANSWER,
        (answer_step,) if answer_step is not None else (),
        f"answered after using {len(needed) - len(missing)} of {len(needed)} required tools; "
        f"never called {', '.join(missing)}",
        {"missing_tools": missing, "required_tools": needed},
    )


def detect_step_budget(trajectory: Trajectory) -> ErrorLabel | None:
    if trajectory.finished_reason != "step_budget":
        return None
    steps = trajectory.steps
    calls = sum(1 for s in steps if s.tool_call)
    last = steps[-1].index if steps else None
    return ErrorLabel(
        STEP_BUDGET_EXHAUSTED,
        (last,) if last is not None else (),
        f"step budget ran out after {len(steps)} steps ({calls} tool calls) without an answer",
        {"steps": len(steps), "tool_calls": calls},
    )


def detect_wrong_answer(
    trajectory: Trajectory, task: TaskSpec, reward: RewardBreakdown
) -> ErrorLabel | None:
    if trajectory.finished_reason != "answer":
        return None
    reference = task.reference_answer
    answer_score = reward.score_of("answer")
    if reference is None or answer_score is None or answer_score >= _FULL_SCORE:
        return None
    answer_step = _answer_step(trajectory.steps)
    given = trajectory.final_answer
    reason = reward.reason_of("answer")
    return ErrorLabel(
        WRONG_ANSWER,
        (answer_step,) if answer_step is not None else (),
        f"answer '{value_in_words(given)[:80]}' does not match reference "
        f"'{value_in_words(reference)[:80]}' "
        f"(answer score {answer_score:.2f}{'; ' + reason if reason else ''})",
        {"final_answer": given, "reference_answer": reference, "answer_score": answer_score},
    )


def detect_format_error(trajectory: Trajectory, reward: RewardBreakdown) -> ErrorLabel | None:
    steps = trajectory.steps
    hits = [s.index for s in steps if s.role == "assistant" and s.error_kind in _FORMAT_KINDS]
    reasons = []
    if trajectory.finished_reason == "format_error":
        reasons.append("episode ended on malformed assistant output")
        if not hits and steps:
            hits.append(steps[-1].index)
    elif hits:
        reasons.append(f"{len(hits)} malformed assistant message(s)")
    if not reasons:  # a low format score alone is the invalid tool calls' (or no call at all)
        return None
    format_score = reward.score_of("format")
    if format_score is not None and format_score < _FULL_SCORE:
        detail = reward.reason_of("format")
        reasons.append(f"format score {format_score:.2f}" + (f": {detail}" if detail else ""))
    return ErrorLabel(FORMAT_ERROR, tuple(hits), "; ".join(reasons))


def detect_repeated_calls(steps: Sequence[Step]) -> ErrorLabel | None:
    """The same tool with the same arguments at least LOOP_THRESHOLD times in a row."""
    runs: list[tuple[str, list[int]]] = []
    previous = None
    for step in steps:
        call = step.tool_call
        if call is None:
            continue
        signature = call.name + canonical_value(call.arguments)
        if signature == previous:
            runs[-1][1].append(step.index)
        else:
            runs.append((call.name, [step.index]))
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
    trajectory: Trajectory,
    task: TaskSpec,
    reward: RewardBreakdown,
    tool_kinds: Mapping[str, str] | None = None,
) -> list[ErrorLabel]:
    """All error labels the evidence supports for one episode, in taxonomy order.

    ``tool_kinds`` (the manifest's ``{"tool": "read" | "write"}``) lets state labels point at
    the write steps; without it they rest on the state diff alone.
    """
    steps = trajectory.steps
    kinds = tool_kinds or {}
    compared = compare_with_gold(steps, task, kinds)
    found: Iterable[ErrorLabel | None] = [
        detect_invalid_tool_calls(steps),
        detect_tool_errors(steps),
        detect_wrong_arguments(compared),
        *detect_state_errors(trajectory, task, kinds, compared),
        detect_premature_answer(trajectory, task, kinds),
        detect_step_budget(trajectory),
        detect_wrong_answer(trajectory, task, reward),
        detect_format_error(trajectory, reward),
        detect_repeated_calls(steps),
    ]
    labels = [label for label in found if label is not None]
    return sorted(labels, key=lambda label: ERROR_LABELS.index(label.kind))
