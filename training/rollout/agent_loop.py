"""The agent loop: one policy, one task, one isolated episode, every step recorded.

A turn with tool calls runs them in the episode's sandbox; a turn without one is the final
answer; a malformed call is recorded as a ``format_error`` step and the policy is told what was
wrong. Many episodes run concurrently: policy requests are awaited (async clients) under a
semaphore, sandbox calls and synchronous policies run in a thread executor.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.agent_view import (
    TOOL_RESULT_CHARS,
    agent_view,
    format_error_feedback,
    render_tool_result,
    tool_message,
)
from tasks.answer_contract import SUBMIT_ANSWER
from tasks.episode_outcome import finish_episode, submitted_answer_text
from tasks.tool_subset import tool_name
from tasks.trajectory import Trajectory
from training.policies.base import Policy, PolicyTurn, assistant_message
from training.rollout.tool_turn import record_call, run_call

DEFAULT_STEP_BUDGET = 40


@dataclass
class RolloutSettings:
    """Limits of one episode."""

    step_budget: int = DEFAULT_STEP_BUDGET  # policy turns, tool calls and failures alike
    max_format_errors: int = 3  # consecutive malformed turns before giving up
    tool_result_chars: int = TOOL_RESULT_CHARS  # tool output shown to the policy is cut here


def task_fields(task: Any) -> tuple[str, str, str]:
    """(task id, environment name, instruction) of a TaskSpec or its dict form."""
    if isinstance(task, Mapping):
        task_id = task.get("task_id") or str(task.get("signature", ""))[:16]
        return str(task_id), str(task.get("environment", "")), str(task["instruction"])
    return str(task.task_id), str(task.environment), str(task.instruction)


def package_manifest(package: Any) -> dict[str, Any]:
    from tasks.synthesis.environment_view import package_manifest as manifest_of

    return manifest_of(package)


def resolve_package(package: Any) -> Any:
    """Load a package directory through the runtime; package objects pass through."""
    if isinstance(package, str | Path):
        from environments.runtime import load_package

        return load_package(Path(package))
    return package


async def _policy_turn(
    policy: Policy, messages: list[dict], tools: list[dict], executor: Executor
) -> PolicyTurn:
    act_async = getattr(policy, "act_async", None)
    if act_async is not None:
        return await act_async(messages, tools)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, policy.act, messages, tools)


async def run_episode_async(
    policy: Policy,
    task: Any,
    package: Any,
    pool: Any,
    executor: Executor,
    settings: RolloutSettings | None = None,
) -> Trajectory:
    """Play one task to the end in a fresh episode and return its trajectory."""
    settings = settings or RolloutSettings()
    loop = asyncio.get_running_loop()
    manifest = package_manifest(package)
    task_id, environment, instruction = task_fields(task)
    # The task's own tools (gold + distractors) and submit_answer: in the request and the prompt.
    view = agent_view(task, manifest, instruction)
    trajectory = Trajectory(
        task_id=task_id,
        environment=environment or manifest.get("name", ""),
        messages=view.messages(),
        tools=view.tools,
    )
    started = time.perf_counter()
    episode = await loop.run_in_executor(executor, pool.start_episode, package)
    try:
        await _play(policy, episode, trajectory, executor, settings)
        describe = getattr(policy, "episode_metadata", None)  # e.g. the fault it injected
        if describe is not None:
            trajectory.metadata = dict(describe(trajectory.messages))
        outcome = await loop.run_in_executor(
            executor, finish_episode, task, episode, trajectory.final_answer
        )
        trajectory.final_state_hash = outcome.final_state_hash
        trajectory.state_diff = outcome.state_diff
        trajectory.verification = outcome.verification
    finally:
        await loop.run_in_executor(executor, episode.close)
    trajectory.duration_ms = (time.perf_counter() - started) * 1000
    return trajectory


async def _play(
    policy: Policy,
    episode: Any,
    trajectory: Trajectory,
    executor: Executor,
    settings: RolloutSettings,
) -> None:
    loop = asyncio.get_running_loop()
    messages, tools = trajectory.messages, trajectory.tools
    offered = {tool_name(t) for t in tools}
    malformed_in_a_row = 0
    for _turn_index in range(settings.step_budget):
        try:
            turn = await _policy_turn(policy, messages, tools, executor)
        except Exception as exc:  # endpoint down, generation failure: the episode ends here
            trajectory.add_step("assistant", error=str(exc), error_kind="policy_error")
            trajectory.finished_reason = "policy_error"
            return
        trajectory.tokens_in += turn.tokens_in
        trajectory.tokens_out += turn.tokens_out

        if turn.format_error:
            trajectory.add_step(
                "assistant",
                content=turn.content,
                raw_tool_call=turn.raw_text,
                error=turn.format_error,
                error_kind="format_error",
                tokens=turn.tokens_out,
            )
            messages.append({"role": "assistant", "content": turn.raw_text or turn.content})
            messages.append({"role": "user", "content": format_error_feedback(turn.format_error)})
            malformed_in_a_row += 1
            if malformed_in_a_row >= settings.max_format_errors:
                trajectory.finished_reason = "format_error"
                return
            continue
        malformed_in_a_row = 0

        if not turn.tool_calls:
            trajectory.add_step("assistant", content=turn.content, tokens=turn.tokens_out)
            messages.append({"role": "assistant", "content": turn.content})
            trajectory.final_answer = turn.content
            trajectory.finished_reason = "answer"
            return

        call_ids = [f"call_{uuid.uuid4().hex[:12]}" for _ in turn.tool_calls]
        messages.append(assistant_message(turn, call_ids))
        for position, (call, call_id) in enumerate(zip(turn.tool_calls, call_ids, strict=True)):
            content = turn.content if position == 0 else ""
            tokens = turn.tokens_out if position == 0 else 0
            if call.name == SUBMIT_ANSWER:  # the answer contract: ends the episode, no sandbox
                record_call(trajectory, call, None, content, tokens)
                trajectory.final_answer = submitted_answer_text(call.arguments)
                trajectory.finished_reason = "answer"
                return
            result = await loop.run_in_executor(
                executor, run_call, episode, offered, call.name, call.arguments
            )
            record_call(trajectory, call, result, content, tokens)
            rendered = render_tool_result(
                result.ok,
                result.result,
                result.error,
                result.error_kind,
                settings.tool_result_chars,
            )
            messages.append(tool_message(call_id, call.name, rendered))
    trajectory.finished_reason = "step_budget"


def _package_for(task: Any, index: int, packages: Any) -> Any:
    """``packages`` is one package, a list parallel to ``tasks``, or {environment: package}."""
    if isinstance(packages, Mapping):
        return packages[task_fields(task)[1]]
    if isinstance(packages, Sequence) and not isinstance(packages, str):
        return packages[index]
    return packages


async def rollout_many_async(
    policy: Policy,
    tasks: Sequence[Any],
    packages: Any,
    concurrency: int = 8,
    pool: Any = None,
    settings: RolloutSettings | None = None,
) -> list[Trajectory]:
    """Run every task once, at most ``concurrency`` episodes at a time; order is kept."""
    owned_pool = pool is None
    if owned_pool:
        from environments.runtime import SandboxPool

        pool = SandboxPool(workers=max(1, min(concurrency, 4)))
    resolved: dict[int, Any] = {}
    semaphore = asyncio.Semaphore(concurrency)
    executor = ThreadPoolExecutor(max_workers=max(2, concurrency * 2))

    async def one(index: int, task: Any) -> Trajectory:
        package = _package_for(task, index, packages)
        key = id(package)
        if key not in resolved:
            resolved[key] = resolve_package(package)
        async with semaphore:
            return await run_episode_async(policy, task, resolved[key], pool, executor, settings)

    try:
        return list(await asyncio.gather(*(one(i, t) for i, t in enumerate(tasks))))
    finally:
        executor.shutdown(wait=True)
        if owned_pool:
            pool.close()


def rollout_many(
    policy: Policy,
    tasks: Sequence[Any],
    packages: Any,
    concurrency: int = 8,
    pool: Any = None,
    settings: RolloutSettings | None = None,
) -> list[Trajectory]:
    """Synchronous entry point (Celery jobs, CLI) around :func:`rollout_many_async`."""
    return asyncio.run(rollout_many_async(policy, tasks, packages, concurrency, pool, settings))


def run_episode(
    policy: Policy,
    task: Any,
    package: Any,
    pool: Any = None,
    settings: RolloutSettings | None = None,
) -> Trajectory:
    """One episode, synchronously."""
    return rollout_many(policy, [task], package, concurrency=1, pool=pool, settings=settings)[0]
