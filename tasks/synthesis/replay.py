"""Replaying tool calls in a fresh episode and recording them as a trajectory.

``replay_gold`` is how a task proves itself: its gold chain, replayed from the initial state,
must score 1.0. ``run_calls`` records any call list the same way (tests, baselines).
"""

from __future__ import annotations

import json
from typing import Any

from tasks.synthesis.task_spec import TaskSpec, as_task
from tasks.trajectory import Step, ToolCall, Trajectory


def run_calls(
    pool: Any,
    package: Any,
    calls: list[dict[str, Any]],
    final_answer: Any = None,
    task_id: str = "",
) -> Trajectory:
    """Run ``calls`` ([{"tool", "arguments"}]) in a fresh episode and record the trajectory."""
    steps = []
    with pool.start_episode(package) as episode:
        for index, call in enumerate(calls):
            tool_call = ToolCall(call["tool"], call.get("arguments", {}))
            outcome = episode.call_tool(tool_call.name, tool_call.arguments)
            steps.append(
                Step(
                    index=index,
                    role="assistant",
                    tool_call=tool_call,
                    raw_tool_call=json.dumps(tool_call.to_dict()),
                    tool_result=outcome.result,
                    error=outcome.error,
                    error_kind=outcome.error_kind,
                    duration_ms=outcome.duration_ms,
                )
            )
        final_hash = episode.state_hash()
        diff = episode.state_diff()
    return Trajectory(
        task_id=task_id,
        environment=getattr(package, "name", ""),
        steps=steps,
        final_answer=None if final_answer is None else json.dumps(final_answer),
        final_state_hash=final_hash,
        state_diff=diff,
        finished_reason="answer",
    )


def replay_gold(task: TaskSpec | dict[str, Any], pool: Any, package: Any) -> Trajectory:
    """The gold chain of ``task`` replayed in a fresh episode, answering the reference."""
    task = as_task(task)
    calls = [{"tool": c["tool"], "arguments": c["arguments"]} for c in task.gold_chain]
    return run_calls(pool, package, calls, task.reference_answer, task.task_id)
