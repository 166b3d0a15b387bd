"""A persistent store trimmed every turn reads only what was appended since it last looked.

``load_log()`` keeps the log it last read and extends it with the rows appended since, by
this handle or any other (another process); a clear, a compaction or a removed turn moves the
generation, and the next load reads the session whole. Run on every persistent backend.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import FitContextWindow, Message
from ctxtrim.errors import InvalidArgument
from ctxtrim.stores import DEFAULT_LOG_CACHE_BYTES, LogCaches, log_caches
from ctxtrim.stores._common import LogCache

from helpers import agent_session
from store_backends import PERSISTENT_BACKENDS, Backend, opened


def _counting_decodes(store: object, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the payloads the store's modules decode from now on (the store's own module and
    its package's helpers: the SQLite store reads rows in ``_sqlite_db``)."""
    package = type(store).__module__.rpartition(".")[0]
    real = importlib.import_module(type(store).__module__).decode_payload
    seen: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Message:
        seen.append(1)
        return real(*args, **kwargs)  # type: ignore[no-any-return]

    for name, module in list(sys.modules.items()):
        if name.startswith(package + ".") and getattr(module, "decode_payload", None) is real:
            monkeypatch.setattr(module, "decode_payload", counted)
    return seen


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_load_log_reads_only_what_was_appended_since(
    factory: Callable[[Path], Backend], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = factory(tmp_path)
    try:
        async with opened(backend) as store, opened(backend, store.session_id) as other:
            history = agent_session(20)
            await store.append_many(history)
            decoded = _counting_decodes(store, monkeypatch)
            assert (await store.load_log()).to_list() == history
            assert len(decoded) == len(history)

            # Appends by this handle and by another one: this handle's own are taken as it
            # wrote them (the very objects), only the other handle's rows are read.
            more = agent_session(2)[1:]
            await store.append_many(more[:3])
            await other.append_many(more[3:])
            history += more
            del decoded[:]
            log = await store.load_log()
            assert log.to_list() == history and len(decoded) == len(more) - 3
            own = log.to_list()[-len(more) : -3]
            assert all(a is b for a, b in zip(own, more[:3], strict=True))
            assert log.read_only
            fit = FitContextWindow(300)
            assert fit.apply(log) == fit(list(history))

            # Nothing new: nothing read.
            del decoded[:]
            assert (await store.load_log()).to_list() == history and not decoded

            # A rewrite by the other handle moves the generation: read whole again.
            snap = await other.snapshot()
            summary = Message.user("summary of the first 10 messages")
            await other.replace_prefix(10, [summary], snap.generation)
            history = [summary, *history[10:]]
            del decoded[:]
            assert (await store.load_log()).to_list() == history
            assert len(decoded) == len(history)

            # A rewrite that leaves the session longer than the cached log: still read whole.
            snap = await other.snapshot()
            grown = [Message.user("first"), Message.assistant("second"), *agent_session(3)[1:]]
            await other.replace_prefix(1, grown, snap.generation)
            history = [*grown, *history[1:]]
            assert (await store.load_log()).to_list() == history

            await other.clear()
            await other.append(Message.user("again"))
            assert (await store.load_log()).to_list() == [Message.user("again")]
    finally:
        await backend.cleanup()


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_get_history_reads_through_the_cached_log(
    factory: Callable[[Path], Backend], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole ``get_history()`` (what openai-agents' runner asks a session for each turn)
    fills the cached log, so the next one reads only the rows appended since; a bounded
    one reads its rows alone while nothing is cached, and from the cache once it is."""
    backend = factory(tmp_path)
    try:
        async with opened(backend) as store, opened(backend, store.session_id) as other:
            history = agent_session(20)
            await store.append_many(history)
            decoded = _counting_decodes(store, monkeypatch)
            assert await store.get_history(5) == history[-5:]
            assert len(decoded) == 5  # cold: the bounded read, its rows alone
            del decoded[:]
            assert await store.get_history() == history
            assert len(decoded) == len(history)
            more = agent_session(2)[1:]
            await other.append_many(more)
            history += more
            del decoded[:]
            assert await store.get_history() == history
            assert await store.get_history(7) == history[-7:]
            assert await store.get_history(10**6) == history
            assert len(decoded) == len(more)  # the other handle's rows, read once
            # A rewrite by the other handle is seen by the next read, bounded or not.
            snap = await other.snapshot()
            await other.replace_prefix(len(history), [Message.user("summary")], snap.generation)
            assert await store.get_history(3) == [Message.user("summary")]
            assert await store.get_history() == [Message.user("summary")]
    finally:
        await backend.cleanup()


@pytest.fixture
def small_log_caches() -> Iterator[LogCaches]:
    """The process's bound on cached logs, set low for one test and restored after."""
    before = log_caches.limit_bytes
    log_caches.limit_bytes = 0
    yield log_caches
    log_caches.limit_bytes = before


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_cached_logs_stay_bounded_as_sessions_grow(
    factory: Callable[[Path], Backend],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    small_log_caches: LogCaches,
) -> None:
    # Many sessions, each trimmed every turn: the cached logs hold at most the bound (plus
    # the one just read), the least recently used are released, and a released session
    # still reads exactly its history (read whole again, then incrementally).
    backend = factory(tmp_path)
    history = agent_session(3)
    row = max(len(m.encode()) for m in history)
    limit = 4 * sum(len(m.encode()) for m in history)  # about four sessions' logs
    small_log_caches.limit_bytes = limit
    stores = []
    try:
        for k in range(12):
            store = await backend.open(f"bounded-{k}")
            stores.append(store)
            await store.append_many(history)
            assert (await store.load_log()).to_list() == history
            assert small_log_caches.held_bytes <= limit + 2 * row * len(history)
        assert 3 <= small_log_caches.sessions <= 5
        decoded = _counting_decodes(stores[0], monkeypatch)
        # The first session's log was released: read whole, and cached again after.
        extra = [Message.user(f"more {k}") for k in range(2)]
        await stores[0].append_many(extra)
        assert (await stores[0].load_log()).to_list() == [*history, *extra]
        assert len(decoded) == len(history) + len(extra)
        del decoded[:]
        assert (await stores[0].load_log()).to_list() == [*history, *extra] and not decoded
        # The most recently read ones are still cached: nothing to read for them.
        for store in stores[-2:]:
            assert (await store.load_log()).to_list() == history and not decoded
        for k, store in enumerate(stores):
            assert (await store.load_log()).to_list() == ([*history, *extra] if k == 0 else history)
        assert small_log_caches.held_bytes <= limit + 2 * row * len(history)
        # A bound of 0 keeps only the log just read; closing a store releases its log.
        small_log_caches.limit_bytes = 0
        assert small_log_caches.sessions == 0 and small_log_caches.held_bytes == 0
        for store in stores:
            assert (await store.load_log()).to_list() in (history, [*history, *extra])
            assert small_log_caches.sessions == 1
        await stores[-1].close()
        assert small_log_caches.sessions == 0 and small_log_caches.held_bytes == 0
    finally:
        for store in stores:
            await store.close()
        await backend.cleanup()
    assert small_log_caches.sessions == 0 and small_log_caches.held_bytes == 0


def test_the_bound_is_checked() -> None:
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(InvalidArgument):
            LogCaches(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgument):
            log_caches.limit_bytes = bad  # type: ignore[assignment]
    assert log_caches.limit_bytes == DEFAULT_LOG_CACHE_BYTES


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_concurrent_appends_and_loads_keep_the_cached_log_exact(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    # A store's own appends go straight into its cached log when it ends where they were
    # written. Appends of one handle racing each other, another handle's appends, idempotent
    # retries and loads in between must still leave every load equal to a fresh read.
    backend = factory(tmp_path)
    try:
        async with (
            opened(backend) as store,
            opened(backend, store.session_id) as other,
        ):
            rounds = agent_session(24)

            async def fresh() -> list[Message]:
                async with opened(backend, store.session_id) as reader:
                    return (await reader.load_log()).to_list()

            for k in range(0, len(rounds) - 6, 6):
                a, b, c = rounds[k : k + 2], rounds[k + 2 : k + 4], rounds[k + 4 : k + 6]
                logs = await asyncio.gather(
                    store.append_many(a),
                    store.load_log(),
                    store.append_many(b),
                    other.append_many(c),
                    store.load_log(),
                )
                for log in logs:
                    if log is not None:
                        assert log.to_list() == (await fresh())[: len(log)]  # a prefix read
                assert (await store.load_log()).to_list() == await fresh()
            # An idempotent retry stores nothing new; the cached log stays what is stored.
            tagged = Message.assistant("once", id="retry-me")
            await store.append(tagged)
            assert (await store.load_log()).to_list() == await fresh()
    finally:
        await backend.cleanup()


def test_a_store_s_own_write_extends_its_cached_log_only_where_it_ends() -> None:
    owner = LogCaches()
    cache = LogCache(owner)
    history = agent_session(2)
    assert cache.load(3, None, history[:4], [1] * 4, 4, 40) is not None
    more = history[4:6]
    cache.wrote(3, 5, more, [1, 1], 20)  # rows after a gap: not a continuation
    cache.wrote(3, 3, more, [1, 1], 20)  # rows the log already holds
    cache.wrote(2, 4, more, [1, 1], 20)  # another generation
    assert cache.start() == (3, 4) and owner.held_bytes == 40
    cache.wrote(3, 4, more, [1, 1], 20)
    assert cache.start() == (3, 6) and owner.held_bytes == 60
    log = cache.load(3, 6, [], [], 6)
    assert log is not None and log.to_list() == history[:6]
    assert all(a is b for a, b in zip(log.to_list()[4:], more, strict=True))
    cache.release()
    cache.wrote(3, 6, history[6:7], [1], 10)  # nothing cached: nothing to extend
    assert cache.start() == (None, None) and owner.held_bytes == 0
