"""The log's and the memory store's own operations against the Python floors.

- **append one message** (``APPEND``): ``plan.append_count`` appends to a fresh log per
  sample (so it grows from 0), for ``MessageLog.append``, the same with a live fork of
  the log (appends must not copy the shared entries), ``await
  MemoryContextStore.append``, and ``list.append`` as the floor.
- **get_history()** (``GET_HISTORY``): the whole history of ``plan.history_size``
  messages as a list, against a list copy.
- **fork** (``FORK``): ``await MemoryContextStore.fork()`` at each of ``plan.fork_sizes``
  (axio's deep-copy fork is timed in :mod:`ctxtrim.bench.axio`).

The compared sides of append and get_history are sampled in interleaved rounds, best of
``plan.repeat`` (:mod:`ctxtrim.bench.timing`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ctxtrim import MemoryContextStore, Message, MessageLog

from .history import agent_history, ctxtrim_messages
from .plan import Plan
from .report import APPEND, FORK, GET_HISTORY, Row
from .timing import Progress, best, best_interleaved, drive, paused_gc, sampler

__all__ = ["bench_micro", "fork"]


def fork(store: Any) -> object:
    """``await store.fork()``, stepped without an event loop."""
    return drive(store.fork())


def bench_micro(plan: Plan, rows: list[Row], progress: Progress) -> None:
    """Append the ``APPEND``, ``GET_HISTORY`` and ``FORK`` rows to ``rows``."""
    n = plan.history_size
    msgs = ctxtrim_messages(agent_history(n // 4))
    rep = plan.repeat

    # append: a fresh log per sample, so the log grows from 0 to append_count
    count = plan.append_count
    seq = (msgs * (count // len(msgs) + 1))[:count]

    def appends(make: Callable[[], Callable[[Message], object]]) -> Callable[[], float]:
        def sample() -> float:
            add = make()
            with paused_gc():
                start = time.perf_counter()
                for m in seq:
                    add(m)
                return (time.perf_counter() - start) / count

        return sample

    holder: list[MessageLog] = []

    def with_fork() -> Callable[[Message], object]:
        log = MessageLog(msgs[:1000])
        holder.append(log.fork())  # a live fork: appends must not copy the shared entries
        return log.append

    def store_append() -> Callable[[Message], object]:
        store = MemoryContextStore()
        return lambda m: drive(store.append(m))

    def list_append() -> Callable[[Message], object]:
        plain: list[Message] = []
        return plain.append

    size = f"{count:,} appends"
    timed = best_interleaved(
        {
            "ctxtrim MessageLog.append": appends(lambda: MessageLog().append),
            "ctxtrim MessageLog.append, fork alive": appends(with_fork),
            "ctxtrim await MemoryContextStore.append": appends(store_append),
            "Python list.append": appends(list_append),
        },
        repeat=rep,
    )
    rows.extend(Row(APPEND, size, impl, t) for impl, t in timed.items())
    progress.step(APPEND)

    # get_history at n
    log = MessageLog(msgs[:n])
    store = MemoryContextStore(msgs[:n])
    plain = list(msgs[:n])
    size = f"{n:,}"
    number = max(1, 20_000 // max(n // 100, 1))
    timed = best_interleaved(
        {
            "ctxtrim MessageLog.to_list()": sampler(log.to_list, number=number),
            "ctxtrim await MemoryContextStore.get_history()": sampler(
                lambda: drive(store.get_history()), number=number
            ),
            "Python list copy": sampler(plain.copy, number=number),
        },
        repeat=rep,
    )
    rows.extend(Row(GET_HISTORY, size, impl, t) for impl, t in timed.items())
    progress.step(GET_HISTORY)

    for f in plan.fork_sizes:
        big = msgs * (f // len(msgs) + 1)
        fstore = MemoryContextStore(big[:f])
        seconds = best(partial(fork, fstore), number=1000, repeat=rep)
        rows.append(Row(FORK, f"{f:,}", "ctxtrim await MemoryContextStore.fork()", seconds))
        progress.step(f"{FORK} {f:,}")
