"""Templates of programmatic tasks: an instruction, ``solve(call)`` and ``verify(answer, call)``.

Each template is one control-flow pattern over a ``ProgramShape`` (parents -> children): count,
sum, filter, compare, arg-max, rank, loop with early exit, reconcile, date arithmetic, count
distinct, average, partition, two hops, and updates (per row, per group, if/else). A template
returns ``None`` when the environment lacks what it needs (no measure, no date column, no update
tool, no next hop), and the synthesizer tries another. The verification script recomputes the
answer from the episode's state, never from a constant answer. Instructions name every literal
the code uses and never a tool name; anything ordered says its order.

Most programs walk the children of the chosen parents: ``child_loop`` writes that loop once and a
template states only what it keeps per child; ``_pick`` and ``_row_update`` draw the parents, the
column and (for writes) the update tool, in the order the random draws have always been made.
"""

from __future__ import annotations

import json
import random
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

from environments.discovery.naming import with_article, words_of
from tasks.synthesis.environment_view import EnvironmentView
from tasks.synthesis.program_shapes import ProgramShape
from tasks.synthesis.tool_graph import ParamInfo, plural, singular


@dataclass
class ProgramDraft:
    template: str
    instruction: str
    solution: str
    verification: str
    params: dict[str, Any]
    answer: dict[str, Any] = field(default_factory=lambda: {"shape": "value"})
    writes: bool = False  # the task must change the state
    tools: list[str] = field(default_factory=list)  # tools beyond the shape's own


# --- shared pieces ------------------------------------------------------------------------

# The answer of a template whose instruction says "rounded to 2 decimals", even when the gold
# total happens to be whole.
ROUNDED_NUMBER = {"shape": "value", "value_type": "number", "precision": 2}


def recomputed(code: str, expression: str, guard: str = "") -> tuple[str, str]:
    """(solution, verification) of a template whose answer is ``expression`` over ``code``:
    ``solve`` returns it; ``verify`` recomputes it on the final state and compares (``guard``
    first, e.g. ``_number(answer) and``)."""
    solution = f"{code}\n\ndef solve(call):\n    return {expression}\n"
    verification = (
        f"{code}\n\ndef verify(answer, call):\n    return {guard} answer == {expression}\n"
    )
    return solution, verification


def _threshold(view: EnvironmentView, table: str, column: str, rng: random.Random) -> Any:
    values = view.column_values(table, column)
    return values[len(values) // 2 + rng.randint(-len(values) // 4, 0)] if values else 0


def _parents(view: EnvironmentView, shape: ProgramShape, rng, count: int) -> list[Any]:
    values = view.column_values(shape.parent_table, shape.parent_column)
    return rng.sample(values, min(count, len(values)))


def _words(name: str) -> str:
    return words_of(name)


def _listing(values: list[Any]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def _names(shape: ProgramShape) -> tuple[str, str, str]:
    """(parent, child, parent column) in words."""
    return (
        _words(singular(shape.parent_table)),
        _words(singular(shape.child_table)),
        _words(shape.parent_column),
    )


def _which(shape: ProgramShape, parents: list[Any]) -> str:
    """ "the albums whose title is one of ...": parents by their names where they have
    them (``ProgramShape.parent_names``), else by the column the program groups on."""
    p, _, column = _names(shape)
    if shape.parent_names and all(v in shape.parent_names for v in parents):
        parents = [shape.parent_names[v] for v in parents]
        column = _words(shape.parent_name_column or column)
    if len(parents) == 1:
        return f"the {p} whose {column} is {json.dumps(parents[0])}"
    return f"the {plural(p)} whose {column} is one of {_listing(parents)}"


def _head(**constants: Any) -> str:
    return "".join(f"{name.upper()} = {value!r}\n" for name, value in constants.items())


def _code(text: str) -> str:
    return textwrap.dedent(text)


def _new_value(values: list[Any], rng: random.Random, param: ParamInfo | None = None) -> Any:
    """A value no row has yet, so every matching row really changes; one the update tool's
    parameter accepts (its enum, its maximum), or None when no such value exists."""
    if param is not None and param.enum:
        fresh = [v for v in param.enum if v not in values]
        return rng.choice(fresh) if fresh else None
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if numbers and len(numbers) == len(values):
        top = max(numbers)
        value = top + rng.randint(1, 5) if isinstance(top, int) else round(top * 1.1 + 1, 2)
        cap = param.maximum if param is not None else None
        if cap is not None and value > cap:
            free = [v for v in range(int(min(numbers)), int(cap) + 1) if v not in numbers]
            return rng.choice(free) if free else None
        return value
    return f"{rng.choice(values)} (revised)" if values else "revised"


def _update_value(
    view: EnvironmentView, shape: ProgramShape, update: RowUpdate, rng, taken: tuple = ()
) -> Any:
    """A new value for ``update``'s column that its update tool accepts (None: there is none)."""
    param = next(
        (u[0].params.get(u[2]) for u in shape.write_updates() if u[0].name == update.update_tool),
        None,
    )
    existing = view.column_values(shape.child_table, update.column) + list(taken)
    return _new_value(existing, rng, param)


def _update_pairs(shape: ProgramShape) -> list[tuple[tuple, str]]:
    """(update tool, key parameter, column set) with a different measure to filter on."""
    return [(u, m) for u in shape.write_updates() for m in shape.measures if m != u[2]]


def _sortable(values: list[Any]) -> bool:
    return len({type(v) for v in values}) == 1


def _pick(
    view: EnvironmentView,
    shape: ProgramShape,
    rng: random.Random,
    columns: list[str],
    count: int | tuple[int, int],
    least: int = 1,
    sortable: bool = False,
) -> tuple[list[Any], str] | None:
    """Some parents (``count``, or a random count in that range) and one of ``columns``; None
    when there is no column to pick or fewer than ``least`` (or unsortable) parents."""
    if not columns:
        return None
    parents = _parents(view, shape, rng, count if isinstance(count, int) else rng.randint(*count))
    if len(parents) < least or (sortable and not _sortable(parents)):
        return None
    return parents, rng.choice(columns)


READ_MEASURE = "value = _measure(call, child, MEASURE)"
READ_DAY = "day = _day(_measure(call, child, DATE))"


def _lines(text: str, depth: int) -> str:
    """``text`` (dedented) indented ``depth`` levels, one trailing newline; empty stays empty."""
    text = _code(text).strip("\n")
    return textwrap.indent(text + "\n", "    " * depth) if text else ""


def child_loop(
    signature: str,
    before: str,
    per_child: str,
    after: str,
    read: str = READ_MEASURE,
    over: str | None = "PARENTS",
) -> str:
    """Program code ``def signature:`` that walks the children of every parent in ``over``
    (or of its one ``parent`` argument when ``over`` is None): ``before``, then for each child
    ``read`` and ``per_child``, then ``after``."""
    depth = 1 if over is None else 2
    loop = "" if over is None else f"    for parent in {over}:\n"
    loop += "    " * depth + "for child in _children(call, parent):\n"
    body = _lines(read + "\n" + _code(per_child).strip("\n"), depth + 1)
    return f"\ndef {signature}:\n" + _lines(before, 1) + loop + body + _lines(after, 1)


def found(code: str, expression: str) -> tuple[str, str]:
    """(solution, verification) of a template whose answer is the value ``expression`` finds,
    which must exist."""
    solution = f"{code}\n\ndef solve(call):\n    return {expression}\n"
    verification = code + _code(
        f"""
        def verify(answer, call):
            expected = {expression}
            return expected is not None and not isinstance(answer, list) and answer == expected
        """
    )
    return solution, verification


# --- read-only templates ------------------------------------------------------------------


COUNT_ABOVE = child_loop(
    "_count(call, parent)",
    "count = 0",
    """
    if value is not None and value > THRESHOLD:
        count += 1
    """,
    "return count",
    over=None,
)


def draft_most_children(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Arg-max over parents of a filtered count; ties go to the one listed first."""
    picked = _pick(view, shape, rng, shape.measures, (2, 4), least=2)
    if picked is None:
        return None
    parents, measure = picked
    threshold = _threshold(view, shape.child_table, measure, rng)
    p, c, column = _names(shape)
    instruction = (
        f"Consider {_which(shape, parents)}. "
        f"For each of them, count their {plural(c)} with {_words(measure)} above {threshold}. "
        f"Report the {column} of the {p} with the most such {plural(c)} "
        "(on a tie, the one listed first)."
    )
    code = _head(parents=parents, threshold=threshold, measure=measure) + COUNT_ABOVE
    solution = code + _code(
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
    verification = code + _code(
        """
        def verify(answer, call):
            counts = [_count(call, parent) for parent in PARENTS]
            return answer in PARENTS and counts[PARENTS.index(answer)] == max(counts)
        """
    )
    params = {"parents": parents, "measure": measure, "threshold": threshold}
    return ProgramDraft("most_children", instruction, solution, verification, params)


def draft_total(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Sum of a child measure over several parents."""
    picked = _pick(view, shape, rng, shape.additive(), (1, 3))
    if picked is None:
        return None
    parents, measure = picked
    _, c, _ = _names(shape)
    instruction = (
        f"What is the total {_words(measure)} of all {plural(c)} of {_which(shape, parents)}? "
        "Report the number rounded to 2 decimals."
    )
    head = _head(parents=parents, measure=measure)
    solution = head + child_loop(
        "solve(call)",
        "total = 0",
        """
        if value is not None:
            total += value
        """,
        "return round(total, 2)",
    )
    verification = head + _code(
        """
        def verify(answer, call):
            values = [
                _measure(call, child, MEASURE)
                for parent in PARENTS
                for child in _children(call, parent)
            ]
            expected = sum(v for v in values if v is not None)
            return _number(answer) and abs(answer - expected) <= 0.006
        """
    )
    params = {"parents": parents, "measure": measure}
    return ProgramDraft("total", instruction, solution, verification, params, answer=ROUNDED_NUMBER)


IN_RANGE = """
    if value is not None and LOW <= value <= HIGH:
        {found}.append(child[DISPLAY])
"""


def draft_filtered_list(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Children of several parents whose measure lies in a range (a set answer)."""
    if not shape.display:
        return None
    picked = _pick(view, shape, rng, shape.measures, (1, 3), least=0)
    if picked is None:
        return None
    parents, measure = picked
    values = view.column_values(shape.child_table, measure)
    low, high = sorted(rng.sample(values, 2)) if len(values) > 1 else (values[0], values[0])
    _, c, _ = _names(shape)
    instruction = (
        f"List the {_words(shape.display)} of every {c} of {_which(shape, parents)} whose "
        f"{_words(measure)} is between {low} and {high} inclusive (order does not matter)."
    )
    head = _head(parents=parents, measure=measure, low=low, high=high, display=shape.display)
    solution = head + child_loop(
        "solve(call)", "found = []", IN_RANGE.format(found="found"), "return sorted(found)"
    )
    verification = head + child_loop(
        "verify(answer, call)",
        """
        if not isinstance(answer, list):
            return False
        inside = []
        """,
        IN_RANGE.format(found="inside"),
        "return sorted(map(json.dumps, answer)) == sorted(map(json.dumps, inside))",
    )
    params = {"parents": parents, "measure": measure, "low": low, "high": high}
    return ProgramDraft(
        "filtered_list", instruction, solution, verification, params, answer={"shape": "list"}
    )


TOTAL_ABOVE = child_loop(
    "_total(call, parent)",
    "total = 0",
    """
    if value is not None and value > THRESHOLD:
        total += value
    """,
    "return round(total, 6)",
    over=None,
)


def draft_compare_totals(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Filter, aggregate, compare: which of A, B has the larger total of X above Y."""
    picked = _pick(view, shape, rng, shape.additive(), 2, least=2)
    if picked is None:
        return None
    parents, measure = picked
    threshold = _threshold(view, shape.child_table, measure, rng)
    p, c, column = _names(shape)
    a, b = (_which(shape, [v]).removeprefix("the ") for v in parents)
    instruction = (
        f"Of the {a} and the {b}, which has the larger total {_words(measure)} over its "
        f"{plural(c)} whose {_words(measure)} is above {threshold}? Report its {column} (on a "
        f"tie, the first of the two)."
    )
    code = _head(parents=parents, threshold=threshold, measure=measure) + TOTAL_ABOVE
    solution = code + _code(
        """
        def solve(call):
            first, second = PARENTS
            return first if _total(call, first) >= _total(call, second) else second
        """
    )
    verification = code + _code(
        """
        def verify(answer, call):
            totals = [_total(call, parent) for parent in PARENTS]
            expected = PARENTS[0] if totals[0] >= totals[1] else PARENTS[1]
            return not isinstance(answer, (list, dict)) and answer == expected
        """
    )
    params = {"parents": parents, "measure": measure, "threshold": threshold}
    return ProgramDraft("compare_totals", instruction, solution, verification, params)


BEST_CHILD = child_loop(
    "_best(call)",
    "best, best_value = None, None",
    """
    if value is None:
        continue
    if (
        best is None
        or value > best_value
        or (value == best_value and child[CHILD_KEY] < best[CHILD_KEY])
    ):
        best, best_value = child, value
    """,
    "return None if best is None else _measure(call, best, REPORT)",
)


def draft_argmax_child(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Arg-max over a join: the child of several parents with the highest measure."""
    picked = _pick(view, shape, rng, shape.measures, (1, 3))
    if picked is None:
        return None
    parents, measure = picked
    report = shape.display or shape.child_key
    _, c, _ = _names(shape)
    instruction = (
        f"Among all {plural(c)} of {_which(shape, parents)}, which one has the highest "
        f"{_words(measure)}? Report its {_words(report)} (on a tie, the {c} with the smallest "
        f"{_words(shape.child_key)})."
    )
    head = _head(parents=parents, measure=measure, report=report)
    solution, verification = found(head + BEST_CHILD, "_best(call)")
    params = {"parents": parents, "measure": measure, "report": report}
    return ProgramDraft("argmax_child", instruction, solution, verification, params)


RANKING = _code(
    """
    def _ranking(call):
        totals = {}
        for parent in PARENTS:
            values = [_measure(call, child, MEASURE) for child in _children(call, parent)]
            totals[parent] = round(sum(v for v in values if v is not None), 6)
        return sorted(PARENTS, key=lambda parent: (-totals[parent], parent))
    """
)


def draft_top_parents(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Group and rank: the top k parents by a child total, as an ordered list."""
    if not shape.additive():
        return None
    parents = _parents(view, shape, rng, rng.randint(3, 5))
    if len(parents) < 3 or not _sortable(parents):
        return None
    k = rng.randint(2, len(parents) - 1)  # drawn before the measure
    measure = rng.choice(shape.additive())
    _, c, column = _names(shape)
    instruction = (
        f"Rank {_which(shape, parents)} by the total {_words(measure)} of their {plural(c)}, "
        f"highest first (on a tie, by {column} ascending). Report the {column} of the top {k}, "
        "in that order."
    )
    head = _head(parents=parents, measure=measure, k=k)
    solution, verification = recomputed(head + RANKING, "_ranking(call)[:K]")
    params = {"parents": parents, "measure": measure, "k": k}
    answer = {"shape": "list", "ordered": True}
    return ProgramDraft("top_parents", instruction, solution, verification, params, answer=answer)


FIRST_MATCH = child_loop(
    "_first(call)",
    "",
    """
    if value is not None and value > THRESHOLD:
        return parent  # early exit: later parents are never read
    """,
    "return None",
    over="sorted(PARENTS)",
)


def draft_first_match(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """A loop with early exit: the first parent, in a stated order, with a child above Y."""
    picked = _pick(view, shape, rng, shape.measures, (3, 5), least=2, sortable=True)
    if picked is None:
        return None
    parents, measure = picked
    threshold = _threshold(view, shape.child_table, measure, rng)
    p, c, column = _names(shape)
    instruction = (
        f"Go through {_which(shape, parents)} in ascending order of {column}, and report the "
        f"{column} of the first {p} that has a {c} with {_words(measure)} above {threshold}."
    )
    head = _head(parents=parents, measure=measure, threshold=threshold)
    solution, verification = found(head + FIRST_MATCH, "_first(call)")
    params = {"parents": parents, "measure": measure, "threshold": threshold}
    return ProgramDraft("first_match", instruction, solution, verification, params)


RECONCILE = _code(
    """
    def _stored(call, parent):
        rows = _records(call(PARENT_TOOL, **{PARENT_PARAM: parent}))
        return rows[0].get(STORED) if rows else None


    def _computed(call, parent):
        children = _children(call, parent)
        if MEASURE is None:
            return len(children)
        values = [_measure(call, child, MEASURE) for child in children]
        return sum(v for v in values if v is not None)


    def _statuses(call):
        statuses = {}
        for parent in PARENTS:
            stored, computed = _stored(call, parent), round(_computed(call, parent), 6)
            if stored is None:
                statuses[str(parent)] = "missing"
            elif round(stored, 6) > computed:
                statuses[str(parent)] = "higher"
            elif round(stored, 6) < computed:
                statuses[str(parent)] = "lower"
            else:
                statuses[str(parent)] = "equal"
        return statuses
    """
)


def draft_reconcile(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Cross-table reconciliation: a parent's stored figure against its children's."""
    if not shape.parent_detail:
        return None
    options = [(s, s) for s in shape.parent_numbers if s in shape.measures]
    options += [(s, None) for s in shape.parent_numbers if "count" in s and s not in shape.measures]
    if not options:
        return None
    stored, measure = rng.choice(options)
    parents = _parents(view, shape, rng, rng.randint(2, 3))
    if not parents:
        return None
    p, c, column = _names(shape)
    figure = (
        f"the number of its {plural(c)}"
        if measure is None
        else f"the total {_words(measure)} of its {plural(c)}"
    )
    instruction = (
        f"For each of {_which(shape, parents)}, compare the {_words(stored)} stored on the {p} "
        f'with {figure}. Report an object mapping each {column} (as text) to "higher" if the '
        'stored figure is larger, "lower" if it is smaller, or "equal".'
    )
    head = _head(
        parents=parents,
        stored=stored,
        measure=measure,
        parent_tool=shape.parent_detail.name,
        parent_param=shape.parent_detail_param,
    )
    solution, verification = recomputed(head + RECONCILE, "_statuses(call)")
    params = {"parents": parents, "stored": stored, "measure": measure}
    tools = [shape.parent_detail.name]
    return ProgramDraft("reconcile", instruction, solution, verification, params, tools=tools)


DAYS = child_loop(
    "_days(call)",
    "days = []",
    """
    if day is not None:
        days.append(day)
    """,
    "return days",
    read=READ_DAY,
)


def draft_date_span(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Date arithmetic: days between the earliest and the latest date of some children."""
    picked = _pick(view, shape, rng, shape.dates, (1, 2))
    if picked is None:
        return None
    parents, date = picked
    _, c, _ = _names(shape)
    instruction = (
        f"How many days lie between the earliest and the latest {_words(date)} among the "
        f"{plural(c)} of {_which(shape, parents)}? Report the latest minus the earliest, in days."
    )
    code = _head(parents=parents, date=date) + DAYS
    solution = code + _code(
        """
        def solve(call):
            days = _days(call)
            return max(days) - min(days) if days else None
        """
    )
    verification = code + _code(
        """
        def verify(answer, call):
            days = _days(call)
            return bool(days) and _number(answer) and answer == max(days) - min(days)
        """
    )
    params = {"parents": parents, "date": date}
    return ProgramDraft("date_span", instruction, solution, verification, params)


def draft_date_window(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Date arithmetic: how many children fall inside a window of days."""
    picked = _pick(view, shape, rng, shape.dates, (1, 2), least=0)
    if picked is None:
        return None
    parents, date = picked
    days = sorted(
        {str(v)[:10].replace("/", "-") for v in view.column_values(shape.child_table, date)}
    )
    if not parents or len(days) < 2:
        return None
    start, end = sorted(rng.sample(days, 2))
    _, c, _ = _names(shape)
    instruction = (
        f"How many {plural(c)} of {_which(shape, parents)} have {with_article(_words(date))} on a day from "
        f"{start} to {end}, both included?"
    )
    window = _head(parents=parents, date=date, start=start, end=end) + child_loop(
        "_inside(call)",
        """
        low, high = _day(START), _day(END)
        count = 0
        """,
        """
        if day is not None and low <= day <= high:
            count += 1
        """,
        "return count",
        read=READ_DAY,
    )
    solution, verification = recomputed(window, "_inside(call)", "_number(answer) and")
    params = {"parents": parents, "date": date, "start": start, "end": end}
    return ProgramDraft("date_window", instruction, solution, verification, params)


def draft_count_distinct(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Count distinct: how many different values a column takes among some children."""
    if not shape.categories:
        return None
    parents = _parents(view, shape, rng, rng.randint(1, 3))
    if not parents:
        return None
    text = [c for c in shape.categories if c not in shape.measures]
    column = rng.choice(text or shape.categories)  # a text column when there is one
    _, c, _ = _names(shape)
    instruction = (
        f"How many different {_words(column)} values occur among the {plural(c)} of "
        f"{_which(shape, parents)}? (A missing value does not count.)"
    )
    head = _head(parents=parents, column=column) + child_loop(
        "_distinct(call)",
        "seen = set()",
        """
        if value is not None:
            seen.add(json.dumps(value))
        """,
        "return len(seen)",
        read="value = _measure(call, child, COLUMN)",
    )
    solution, verification = recomputed(head, "_distinct(call)", "_number(answer) and")
    params = {"parents": parents, "column": column}
    return ProgramDraft("count_distinct", instruction, solution, verification, params)


def draft_average(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Average with rounding over the children of some parents."""
    picked = _pick(view, shape, rng, shape.measures, (1, 2))
    if picked is None:
        return None
    parents, measure = picked
    _, c, _ = _names(shape)
    instruction = (
        f"What is the average {_words(measure)} of the {plural(c)} of {_which(shape, parents)} "
        f"({plural(c)} without one left out)? Report the number rounded to 2 decimals."
    )
    head = _head(parents=parents, measure=measure) + child_loop(
        "_values(call)",
        "values = []",
        """
        if value is not None:
            values.append(value)
        """,
        "return values",
    )
    solution = head + _code(
        """
        def solve(call):
            values = _values(call)
            return round(sum(values) / len(values), 2) if values else None
        """
    )
    verification = head + _code(
        """
        def verify(answer, call):
            values = _values(call)
            if not values or not _number(answer):
                return False
            return abs(answer - sum(values) / len(values)) <= 0.006
        """
    )
    params = {"parents": parents, "measure": measure}
    return ProgramDraft(
        "average", instruction, solution, verification, params, answer=ROUNDED_NUMBER
    )


def draft_partition(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Threshold partition: how many children lie above and how many below a value."""
    picked = _pick(view, shape, rng, shape.measures, (1, 2))
    if picked is None:
        return None
    parents, measure = picked
    threshold = _threshold(view, shape.child_table, measure, rng)
    _, c, _ = _names(shape)
    instruction = (
        f"Among the {plural(c)} of {_which(shape, parents)}, how many have {_words(measure)} "
        f"above {threshold} and how many below {threshold}? Those equal to {threshold} or "
        'without one count in neither. Report an object {"above": n, "below": m}.'
    )
    head = _head(parents=parents, measure=measure, threshold=threshold) + child_loop(
        "_split(call)",
        'split = {"above": 0, "below": 0}',
        """
        if value is not None and value > THRESHOLD:
            split["above"] += 1
        elif value is not None and value < THRESHOLD:
            split["below"] += 1
        """,
        "return split",
    )
    solution, verification = recomputed(head, "_split(call)")
    params = {"parents": parents, "measure": measure, "threshold": threshold}
    return ProgramDraft("partition", instruction, solution, verification, params)


def draft_two_hop(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Nested two-hop aggregation: parents -> children -> grandchildren."""
    if not shape.next_hops:
        return None
    hop = rng.choice(shape.next_hops)
    parents = _parents(view, shape, rng, 1)
    if not parents:
        return None
    measures = [m for m in hop.measures if m in hop.child_fields]
    measure = rng.choice(measures) if measures else None
    threshold = _threshold(view, hop.child_table, measure, rng) if measure else None
    _, c, _ = _names(shape)
    g = _words(hop.child_table)
    which = f"{plural(g)}" + (f" with {_words(measure)} above {threshold}" if measure else "")
    instruction = (
        f"Across all {plural(c)} of {_which(shape, parents)}, how many {which} do those "
        f"{plural(c)} have in total?"
    )
    head = _head(
        parents=parents,
        measure=measure,
        threshold=threshold,
        hop_tool=hop.group.name,
        hop_param=hop.group_param,
        hop_field=hop.parent_column,
        hop_limit=hop.page_limit(),
        hop_offset=hop.offset_param(),
    ) + _code(
        """
        def _grandchildren(call):
            count = 0
            for parent in PARENTS:
                for child in _children(call, parent):
                    rows = _rows_of(
                        call, HOP_TOOL, HOP_PARAM, child[HOP_FIELD], HOP_LIMIT, HOP_OFFSET
                    )
                    for row in rows:
                        value = row.get(MEASURE) if MEASURE else None
                        if MEASURE is None or (value is not None and value > THRESHOLD):
                            count += 1
            return count
        """
    )
    solution, verification = recomputed(head, "_grandchildren(call)", "_number(answer) and")
    return ProgramDraft(
        "two_hop",
        instruction,
        solution,
        verification,
        {"parents": parents, "hop": hop.group.name, "measure": measure, "threshold": threshold},
        tools=[hop.group.name],
    )


# --- templates that write -----------------------------------------------------------------


@dataclass
class RowUpdate:
    """What a writing template changes: ``column`` of the children of ``parents``, through
    ``update_tool`` and its key parameter, deciding by ``measure`` against ``threshold``. The
    fields are the program's constants, in the order its head names them."""

    parents: list[Any]
    measure: str
    threshold: Any
    update_tool: str
    update_key: str
    column: str

    def head(self, **values: Any) -> str:
        return _head(**asdict(self), **values)

    def params(self, **values: Any) -> dict[str, Any]:
        chosen = {"parents": self.parents, "measure": self.measure, "threshold": self.threshold}
        return {**chosen, "column": self.column, **values}


def _row_update(
    view, shape: ProgramShape, rng, count: int | tuple[int, int], least: int
) -> RowUpdate | None:
    """An update tool with a different measure to decide by, some parents and a threshold; None
    when the shape has no update tool or fewer than ``least`` parents."""
    pairs = _update_pairs(shape)
    if not pairs:
        return None
    (tool, key_param, column), measure = rng.choice(pairs)
    parents = _parents(view, shape, rng, count if isinstance(count, int) else rng.randint(*count))
    if len(parents) < least:
        return None
    threshold = _threshold(view, shape.child_table, measure, rng)
    return RowUpdate(parents, measure, threshold, tool.name, key_param, column)


def draft_conditional_update(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Update every child matching a condition, then report how many changed."""
    update = _row_update(view, shape, rng, (1, 2), least=0)
    if update is None:
        return None
    new_value = _update_value(view, shape, update, rng)
    if new_value is None:
        return None
    _, c, _ = _names(shape)
    instruction = (
        f"For every {c} of {_which(shape, update.parents)} whose {_words(update.measure)} is "
        f"above {update.threshold}, set its {_words(update.column)} to {json.dumps(new_value)}. "
        f"Report how many {plural(c)} you changed."
    )
    head = update.head(new_value=new_value)
    solution = head + child_loop(
        "solve(call)",
        "targets = []",
        """
        if value is not None and value > THRESHOLD:
            targets.append(child[CHILD_KEY])
        """,
        """
        for key in targets:
            call(UPDATE_TOOL, **{UPDATE_KEY: key, COLUMN: NEW_VALUE})
        return len(targets)
        """,
    )
    verification = head + child_loop(
        "verify(answer, call)",
        "matched = 0",
        """
        if value is not None and value > THRESHOLD:
            matched += 1
            if _measure(call, child, COLUMN) != NEW_VALUE:
                return False
        """,
        "return _number(answer) and answer == matched",
    )
    params = update.params(value=new_value)
    return ProgramDraft(
        "conditional_update", instruction, solution, verification, params, writes=True
    )


def draft_group_update(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """Conditional update over a result set: if any child of a parent matches (exists), update
    all of that parent's children; report the parents changed."""
    update = _row_update(view, shape, rng, (2, 3), least=2)
    if update is None:
        return None
    new_value = _update_value(view, shape, update, rng)
    if new_value is None:
        return None
    p, c, column_words = _names(shape)
    instruction = (
        f"For each of {_which(shape, update.parents)}: if any of its {plural(c)} has "
        f"{_words(update.measure)} above {update.threshold}, set the {_words(update.column)} of "
        f"every one of its {plural(c)} to {json.dumps(new_value)}. Report the {column_words} "
        f"of each {p} whose {plural(c)} you changed (order does not matter)."
    )
    head = update.head(new_value=new_value) + _code(
        """
        def _hit(call, children):
            for child in children:
                value = _measure(call, child, MEASURE)
                if value is not None and value > THRESHOLD:
                    return True
            return False
        """
    )
    solution = head + _code(
        """
        def solve(call):
            changed = []
            for parent in PARENTS:
                children = _children(call, parent)
                if _hit(call, children):
                    for child in children:
                        call(UPDATE_TOOL, **{UPDATE_KEY: child[CHILD_KEY], COLUMN: NEW_VALUE})
                    changed.append(parent)
            return changed
        """
    )
    verification = head + _code(
        """
        def verify(answer, call):
            if not isinstance(answer, list):
                return False
            expected = []
            for parent in PARENTS:
                children = _children(call, parent)
                updated = [_measure(call, c, COLUMN) == NEW_VALUE for c in children]
                if _hit(call, children):
                    expected.append(parent)
                    if not all(updated):
                        return False
                elif any(updated):
                    return False
            return sorted(map(json.dumps, answer)) == sorted(map(json.dumps, expected))
        """
    )
    params = update.params(value=new_value)
    return ProgramDraft(
        "group_update",
        instruction,
        solution,
        verification,
        params,
        answer={"shape": "list"},
        writes=True,
    )


def draft_branch_update(view, shape: ProgramShape, rng) -> ProgramDraft | None:
    """A multi-write workflow with a branch: every child gets one of two values."""
    update = _row_update(view, shape, rng, 1, least=1)
    if update is None:
        return None
    high = _update_value(view, shape, update, rng)
    low = _update_value(view, shape, update, rng, taken=(high,))
    if high is None or low is None:
        return None
    _, c, _ = _names(shape)
    measure, column = _words(update.measure), _words(update.column)
    instruction = (
        f"For every {c} of {_which(shape, update.parents)}: if its {measure} is above "
        f"{update.threshold}, set its {column} to {json.dumps(high)}; otherwise (also when it "
        f"has no {measure}) set its {column} to {json.dumps(low)}. Report how "
        f"many {plural(c)} got {json.dumps(high)}."
    )
    head = update.head(high=high, low=low)
    solution = head + child_loop(
        "solve(call)",
        "above = 0",
        """
        if value is not None and value > THRESHOLD:
            call(UPDATE_TOOL, **{UPDATE_KEY: child[CHILD_KEY], COLUMN: HIGH})
            above += 1
        else:
            call(UPDATE_TOOL, **{UPDATE_KEY: child[CHILD_KEY], COLUMN: LOW})
        """,
        "return above",
    )
    verification = head + child_loop(
        "verify(answer, call)",
        "above = 0",
        """
        hit = value is not None and value > THRESHOLD
        above += hit
        if _measure(call, child, COLUMN) != (HIGH if hit else LOW):
            return False
        """,
        "return _number(answer) and answer == above",
    )
    params = update.params(high=high, low=low)
    return ProgramDraft("branch_update", instruction, solution, verification, params, writes=True)


TEMPLATES = (
    draft_most_children,
    draft_total,
    draft_filtered_list,
    draft_conditional_update,
    draft_compare_totals,
    draft_argmax_child,
    draft_top_parents,
    draft_first_match,
    draft_reconcile,
    draft_date_span,
    draft_date_window,
    draft_count_distinct,
    draft_average,
    draft_partition,
    draft_two_hop,
    draft_group_update,
    draft_branch_update,
)
TEMPLATE_NAMES = tuple(t.__name__.removeprefix("draft_") for t in TEMPLATES)
