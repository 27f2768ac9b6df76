"""A policy served by any OpenAI-compatible chat endpoint with tool calling (vLLM, SGLang, OpenAI).

Configured from AW_POLICY_BASE_URL, AW_POLICY_MODEL and AW_POLICY_API_KEY, plus the client
options ``AW_POLICY_CONCURRENCY`` (requests in flight, default 8), ``AW_POLICY_MAX_ATTEMPTS``,
``AW_POLICY_RETRY_BACKOFF``, ``AW_POLICY_TIMEOUT``, ``AW_POLICY_MAX_TOKENS`` and
``AW_POLICY_MAX_TOKENS_PARAM``. Requests go through ``aw_site.openai_chat.ChatEndpoint``: the
parameters adapt to the model (a reasoning model that refuses ``temperature`` gets requests
without it), transient failures are retried with backoff, and reasoning text never reaches the
content. Servers that return tool calls as ``<tool_call>`` text in the content (vLLM without a
tool parser) are parsed too.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from aw_site.openai_chat import ChatEndpoint, ChatReply, EndpointError, EndpointOptions
from training.policies.base import Message, PolicyError, PolicyTurn, ToolSchema
from training.policies.tool_call_parser import (
    REASONING_CUT_OFF,
    TOOL_CALL_OPEN,
    ParsedToolCall,
    parse_arguments,
    parse_assistant_text,
)


class OpenAICompatiblePolicy:
    """Chat-completions policy with sync ``act`` and async ``act_async``.

    Options left as None come from the ``AW_POLICY_*`` variables, then the defaults.
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        api_key: str = "not-needed",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float | None = None,
        extra_body: dict[str, Any] | None = None,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        retry_backoff: float | None = None,
        max_tokens_param: str | None = None,
    ):
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        if max_tokens is None and os.environ.get("AW_POLICY_MAX_TOKENS", "").strip():
            max_tokens = int(os.environ["AW_POLICY_MAX_TOKENS"])
        self.max_tokens = max_tokens
        self.extra_body = extra_body or {}
        given = {
            "timeout": timeout,
            "concurrency": concurrency,
            "max_attempts": max_attempts,
            "backoff_base": retry_backoff,
            "max_tokens_param": max_tokens_param,
        }
        self.options = dataclasses.replace(
            EndpointOptions.from_env("AW_POLICY"),
            **{k: v for k, v in given.items() if v is not None},
        )
        self.endpoint = ChatEndpoint(base_url, model, api_key, self.options)

    @property
    def timeout(self) -> float:
        return self.options.timeout

    @classmethod
    def from_env(cls, prefix: str = "AW_POLICY", **overrides: Any) -> OpenAICompatiblePolicy:
        """Build from ``<prefix>_BASE_URL`` / ``_MODEL`` / ``_API_KEY``; raises when unset."""
        base_url = os.environ.get(f"{prefix}_BASE_URL", "").strip()
        if not base_url:
            raise PolicyError(f"{prefix}_BASE_URL is not set: no policy endpoint configured")
        return cls(
            base_url=base_url,
            model=os.environ.get(f"{prefix}_MODEL", "").strip() or "default",
            api_key=os.environ.get(f"{prefix}_API_KEY", "").strip() or "not-needed",
            **overrides,
        )

    def _request(self, tools: list[ToolSchema]) -> dict[str, Any]:
        return {
            "tools": tools or None,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "extra_body": self.extra_body or None,
        }

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        try:
            reply = self.endpoint.create(messages, **self._request(tools))
        except EndpointError as exc:
            raise PolicyError(f"policy {exc}") from exc
        return turn_from_reply(reply)

    async def act_async(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        try:
            reply = await self.endpoint.acreate(messages, **self._request(tools))
        except EndpointError as exc:
            raise PolicyError(f"policy {exc}") from exc
        return turn_from_reply(reply)


def turn_from_reply(reply: ChatReply) -> PolicyTurn:
    """Normalise a chat reply into a PolicyTurn, recording malformed tool calls."""
    content = reply.content
    calls: list[ParsedToolCall] = []
    for call in reply.tool_calls:
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        raw = json.dumps({"name": name, "arguments": arguments})
        calls.append(parse_arguments(name, arguments, raw))
    raw_text = content
    format_error = None
    if not calls and TOOL_CALL_OPEN in content:
        parsed = parse_assistant_text(content)
        content, calls = parsed.content, parsed.tool_calls
    elif calls:
        raw_text = content + "".join(f"\n<tool_call>{c.raw}</tool_call>" for c in calls)
    elif reply.reasoning_cut_off and not content:
        format_error = REASONING_CUT_OFF
    format_error = next((c.error for c in calls if c.error), format_error)
    return PolicyTurn(
        content=content,
        tool_calls=calls,
        raw_text=raw_text,
        tokens_in=reply.prompt_tokens,
        tokens_out=reply.completion_tokens,
        format_error=format_error,
        reasoning=reply.reasoning,
    )


def turn_from_response(response: Any) -> PolicyTurn:
    """A PolicyTurn from a raw SDK chat completion."""
    from aw_site.openai_chat import reply_from_response

    try:
        return turn_from_reply(reply_from_response(response))
    except EndpointError as exc:
        raise PolicyError(f"policy {exc}") from exc
