"""The one OpenAI-compatible LLM client every LLM-driven stage uses.

Configured only from environment variables so secrets never live in code or the database:
``<PREFIX>_BASE_URL`` (required to enable the LLM path), ``<PREFIX>_MODEL``, ``<PREFIX>_API_KEY``
and ``<PREFIX>_TIMEOUT``. With no base URL the callers take their offline path.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any


class LLMError(RuntimeError):
    """The endpoint failed or answered something unusable."""


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str
    timeout: float = 60.0


def llm_settings(prefix: str = "AW_LLM") -> LLMSettings | None:
    """Settings for the endpoint named by ``prefix``, or None when it is not configured."""
    base_url = os.environ.get(f"{prefix}_BASE_URL", "").strip()
    if not base_url:
        return None
    return LLMSettings(
        base_url=base_url,
        model=os.environ.get(f"{prefix}_MODEL", "default").strip() or "default",
        api_key=os.environ.get(f"{prefix}_API_KEY", "").strip() or "not-needed",
        timeout=float(os.environ.get(f"{prefix}_TIMEOUT", "60")),
    )


def _client(settings: LLMSettings):
    from openai import OpenAI

    return OpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key,
        timeout=settings.timeout,
        max_retries=1,
    )


def chat_completion(
    settings: LLMSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """One chat turn; returns the assistant message as a plain dict."""
    kwargs: dict[str, Any] = {"model": settings.model, "messages": messages}
    kwargs["temperature"] = temperature
    if tools:
        kwargs["tools"] = tools
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    try:
        response = _client(settings).chat.completions.create(**kwargs)
    except Exception as exc:  # the SDK raises many kinds; callers need one
        raise LLMError(f"LLM request to {settings.base_url} failed: {exc}") from exc
    if not response.choices:
        raise LLMError("LLM answered with no choices")
    message = response.choices[0].message
    tool_calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in (message.tool_calls or [])
    ]
    usage = getattr(response, "usage", None)
    return {
        "role": "assistant",
        "content": message.content or "",
        "tool_calls": tool_calls,
        "usage": {
            "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
            "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
        },
    }


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """Parse JSON from a reply that may wrap it in a markdown fence or prose."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            pass
        for opener, closer in (("{", "}"), ("[", "]")):
            start, end = candidate.find(opener), candidate.rfind(closer)
            if 0 <= start < end:
                try:
                    return json.loads(candidate[start : end + 1])
                except json.JSONDecodeError:
                    continue
    raise LLMError(f"LLM reply is not JSON: {text[:200]!r}")


def complete_json(settings: LLMSettings, messages: list[dict[str, Any]]) -> Any:
    """Ask for a JSON answer and parse it; raises LLMError when it is not JSON."""
    reply = chat_completion(settings, messages)
    return parse_json_reply(reply["content"])
