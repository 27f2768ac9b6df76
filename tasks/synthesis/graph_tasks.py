"""Graph tasks: seeded random walks on the tool graph, executed step by step on real rows.

Each walk runs in an episode, so the reference answer, the final state hash and the row diff
are those of a real run. A step that errors is never part of a gold chain: the walker tries
another continuation, and a walk that cannot reach its length is dropped.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any

from tasks.answer_contract import answer_instruction, contract_for
from tasks.synthesis.answers import project_answer
from tasks.synthesis.arguments import sample_arguments, write_arguments
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.episodes import EpisodeLease
from tasks.synthesis.instructions import compose_instruction, llm_instruction
from tasks.synthesis.task_spec import TaskSpec, canonical_signature
from tasks.synthesis.tool_graph import (
    ToolGraph,
    ToolNode,
    build_tool_graph,
    is_row_list,
    records_of,
)

log = logging.getLogger(__name__)

ATTEMPTS_PER_STEP = 6


@dataclass
class Difficulty:
    """What makes a graph task hard: the walk and what the agent is offered."""

    steps: int = 3  # gold chain length (walks reach 40+ steps)
    writes: int = 0  # write steps in the chain
    branching: int = 0  # steps fed by two or more earlier lookups
    distractors: int = 2  # tools offered beyond those the gold chain uses

    @classmethod
    def level(cls, name: str) -> Difficulty:
        return {
            "easy": cls(steps=2, writes=0, branching=0, distractors=1),
            "medium": cls(steps=4, writes=1, branching=0, distractors=3),
            "hard": cls(steps=8, writes=2, branching=1, distractors=6),
            "expert": cls(steps=40, writes=4, branching=2, distractors=10),
        }[name]


@dataclass
class GraphSynthesisStats:
    walks: int = 0
    kept: int = 0
    duplicates: int = 0
    short: int = 0
    step_errors: int = 0
    calls: int = 0
    audit_discarded: int = 0
    pruned_steps: int = 0  # goal tiers: lookups feeding neither the answer nor a write


TIERS = ("explicit", "goal", "goal_hard")
GOAL_TIERS = ("goal", "goal_hard")


def _sort_key(value: Any):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))


def _binding_value(step: dict[str, Any], field_name: str, rng: random.Random, rows: str = "first"):
    """(value, item, sorted_by) of ``field_name`` in a step's result; ``item`` is the position
    in a list result (None for a single row). None when the field is absent or not a scalar.

    Row order is never assumed. A list with one row binds that row. From a list with several
    rows, ``rows="first"`` binds the first row when sorted by the field itself (the smallest
    value, which the text can state: "the first ... when sorted by <field>"), unless the page
    may be cut short; ``rows="single"`` (goal tiers, whose text cannot name a row) binds
    nothing.
    """
    records = records_of(step["result"])
    is_list = isinstance(step["result"], list) or (
        bool(records) and records[0] is not step["result"]
    )
    usable = [
        i
        for i, r in enumerate(records)
        if r.get(field_name) is not None and not isinstance(r.get(field_name), dict | list)
    ]
    if not usable:
        return None
    if not is_list:
        return records[0][field_name], None, None
    if len(records) == 1:
        return records[0][field_name], 0, None
    if rows == "single" or step.get("truncated") or len(usable) != len(records):
        return None
    item = min(usable, key=lambda i: _sort_key(records[i][field_name]))
    return records[item][field_name], item, field_name


class GraphWalker:
    """Builds one gold chain at a time by walking the graph inside an episode."""

    def __init__(
        self, view: EnvironmentView, graph: ToolGraph, lease: EpisodeLease, stats, rows="first"
    ):
        self.rows = rows  # "first" (explicit tier) or "single" (goal tiers): see _binding_value
        self.view = view
        self.graph = graph
        self.lease = lease
        self.stats = stats
        self.nodes = graph.nodes

    def _bindings(self, node: ToolNode, steps, rng) -> dict[str, dict[str, Any]]:
        """For each key parameter of ``node``, the latest step whose output can fill it."""
        found: dict[str, dict[str, Any]] = {}
        for pname, p in node.params.items():
            if p.role not in ("key", "value", "text") or (node.kind == "write" and p.role != "key"):
                continue  # writes take the row to act on from earlier steps, values are fresh
            edges = self.graph.edges_into(node.name, pname)
            if not edges:
                continue
            sources = {(e.source, e.field) for e in edges}
            for index in range(len(steps) - 1, -1, -1):
                step = steps[index]
                for source, field_name in sorted(sources):
                    if step["tool"] != source:
                        continue
                    got = _binding_value(step, field_name, rng, self.rows)
                    if got is None:
                        continue
                    if p.role in ("value", "text") and index != len(steps) - 1:
                        continue  # plain values only chain from the step just before
                    found[pname] = {
                        "step": index,
                        "field": field_name,
                        "item": got[1],
                        "value": got[0],
                        **({"sorted_by": got[2]} if got[2] else {}),
                    }
                    break
                if pname in found:
                    break
        return found

    def _candidates(self, steps, want_write: bool, rng) -> list[tuple[ToolNode, dict]]:
        last = len(steps) - 1
        linked, loose = [], []
        for node in self.nodes.values():
            if (node.kind == "write") != want_write:
                continue
            bindings = self._bindings(node, steps, rng)
            if not bindings:
                continue
            if any(b["step"] == last for b in bindings.values()):
                linked.append((node, bindings))
            else:
                loose.append((node, bindings))
        rng.shuffle(linked)
        rng.shuffle(loose)
        return linked + loose

    def _arguments(self, node: ToolNode, bindings, rng) -> dict[str, Any] | None:
        required = {n: b for n, b in bindings.items() if node.params[n].required or b.get("side")}
        optional = sorted(n for n in bindings if n not in required)
        side = any(b.get("side") for b in required.values())
        if optional and (not required or side or rng.random() < 0.5):
            last = max(b["step"] for b in bindings.values())
            keys = [n for n in optional if node.params[n].role == "key"] or optional
            recent = [n for n in keys if bindings[n]["step"] == last] or keys
            chosen = rng.choice(recent)
            required[chosen] = bindings[chosen]  # one chained filter, not every field at once
        bindings.clear()
        bindings.update(required)
        fixed = {name: b["value"] for name, b in bindings.items()}
        if node.kind == "write":
            return write_arguments(self.view, node, rng, fixed)
        return sample_arguments(self.view, node, rng, fixed=fixed, optional_rate=0.2)

    def _useful(self, node: ToolNode, arguments, result: Any) -> bool:
        if node.kind == "write" or node.action in ("count", "aggregate"):
            return True
        if result is None or result == [] or result == {}:
            return False
        if is_row_list(result):
            return bool(records_of(result))
        return True

    def _truncated(self, step: dict[str, Any]) -> bool:
        """A full page may be cut short: "every row returned" would then be ambiguous."""
        node = self.nodes[step["tool"]]
        if not is_row_list(step["result"]):
            return False
        limit = node.params.get("limit")
        page = step["arguments"].get("limit", limit.default if limit else None)
        return bool(page) and len(records_of(step["result"])) >= page

    def _execute(self, node: ToolNode, arguments, bindings, steps) -> bool:
        since_write = steps
        for index in range(len(steps) - 1, -1, -1):
            if self.nodes[steps[index]["tool"]].kind == "write":
                since_write = steps[index + 1 :]
                break
        if any(s["tool"] == node.name and s["arguments"] == arguments for s in since_write):
            return False  # the same call on the same state adds nothing
        self.stats.calls += 1
        outcome = self.lease.call(node.name, arguments, node.kind)
        if not outcome.ok:
            self.stats.step_errors += 1
            return False
        if not self._useful(node, arguments, outcome.result):
            return False
        inputs = {
            name: {
                "step": b["step"],
                "field": b["field"],
                "item": b["item"],
                **({"sorted_by": b["sorted_by"]} if b.get("sorted_by") else {}),
            }
            for name, b in bindings.items()
            if arguments.get(name) == b["value"]
        }
        step = {"tool": node.name, "arguments": arguments, "inputs": inputs}
        step["result"] = outcome.result
        step["truncated"] = self._truncated(step)
        steps.append(step)
        return True

    def _fan_in(self, node: ToolNode) -> int:
        return sum(
            1
            for name, p in node.params.items()
            if p.role == "key" and self.graph.edges_into(node.name, name)
        )

    def _side_lookup(self, node: ToolNode, bindings, steps, rng) -> dict | None:
        """Branching: run an extra lookup that feeds a parameter not yet chained."""
        sourced = {b["step"] for b in bindings.values()}
        for pname, p in sorted(node.params.items()):
            if p.role != "key" or (pname in bindings and len(sourced) > 1):
                continue
            if pname in bindings and bindings[pname]["step"] == len(steps) - 1:
                continue
            lookups = [
                e
                for e in self.graph.edges_into(node.name, pname)
                if self.nodes[e.source].kind == "read"
            ]
            rng.shuffle(lookups)
            for edge in lookups[:3]:
                source = self.nodes[edge.source]
                arguments = sample_arguments(self.view, source, rng)
                if arguments is None or not self._execute(source, arguments, {}, steps):
                    continue
                got = _binding_value(steps[-1], edge.field, rng, self.rows)
                if got is None:
                    continue
                index = len(steps) - 1
                return {
                    pname: {
                        "step": index,
                        "field": edge.field,
                        "item": got[1],
                        "value": got[0],
                        "side": True,
                        **({"sorted_by": got[2]} if got[2] else {}),
                    }
                }
        return None

    def _start(self, rng, steps) -> bool:
        starts = [n for n in self.nodes.values() if n.kind == "read"]
        rng.shuffle(starts)
        for node in starts[: ATTEMPTS_PER_STEP * 2]:
            arguments = sample_arguments(self.view, node, rng, optional_rate=0.2)
            if arguments is not None and self._execute(node, arguments, {}, steps):
                return True
        return False

    def walk(self, rng: random.Random, difficulty: Difficulty) -> list[dict[str, Any]] | None:
        steps: list[dict[str, Any]] = []
        self.lease.clean()
        if not self._start(rng, steps):
            return None
        branch_left = difficulty.branching
        while len(steps) < difficulty.steps or self._truncated(steps[-1]):
            if len(steps) >= difficulty.steps + 5:
                return None
            writes_left = difficulty.writes - sum(
                1 for s in steps if self.nodes[s["tool"]].kind == "write"
            )
            remaining = difficulty.steps - len(steps)
            want_write = writes_left > 0 and (
                remaining <= writes_left or rng.random() < writes_left / remaining
            )
            options = self._candidates(steps, want_write, rng)
            if not options and want_write:
                options = self._candidates(steps, False, rng)
            if branch_left > 0:  # tools with several key inputs first: they can branch
                options.sort(key=lambda option: -self._fan_in(option[0]))
            for node, bindings in options[:ATTEMPTS_PER_STEP]:
                if branch_left > 0 and remaining >= 2:
                    extra = self._side_lookup(node, bindings, steps, rng)
                    if extra:
                        bindings = {**bindings, **extra}
                arguments = self._arguments(node, bindings, rng)
                if arguments is not None and self._execute(node, arguments, bindings, steps):
                    if len({i["step"] for i in steps[-1]["inputs"].values()}) > 1:
                        branch_left -= 1
                    break
            else:
                if not self._start(rng, steps):  # a fresh lookup opens a new branch
                    return None
        return steps


def measured_difficulty(steps, nodes: dict[str, ToolNode], distractors: int) -> dict[str, Any]:
    writes = sum(1 for s in steps if nodes[s["tool"]].kind == "write")
    branching = sum(1 for s in steps if len({i["step"] for i in s["inputs"].values()}) > 1)
    score = len(steps) + 2 * writes + 2 * branching + distractors / 4
    level = "easy" if score < 4 else "medium" if score < 9 else "hard" if score < 20 else "expert"
    return {
        "steps": len(steps),
        "writes": writes,
        "branching": branching,
        "distractors": distractors,
        "level": level,
    }


def graph_signature(environment: str, version, steps, answer_spec, tier: str = "explicit") -> str:
    """Canonical gold-chain signature: equal chains asking for the same answer, at the same
    instruction tier, are one task (the same walk at two tiers is two tasks)."""
    chain = [[s["tool"], s["arguments"]] for s in steps]
    return canonical_signature(
        {
            "environment": environment,
            "version": version,
            "kind": "graph",
            "chain": chain,
            "answer": answer_spec,
            "tier": tier,
        }
    )


def prune_unused(steps: list[dict[str, Any]], nodes: dict[str, ToolNode]) -> list[dict[str, Any]]:
    """Drop read steps that feed neither the last step nor a write (directly or not).

    A goal states what is wanted, not a plan; a lookup whose result nothing uses has no place
    in it. Inputs are renumbered to the kept steps.
    """
    needed = {len(steps) - 1} | {i for i, s in enumerate(steps) if nodes[s["tool"]].kind == "write"}
    for index in range(len(steps) - 1, -1, -1):
        if index in needed:
            needed |= {b["step"] for b in steps[index]["inputs"].values()}
    kept = sorted(needed)
    renumber = {old: new for new, old in enumerate(kept)}
    pruned = []
    for old in kept:
        step = dict(steps[old])
        step["inputs"] = {
            name: {**b, "step": renumber[b["step"]]} for name, b in step["inputs"].items()
        }
        pruned.append(step)
    return pruned


class GraphTaskSynthesizer:
    """Synthesizes verified graph tasks for one environment package."""

    def __init__(
        self,
        package: Any,
        pool: Any,
        graph: ToolGraph | None = None,
        llm: Any = "auto",
        observe: bool = True,
        audit: bool = True,
        tier: str = "goal",
    ):
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
        self.tier = tier
        self.package = package
        self.view = EnvironmentView(package)
        self.lease = EpisodeLease(pool, package)
        if graph is None:
            graph = build_tool_graph(self.view, self.lease.clean() if observe else None)
            self.lease.dirty = True  # observation may have touched the episode; start clean
        self.graph = graph
        if llm == "auto":
            from aw_site.llm import llm_settings

            llm = llm_settings()
        self.llm = llm
        self.stats = GraphSynthesisStats()
        self.seen: set[str] = set()
        self.walker = GraphWalker(
            self.view,
            self.graph,
            self.lease,
            self.stats,
            rows="single" if tier in GOAL_TIERS else "first",
        )
        from tasks.audit import VerifierAuditor  # the audit scores with tasks.reward

        self.auditor = VerifierAuditor(package, pool, self.view, graph.nodes) if audit else None

    def close(self) -> None:
        self.lease.close()

    def __enter__(self) -> GraphTaskSynthesizer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def synthesize(
        self,
        count: int,
        difficulty: Difficulty | None = None,
        seed: int = 0,
        max_walks: int | None = None,
        tier: str | None = None,
    ) -> list[TaskSpec]:
        """Up to ``count`` distinct verified tasks from walks seeded ``seed``, ``seed+1``, ...

        ``tier`` (default: the synthesizer's) is the instruction tier of these tasks."""
        if tier is not None and tier != self.tier:
            if tier not in TIERS:
                raise ValueError(f"tier must be one of {', '.join(TIERS)}, not {tier!r}")
            previous, self.tier = self.tier, tier
            self.walker.rows = "single" if tier in GOAL_TIERS else "first"
            try:
                return self.synthesize(count, difficulty, seed, max_walks)
            finally:
                self.tier = previous
                self.walker.rows = "single" if previous in GOAL_TIERS else "first"
        difficulty = difficulty or Difficulty()
        tasks: list[TaskSpec] = []
        max_walks = max_walks or count * 8
        for offset in range(max_walks):
            if len(tasks) >= count:
                break
            task = self.synthesize_one(difficulty, seed + offset)
            if task is not None:
                tasks.append(task)
        return tasks

    def synthesize_one(self, difficulty: Difficulty, seed: int) -> TaskSpec | None:
        rng = random.Random(f"{self.view.name}:{seed}")
        self.stats.walks += 1
        steps = self.walker.walk(rng, difficulty)
        if steps is None or len(steps) < difficulty.steps:
            self.stats.short += 1
            return None
        if self.tier in GOAL_TIERS:
            kept = prune_unused(steps, self.graph.nodes)
            self.stats.pruned_steps += len(steps) - len(kept)
            steps = kept
        task = self._task_from_walk(steps, difficulty, seed, rng)
        if task is not None and self.auditor is not None:
            result = self.auditor.audit(task)
            task.audit = result.to_dict()
            if not result.passed:
                self.stats.kept -= 1
                self.stats.audit_discarded += 1
                return None
        return task

    def _task_from_walk(self, steps, difficulty: Difficulty, seed: int, rng) -> TaskSpec | None:
        nodes = self.graph.nodes
        last = nodes[steps[-1]["tool"]]
        answer_spec, reference = project_answer(last.action, last.kind, steps[-1]["result"])
        signature = graph_signature(
            self.view.name, self.view.version, steps, answer_spec, self.tier
        )
        if signature in self.seen:
            self.stats.duplicates += 1
            return None
        self.seen.add(signature)
        writes = self.lease.dirty
        episode = self.lease.clean_or_current()
        state_hash = episode.state_hash() if writes else self.lease.initial_hash
        diff = episode.state_diff() if writes else {}
        used = list(dict.fromkeys(s["tool"] for s in steps))
        others = sorted(set(nodes) - set(used))
        distractors = rng.sample(others, min(difficulty.distractors, len(others)))
        offered = used + distractors
        rng.shuffle(offered)
        rendered = compose_instruction(
            self.tier, steps, nodes, answer_spec, self.view, random.Random(f"{signature}:text")
        )
        template = rendered.text
        instruction, source = template, "template"
        if self.llm is not None:
            written = llm_instruction(
                self.llm, template, steps, tier=self.tier, given=rendered.given, tools=list(nodes)
            )
            if written:
                instruction, source = written, "llm"
        contract = contract_for(reference, answer_spec, entity=last.entity)
        instruction = f"{instruction}\n{answer_instruction(contract)}"
        self.stats.kept += 1
        return TaskSpec(
            kind="graph",
            environment=self.view.name,
            environment_version=self.view.version,
            instruction=instruction,
            gold_chain=[
                {
                    "tool": s["tool"],
                    "arguments": s["arguments"],
                    "inputs": s["inputs"],
                    "kind": nodes[s["tool"]].kind,
                }
                for s in steps
            ],
            reference_answer=reference,
            expected_state_hash=state_hash,
            expected_diff=diff,
            difficulty={
                **measured_difficulty(steps, nodes, len(distractors)),
                "tier": self.tier,
            },
            seed=seed,
            tools=offered,
            signature=signature,
            answer_contract=contract.to_dict(),
            metadata={
                "answer": answer_spec,
                "instruction_source": source,
                "template_instruction": template,
                "tier": self.tier,
                "given": rendered.given,
                "discovered": rendered.discovered,
                "gold_results": [s["result"] for s in steps],
            },
        )


def synthesize_graph_tasks(
    package: Any,
    pool: Any,
    count: int,
    difficulty: Difficulty | None = None,
    seed: int = 0,
    llm: Any = "auto",
    tier: str = "goal",
) -> list[TaskSpec]:
    """Convenience: build the graph, synthesize ``count`` tasks, release the episode."""
    with GraphTaskSynthesizer(package, pool, llm=llm, tier=tier) as synthesizer:
        return synthesizer.synthesize(count, difficulty, seed)


def dedup_tasks(tasks: list[TaskSpec]) -> list[TaskSpec]:
    """Keep the first task of each canonical signature."""
    seen: set[str] = set()
    kept = []
    for task in tasks:
        if task.signature not in seen:
            seen.add(task.signature)
            kept.append(task)
    return kept
