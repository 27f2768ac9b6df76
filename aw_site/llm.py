"""The one OpenAI-compatible LLM client every LLM-driven stage uses.

Configured only from environment variables so secrets never live in code or the database:
``<PREFIX>_BASE_URL`` (required to enable the LLM path), ``<PREFIX>_MODEL``, ``<PREFIX>_API_KEY``,
``<PREFIX>_TIMEOUT`` and the client options of ``aw_site.openai_chat.EndpointOptions.from_env``
(concurrency, retries, the output-limit parameter name). With no base URL the callers take their
offline path; when an LLM is configured and fails, a caller that carries on without it reports
the failure (``report_llm_failure``) so the job records it as a warning.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aw_site.openai_chat import ChatEndpoint, EndpointError, EndpointOptions, strip_reasoning

log = logging.getLogger(__name__)


class LLMError(RuntimeError):
    """The endpoint failed or answered something unusable."""


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str
    timeout: float = 60.0
    concurrency: int = 8
    max_attempts: int = 5
    backoff_base: float = 0.5
    max_tokens_param: str = "max_completion_tokens"

    def options(self) -> EndpointOptions:
        return EndpointOptions(
            timeout=self.timeout,
            concurrency=self.concurrency,
            max_attempts=self.max_attempts,
            backoff_base=self.backoff_base,
            max_tokens_param=self.max_tokens_param,
        )


def llm_settings(prefix: str = "AW_LLM") -> LLMSettings | None:
    """Settings for the endpoint named by ``prefix``, or None when it is not configured."""
    base_url = os.environ.get(f"{prefix}_BASE_URL", "").strip()
    if not base_url:
        return None
    options = EndpointOptions.from_env(prefix, timeout=60.0)
    return LLMSettings(
        base_url=base_url,
        model=os.environ.get(f"{prefix}_MODEL", "default").strip() or "default",
        api_key=os.environ.get(f"{prefix}_API_KEY", "").strip() or "not-needed",
        timeout=options.timeout,
        concurrency=options.concurrency,
        max_attempts=options.max_attempts,
        backoff_base=options.backoff_base,
        max_tokens_param=options.max_tokens_param,
    )


_ENDPOINTS: dict[LLMSettings, ChatEndpoint] = {}
_ENDPOINTS_LOCK = threading.Lock()


def endpoint(settings: LLMSettings) -> ChatEndpoint:
    """One client per settings, so its concurrency limit holds across callers."""
    with _ENDPOINTS_LOCK:
        client = _ENDPOINTS.get(settings)
        if client is None:
            client = ChatEndpoint(
                settings.base_url, settings.model, settings.api_key, settings.options()
            )
            _ENDPOINTS[settings] = client
        return client


def chat_completion(
    settings: LLMSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """One chat turn; returns the assistant message as a plain dict.

    ``content`` carries no reasoning (``<think>`` blocks, ``reasoning_content``): that is under
    ``reasoning``. A model that refuses ``temperature`` gets the request without it.
    """
    try:
        reply = endpoint(settings).create(
            messages, tools=tools, temperature=temperature, max_tokens=max_tokens
        )
    except EndpointError as exc:
        raise LLMError(f"LLM {exc}") from exc
    return {
        "role": "assistant",
        "content": reply.content,
        "reasoning": reply.reasoning,
        "tool_calls": reply.tool_calls,
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
        },
    }


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_json_reply(text: str) -> Any:
    """Parse JSON from a reply that may wrap it in a markdown fence or prose (and reasoning)."""
    text = strip_reasoning(text)
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


# --- a configured LLM that fails is never silent -----------------------------------------------

_FAILURES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "llm_failures", default=None
)


def report_llm_failure(stage: str, exc: BaseException) -> None:
    """A configured LLM failed and the caller carries on without it (an offline fallback):
    log a warning and, inside a job (``collect_llm_failures``), keep it for the job's record."""
    line = f"{stage}: {exc}"
    log.warning("LLM failed, carrying on without it in %s", line)
    collected = _FAILURES.get()
    if collected is not None:
        collected.append(line[:600])


@contextmanager
def collect_llm_failures() -> Iterator[list[str]]:
    """Collect the LLM failures reported in this context (a job's run)."""
    collected: list[str] = []
    token = _FAILURES.set(collected)
    try:
        yield collected
    finally:
        _FAILURES.reset(token)


def summarize_llm_failures(lines: list[str], limit: int = 10) -> list[str]:
    """Distinct failures with their counts, the most frequent first, at most ``limit``."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    summary = [line if n == 1 else f"{line} ({n} times)" for line, n in ranked[:limit]]
    if len(ranked) > limit:
        summary.append(f"... and {len(ranked) - limit} more distinct failures")
    return summary
