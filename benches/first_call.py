"""The first call of every framework drop-in over a long history, per message.

Run: ``python benches/first_call.py [--sizes 10000,50000] [--repeats 5]`` (after
``maturin develop --release``).

The per-call benches (``test_bench_dropins.py``) time the steady state: caches warm, one
round appended before each call. This script times what they leave out, the first call a
drop-in makes over a history it has never seen (an agent resumed from a saved
conversation, a context built with ``initial_messages``): for every repeat a fresh history
(new message objects, built the way ``test_bench_dropins.py`` builds them) and a fresh
drop-in, then one timed call. Reported: the best of ``--repeats`` calls, in ms and in µs a
message of the history. A script, not a test: measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from test_bench_dropins import (
    _autogen_round,
    _Client,
    _item_round,
    _langchain_round,
    _pydantic_round,
    _rounds,
)


def _history(make: Callable[[int], list[Any]], n: int) -> list[Any]:
    return _rounds(make, n)[0]


def _langchain(n: int) -> Callable[[], Any]:
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxtrim.integrations.langchain import trim_messages

    history = _history(_langchain_round, n)
    kw = {"max_tokens": 8000, "token_counter": count_tokens_approximately, "strategy": "last"}
    return lambda: trim_messages(history, **kw)


def _autogen(kind: str) -> Callable[[int], Callable[[], Any]]:
    def make(n: int) -> Callable[[], Any]:
        from ctxtrim.integrations import autogen

        args: dict[str, Any] = {
            "Buffered": {"buffer_size": 200},
            "HeadAndTail": {"head_size": 2, "tail_size": 200},
            "TokenLimited": {"model_client": _Client(), "token_limit": 8000},
        }[kind]
        history = _history(_autogen_round, n)
        ctx = getattr(autogen, f"{kind}ChatCompletionContext")(initial_messages=history, **args)
        loop = asyncio.new_event_loop()

        def call() -> Any:
            try:
                return loop.run_until_complete(ctx.get_messages())
            finally:
                loop.close()

        return call

    return make


def _openai_agents(n: int) -> Callable[[], Any]:
    from ctxtrim.integrations.openai_agents import trim_input

    history = _history(_item_round, n)
    callback = trim_input(8000)
    new = [{"role": "user", "content": "next"}]
    return lambda: callback(history, new)


def _pydantic_ai(n: int) -> Callable[[], Any]:
    from ctxtrim.integrations.pydantic_ai import TrimHistory

    history = _history(_pydantic_round, n)
    proc = TrimHistory(8000)
    return lambda: proc(history)


DROPINS: dict[str, Callable[[int], Callable[[], Any]]] = {
    "langchain trim_messages": _langchain,
    "autogen Buffered": _autogen("Buffered"),
    "autogen HeadAndTail": _autogen("HeadAndTail"),
    "autogen TokenLimited": _autogen("TokenLimited"),
    "openai-agents trim_input": _openai_agents,
    "pydantic-ai TrimHistory": _pydantic_ai,
}


def first_call(make: Callable[[int], Callable[[], Any]], n: int, repeats: int) -> float:
    """The best time (s) of ``repeats`` first calls, each on a fresh history and drop-in."""
    best = float("inf")
    for _ in range(repeats):
        call = make(n)
        gc.collect()
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="run the drop-ins whose name has this")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'drop-in':28} {'messages':>8} {'first call ms':>14} {'µs/message':>11}")
    for name, make in DROPINS.items():
        if args.only not in name:
            continue
        for n in sizes:
            try:
                s = first_call(make, n, args.repeats)
            except ImportError as err:
                print(f"{name:28} skipped: {err}")
                break
            print(f"{name:28} {n:>8} {s * 1e3:>14.2f} {s * 1e6 / n:>11.3f}")


if __name__ == "__main__":
    main()
