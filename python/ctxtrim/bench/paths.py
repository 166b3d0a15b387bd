"""The user paths: what an agent server's code runs each turn, measured end to end.

Every workload here builds its messages inside the timed call, as a server receives them
(OpenAI Chat Completions dicts from ``json.loads``, or ``Message`` objects built by the
agent loop), and each side goes through its own documented API:

- **server turn** (``SERVER_TURN``) — 4 provider dicts in → convert → append to the store →
  an 8k-token ``FitContextWindow`` window → provider dicts out for the request. ctxtrim on
  a ``MemoryContextStore``; LangChain with its own tools (``convert_to_messages``,
  ``trim_messages`` with ``count_tokens_approximately``, ``convert_to_openai_messages``);
  and ``json.dumps`` of the same window, for scale.
- **the same turn on SQLite** (``SQLITE_TURN``) — ctxtrim's ``SQLiteContextStore(synchronous=
  "NORMAL")``, whose window comes from ``await store.load_log()`` (cached, O(new)), in
  one event loop, as a server awaits it.
- **plain list** (``PLAIN_LIST``) — append 4 new ``Message`` objects to a list and call
  ``FitContextWindow(8000)(history)``; agentix the same with its own messages and strategy.
- **the agent loop as the seeds write it** (``SEED_LOOP``) — the same turn as axio,
  agent-air and agentix users write it: each message built with ``Message(role, [blocks])``,
  ``await store.append(message)`` one at a time on a ``MemoryContextStore``, then
  ``FitContextWindow(8000).apply(store)``; agentix its own loop, as in the plain-list row.
- **construction** (``CONSTRUCT``) — the 4 messages of an agent round (task text, tool
  call, tool result, answer), ctxtrim against agentix.

Sizes are messages already stored (1k, 20k, 100k). Histories are built before the clock;
each call appends a new turn (the history grows by a turn per call), so the sides of a
comparison are sampled in interleaved rounds, the best round reported. Provider
conversion per message is in :mod:`ctxtrim.bench.conversion`.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ctxtrim import (
    FitContextWindow,
    MemoryContextStore,
    Message,
    SQLiteContextStore,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.formats import from_openai_chat, to_openai_chat

from . import peers
from .history import BUDGET
from .report import CONSTRUCT, PLAIN_LIST, SEED_LOOP, SERVER_TURN, SQLITE_TURN, Row
from .timing import best_interleaved, drive, paused_gc, sampler

__all__ = ["SYSTEM", "bench_paths", "seed_messages", "turn_dicts", "turn_messages"]

SYSTEM = "You are a careful coding agent. Use the tools; answer briefly."
"""The system prompt of the user-path histories."""
_RESULT = "def f(x):\n    return 2 * x\n" * 6


def turn_dicts(i: int) -> list[dict[str, Any]]:
    """Turn ``i`` as Chat Completions sends it: a question, a tool call (compact arguments, as
    the models write them), its result, the answer."""
    return [
        {"role": "user", "content": f"Please look at file number {i} and say what it does."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path":"/src/m{i}.py"}}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"call_{i}", "content": _RESULT},
        {"role": "assistant", "content": f"File {i} defines f, which doubles its input. " * 3},
    ]


def turn_messages(i: int) -> list[Message]:
    """Turn ``i`` as an agent loop builds it with ctxtrim's constructors."""
    return [
        Message.user(f"Please look at file number {i} and say what it does."),
        Message.assistant(tool_uses=[(f"call_{i}", "read_file", {"path": f"/src/m{i}.py"})]),
        Message.tool_results((f"call_{i}", _RESULT)),
        Message.assistant(f"File {i} defines f, which doubles its input. " * 3),
    ]


def seed_messages(i: int) -> list[Message]:
    """Turn ``i`` built as the seeds' users build messages: ``Message(role, [blocks])``."""
    # A list, as they write it: the message stores it as a tuple (its annotation's type).
    msg: Any = Message
    return [
        msg("user", [TextBlock(f"Please look at file number {i} and say what it does.")]),
        msg("assistant", [ToolUseBlock(f"call_{i}", "read_file", {"path": f"/src/m{i}.py"})]),
        msg("user", [ToolResultBlock(f"call_{i}", _RESULT)]),
        msg("assistant", [TextBlock(f"File {i} defines f, which doubles its input. " * 3)]),
    ]


class _Counter:
    """The next turn number, shared by the sides of a comparison."""

    def __init__(self, start: int) -> None:
        self.n = start

    def __call__(self) -> int:
        self.n += 1
        return self.n


def bench_paths(rows: list[Row], *, smoke: bool = False, repeat: int = 7) -> None:
    """Append the user-path rows (see the module docs) to ``rows``."""
    for size in (200, 800) if smoke else (1_000, 20_000, 100_000):
        _bench_size(rows, size, smoke=smoke, repeat=repeat)
    k = _Counter(0)
    samplers = {"ctxtrim Message": sampler(lambda: turn_messages(k()), number=200)}
    if peers.has("agentix.types"):
        build = peers.agentix_turn_builder(importlib.import_module("agentix.types"))
        samplers["agentix Message"] = sampler(lambda: build(k()), number=200)
    for impl, seconds in best_interleaved(samplers, repeat=repeat).items():
        rows.append(Row(CONSTRUCT, "4 messages", impl, seconds))


def _bench_size(rows: list[Row], size: int, *, smoke: bool, repeat: int) -> None:
    """The server turn (memory, SQLite, LangChain) and the plain list at ``size`` messages."""
    number = 3 if smoke else 20
    slow = 2 if smoke else 5  # calls per sample for the O(n) peers
    label = f"{size:,} messages"
    turns = size // 4
    nxt = _Counter(turns)
    # The request bodies as they arrive (JSON), made before the clock.
    bodies = {i: json.dumps(turn_dicts(i)).encode() for i in range(turns, turns + 4_000)}
    raw = bodies.__getitem__

    # server turn: ctxtrim (memory store), LangChain, json.dumps of the window
    history = [Message.system(SYSTEM)] + [m for i in range(turns) for m in turn_messages(i)]
    store = drive(MemoryContextStore.from_history(history))
    fit = FitContextWindow(BUDGET)

    def ctxtrim_turn() -> object:
        messages = from_openai_chat(json.loads(raw(nxt())))
        drive(store.append_many(messages))
        return to_openai_chat(fit.apply(store))

    window = to_openai_chat(fit.apply(store))
    samplers: dict[str, Callable[[], float]] = {
        "ctxtrim MemoryContextStore": sampler(ctxtrim_turn, number=number),
        "json.dumps of the window (scale)": sampler(lambda: json.dumps(window), number=number),
    }
    lc = _langchain_turn(history, raw, nxt)
    if lc is not None:
        samplers["LangChain (convert, trim_messages, convert back)"] = sampler(lc, number=slow)
    for impl, seconds in best_interleaved(samplers, repeat=repeat).items():
        rows.append(Row(SERVER_TURN, label, impl, seconds))
    if lc is None:
        rows.append(Row(SERVER_TURN, label, "LangChain", None, note="langchain-core missing"))

    seconds = _sqlite_turn(history, raw, nxt, number=number, repeat=max(3, repeat // 2))
    rows.append(Row(SQLITE_TURN, label, "ctxtrim SQLiteContextStore", seconds))

    # plain list: append 4 Messages, fit the list
    plain = list(history)
    fit_list = FitContextWindow(BUDGET)

    def ctxtrim_plain() -> object:
        plain.extend(turn_messages(nxt()))
        return fit_list(plain)

    # the agent loop as the seeds write it: Message(role, [blocks]), await append, apply
    seed_store = drive(MemoryContextStore.from_history(history))
    fit_seed = FitContextWindow(BUDGET)

    async def seed_turn() -> object:
        for message in seed_messages(nxt()):
            await seed_store.append(message)
        return fit_seed.apply(seed_store)

    def ctxtrim_seed() -> object:
        # One step of the user's coroutine, as an event loop takes it (nothing suspends);
        # driving each `append` on its own would time a StopIteration per message that an
        # `await` inside a coroutine never raises.
        return drive(seed_turn())

    ax = _agentix_plain(turns, nxt)
    for workload, ours, impl in (
        (PLAIN_LIST, ctxtrim_plain, "ctxtrim FitContextWindow on a list"),
        (SEED_LOOP, ctxtrim_seed, "ctxtrim MemoryContextStore"),
    ):
        samplers = {impl: sampler(ours, number=number)}
        if ax is not None:
            samplers["agentix FitContextWindow"] = sampler(ax, number=slow)
        for name, seconds in best_interleaved(samplers, repeat=repeat).items():
            rows.append(Row(workload, label, name, seconds))
        if ax is None:
            rows.append(Row(workload, label, "agentix", None, note="agentix-toolkit missing"))


def _langchain_turn(
    history: list[Message], raw: Callable[[int], bytes], nxt: Callable[[], int]
) -> Callable[[], object] | None:
    if not peers.has("langchain_core.messages.utils"):
        return None
    lcm = importlib.import_module("langchain_core.messages")
    utils = importlib.import_module("langchain_core.messages.utils")
    lc_history = lcm.convert_to_messages(to_openai_chat(history))

    def turn() -> object:
        lc_history.extend(lcm.convert_to_messages(json.loads(raw(nxt()))))
        window = lcm.trim_messages(
            lc_history,
            max_tokens=BUDGET,
            token_counter=utils.count_tokens_approximately,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        return lcm.convert_to_openai_messages(window)

    return turn


def _agentix_plain(turns: int, nxt: Callable[[], int]) -> Callable[[], object] | None:
    if not peers.has("agentix.context"):
        return None
    types = importlib.import_module("agentix.types")
    ctx = importlib.import_module("agentix.context")
    build = peers.agentix_turn_builder(types)
    history = [types.Message(types.Role.SYSTEM, SYSTEM)]
    for i in range(turns):
        history.extend(build(i))
    fit = ctx.FitContextWindow(BUDGET)

    def turn() -> object:
        history.extend(build(nxt()))
        return drive(fit.compact(history))

    return turn


def _sqlite_turn(
    history: list[Message],
    raw: Callable[[int], bytes],
    nxt: Callable[[], int],
    *,
    number: int,
    repeat: int,
) -> float:
    """Best per-turn seconds of the server turn on a SQLite file (NORMAL), in one event loop:
    the store's writes go through its worker thread, so the turn is awaited as a server would."""

    async def go(path: Path) -> float:
        store = await SQLiteContextStore.open(path, "bench", synchronous="NORMAL")
        try:
            await store.append_many(history)
            fit = FitContextWindow(BUDGET)
            fit.apply(await store.load_log())  # the first load reads the history once
            best = float("inf")
            for _ in range(repeat):
                with paused_gc():  # as for every other sample
                    start = time.perf_counter()
                    for _ in range(number):
                        messages = from_openai_chat(json.loads(raw(nxt())))
                        await store.append_many(messages)
                        to_openai_chat(fit.apply(await store.load_log()))
                    best = min(best, (time.perf_counter() - start) / number)
            return best
        finally:
            await store.close()

    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(go(Path(tmp) / "bench.db"))
