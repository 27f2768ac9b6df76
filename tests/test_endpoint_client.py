"""The one OpenAI-compatible client (aw_site.openai_chat) under the policy and the LLM stages:
parameters that adapt to reasoning models, reasoning kept off the content, retries with
backoff, bounded concurrency. Everything over real HTTP against the scripted local server."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from aw_site.llm import LLMError, LLMSettings, chat_completion, complete_json, parse_json_reply
from aw_site.openai_chat import adaptations_for, split_reasoning
from tests.support.openai_server import (
    ScriptedOpenAIServer,
    error_reply,
    in_order,
    text_reply,
    tool_call_reply,
)
from training.policies import OpenAICompatiblePolicy, PolicyError
from training.policies.tool_call_parser import REASONING_CUT_OFF, parse_assistant_text

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
TEMPERATURE_REFUSED = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported."
)


def reasoning_model(body):
    """Answers like OpenAI's o-series: no temperature, no max_tokens."""
    if "temperature" in body:
        return error_reply(400, TEMPERATURE_REFUSED, param="temperature", code="unsupported_value")
    if "max_tokens" in body:
        return error_reply(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            param="max_tokens",
            code="unsupported_parameter",
        )
    return tool_call_reply("get_book", {"book_id": 2})


# --- parameters adapt to the model ----------------------------------------------------------


def test_reasoning_model_refusing_temperature_is_asked_again_without_it():
    with ScriptedOpenAIServer(reasoning_model) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, model="o3-mini", max_tokens=64)
        turn = policy.act(MESSAGES, TOOLS)
        first, second = server.requests
        assert first["temperature"] == 0.0 and first["max_completion_tokens"] == 64
        assert "max_tokens" not in first
        assert "temperature" not in second and second["max_completion_tokens"] == 64
        assert server.statuses == [400, 200]
        assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_book", {"book_id": 2})]

        # Remembered for this endpoint and model: the next turns (any client) go out right.
        policy.act(MESSAGES, TOOLS)
        again = OpenAICompatiblePolicy(base_url=server.base_url, model="o3-mini", max_tokens=64)
        asyncio.run(again.act_async(MESSAGES, TOOLS))
        assert server.statuses == [400, 200, 200, 200]
        assert all("temperature" not in body for body in server.requests[1:])
    assert adaptations_for(server.base_url, "o3-mini").dropped == {"temperature"}
    assert adaptations_for(server.base_url, "other-model").dropped == set()


def test_max_tokens_is_renamed_both_ways():
    # A server configured for old-style max_tokens that meets a reasoning model: renamed.
    with ScriptedOpenAIServer(reasoning_model) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, model="o1", max_tokens=32, max_tokens_param="max_tokens"
        )
        policy.act(MESSAGES, TOOLS)
        sent = [
            ("temperature" in b, b.get("max_tokens"), b.get("max_completion_tokens"))
            for b in server.requests
        ]
        # One refusal at a time: temperature dropped, then max_tokens renamed.
        assert sent == [(True, 32, None), (False, 32, None), (False, None, 32)]
        assert server.statuses == [400, 400, 200]

    # An old server that does not know max_completion_tokens gets max_tokens.
    def old_server(body):
        if "max_completion_tokens" in body:
            return error_reply(400, "Unrecognized request argument supplied: max_completion_tokens")
        return text_reply("fine")

    with ScriptedOpenAIServer(old_server) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, model="old", max_tokens=16)
        assert policy.act(MESSAGES, TOOLS).content == "fine"
        assert server.requests[1]["max_tokens"] == 16
        assert "max_completion_tokens" not in server.requests[1]


def test_other_bad_requests_fail_at_once_with_the_endpoint_message():
    answer = error_reply(400, "max_tokens is too large: 99999 > 4096", param="max_tokens")
    with ScriptedOpenAIServer(lambda body: answer) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, max_tokens=99999)
        with pytest.raises(PolicyError, match=r"HTTP 400: max_tokens is too large"):
            policy.act(MESSAGES, TOOLS)
    assert server.statuses == [400]


def test_llm_client_adapts_the_same_way():
    def reasoning_json(body):
        if "temperature" in body:
            return error_reply(400, TEMPERATURE_REFUSED, param="temperature")
        return text_reply('<think>They want {"draft": true}, maybe.</think>\n{"primary": "x"}')

    with ScriptedOpenAIServer(reasoning_json) as server:
        settings = LLMSettings(base_url=server.base_url, model="gpt-5-mini", api_key="k")
        assert complete_json(settings, MESSAGES) == {"primary": "x"}
        reply = chat_completion(settings, MESSAGES, max_tokens=100)
    assert server.statuses == [400, 200, 200]
    assert "temperature" not in server.requests[2]
    assert server.requests[2]["max_completion_tokens"] == 100
    assert reply["content"] == '{"primary": "x"}'
    assert reply["reasoning"] == 'They want {"draft": true}, maybe.'


# --- reasoning text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "content", "reasoning", "cut"),
    [
        ("plain answer", "plain answer", "", False),
        ("<think>plan</think>\nanswer", "answer", "plan", False),
        ("started in the prompt</think>answer", "answer", "started in the prompt", False),
        ("<think>a</think>x<think>b</think>y", "xy", "a\nb", False),
        ("answer first <think>never closed", "answer first", "never closed", True),
    ],
)
def test_split_reasoning(text, content, reasoning, cut):
    split = split_reasoning(text)
    assert (split.content, split.reasoning, split.unterminated) == (content, reasoning, cut)


def test_policy_parses_tool_calls_after_the_reasoning_only():
    planned = '<think>maybe <tool_call>{"name": "delete_all"}</tool_call>? no.</think>\n'
    real = '<tool_call>\n{"name": "get_book", "arguments": {"book_id": 2}}\n</tool_call>'
    replies = in_order(
        text_reply(planned + real),
        {"role": "assistant", "content": "Dune", "reasoning_content": "The id is 2, so Dune."},
        {"role": "assistant", "content": "<think>still thinking", "finish_reason": "length"},
    )
    with ScriptedOpenAIServer(replies) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url)
        call_turn, answer_turn, cut_turn = (policy.act(MESSAGES, TOOLS) for _ in range(3))
    assert [(c.name, c.arguments) for c in call_turn.tool_calls] == [("get_book", {"book_id": 2})]
    assert call_turn.format_error is None and "delete_all" not in call_turn.raw_text
    assert "maybe" in call_turn.reasoning
    assert (answer_turn.content, answer_turn.reasoning) == ("Dune", "The id is 2, so Dune.")
    assert answer_turn.is_final_answer
    assert cut_turn.format_error == REASONING_CUT_OFF and not cut_turn.is_final_answer


def test_local_model_text_loses_its_reasoning_before_parsing():
    text = (
        'the template opened the think block <tool_call>{"name": "x"}</tool_call></think>'
        '<tool_call>{"name": "get_book", "arguments": {"book_id": 3}}</tool_call><|im_end|>'
    )
    parsed = parse_assistant_text(text)
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [("get_book", {"book_id": 3})]
    assert parsed.format_error is None and parsed.reasoning.startswith("the template")
    cut = parse_assistant_text("<think>so much to consider")
    assert cut.format_error == REASONING_CUT_OFF and cut.content == ""


def test_json_reply_is_parsed_after_the_reasoning():
    text = '<think>draft: {"answer": 1}</think>```json\n{"answer": 2}\n```'
    assert parse_json_reply(text) == {"answer": 2}
    assert parse_json_reply('first thoughts {"no": 1}</think>{"yes": 1}') == {"yes": 1}


# --- retries and concurrency ----------------------------------------------------------------


def test_rate_limit_then_success_is_retried_honouring_retry_after():
    replies = in_order(
        error_reply(429, "slow down", headers={"Retry-After": "0.3"}),
        error_reply(503, "warming up"),
        text_reply("Dune"),
    )
    with ScriptedOpenAIServer(replies) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, retry_backoff=0.01)
        started = time.monotonic()
        turn = policy.act(MESSAGES, TOOLS)
        elapsed = time.monotonic() - started
    assert turn.content == "Dune"
    assert server.statuses == [429, 503, 200]
    assert 0.3 <= elapsed < 3


def test_async_turns_are_retried_too():
    replies = in_order(error_reply(500, "oops"), text_reply("ok"))
    with ScriptedOpenAIServer(replies) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, retry_backoff=0.01)
        turn = asyncio.run(policy.act_async(MESSAGES, TOOLS))
    assert turn.content == "ok" and server.statuses == [500, 200]


def test_persistent_server_errors_end_in_a_clear_policy_error_quickly():
    answer = error_reply(500, "CUDA out of memory on the inference server")
    with ScriptedOpenAIServer(lambda body: answer) as server:
        policy = OpenAICompatiblePolicy(
            base_url=server.base_url, max_attempts=4, retry_backoff=0.01
        )
        started = time.monotonic()
        with pytest.raises(PolicyError) as caught:
            policy.act(MESSAGES, TOOLS)
    assert time.monotonic() - started < 2
    assert server.statuses == [500] * 4
    message = str(caught.value)
    assert "after 4 attempts" in message
    assert "HTTP 500: CUDA out of memory on the inference server" in message
    assert caught.value.__cause__.status == 500


def test_an_endpoint_nobody_listens_on_fails_after_its_attempts():
    with ScriptedOpenAIServer() as server:
        url = server.base_url  # the port is free again once the server is gone
    policy = OpenAICompatiblePolicy(base_url=url, max_attempts=2, retry_backoff=0.01, timeout=2)
    with pytest.raises(PolicyError, match="after 2 attempts: APIConnectionError"):
        policy.act(MESSAGES, TOOLS)
    with pytest.raises(LLMError, match="after 2 attempts"):
        chat_completion(LLMSettings(url, "m", "k", max_attempts=2, backoff_base=0.01), MESSAGES)


def test_requests_in_flight_are_bounded_per_client():
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow(body):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return text_reply("ok")

    with ScriptedOpenAIServer(slow) as server:
        policy = OpenAICompatiblePolicy(base_url=server.base_url, concurrency=2)

        async def many():
            return await asyncio.gather(*(policy.act_async(MESSAGES, TOOLS) for _ in range(6)))

        assert len(asyncio.run(many())) == 6
        assert state["most"] == 2
        state["most"] = 0
        threads = [threading.Thread(target=policy.act, args=(MESSAGES, TOOLS)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert state["most"] == 2
        assert len(server.requests) == 12


def test_client_options_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("AW_POLICY_CONCURRENCY", "3")
    monkeypatch.setenv("AW_POLICY_MAX_ATTEMPTS", "7")
    monkeypatch.setenv("AW_POLICY_MAX_TOKENS_PARAM", "max_tokens")
    policy = OpenAICompatiblePolicy(base_url="http://127.0.0.1:9/v1", max_attempts=2)
    assert (policy.options.concurrency, policy.options.max_attempts) == (3, 2)
    assert policy.options.max_tokens_param == "max_tokens"
    monkeypatch.setenv("AW_POLICY_MAX_TOKENS_PARAM", "max_length")
    with pytest.raises(ValueError, match="max_tokens_param"):
        OpenAICompatiblePolicy(base_url="http://127.0.0.1:9/v1")
