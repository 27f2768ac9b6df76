"""The verifier audit: before a task is used, its own reward must tell right runs from wrong.

For every synthesized task, real runs are replayed in sandbox episodes and scored by
``tasks.reward.score``: the gold run must score 1.0; a no-op run, the gold run with its last
write dropped, with one argument perturbed (so that the outcome changes), with an extra write,
with a wrong answer, with a hedged answer and, for a conditional step, with the branch the
condition did not select, must each be *not solved* and under the partial-credit cap; and the
instruction must not state the answer it asks for (``given_answer``). A check that cannot apply (no write to drop, no answer to hedge, no
argument that changes the outcome) is recorded as not applicable. A task failing any check is
discarded and counted by the first check it failed.

Before any replay, the meaning checks (``tasks.synthesis.meaning``) read the task against the
environment's schema: a task that names a row by its surrogate id, hops back to a row already
named, repeats a clause, joins values that only coincide, sets a field to itself, leaks an
internal name or expects another answer than it asks for is discarded by that check's name,
without costing a sandbox run.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tasks.answer_contract import AnswerContract, compare, task_contract
from tasks.reward import RewardSettings, score
from tasks.state_changes import compare_diffs
from tasks.synthesis.arguments import coerce, write_arguments
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.meaning import DETECTORS, MeaningFacts
from tasks.synthesis.task_spec import TaskSpec, canonical_json
from tasks.synthesis.tool_graph import ToolNode, is_row_list, records_of, row_of
from tasks.trajectory import Step, ToolCall, Trajectory
from tasks.verification import run_verification

MEANING_CHECKS: tuple[str, ...] = tuple(DETECTORS)
CHECKS: tuple[str, ...] = (
    *MEANING_CHECKS,
    "gold",
    "no_op",
    "dropped_write",
    "perturbed_argument",
    "extra_write",
    "wrong_answer",
    "hedged_answer",
    "wrong_branch",
    "given_answer",
)
PERTURB_TRIES = 6
FROM_RUN = object()  # an answer read from the replayed run's own last result
EXTRA_WRITE_TRIES = 6


@dataclass
class AuditCheck:
    """One run of the audit and what the reward made of it."""

    name: str
    applicable: bool
    passed: bool
    solved: bool = False
    total: float = 0.0
    detail: str = ""


@dataclass
class VerifierAudit:
    """The audit of one task: every check, and the first failure if any."""

    passed: bool
    checks: list[AuditCheck] = field(default_factory=list)
    failed: str | None = None  # the first check that failed: the discard reason

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "failed": self.failed,
            "checks": [asdict(c) for c in self.checks],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifierAudit:
        checks = [AuditCheck(**c) for c in data.get("checks", [])]
        return cls(bool(data.get("passed")), checks, data.get("failed"))


@dataclass
class AuditSummary:
    """Per environment: tasks audited, kept and discarded by reason, applicable checks."""

    audited: int = 0
    kept: int = 0
    discarded: dict[str, int] = field(default_factory=dict)
    checks_applied: dict[str, int] = field(default_factory=dict)

    def add(self, audit: VerifierAudit) -> None:
        self.audited += 1
        if audit.passed:
            self.kept += 1
        else:
            self.discarded[audit.failed or "unknown"] = (
                self.discarded.get(audit.failed or "unknown", 0) + 1
            )
        for check in audit.checks:
            if check.applicable:
                self.checks_applied[check.name] = self.checks_applied.get(check.name, 0) + 1

    def merge(self, other: AuditSummary) -> AuditSummary:
        discarded = Counter(self.discarded) + Counter(other.discarded)
        applied = Counter(self.checks_applied) + Counter(other.checks_applied)
        return AuditSummary(
            self.audited + other.audited,
            self.kept + other.kept,
            dict(discarded),
            dict(applied),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> AuditSummary:
        data = data or {}
        return cls(
            int(data.get("audited", 0)),
            int(data.get("kept", 0)),
            dict(data.get("discarded") or {}),
            dict(data.get("checks_applied") or {}),
        )


# --- wrong answers of the right shape ---------------------------------------------------------


def wrong_value(contract: AnswerContract, value: Any) -> Any:
    """A value of the same type as ``value`` that the contract does not accept as equal."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        step = 10 ** -(contract.precision or 0) if contract.precision is not None else 0
        return round(value * 1.5 + 1 + step, 6)
    if isinstance(value, str):
        return f"{value} (other)"
    if isinstance(value, dict):
        if not value:
            return {"other": 1}
        first = sorted(value)[0]
        return {**value, first: wrong_value(contract, value[first])}
    return "other"


def wrong_answer(contract: AnswerContract, reference: Any) -> Any:
    if contract.kind == "list":
        items = list(reference or [])
        if len(items) > 1:
            return items[:-1]  # one item missing
        return [wrong_value(contract, items[0])] if items else ["other"]
    return wrong_value(contract, reference)


def hedged_answer(contract: AnswerContract, reference: Any) -> Any:
    """Several candidates where one is asked; for a list, the answer plus an extra candidate."""
    if contract.kind == "list":
        items = list(reference or [])
        extra = wrong_value(contract, items[0]) if items else "other"
        return items + [extra]
    if contract.kind == "text":
        return f"{reference} or {wrong_value(contract, reference)}"
    return [reference, wrong_value(contract, reference)]


def project(spec: dict[str, Any], result: Any) -> Any:
    """The answer a run would report from its last result, by the task's answer spec."""
    shape, reported = spec.get("shape"), spec.get("field")
    if shape in (None, "none") or result is None:
        return None
    if shape == "scalar":
        return result
    if shape == "list":
        if not is_row_list(result):
            return result if isinstance(result, list) else [result]
        records = records_of(result)
        return [r.get(reported) for r in records] if reported else records
    row = row_of(result)  # {"item": {...}}: the row the envelope wraps
    if shape == "value" and isinstance(row, dict):
        return row.get(reported) if reported else row
    return row if shape == "object" else result


# --- the auditor ------------------------------------------------------------------------------


class VerifierAuditor:
    """Audits tasks of one environment package, replaying runs in the sandbox."""

    def __init__(
        self,
        package: Any,
        pool: Any,
        view: Any,
        nodes: dict[str, ToolNode] | None = None,
        settings: RewardSettings | None = None,
        facts: MeaningFacts | None = None,
    ):
        self.package = package
        self.pool = pool
        self.view = view
        self.nodes = nodes or {}
        self.settings = settings or RewardSettings()
        self.summary = AuditSummary()
        self._initial_hash: str | None = None
        self._facts = facts

    @property
    def facts(self) -> MeaningFacts | None:
        """The environment's schema facts for the meaning checks (None without a view)."""
        if self._facts is None and isinstance(self.view, EnvironmentView):
            self._facts = MeaningFacts.of(self.view, self.nodes)
        return self._facts

    def meaning_checks(self, task: TaskSpec) -> list[AuditCheck]:
        """One check per meaning detector; not applicable where no schema facts are known."""
        facts = self.facts
        if facts is None:
            detail = "no environment view to read the schema from"
            return [AuditCheck(name, False, True, detail=detail) for name in MEANING_CHECKS]
        checks = []
        for name, detector in DETECTORS.items():
            reason = detector(task, facts)
            checks.append(AuditCheck(name, True, reason is None, detail=reason or ""))
        return checks

    def audit(self, task: TaskSpec) -> VerifierAudit:
        contract = task_contract(task)
        rng = random.Random(f"audit:{task.signature}")
        gold_calls = [
            {"tool": c["tool"], "arguments": dict(c.get("arguments") or {})}
            for c in task.gold_chain
        ]
        reference = task.reference_answer if contract.expects_answer else None
        checks = self.meaning_checks(task)
        failed = next((c.name for c in checks if c.applicable and not c.passed), None)
        if failed is not None:  # meaningless: no replay can make it worth keeping
            audit = VerifierAudit(False, checks, failed)
            self.summary.add(audit)
            return audit
        # A graph gold run reports what its replayed last step returns: a stale or corrupted
        # reference then fails the gold check instead of agreeing with itself.
        answers = {"gold": FROM_RUN if task.kind == "graph" else reference}
        if contract.expects_answer:
            answers["wrong_answer"] = wrong_answer(contract, reference)
            answers["hedged_answer"] = hedged_answer(contract, reference)
        runs = self._run(task, gold_calls, answers)
        checks.append(self._expect_solved("gold", task, runs["gold"]))
        if checks[-1].passed:
            checks.append(self._expect_failed("no_op", task, self._no_op(task)))
            checks.append(self._dropped_write(task, gold_calls, reference))
            checks.append(self._perturbed(task, gold_calls, rng))
            checks.append(self._extra_write(task, gold_calls, reference, rng))
            for name in ("wrong_answer", "hedged_answer"):
                if name in runs:
                    checks.append(self._expect_failed(name, task, runs[name]))
                else:
                    checks.append(AuditCheck(name, False, True, detail="the task asks no answer"))
            checks.append(self._wrong_branch(task, gold_calls))
            checks.append(given_answer_check(task, reference))
        failed = next((c.name for c in checks if c.applicable and not c.passed), None)
        audit = VerifierAudit(failed is None, checks, failed)
        self.summary.add(audit)
        return audit

    # -- runs ----------------------------------------------------------------------------------

    def _run(
        self, task: TaskSpec, calls: list[dict[str, Any]], answers: dict[str, Any]
    ) -> dict[str, Trajectory]:
        """Replay ``calls`` in one fresh episode; one trajectory per answer on that state."""
        # A template's verification script and the audit's own answers are this project's
        # code and values: no fresh worker after each check (an LLM's script gets one).
        trusted = (task.metadata or {}).get("instruction_source") == "template"
        steps = []
        with self.pool.start_episode(self.package) as episode:
            for index, call in enumerate(calls):
                outcome = episode.call_tool(call["tool"], call["arguments"])
                steps.append(
                    Step(
                        index=index,
                        role="assistant",
                        tool_call=ToolCall(call["tool"], call["arguments"]),
                        tool_result=outcome.result,
                        error=outcome.error,
                        error_kind=outcome.error_kind,
                    )
                )
            final_hash, diff = episode.state_hash(), episode.state_diff()
            runs = {}
            for name, answer in answers.items():
                if answer is FROM_RUN:
                    spec = (task.metadata or {}).get("answer") or {}
                    last = steps[-1].tool_result if steps else None
                    answer = project(spec, last) if task_contract(task).expects_answer else None
                verification = None
                if task.verification:
                    verification = run_verification(
                        episode, task.verification, answer, recycle=False if trusted else None
                    )
                runs[name] = Trajectory(
                    task_id=task.task_id,
                    environment=task.environment,
                    steps=steps,
                    final_answer=canonical_json({"answer": answer}),
                    final_state_hash=final_hash,
                    state_diff=diff,
                    verification=verification,
                )
        return runs

    def _no_op(self, task: TaskSpec) -> Trajectory:
        verification = {"passed": False, "error": "no answer"} if task.verification else None
        return Trajectory(
            task_id=task.task_id,
            environment=task.environment,
            final_state_hash=self.initial_hash(),
            verification=verification,
        )

    def initial_hash(self) -> str:
        """The package's initial state hash, read from one episode the first time it is asked."""
        if self._initial_hash is None:
            with self.pool.start_episode(self.package) as episode:
                self._initial_hash = episode.state_hash()
        return self._initial_hash

    # -- checks --------------------------------------------------------------------------------

    def _expect_solved(self, name: str, task: TaskSpec, run: Trajectory) -> AuditCheck:
        breakdown = score(task, run, self.settings)
        passed = breakdown.success and breakdown.total >= 0.999
        return AuditCheck(
            name, True, passed, breakdown.success, breakdown.total, "" if passed else breakdown.gate
        )

    def _expect_failed(self, name: str, task: TaskSpec, run: Trajectory, detail: str = ""):
        breakdown = score(task, run, self.settings)
        passed = not breakdown.success and breakdown.total <= self.settings.partial_cap + 1e-9
        note = detail or breakdown.gate
        return AuditCheck(name, True, passed, breakdown.success, breakdown.total, note)

    def _write_positions(self, task: TaskSpec) -> list[int]:
        kinds = {name: node.kind for name, node in self.nodes.items()}
        return [
            i
            for i, c in enumerate(task.gold_chain)
            if (c.get("kind") or kinds.get(c["tool"])) == "write"
        ]

    def _dropped_write(self, task: TaskSpec, calls, reference) -> AuditCheck:
        writes = self._write_positions(task)
        if not writes:
            return AuditCheck("dropped_write", False, True, detail="the task makes no write")
        if not compare_diffs(task.expected_diff, {}).expected:
            # Its writes change nothing (the row already held the value): a run that skips
            # them, or does nothing but look, ends in the same state and would be solved.
            detail = "the gold run's writes leave the state unchanged"
            return AuditCheck("dropped_write", True, False, detail=detail)
        kept = calls[: writes[-1]] + calls[writes[-1] + 1 :]
        run = self._run(task, kept, {"gold": reference})["gold"]
        return self._expect_failed(
            "dropped_write", task, run, f"dropped {calls[writes[-1]]['tool']}"
        )

    def _perturbed(self, task: TaskSpec, calls, rng: random.Random) -> AuditCheck:
        """Change one argument (last step first) until the run's outcome differs from gold.

        A graph run reports what its own last step returned; a programmatic run can only be
        perturbed in a write (its answer comes from code), and claims the reference answer.
        """
        spec = (task.metadata or {}).get("answer") or {}
        graph = task.kind == "graph"
        writes = self._write_positions(task)
        if not calls or (not graph and not writes):
            detail = "no argument of a read-only programmatic run can be changed alone"
            return AuditCheck("perturbed_argument", False, True, detail=detail)
        contract = task_contract(task)
        tried = 0
        for position in range(len(calls) - 1, -1, -1):
            if not graph and position not in writes:
                continue
            for name in sorted(calls[position]["arguments"]):
                for value in self._other_values(calls[position], name, rng):
                    if tried >= PERTURB_TRIES:
                        break
                    tried += 1
                    changed = [dict(c, arguments=dict(c["arguments"])) for c in calls]
                    changed[position]["arguments"][name] = value
                    claimed = task.reference_answer if contract.expects_answer else None
                    run = self._run(task, changed, {"run": claimed})["run"]
                    last = run.steps[-1]
                    if last.error_kind:
                        continue
                    answer = claimed
                    if graph and contract.expects_answer:
                        answer = project(spec, last.tool_result)
                        run.final_answer = canonical_json({"answer": answer})
                    same_answer = not contract.expects_answer or (
                        answer is not None
                        and compare(contract, task.reference_answer, answer).correct
                    )
                    if same_answer and compare_diffs(task.expected_diff, run.state_diff).same:
                        continue  # the outcome did not change: not a wrong run
                    detail = f"{calls[position]['tool']}.{name}={value!r}"
                    return self._expect_failed("perturbed_argument", task, run, detail)
        detail = "no single argument changes the outcome"
        return AuditCheck("perturbed_argument", False, True, detail=detail)

    def _other_values(self, call: dict[str, Any], name: str, rng: random.Random) -> list[Any]:
        value = call["arguments"][name]
        node = self.nodes.get(call["tool"])
        param = node.params.get(name) if node else None
        options: list[Any] = []
        source = (param.key or param.column) if param else None
        if param is not None and param.enum:
            options = [v for v in param.enum if v != value]
        elif source and source[0] in self.view.tables:
            values = [v for v in self.view.column_values(*source) if v != value]
            rng.shuffle(values)
            options = [coerce(v, param.type) for v in values[:3]]
        if isinstance(value, bool):
            options.append(not value)
        elif isinstance(value, int | float):
            options.append(value + 1 if isinstance(value, int) else round(value * 1.5 + 1, 2))
        elif isinstance(value, str) and not options:
            options.append(f"{value}x")
        return options

    def _wrong_branch(self, task: TaskSpec, calls) -> AuditCheck:
        """A conditional step done the other way (the write the condition did not select) must
        fail; where it cannot even run, the instruction asks the impossible and fails too."""
        positions = [i for i, c in enumerate(task.gold_chain) if c.get("branch")]
        if not positions:
            return AuditCheck("wrong_branch", False, True, detail="the task has no branch")
        position = positions[-1]
        other = task.gold_chain[position]["branch"]["other"]
        changed = list(calls)
        changed[position] = {"tool": other["tool"], "arguments": dict(other["arguments"])}
        answer = FROM_RUN if task.kind == "graph" else task.reference_answer
        run = self._run(task, changed, {"run": answer})["run"]
        if run.steps[position].error_kind:
            detail = f"the other branch fails: {run.steps[position].error}"
            return AuditCheck("wrong_branch", True, False, detail=detail)
        return self._expect_failed(
            "wrong_branch", task, run, f"other branch of step {position + 1}"
        )

    def _extra_write(self, task: TaskSpec, calls, reference, rng: random.Random) -> AuditCheck:
        writers = sorted(
            (n for n in self.nodes.values() if n.kind == "write"), key=lambda n: n.name
        )
        rng.shuffle(writers)
        for attempt in range(EXTRA_WRITE_TRIES if writers else 0):
            node = writers[attempt % len(writers)]
            arguments = write_arguments(self.view, node, rng)
            if arguments is None:
                continue
            extra = calls + [{"tool": node.name, "arguments": arguments}]
            run = self._run(task, extra, {"gold": reference})["gold"]
            if run.steps[-1].error_kind:
                continue  # the write failed
            if compare_diffs(task.expected_diff, run.state_diff).same:
                continue  # the write changed nothing  # the write failed or changed nothing
            return self._expect_failed("extra_write", task, run, f"extra {node.name}")
        return AuditCheck("extra_write", False, True, detail="no write tool could change the state")


def given_answer_check(task: TaskSpec, reference: Any) -> AuditCheck:
    """The instruction must not state its own answer: a read-only task whose answer it quotes
    is solved by any call followed by repeating the question. Only a plain answer (a word, a
    name, a number of two digits or more: "Step 1" is no answer) is looked for, whole. Graph
    tasks only: a program's selection task names its candidates ("which of 'KH', 'AG' ...")
    by design, a graph walk's answer is found on the way, never given."""
    if (
        task.kind != "graph"
        or reference is None
        or isinstance(reference, bool | dict | list)
        or task.expected_diff
    ):
        return AuditCheck("given_answer", False, True, detail="no plain answer of a read task")
    text = str(reference).strip()
    if not text or (text.isdigit() and len(text) < 2):
        return AuditCheck("given_answer", False, True, detail="answer too short to look for")
    pattern = rf"(?<![\w.]){re.escape(text)}(?![\w]|\.\d)"
    stated = re.search(pattern, task.instruction, flags=re.IGNORECASE) is not None
    detail = f"the instruction states the answer {text!r}" if stated else ""
    return AuditCheck("given_answer", True, not stated, detail=detail)
