"""The token-level agent loop GRPO rollouts use: same view, parser, calls and reward as the
evaluation loop; the model's tokens and the inserted ones told apart; the token budget enforced
before a call runs, never after its write."""

from __future__ import annotations

import pytest

from environments.runtime import SandboxPool, load_package
from tasks.agent_view import agent_view, render_tool_result
from tasks.reward import score
from tests.support.gold_tasks import read_task, write_task
from tests.support.sample_package import build_sample_package
from tests.support.scripted_generator import ScriptedGenerator
from training.policies.tiny_model import build_tiny_policy, load_policy_dir
from training.policies.tool_call_parser import render_tool_call
from training.rollout.agent_loop import RolloutSettings, package_manifest
from training.rollout.token_loop import (
    ChatTokens,
    TokenBudget,
    close_episode,
    play,
    start_episode,
)

KEYWORD_TOOL = (
    {
        "type": "function",
        "function": {
            "name": "books_between",
            "description": "Books whose id lies between two bounds.",
            "parameters": {
                "type": "object",
                "properties": {
                    "from": {"type": "integer", "description": "lowest id"},
                    "yield": {"type": "string", "enum": ["titles", "ids"]},
                },
                "required": ["from", "yield"],
            },
        },
    },
    "read",
    """
    def books_between(db, **params):
        rows = db.execute("SELECT id, title FROM book WHERE id >= ? ORDER BY id", (params["from"],))
        return [r["title"] if params["yield"] == "titles" else r["id"] for r in rows]
    """,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("token-loop")
    package = load_package(build_sample_package(root, extra_tools=[KEYWORD_TOOL]))
    with SandboxPool(workers=1) as pool:
        tasks = [read_task(pool, package), write_task(pool, package)]
        manifest = package_manifest(package)
        path = build_tiny_policy(root / "tiny", [manifest], [t.to_dict() for t in tasks])
        _, tokenizer = load_policy_dir(path)
        yield package, pool, tasks, ChatTokens(tokenizer), manifest


def _play(world, tasks, generator, budget):
    package, pool, _, chat, manifest = world
    states = [start_episode(t, agent_view(t, manifest), package, pool, chat, budget) for t in tasks]
    play(states, generator, chat, RolloutSettings(), budget)
    return states, [close_episode(s) for s in states]


def test_gold_turns_score_full_marks_and_inserted_tokens_are_masked(world):
    _, _, tasks, chat, _ = world
    generator = ScriptedGenerator(chat.tokenizer, tasks, wrong_rate=0.0)
    states, trajectories = _play(world, tasks, generator, TokenBudget(max_completion_tokens=512))
    assert generator.batches == [2, 2, 1]  # one batched generation per turn across episodes
    for state, trajectory in zip(states, trajectories, strict=True):
        assert trajectory.finished_reason == "answer"
        assert score(state.task, trajectory).total == 1.0
        model = [t for t, m in zip(state.completion_ids, state.env_mask, strict=True) if m]
        inserted = [t for t, m in zip(state.completion_ids, state.env_mask, strict=True) if not m]
        assert "<tool_call>" in chat.decode(model) and "<tool_response>" not in chat.decode(model)
        # What the model was shown is what the evaluation loop renders for the same result.
        for step in trajectory.steps:
            if step.tool_call and step.tool_call.name != "submit_answer":
                shown = render_tool_result(True, step.tool_result)
                assert shown in chat.decode(inserted)
    assert "book" in trajectories[1].state_diff  # the write happened


def test_a_call_whose_result_cannot_fit_is_not_run(world):
    """The write task's second call (update_stock) comes when the budget is nearly spent: the
    episode ends before it runs, so the database is untouched."""
    _, _, tasks, chat, _ = world
    write = tasks[1]
    generator = ScriptedGenerator(chat.tokenizer, [write], wrong_rate=0.0)
    prompt_room = TokenBudget(max_completion_tokens=512)
    full, _ = _play(world, [write], generator, prompt_room)
    first_turns = full[0].env_mask.index(0)  # the first call's own tokens
    first_result = full[0].env_mask[first_turns:].index(1)  # and its inserted result
    tight = TokenBudget(max_completion_tokens=first_turns + first_result + 30)
    states, trajectories = _play(world, [write], generator, tight)
    trajectory = trajectories[0]
    assert trajectory.finished_reason == "token_budget"
    assert trajectory.steps[-1].error_kind == "token_budget"
    assert [c["tool"] for c in trajectory.tool_calls] == ["get_book"]
    assert "book" in full[0].trajectory.state_diff  # with room, the same script writes
    assert not any(trajectory.state_diff.values())  # here nothing was written
    assert score(write, trajectory).success is False
    assert len(states[0].completion_ids) <= tight.max_completion_tokens


def test_a_turn_cut_by_the_budget_is_never_acted_on(world):
    _, _, tasks, chat, _ = world
    write = tasks[1]
    generator = ScriptedGenerator(chat.tokenizer, [write], wrong_rate=0.0)
    states, trajectories = _play(world, [write], generator, TokenBudget(max_completion_tokens=8))
    assert trajectories[0].finished_reason == "token_budget"
    assert trajectories[0].tool_calls == []
    assert len(states[0].completion_ids) == 8 and all(states[0].env_mask)


def test_tools_whose_parameters_are_python_keywords_reach_the_model_and_run(world):
    package, pool, tasks, chat, manifest = world
    read = tasks[0]
    schema = next(t for t in manifest["tools"] if t["function"]["name"] == "books_between")
    task = read.__class__.from_dict({**read.to_dict(), "tools": ["get_book", "books_between"]})
    view = agent_view(task, manifest)
    assert schema in view.tools  # the manifest's schema, enum and all, untouched
    assert 'from: integer, yield: "titles"|"ids"' in view.system_prompt()
    prompt = chat.decode(chat.prompt(view))
    assert '"yield"' in prompt and '"enum": ["titles", "ids"]' in prompt
    generator = ScriptedGenerator(chat.tokenizer, [task], wrong_rate=0.0)
    generator.overrides[task.instruction] = [
        render_tool_call("books_between", {"from": 3, "yield": "titles"}),
        '{"answer": "Dune"}',
    ]
    budget = TokenBudget(max_completion_tokens=512)
    state = start_episode(task, view, package, pool, chat, budget)
    play([state], generator, chat, RolloutSettings(), budget)
    trajectory = close_episode(state)
    call = trajectory.tool_calls[0]
    assert call["tool"] == "books_between" and call["ok"], trajectory.steps
    assert call["arguments"] == {"from": 3, "yield": "titles"}
    assert call["result"] and all(isinstance(title, str) for title in call["result"])
