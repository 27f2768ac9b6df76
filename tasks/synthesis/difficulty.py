"""A task's structural difficulty: one typed record, measured from its gold run.

Both synthesizers fill it, ``TaskSpec.difficulty`` carries its dict, ``Task.structure`` stores
it (the API and the task page show it) and the charts count it. What a policy makes of the
task (its pass rate over N rollouts) is measured separately (``tasks.synthesis.consistency``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

LEVELS = ("easy", "medium", "hard", "expert")
TIER_WEIGHT = {"explicit": 0, "goal": 2, "goal_hard": 4}


@dataclass(frozen=True)
class StructuralDifficulty:
    """What makes a task hard, counted on its gold run.

    - ``steps``: tool calls of the gold run;
    - ``dependent_calls``: calls that consume an earlier call's output (the dependency check);
    - ``depth``: calls on the longest data-flow path;
    - ``writes``: write calls;
    - ``branches``: decisions that depend on a value found on the way (a graph task's
      conditional write, an ``if`` of a program);
    - ``joins``: calls fed by two or more earlier calls;
    - ``distractors``: tools offered beyond those the gold run uses;
    - ``tier``: the instruction tier (explicit | goal | goal_hard);
    - ``level``: easy .. expert, from the counts above.
    """

    steps: int = 0
    dependent_calls: int = 0
    depth: int = 0
    writes: int = 0
    branches: int = 0
    joins: int = 0
    distractors: int = 0
    tier: str = "explicit"
    level: str = "easy"

    @classmethod
    def measure(
        cls,
        *,
        steps: int,
        dependent_calls: int,
        depth: int,
        writes: int,
        branches: int,
        joins: int,
        distractors: int,
        tier: str,
    ) -> StructuralDifficulty:
        score = (
            depth
            + 0.25 * (steps - depth)
            + 2 * writes
            + 3 * branches
            + 2 * joins
            + distractors / 4
            + TIER_WEIGHT.get(tier, 0)
        )
        level = (
            "easy" if score < 5 else "medium" if score < 10 else "hard" if score < 20 else "expert"
        )
        return cls(steps, dependent_calls, depth, writes, branches, joins, distractors, tier, level)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> StructuralDifficulty:
        """Read a stored record; unknown keys are ignored, older records (with ``branching``
        for joins, no ``dependent_calls``) read with their counts where they have them."""
        data = dict(data or {})
        if "joins" not in data and isinstance(data.get("branching"), int):
            data["joins"] = data["branching"]
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values.setdefault("depth", values.get("steps", 0))
        return cls(**values)


def count_branches(source: str) -> int:
    """The decisions in a program: ``if`` statements, conditional expressions and filters of
    comprehensions (each depends on a value the program found). 0 for code that does not
    parse."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.If | ast.IfExp):
            count += 1
        elif isinstance(node, ast.comprehension):
            count += len(node.ifs)
    return count
