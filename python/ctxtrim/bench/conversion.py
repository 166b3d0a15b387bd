"""Provider conversion, per message, and the JSON text a tool call is priced on.

- **provider conversion** (``CONVERT``): a 201-message history (a system prompt and 50
  user-path turns) in each provider format (OpenAI Chat, OpenAI Responses, Anthropic,
  Gemini),
  both ways: ``from_*`` of the ``json.loads`` of the payload against ``json.loads`` alone;
  ``to_*`` with the renderings each message keeps (the steady state of a server: a
  window's messages were rendered on an earlier turn), ``to_*`` of messages never rendered
  (what each message keeps dropped before each timed call), and
  ``to_openai_chat_json`` (the request body as bytes), against ``json.dumps`` of the
  payload.
- **tool-call input as JSON text** (``TOOL_INPUT_JSON``): a tool call is priced on its
  input's JSON text as ``msgspec.json.encode`` writes it (the core calls msgspec; see
  docs/design.md for why there is no hand-written writer). Per tool call, the first
  pricing of the message (``message_tokens``, kept facts dropped first) against
  ``msgspec.json.encode`` and ``json.dumps`` of the input alone: the share of pricing that
  encoding takes. Two sets of inputs: the agent history's (small, flat) and the corpus's
  JSON tool payloads (nested, with floats and lists).

Interleaved rounds, best of ``repeat``; every number is divided by the messages (or tool
calls) per call.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from functools import partial
from typing import Any

from ctxtrim import Message
from ctxtrim.formats import (
    from_anthropic,
    from_gemini,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_gemini,
    to_openai_chat,
    to_openai_chat_json,
    to_openai_responses,
)
from ctxtrim.messages import drop_caches

from .history import agent_history
from .paths import SYSTEM, turn_messages
from .report import CONVERT, TOOL_INPUT_JSON, Row
from .timing import best, best_interleaved, sampler, sampler_with_setup
from .tokens import corpora

__all__ = ["bench_conversion", "bench_tool_input_json"]


def bench_conversion(rows: list[Row], *, repeat: int, smoke: bool) -> None:
    """Append the ``CONVERT`` rows: per message, each format both ways, against
    ``json.loads`` / ``json.dumps`` of the payload."""
    messages = [Message.system(SYSTEM)] + [m for i in range(50) for m in turn_messages(i)]
    n = len(messages)
    number = 3 if smoke else 30
    for name, to, back in (
        ("OpenAI Chat", to_openai_chat, from_openai_chat),
        ("OpenAI Responses", to_openai_responses, from_openai_responses),
        ("Anthropic", to_anthropic, from_anthropic),
        ("Gemini", to_gemini, from_gemini),
    ):
        payload = to(messages)
        text = json.dumps(payload)
        fresh = [Message.decode(m.encode()) for m in messages]
        from_side = best_interleaved(
            {
                "ctxtrim from_*": sampler(partial(_parse, back, text), number=number),
                "json.loads of the payload": sampler(partial(json.loads, text), number=number),
            },
            repeat=repeat,
        )
        to_side = best_interleaved(
            {
                "ctxtrim to_*, kept renderings": sampler(partial(to, messages), number=number),
                "ctxtrim to_*, first rendering": sampler_with_setup(
                    partial(_forget, fresh), partial(to, fresh), number=number
                ),
                "json.dumps of the payload": sampler(partial(json.dumps, payload), number=number),
            },
            repeat=repeat,
        )
        if name == "OpenAI Chat":
            to_side["ctxtrim to_openai_chat_json (bytes)"] = best(
                partial(to_openai_chat_json, messages), number=number, repeat=repeat
            )
        for side, timed in ((f"{name}: from", from_side), (f"{name}: to", to_side)):
            for impl, seconds in timed.items():
                rows.append(Row(CONVERT, side, impl, seconds / n))


def _parse(back: Callable[[Any], list[Message]], text: str) -> list[Message]:
    return back(json.loads(text))


def _forget(messages: list[Message]) -> None:
    for m in messages:
        drop_caches(m)


def bench_tool_input_json(rows: list[Row], *, repeat: int, smoke: bool) -> None:
    """Append the ``TOOL_INPUT_JSON`` rows (see the module docs)."""
    msgspec_json = importlib.import_module("msgspec.json")
    message_tokens = importlib.import_module("ctxtrim._core").message_tokens
    number = 3 if smoke else 30
    turns = agent_history(50 if smoke else 500)
    payloads = [json.loads(t) for t in corpora(samples=4 if smoke else 40)["JSON tool payloads"]]
    sets = {
        f"{len(turns):,} agent-history tool calls": [(t.call_id, t.tool, t.args) for t in turns],
        f"{len(payloads):,} JSON tool payloads": [
            (f"call_{i}", "search", p) for i, p in enumerate(payloads)
        ],
    }
    for size, calls in sets.items():
        fresh = [Message.assistant(tool_uses=[c]) for c in calls]
        inputs = [m.content[0].input for m in fresh]  # type: ignore[union-attr]

        def price(fresh: list[Message] = fresh) -> None:
            for m in fresh:
                drop_caches(m)  # drop the kept facts: price it as the first time
                message_tokens(m)

        timed = best_interleaved(
            {
                "ctxtrim message_tokens, first pricing of the tool call": sampler(
                    price, number=number
                ),
                "msgspec.json.encode of the input": sampler(
                    partial(_each, msgspec_json.encode, inputs), number=number
                ),
                "json.dumps of the input": sampler(
                    partial(_each, json.dumps, inputs), number=number
                ),
            },
            repeat=repeat,
        )
        for impl, seconds in timed.items():
            rows.append(Row(TOOL_INPUT_JSON, size, impl, seconds / len(calls)))


def _each(fn: Callable[[Any], object], items: list[Any]) -> list[object]:
    return [fn(i) for i in items]
