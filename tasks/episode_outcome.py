"""How an episode of a task ends: its final state, and the verification script's verdict.

Every interface that runs a task (the rollout loop, GRPO environments, the HTTP episode API,
MCP sessions) finishes through ``finish_episode`` while the episode is still open, so the
reward reads the same evidence wherever the run came from. The state is read first; only then
does a programmatic task's ``verify(answer, call)`` run on that state, in the sandbox.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tasks.answer_contract import read_submission, task_contract
from tasks.synthesis.task_spec import TaskSpec, as_task
from tasks.verification import run_verification


@dataclass
class EpisodeOutcome:
    final_state_hash: str
    state_diff: dict[str, Any]
    verification: dict[str, Any] | None = None  # {"passed": bool, "error": str | None}


def finish_episode(task: TaskSpec | dict[str, Any] | None, episode: Any, final_answer: Any):
    """State hash and diff of ``episode``, then the task's verification verdict if it has one."""
    final_hash, diff = episode.state_hash(), episode.state_diff()
    verification = None
    if task is not None:
        task = as_task(task)
        if task.verification:
            submission = read_submission(task_contract(task), final_answer)
            if submission.valid:
                verification = run_verification(episode, task.verification, submission.value)
            else:
                verification = {"passed": False, "error": submission.problem}
    return EpisodeOutcome(final_hash, diff, verification)


def submitted_answer_text(arguments: dict[str, Any]) -> str:
    """What a ``submit_answer`` call leaves as the trajectory's final answer: its JSON."""
    return json.dumps({"answer": (arguments or {}).get("answer")}, ensure_ascii=False, default=str)
