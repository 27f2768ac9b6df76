"""Programmatic tasks: solution code with loops, branches and cross-table computation.

Offline, templates over an environment's tools write ``def solve(call)`` and a verification
script ``def verify(answer, call) -> bool`` (for example "among these authors, who has the most
books priced above Y?"); when an LLM is configured it writes further ones. Either way the code
runs in the sandbox through ``episode.run_program``: twice, in fresh episodes, and the task is
kept only if both runs agree on the answer and the final state and ``verify`` accepts the answer.
"""

from __future__ import annotations

import json
import logging
import random
import textwrap
from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import answer_instruction, contract_for
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.task_spec import TaskSpec, canonical_signature
from tasks.synthesis.tool_graph import ToolGraph, ToolNode, build_tool_graph, plural
from tasks.verification import verification_program

log = logging.getLogger(__name__)

HELPERS = textwrap.dedent(
    '''
    import json


    def _records(result):
        """Rows in a tool result: a row, a list of rows, or a wrapped list."""
        if isinstance(result, list):
            return [r for r in result if isinstance(r, dict)]
        if isinstance(result, dict):
            lists = [v for v in result.values() if isinstance(v, list)]
            return lists[0] if len(lists) == 1 else [result]
        return []


    def _children(call, parent):
        arguments = {GROUP_PARAM: parent}
        if GROUP_LIMIT:
            arguments["limit"] = GROUP_LIMIT
        try:
            rows = _records(call(GROUP_TOOL, **arguments))
        except Exception:  # a parent with no children may be an error for some tools
            return []
        if GROUP_LIMIT and len(rows) >= GROUP_LIMIT:
            raise ValueError("a full page: the children may be cut short")
        return rows


    def _measure(call, child, column):
        if column in child:
            return child[column]
        return call(DETAIL_TOOL, **{DETAIL_PARAM: child[CHILD_KEY]})[column]
    '''
)


@dataclass
class ProgramShape:
    """The tools a template loops over: parents -> children (-> child detail)."""

    group: ToolNode  # read tool: one parent value -> child records
    group_param: str
    parent_table: str
    parent_column: str
    child_table: str
    child_key: str
    child_fields: set[str]
    detail: ToolNode | None  # get_<child> when the group tool omits a measure
    detail_param: str | None
    measures: list[str]  # numeric child columns reachable
    display: str | None  # child column to report (title, name)
    updates: list[tuple[ToolNode, str, str]] = field(default_factory=list)  # (tool, key, column)

    def constants(self) -> str:
        return (
            f"GROUP_TOOL = {self.group.name!r}\nGROUP_PARAM = {self.group_param!r}\n"
            f"DETAIL_TOOL = {self.detail.name if self.detail else None!r}\n"
            f"DETAIL_PARAM = {self.detail_param!r}\nCHILD_KEY = {self.child_key!r}\n"
            f"GROUP_LIMIT = {self.page_limit()!r}\n"
        )

    def page_limit(self) -> int | None:
        limit = self.group.params.get("limit")
        if limit is None:
            return None
        return int(limit.maximum or limit.default or 100)


def find_shapes(view: EnvironmentView, graph: ToolGraph) -> list[ProgramShape]:
    """Parent -> children tool pairs whose outputs were observed on real rows."""
    shapes = []
    nodes = graph.nodes
    for node in sorted(nodes.values(), key=lambda n: n.name):
        required = [p for p in node.params.values() if p.required]
        if node.kind != "read" or not node.entity or len(required) != 1 or not node.output_fields:
            continue
        p = required[0]
        if p.role not in ("key", "value") or not p.column:
            continue
        parent_table, parent_column = p.key if p.key else p.column
        child = node.entity
        info = view.tables[child]
        if parent_table == child or not info.key or info.key not in node.output_fields:
            continue
        fields = set(node.output_fields)
        detail, detail_param = None, None
        for other in sorted(nodes.values(), key=lambda n: n.name):
            if other.kind == "read" and other.action == "get" and other.entity == child:
                keys = [q for q in other.params.values() if q.required]
                if len(keys) == 1 and keys[0].key == (child, info.key):
                    detail, detail_param = other, keys[0].name
                    break
        reachable = set(info.columns) if detail else fields
        measures = [
            c
            for c in sorted(reachable)
            if info.is_numeric(c)
            and c != info.key
            and c not in info.foreign_keys
            and not c.endswith("_id")
            and len(view.column_values(child, c)) > 1
        ]
        if not measures:
            continue
        display = next((f for f in ("title", "name", "full_name", "label") if f in fields), None)
        updates = []
        for other in sorted(nodes.values(), key=lambda n: n.name):
            if other.kind != "write":
                continue
            keys = [q for q in other.params.values() if q.key == (child, info.key)]
            for q in other.params.values():
                if (
                    keys
                    and q.column
                    and q.column[0] == child
                    and q.column[1] in measures
                    and q.name != keys[0].name
                    and all(
                        r.required is False or r.name in (keys[0].name, q.name)
                        for r in other.params.values()
                    )
                ):
                    updates.append((other, keys[0].name, q.name))
        shapes.append(
            ProgramShape(
                node,
                p.name,
                parent_table,
                parent_column,
                child,
                info.key,
                fields,
                detail,
                detail_param,
                measures,
                display,
                updates,
            )
        )
    return shapes


# --- templates ----------------------------------------------------------------------------


@dataclass
class ProgramDraft:
    template: str
    instruction: str
    solution: str
    verification: str
    params: dict[str, Any]


def _threshold(view: EnvironmentView, table: str, column: str, rng: random.Random) -> Any:
    values = view.column_values(table, column)
    return values[len(values) // 2 + rng.randint(-len(values) // 4, 0)] if values else 0


def _parents(view: EnvironmentView, shape: ProgramShape, rng, count: int) -> list[Any]:
    values = view.column_values(shape.parent_table, shape.parent_column)
    return rng.sample(values, min(count, len(values)))


def _words(name: str) -> str:
    return name.replace("_", " ")


def _listing(values: list[Any]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def draft_most_children(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    parents = _parents(view, shape, rng, rng.randint(2, 4))
    if len(parents) < 2:
        return None
    measure = rng.choice(shape.measures)
    threshold = _threshold(view, shape.child_table, measure, rng)
    p, c = _words(shape.parent_table), _words(shape.child_table)
    instruction = (
        f"Consider the {plural(p)} whose {_words(shape.parent_column)} is one of {_listing(parents)}. "
        f"For each of them, count their {plural(c)} with {_words(measure)} above {threshold}. "
        f"Report the {_words(shape.parent_column)} of the {p} with the most such {plural(c)} "
        "(on a tie, the one listed first)."
    )
    head = f"PARENTS = {parents!r}\nTHRESHOLD = {threshold!r}\nMEASURE = {measure!r}\n"
    counting = textwrap.dedent(
        """
        def _count(call, parent):
            count = 0
            for child in _children(call, parent):
                value = _measure(call, child, MEASURE)
                if value is not None and value > THRESHOLD:
                    count += 1
            return count
        """
    )
    solution = (
        head
        + counting
        + textwrap.dedent(
            """
        def solve(call):
            best, best_count = None, -1
            for parent in PARENTS:
                count = _count(call, parent)
                if count > best_count:
                    best, best_count = parent, count
            return best
        """
        )
    )
    verification = (
        head
        + counting
        + textwrap.dedent(
            """
        def verify(answer, call):
            counts = [_count(call, parent) for parent in PARENTS]
            return answer in PARENTS and counts[PARENTS.index(answer)] == max(counts)
        """
        )
    )
    return ProgramDraft(
        "most_children",
        instruction,
        solution,
        verification,
        {"parents": parents, "measure": measure, "threshold": threshold},
    )


def draft_total(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    parents = _parents(view, shape, rng, rng.randint(1, 3))
    if not parents:
        return None
    measure = rng.choice(shape.measures)
    p, c = _words(shape.parent_table), _words(shape.child_table)
    instruction = (
        f"What is the total {_words(measure)} of all {plural(c)} of the {plural(p)} whose "
        f"{_words(shape.parent_column)} is one of {_listing(parents)}? "
        "Report the number rounded to 2 decimals."
    )
    head = f"PARENTS = {parents!r}\nMEASURE = {measure!r}\n"
    solution = head + textwrap.dedent(
        """
        def solve(call):
            total = 0
            for parent in PARENTS:
                for child in _children(call, parent):
                    value = _measure(call, child, MEASURE)
                    if value is not None:
                        total += value
            return round(total, 2)
        """
    )
    verification = head + textwrap.dedent(
        """
        def verify(answer, call):
            values = [
                _measure(call, child, MEASURE)
                for parent in PARENTS
                for child in _children(call, parent)
            ]
            expected = sum(v for v in values if v is not None)
            return isinstance(answer, (int, float)) and abs(answer - expected) <= 0.006
        """
    )
    return ProgramDraft(
        "total", instruction, solution, verification, {"parents": parents, "measure": measure}
    )


def draft_filtered_list(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    if not shape.display:
        return None
    parents = _parents(view, shape, rng, rng.randint(1, 3))
    measure = rng.choice(shape.measures)
    values = view.column_values(shape.child_table, measure)
    low, high = sorted(rng.sample(values, 2)) if len(values) > 1 else (values[0], values[0])
    p, c = _words(shape.parent_table), _words(shape.child_table)
    instruction = (
        f"List the {_words(shape.display)} of every {c} of the {plural(p)} whose "
        f"{_words(shape.parent_column)} is one of {_listing(parents)} and whose "
        f"{_words(measure)} is between {low} and {high} inclusive (order does not matter)."
    )
    head = (
        f"PARENTS = {parents!r}\nMEASURE = {measure!r}\nLOW = {low!r}\nHIGH = {high!r}\n"
        f"DISPLAY = {shape.display!r}\n"
    )
    solution = head + textwrap.dedent(
        """
        def solve(call):
            found = []
            for parent in PARENTS:
                for child in _children(call, parent):
                    value = _measure(call, child, MEASURE)
                    if value is not None and LOW <= value <= HIGH:
                        found.append(child[DISPLAY])
            return sorted(found)
        """
    )
    verification = head + textwrap.dedent(
        """
        def verify(answer, call):
            if not isinstance(answer, list):
                return False
            inside, outside = [], []
            for parent in PARENTS:
                for child in _children(call, parent):
                    value = _measure(call, child, MEASURE)
                    ok = value is not None and LOW <= value <= HIGH
                    (inside if ok else outside).append(child[DISPLAY])
            return sorted(answer) == sorted(inside)
        """
    )
    return ProgramDraft(
        "filtered_list",
        instruction,
        solution,
        verification,
        {"parents": parents, "measure": measure, "low": low, "high": high},
    )


def _new_value(values: list[Any], rng: random.Random) -> Any:
    """A value no row has yet, so every matching row really changes."""
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if numbers and len(numbers) == len(values):
        top = max(numbers)
        return top + rng.randint(1, 5) if isinstance(top, int) else round(top * 1.1 + 1, 2)
    return f"{rng.choice(values)} (revised)" if values else "revised"


def draft_conditional_update(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    if not shape.updates:
        return None
    pairs = [(u, m) for u in shape.updates for m in shape.measures if m != u[2]]
    if not pairs:
        return None
    (tool, key_param, column), measure = rng.choice(pairs)
    parents = _parents(view, shape, rng, rng.randint(1, 2))
    threshold = _threshold(view, shape.child_table, measure, rng)
    new_value = _new_value(view.column_values(shape.child_table, column), rng)
    p, c = _words(shape.parent_table), _words(shape.child_table)
    instruction = (
        f"For every {c} of the {plural(p)} whose {_words(shape.parent_column)} is one of "
        f"{_listing(parents)} and whose {_words(measure)} is above {threshold}, set its "
        f"{_words(column)} to {json.dumps(new_value)}. Report how many {plural(c)} you changed."
    )
    head = (
        f"PARENTS = {parents!r}\nMEASURE = {measure!r}\nTHRESHOLD = {threshold!r}\n"
        f"UPDATE_TOOL = {tool.name!r}\nUPDATE_KEY = {key_param!r}\nCOLUMN = {column!r}\n"
        f"NEW_VALUE = {new_value!r}\n"
    )
    solution = head + textwrap.dedent(
        """
        def solve(call):
            targets = []
            for parent in PARENTS:
                for child in _children(call, parent):
                    value = _measure(call, child, MEASURE)
                    if value is not None and value > THRESHOLD:
                        targets.append(child[CHILD_KEY])
            for key in targets:
                call(UPDATE_TOOL, **{UPDATE_KEY: key, COLUMN: NEW_VALUE})
            return len(targets)
        """
    )
    verification = head + textwrap.dedent(
        """
        def verify(answer, call):
            matched = 0
            for parent in PARENTS:
                for child in _children(call, parent):
                    value = _measure(call, child, MEASURE)
                    if value is not None and value > THRESHOLD:
                        matched += 1
                        if _measure(call, child, COLUMN) != NEW_VALUE:
                            return False
            return answer == matched
        """
    )
    return ProgramDraft(
        "conditional_update",
        instruction,
        solution,
        verification,
        {
            "parents": parents,
            "measure": measure,
            "threshold": threshold,
            "column": column,
            "value": new_value,
        },
    )


TEMPLATES = (draft_most_children, draft_total, draft_filtered_list, draft_conditional_update)


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


def run_solution(pool, package, solution: str, verification: str | None) -> ProgramRun:
    """Run ``solve`` in a fresh episode, then ``verify`` on the state it left."""
    with pool.start_episode(package) as episode:
        result = episode.run_program(solution, entry="solve")
        if not result.ok:
            return ProgramRun(False, error=f"{result.error_kind}: {result.error}")
        calls = [
            c if isinstance(c, dict) else {"tool": c[0], "arguments": c[1]} for c in result.calls
        ]
        run = ProgramRun(True, result.value, calls, episode.state_hash(), episode.state_diff())
        if verification is not None:
            check = episode.run_program(
                verification_program(verification, result.value), "__check__"
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
) -> ProgramCheck:
    """Validate a solution (runs, verifies, deterministic over two fresh episodes) into a task."""
    view = EnvironmentView(package)
    first = run_solution(pool, package, solution, verification)
    if not first.ok:
        return ProgramCheck(None, f"solution failed: {first.error}")
    if not first.calls:
        return ProgramCheck(None, "solution made no tool calls")
    if not first.verified:
        return ProgramCheck(None, first.error or "verification rejected the solution's answer")
    second = run_solution(pool, package, solution, None)
    if not second.ok or second.answer != first.answer or second.state_hash != first.state_hash:
        return ProgramCheck(None, "nondeterministic: two fresh runs disagree")
    if first.answer is None or first.answer == []:
        return ProgramCheck(None, "empty answer")
    if template == "conditional_update" and not first.diff:
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
        }
    )
    for call in first.calls:
        call["kind"] = view.tool_kinds.get(call["tool"], "read")
    used = list(dict.fromkeys(c["tool"] for c in first.calls))
    writes = sum(1 for c in first.calls if view.tool_kinds.get(c["tool"]) == "write")
    answer_spec = {"shape": "list" if isinstance(first.answer, list) else "value"}
    contract = contract_for(first.answer, answer_spec)
    task = TaskSpec(
        kind="programmatic",
        environment=view.name,
        environment_version=view.version,
        instruction=f"{instruction}\n{answer_instruction(contract)}",
        gold_chain=first.calls,
        reference_answer=first.answer,
        expected_state_hash=first.state_hash,
        expected_diff=first.diff,
        difficulty={
            "steps": len(first.calls),
            "writes": writes,
            "branching": 0,
            "distractors": len(tools or used) - len(used),
            "level": "hard" if len(first.calls) > 8 else "medium",
            "template": template,
        },
        seed=seed,
        tools=tools or used,
        solution=solution,
        verification=verification,
        signature=signature,
        metadata={
            "template": template,
            "params": params or {},
            "instruction_source": source,
            "answer": answer_spec,
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
    ):
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

    def template_task(self, rng: random.Random, seed: int, distractors: int = 2) -> ProgramCheck:
        shape = rng.choice(self.shapes)
        template = TEMPLATES[seed % len(TEMPLATES)]  # round-robin: every template gets a turn
        draft = template(self.view, shape, rng)
        if draft is None:
            return ProgramCheck(None, f"template {template.__name__} does not fit")
        prelude = HELPERS + "\n" + shape.constants()
        tools = self._offered(shape, rng, distractors)
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
        )

    def _offered(self, shape: ProgramShape, rng, distractors: int) -> list[str]:
        used = [shape.group.name] + ([shape.detail.name] if shape.detail else [])
        used += [u[0].name for u in shape.updates]
        others = sorted(set(self.graph.nodes) - set(used))
        offered = used + rng.sample(others, min(distractors, len(others)))
        rng.shuffle(offered)
        return offered

    def llm_task(self, rng: random.Random, seed: int) -> ProgramCheck:
        """Ask the LLM for an instruction, a solution and a verification script."""
        from aw_site.llm import LLMError, complete_json

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
        )


def synthesize_programmatic_tasks(package, pool, count: int, seed: int = 0, llm: Any = "auto"):
    """Convenience wrapper: ``count`` verified, deterministic programmatic tasks."""
    return ProgrammaticTaskSynthesizer(package, pool, llm=llm).synthesize(count, seed)
