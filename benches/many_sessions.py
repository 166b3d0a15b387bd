"""A server's day: N concurrent sessions in one process, each running agent turns.

Run: ``python benches/many_sessions.py [--sizes 100,1000,10000] [--turns 3]``.

Every session is one store opened the README's way (``open(path, session_id)`` per
conversation on one file; ``MemoryContextStore()`` per conversation) and first gets
``--seed-turns`` turns of history and one warm-up turn (not timed). Then all sessions run
``--turns`` agent turns at once, as concurrent tasks on one event loop. A turn appends 4
messages (the user's request, an assistant tool call, its ~1 000-token result, the
assistant's answer) in one ``append_many``, trims the history to 8 000 tokens with
``FitContextWindow`` over ``await store.load_log()`` (over the store itself for the memory
store) and reads the window. openai-agents ``SQLiteSession`` does the same turns in the
same run: ``add_items`` of the 4 items, ``get_items()``, and a newest-first cut at 8 000
estimated tokens.

Reported per backend and N: aggregate turns/s, p50/p99 turn latency, RSS (whole process, at
the end of the run, and its growth during it), the most threads and open file descriptors
seen while it ran, and turns/s against the same backend's one-session rate (a run of
``--single-turns`` turns of one session). Each N is run ``--repeats`` times, each run
paired with a one-session run just before it: the row reports the best of the N runs, and
its ratio is the median over the pairs of N-session turns/s / one-session turns/s, so that
a few seconds' slowdown of a shared VM (it halves a run at times) weighs on one pair, not
on the ratio. The one-session row is the best of all one-session runs. A script, not a
test: the numbers depend on the machine and the disk, so they are reported, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

from ctxtrim import FitContextWindow, MemoryContextStore, Message, SQLiteContextStore

BUDGET = 8_000
RESULT = "r" * 4_000  # a ~1 000-token tool result
ANSWER = "a" * 400
STRATEGY = FitContextWindow(BUDGET)


def turn_messages(i: int) -> list[Message]:
    call = f"t{i}"
    return [
        Message.user(f"step {i}: look at file {i}"),
        Message.assistant("Reading it.", tool_uses=[(call, "read_file", {"path": f"f{i}.py"})]),
        Message.tool_results((call, RESULT)),
        Message.assistant(f"{i} {ANSWER}"),
    ]


def turn_items(i: int) -> list[dict[str, Any]]:
    """The same turn as openai-agents input items."""
    call = f"t{i}"
    return [
        {"role": "user", "content": f"step {i}: look at file {i}"},
        {
            "type": "function_call",
            "call_id": call,
            "name": "read_file",
            "arguments": f'{{"path": "f{i}.py"}}',
        },
        {"type": "function_call_output", "call_id": call, "output": RESULT},
        {"role": "assistant", "content": f"{i} {ANSWER}"},
    ]


def cut_items(items: list[Any]) -> list[Any]:
    """The newest items within the budget (4 characters a token), for SQLiteSession."""
    total, k = 0, len(items)
    while k > 0:
        total += len(str(items[k - 1])) // 4
        if total > BUDGET:
            break
        k -= 1
    return items[k:]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class Session(NamedTuple):
    """One backend's open session: ``await turn(handle, i)`` runs one timed agent turn.

    The turns are module-level functions and the handle is the store itself, so the
    benchmark adds one small tuple per session to what the cyclic GC walks (closures would
    add four objects): at 10,000 sessions the full collections the running tasks set off walk
    every live object, and the benchmark should not be the larger part of them.
    """

    handle: Any
    turn: Callable[[Any, int], Awaitable[None]]
    close: Callable[[Any], Awaitable[None]]


async def memory_turn(store: MemoryContextStore, i: int) -> None:
    await store.append_many(turn_messages(i))
    assert STRATEGY.apply(store)


async def store_close(store: Any) -> None:
    await store.close()


async def memory_session(directory: Path, name: str, seed: list[Message], **_: Any) -> Session:
    store = MemoryContextStore()
    await store.append_many(seed)
    return Session(store, memory_turn, store_close)


async def sqlite_turn(store: SQLiteContextStore, i: int) -> None:
    await store.append_many(turn_messages(i))
    assert STRATEGY.apply(await store.load_log())


def sqlite_session(synchronous: str) -> Callable[..., Awaitable[Session]]:
    async def make(directory: Path, name: str, seed: list[Message], **_: Any) -> Session:
        path = directory / f"day-{synchronous}.db"
        store = await SQLiteContextStore.open(path, name, synchronous=synchronous)  # type: ignore[arg-type]
        await store.append_many(seed)
        await store.load_log()  # a live session has read its history once already
        return Session(store, sqlite_turn, store_close)

    return make


async def agents_turn(session: Any, i: int) -> None:
    await session.add_items(turn_items(i))
    assert cut_items(await session.get_items())


async def agents_close(session: Any) -> None:
    session.close()


async def agents_session(
    directory: Path, name: str, seed: list[Message], *, seed_items: list[Any]
) -> Session:
    from agents import SQLiteSession

    session = SQLiteSession(name, directory / "day-agents.db")
    await session.add_items(seed_items)
    return Session(session, agents_turn, agents_close)


BACKENDS: dict[str, Callable[..., Awaitable[Session]]] = {
    "MemoryContextStore": memory_session,
    "SQLite NORMAL": sqlite_session("NORMAL"),
    "SQLite FULL": sqlite_session("FULL"),
    "openai-agents SQLiteSession": agents_session,
}


async def run(
    backend: str, n: int, turns: int, seed_turns: int, directory: Path, gc_off: bool = False
) -> dict[str, float]:
    make = BACKENDS[backend]
    seed = [m for i in range(seed_turns) for m in turn_messages(i)]
    seed_items = [it for i in range(seed_turns) for it in turn_items(i)]
    gc.collect()
    rss0 = rss_mb()
    sessions: list[Session] = []
    for start in range(0, n, 500):  # open and seed in slices (bounded concurrency)
        sessions += await asyncio.gather(
            *(
                make(directory, f"s{k}", seed, seed_items=seed_items)
                for k in range(start, min(n, start + 500))
            )
        )
    # One untimed turn each: first calls (imports, caches, the worker thread) are not a
    # server's steady state.
    for start in range(0, n, 500):
        await asyncio.gather(*(s.turn(s.handle, seed_turns) for s in sessions[start : start + 500]))
    peak = {"threads": threading.active_count(), "fds": fds()}
    done = asyncio.Event()

    async def sample() -> None:
        while not done.is_set():
            peak["threads"] = max(peak["threads"], threading.active_count())
            peak["fds"] = max(peak["fds"], fds())
            await asyncio.sleep(0.05)

    latencies: list[float] = []

    async def drive(session: Session) -> None:
        for t in range(turns):
            began = time.perf_counter()
            await session.turn(session.handle, seed_turns + 1 + t)
            latencies.append(time.perf_counter() - began)

    sampler = asyncio.create_task(sample())
    if gc_off:  # a diagnostic: how much of the time is Python's cyclic GC
        gc.disable()
    began = time.perf_counter()
    try:
        await asyncio.gather(*(drive(s) for s in sessions))
    finally:
        gc.enable()
    wall = time.perf_counter() - began
    done.set()
    await sampler
    rss = rss_mb()
    for s in sessions:
        await s.close(s.handle)
    latencies.sort()
    return {
        "turns_per_s": n * turns / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "rss_mb": rss,
        "rss_growth_mb": rss - rss0,
        "threads": peak["threads"],
        "fds": peak["fds"],
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--turns", type=int, default=3, help="timed turns per session")
    parser.add_argument("--seed-turns", type=int, default=6, help="history before timing")
    parser.add_argument("--single-turns", type=int, default=300, help="turns of the 1-session run")
    parser.add_argument(
        "--single-repeats", type=int, default=1, help="1-session runs before the paired ones"
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="runs of each N, each with a 1-session run"
    )
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument(
        "--gc-off", action="store_true", help="diagnostic: the cyclic GC off while timing"
    )
    parser.add_argument(
        "--agents-max",
        type=int,
        default=1000,
        help="largest N for SQLiteSession (it keeps a connection per session and thread)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            parser.error(f"unknown backend {b!r}; known: {', '.join(BACKENDS)}")
    print(
        f"{len(sizes)} sizes x {len(backends)} backends; {args.turns} timed turns per session"
        f" after {args.seed_turns} seeded; {args.repeats} runs of each N, each paired with a"
        f" one-session run of {args.single_turns} turns (ratio: median over the pairs)"
        + ("; cyclic GC off while timing" if args.gc_off else "")
    )
    print(
        "| backend | sessions | turns/s | vs 1 session | p50 ms | p99 ms | p99/p50 |"
        " RSS MB (growth) | threads | fds |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for backend in backends:
        if backend.startswith("openai-agents"):
            try:
                import agents  # noqa: F401
            except ImportError:
                print(f"| {backend} | skipped: openai-agents is not installed |")
                continue

        # The one-session rate is the denominator of every ratio. On a shared VM a run can
        # be slowed by half for seconds at a time, so each run of N sessions is paired with a
        # one-session run just before it, and the ratio is the median over the pairs (a burst
        # that slows one run of a pair shows in one pair only).
        async def one_session(backend: str = backend) -> dict[str, float]:
            with tempfile.TemporaryDirectory() as d:
                return await run(
                    backend, 1, args.single_turns, args.seed_turns, Path(d), args.gc_off
                )

        singles = [await one_session() for _ in range(args.single_repeats)]
        rows: list[tuple[int, dict[str, float], float]] = []
        skipped: list[str] = []
        for n in sizes:
            if backend.startswith("openai-agents") and n > args.agents_max:
                skipped.append(f"| {backend} | {n} | skipped (> --agents-max {args.agents_max}) |")
                continue
            pairs = []
            for _ in range(args.repeats):
                single = await one_session()
                singles.append(single)
                with tempfile.TemporaryDirectory() as d:
                    result = await run(
                        backend, n, args.turns, args.seed_turns, Path(d), args.gc_off
                    )
                pairs.append((single, result))
            best = max((r for _, r in pairs), key=lambda r: r["turns_per_s"])
            ratio = statistics.median(r["turns_per_s"] / s["turns_per_s"] for s, r in pairs)
            rows.append((n, best, ratio))
        rows.insert(0, (1, max(singles, key=lambda r: r["turns_per_s"]), 1.0))
        for n, r, ratio in rows:
            print(
                f"| {backend} | {n} | {r['turns_per_s']:,.0f} | {ratio:.2f} |"
                f" {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['p99_ms'] / r['p50_ms']:.1f} |"
                f" {r['rss_mb']:,.0f} ({r['rss_growth_mb']:+,.0f}) | {r['threads']:.0f} |"
                f" {r['fds']:.0f} |",
                flush=True,
            )
        for line in skipped:
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
