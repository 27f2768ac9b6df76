"""Where and how to break a gold run: one known failure per episode, for calibrating diagnosis.

A plan follows the task's gold chain and changes exactly one thing (``FAULTS``). The fault is
chosen per episode from a seed and the task id (or fixed by configuration) among the faults the
task allows *alone*: a skipped write must be one no later step reads from, a premature answer
skips no write, a budget run needs two distinct reads to cycle without looping. A fault the task
does not allow gives a clean gold run, and the plan says why.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from tasks.answer_contract import task_contract
from tasks.audit import wrong_answer

WRONG_ARGUMENT = "wrong_argument"
SKIPPED_WRITE = "skipped_write"
WRONG_WRITE = "wrong_write"
PREMATURE_ANSWER = "premature_answer"
UNKNOWN_TOOL = "unknown_tool"
MALFORMED_CALL = "malformed_call"
REPEATED_CALL_LOOP = "repeated_call_loop"
BUDGET_EXHAUSTION = "budget_exhaustion"
WRONG_FINAL_ANSWER = "wrong_final_answer"
NO_FAULT = "none"
FAULTS: tuple[str, ...] = (
    WRONG_ARGUMENT,
    SKIPPED_WRITE,
    WRONG_WRITE,
    PREMATURE_ANSWER,
    UNKNOWN_TOOL,
    MALFORMED_CALL,
    REPEATED_CALL_LOOP,
    BUDGET_EXHAUSTION,
    WRONG_FINAL_ANSWER,
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][0-9:.+Z-]*)?")
LOOP_REPEATS = 3  # identical calls in a row (the taxonomy's loop threshold)
MALFORMED_TEXT = '<tool_call>\n{"name": "%s", "arguments": {"%s": </tool_call>'


@dataclass(frozen=True)
class Turn:
    """One scripted assistant turn: a tool call, a malformed call, or the final answer."""

    kind: str  # "call" | "malformed" | "answer"
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    answer: Any = None


@dataclass(frozen=True)
class FaultPlan:
    """The turns of one episode; after them ``cycle`` repeats (budget runs) or nothing does."""

    fault: str
    gold_step: int | None
    turns: tuple[Turn, ...]
    cycle: tuple[Turn, ...] = ()
    note: str = ""

    def turn(self, index: int) -> Turn | None:
        if index < len(self.turns):
            return self.turns[index]
        if self.cycle:
            return self.cycle[(index - len(self.turns)) % len(self.cycle)]
        return None

    def metadata(self, seed: int) -> dict[str, Any]:
        """What the trajectory records: the fault and the gold step it hit (no gold values)."""
        data: dict[str, Any] = {"fault": self.fault, "gold_step": self.gold_step, "seed": seed}
        if self.note:
            data["note"] = self.note
        return data


def _calls(task: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in task.get("gold_chain") or [] if isinstance(c, Mapping) and c.get("tool")]


def _is_write(call: Mapping[str, Any], kinds: Mapping[str, str]) -> bool:
    return (call.get("kind") or kinds.get(call["tool"])) == "write"


def _call(step: Mapping[str, Any], arguments: dict[str, Any] | None = None) -> Turn:
    return Turn(
        "call", step["tool"], dict(step.get("arguments") or {}) if arguments is None else arguments
    )


def _values(value: Any) -> set[str]:
    """The scalar values inside an argument dict or a result, as text."""
    if isinstance(value, Mapping):
        return set().union(*(_values(v) for v in value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*(_values(v) for v in value)) if value else set()
    return {str(value)} if value is not None else set()


def _alone(chain: Sequence[Mapping[str, Any]], position: int, writes: list[int]) -> bool:
    """Whether no other write of the chain shares an argument value with this one (it would
    likely touch the same row: skipping one of two updates leaves a wrong row, not a missing
    one)."""
    mine = _values(chain[position].get("arguments") or {})
    return not any(
        mine & _values(chain[other].get("arguments") or {}) for other in writes if other != position
    )


def _enum(schemas: Mapping[str, Any], tool: str, name: str) -> list[Any]:
    schema = schemas.get(tool) or {}
    prop = ((schema.get("parameters") or {}).get("properties") or {}).get(name) or {}
    return list(prop.get("enum") or [])


def other_value(value: Any, choices: Sequence[Any] = ()) -> Any:
    """A value of the same type that differs: another enum choice, a flipped bool, a number
    one step off, a string edited at its end. None when there is no such value."""
    others = [c for c in choices if c != value]
    if others:
        return others[0]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value * 1.5 + 1, 2)
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            day = date.fromisoformat(value[:10]) + timedelta(days=1)
        except ValueError:  # shaped like a date, but not one
            return f"{value} (edited)"
        return day.isoformat() + value[10:]
    if isinstance(value, str) and value:
        return f"{value} (edited)"
    return None


def _code(value: Any) -> bool:
    """A code (``FR``, ``KJFK``) rather than free text, a number or a date: it likely names a
    row another table must hold, and an edited one is refused."""
    return (
        isinstance(value, str)
        and not _DATE.fullmatch(value)
        and " " not in value
        and not any(c.islower() for c in value)
    )


def _perturbable(
    arguments: Mapping[str, Any],
    bound: Mapping[str, Any],
    seen: set[str],
    fresh_only: bool,
    serials: frozenset[str] = frozenset(),
) -> list[str]:
    """Arguments worth changing: values new to the chain and not codes first (a write's free
    text, number or date; not a key or a reference another table must hold), then any not
    taken from an earlier step. ``fresh_only``: those first ones or nothing (a write whose
    arguments are all keys or codes would be refused when changed: a tool error and a missing
    write, not a wrong one)."""
    names = [n for n in sorted(arguments) if other_value(arguments[n]) is not None]
    plain = [
        n
        for n in names
        if n not in bound and n != "id" and not n.endswith("_id") and n not in serials
    ]  # a serial key a create is given is arbitrary: the state comparison rightly ignores it
    fresh = [n for n in plain if str(arguments[n]) not in seen]
    safe = [n for n in fresh if not _code(arguments[n])]
    return safe if fresh_only else safe or fresh or plain or names


class _Planner:
    def __init__(self, task: Mapping[str, Any], kinds: Mapping[str, str], schemas, rng):
        self.task = task
        self.chain = _calls(task)
        self.kinds = kinds
        self.schemas = schemas
        self.rng = rng
        self.gold = [_call(step) for step in self.chain]
        self.answer = Turn("answer", answer=task.get("reference_answer"))
        self.writes = [i for i, c in enumerate(self.chain) if _is_write(c, kinds)]
        diff = task.get("expected_diff") or {}
        self.serials = frozenset(  # surrogate keys of the tables the task writes
            k
            for table in diff.values()
            if isinstance(table, Mapping) and table.get("surrogate")
            for k in table.get("key") or ()
        )
        self.reads = [i for i, c in enumerate(self.chain) if i not in self.writes]

    def plan(self, fault: str) -> FaultPlan | str:
        """The plan of ``fault`` or, when the task does not allow it alone, the reason."""
        if not self.chain:
            return "the task has no gold chain to follow"
        return getattr(self, f"_{fault}")()

    def _with(self, fault: str, position: int | None, turns: list[Turn], **extra) -> FaultPlan:
        return FaultPlan(fault, position, tuple(turns), **extra)

    def _changed(self, position: int, fresh_only: bool = False) -> Turn | None:
        step = self.chain[position]
        arguments = dict(step.get("arguments") or {})
        seen = set().union(
            *(_values(c.get("arguments")) | _values(c.get("result")) for c in self.chain[:position])
        )
        names = _perturbable(arguments, step.get("inputs") or {}, seen, fresh_only, self.serials)
        if not names:
            return None
        name = names[self.rng.randrange(len(names))]
        arguments[name] = other_value(arguments[name], _enum(self.schemas, step["tool"], name))
        return _call(step, arguments)

    def _wrong_argument(self):
        candidates = [i for i in self.reads if self._changed(i) is not None]
        if not candidates:
            return "no read step has an argument to change"
        position = candidates[self.rng.randrange(len(candidates))]
        turns = list(self.gold)
        turns[position] = self._changed(position)
        return self._with(WRONG_ARGUMENT, position, turns + [self.answer])

    def _skipped_write(self):
        free = [i for i in self.writes if _alone(self.chain, i, self.writes)]
        if not free:
            return "every write of the task touches what another write touches"
        position = free[self.rng.randrange(len(free))]
        turns = self.gold[:position] + self.gold[position + 1 :]
        return self._with(SKIPPED_WRITE, position, turns + [self.answer])

    def _wrong_write(self):
        candidates = [
            i
            for i in self.writes
            if _alone(self.chain, i, self.writes) and self._changed(i, fresh_only=True) is not None
        ]
        if not candidates:
            return "the task makes no write of its own with a new value to change"
        position = candidates[self.rng.randrange(len(candidates))]
        turns = list(self.gold)
        turns[position] = self._changed(position, fresh_only=True)
        return self._with(WRONG_WRITE, position, turns + [self.answer])

    def _premature_answer(self):
        cuts = []
        for cut in range(len(self.chain)):
            done = {c["tool"] for c in self.chain[:cut]}
            skipped = self.chain[cut:]
            if any(_is_write(c, self.kinds) for c in skipped):
                continue
            if any(c["tool"] not in done for c in skipped):
                cuts.append(cut)
        if not cuts:
            return "every early answer would also skip a write"
        cut = cuts[self.rng.randrange(len(cuts))]
        return self._with(PREMATURE_ANSWER, cut, self.gold[:cut] + [self.answer])

    def _unknown_tool(self):
        position = self.rng.randrange(len(self.chain) + 1)
        known = set(self.schemas) | {c["tool"] for c in self.chain}
        name = "lookup_everything"
        while name in known:
            name += "_v2"
        arguments = dict(self.chain[min(position, len(self.chain) - 1)].get("arguments") or {})
        turns = self.gold[:position] + [Turn("call", name, arguments)] + self.gold[position:]
        return self._with(UNKNOWN_TOOL, position, turns + [self.answer])

    def _malformed_call(self):
        position = self.rng.randrange(len(self.chain))
        step = self.chain[position]
        first = next(iter(step.get("arguments") or {"query": 0}))
        broken = Turn("malformed", step["tool"], answer=MALFORMED_TEXT % (step["tool"], first))
        turns = self.gold[:position] + [broken] + self.gold[position:]
        return self._with(MALFORMED_CALL, position, turns + [self.answer])

    def _repeated_call_loop(self):
        if not self.reads:
            return "the task has no read step to repeat"
        position = self.reads[self.rng.randrange(len(self.reads))]
        repeats = [self.gold[position]] * (LOOP_REPEATS - 1)
        turns = self.gold[: position + 1] + repeats + self.gold[position + 1 :]
        return self._with(REPEATED_CALL_LOOP, position, turns + [self.answer])

    def _budget_exhaustion(self):
        distinct: dict[tuple[str, str], Turn] = {}
        for i in self.reads:
            turn = self.gold[i]
            distinct.setdefault((turn.tool, repr(sorted(turn.arguments.items()))), turn)
        if len(distinct) < 2:
            return "the task has fewer than two distinct reads to cycle through"
        return self._with(BUDGET_EXHAUSTION, None, self.gold, cycle=tuple(distinct.values()))

    def _wrong_final_answer(self):
        reference = self.task.get("reference_answer")
        contract = task_contract(self.task)
        if reference is None or not contract.expects_answer:
            return "the task expects no answer"
        wrong = Turn("answer", answer=wrong_answer(contract, reference))
        return self._with(WRONG_FINAL_ANSWER, None, self.gold + [wrong])


def choose_fault(task_id: str, seed: int, clean_share: float = 0.0) -> tuple[random.Random, str]:
    """The episode's random source and its fault (``NO_FAULT`` with ``clean_share``)."""
    rng = random.Random(f"fault:{seed}:{task_id}")
    if rng.random() < clean_share:
        return rng, NO_FAULT
    return rng, ""


def plan_episode(
    task: Mapping[str, Any],
    task_id: str,
    *,
    seed: int = 0,
    fault: str | None = None,
    clean_share: float = 0.0,
    tool_kinds: Mapping[str, str] | None = None,
    tool_schemas: Mapping[str, Any] | None = None,
) -> FaultPlan:
    """The plan of one episode: ``fault`` when given, else one drawn from the task's allowed
    faults by ``seed`` and ``task_id``; a clean gold run with ``NO_FAULT``."""
    if fault is not None and fault not in FAULTS and fault != NO_FAULT:
        raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)} or {NO_FAULT}")
    rng, drawn = choose_fault(task_id, seed, clean_share if fault is None else 0.0)
    planner = _Planner(task, tool_kinds or {}, tool_schemas or {}, rng)
    clean = FaultPlan(NO_FAULT, None, tuple(planner.gold + [planner.answer]))
    if (fault or drawn) == NO_FAULT:
        return clean
    if fault is not None:
        plan = planner.plan(fault)
        if isinstance(plan, str):
            return FaultPlan(NO_FAULT, None, clean.turns, note=f"{fault} does not apply: {plan}")
        return plan
    allowed = [p for p in (planner.plan(f) for f in FAULTS) if not isinstance(p, str)]
    if not allowed:
        return FaultPlan(NO_FAULT, None, clean.turns, note="no fault applies to this task")
    return allowed[rng.randrange(len(allowed))]
