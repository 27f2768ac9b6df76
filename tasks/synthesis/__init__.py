"""Task synthesis: tool graphs, graph tasks (random walks) and programmatic tasks.

Where things happen:
- tool_graph.py          which tool output feeds which parameter (schema, foreign keys, observed)
- graph_tasks.py         seeded walks on that graph, executed in an episode -> TaskSpec
- dependencies.py        the dependency check every kept walk passes (a real data-flow chain)
- difficulty.py          StructuralDifficulty: a task's measured difficulty, one typed record
- programmatic_tasks.py  solve(call) / verify(answer, call) programs run in the sandbox
- program_shapes.py      the parent -> children tool pairs those programs loop over
- program_templates.py   one template per solution shape (count, rank, early exit, updates...)
- instructions.py        the task text (templates offline, the LLM when configured)
- consistency.py         pass rates over N rollouts; tasks always or never solved are marked
- replay.py              a gold chain replayed in a fresh episode, as a trajectory
"""

from tasks.synthesis.graph_tasks import (
    Difficulty,
    GraphTaskSynthesizer,
    dedup_tasks,
    synthesize_graph_tasks,
)
from tasks.synthesis.programmatic_tasks import (
    ProgrammaticTaskSynthesizer,
    programmatic_task_from_source,
    synthesize_programmatic_tasks,
)
from tasks.synthesis.task_spec import TaskSpec, canonical_signature
from tasks.synthesis.tool_graph import ToolGraph, build_tool_graph

__all__ = [
    "Difficulty",
    "GraphTaskSynthesizer",
    "ProgrammaticTaskSynthesizer",
    "TaskSpec",
    "ToolGraph",
    "build_tool_graph",
    "canonical_signature",
    "dedup_tasks",
    "programmatic_task_from_source",
    "synthesize_graph_tasks",
    "synthesize_programmatic_tasks",
]
