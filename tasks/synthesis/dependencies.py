"""The dependency check: a gold chain is a real data-flow chain.

A graph walk records, for each step, which earlier output fed each parameter (``inputs``:
{param: {"step", "field", "item"}}) and, for a conditional step, which earlier value decided
what to do (``branch``: {"step", "field", "item", ...}). The check holds when

- every step after the first consumes an output of an earlier step (an input or the value a
  branch tests);
- every reference points backwards, and, when the gold results are known, the argument really
  is the value the earlier step returned (the row ``item`` of its result, ``field`` of it);
- every read step but the last is consumed by a later step (nothing looked up for nothing;
  writes stand on their own: their effect is the point).

Plain Python (no Django), used by the walker on every walk it keeps and by the tests.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tasks.synthesis.tool_graph import records_of


@dataclass
class DependencyReport:
    """What the check found: ``ok`` and why not; how many calls consume an earlier output."""

    ok: bool
    calls: int
    dependent_calls: int  # calls that consume an earlier call's output
    depth: int  # calls on the longest data-flow path (1 for a single call)
    violations: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def references(step: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(what, binding) for every earlier output a step consumes: its inputs and its branch."""
    found = [(f"parameter {name}", b) for name, b in (step.get("inputs") or {}).items()]
    if step.get("branch"):
        found.append(("branch condition", step["branch"]))
    return found


def output_value(result: Any, binding: dict[str, Any]) -> Any:
    """The value a binding names in an earlier step's result (a scalar result: itself)."""
    if binding.get("field") is None:
        return result
    records = records_of(result)
    item = binding.get("item")
    index = 0 if item is None else item
    if not 0 <= index < len(records):
        return _MISSING
    return records[index].get(binding["field"], _MISSING)


_MISSING = object()


def check_dependencies(
    chain: list[dict[str, Any]], results: list[Any] | None = None
) -> DependencyReport:
    """Check a gold chain (see the module docstring); ``results``: the gold result per step."""
    violations: list[str] = []
    consumed: set[int] = set()
    depth: list[int] = []
    dependent = 0
    for index, step in enumerate(chain):
        refs = references(step)
        sources = set()
        for what, binding in refs:
            source = binding.get("step")
            if not isinstance(source, int) or not 0 <= source < index:
                violations.append(f"step {index + 1}: {what} refers to step {source} (not earlier)")
                continue
            sources.add(source)
            if results is not None and what.startswith("parameter "):
                name = what.removeprefix("parameter ")
                value = output_value(results[source], binding)
                if value is _MISSING or value != (step.get("arguments") or {}).get(name):
                    violations.append(
                        f"step {index + 1}: {name} is not the {binding.get('field')} "
                        f"step {source + 1} returned"
                    )
            if results is not None and what == "branch condition":
                if output_value(results[source], binding) is _MISSING:
                    violations.append(
                        f"step {index + 1}: the branch tests {binding.get('field')}, "
                        f"which step {source + 1} did not return"
                    )
        if index > 0 and not sources:
            violations.append(f"step {index + 1} consumes no earlier output")
        dependent += 1 if sources else 0
        consumed |= sources
        depth.append(1 + max((depth[s] for s in sources), default=0))
    for index, step in enumerate(chain[:-1]):
        if step.get("kind", "read") != "write" and index not in consumed:
            violations.append(f"step {index + 1}: a lookup no later step uses")
    return DependencyReport(
        ok=not violations,
        calls=len(chain),
        dependent_calls=dependent,
        depth=max(depth, default=0),
        violations=violations,
    )


def value_flow(calls: list[dict[str, Any]], results: list[Any]) -> list[dict[str, dict]]:
    """For a program's call trace (no recorded bindings): per call, the parameters whose value
    an earlier call returned, {param: {"step", "field", "item"}} (the latest such call).

    Data flow read from values: a loop over the children of listed parents shows as calls fed
    by the listing. Strings match any field; integers only a key-like field (``id``,
    ``*_id``, or the parameter's own name), so a count of 3 does not feed ``book_id=3``; page
    parameters (limit, offset) are paging, not data.
    """
    flows: list[dict[str, dict]] = []
    given: set = set()  # values an earlier call took as given (a next page, the same parent)
    for index, call in enumerate(calls):
        found: dict[str, dict] = {}
        for name, value in (call.get("arguments") or {}).items():
            if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
                continue
            if name in PAGING or (type(value), value) in given:
                continue
            for source in range(index - 1, -1, -1):
                hit = _find_value(results[source], value, name)
                if hit is not None:
                    found[name] = {"step": source, "field": hit[0], "item": hit[1]}
                    break
        for name, value in (call.get("arguments") or {}).items():
            if name not in found and isinstance(value, str | int) and not isinstance(value, bool):
                given.add((type(value), value))
        flows.append(found)
    return flows


PAGING = frozenset({"limit", "offset", "page", "page_size", "per_page", "max_results"})


def _find_value(result: Any, value: Any, param: str) -> tuple[str | None, int | None] | None:
    if isinstance(result, str) and result == value:
        return (None, None)
    records = records_of(result)
    listed = len(records) > 1 or (records and records[0] is not result)
    for item, record in enumerate(records):
        for name, seen in record.items():
            if type(seen) is not type(value) or seen != value:
                continue
            if isinstance(value, int) and not (
                name == "id" or name.endswith("_id") or name == param
            ):
                continue
            return (name, item if listed else None)
    return None
