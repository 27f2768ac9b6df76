"""Replaying tool calls in a fresh episode and recording them as a trajectory.

``replay_gold`` is how a task proves itself: its gold chain, replayed from the initial state,
must score 1.0. ``run_calls`` records any call list the same way (tests, baselines).
"""

from __future__ import annotations

import json
from typing import Any

from tasks.synthesis.task_spec import TaskSpec, as_task


def run_calls(
    pool: Any,
    package: Any,
    calls: list[dict[str, Any]],
    final_answer: Any = None,
    task_id: str = "",
) -> dict[str, Any]:
    """Run ``calls`` ([{"tool", "arguments"}]) in a fresh episode; return a Trajectory dict."""
    steps = []
    with pool.start_episode(package) as episode:
        for index, call in enumerate(calls):
            outcome = episode.call_tool(call["tool"], call.get("arguments", {}))
            steps.append(
                {
                    "index": index,
                    "role": "assistant",
                    "content": "",
                    "tool_call": {"name": call["tool"], "arguments": call.get("arguments", {})},
                    "raw_tool_call": json.dumps(
                        {"name": call["tool"], "arguments": call.get("arguments", {})}
                    ),
                    "tool_result": outcome.result,
                    "error": outcome.error,
                    "error_kind": outcome.error_kind,
                    "duration_ms": outcome.duration_ms,
                    "tokens": 0,
                }
            )
        final_hash = episode.state_hash()
        diff = episode.state_diff()
    return {
        "task_id": task_id,
        "environment": getattr(package, "name", ""),
        "steps": steps,
        "final_answer": None if final_answer is None else json.dumps(final_answer),
        "final_state_hash": final_hash,
        "state_diff": diff,
        "finished_reason": "answer",
    }


def replay_gold(task: TaskSpec | dict[str, Any], pool: Any, package: Any) -> dict[str, Any]:
    """The gold chain of ``task`` replayed in a fresh episode, answering the reference."""
    task = as_task(task)
    calls = [{"tool": c["tool"], "arguments": c["arguments"]} for c in task.gold_chain]
    return run_calls(pool, package, calls, task.reference_answer, task.task_id)
