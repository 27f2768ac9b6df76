"""Graph tasks: seeded random walks on the tool graph, executed step by step on real rows.

Each walk runs in an episode, so the reference answer, the final state hash and the row diff
are those of a real run. A step that errors is never part of a gold chain: the walker tries
another continuation, and a walk that cannot reach its length is dropped.
"""

from __future__ import annotations

import json
import logging
import math
import random
from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import answer_instruction, contract_for
from tasks.gold_results import stored_result
from tasks.synthesis.answers import other_answers, project_answer
from tasks.synthesis.arguments import UNSET, sample_arguments, sample_param, write_arguments
from tasks.synthesis.dependencies import check_dependencies, references
from tasks.synthesis.difficulty import StructuralDifficulty
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.episodes import EpisodeLease
from tasks.synthesis.instructions import compose_instruction, llm_instruction
from tasks.synthesis.meaning import WALK_CHECKS, MeaningFacts
from tasks.synthesis.task_spec import TaskSpec, canonical_json, canonical_signature
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
    """The plan of a walk: its length, writes, joins, conditional writes and distractors.

    ``min_steps`` (default: ``steps``) is the shortest walk kept: a long plan in a small world
    keeps the longest dependent chain the graph allows instead of none.
    """

    steps: int = 3  # gold chain length (walks reach 40 steps where the graph allows)
    writes: int = 0  # write steps in the chain
    joins: int = 0  # steps fed by two or more earlier steps
    distractors: int = 2  # tools offered beyond those the gold chain uses
    branches: int = 0  # conditional writes: which write is done depends on a value read
    min_steps: int | None = None

    @property
    def shortest(self) -> int:
        return self.steps if self.min_steps is None else max(1, min(self.min_steps, self.steps))

    @classmethod
    def level(cls, name: str) -> Difficulty:
        return {
            "easy": cls(steps=2, writes=0, joins=0, distractors=1),
            "medium": cls(steps=4, writes=1, joins=0, distractors=3),
            "hard": cls(steps=8, writes=2, joins=1, branches=1, distractors=6, min_steps=4),
            "expert": cls(steps=40, writes=4, joins=2, branches=2, distractors=10, min_steps=8),
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
    backtracks: int = 0  # steps undone because the chain could not go on from them
    dependency_rejected: int = 0  # walks the dependency check refused (none expected)
    no_start: int = 0  # walks that found no read tool to call with values from the data
    # steps a walk did not take because they would mean nothing, by meaning check
    meaningless_steps: dict[str, int] = field(default_factory=dict)
    asked_back: int = 0  # questions whose answer the text already gives (see asks_back)
    lengths: dict[int, int] = field(default_factory=dict)  # kept tasks by gold chain length


TIERS = ("explicit", "goal", "goal_hard")
GOAL_TIERS = ("goal", "goal_hard")
MAX_BACKTRACKS = 12  # reads undone per walk when the chain cannot go on from them
MAX_ROOTS = 3  # fresh first steps per walk when the chain cannot leave its first row


def _sort_key(value: Any):
    return (0, value, "") if isinstance(value, int | float) else (1, 0, str(value))


def orderable(values: list[Any], descending: bool = False) -> bool:
    """Values whose smallest (or largest) a goal can name without a row order: numbers, or
    plain strings whose first (last) in code-point order is also the first (last)
    alphabetically whatever the case."""
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return True
    if all(isinstance(v, str) and v.isascii() and v.strip() == v and v for v in values):
        pick = max if descending else min
        return pick(values) == pick(values, key=str.casefold)
    return False


def _binding_value(
    step: dict[str, Any], field_name: str, rows: str = "first", descending: bool = False
):
    """(value, item, sorted_by) of ``field_name`` in a step's result; ``item`` is the position
    in a list result (None for a single row). None when the field is absent or not a scalar.

    Row order is never assumed. A list with one row binds that row. From a list with several
    rows, the row with the smallest (``descending``: largest) value of the field binds, which
    the text states: "the first (last) ... when sorted by <field>" (``rows="first"``, the
    explicit tier) or "the smallest (largest) <field> among ..." (``rows="single"``, goal
    tiers, only for values whose order words can name); never from a page that may be cut
    short.
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
    if step.get("truncated") or len(usable) != len(records):
        return None  # a page cut short (even to one row) holds rows the tool chose
    if len(records) == 1:
        return records[0][field_name], 0, None
    values = [records[i][field_name] for i in usable]
    if rows == "single" and not orderable(values, descending):
        return None
    if len({_sort_key(v) for v in values}) < 2:
        return None  # every row holds the same value: nothing to sort by
    pick = max if descending else min
    item = pick(usable, key=lambda i: _sort_key(records[i][field_name]))
    return records[item][field_name], item, field_name


def _bound(got: tuple, index: int, field_name: str, descending: bool = False, **extra: Any):
    value, item, sorted_by = got
    return {
        "step": index,
        "field": field_name,
        "item": item,
        "value": value,
        **({"sorted_by": sorted_by} if sorted_by else {}),
        **({"descending": True} if sorted_by and descending else {}),
        **extra,
    }


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


SHORT_WALK = 4  # planned steps of a request said in one breath (one pick from a listing)
PLAIN_WRITES = frozenset({"create", "update", "delete", "link", "unlink"})


def is_transition(node: ToolNode) -> bool:
    """A write named for a move of the row's lifecycle (``cancel_order``, ``ship_order``,
    ``refund_payment``): not a plain create, edit or delete."""
    return node.kind == "write" and node.action not in PLAIN_WRITES


class GraphWalker:
    """Builds one gold chain at a time by walking the graph inside an episode.

    Every step after the first consumes an earlier step's output, and every lookup but the last
    feeds a later step: after a read, only tools that read's output feeds may follow; when none
    can, the walker undoes that read and tries another (a write is never undone: its effect is
    in the episode). A walk ends at its planned length or where the graph allows no more.
    """

    def __init__(
        self, view: EnvironmentView, graph: ToolGraph, lease: EpisodeLease, stats, rows="first"
    ):
        self.rows = rows  # "first" (explicit tier) or "single" (goal tiers): see _binding_value
        self._cut_pages: dict[tuple[str, str, str], bool] = {}  # probed listings (_truncated)
        self.view = view
        self.graph = graph
        self.lease = lease
        self.stats = stats
        self.nodes = graph.nodes
        self._facts: MeaningFacts | None = None

    def _bindings(self, node: ToolNode, steps, rng=None) -> dict[str, dict[str, Any]]:
        """For each parameter of ``node`` an earlier output can fill, the latest such step
        (from a list of rows: the smallest value, or with ``rng`` the smallest or largest)."""
        found: dict[str, dict[str, Any]] = {}
        descending = bool(rng is not None and rng.random() < 0.5)
        # a short goal names a row by a pick from a listing ("the latest order among ...")
        # once: picks stacked on picks read as a riddle, not a request (a long walk names its
        # rows "Let A be ...", see instructions.GoalPhrases._labels)
        picked = self.rows == "single" and self.picks_left(steps) <= 0
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
                    memo = step.setdefault("bind", {})  # a step's result never changes
                    key = (field_name, self.rows, descending)
                    if key not in memo:
                        memo[key] = _binding_value(step, field_name, self.rows, descending)
                    got = memo[key]
                    if got is None or (picked and got[2]):
                        continue
                    if p.role in ("value", "text") and index != len(steps) - 1:
                        continue  # plain values only chain from the step just before
                    found[pname] = _bound(got, index, field_name, descending)
                    break
                if pname in found:
                    break
        return found

    planned_steps = 4  # the walk under way's planned length (set by walk)

    def picks_left(self, steps) -> int:
        """How many more rows this walk may pick from a listing by sort order."""
        if self.planned_steps > SHORT_WALK:
            return self.planned_steps
        made = sum(1 for s in steps for b in s.get("inputs", {}).values() if b.get("sorted_by"))
        return 1 - made

    def _candidates(self, steps, want_write: bool, rng) -> list[tuple[ToolNode, dict]]:
        """Tools that can take the next step, with the outputs that can feed them. After a read
        only tools that read feeds qualify; after a write, any tool an earlier output feeds."""
        last = len(steps) - 1
        must_link = self.nodes[steps[last]["tool"]].kind == "read"
        linked, loose = [], []
        for node in self.nodes.values():
            if (node.kind == "write") != want_write:
                continue
            bindings = self._bindings(node, steps, rng)
            if not bindings:
                continue
            if any(b["step"] == last for b in bindings.values()):
                linked.append((node, bindings))
            elif not must_link:
                loose.append((node, bindings))
        rng.shuffle(linked)
        rng.shuffle(loose)
        if want_write:  # a lifecycle's own moves (cancel, ship, return) before plain edits
            linked.sort(key=lambda option: not is_transition(option[0]))
            loose.sort(key=lambda option: not is_transition(option[0]))
        return linked + loose

    def _arguments(
        self, node: ToolNode, bindings, rng, link: int | None, extras: bool = True
    ) -> dict | None:
        """Arguments taking the bound values: the required ones, one optional filter, and
        always one fed by step ``link`` (the read the chain must go on from); ``extras``: a
        read may add one sampled filter of its own."""
        required = {n: b for n, b in bindings.items() if node.params[n].required or b.get("side")}
        optional = sorted(n for n in bindings if n not in required)
        side = any(b.get("side") for b in required.values())
        linked = link is None or any(b["step"] == link for b in required.values())
        if optional and (not required or side or not linked or rng.random() < 0.5):
            if not linked:
                pool = [n for n in optional if bindings[n]["step"] == link]
            else:
                last = max(bindings[n]["step"] for n in optional)
                keys = [n for n in optional if node.params[n].role == "key"] or optional
                pool = [n for n in keys if bindings[n]["step"] == last] or keys
            if pool:
                chosen = rng.choice(pool)
                required[chosen] = bindings[chosen]  # one chained filter, not every field
        bindings.clear()
        bindings.update(required)
        fixed = {name: b["value"] for name, b in bindings.items()}
        if node.kind == "write":
            return write_arguments(self.view, node, rng, fixed)
        rate = 0.2 if extras else 0.0
        arguments = sample_arguments(self.view, node, rng, fixed=fixed, optional_rate=rate)
        name = node.limit_param
        limit = node.params[name] if name else None
        if arguments is not None and not extras and limit is not None:
            if limit.maximum and name not in arguments:  # a whole page: rows to pick from
                arguments[name] = int(limit.maximum)
        return arguments

    @staticmethod
    def _links_hold(arguments, bindings, links: set[int]) -> bool:
        """The arguments take at least one bound value, one from every step in ``links``."""
        used = {b["step"] for n, b in bindings.items() if arguments.get(n) == b["value"]}
        return bool(used) and links <= used

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
        name = node.limit_param
        limit = node.params[name] if name else None
        page = step["arguments"].get(name, limit.default) if limit is not None else None
        rows = len(records_of(step["result"]))
        if page or limit is None or not rows:
            return bool(page) and rows >= page
        # A page size the schema does not declare (a default in the tool's code only): ask
        # for one row more; more rows, or a refusal, mean this page may have been cut.
        key = (node.name, canonical_json(step["arguments"]), canonical_json(step["result"]))
        if key not in self._cut_pages:
            probe = self.lease.call(
                node.name, {**step["arguments"], name or "limit": rows + 1}, "read"
            )
            self._cut_pages[key] = not probe.ok or len(records_of(probe.result)) > rows
        return self._cut_pages[key]

    def _execute(self, node: ToolNode, arguments, bindings, steps, banned=()) -> bool:
        if (node.name, canonical_json(arguments)) in banned:
            return False  # undone before: the chain could not go on from it
        since_write = steps
        for index in range(len(steps) - 1, -1, -1):
            if self.nodes[steps[index]["tool"]].kind == "write":
                since_write = steps[index + 1 :]
                break
        if any(s["tool"] == node.name and s["arguments"] == arguments for s in since_write):
            return False  # the same call on the same state adds nothing
        inputs = {
            name: {
                "step": b["step"],
                "field": b["field"],
                "item": b["item"],
                **({"sorted_by": b["sorted_by"]} if b.get("sorted_by") else {}),
                **({"descending": True} if b.get("descending") else {}),
            }
            for name, b in bindings.items()
            if arguments.get(name) == b["value"]
        }
        step = {"tool": node.name, "arguments": arguments, "inputs": inputs}
        if self._meaningless(steps, step):
            return False  # a join of values that only coincide, a hop back, a self-assignment
        self.stats.calls += 1
        outcome = self.lease.call(node.name, arguments, node.kind)
        if not outcome.ok:
            self.stats.step_errors += 1
            return False
        if not self._useful(node, arguments, outcome.result):
            return False
        if node.kind == "read" and self._seen(node, outcome.result, steps):
            return False  # it only finds rows the chain already holds
        step["result"] = outcome.result
        if node.kind == "read" and self._meaningless(steps, step):
            return False  # it lands back on a row the chain already named
        step["truncated"] = self._truncated(step)
        steps.append(step)
        return True

    @property
    def facts(self) -> MeaningFacts:
        """The environment's schema facts (keys, links, natural names), read once."""
        if self._facts is None:
            self._facts = MeaningFacts.of(self.view, self.nodes)
        return self._facts

    def _meaningless(self, steps, step) -> str | None:
        """Why adding ``step`` would make the chain mean nothing (``meaning.WALK_CHECKS``: the
        audit's detectors a walk can avoid), or None. The chain so far passed them."""
        chain = [
            {"tool": s["tool"], "arguments": s["arguments"], "inputs": s.get("inputs", {})}
            for s in (*steps, step)
        ]
        results = [s.get("result") for s in (*steps, step)]
        task = TaskSpec(
            kind="graph",
            environment=self.view.name,
            instruction="",
            gold_chain=chain,
            metadata={"gold_results": results},
        )
        for check in WALK_CHECKS:
            reason = check(task, self.facts)
            if reason:
                self.stats.meaningless_steps[check.__name__] = (
                    self.stats.meaningless_steps.get(check.__name__, 0) + 1
                )
                return reason
        return None

    def _rows_found(self, node: ToolNode, result: Any) -> dict | None:
        """{(table, key): record} of the rows a read returned; None where rows carry no key."""
        table = node.entity
        key = self.view.tables[table].key if table in self.view.tables else None
        if not key or not node.returns_rows:
            return None
        records = records_of(result)
        if not records or any(key not in r for r in records):
            return None
        return {(table, json.dumps(r[key], default=str)): r for r in records}

    def _seen(self, node: ToolNode, result: Any, steps) -> bool:
        """Whether a read found nothing new: only rows, with no field, that earlier steps
        (since the last write) already returned. Such a re-read adds a call, not a fact;
        a lookup of the details of a listed row (more fields) is new."""
        found = self._rows_found(node, result)
        if not found:
            return False
        earlier: dict = {}
        for step in reversed(steps):
            source = self.nodes[step["tool"]]
            if source.kind == "write":
                break
            if "rows" not in step:  # computed once per step, the walk asks again and again
                step["rows"] = self._rows_found(source, step["result"]) or {}
            for row, record in step["rows"].items():
                earlier.setdefault(row, []).append(record)
        return all(
            any(record.items() <= before.items() for before in earlier.get(row, ()))
            for row, record in found.items()
        )

    def _fan_in(self, node: ToolNode) -> int:
        return sum(
            1
            for name, p in node.params.items()
            if p.role == "key" and self.graph.edges_into(node.name, name)
        )

    def _earlier_join(self, node: ToolNode, bindings, steps, rng) -> dict | None:
        """A join on outputs already found: a key parameter of ``node`` filled by a step
        before the last, next to one the last step fills."""
        last = len(steps) - 1
        linked = {n for n, b in bindings.items() if b["step"] == last}
        if not linked or last < 1:
            return None
        earlier = self._bindings(node, steps[:last], rng)
        keys = sorted(n for n in earlier if node.params[n].role == "key")
        pairs = [(a, b) for a in sorted(linked) for b in keys if a != b]
        if not pairs:
            return None
        _, name = rng.choice(pairs)  # the other key parameter stays fed by the last step
        return {name: {**earlier[name], "side": True}}

    def _side_lookup(self, node: ToolNode, bindings, steps, rng, banned) -> dict | None:
        """A join: one more dependent lookup feeding a key parameter of ``node`` that the last
        step does not fill, so that ``node`` takes two earlier outputs."""
        last = len(steps) - 1
        for pname, p in sorted(node.params.items()):
            if p.role != "key" or (pname in bindings and bindings[pname]["step"] == last):
                continue
            lookups = [
                e
                for e in self.graph.edges_into(node.name, pname)
                if self.nodes[e.source].kind == "read"
            ]
            rng.shuffle(lookups)
            for edge in lookups[:3]:
                source = self.nodes[edge.source]
                feeds = self._bindings(source, steps, rng)
                if not feeds:
                    continue
                arguments = self._arguments(source, feeds, rng, None)
                if arguments is None or not self._links_hold(arguments, feeds, set()):
                    continue
                if not self._execute(source, arguments, feeds, steps, banned):
                    continue
                descending = rng.random() < 0.5
                got = _binding_value(steps[-1], edge.field, self.rows, descending)
                if got is None:
                    steps.pop()
                    continue
                steps[-1]["side"] = True
                return {pname: _bound(got, len(steps) - 1, edge.field, descending, side=True)}
        return None

    def _test_value(
        self, step: dict[str, Any], rng, given: frozenset[str] = frozenset()
    ) -> tuple[str | None, Any, Any] | None:
        """(field, item, value) a condition can test in a step's result: a number the step
        computed, or a plain column of the one row it found (not a key, and no value the chain
        was given: "if the country whose code is 'GI' has code 'GI'" always holds)."""
        result = step["result"]
        if isinstance(result, int | float) and not isinstance(result, bool):
            return None, None, result
        records = records_of(result)
        if len(records) != 1:
            return None
        item = None if records[0] is result else 0
        columns = [
            c
            for c, v in sorted(records[0].items())
            if _scalar(v)
            and c != "id"
            and not c.endswith(("_id", "_code"))
            and c not in step["arguments"]
            and (not isinstance(v, str) or 0 < len(v) <= 40)
            and str(v).casefold() not in given
        ]
        if not columns:
            return None
        column = rng.choice(columns)
        return column, item, records[0][column]

    def _branch(self, node: ToolNode, arguments, bindings, steps, rng) -> dict | None:
        """Make a write conditional: a value an earlier step found decides between this write
        and another one on the same row (same tool, other values). The condition is drawn to
        hold or not at random; the gold run does whichever write it selects."""
        sources = [b["step"] for b in bindings.values()] + list(range(len(steps) - 1, -1, -1))
        given = frozenset(
            str(v).casefold() for s in steps for v in s["arguments"].values() if _scalar(v)
        )
        for index in dict.fromkeys(sources):
            step = steps[index]
            if self.nodes[step["tool"]].kind != "read":
                continue
            found = self._test_value(step, rng, given)
            if found is None:
                continue
            field_name, item, value = found
            if self.view.is_flag(self.nodes[step["tool"]].entity, field_name):
                continue  # "if its is active is above 0": a yes/no column is no threshold
            holds = rng.random() < 0.5
            if isinstance(value, int | float):
                test = "above"
                if isinstance(value, int):
                    threshold = value - rng.randint(1, 3) if holds else value + rng.randint(0, 2)
                else:
                    threshold = math.floor(value) - 1 if holds else math.ceil(value)
            else:
                test = "is"
                table = self.nodes[step["tool"]].entity
                others = [
                    v
                    for v in (self.view.column_values(table, field_name) if table else [])
                    if isinstance(v, str) and v != value and 0 < len(v) <= 40
                ]
                if not holds and not others:
                    continue
                threshold = value if holds else rng.choice(others[:50])
            keys = {  # the same row, and what the chain fed: only the values may differ
                n: v
                for n, v in arguments.items()
                if n in bindings or (node.params.get(n) and node.params[n].role == "key")
            }
            other = None
            for _attempt in range(4):
                drawn = write_arguments(self.view, node, random.Random(rng.random()), dict(keys))
                if (
                    drawn
                    and drawn != arguments
                    and all(drawn.get(n) == v for n, v in keys.items())
                    and not any(n not in keys and node.params[n].role == "key" for n in drawn)
                ):
                    other = drawn  # the same row and feeds, other values
                    break
            if other is None:
                return None
            return {
                "step": index,
                "field": field_name,
                "item": item,
                "test": test,
                "value": threshold,
                "holds": holds,
                "other": {"tool": node.name, "arguments": other},
            }
        return None

    def _by_serial(self, node: ToolNode) -> bool:
        """Whether a read needs a row's serial id where the row has a name a person would use
        (get_book(book_id) with books titled): a goal cannot start from a number nobody knows."""
        for p in node.params.values():
            if p.required and p.role == "key" and p.key and p.column == p.key:
                table, column = p.key
                if self.facts.is_surrogate_key(table, column) and self.facts.natural.get(table):
                    return True
        return False

    def _start(self, rng, steps, banned=()) -> bool:
        starts = [n for n in self.nodes.values() if n.kind == "read"]
        rng.shuffle(starts)
        if self.rows == "single":  # goal tiers: lookups by serial id only where nothing else
            starts.sort(key=self._by_serial)
        for node in starts[: ATTEMPTS_PER_STEP * 2]:
            arguments = sample_arguments(self.view, node, rng, optional_rate=0.2)
            if arguments is not None and self._execute(node, arguments, {}, steps, banned):
                return True
        if starts:
            return False
        # Only write tools (a document of POST operations): a task can still be one change
        # to real rows, checked by the state it leaves (add a payout, patch a program).
        writes = [n for n in self.nodes.values() if n.kind == "write"]
        rng.shuffle(writes)
        for node in writes[: ATTEMPTS_PER_STEP * 2]:
            arguments = write_arguments(self.view, node, rng)
            if arguments is not None and self._execute(node, arguments, {}, steps, banned):
                return True
        return False

    def _step(self, steps, want_write: bool, join: bool, branch: bool, rng, banned) -> dict | None:
        """Add one step (two for a join: the side lookup and the step it feeds). Each tool gets
        two draws of arguments: the second without a sampled filter of its own."""
        last = len(steps) - 1
        link = last if self.nodes[steps[last]["tool"]].kind == "read" else None
        options = self._candidates(steps, want_write, rng)
        if join:  # tools with several key inputs first: they can join
            options.sort(key=lambda option: -self._fan_in(option[0]))
        for node, found in options[:ATTEMPTS_PER_STEP]:
            for draw, extras in enumerate((True, False, False) if node.kind == "read" else (True,)):
                if draw:  # another pick from listed rows (the smallest or the largest)
                    found = self._bindings(node, steps, rng)
                    if link is not None and not any(b["step"] == link for b in found.values()):
                        continue
                bindings = dict(found)
                links = {link} if link is not None else set()
                side, walked = None, False
                if join:  # an output found earlier, else one more dependent lookup
                    side = self._earlier_join(node, bindings, steps, rng)
                    if side is None:
                        side = self._side_lookup(node, bindings, steps, rng, banned)
                        walked = side is not None
                if side:
                    bindings = {**bindings, **side}
                    links |= {b["step"] for b in side.values()}
                arguments = self._arguments(node, bindings, rng, link, extras)
                condition = None
                if arguments is not None and branch and node.kind == "write":
                    condition = self._branch(node, arguments, bindings, steps, rng)
                if (
                    arguments is not None
                    and self._links_hold(arguments, bindings, links)
                    and self._execute(node, arguments, bindings, steps, banned)
                ):
                    if condition:
                        steps[-1]["branch"] = condition
                    joined = len({i["step"] for i in steps[-1]["inputs"].values()}) > 1
                    return {"join": joined, "branch": bool(condition)}
                if walked:
                    steps.pop()  # the side lookup feeds nothing now
        return None

    def _undo(self, steps, banned) -> None:
        """Drop the last step (a read) and the side lookup of a join with it."""
        popped = steps.pop()
        banned.add((popped["tool"], canonical_json(popped["arguments"])))
        self.stats.backtracks += 1
        if steps and steps[-1].get("side"):
            steps.pop()

    def _writes(self, steps) -> list[int]:
        """The write steps of a chain (by identity): equal lists mean equal episode states."""
        return [id(s) for s in steps if self.nodes[s["tool"]].kind == "write"]

    def walk(self, rng: random.Random, difficulty: Difficulty) -> list[dict[str, Any]] | None:
        self.planned_steps = difficulty.steps
        steps: list[dict[str, Any]] = []
        banned: set[tuple[str, str]] = set()
        self.lease.clean()
        if not self._start(rng, steps):
            self.stats.no_start += 1
            return None
        joins_left, branches_left = difficulty.joins, difficulty.branches
        wanted_writes = max(difficulty.writes, difficulty.branches)
        undone = roots = 0
        best: list[dict[str, Any]] = []  # the longest chain reached, to return if undone later
        while len(steps) < difficulty.steps or self._truncated(steps[-1]):
            if len(steps) >= difficulty.steps + 5:
                break
            writes_left = wanted_writes - sum(
                1 for s in steps if self.nodes[s["tool"]].kind == "write"
            )
            remaining = difficulty.steps - len(steps)
            want_write = writes_left > 0 and (
                remaining <= writes_left or rng.random() < writes_left / max(1, remaining)
            )
            join = joins_left > 0 and remaining >= 2
            # the last planned write is the conditional one: a later write to the same row
            # would undo the branch and the two ways would end alike
            branch = branches_left > 0 and writes_left <= branches_left
            added = self._step(steps, want_write, join, branch, rng, banned)
            if added is None and want_write:
                added = self._step(steps, False, join, False, rng, banned)
            if added is not None:
                joins_left -= 1 if added["join"] else 0
                branches_left -= 1 if added["branch"] else 0
                if len(steps) > len(best) and not self._truncated(steps[-1]):
                    best = list(steps)
                continue
            if len(steps) == 1 and roots < MAX_ROOTS:
                roots += 1  # a dead end at the root: start from another row
                banned.add((steps[0]["tool"], canonical_json(steps[0]["arguments"])))
                steps.clear()
                if not self._start(rng, steps, banned):
                    return None
                continue
            if undone >= MAX_BACKTRACKS or len(steps) <= 1:
                break
            if self.nodes[steps[-1]["tool"]].kind == "write":
                break  # a write is never undone: the chain ends with it
            self._undo(steps, banned)
            undone += 1
        if len(best) > len(steps) and self._writes(best) == self._writes(steps):
            steps = best  # reads left the state as it was: the longer chain holds
        while len(steps) > 1 and self._truncated(steps[-1]):
            if self.nodes[steps[-1]["tool"]].kind == "write":
                break
            self._undo(steps, banned)
        if self._truncated(steps[-1]):
            return None
        for step in steps:
            step.pop("side", None)
            step.pop("rows", None)
            step.pop("bind", None)
        return steps


def start_obstacles(view: EnvironmentView, nodes: dict[str, ToolNode], most: int = 3) -> str:
    """Why no walk can take a first step, in words: which read tools there are and which
    required parameter of each has no value in the data to call it with."""
    reads = [n for n in nodes.values() if n.kind == "read"]
    if not reads:
        writes = sorted(n.name for n in nodes.values() if n.kind == "write")
        if not writes:
            return "the environment has no tool to start from"
        return (
            "the environment has only write tools and none of "
            f"{', '.join(writes[:most])}{' ...' if len(writes) > most else ''} "
            "could be called with values from the data"
        )
    reasons = []
    for node in sorted(reads, key=lambda n: n.name)[:most]:
        missing = [
            name
            for name, p in node.params.items()
            if p.required and sample_param(view, p, random.Random(0)) is UNSET
        ]
        if missing:
            reasons.append(f"{node.name} needs {', '.join(missing)}, which no column's values fill")
        else:
            reasons.append(f"{node.name} found nothing or failed on values from the data")
    more = f"; {len(reads) - most} more read tools alike" if len(reads) > most else ""
    return "no read tool can be called with values from the data: " + "; ".join(reasons) + more


def chain_of(steps, nodes: dict[str, ToolNode]) -> list[dict[str, Any]]:
    """The gold chain of a walk: tool, arguments, inputs, kind, when conditional, branch, and
    the result the walk observed (stored form, ``tasks.gold_results``) for diagnosis."""
    return [
        {
            "tool": s["tool"],
            "arguments": s["arguments"],
            "inputs": s["inputs"],
            "kind": nodes[s["tool"]].kind,
            **({"branch": s["branch"]} if s.get("branch") else {}),
            **({"result": stored_result(s["result"])} if "result" in s else {}),
        }
        for s in steps
    ]


def measured_difficulty(
    steps, nodes: dict[str, ToolNode], distractors: int, tier: str = "explicit"
) -> dict[str, Any]:
    """The walk's ``StructuralDifficulty`` (dependency counts from the dependency check)."""
    chain = chain_of(steps, nodes)
    report = check_dependencies(chain)
    return StructuralDifficulty.measure(
        steps=len(chain),
        dependent_calls=report.dependent_calls,
        depth=report.depth,
        writes=sum(1 for c in chain if c["kind"] == "write"),
        branches=sum(1 for c in chain if c.get("branch")),
        joins=sum(1 for c in chain if len({i["step"] for i in c["inputs"].values()}) > 1),
        distractors=distractors,
        tier=tier,
    ).to_dict()


def graph_signature(environment: str, version, steps, answer_spec, tier: str = "explicit") -> str:
    """Canonical gold-chain signature: equal chains asking for the same answer, at the same
    instruction tier, are one task (the same walk at two tiers is two tasks)."""
    chain = [
        [s["tool"], s["arguments"], *([s["branch"]] if s.get("branch") else [])] for s in steps
    ]
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
    in it. The walker builds chains where every lookup is used, so this is a guard; inputs and
    branch conditions are renumbered to the kept steps.
    """
    needed = {len(steps) - 1} | {i for i, s in enumerate(steps) if nodes[s["tool"]].kind == "write"}
    for index in range(len(steps) - 1, -1, -1):
        if index in needed:
            needed |= {b["step"] for _, b in references(steps[index])}
    kept = sorted(needed)
    renumber = {old: new for new, old in enumerate(kept)}
    pruned = []
    for old in kept:
        step = dict(steps[old])
        step["inputs"] = {
            name: {**b, "step": renumber[b["step"]]} for name, b in step["inputs"].items()
        }
        if step.get("branch"):
            step["branch"] = {**step["branch"], "step": renumber[step["branch"]["step"]]}
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

        self.auditor = (
            VerifierAuditor(package, pool, self.view, graph.nodes, facts=self.walker.facts)
            if audit
            else None
        )

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
        unstarted = self.stats.no_start
        steps = self.walker.walk(rng, difficulty)
        if steps is None and self.stats.no_start > unstarted:
            return None  # no first step: counted as such (start_obstacles says why)
        if steps is None or len(steps) < difficulty.shortest:
            self.stats.short += 1
            return None
        if self.tier in GOAL_TIERS:
            kept = prune_unused(steps, self.graph.nodes)
            self.stats.pruned_steps += len(steps) - len(kept)
            steps = kept
            if len(steps) < difficulty.shortest:
                self.stats.short += 1
                return None
        report = check_dependencies(chain_of(steps, self.graph.nodes), [s["result"] for s in steps])
        if not report.ok:  # enforced on every walk kept, whatever the walker did
            self.stats.dependency_rejected += 1
            log.warning("walk refused by the dependency check: %s", report.violations)
            return None
        task = self._task_from_walk(steps, difficulty, seed, rng)
        if task is not None and self.auditor is not None:
            result = self.auditor.audit(task)
            task.audit = result.to_dict()
            if not result.passed:
                self.stats.kept -= 1
                self.stats.audit_discarded += 1
                return None
        if task is not None:
            length = len(task.gold_chain)
            self.stats.lengths[length] = self.stats.lengths.get(length, 0) + 1
        return task

    def _task_from_walk(self, steps, difficulty: Difficulty, seed: int, rng) -> TaskSpec | None:
        nodes = self.graph.nodes
        last = nodes[steps[-1]["tool"]]
        answer_spec, reference = project_answer(last.action, last.kind, steps[-1]["result"])
        if asks_back(steps, nodes, answer_spec, reference):
            answer_spec, reference = another_answer(steps, nodes)
            if answer_spec is None:
                self.stats.asked_back += 1
                return None
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
            gold_chain=chain_of(steps, nodes),
            reference_answer=reference,
            expected_state_hash=state_hash,
            expected_diff=diff,
            difficulty=measured_difficulty(steps, nodes, len(distractors), self.tier),
            seed=seed,
            tools=offered,
            signature=signature,
            answer_contract=contract.to_dict(),
            metadata={
                "answer": answer_spec,
                "instruction_source": source,
                "template_instruction": template,
                "tier": self.tier,
                "intent": rendered.intent,
                "requested_steps": difficulty.steps,
                "given": rendered.given,
                "discovered": rendered.discovered,
                "gold_results": [s["result"] for s in steps],
            },
        )


def asks_back(steps, nodes: dict[str, ToolNode], answer_spec, reference) -> bool:
    """Whether the question asks for a value the text already gives: one the task itself
    wrote ("Set the count of the genus to 9. What is the count of the genus you updated?"),
    or the very value the row was found by ("What is the alpha 2 of the country whose alpha
    2 is "GN"?")."""
    field_name = answer_spec.get("field")
    if not field_name or answer_spec.get("shape") not in ("value", "list"):
        return False
    last = steps[-1]
    for name, value in last["arguments"].items():
        p = nodes[last["tool"]].params.get(name)
        column = p.column[1] if p is not None and p.column else name
        given = name not in last.get("inputs", {}) and (p is None or p.role in GIVEN_ROLES)
        if given and column == field_name and _only(reference, value):
            return True
    entity = nodes[steps[-1]["tool"]].entity
    for step in steps[:-1]:
        node = nodes[step["tool"]]
        if node.kind != "write" or node.entity != entity:
            continue
        for name, value in step["arguments"].items():
            p = node.params.get(name)
            if p is not None and p.key is not None and p.column == p.key:
                continue  # the row it acts on, not a value it writes
            column = p.column[1] if p is not None and p.column else name
            if column == field_name and _only(reference, value):
                return True
    return False


GIVEN_ROLES = ("key", "value", "enum")  # parameters whose value the text states


def another_answer(steps, nodes: dict[str, ToolNode]) -> tuple[dict[str, Any] | None, Any]:
    """The first of the last step's other fields (`other_answers`) whose value the text does
    not already give, by its column or by its value (a row found by `transformationName`
    is not asked its `transformationName`, nor its `name` of the same value); (None, None)
    when every field is given."""
    stated = given_values(steps[-1], nodes)
    for spec, value in other_answers(steps[-1]["result"]):
        if not asks_back(steps, nodes, spec, value) and not _only(value, stated):
            return spec, value
    return None, None


def given_values(step, nodes: dict[str, ToolNode]) -> list[Any]:
    """The values the text states for a step: its arguments not fed by an earlier step."""
    params = nodes[step["tool"]].params
    return [
        value
        for name, value in step["arguments"].items()
        if name not in step.get("inputs", {})
        and (name not in params or params[name].role in GIVEN_ROLES)
    ]


def _only(reference: Any, given: Any) -> bool:
    """The answer holds only what is given: the value itself, a list of only it, or (`given`
    a list: the values a filter took, or several stated values) a list drawn from them."""
    if reference == given or (isinstance(reference, list) and reference == [given]):
        return True
    if isinstance(reference, list):
        pool = given if isinstance(given, list) else [given]
        return bool(reference) and all(item in pool for item in reference)
    return isinstance(given, list) and reference in given


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
