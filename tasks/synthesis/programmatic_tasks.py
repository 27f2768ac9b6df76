"""Programmatic tasks: solution code with loops, branches and cross-table computation.

Offline, templates over an environment's tools (``program_templates``, over the parent ->
children shapes of ``program_shapes``) write ``def solve(call)`` and a verification script
``def verify(answer, call) -> bool`` (for example "among these authors, who has the most books
priced above Y?"); when an LLM is configured it writes further ones. This module runs them:
the code runs in the sandbox through ``episode.run_program``, twice, in fresh episodes, and the
task is kept only if both runs agree on the answer and the final state and ``verify`` accepts
the answer; then the verifier audit decides.
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import answer_instruction, contract_for
from tasks.gold_results import with_results
from tasks.synthesis.dependencies import value_flow
from tasks.synthesis.difficulty import StructuralDifficulty, count_branches
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.instructions import TIERS, program_instruction
from tasks.synthesis.program_shapes import HELPERS, ProgramShape, find_shapes
from tasks.synthesis.program_templates import TEMPLATES, ProgramDraft
from tasks.synthesis.task_spec import TaskSpec, canonical_signature
from tasks.synthesis.tool_graph import ToolGraph, build_nodes, build_tool_graph
from tasks.verification import verification_program

__all__ = [
    "HELPERS",
    "TEMPLATES",
    "ProgramCheck",
    "ProgramDraft",
    "ProgramRun",
    "ProgramShape",
    "ProgrammaticTaskSynthesizer",
    "find_shapes",
    "programmatic_task_from_source",
    "run_solution",
    "synthesize_programmatic_tasks",
]

log = logging.getLogger(__name__)

# --- running and checking -----------------------------------------------------------------


@dataclass
class ProgramRun:
    ok: bool
    answer: Any = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    state_hash: str | None = None
    diff: dict[str, Any] = field(default_factory=dict)
    verified: bool | None = None
    error: str | None = None


def run_solution(
    pool, package, solution: str, verification: str | None, trusted: bool = False
) -> ProgramRun:
    """Run ``solve`` in a fresh episode, then ``verify`` on the state it left. ``trusted``: code
    the templates wrote (their values inserted as literals), which need not cost a fresh
    worker after each run; an LLM's code always does (the pool's setting)."""
    recycle = False if trusted else None
    with pool.start_episode(package) as episode:
        result = episode.run_program(solution, entry="solve", recycle=recycle)
        if not result.ok:
            return ProgramRun(False, error=f"{result.error_kind}: {result.error}")
        calls = [
            c if isinstance(c, dict) else {"tool": c[0], "arguments": c[1]} for c in result.calls
        ]
        run = ProgramRun(True, result.value, calls, episode.state_hash(), episode.state_diff())
        if verification is not None:
            check = episode.run_program(
                verification_program(verification, result.value), "__check__", recycle=recycle
            )
            run.verified = bool(check.ok and check.value is True)
            if not check.ok:
                run.error = f"verification failed to run: {check.error_kind}: {check.error}"
        return run


@dataclass
class ProgramCheck:
    task: TaskSpec | None
    reason: str


def _canonical_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: sorted(v, key=json.dumps) if isinstance(v, list) else v for k, v in params.items()}


def replay_calls(pool, package, calls: list[dict[str, Any]]) -> list[Any]:
    """The result of every call of a gold trace, replayed in a fresh episode."""
    with pool.start_episode(package) as episode:
        return [episode.call_tool(c["tool"], c["arguments"]).result for c in calls]


def program_difficulty(
    calls: list[dict[str, Any]],
    results: list[Any],
    *,
    solution: str,
    distractors: int,
    tier: str,
) -> StructuralDifficulty:
    """A program's structure from its call trace: data flow read from values, the decisions
    of its code (``count_branches`` of the solution without the shared helpers)."""
    flows = value_flow(calls, results)
    depth: list[int] = []
    for flow in flows:
        depth.append(1 + max((depth[b["step"]] for b in flow.values()), default=0))
    return StructuralDifficulty.measure(
        steps=len(calls),
        dependent_calls=sum(1 for flow in flows if flow),
        depth=max(depth, default=0),
        writes=sum(1 for c in calls if c.get("kind") == "write"),
        branches=count_branches(solution),
        joins=sum(1 for flow in flows if len({b["step"] for b in flow.values()}) > 1),
        distractors=distractors,
        tier=tier,
    )


def programmatic_task_from_source(
    pool,
    package,
    instruction: str,
    solution: str,
    verification: str,
    *,
    template: str = "custom",
    seed: int = 0,
    params: dict[str, Any] | None = None,
    source: str = "template",
    tools: list[str] | None = None,
    answer_spec: dict[str, Any] | None = None,
    requires_write: bool = False,
    tier: str = "goal",
    nodes: dict[str, Any] | None = None,
    decisions: str | None = None,
) -> ProgramCheck:
    """Validate a solution (runs, verifies, deterministic over two fresh episodes) into a task.

    ``tier``: the instruction at ``explicit`` adds a plan of the calls (no tool named), at
    ``goal_hard`` a condition the gold run meets and an unrelated fact (see
    ``instructions.program_instruction``). ``decisions``: the code whose ``if``s count as
    branches (the template's own, without the shared helpers; default the whole solution).
    """
    if tier not in TIERS:
        raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
    view = EnvironmentView(package)
    trusted = source == "template"
    first = run_solution(pool, package, solution, verification, trusted)
    if not first.ok:
        return ProgramCheck(None, f"solution failed: {first.error}")
    if not first.calls:
        return ProgramCheck(None, "solution made no tool calls")
    if not first.verified:
        return ProgramCheck(None, first.error or "verification rejected the solution's answer")
    second = run_solution(pool, package, solution, None, trusted)
    if not second.ok or second.answer != first.answer or second.state_hash != first.state_hash:
        return ProgramCheck(None, "nondeterministic: two fresh runs disagree")
    if first.answer is None or first.answer == []:
        return ProgramCheck(None, "empty answer")
    if (requires_write or template == "conditional_update") and not first.diff:
        return ProgramCheck(None, "no-op: the update changed nothing")
    signature = canonical_signature(
        {
            "environment": view.name,
            "version": view.version,
            "kind": "programmatic",
            "template": template,
            # the parents of "one of A, B" are a set: order them so A, B == B, A
            "params": _canonical_params(params) if params else solution,
            "answer": first.answer,
            "tier": tier,
        }
    )
    for call in first.calls:
        call["kind"] = view.tool_kinds.get(call["tool"], "read")
    used = list(dict.fromkeys(c["tool"] for c in first.calls))
    results = replay_calls(pool, package, first.calls)
    gold_chain = with_results(first.calls, results)
    difficulty = program_difficulty(
        first.calls,
        results,
        solution=solution if decisions is None else decisions,
        distractors=len(tools or used) - len(used),
        tier=tier,
    )
    nodes = nodes if nodes is not None else build_nodes(view)
    rendered = program_instruction(
        tier, instruction, first.calls, results, nodes, view, random.Random(f"{signature}:text")
    )
    answer_spec = dict(answer_spec or {})
    answer_spec.setdefault("shape", "list" if isinstance(first.answer, list) else "value")
    contract = contract_for(first.answer, answer_spec)
    task = TaskSpec(
        kind="programmatic",
        environment=view.name,
        environment_version=view.version,
        instruction=f"{rendered.text}\n{answer_instruction(contract)}",
        gold_chain=gold_chain,
        reference_answer=first.answer,
        expected_state_hash=first.state_hash,
        expected_diff=first.diff,
        difficulty=difficulty.to_dict(),
        seed=seed,
        tools=tools or used,
        solution=solution,
        verification=verification,
        signature=signature,
        metadata={
            "template": template,
            "params": params or {},
            "instruction_source": source,
            "template_instruction": instruction,
            "answer": answer_spec,
            "tier": tier,
            "given": rendered.given,
        },
        answer_contract=contract.to_dict(),
    )
    return ProgramCheck(task, "kept")


class ProgrammaticTaskSynthesizer:
    """Template (and, when configured, LLM) programmatic tasks for one package."""

    def __init__(
        self,
        package,
        pool,
        graph: ToolGraph | None = None,
        llm: Any = "auto",
        audit: bool = True,
        tier: str = "goal",
    ):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        self.tier = tier
        self.package = package
        self.pool = pool
        self.view = EnvironmentView(package)
        if graph is None:
            with pool.start_episode(package) as episode:
                graph = build_tool_graph(self.view, episode)
        self.graph = graph
        from tasks.audit import VerifierAuditor  # the audit scores with tasks.reward

        self.auditor = VerifierAuditor(package, pool, self.view, graph.nodes) if audit else None
        self.shapes = find_shapes(self.view, graph)
        if llm == "auto":
            from aw_site.llm import llm_settings

            llm = llm_settings()
        self.llm = llm
        self.dropped: dict[str, int] = {}
        self.seen: set[str] = set()

    def _keep(self, check: ProgramCheck) -> TaskSpec | None:
        if check.task is None:
            key = check.reason.split(":")[0]
            self.dropped[key] = self.dropped.get(key, 0) + 1
            return None
        if check.task.signature in self.seen:
            self.dropped["duplicate"] = self.dropped.get("duplicate", 0) + 1
            return None
        self.seen.add(check.task.signature)
        if self.auditor is not None:
            result = self.auditor.audit(check.task)
            check.task.audit = result.to_dict()
            if not result.passed:
                key = f"audit: {result.failed}"
                self.dropped[key] = self.dropped.get(key, 0) + 1
                return None
        return check.task

    def synthesize(self, count: int, seed: int = 0, distractors: int = 2) -> list[TaskSpec]:
        tasks: list[TaskSpec] = []
        if not self.shapes:
            return tasks
        for offset in range(count * 6):
            if len(tasks) >= count:
                break
            rng = random.Random(f"{self.view.name}:program:{seed + offset}")
            if self.llm is not None and offset % 2 == 1:
                task = self._keep(self.llm_task(rng, seed + offset))
            else:
                task = self._keep(self.template_task(rng, seed + offset, distractors))
            if task is not None:
                tasks.append(task)
        return tasks

    def template_task(
        self, rng: random.Random, seed: int, distractors: int = 2, template=None
    ) -> ProgramCheck:
        """One task from ``template`` (by default the seed's turn in the round-robin), on the
        first shape, in a random order, that the template fits."""
        template = template or TEMPLATES[seed % len(TEMPLATES)]  # every template gets a turn
        shapes = list(self.shapes)
        rng.shuffle(shapes)
        for shape in shapes:
            draft = template(self.view, shape, rng)
            if draft is not None:
                break
        else:
            return ProgramCheck(None, f"template {template.__name__} does not fit")
        prelude = HELPERS + "\n" + shape.constants()
        tools = self._offered(shape, rng, distractors, draft.tools)
        return programmatic_task_from_source(
            self.pool,
            self.package,
            draft.instruction,
            prelude + draft.solution,
            prelude + draft.verification,
            template=draft.template,
            seed=seed,
            params=draft.params,
            tools=tools,
            answer_spec=draft.answer,
            requires_write=draft.writes,
            tier=self.tier,
            nodes=self.graph.nodes,
            decisions=draft.solution,
        )

    def _offered(
        self, shape: ProgramShape, rng, distractors: int, extra: list[str] = ()
    ) -> list[str]:
        used = [shape.group.name] + ([shape.detail.name] if shape.detail else [])
        used += [u[0].name for u in shape.updates] + list(extra)
        used = list(dict.fromkeys(used))
        others = sorted(set(self.graph.nodes) - set(used))
        offered = used + rng.sample(others, min(distractors, len(others)))
        rng.shuffle(offered)
        return offered

    def llm_task(self, rng: random.Random, seed: int) -> ProgramCheck:
        """Ask the LLM for an instruction, a solution and a verification script."""
        from aw_site.llm import LLMError, complete_json, report_llm_failure

        tables = {
            name: {"columns": list(info.columns), "example": (self.view.rows(name) or [None])[0]}
            for name, info in self.view.tables.items()
        }
        messages = [
            {
                "role": "system",
                "content": (
                    "You write verifiable tasks for tool-using agents. Given tools and tables, "
                    "write a task that needs loops, branches or computation across tables. "
                    'Reply with JSON {"instruction": str, "solution": str, "verification": str}: '
                    "solution defines `def solve(call)` where `call(tool_name, **arguments)` "
                    "returns the tool's JSON result; verification defines "
                    "`def verify(answer, call) -> bool`. Both must be deterministic."
                ),
            },
            {
                "role": "user",
                "content": json.dumps(
                    {"tools": self.view.openai_tools(), "tables": tables, "seed": seed},
                    default=str,
                ),
            },
        ]
        try:
            reply = complete_json(self.llm, messages)
        except LLMError as exc:
            report_llm_failure("programmatic task synthesis", exc)
            return ProgramCheck(None, f"llm failed: {exc}")
        if not isinstance(reply, dict) or not all(
            isinstance(reply.get(k), str) for k in ("instruction", "solution", "verification")
        ):
            return ProgramCheck(
                None, "llm reply malformed: needs instruction, solution, verification"
            )
        verification = reply["verification"]
        return programmatic_task_from_source(
            self.pool,
            self.package,
            reply["instruction"],
            reply["solution"],
            verification,
            template="llm",
            seed=seed,
            source="llm",
            tier=self.tier,
            nodes=self.graph.nodes,
        )


def synthesize_programmatic_tasks(
    package, pool, count: int, seed: int = 0, llm: Any = "auto", tier: str = "goal"
):
    """Convenience wrapper: ``count`` verified, deterministic programmatic tasks."""
    return ProgrammaticTaskSynthesizer(package, pool, llm=llm, tier=tier).synthesize(count, seed)
