"""Persistent stores: the cost of an append and of a full read on SQLite, at two sizes.

A store holding ``n`` messages (``plan.sqlite_sizes``: small, large) appends
``plan.sqlite_appends`` more one at a time, each timed (``SQLITE_APPEND``: the mean),
then reads the whole history once (``SQLITE_READ``). ctxtrim's ``SQLiteContextStore``
(default settings) against openai-agents' ``SQLiteSession``; axio-context-sqlite runs the
same :func:`time_appends` in the Python 3.12 subprocess (:mod:`ctxtrim.bench.axio`).
A flat append time from the small size to the large one is a goal: an append must not
cost more as the session grows.
"""

from __future__ import annotations

import asyncio
import importlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ctxtrim import Message, SQLiteContextStore

from . import peers
from .history import agent_history, ctxtrim_messages
from .plan import Plan
from .report import SQLITE_APPEND, SQLITE_READ, Row
from .timing import Progress

__all__ = ["bench_sqlite", "time_appends"]


async def time_appends(
    append: Callable[[Any], Awaitable[object]],
    read: Callable[[], Awaitable[object]],
    later: Sequence[Any],
) -> tuple[float, float]:
    """The mean seconds of ``await append(item)`` over ``later``, each timed on its own,
    then the seconds of one ``await read()``."""
    lat = []
    for item in later:
        start = time.perf_counter()
        await append(item)
        lat.append(time.perf_counter() - start)
    start = time.perf_counter()
    await read()
    return statistics.fmean(lat), time.perf_counter() - start


def _rows(impl: str, n: int, k: int, times: tuple[float, float], note: str = "") -> list[Row]:
    append, read = times
    return [
        Row(SQLITE_APPEND, f"at {n:,}", impl, append, note=note),
        Row(SQLITE_READ, f"{n + k:,}", impl, read, note=note),
    ]


async def _ctxtrim(path: Path, msgs: list[Message], n: int, k: int) -> list[Row]:
    store = await SQLiteContextStore.open(path, "bench")
    try:
        await store.append_many(msgs[:n])
        times = await time_appends(store.append, store.get_history, msgs[n : n + k])
        return _rows("ctxtrim SQLiteContextStore", n, k, times)
    finally:
        await store.close()


async def _openai_agents(path: Path, items: list[dict[str, Any]], n: int, k: int) -> list[Row]:
    session = importlib.import_module("agents.memory").SQLiteSession("bench", path)
    try:
        await session.add_items(items[:n])

        async def add(item: dict[str, Any]) -> None:
            await session.add_items([item])

        times = await time_appends(add, session.get_items, items[n : n + k])
        return _rows("openai-agents SQLiteSession", n, k, times)
    finally:
        session.close()


def bench_sqlite(plan: Plan, rows: list[Row], progress: Progress) -> None:
    """Append the ``SQLITE_APPEND`` and ``SQLITE_READ`` rows (ctxtrim, openai-agents)."""
    small, large = plan.sqlite_sizes
    k = plan.sqlite_appends
    turns = agent_history(large // 4 + k)
    tmp = Path(tempfile.mkdtemp(prefix="ctxtrim-bench-"))
    try:
        msgs = ctxtrim_messages(turns)
        for n in (small, large):
            rows.extend(asyncio.run(_ctxtrim(tmp / f"ct{n}.db", msgs, n, k)))
        progress.step("SQLite ctxtrim")
        if peers.has("agents.memory"):
            items = peers.openai_items(turns)
            for n in (small, large):
                rows.extend(asyncio.run(_openai_agents(tmp / f"oa{n}.db", items, n, k)))
        else:
            note = "openai-agents not installed"
            impl = "openai-agents SQLiteSession"
            rows.append(Row(SQLITE_APPEND, f"at {small:,}", impl, None, note=note))
        progress.step("SQLite openai-agents")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
