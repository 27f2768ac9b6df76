"""Export tasks and trajectories to Hugging Face ``datasets`` (JSONL and Parquet).

Rows are in the OpenAI messages + tools format trainers expect: a task row carries
``messages`` (system, user) and ``tools`` (the offered tool schemas) plus the reference answer
and gold run; a trajectory row carries the whole conversation (assistant tool_calls and tool
results). Values whose shape varies row to row (tool schemas, answers, diffs) use the
``datasets.Json`` feature, so they round-trip exactly; load with ``load_tasks`` /
``load_trajectories`` or ``datasets.load_dataset(..., features=task_features())``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.agent_view import (
    AgentView,
    agent_view,
    assistant_call_message,
    render_tool_result,
    tool_message,
)
from tasks.answer_contract import SUBMIT_ANSWER, task_contract
from tasks.reward_breakdown import RewardBreakdown
from tasks.synthesis.task_spec import TaskSpec, as_task
from tasks.trajectory import Trajectory


def task_features():
    from datasets import Features, Json, List, Value

    return Features(
        {
            "task_id": Value("string"),
            "environment": Value("string"),
            "environment_version": Value("int64"),
            "kind": Value("string"),
            "split": Value("string"),
            "messages": List({"role": Value("string"), "content": Value("string")}),
            "tools": List(Json()),
            "reference_answer": Json(),
            "gold_chain": Json(),
            "expected_state_hash": Value("string"),
            "expected_diff": Json(),
            "difficulty": Json(),
            "answer_spec": Json(),
            "answer_contract": Json(),
            "audit": Json(),
            "seed": Value("int64"),
            "signature": Value("string"),
            "solution": Value("string"),
            "verification": Value("string"),
        }
    )


def trajectory_features():
    from datasets import Features, Json, List, Value

    return Features(
        {
            "task_id": Value("string"),
            "environment": Value("string"),
            "messages": List(Json()),
            "tools": List(Json()),
            "final_answer": Value("string"),
            "finished_reason": Value("string"),
            "final_state_hash": Value("string"),
            "reward": Value("float64"),
            "reward_breakdown": Json(),
        }
    )


def _view(task: TaskSpec, manifests: dict[str, dict[str, Any]]) -> AgentView:
    """The task as its agent sees it (``tasks.agent_view``): the same prompt and tools as the
    rollout loop, GRPO and the episode API."""
    manifest = manifests.get(task.environment) or {"name": task.environment}
    return agent_view(task, manifest)


def _manifests(packages) -> dict[str, dict[str, Any]]:
    from tasks.synthesis.environment_view import package_manifest

    result = {}
    for package in packages or []:
        manifest = package if isinstance(package, dict) else package_manifest(package)
        result[manifest["name"]] = manifest
    return result


def task_record(task: TaskSpec | dict[str, Any], manifests: dict[str, dict[str, Any]]) -> dict:
    """One task as a dataset row (OpenAI messages + tools, reference answer, gold run)."""
    task = as_task(task)
    view = _view(task, manifests)
    return {
        "task_id": task.task_id,
        "environment": task.environment,
        "environment_version": task.environment_version,
        "kind": task.kind,
        "split": (task.metadata or {}).get("split", ""),
        "messages": view.messages(),
        "tools": view.tools,
        "reference_answer": task.reference_answer,
        "gold_chain": [{"tool": c["tool"], "arguments": c["arguments"]} for c in task.gold_chain],
        "expected_state_hash": task.expected_state_hash,
        "expected_diff": task.expected_diff,
        "difficulty": task.difficulty,
        "answer_spec": (task.metadata or {}).get("answer"),
        "answer_contract": task_contract(task).to_dict(),
        "audit": task.audit or None,
        "seed": task.seed,
        "signature": task.signature,
        "solution": task.solution,
        "verification": task.verification,
    }


def trajectory_messages(view: AgentView, trajectory: Trajectory) -> list[dict[str, Any]]:
    """The conversation of a trajectory: system, user, then assistant tool calls and results,
    rendered as the agent read them."""
    messages: list[dict[str, Any]] = view.messages()
    for step in trajectory.steps:
        call = step.tool_call
        if call is None:
            if step.content:
                messages.append({"role": "assistant", "content": step.content})
            continue
        call_id = f"call_{step.index}"
        calls = [(call_id, call.name, call.arguments)]
        messages.append(assistant_call_message(step.content or "", calls))
        if call.name == SUBMIT_ANSWER:  # the answer itself: no tool result, nothing after
            return messages
        content = render_tool_result(not step.error, step.tool_result, step.error, step.error_kind)
        messages.append(tool_message(call_id, call.name, content))
    answer = trajectory.final_answer
    closing = {"role": "assistant", "content": str(answer)}
    if answer is not None and messages[-1] != closing:  # a final text step already holds it
        messages.append(closing)
    return messages


def trajectory_record(
    task: TaskSpec | dict[str, Any],
    trajectory: Trajectory,
    manifests: dict[str, dict[str, Any]],
    breakdown: RewardBreakdown | None = None,
) -> dict:
    task = as_task(task)
    view = _view(task, manifests)
    answer = trajectory.final_answer
    return {
        "task_id": trajectory.task_id or task.task_id,
        "environment": task.environment,
        "messages": trajectory_messages(view, trajectory),
        "tools": view.tools,
        "final_answer": None if answer is None else str(answer),
        "finished_reason": trajectory.finished_reason,
        "final_state_hash": trajectory.final_state_hash,
        "reward": breakdown.total if breakdown is not None else None,
        "reward_breakdown": breakdown.to_dict() if breakdown is not None else None,
    }


def _write(records: list[dict], features, out_dir: Path, stem: str) -> dict[str, Path]:
    from datasets import Dataset

    out_dir.mkdir(parents=True, exist_ok=True)
    dataset = Dataset.from_list(records, features=features)
    paths = {"jsonl": out_dir / f"{stem}.jsonl", "parquet": out_dir / f"{stem}.parquet"}
    dataset.to_json(str(paths["jsonl"]), lines=True, force_ascii=False)
    dataset.to_parquet(str(paths["parquet"]))
    return paths


def export_tasks(tasks, packages, out_dir: str | Path, stem: str = "tasks") -> dict[str, Path]:
    """Write tasks as ``<stem>.jsonl`` and ``<stem>.parquet``; ``packages`` give tool schemas
    (package objects, package directories or manifest dicts)."""
    manifests = _manifests(packages)
    records = [task_record(t, manifests) for t in tasks]
    return _write(records, task_features(), Path(out_dir), stem)


def export_trajectories(
    pairs, packages, out_dir: str | Path, stem: str = "trajectories"
) -> dict[str, Path]:
    """Write (task, trajectory[, breakdown]) tuples as JSONL and Parquet conversations."""
    manifests = _manifests(packages)
    records = [
        trajectory_record(p[0], p[1], manifests, p[2] if len(p) > 2 else None) for p in pairs
    ]
    return _write(records, trajectory_features(), Path(out_dir), stem)


def load_tasks(path: str | Path):
    """Load an exported task file (.jsonl or .parquet) as a ``datasets.Dataset``."""
    return _load(path, task_features())


def load_trajectories(path: str | Path):
    return _load(path, trajectory_features())


def _load(path: str | Path, features):
    from datasets import load_dataset

    kind = "parquet" if str(path).endswith(".parquet") else "json"
    return load_dataset(kind, data_files=str(path), split="train", features=features)
