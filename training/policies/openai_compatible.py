"""A policy served by any OpenAI-compatible chat endpoint with tool calling (vLLM, SGLang, OpenAI).

Configured from AW_POLICY_BASE_URL, AW_POLICY_MODEL and AW_POLICY_API_KEY. Servers that return
tool calls as ``<tool_call>`` text in the content (vLLM without a tool parser) are parsed too.
"""

from __future__ import annotations

import json
import os
from typing import Any

from training.policies.base import Message, PolicyError, PolicyTurn, ToolSchema
from training.policies.tool_call_parser import (
    TOOL_CALL_OPEN,
    ParsedToolCall,
    parse_arguments,
    parse_assistant_text,
)


class OpenAICompatiblePolicy:
    """Chat-completions policy with sync ``act`` and async ``act_async``."""

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        api_key: str = "not-needed",
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 120.0,
        extra_body: dict[str, Any] | None = None,
    ):
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.extra_body = extra_body or {}
        self._sync_client = None
        self._async_client = None

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

    def _request(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if tools:
            kwargs["tools"] = tools
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def act(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        if self._sync_client is None:
            from openai import OpenAI

            self._sync_client = OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=1
            )
        try:
            response = self._sync_client.chat.completions.create(**self._request(messages, tools))
        except Exception as exc:  # the SDK raises many kinds; the rollout needs one
            raise PolicyError(f"policy request to {self.base_url} failed: {exc}") from exc
        return turn_from_response(response)

    async def act_async(self, messages: list[Message], tools: list[ToolSchema]) -> PolicyTurn:
        if self._async_client is None:
            from openai import AsyncOpenAI

            self._async_client = AsyncOpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=1
            )
        try:
            response = await self._async_client.chat.completions.create(
                **self._request(messages, tools)
            )
        except Exception as exc:
            raise PolicyError(f"policy request to {self.base_url} failed: {exc}") from exc
        return turn_from_response(response)


def turn_from_response(response: Any) -> PolicyTurn:
    """Normalise a chat completion into a PolicyTurn, recording malformed tool calls."""
    if not getattr(response, "choices", None):
        raise PolicyError("policy answered with no choices")
    message = response.choices[0].message
    content = message.content or ""
    usage = getattr(response, "usage", None)
    tokens_in = getattr(usage, "prompt_tokens", 0) or 0
    tokens_out = getattr(usage, "completion_tokens", 0) or 0
    calls: list[ParsedToolCall] = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
        raw = json.dumps({"name": name, "arguments": arguments})
        calls.append(parse_arguments(name, arguments, raw))
    raw_text = content
    if not calls and TOOL_CALL_OPEN in content:
        parsed = parse_assistant_text(content)
        content, calls = parsed.content, parsed.tool_calls
    elif calls:
        raw_text = content + "".join(f"\n<tool_call>{c.raw}</tool_call>" for c in calls)
    format_error = next((c.error for c in calls if c.error), None)
    return PolicyTurn(
        content=content,
        tool_calls=calls,
        raw_text=raw_text,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        format_error=format_error,
    )
