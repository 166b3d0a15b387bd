"""A local HTTP server on 127.0.0.1 that plays the OpenAI and Anthropic APIs for the tests.

The real SDK clients (``AsyncOpenAI``, ``AsyncAnthropic``) talk to it over HTTP exactly as
they talk to the providers. It implements the two endpoints the transports use:

* ``POST /v1/chat/completions`` (OpenAI chat completions),
* ``POST /v1/messages`` (Anthropic messages),
* ``POST /v1/messages/count_tokens`` (Anthropic's token counting, for
  ``AnthropicTokenCounter``): it answers ``{"input_tokens": n}`` with :func:`fake_count`,

checks each request body as the provider would (required fields and types, roles, a
positive token limit; an invalid request gets the provider's 400 error shape), records it in
:attr:`FakeProvider.requests`, and answers with the next scripted reply in the real
response shape: a completion (:meth:`FakeProvider.reply`), an HTTP error in the provider's
error shape (:meth:`FakeProvider.fail`: 429, 500, 529...) or a stall longer than the
client's timeout (:meth:`FakeProvider.stall`). With nothing scripted it answers "summary".
With :attr:`FakeProvider.context_window` set, a completion request whose prompt
(:func:`fake_count`) is over it gets the provider's real context-overflow error: OpenAI's 400
with code ``context_length_exceeded``, Anthropic's 400 ``prompt is too long``.

Stdlib only (``http.server`` in a thread); each request is served on its own thread, so a
stalled request does not block the next one, and :meth:`close` releases stalled ones.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeProvider", "Recorded", "fake_count"]

#: Tokens every counted request costs, and each message's framing, in :func:`fake_count`.
REQUEST_TOKENS = 7
MESSAGE_TOKENS = 3


def _words(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def fake_count(body: dict[str, Any]) -> int:
    """The fake provider's token count of a ``count_tokens`` request: a fixed cost per
    request, the words and punctuation of the system prompt and tools, and per message a
    framing cost plus the words and punctuation of its JSON content (not additive per
    message in general, as the real count is not: only through the fixed cost)."""
    n = REQUEST_TOKENS
    system = body.get("system")
    if system:
        n += _words(system if isinstance(system, str) else json.dumps(system))
    if body.get("tools"):
        n += _words(json.dumps(body["tools"]))
    for m in body["messages"]:
        content = m["content"]
        n += MESSAGE_TOKENS + _words(content if isinstance(content, str) else json.dumps(content))
    return n


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _Script:
    kind: str  # "reply" | "fail" | "stall" | "raw"
    text: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    seconds: float = 0.0


@dataclass
class _State:
    script: list[_Script] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closing: threading.Event = field(default_factory=threading.Event)
    context_window: int | None = None


def _openai_problem(body: dict[str, Any]) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in (
            "system",
            "developer",
            "user",
            "assistant",
            "tool",
        ):
            return f"messages[{i}].role is invalid"
        if not isinstance(m.get("content"), str):
            return f"messages[{i}].content must be a string"
    for key in ("max_tokens", "max_completion_tokens"):
        if key in body and (not isinstance(body[key], int) or body[key] < 1):
            return f"{key} must be a positive integer"
    return None


def _anthropic_problem(body: dict[str, Any], *, counting: bool = False) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    if counting:  # count_tokens takes no max_tokens, and checks tool results as the API does
        if "max_tokens" in body:
            return "max_tokens: Extra inputs are not permitted"
        problem = _anthropic_problem({**body, "max_tokens": 1})
        return problem if problem is not None else _tool_result_problem(body["messages"])
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: field required (a positive integer)"
    if "system" in body and not isinstance(body["system"], (str, list)):
        return "system: must be a string or a list of text blocks"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: first message must use the user role"
    for i, m in enumerate(messages):
        if m.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if i and m.get("role") == messages[i - 1].get("role") == "assistant":
            return "messages: roles must alternate"
    return None


def _tool_result_problem(messages: list[dict[str, Any]]) -> str | None:
    """A tool_result must answer a tool_use of the message just before it."""
    for i, m in enumerate(messages):
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                before = messages[i - 1].get("content") if i else None
                calls = {
                    b.get("id")
                    for b in (before if isinstance(before, list) else [])
                    if isinstance(b, dict) and b.get("type") == "tool_use"
                }
                if block.get("tool_use_id") not in calls:
                    return (
                        f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` "
                        "blocks; each tool_result must have a tool_use in the previous message"
                    )
    return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        openai = self.path.rstrip("/").endswith("/chat/completions")
        counting = self.path.rstrip("/").endswith("/v1/messages/count_tokens")
        anthropic = counting or self.path.rstrip("/").endswith("/v1/messages")
        if not (openai or anthropic):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self._error(400, f"request body is not JSON: {e}", openai)
            return
        with state.lock:
            state.requests.append(Recorded(self.path, dict(self.headers.items()), body))
            scripted = bool(state.script)
            step = state.script.pop(0) if scripted else _Script("reply", "summary")
        problem = _openai_problem(body) if openai else _anthropic_problem(body, counting=counting)
        if problem is not None:
            self._error(400, problem, openai)
            return
        window = state.context_window
        if window is not None and not counting and step.kind == "reply":
            prompt = fake_count(body)
            if prompt > window:  # refused before it is served: a scripted reply waits
                if scripted:
                    with state.lock:
                        state.script.insert(0, step)
                self._overflow(prompt, window, openai)
                return
        if step.kind == "stall":
            state.closing.wait(step.seconds)
            try:  # the client has usually given up by now; a broken pipe is expected
                self._reply(body, step.text or "late summary", openai)
            except OSError:
                pass
            return
        if step.kind == "fail":
            self._error(step.status, step.text or f"scripted failure {step.status}", openai)
            return
        if step.kind == "raw":
            self._send(200, step.payload)
            return
        if counting:
            self._send(200, {"input_tokens": fake_count(body)})
            return
        self._reply(body, step.text, openai)

    def _reply(self, body: dict[str, Any], text: str, openai: bool) -> None:
        if openai:
            self._send(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 1_700_000_000,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text, "refusal": None},
                            "finish_reason": "stop",
                            "logprobs": None,
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                },
            )
        else:
            self._send(
                200,
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": body["model"],
                    "content": [{"type": "text", "text": text}] if text else [],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
            )

    def _overflow(self, prompt: int, window: int, openai: bool) -> None:
        """The providers' context-overflow answers, body for body."""
        if openai:
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {prompt} tokens. Please reduce the length of the "
                "messages."
            )
            error = {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
            self._send(400, {"error": error})
        else:
            message = f"prompt is too long: {prompt} tokens > {window} maximum"
            self._send(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": message},
                    "request_id": "req_fake",
                },
            )

    def _error(self, status: int, message: str, openai: bool) -> None:
        kinds = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}
        kind = kinds.get(status, "api_error")
        if openai:
            self._send(status, {"error": {"message": message, "type": kind, "code": None}})
        else:
            self._send(status, {"type": "error", "error": {"type": kind, "message": message}})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a timeout, a cancelled request) closes its connection
        # before the answer is written: expected, and not worth a traceback on stderr.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeProvider:
    """The server; use as a context manager. ``base_url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Recorded]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    @property
    def context_window(self) -> int | None:
        """Prompts over this many tokens (:func:`fake_count`) get the overflow error."""
        return self._server.state.context_window

    @context_window.setter
    def context_window(self, tokens: int | None) -> None:
        self._server.state.context_window = tokens

    def reply(self, text: str) -> None:
        """The next request gets a completion with ``text``."""
        self._push(_Script("reply", text))

    def fail(self, status: int, message: str = "") -> None:
        """The next request gets HTTP ``status`` with the provider's error body."""
        self._push(_Script("fail", message, status=status))

    def respond(self, payload: dict[str, Any]) -> None:
        """The next request gets HTTP 200 with ``payload`` as its body, whatever it asked."""
        self._push(_Script("raw", payload=payload))

    def stall(self, seconds: float) -> None:
        """The next request gets no answer for ``seconds`` (or until :meth:`close`)."""
        self._push(_Script("stall", seconds=seconds))

    def _push(self, step: _Script) -> None:
        with self._server.state.lock:
            self._server.state.script.append(step)

    def close(self) -> None:
        self._server.state.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
