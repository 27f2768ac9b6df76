"""A real OpenAI-compatible HTTP server on loopback for testing LLM paths.

Tests script its answers with ``responder``; everything goes over real HTTP through the
official ``openai`` client, so request building and response parsing are exercised. A responder
returns an assistant message dict (``text_reply``, ``tool_call_reply``; extra keys such as
``reasoning_content`` pass through, ``finish_reason`` goes on the choice), or an ``HTTPReply``
for any status, error body and headers (``error_reply``); ``in_order`` plays a script of them.
Every request body is kept in ``requests`` and every status sent in ``statuses``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class HTTPReply:
    """A scripted HTTP answer: status, JSON body and headers."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], "dict[str, Any] | HTTPReply"]


def error_reply(
    status: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> HTTPReply:
    """An OpenAI-style error answer: ``{"error": {"message", "type", "param", "code"}}``."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return HTTPReply(status, {"error": error}, headers or {})


def in_order(*replies: dict[str, Any] | HTTPReply) -> Responder:
    """A responder that answers with ``replies`` one after another, then repeats the last."""
    script = list(replies)
    lock = threading.Lock()

    def responder(body: dict[str, Any]) -> dict[str, Any] | HTTPReply:
        with lock:
            return script.pop(0) if len(script) > 1 else script[0]

    return responder


def text_reply(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def tool_call_reply(
    name: str, arguments: dict[str, Any] | str, content: str = ""
) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": f"call_{uuid.uuid4().hex[:8]}",
                "type": "function",
                "function": {"name": name, "arguments": raw},
            }
        ],
    }


class ScriptedOpenAIServer:
    """Context manager serving /v1/chat/completions and /v1/models on 127.0.0.1."""

    def __init__(self, responder: Responder | None = None, model: str = "scripted-model"):
        self.responder: Responder = responder or (lambda body: text_reply("ok"))
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "server not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                if self.path.rstrip("/").endswith("/chat/completions"):
                    owner.statuses.append(status)  # before the client can see the answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]}
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                owner.requests.append(body)
                try:
                    message = owner.responder(body)
                except Exception as exc:  # surface scripted failures as server errors
                    self._send(500, {"error": {"message": str(exc)}})
                    return
                if isinstance(message, HTTPReply):
                    self._send(message.status, message.body, message.headers)
                    return
                message = {"role": "assistant", "content": "", **message}
                finish = message.pop("finish_reason", None) or (
                    "tool_calls" if message.get("tool_calls") else "stop"
                )
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", owner.model),
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
