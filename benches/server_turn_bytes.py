"""The server turn on bytes, against orjson's round trip of the same data, per format.

Per turn, 4 new messages arrive as one JSON body (~1 KB; Chat Completions messages,
Anthropic messages or Responses input items); the server reads them, appends them to the
session's history, fits an 8k-token window and writes the request's JSON bytes. Rows (one
run, sides sampled in interleaved rounds, best sample of each, µs per turn), per format:

- ``json.loads + from_*, store``: the dicts path (``json.loads`` → ``from_*`` →
  ``store.append_many`` → ``FitContextWindow(8000).apply(store)`` → ``to_*_json``);
- ``dicts out, the SDK's serialisation``: the same turn as most SDK users write it, the
  window as dicts (``to_*``) serialised as the official SDKs' HTTP client (httpx) does it,
  ``json.dumps(..., ensure_ascii=False, separators=(",", ":"), allow_nan=False)``; and that
  serialisation of the same window alone, for scale;
- ``from_*_json, store``: the same with the body read from its bytes in the core (for the
  formats that have a bytes reader); ``..., apply_json``: with the request written by
  ``FitContextWindow(8000).apply_json(store, format)``, from the store's last request;
- ``..., list``: the same two on a plain list (``list.extend``, the strategy called on the
  list), the store's own cost being the difference;
- ``..., a new fork of the store``: the turn on ``await store.fork()`` made just before it
  (a retry or a branch), so every sample is a fork's first trim;
- ``orjson floor``: ``orjson.loads`` of the body + ``orjson.dumps`` of the same window's
  dicts (no trimming at all), the goal's yardstick.

Run: ``python benches/server_turn_bytes.py [--formats chat,anthropic,responses]
[--sizes 1000,100000] [--repeat 9]``. orjson comes with the ``bench`` extra (a contender
only). ``--profile N`` instead runs N turns of the Chat store path at the first size under
cProfile and prints the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxtrim import FitContextWindow, MemoryContextStore, Message, formats
from ctxtrim.bench.history import BUDGET
from ctxtrim.bench.paths import SYSTEM, turn_dicts, turn_messages
from ctxtrim.bench.timing import best_interleaved, drive, sampler


@dataclass(frozen=True)
class Format:
    """A provider format's readers and writers, and a turn's body in it."""

    name: str
    key: str  # the format's name for ``apply_json``
    read: Callable[[Any], list[Message]]
    read_json: Callable[[bytes], list[Message]] | None
    write: Callable[[list[Message]], Any]
    write_json: Callable[[list[Message]], bytes]
    body: Callable[[int], Any]  # turn i's new messages as the provider's JSON value


def _format(name: str) -> Format:
    if name == "chat":
        return Format(
            "OpenAI chat",
            "openai",
            formats.from_openai_chat,
            getattr(formats, "from_openai_chat_json", None),
            formats.to_openai_chat,
            formats.to_openai_chat_json,
            turn_dicts,
        )
    if name == "anthropic":
        return Format(
            "Anthropic",
            "anthropic",
            formats.from_anthropic,
            getattr(formats, "from_anthropic_json", None),
            formats.to_anthropic,
            formats.to_anthropic_json,
            lambda i: formats.to_anthropic(turn_messages(i))["messages"],
        )
    if name == "responses":
        return Format(
            "OpenAI Responses",
            "responses",
            formats.from_openai_responses,
            getattr(formats, "from_openai_responses_json", None),
            formats.to_openai_responses,
            formats.to_openai_responses_json,
            lambda i: formats.to_openai_responses(turn_messages(i)),
        )
    raise SystemExit(f"unknown format {name!r}: expected chat, anthropic or responses")


def _setup(size: int, fmt: Format) -> tuple[list[Message], Callable[[], bytes]]:
    turns = size // 4
    history = [Message.system(SYSTEM)] + [m for i in range(turns) for m in turn_messages(i)]
    bodies = [json.dumps(fmt.body(i)).encode() for i in range(turns, turns + 20_000)]
    it = iter(bodies)
    return history, it.__next__


def _bench(size: int, fmt: Format, repeat: int, number: int) -> dict[str, float]:
    import orjson

    history, body = _setup(size, fmt)
    store = drive(MemoryContextStore.from_history(history))
    store_json = drive(MemoryContextStore.from_history(history))
    plain = list(history)
    fit_store, fit_list, fit_fork = (FitContextWindow(BUDGET) for _ in range(3))
    fit_store.apply_json(store_json, fmt.key)
    # Every side renders its window once before the clock (a server's steady state).
    fmt.write_json(fit_store.apply(store))
    fmt.write_json(fit_list(plain))
    window = fmt.write(fit_list(plain))
    read_json = fmt.read_json

    def dicts_store() -> bytes:
        drive(store.append_many(fmt.read(json.loads(body()))))
        return fmt.write_json(fit_store.apply(store))

    def dicts_list() -> bytes:
        plain.extend(fmt.read(json.loads(body())))
        return fmt.write_json(fit_list(plain))

    def sdk_store() -> bytes:
        drive(store.append_many(fmt.read(json.loads(body()))))
        payload = fmt.write(fit_store.apply(store))
        return json.dumps(
            payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()

    def sdk_alone() -> bytes:
        return json.dumps(
            window, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()

    samplers = {
        "json.loads + from_*, store": sampler(dicts_store, number=number),
        "json.loads + from_*, list": sampler(dicts_list, number=number),
        "dicts out, the SDK's serialisation, store": sampler(sdk_store, number=number),
        "the SDK's serialisation of the window alone": sampler(sdk_alone, number=number),
    }
    if read_json is not None:

        def bytes_store() -> bytes:
            drive(store.append_many(read_json(body())))
            return fmt.write_json(fit_store.apply(store))

        def bytes_list() -> bytes:
            plain.extend(read_json(body()))
            return fmt.write_json(fit_list(plain))

        def forked() -> bytes:
            # A retry or a branch: the turn on a fork of the session made just before it.
            branch = drive(store.fork())
            drive(branch.append_many(read_json(body())))
            return fmt.write_json(fit_fork.apply(branch))

        def bytes_apply_json() -> bytes:
            drive(store_json.append_many(read_json(body())))
            return fit_store.apply_json(store_json, fmt.key)

        samplers["from_*_json, store"] = sampler(bytes_store, number=number)
        samplers["from_*_json, store, apply_json"] = sampler(bytes_apply_json, number=number)
        samplers["from_*_json, list"] = sampler(bytes_list, number=number)
        samplers["from_*_json, a new fork of the store"] = sampler(forked, number=number)

    def floor() -> bytes:
        orjson.loads(body())
        return orjson.dumps(window)

    samplers[FLOOR] = sampler(floor, number=number)
    print(
        f"# {fmt.name}, {size:,} messages: window {len(fit_list(plain))} messages, "
        f"{len(orjson.dumps(window)):,} bytes",
        file=sys.stderr,
    )
    return best_interleaved(samplers, repeat=repeat)


FLOOR = "orjson floor (loads new + dumps window)"


def _profile(size: int, turns: int) -> None:
    history, body = _setup(size, _format("chat"))
    store = drive(MemoryContextStore.from_history(history))
    fit = FitContextWindow(BUDGET)
    formats.to_openai_chat_json(fit.apply(store))

    def run() -> None:
        for _ in range(turns):
            drive(store.append_many(formats.from_openai_chat_json(body())))
            formats.to_openai_chat_json(fit.apply(store))

    prof = cProfile.Profile()
    prof.runcall(run)
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formats", default="chat,anthropic,responses")
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.profile:
        _profile(sizes[0], args.profile)
        return
    print("| format | stored messages | path | µs per turn | / orjson floor |")
    print("|---|---|---|---:|---:|")
    for name in args.formats.split(","):
        fmt = _format(name)
        for size in sizes:
            times = _bench(size, fmt, args.repeat, args.number)
            floor = times[FLOOR]
            for path, seconds in times.items():
                print(
                    f"| {fmt.name} | {size:,} | {path} | {seconds * 1e6:.1f} "
                    f"| {seconds / floor:.2f}x |"
                )


if __name__ == "__main__":
    main()
