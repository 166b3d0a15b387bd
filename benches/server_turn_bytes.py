"""The OpenAI-chat server turn on bytes, against orjson's round trip of the same data.

Per turn, 4 new Chat Completions messages arrive as one JSON body (~1 KB); the server reads
them, appends them to the session's history, fits an 8k-token window and writes the
request's ``messages`` array as JSON bytes. Rows (one run, sides sampled in interleaved
rounds, best sample of each, µs per turn):

- ``json.loads + from_openai_chat, store``: the documented path before bytes were read in
  the core (``json.loads`` → ``from_openai_chat`` → ``store.append_many`` →
  ``FitContextWindow(8000).apply(store)`` → ``to_openai_chat_json``);
- ``from_openai_chat_json, store``: the same with the body read from its bytes in the core;
- ``..., list``: the same two on a plain list (``list.extend``, the strategy called on the
  list), the store's own cost being the difference;
- ``..., a new fork of the store``: the turn on ``await store.fork()`` made just before it
  (a retry or a branch), so every sample is a fork's first trim;
- ``orjson floor``: ``orjson.loads`` of the body + ``orjson.dumps`` of the same window's
  dicts (no trimming at all), the goal's yardstick.

Run: ``python benches/server_turn_bytes.py [--sizes 1000,100000] [--repeat 9]``. orjson comes
with the ``bench`` extra (a contender only). ``--profile N`` instead runs N turns of the
store path at the first size under cProfile and prints the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
from collections.abc import Callable

from ctxtrim import FitContextWindow, MemoryContextStore, Message
from ctxtrim.bench.history import BUDGET
from ctxtrim.bench.paths import SYSTEM, turn_dicts, turn_messages
from ctxtrim.bench.timing import best_interleaved, drive, sampler
from ctxtrim.formats import from_openai_chat, to_openai_chat, to_openai_chat_json

try:
    from ctxtrim.formats import from_openai_chat_json
except ImportError:  # a build before it: only the dicts path and the floor
    from_openai_chat_json = None  # type: ignore[assignment]


def _setup(size: int) -> tuple[list[Message], Callable[[], bytes]]:
    turns = size // 4
    history = [Message.system(SYSTEM)] + [m for i in range(turns) for m in turn_messages(i)]
    bodies = [json.dumps(turn_dicts(i)).encode() for i in range(turns, turns + 20_000)]
    it = iter(bodies)
    return history, it.__next__


def _bench(size: int, repeat: int, number: int) -> dict[str, float]:
    import orjson

    history, body = _setup(size)
    store = drive(MemoryContextStore.from_history(history))
    plain = list(history)
    fit_store, fit_list, fit_fork = (FitContextWindow(BUDGET) for _ in range(3))
    # Every side renders its window once before the clock (a server's steady state).
    to_openai_chat_json(fit_store.apply(store))
    to_openai_chat_json(fit_list(plain))
    window = to_openai_chat(fit_list(plain))

    def old() -> bytes:
        drive(store.append_many(from_openai_chat(json.loads(body()))))
        return to_openai_chat_json(fit_store.apply(store))

    def new() -> bytes:
        drive(store.append_many(from_openai_chat_json(body())))
        return to_openai_chat_json(fit_store.apply(store))

    def forked() -> bytes:
        # A retry or a branch: the turn on a fork of the session made just before it.
        branch = drive(store.fork())
        drive(branch.append_many(from_openai_chat_json(body())))
        return to_openai_chat_json(fit_fork.apply(branch))

    def listed() -> bytes:
        plain.extend(from_openai_chat_json(body()))
        return to_openai_chat_json(fit_list(plain))

    def listed_dicts() -> bytes:
        plain.extend(from_openai_chat(json.loads(body())))
        return to_openai_chat_json(fit_list(plain))

    def floor() -> bytes:
        orjson.loads(body())
        return orjson.dumps(window)

    samplers = {
        "json.loads + from_openai_chat, store": sampler(old, number=number),
        "json.loads + from_openai_chat, list": sampler(listed_dicts, number=number),
    }
    if from_openai_chat_json is not None:
        samplers["from_openai_chat_json, store"] = sampler(new, number=number)
        samplers["from_openai_chat_json, list"] = sampler(listed, number=number)
        samplers["from_openai_chat_json, a new fork of the store"] = sampler(forked, number=number)
    samplers["orjson floor (loads new + dumps window)"] = sampler(floor, number=number)
    print(
        f"# {size:,} messages: window {len(window)} messages, {len(orjson.dumps(window)):,} bytes",
        file=sys.stderr,
    )
    return best_interleaved(samplers, repeat=repeat)


def _profile(size: int, turns: int) -> None:
    history, body = _setup(size)
    store = drive(MemoryContextStore.from_history(history))
    fit = FitContextWindow(BUDGET)
    to_openai_chat_json(fit.apply(store))

    def run() -> None:
        for _ in range(turns):
            drive(store.append_many(from_openai_chat(json.loads(body()))))
            to_openai_chat_json(fit.apply(store))

    prof = cProfile.Profile()
    prof.runcall(run)
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.profile:
        _profile(sizes[0], args.profile)
        return
    print("| stored messages | path | µs per turn | / orjson floor |")
    print("|---|---|---:|---:|")
    for size in sizes:
        times = _bench(size, args.repeat, args.number)
        floor = times["orjson floor (loads new + dumps window)"]
        for name, seconds in times.items():
            print(f"| {size:,} | {name} | {seconds * 1e6:.1f} | {seconds / floor:.2f}x |")


if __name__ == "__main__":
    main()
