"""The agent loop at the token level: many episodes in lockstep, one batched generation a turn.

GRPO needs the exact tokens the model produced and the tokens the environment inserted (tool
results, feedback), with a mask telling them apart; the message-level loop
(:mod:`training.rollout.agent_loop`) cannot give that. This loop plays the same episodes with the
same rules and the same view (:mod:`tasks.agent_view`): a turn is parsed with the same parser,
calls run through :mod:`training.rollout.tool_turn`, results are rendered and cut the same way,
so the trajectory it records is scored by the same reward as an evaluation rollout.

Token budget. Each episode owns ``max_completion_tokens`` (at most ``max_context_tokens`` minus
its prompt). A turn cut by the budget is never acted on (a half-written call is not run). Before
a tool call runs, the loop checks that a result of at least ``min_result_tokens`` still fits,
with ``answer_reserve_tokens`` left for the next turn; if not, the episode ends *before* the
call executes (``finished_reason = "token_budget"``), so a write never happens whose result the
model could not see. A result that runs but is longer than the room left is cut to fit, with
the same truncation marker as any long result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tasks.agent_view import (
    TRUNCATION_MARKER,
    AgentView,
    assistant_call_message,
    format_error_feedback,
    render_tool_result,
    tool_message,
    truncate,
)
from tasks.answer_contract import SUBMIT_ANSWER
from tasks.episode_outcome import finish_episode, submitted_answer_text
from tasks.trajectory import Trajectory
from training.policies.local_hf import to_template_messages
from training.policies.tool_call_parser import parse_assistant_text
from training.rollout.agent_loop import RolloutSettings
from training.rollout.tool_turn import record_call, run_call

TurnOutput = tuple[list[int], list[float] | None]  # generated ids (EOS kept), their logprobs


class TurnGenerator(Protocol):
    """Continues each token sequence by one assistant turn (the trainer's model, vLLM, a
    scripted test double)."""

    def generate(self, sequences: list[list[int]]) -> list[TurnOutput]: ...


@dataclass(frozen=True)
class TokenBudget:
    """Token limits of one episode (see the module docstring)."""

    max_completion_tokens: int = 1024
    max_context_tokens: int | None = None
    min_result_tokens: int = 24
    answer_reserve_tokens: int = 16

    def completion_room(self, prompt_tokens: int) -> int:
        if self.max_context_tokens is None:
            return self.max_completion_tokens
        return min(self.max_completion_tokens, self.max_context_tokens - prompt_tokens)


@dataclass
class TokenEpisode:
    """One episode in flight: its task, sandbox episode, record and token streams."""

    task: Any
    view: AgentView
    episode: Any
    trajectory: Trajectory
    prompt_ids: list[int]
    room: int  # completion tokens this episode may use
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1: model token, 0: inserted by us
    logprobs: list[float] = field(default_factory=list)
    done: bool = False
    malformed_in_a_row: int = 0
    turns: int = 0
    started: float = field(default_factory=time.perf_counter)

    @property
    def left(self) -> int:
        return self.room - len(self.completion_ids)

    def add(self, ids: list[int], from_model: bool, logprobs: list[float] | None = None) -> None:
        self.completion_ids += ids
        self.env_mask += [1 if from_model else 0] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)

    def end(self, reason: str) -> None:
        self.trajectory.finished_reason = reason
        self.done = True


class ChatTokens:
    """Token ids of chat-template pieces: prompts, and what follows an assistant turn."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        eos = tokenizer.eos_token_id
        self.eos_ids = {eos} if isinstance(eos, int) else set(eos or [])

    def _apply(self, messages: list[dict], tools=None, generation_prompt=False) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            to_template_messages(messages),
            tools=tools or None,
            add_generation_prompt=generation_prompt,
            tokenize=True,
            return_dict=False,
        )
        return list(ids)

    def prompt(self, view: AgentView) -> list[int]:
        return self._apply(view.messages(), view.tools, generation_prompt=True)

    def continuation(self, messages: list[dict], after_call: str | None) -> list[int]:
        """Ids that follow a finished assistant turn: ``messages`` (tool results or user
        feedback) and the next assistant header. ``after_call`` names the tool the turn
        called (some templates take the response header from it)."""
        assistant: dict[str, Any] = {"role": "assistant", "content": "dummy"}
        if after_call:
            assistant = {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": after_call, "arguments": {}}}
                ],
            }
        dummy = [{"role": "user", "content": "dummy"}, assistant]
        prefix = self._apply(dummy)
        # The model's turn ends at EOS; templates may render a newline after it.
        ends = [i for i, token in enumerate(prefix) if token in self.eos_ids]
        if ends:
            prefix = prefix[: ends[-1] + 1]
        full = self._apply(dummy + messages, generation_prompt=True)
        if full[: len(prefix)] != prefix:
            raise ValueError("chat template is not prefix-preserving after an assistant turn")
        return full[len(prefix) :]

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)


def start_episode(
    task: Any,
    view: AgentView,
    package: Any,
    pool: Any,
    chat: ChatTokens,
    budget: TokenBudget,
) -> TokenEpisode:
    """Open a sandbox episode for ``task`` and render its prompt."""
    from training.rollout.agent_loop import task_fields

    task_id, environment, _ = task_fields(task)
    prompt_ids = chat.prompt(view)
    trajectory = Trajectory(
        task_id=task_id,
        environment=environment or view.environment,
        messages=view.messages(),
        tools=view.tools,
    )
    trajectory.tokens_in = len(prompt_ids)
    return TokenEpisode(
        task=task,
        view=view,
        episode=pool.start_episode(package),
        trajectory=trajectory,
        prompt_ids=prompt_ids,
        room=budget.completion_room(len(prompt_ids)),
    )


def _fit_result(
    chat: ChatTokens, rendered: str, room: int, call_id: str, name: str
) -> tuple[list[int], str]:
    """(ids, text) of the tool message carrying ``rendered``, cut with the marker to ``room``."""
    text = rendered
    ids = chat.continuation([tool_message(call_id, name, text)], name)
    limit = len(rendered)
    while len(ids) > room and limit > 0:
        limit = max(0, int(limit * room / len(ids)) - len(TRUNCATION_MARKER))
        text = truncate(rendered, limit)
        ids = chat.continuation([tool_message(call_id, name, text)], name)
    return ids, text


def take_turn(
    state: TokenEpisode,
    output: TurnOutput,
    chat: ChatTokens,
    settings: RolloutSettings,
    budget: TokenBudget,
) -> None:
    """Apply one generated turn to an episode: record it, run its calls, extend its tokens."""
    ids, logprobs = output
    trajectory, messages = state.trajectory, state.trajectory.messages
    cut = len(ids) > state.left
    if cut:
        ids, logprobs = ids[: state.left], (logprobs[: state.left] if logprobs else None)
    state.add(ids, True, logprobs)
    state.turns += 1
    trajectory.tokens_out += len(ids)
    text = chat.decode(ids)
    ended = bool(ids) and ids[-1] in chat.eos_ids
    if cut or not ended:  # the turn was cut: whatever it started is not acted on
        trajectory.add_step(
            "assistant",
            content=text,
            error="the turn ran past the token budget",
            error_kind="token_budget",
            tokens=len(ids),
        )
        state.end("token_budget")
        return
    parsed = parse_assistant_text(text)
    if parsed.format_error:
        trajectory.add_step(
            "assistant",
            content=parsed.content,
            raw_tool_call=text,
            error=parsed.format_error,
            error_kind="format_error",
            tokens=len(ids),
        )
        state.malformed_in_a_row += 1
        feedback = {"role": "user", "content": format_error_feedback(parsed.format_error)}
        messages += [{"role": "assistant", "content": text}, feedback]
        follow = chat.continuation([feedback], None)
        if state.malformed_in_a_row >= settings.max_format_errors or len(follow) > state.left:
            state.end("format_error")
            return
        state.add(follow, False)
        if state.turns >= settings.step_budget:
            state.end("step_budget")
        return
    state.malformed_in_a_row = 0
    if not parsed.tool_calls:
        trajectory.add_step("assistant", content=parsed.content, tokens=len(ids))
        messages.append({"role": "assistant", "content": parsed.content})
        trajectory.final_answer = parsed.content
        state.end("answer")
        return
    _run_calls(state, parsed, len(ids), chat, budget, settings.tool_result_chars)
    if not state.done and state.turns >= settings.step_budget:
        state.end("step_budget")


def _run_calls(
    state: TokenEpisode,
    parsed: Any,
    tokens: int,
    chat: ChatTokens,
    budget: TokenBudget,
    result_chars: int,
) -> None:
    """Run the well-formed calls of one turn in order; ``submit_answer`` ends the episode."""
    trajectory, messages = state.trajectory, state.trajectory.messages
    offered = set(state.view.tool_names)
    call_ids = [f"call_{len(messages)}_{i}" for i in range(len(parsed.tool_calls))]
    messages.append(
        assistant_call_message(
            parsed.content,
            [(i, c.name, c.arguments) for i, c in zip(call_ids, parsed.tool_calls, strict=True)],
        )
    )
    results: list[dict[str, Any]] = []
    for position, (call, call_id) in enumerate(zip(parsed.tool_calls, call_ids, strict=True)):
        content = parsed.content if position == 0 else ""
        spent = tokens if position == 0 else 0
        if call.name == SUBMIT_ANSWER:
            record_call(trajectory, call, None, content, spent)
            trajectory.final_answer = submitted_answer_text(call.arguments)
            state.end("answer")
            return
        wrapper = len(chat.continuation([tool_message(call_id, call.name, "")], call.name))
        room = state.left - budget.answer_reserve_tokens - wrapper
        if room < budget.min_result_tokens:  # its result could not be shown: do not run it
            trajectory.add_step(
                "assistant",
                content=content,
                raw_tool_call=call.raw,
                error="the tool call was not run: its result would not fit the token budget",
                error_kind="token_budget",
                tokens=spent,
            )
            state.end("token_budget")
            return
        result = run_call(state.episode, offered, call.name, call.arguments)
        record_call(trajectory, call, result, content, spent)
        rendered = render_tool_result(
            result.ok, result.result, result.error, result.error_kind, result_chars
        )
        ids, shown = _fit_result(chat, rendered, room + wrapper, call_id, call.name)
        results.append(tool_message(call_id, call.name, shown))
        state.add(ids, False)
    messages.extend(results)


def close_episode(state: TokenEpisode) -> Trajectory:
    """Final state, diff and verification of a finished episode; closes its sandbox."""
    trajectory = state.trajectory
    try:
        outcome = finish_episode(state.task, state.episode, trajectory.final_answer)
        trajectory.final_state_hash = outcome.final_state_hash
        trajectory.state_diff = outcome.state_diff
        trajectory.verification = outcome.verification
    finally:
        state.episode.close()
    trajectory.duration_ms = (time.perf_counter() - state.started) * 1000
    return trajectory


def play(
    states: Sequence[TokenEpisode],
    generator: TurnGenerator,
    chat: ChatTokens,
    settings: RolloutSettings,
    budget: TokenBudget,
    on_turn: Callable[[int], None] | None = None,
) -> None:
    """Run every episode to its end, one batched generation per turn across the live ones."""
    while True:
        live = [s for s in states if not s.done]
        if not live:
            return
        outputs = generator.generate([s.prompt_ids + s.completion_ids for s in live])
        for state, output in zip(live, outputs, strict=True):
            take_turn(state, output, chat, settings, budget)
        if on_turn is not None:
            on_turn(len(live))
