"""SQLiteContextStore: append latency at 100 vs 10 000 messages, reads and fork at 10 000.

Run: ``python benches/sqlite_store.py [--messages 10000] [--appends 200]``. Prints one line
per measurement. A script, not a test: the numbers depend on the disk (``synchronous=FULL``
fsyncs every commit), so they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from ctxtrim import Message, SQLiteContextStore

BODY = "x" * 1000  # ~1 KB messages, a typical tool result


def message(i: int) -> Message:
    return Message.user(f"{i} {BODY}", id=f"m{i}")


async def append_latency(store: SQLiteContextStore, start: int, count: int) -> float:
    """Median seconds per single-message append (one transaction each)."""
    times = []
    for i in range(start, start + count):
        t = time.perf_counter()
        await store.append(message(i))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def run(directory: Path, synchronous: str, n: int, appends: int) -> None:
    path = directory / f"bench-{synchronous}.db"
    async with await SQLiteContextStore.open(path, "s", synchronous=synchronous) as store:  # type: ignore[arg-type]
        await store.append_many([message(i) for i in range(100)])
        small = await append_latency(store, 100, appends)
        have = 100 + appends
        step = 1000
        for start in range(have, n, step):  # grow in batches (one transaction each)
            await store.append_many([message(i) for i in range(start, min(start + step, n))])
        large = await append_latency(store, n, appends)
        t = time.perf_counter()
        history = await store.get_history()
        read = time.perf_counter() - t
        t = time.perf_counter()
        tail = await store.get_history(limit=50)
        tail_read = time.perf_counter() - t
        t = time.perf_counter()
        fork = await store.fork()
        forked = time.perf_counter() - t
        await fork.close()
        t = time.perf_counter()
        log = await store.load_log()
        loaded = time.perf_counter() - t
    assert len(history) == n + appends and len(tail) == 50 and len(log) == n + appends
    print(
        f"synchronous={synchronous:6} append@100 {small * 1e3:.3f} ms  "
        f"append@{n} {large * 1e3:.3f} ms  ratio {large / small:.2f}  "
        f"get_history()@{n + appends} {read * 1e3:.1f} ms  "
        f"get_history(50) {tail_read * 1e3:.2f} ms  load_log() {loaded * 1e3:.1f} ms  "
        f"fork {forked * 1e3:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for synchronous in ("FULL", "NORMAL"):
            asyncio.run(run(Path(tmp), synchronous, args.messages, args.appends))


if __name__ == "__main__":
    main()
