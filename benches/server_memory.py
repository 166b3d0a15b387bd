"""Bytes per stored message on a server's session, against the dicts of the same messages.

Run: ``python benches/server_memory.py [--turns 25000]``.

Each case runs in a fresh interpreter (with ``PYTHONMALLOC=malloc``, so that Python's
objects and the Rust core's allocations are both in glibc's heap) and reports the heap's
growth (``mallinfo2``) per message held:

* **ctxtrim store**: a ``MemoryContextStore`` fed as a server feeds it: per turn, 4 Chat
  Completions messages arrive as one JSON body (``from_openai_chat_json``), are appended,
  ``FitContextWindow(8000)`` is applied and the window written as JSON bytes. What stays is
  the messages, their log entries and whatever is kept on them (facts, renderings).
* **json.loads dicts** / **orjson.loads dicts**: the same bodies' messages as a list of the
  dicts each library makes, the yardstick (the issue's goal: at most the ``json.loads``
  dicts' size).

A script, not a test: the numbers depend on the allocator and the platform (glibc only).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import subprocess
import sys

from ctxtrim.bench.paths import SYSTEM, turn_dicts

CASES = ("ctxtrim store", "json.loads dicts", "orjson.loads dicts")


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _heap() -> int:
    gc.collect()
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


def _measure(case: str, turns: int) -> float:
    """Heap bytes per message held after ``turns`` turns of ``case`` (in this process)."""
    bodies = [json.dumps(turn_dicts(i)).encode() for i in range(turns)]
    held: object
    if case == "ctxtrim store":
        from ctxtrim import FitContextWindow, MemoryContextStore, Message
        from ctxtrim.bench.timing import drive
        from ctxtrim.formats import from_openai_chat_json, to_openai_chat_json

        fit = FitContextWindow(8000)
        before = _heap()
        store = drive(MemoryContextStore.from_history([Message.system(SYSTEM)]))
        for body in bodies:
            drive(store.append_many(from_openai_chat_json(body)))
            to_openai_chat_json(fit.apply(store))
        held = store
    else:
        import orjson

        loads = json.loads if case == "json.loads dicts" else orjson.loads
        before = _heap()
        messages: list[object] = []
        for body in bodies:
            messages.extend(loads(body))
        held = messages
    grown = _heap() - before
    del held
    return grown / (4 * turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=25_000)
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(_measure(args.case, args.turns))
        return
    env = {**os.environ, "PYTHONMALLOC": "malloc"}
    print(f"| {4 * args.turns:,} messages held | bytes per message |")
    print("|---|---:|")
    for case in CASES:
        out = subprocess.run(
            [sys.executable, __file__, "--turns", str(args.turns), "--case", case],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        print(f"| {case} | {float(out):,.0f} |")


if __name__ == "__main__":
    main()
