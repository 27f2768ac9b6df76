"""A task episode driven call by call from outside (HTTP episode API, MCP session).

The client calls tools, may submit its answer with ``submit_answer`` (checked against the
task's answer contract, recorded, never sent to the sandbox), and the episode ends through
``finish_episode`` and ``tasks.reward.score``, like a rollout. ``submit_answer`` is not a tool
call of the trajectory: it is how the run ends, so it neither opens the "made a valid tool call"
gate nor costs efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tasks.answer_contract import (
    AnswerContract,
    Submission,
    read_submission,
    structured_answer,
    task_contract,
)
from tasks.episode_outcome import EpisodeOutcome, finish_episode, submitted_answer_text
from tasks.synthesis.task_spec import TaskSpec, as_task
from tasks.tool_subset import not_offered_message, offered_names, offered_tools
from tasks.trajectory import Step, ToolCall, Trajectory


def check_submission(contract: AnswerContract, arguments: Any) -> Submission:
    """A ``submit_answer`` call's arguments read against the contract: ``{"answer": value}``,
    nothing else; ``answer`` may be left out only when the task asks for no answer."""
    if not isinstance(arguments, dict):
        return Submission(False, problem='the arguments must be an object {"answer": ...}')
    extra = sorted(set(arguments) - {"answer"})
    if extra:
        return Submission(True, problem=f"unexpected arguments {extra}; only 'answer' is taken")
    if "answer" not in arguments and contract.expects_answer:
        return Submission(False, problem="missing required argument 'answer'")
    return read_submission(contract, {"answer": arguments.get("answer")})


def tool_steps(calls: list[dict[str, Any]]) -> list[Step]:
    """Trajectory steps from ``ToolCallResult.to_dict()`` records, in order."""
    return [
        Step(
            index=index,
            role="assistant",
            tool_call=ToolCall(call["tool"], call["arguments"]),
            tool_result=call.get("result"),
            error=call.get("error"),
            error_kind=call.get("error_kind"),
            duration_ms=call.get("duration_ms", 0.0),
        )
        for index, call in enumerate(calls)
    ]


def finish_answer_text(answer: Any) -> str:
    """The answer given at finish, read the way a final message is: a text holding a JSON
    block or a bare JSON value is parsed (``{"answer": ...}`` unwrapped), anything else is the
    answer value itself."""
    if isinstance(answer, dict) and set(answer) == {"answer"}:
        return submitted_answer_text(answer)
    if isinstance(answer, str):
        found, value, _ = structured_answer(answer)
        if found:
            return submitted_answer_text({"answer": value})
    return submitted_answer_text({"answer": answer})


@dataclass
class TaskRun:
    """What a client did in one task episode: its tool calls and its latest valid submission."""

    task: TaskSpec
    calls: list[dict[str, Any]] = field(default_factory=list)
    submission: dict[str, Any] | None = None  # {"answer": value} as submit_answer received it

    def __post_init__(self) -> None:
        self.task = as_task(self.task)
        self.contract = task_contract(self.task)

    def tools(self, package_tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools the task offers (``tasks.tool_subset.offered_tools``: its own subset of
        the package's tools, every tool for a task without one; a package tool named
        submit_answer is shadowed) and ``submit_answer`` with the contract's schema."""
        return offered_tools(self.task, package_tools)

    def refusal(self, name: str, package_tools: list[dict[str, Any]]) -> str | None:
        """Why a call to tool ``name`` is refused (the task does not offer it), else None."""
        if name in offered_names(self.task, package_tools):
            return None
        return not_offered_message(name)

    def submit(self, arguments: Any) -> Submission:
        """Check a ``submit_answer`` call; a valid one replaces any earlier submission."""
        submission = check_submission(self.contract, arguments)
        if submission.valid:
            self.submission = {"answer": (arguments or {}).get("answer")}
        return submission

    def finish(self, episode: Any, answer: Any = None, answered: bool = False):
        """(outcome, breakdown, trajectory) of the episode, still open. ``answered``: the
        client gave ``answer`` now (it wins over a recorded submission)."""
        from tasks.reward import score

        if answered:
            final_answer = finish_answer_text(answer)
        elif self.submission is not None:
            final_answer = submitted_answer_text(self.submission)
        else:
            final_answer = None
        outcome: EpisodeOutcome = finish_episode(self.task, episode, final_answer)
        steps = tool_steps(self.calls)
        if final_answer is not None:
            steps.append(Step(index=len(steps), role="assistant", content=final_answer))
        trajectory = Trajectory(
            task_id=self.task.task_id,
            environment=self.task.environment,
            steps=steps,
            final_answer=final_answer,
            final_state_hash=outcome.final_state_hash,
            state_diff=outcome.state_diff,
            verification=outcome.verification,
            finished_reason="answer",
        )
        return outcome, score(self.task, trajectory), trajectory
