"""Bytes per log entry: what a session's history costs beyond its messages.

Run: ``python benches/entry_memory.py [--sessions 10000] [--messages 50]``.

Two cases, each measured as the growth of the whole heap (glibc's ``mallinfo2``, with
``PYTHONMALLOC=malloc`` so that Python's objects are in it too; the script re-runs itself so)
divided by the entries held, split into Python's part (``tracemalloc``) and the rest, the
Rust core's (it allocates with the system allocator, which ``tracemalloc`` does not see):

* **Memory store, shared messages.** ``--sessions`` ``MemoryContextStore``\\ s each holding
  the same ``--messages`` agent-turn messages (read once, as a live session is), so the
  message objects are paid once and what is measured is the log itself: the entry record,
  the boundary index, the read mirror. A Python list of the same messages is the baseline.
* **SQLite cached logs.** ``--sessions`` ÷ 10 ``SQLiteContextStore``\\ s whose ``load_log``
  cache holds their own ``--messages`` messages, decoded from the file: the message objects
  are each session's own, so this is the memory a server's cached logs cost per message,
  beside the stored size (JSON bytes) the cache bound (``ctxtrim.stores.log_caches``)
  counts.

A script, not a test: the numbers depend on the allocator and the platform (glibc only).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import os
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from many_sessions import turn_messages

from ctxtrim import FitContextWindow, MemoryContextStore, SQLiteContextStore
from ctxtrim.stores import log_caches


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


def _native_bytes() -> int:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


class Heap:
    """Python and native (everything else) heap growth since construction.

    ``tracemalloc``'s own bookkeeping (a trace record per live Python block, in the same
    heap) is not the measured objects' memory: its growth is taken out of the native part."""

    def __init__(self) -> None:
        gc.collect()
        self.python = tracemalloc.get_traced_memory()[0]
        self.tracing = tracemalloc.get_tracemalloc_memory()
        self.total = _native_bytes()

    def growth(self) -> tuple[int, int]:
        gc.collect()
        python = tracemalloc.get_traced_memory()[0] - self.python
        tracing = tracemalloc.get_tracemalloc_memory() - self.tracing
        return python, _native_bytes() - self.total - tracing - python


def history(n: int) -> list:  # type: ignore[type-arg]
    return [m for i in range(n // 4 + 1) for m in turn_messages(i)][:n]


async def memory_store(sessions: int, messages: int) -> None:
    shared = history(messages)
    FitContextWindow(8_000)(shared)  # the facts are read once, as any first trim does
    heap = Heap()
    stores = []
    for _ in range(sessions):
        store = MemoryContextStore()
        await store.append_many(shared)
        FitContextWindow(8_000).apply(store)  # indexed and read, as a live session is
        stores.append(store)
    python, native = heap.growth()
    entries = sessions * messages
    heap = Heap()
    lists = [list(shared) for _ in range(sessions)]
    plain = sum(heap.growth())
    print(
        f"| MemoryContextStore, shared messages | {sessions:,} x {messages} |"
        f" {python / entries:.0f} | {native / entries:.0f} | {(python + native) / entries:.0f}"
        f" | {plain / entries:.0f} (a list) |"
    )
    del stores, lists


async def sqlite_cache(sessions: int, messages: int, directory: Path) -> None:
    own = history(messages)
    path = directory / "entries.db"
    stores = [await SQLiteContextStore.open(path, f"s{k}") for k in range(sessions)]
    for store in stores:
        await store.append_many(own)
    heap = Heap()
    held = log_caches.held_bytes
    for store in stores:
        FitContextWindow(8_000).apply(await store.load_log())
    python, native = heap.growth()
    entries = sessions * messages
    stored = (log_caches.held_bytes - held) / entries
    print(
        f"| SQLite cached logs, own messages | {sessions:,} x {messages} |"
        f" {python / entries:.0f} | {native / entries:.0f} | {(python + native) / entries:.0f}"
        f" | {stored:.0f} (stored JSON) |"
    )
    for store in stores:
        await store.close()


async def main() -> None:
    if os.environ.get("PYTHONMALLOC") != "malloc":  # every allocation in one heap: re-run
        env = {**os.environ, "PYTHONMALLOC": "malloc"}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=50)
    args = parser.parse_args()
    tracemalloc.start()
    print("| case | sessions x messages | Python B/entry | native B/entry | total | baseline |")
    print("|---|---:|---:|---:|---:|---:|")
    await memory_store(args.sessions, args.messages)
    with tempfile.TemporaryDirectory() as d:
        await sqlite_cache(max(1, args.sessions // 10), args.messages, Path(d))


if __name__ == "__main__":
    asyncio.run(main())
