"""The OpenAI-compatible policy over real HTTP: configuration, tool calls, text tool calls."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.openai_server import ScriptedOpenAIServer, text_reply, tool_call_reply
from training.policies import OpenAICompatiblePolicy, PolicyError

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_book",
            "description": "Get one book by id.",
            "parameters": {"type": "object", "properties": {"book_id": {"type": "integer"}}},
        },
    }
]
MESSAGES = [{"role": "user", "content": "Title of book 2?"}]


def test_configured_from_environment_variables(monkeypatch):
    monkeypatch.delenv("AW_POLICY_BASE_URL", raising=False)
    with pytest.raises(PolicyError, match="AW_POLICY_BASE_URL"):
        OpenAICompatiblePolicy.from_env()
    with ScriptedOpenAIServer(lambda body: tool_call_reply("get_book", {"book_id": 2})) as server:
        monkeypatch.setenv("AW_POLICY_BASE_URL", server.base_url)
        monkeypatch.setenv("AW_POLICY_MODEL", "qwen-test")
        monkeypatch.setenv("AW_POLICY_API_KEY", "secret")
        policy = OpenAICompatiblePolicy.from_env(temperature=0.7)
        turn = policy.act(MESSAGES, TOOLS)
    assert server.requests[0]["model"] == "qwen-test"
    assert server.requests[0]["temperature"] == 0.7
    assert server.requests[0]["tools"] == TOOLS
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_book", {"book_id": 2})]
    assert (turn.tokens_in, turn.tokens_out, turn.format_error) == (10, 5, None)


def test_tool_calls_written_as_text_are_parsed():
    reply = text_reply(
        '<tool_call>\n{"name": "get_book", "arguments": {"book_id": 2}}\n</tool_call>'
    )
    with ScriptedOpenAIServer(lambda body: reply) as server:
        turn = OpenAICompatiblePolicy(base_url=server.base_url).act(MESSAGES, TOOLS)
    assert turn.tool_calls[0].arguments == {"book_id": 2}
    assert turn.content == ""


def test_async_turns_share_one_client():
    with ScriptedOpenAIServer(lambda body: text_reply("Dune Messiah")) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)

        async def three_turns():
            return await asyncio.gather(*(policy.act_async(MESSAGES, TOOLS) for _ in range(3)))

        turns = asyncio.run(three_turns())
    assert [t.content for t in turns] == ["Dune Messiah"] * 3
    assert all(t.is_final_answer for t in turns)
