"""The one OpenAI-compatible chat client behind every caller: the LLM stages (``aw_site.llm``)
and endpoint policies (``training.policies.openai_compatible``).

What it adds to the ``openai`` SDK, in one place:

- request parameters adapt to the model: the output limit goes out as ``max_completion_tokens``
  (or ``max_tokens`` for old servers, ``<PREFIX>_MAX_TOKENS_PARAM``); when the endpoint answers
  400/422 naming a parameter it does not support (reasoning models refuse ``temperature`` and
  ``max_tokens``), the request is sent again without it (or under its other name) and that is
  remembered for the endpoint and model for the rest of the process;
- transient failures (429, 5xx, 408/409, connection errors, timeouts) are retried with
  exponential backoff and jitter, honouring ``Retry-After``, a bounded number of times; then an
  ``EndpointError`` carries the last status and the endpoint's own message;
- at most ``concurrency`` requests of one client are in flight (sync and async alike);
- reasoning text (``<think>...</think>`` in the content, or a separate ``reasoning_content``)
  is kept off the content, so tool-call and JSON parsing see only the answer.

No Django import: this module is plain Python.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
REASONING_FIELDS = ("reasoning_content", "reasoning")

MAX_TOKENS_PARAMS = ("max_completion_tokens", "max_tokens")
# Parameters a request can do without (or send under another name) when a model refuses them.
ADJUSTABLE_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "seed",
    "stop",
    "logprobs",
    "top_logprobs",
    "parallel_tool_calls",
)
_UNSUPPORTED = re.compile(
    r"unsupported|not supported|does not support|unrecogni[sz]ed|not recogni[sz]ed|"
    r"unknown (?:parameter|field|argument|key)|extra (?:inputs|fields) (?:are )?not permitted|"
    r"extra_forbidden|not allowed|not a valid parameter|unexpected keyword",
    re.IGNORECASE,
)
_UNSUPPORTED_CODES = {"unsupported_parameter", "unsupported_value", "unknown_parameter"}
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
RETRY_AFTER_CAP = 60.0  # the longest Retry-After honoured (seconds)


class EndpointError(RuntimeError):
    """The endpoint failed for good: ``status`` is the last HTTP status (None: no answer)."""

    def __init__(self, message: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.attempts = attempts


# --- reasoning text -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReasoningSplit:
    """Text cut into the answer and the reasoning; ``unterminated``: a ``<think>`` never closed
    (generation stopped while reasoning, so there is no answer after it)."""

    content: str
    reasoning: str = ""
    unterminated: bool = False


def split_reasoning(text: str | None) -> ReasoningSplit:
    """Take ``<think>...</think>`` blocks out of a reply.

    Handles a closed block anywhere, a block opened by the chat template in the prompt (the
    reply starts inside it: text up to the first ``</think>`` with no ``<think>`` before it), and
    a block opened and never closed (everything after ``<think>`` is reasoning). Text without
    either tag comes back unchanged.
    """
    text = text or ""
    if THINK_OPEN not in text and THINK_CLOSE not in text:
        return ReasoningSplit(text)
    reasoning: list[str] = []
    close, opening = text.find(THINK_CLOSE), text.find(THINK_OPEN)
    if close != -1 and (opening == -1 or close < opening):
        reasoning.append(text[:close])
        text = text[close + len(THINK_CLOSE) :]

    def take(match: re.Match[str]) -> str:
        reasoning.append(match.group(1))
        return ""

    text = _THINK_BLOCK.sub(take, text)
    unterminated = False
    opening = text.find(THINK_OPEN)
    if opening != -1:
        reasoning.append(text[opening + len(THINK_OPEN) :])
        text, unterminated = text[:opening], True
    text = text.replace(THINK_CLOSE, "")
    joined = "\n".join(part.strip() for part in reasoning if part.strip())
    return ReasoningSplit(text.strip(), joined, unterminated)


def strip_reasoning(text: str | None) -> str:
    """The reply without its reasoning."""
    return split_reasoning(text).content


# --- options --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointOptions:
    """How one client talks to its endpoint; ``from_env`` reads ``<PREFIX>_*`` variables."""

    timeout: float = 120.0
    concurrency: int = 8
    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_tokens_param: str = "max_completion_tokens"

    def __post_init__(self) -> None:
        if self.max_tokens_param not in MAX_TOKENS_PARAMS:
            raise ValueError(
                f"max_tokens_param must be one of {', '.join(MAX_TOKENS_PARAMS)}, "
                f"not {self.max_tokens_param!r}"
            )
        if self.concurrency < 1 or self.max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.timeout <= 0:
            raise ValueError("timeout must be positive and backoff times not negative")

    @classmethod
    def from_env(cls, prefix: str, **defaults: Any) -> EndpointOptions:
        """``<prefix>_TIMEOUT``, ``_CONCURRENCY``, ``_MAX_ATTEMPTS``, ``_RETRY_BACKOFF``,
        ``_RETRY_BACKOFF_MAX`` and ``_MAX_TOKENS_PARAM``; unset ones take ``defaults``, then
        the class defaults."""
        values: dict[str, Any] = dict(defaults)
        for name, variable, kind in (
            ("timeout", "TIMEOUT", float),
            ("concurrency", "CONCURRENCY", int),
            ("max_attempts", "MAX_ATTEMPTS", int),
            ("backoff_base", "RETRY_BACKOFF", float),
            ("backoff_max", "RETRY_BACKOFF_MAX", float),
            ("max_tokens_param", "MAX_TOKENS_PARAM", str),
        ):
            raw = os.environ.get(f"{prefix}_{variable}", "").strip()
            if not raw:
                continue
            try:
                values[name] = kind(raw)
            except ValueError as exc:
                raise ValueError(
                    f"{prefix}_{variable}={raw!r} is not a valid {kind.__name__}"
                ) from exc
        return cls(**values)


# --- what each endpoint and model refused ---------------------------------------------------


@dataclass
class Adaptations:
    """Parameters an endpoint and model refused: dropped, or sent under another name."""

    dropped: set[str] = field(default_factory=set)
    renamed: dict[str, str] = field(default_factory=dict)

    def apply(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = dict(kwargs)
        for old, new in self.renamed.items():
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        for name in self.dropped:
            kwargs.pop(name, None)
        return kwargs


_ADAPTATIONS: dict[tuple[str, str], Adaptations] = {}
_ADAPTATIONS_LOCK = threading.Lock()


def adaptations_for(base_url: str, model: str) -> Adaptations:
    """A copy of what is known about this endpoint and model."""
    with _ADAPTATIONS_LOCK:
        known = _ADAPTATIONS.get((base_url.rstrip("/"), model))
        if known is None:
            return Adaptations()
        return Adaptations(set(known.dropped), dict(known.renamed))


def _remember(base_url: str, model: str, param: str, renamed_to: str | None) -> None:
    with _ADAPTATIONS_LOCK:
        known = _ADAPTATIONS.setdefault((base_url.rstrip("/"), model), Adaptations())
        if renamed_to:
            known.renamed[param] = renamed_to
            known.renamed.pop(renamed_to, None)
        else:
            known.dropped.add(param)


def forget_adaptations() -> None:
    """Forget every remembered refusal (tests; an endpoint that now serves another model)."""
    with _ADAPTATIONS_LOCK:
        _ADAPTATIONS.clear()


def unsupported_param(exc: BaseException, kwargs: dict[str, Any]) -> str | None:
    """The request parameter a 400/422 answer says the model does not support, if any."""
    status = getattr(exc, "status_code", None)
    if status not in (400, 422):
        return None
    present = [name for name in ADJUSTABLE_PARAMS if name in kwargs]
    if not present:
        return None
    body = getattr(exc, "body", None)
    text = f"{getattr(exc, 'message', '') or exc} {json.dumps(body, default=str)}"
    code = str(getattr(exc, "code", "") or "")
    if code not in _UNSUPPORTED_CODES and not _UNSUPPORTED.search(text):
        return None
    param = getattr(exc, "param", None)
    if param in present:
        return param
    # The first parameter the message names ("'max_tokens' is not supported ... use
    # 'max_completion_tokens' instead" names the refused one first).
    found = []
    for name in present:
        match = re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text)
        if match:
            found.append((match.start(), name))
    return min(found)[1] if found else None


# --- errors and retries ---------------------------------------------------------------------


def describe_error(exc: BaseException) -> str:
    """The endpoint's own words: ``HTTP 500: <message>`` or the connection failure."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        body = getattr(exc, "body", None)
        message = None
        if isinstance(body, dict):
            message = body.get("message") or body.get("detail") or body.get("error")
        elif isinstance(body, str):
            message = body
        if not message:
            message = getattr(exc, "message", None) or str(exc)
        if not isinstance(message, str):
            message = json.dumps(message, default=str)
        return f"HTTP {status}: {message[:1000]}"
    cause = exc.__cause__ or exc.__context__
    detail = str(exc)
    if cause is not None and str(cause) and str(cause) not in detail:
        detail = f"{detail} ({type(cause).__name__}: {cause})"
    return f"{type(exc).__name__}: {detail}"[:1000]


def is_transient(exc: BaseException) -> bool:
    """Worth another try: rate limits, server errors, timeouts, connection failures."""
    from openai import APIConnectionError

    if isinstance(exc, APIConnectionError):  # includes APITimeoutError
        return True
    status = getattr(exc, "status_code", None)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def retry_after_seconds(exc: BaseException) -> float | None:
    """What the answer's ``retry-after-ms`` / ``Retry-After`` header asks for, if anything."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return min(RETRY_AFTER_CAP, max(0.0, float(raw_ms) / 1000))
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return min(RETRY_AFTER_CAP, max(0.0, float(raw)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return min(RETRY_AFTER_CAP, max(0.0, when.timestamp() - time.time()))


def backoff_seconds(attempt: int, options: EndpointOptions) -> float:
    """Exponential backoff with jitter before retry number ``attempt`` (1, 2, ...)."""
    delay = min(options.backoff_max, options.backoff_base * (2 ** (attempt - 1)))
    return delay * (0.5 + random.random() / 2)


class _Attempts:
    """The retry state of one request: adapts parameters, counts transient failures."""

    def __init__(self, endpoint: ChatEndpoint, kwargs: dict[str, Any]):
        self.endpoint = endpoint
        self.kwargs = adaptations_for(endpoint.base_url, endpoint.model).apply(kwargs)
        self.failures = 0
        self.adapted: set[str] = set()

    def after(self, exc: BaseException) -> float:
        """Seconds to wait before the next try; raises EndpointError when there is none."""
        if isinstance(exc, EndpointError):
            raise exc
        param = unsupported_param(exc, self.kwargs)
        if param is not None and param not in self.adapted:
            self.adapted.add(param)
            renamed_to = None
            if param in MAX_TOKENS_PARAMS:
                renamed_to = next(p for p in MAX_TOKENS_PARAMS if p != param)
                if renamed_to in self.adapted:  # refuses both names: send no limit at all
                    renamed_to = None
            value = self.kwargs.pop(param)
            if renamed_to:
                self.kwargs[renamed_to] = value
            _remember(self.endpoint.base_url, self.endpoint.model, param, renamed_to)
            return 0.0
        status = getattr(exc, "status_code", None)
        where = f"request to {self.endpoint.base_url} (model {self.endpoint.model})"
        if not is_transient(exc):
            raise EndpointError(f"{where} failed: {describe_error(exc)}", status) from exc
        self.failures += 1
        if self.failures >= self.endpoint.options.max_attempts:
            raise EndpointError(
                f"{where} failed after {self.failures} attempts: {describe_error(exc)}",
                status,
                self.failures,
            ) from exc
        waited = retry_after_seconds(exc)
        return (
            waited if waited is not None else backoff_seconds(self.failures, self.endpoint.options)
        )


# --- replies --------------------------------------------------------------------------------


@dataclass
class ChatReply:
    """One assistant turn: content without reasoning, tool calls as OpenAI dicts, usage."""

    content: str
    reasoning: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    reasoning_cut_off: bool = False  # the reply ran out while reasoning: no answer after it

    def message(self) -> dict[str, Any]:
        """The assistant message as a plain dict (for the next request's history)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


def reply_from_response(response: Any) -> ChatReply:
    """Normalise a chat completion; raises EndpointError when it has no choices."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise EndpointError("the endpoint answered with no choices")
    choice = choices[0]
    message = choice.message
    split = split_reasoning(message.content or "")
    separate = [getattr(message, name, None) for name in REASONING_FIELDS]
    reasoning = "\n".join(
        part.strip() for part in [*separate, split.reasoning] if isinstance(part, str) and part
    )
    tool_calls = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        tool_calls.append(
            {
                "id": getattr(call, "id", None) or "",
                "type": "function",
                "function": {
                    "name": getattr(function, "name", None),
                    "arguments": getattr(function, "arguments", None),
                },
            }
        )
    usage = getattr(response, "usage", None)
    finish = getattr(choice, "finish_reason", None)
    cut_off = split.unterminated or (
        finish == "length" and not split.content and not tool_calls and bool(reasoning)
    )
    return ChatReply(
        content=split.content,
        reasoning=reasoning,
        tool_calls=tool_calls,
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        finish_reason=finish,
        reasoning_cut_off=cut_off,
    )


# --- the client -----------------------------------------------------------------------------


class ChatEndpoint:
    """A chat-completions client for one endpoint and model, sync and async.

    Thread safe; the async side keeps one SDK client and semaphore per event loop (each
    ``asyncio.run`` gets its own).
    """

    def __init__(
        self,
        base_url: str,
        model: str = "default",
        api_key: str = "not-needed",
        options: EndpointOptions | None = None,
    ):
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.options = options or EndpointOptions()
        self._sync_client: Any = None
        self._sync_lock = threading.Lock()
        self._sync_slots = threading.BoundedSemaphore(self.options.concurrency)
        self._async_loop: Any = None
        self._async_client: Any = None
        self._async_slots: asyncio.Semaphore | None = None

    def request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """The keyword arguments of one chat-completions call (before adaptations)."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if temperature is not None:
            kwargs["temperature"] = temperature
        if tools:
            kwargs["tools"] = tools
        if max_tokens is not None:
            kwargs[self.options.max_tokens_param] = max_tokens
        kwargs.update({k: v for k, v in params.items() if v is not None})
        if extra_body:
            kwargs["extra_body"] = extra_body
        return kwargs

    def _client(self) -> Any:
        with self._sync_lock:
            if self._sync_client is None:
                from openai import OpenAI

                self._sync_client = OpenAI(
                    base_url=self.base_url,
                    api_key=self.api_key,
                    timeout=self.options.timeout,
                    max_retries=0,  # retries are ours: backoff, Retry-After, adaptations
                )
            return self._sync_client

    def _async_parts(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._async_loop is not loop or self._async_client is None:
            from openai import AsyncOpenAI

            self._async_loop = loop
            self._async_client = AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                timeout=self.options.timeout,
                max_retries=0,
            )
            self._async_slots = asyncio.Semaphore(self.options.concurrency)
        assert self._async_slots is not None
        return self._async_client, self._async_slots

    def create(self, messages: list[dict[str, Any]], **request: Any) -> ChatReply:
        """One chat turn, with adaptations and retries; raises EndpointError."""
        attempts = _Attempts(self, self.request(messages, **request))
        client = self._client()
        while True:
            try:
                with self._sync_slots:
                    response = client.chat.completions.create(**attempts.kwargs)
                return reply_from_response(response)
            except Exception as exc:  # the SDK raises many kinds; after() sorts them
                delay = attempts.after(exc)
            if delay:
                time.sleep(delay)

    async def acreate(self, messages: list[dict[str, Any]], **request: Any) -> ChatReply:
        """The async twin of :meth:`create`."""
        attempts = _Attempts(self, self.request(messages, **request))
        client, slots = self._async_parts()
        while True:
            try:
                async with slots:
                    response = await client.chat.completions.create(**attempts.kwargs)
                return reply_from_response(response)
            except Exception as exc:
                delay = attempts.after(exc)
            if delay:
                await asyncio.sleep(delay)
