# ruff: noqa: RUF001, RUF003  (the tables print ×)
"""The user-path benchmarks of ``ctxtrim bench``: what an agent server's code runs.

Every workload here builds its messages inside the timed call, as a server receives them
(OpenAI Chat Completions dicts from ``json.loads``, or ``Message`` objects built by the
agent loop), and each side goes through its own documented API:

- **server turn** — 4 provider dicts in → convert → append to the store → an 8k-token
  ``FitContextWindow`` window → provider dicts out for the request. ctxtrim on a
  ``MemoryContextStore`` and on ``SQLiteContextStore(synchronous="NORMAL")`` (whose window
  comes from ``await store.load_log()``); LangChain with its own tools
  (``convert_to_messages``, ``trim_messages`` with ``count_tokens_approximately``,
  ``convert_to_openai_messages``); and ``json.dumps`` of the same window, for scale.
- **plain list** — append 4 new ``Message``s to a list and call
  ``FitContextWindow(8000)(history)``; agentix the same with its own messages and strategy.
- **construction** — the 4 messages of an agent round (task text, tool call, tool result,
  answer), ctxtrim against agentix.
- **conversion** — each provider format both ways, per message, against ``json.loads`` /
  ``json.dumps`` of the same payload (a window's renderings are kept on its messages).

Sizes are messages already stored (1k, 20k, 100k). Histories are built before the clock;
a stateful workload (the history grows by a turn per call) is sampled in interleaved rounds
with its comparison (:func:`ctxtrim.bench._best_interleaved`), the best round reported.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import tempfile
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

from ctxtrim import FitContextWindow, MemoryContextStore, Message
from ctxtrim.formats import (
    from_anthropic,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_openai_chat,
    to_openai_chat_json,
    to_openai_responses,
)
from ctxtrim.messages import drop_caches

__all__ = [
    "CONSTRUCT",
    "CONVERT",
    "PLAIN_LIST",
    "SERVER_TURN",
    "SQLITE_TURN",
    "bench_paths",
    "path_goals",
    "turn_dicts",
    "turn_messages",
]

SERVER_TURN = "OpenAI-chat server turn (dicts in → window dicts out)"
SQLITE_TURN = "the same turn on SQLite (NORMAL)"
PLAIN_LIST = "plain list: append 4 Messages + FitContextWindow(8000)"
CONSTRUCT = "Message construction, 4 kinds"
CONVERT = "provider conversion, per message"

_SYSTEM = "You are a careful coding agent. Use the tools; answer briefly."
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
        {
            "role": "tool",
            "tool_call_id": f"call_{i}",
            "content": "def f(x):\n    return 2 * x\n" * 6,
        },
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


def _drive(coro: Coroutine[Any, Any, Any]) -> Any:
    from ctxtrim.bench import _drive as drive

    return drive(coro)


class _Counter:
    """The next turn number, shared by the sides of a comparison."""

    def __init__(self, start: int) -> None:
        self.n = start

    def __call__(self) -> int:
        self.n += 1
        return self.n


def _sizes(smoke: bool) -> tuple[int, ...]:
    return (200, 800) if smoke else (1_000, 20_000, 100_000)


def bench_paths(rows: list[Any], *, smoke: bool = False, repeat: int = 7) -> None:
    """Append the user-path rows (see the module docs) to ``rows`` (``ctxtrim.bench.Row``)."""
    from ctxtrim.bench import Row, _best_interleaved, _sampler

    for size in _sizes(smoke):
        _bench_size(rows, size, smoke=smoke, repeat=repeat)
    # construction, 4 kinds
    k = _Counter(0)
    samplers = {"ctxtrim Message": _sampler(lambda: turn_messages(k()), number=200)}
    ax_build = _agentix_build(k)
    if ax_build is not None:
        samplers["agentix Message"] = _sampler(ax_build, number=200)
    for impl, seconds in _best_interleaved(samplers, repeat=repeat).items():
        rows.append(Row(CONSTRUCT, "4 messages", impl, seconds))
    _bench_conversion(rows, repeat=repeat, smoke=smoke)


def _bench_size(rows: list[Any], size: int, *, smoke: bool, repeat: int) -> None:
    """The server turn (memory, SQLite, LangChain) and the plain list at ``size`` messages."""
    from ctxtrim.bench import BUDGET, Row, _best_interleaved, _sampler

    number = 3 if smoke else 20
    slow = 2 if smoke else 5  # calls per sample for the O(n) peers
    label = f"{size:,} messages"
    turns = size // 4
    nxt = _Counter(turns)
    # The request bodies as they arrive (JSON), made before the clock.
    bodies = {i: json.dumps(turn_dicts(i)).encode() for i in range(turns, turns + 4_000)}
    raw = bodies.__getitem__

    # server turn: ctxtrim (memory store), LangChain, json.dumps of the window
    history = [Message.system(_SYSTEM)] + [m for i in range(turns) for m in turn_messages(i)]
    store = _drive(MemoryContextStore.from_history(history))
    fit = FitContextWindow(BUDGET)

    def ctxtrim_turn() -> object:
        messages = from_openai_chat(json.loads(raw(nxt())))
        _drive(store.append_many(messages))
        return to_openai_chat(fit.apply(store))

    window = to_openai_chat(fit.apply(store))
    samplers: dict[str, Callable[[], float]] = {
        "ctxtrim MemoryContextStore": _sampler(ctxtrim_turn, number=number),
        "json.dumps of the window (scale)": _sampler(lambda: json.dumps(window), number=number),
    }
    lc = _langchain_turn(history, raw, nxt, BUDGET)
    if lc is not None:
        samplers["LangChain (convert, trim_messages, convert back)"] = _sampler(lc, number=slow)
    for impl, seconds in _best_interleaved(samplers, repeat=repeat).items():
        rows.append(Row(SERVER_TURN, label, impl, seconds))
    if lc is None:
        rows.append(Row(SERVER_TURN, label, "LangChain", None, note="langchain-core missing"))

    # the same turn on SQLite (NORMAL): the window from load_log (cached, O(new))
    seconds = _sqlite_turn(history, raw, nxt, BUDGET, number=number, repeat=max(3, repeat // 2))
    rows.append(Row(SQLITE_TURN, label, "ctxtrim SQLiteContextStore", seconds))

    # plain list: append 4 Messages, fit the list
    plain = list(history)
    fit_list = FitContextWindow(BUDGET)

    def ctxtrim_plain() -> object:
        plain.extend(turn_messages(nxt()))
        return fit_list(plain)

    samplers = {"ctxtrim FitContextWindow on a list": _sampler(ctxtrim_plain, number=number)}
    ax = _agentix_plain(turns, nxt, BUDGET)
    if ax is not None:
        samplers["agentix FitContextWindow"] = _sampler(ax, number=slow)
    for impl, seconds in _best_interleaved(samplers, repeat=repeat).items():
        rows.append(Row(PLAIN_LIST, label, impl, seconds))
    if ax is None:
        rows.append(Row(PLAIN_LIST, label, "agentix", None, note="agentix-toolkit missing"))


def _bench_conversion(rows: list[Any], *, repeat: int, smoke: bool) -> None:
    """Per message, each format both ways, against json.loads / json.dumps of the payload."""
    from ctxtrim.bench import Row, _best, _best_interleaved, _sampler

    messages = [Message.system(_SYSTEM)] + [m for i in range(50) for m in turn_messages(i)]
    n = len(messages)
    number = 3 if smoke else 30
    for name, to, back in (
        ("OpenAI Chat", to_openai_chat, from_openai_chat),
        ("OpenAI Responses", to_openai_responses, from_openai_responses),
        ("Anthropic", to_anthropic, from_anthropic),
    ):
        payload = to(messages)
        text = json.dumps(payload)
        fresh = [Message.decode(m.encode()) for m in messages]  # never rendered yet
        from_side = _best_interleaved(
            {
                "ctxtrim from_*": _sampler(partial(_parse, back, text), number=number),
                "json.loads of the payload": _sampler(partial(json.loads, text), number=number),
            },
            repeat=repeat,
        )
        to_side = _best_interleaved(
            {
                "ctxtrim to_*, kept renderings": _sampler(partial(to, messages), number=number),
                "ctxtrim to_*, first rendering": _sampler(
                    partial(_first_render, to, fresh), number=number
                ),
                "json.dumps of the payload": _sampler(partial(json.dumps, payload), number=number),
            },
            repeat=repeat,
        )
        if name == "OpenAI Chat":
            to_side["ctxtrim to_openai_chat_json (bytes)"] = _best(
                partial(to_openai_chat_json, messages), number=number, repeat=repeat
            )
        for side, best in ((f"{name}: from", from_side), (f"{name}: to", to_side)):
            for impl, seconds in best.items():
                rows.append(Row(CONVERT, side, impl, seconds / n))


def _parse(back: Callable[[Any], list[Message]], text: str) -> list[Message]:
    return back(json.loads(text))


def _first_render(to: Callable[[list[Message]], Any], fresh: list[Message]) -> Any:
    for m in fresh:  # drop the kept renderings (and facts): time the conversion itself
        drop_caches(m)
    return to(fresh)


def _langchain_turn(
    history: list[Message], raw: Callable[[int], bytes], nxt: Callable[[], int], budget: int
) -> Callable[[], object] | None:
    try:
        lcm = importlib.import_module("langchain_core.messages")
        utils = importlib.import_module("langchain_core.messages.utils")
    except ImportError:
        return None
    lc_history = lcm.convert_to_messages(to_openai_chat(history))

    def turn() -> object:
        lc_history.extend(lcm.convert_to_messages(json.loads(raw(nxt()))))
        window = lcm.trim_messages(
            lc_history,
            max_tokens=budget,
            token_counter=utils.count_tokens_approximately,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        return lcm.convert_to_openai_messages(window)

    return turn


def _agentix_plain(turns: int, nxt: Callable[[], int], budget: int) -> Callable[[], object] | None:
    try:
        types = importlib.import_module("agentix.types")
        ctx = importlib.import_module("agentix.context")
    except ImportError:
        return None
    build = _agentix_turn(types)
    history = [types.Message(types.Role.SYSTEM, _SYSTEM)]
    for i in range(turns):
        history.extend(build(i))
    fit = ctx.FitContextWindow(budget)

    def turn() -> object:
        history.extend(build(nxt()))
        return _drive(fit.compact(history))

    return turn


def _agentix_build(k: Callable[[], int]) -> Callable[[], object] | None:
    try:
        types = importlib.import_module("agentix.types")
    except ImportError:
        return None
    build = _agentix_turn(types)
    return lambda: build(k())


def _agentix_turn(types: Any) -> Callable[[int], list[Any]]:
    role, msg, call = types.Role, types.Message, types.ToolCall

    def build(i: int) -> list[Any]:
        return [
            msg(role.USER, f"Please look at file number {i} and say what it does.", trusted=True),
            msg(
                role.ASSISTANT,
                "",
                meta={"tool_calls": [call("read_file", {"path": f"/src/m{i}.py"}, f"call_{i}")]},
            ),
            msg(
                role.TOOL,
                "def f(x):\n    return 2 * x\n" * 6,
                name="read_file",
                meta={"call_id": f"call_{i}"},
            ),
            msg(role.ASSISTANT, f"File {i} defines f, which doubles its input. " * 3),
        ]

    return build


def _sqlite_turn(
    history: list[Message],
    raw: Callable[[int], bytes],
    nxt: Callable[[], int],
    budget: int,
    *,
    number: int,
    repeat: int,
) -> float:
    """Best per-turn seconds of the server turn on a SQLite file (NORMAL), in one event loop:
    the store's writes go through its worker thread, so the turn is awaited as a server would."""
    from ctxtrim import SQLiteContextStore

    async def go(path: Path) -> float:
        import gc
        import time

        store = await SQLiteContextStore.open(path, "bench", synchronous="NORMAL")
        try:
            await store.append_many(history)
            fit = FitContextWindow(budget)
            fit.apply(await store.load_log())  # the first load reads the history once
            best = float("inf")
            for _ in range(repeat):
                gc.disable()  # GC paused, as for every other sample
                try:
                    start = time.perf_counter()
                    for _ in range(number):
                        messages = from_openai_chat(json.loads(raw(nxt())))
                        await store.append_many(messages)
                        to_openai_chat(fit.apply(await store.load_log()))
                    best = min(best, (time.perf_counter() - start) / number)
                finally:
                    gc.enable()
            return best
        finally:
            await store.close()

    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(go(Path(tmp) / "bench.db"))


def path_goals(table: Any) -> list[Any]:
    """The user-path goals, checked against a run's rows."""
    from ctxtrim.bench import Goal, _fmt_time

    goals: list[Any] = []

    def seconds(workload: str, size: str, impl: str) -> float | None:
        row = table.find(workload, size, impl)
        return None if row is None else row.seconds

    def at_least(label: str, ours: float | None, theirs: float | None, want: float) -> None:
        if ours is None or theirs is None:
            goals.append(Goal(label, "not measured", None))
        else:
            goals.append(Goal(label, f"{theirs / ours:,.1f}×", theirs / ours >= want))

    def flat(label: str, workload: str, impl: str, limit: float) -> None:
        points = [
            (int(r.size.split()[0].replace(",", "")), r.seconds)
            for r in table.rows
            if r.workload == workload and r.impl == impl and r.seconds
        ]
        if len(points) >= 2:
            points.sort()
            growth = points[-1][1] / points[0][1]
            goals.append(
                Goal(
                    f"{label}: flat within {limit}× from {points[0][0]:,} to {points[-1][0]:,}",
                    f"{_fmt_time(points[0][1])} → {_fmt_time(points[-1][1])} ({growth:.2f}×)",
                    growth <= limit,
                )
            )

    sizes = sorted({r.size for r in table.rows if r.workload == SERVER_TURN}, key=len)
    ours_turn = "ctxtrim MemoryContextStore"
    for size in sizes:
        ours = seconds(SERVER_TURN, size, ours_turn)
        lc = seconds(SERVER_TURN, size, "LangChain (convert, trim_messages, convert back)")
        at_least(f"server turn {size}: ≥ 50× LangChain", ours, lc, 50)
        dumps = seconds(SERVER_TURN, size, "json.dumps of the window (scale)")
        if ours is not None and dumps is not None:
            goals.append(
                Goal(
                    f"server turn {size}: cheaper than json.dumps of the window",
                    f"{_fmt_time(ours)} vs {_fmt_time(dumps)}",
                    ours < dumps,
                )
            )
        at_least(
            f"plain list {size}: ≥ 50× agentix",
            seconds(PLAIN_LIST, size, "ctxtrim FitContextWindow on a list"),
            seconds(PLAIN_LIST, size, "agentix FitContextWindow"),
            50,
        )
    flat("server turn", SERVER_TURN, ours_turn, 1.5)
    flat("server turn on SQLite", SQLITE_TURN, "ctxtrim SQLiteContextStore", 1.5)
    flat("plain list", PLAIN_LIST, "ctxtrim FitContextWindow on a list", 2.0)
    ours = seconds(CONSTRUCT, "4 messages", "ctxtrim Message")
    theirs = seconds(CONSTRUCT, "4 messages", "agentix Message")
    if ours is not None and theirs is not None:
        goals.append(
            Goal(
                "Message construction ≤ agentix",
                f"{_fmt_time(ours)} vs {_fmt_time(theirs)}",
                ours <= theirs,
            )
        )
    for name in ("OpenAI Chat", "OpenAI Responses", "Anthropic"):
        for side, ours_impl, json_impl in (
            ("from", "ctxtrim from_*", "json.loads of the payload"),
            ("to", "ctxtrim to_*, kept renderings", "json.dumps of the payload"),
            ("to", "ctxtrim to_*, first rendering", "json.dumps of the payload"),
        ):
            ours = seconds(CONVERT, f"{name}: {side}", ours_impl)
            base = seconds(CONVERT, f"{name}: {side}", json_impl)
            if ours is None or base is None:
                continue
            what = "first rendering" if "first" in ours_impl else side
            goals.append(
                Goal(
                    f"{name} {what}, per message: ≤ 2× {json_impl.split()[0]}",
                    f"{_fmt_time(ours)} vs {_fmt_time(base)} ({ours / base:.2f}×)",
                    ours <= 2 * base,
                )
            )
    return goals
