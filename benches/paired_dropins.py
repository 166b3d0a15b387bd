"""The drop-ins whose originals are a plain slice, timed in pairs against them.

Run: ``python benches/paired_dropins.py [--sizes 1000,10000,50000] [--rounds 200]`` (after
``maturin develop --release``).

autogen's ``Buffered``/``HeadAndTail`` ``get_messages()`` and openai-agents'
``SQLiteSession.get_items(100)`` cost tens to hundreds of µs, and a 2-core VM can run slow
by half for seconds at a time: a pytest-benchmark run of one side, then of the other, can
land one of them wholly in a slow stretch (``test_bench_dropins.py`` gave Buffered at 1k
messages 1.5 times the original in one run and 2.7 times in the next). Here both sides live in one
process and take turns: each round appends one round of messages to both (untimed), then
times the original's call and the drop-in's, in alternating order. Reported per row: the
median of each side's times and the median of the per-round ratios, so a slow stretch
slows both sides of the rounds it covers. A script, not a test: measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_bench_dropins import (
    _autogen_round,
    _item_round,
    _rounds,
    _summarization_turn,
)

#: One side of a pair: ``grow()`` appends a round (untimed), ``call()`` is what is timed.
Side = tuple[Callable[[], None], Callable[[], Any], Callable[[], None]]


def _autogen(kind: str, impl: str, n: int, loop: asyncio.AbstractEventLoop) -> Side:
    import autogen_core.model_context as peer

    from ctxtrim.integrations import autogen as ours

    mod: Any = peer if impl == "original" else ours
    args: dict[str, Any] = {
        "Buffered": {"buffer_size": 200},
        "HeadAndTail": {"head_size": 2, "tail_size": 200},
    }[kind]
    ctx = getattr(mod, f"{kind}ChatCompletionContext")(**args)
    history, grow_history = _rounds(_autogen_round, n)
    ctx._messages = list(history)

    def grow() -> None:
        k = len(history)
        grow_history()
        for m in history[k:]:
            loop.run_until_complete(ctx.add_message(m))

    return grow, lambda: loop.run_until_complete(ctx.get_messages()), lambda: None


def _get_items(impl: str, n: int, loop: asyncio.AbstractEventLoop, where: Path) -> Side:
    from ctxtrim import SQLiteContextStore
    from ctxtrim.integrations.openai_agents import CtxtrimSession

    store = None
    if impl == "original":
        from agents import SQLiteSession

        session: Any = SQLiteSession("bench", where / "theirs.db")
    elif impl == "ctxtrim":
        session = CtxtrimSession("bench", where / "ours.db")  # SQLiteSession's tables
    else:  # "ctxtrim store": CtxtrimSession on ctxtrim's SQLite store
        store = loop.run_until_complete(SQLiteContextStore.open(where / "store.db", "bench"))
        session = CtxtrimSession(store)
    history, grow_history = _rounds(_item_round, n)
    loop.run_until_complete(session.add_items(history))

    def grow() -> None:
        k = len(history)
        grow_history()
        loop.run_until_complete(session.add_items(history[k:]))

    def close() -> None:
        session.close()
        if store is not None:
            loop.run_until_complete(store.close())

    return grow, lambda: loop.run_until_complete(session.get_items(100)), close


def _summarization(impl: str, n: int) -> Side:
    """``SummarizationMiddleware.before_model`` on the common turn (no summary due)."""
    grow, call = _summarization_turn(impl == "original", n)
    return grow, call, lambda: None


def paired(original: Side, ours: Side, rounds: int) -> tuple[float, float, float]:
    """``(original median s, ctxtrim median s, median of per-round ratios)``."""
    sides = (original, ours)
    for _, call, _ in sides:
        call()  # the first call, untimed (it builds the drop-in's mirror)
    times: tuple[list[float], list[float]] = ([], [])
    for r in range(rounds):
        for grow, _, _ in sides:
            grow()
        order = (0, 1) if r % 2 == 0 else (1, 0)
        for i in order:
            began = time.perf_counter()
            sides[i][1]()
            times[i].append(time.perf_counter() - began)
    for _, _, close in sides:
        close()
    ratios = [b / a for a, b in zip(*times, strict=True)]
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)


#: Each row: the drop-in, and which ctxtrim side it times.
ROWS = {
    "autogen Buffered(200)": "ctxtrim",
    "autogen HeadAndTail(2, 200)": "ctxtrim",
    "openai-agents get_items(100)": "ctxtrim",  # CtxtrimSession(session_id, db_path)
    "get_items(100), ctxtrim store": "ctxtrim store",  # CtxtrimSession(SQLite store)
    "langchain SummarizationMiddleware": "ctxtrim",  # before_model, no summary due
}


def side(row: str, impl: str, n: int, loop: asyncio.AbstractEventLoop, tmp: Path) -> Side:
    if row.startswith("autogen"):
        return _autogen(row.split()[1].split("(")[0], impl, n, loop)
    if row.startswith("langchain"):
        return _summarization(impl, n)
    return _get_items(impl, n, loop, Path(tempfile.mkdtemp(dir=tmp)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--rows", default="", help="only the rows whose name contains this")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'drop-in':30} {'messages':>8} {'original µs':>12} {'ctxtrim µs':>11} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for row, ours in ROWS.items():
                if args.rows not in row:
                    continue
                loop = asyncio.new_event_loop()
                try:
                    a, b, ratio = paired(
                        side(row, "original", n, loop, Path(tmp)),
                        side(row, ours, n, loop, Path(tmp)),
                        args.rounds,
                    )
                finally:
                    loop.close()
                print(f"{row:30} {n:>8} {a * 1e6:>12.1f} {b * 1e6:>11.1f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
