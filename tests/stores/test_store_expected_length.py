"""``replace_prefix(..., expected_length=n)`` on every backend: the compare-and-swap also
refuses a history that was appended to since it was read (what a rewrite of the newest
messages needs: an append would land inside the part it replaces), and changes nothing.

The error contract of the argument (bad values, the exact messages) is in
``test_store_errors.py``; this file checks the race itself: an append between the read and
the write — through the same store, another handle on the session, another process — and a
memory log appended to from other threads while it rewrites.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ctxtrim import ContextStore, Message, MessageLog, StaleGenerationError

from store_backends import BACKENDS, PERSISTENT_BACKENDS, Backend, append_worker, opened

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    factory: Callable[[Path], Backend] = request.param
    made = factory(tmp_path)
    yield made
    asyncio.run(made.cleanup())


async def _state(store: ContextStore) -> tuple[list[Message], int]:
    return await store.get_history(), await store.generation()


async def _refused_after(store: ContextStore, write: Callable[[], object]) -> None:
    """snapshot → ``write()`` (an append somewhere) → the exact-length replace is refused
    with nothing changed; a fresh snapshot's then goes through and replaces everything."""
    messages, generation = await store.snapshot()
    await write()  # type: ignore[misc]
    before = await _state(store)
    assert len(before[0]) == len(messages) + 1 and before[1] == generation
    with pytest.raises(StaleGenerationError, match="stale length"):
        await store.replace_prefix(
            len(messages), [Message.user("summary")], generation, expected_length=len(messages)
        )
    assert await _state(store) == before
    messages, generation = await store.snapshot()
    await store.replace_prefix(
        len(messages), [Message.user("summary")], generation, expected_length=len(messages)
    )
    assert [m.text for m in await store.get_history()] == ["summary"]
    assert await store.generation() != generation


async def test_an_append_through_the_same_store_refuses_the_replace(backend: Backend) -> None:
    async with opened(backend) as store:
        await store.append_many([Message.user(f"m{i}") for i in range(3)])
        await _refused_after(store, lambda: store.append(Message.user("meanwhile")))


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_an_append_through_another_handle_refuses_the_replace(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    backend = factory(tmp_path)
    try:
        async with opened(backend, "s") as store, opened(backend, "s") as other:
            await store.append_many([Message.user(f"m{i}") for i in range(3)])
            await _refused_after(store, lambda: other.append(Message.user("meanwhile")))
    finally:
        await backend.cleanup()


async def test_without_an_append_the_length_check_passes_and_keeps_nothing_else(
    backend: Backend,
) -> None:
    async with opened(backend) as store:
        await store.append_many([Message.user(f"m{i}") for i in range(4)])
        messages, generation = await store.snapshot()
        # The newest two replaced (a suffix), the oldest one dropped (a pruned prefix).
        await store.replace_prefix(
            4, [*messages[1:2], Message.user("summary")], generation, expected_length=4
        )
        assert [m.text for m in await store.get_history()] == ["m1", "summary"]
        # A clear is still a stale generation (checked first), even at the right length.
        messages, generation = await store.snapshot()
        await store.clear()
        await store.append_many(messages)
        with pytest.raises(StaleGenerationError, match="stale generation"):
            await store.replace_prefix(2, [], generation, expected_length=2)
        assert [m.text for m in await store.get_history()] == ["m1", "summary"]


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_an_append_from_another_process_refuses_the_replace(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    backend = factory(tmp_path)
    loop = asyncio.get_running_loop()
    try:
        async with opened(backend, "shared") as store:
            await store.append_many([Message.user(f"m{i}") for i in range(3)])
            with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
                await _refused_after(
                    store,
                    lambda: loop.run_in_executor(pool, append_worker, backend, "shared", 0, 1, 1),
                )
    finally:
        await backend.cleanup()


def test_the_memory_log_refuses_an_append_from_another_thread_during_the_rewrite() -> None:
    """The core rewrites outside its lock and installs the result under it, so an append
    from another thread can land before, during or after the rewrite: the exact-length
    rewrite is then either refused with nothing rewritten (before/during) or applied with
    the append after the summary (after); the append is never lost nor put before it."""
    refused = applied = 0
    for _ in range(200):
        log = MessageLog([Message.user(f"m{i}") for i in range(2000)])
        generation, n = log.generation, len(log)
        started = threading.Event()

        def append(log: MessageLog = log, started: threading.Event = started) -> None:
            started.set()
            log.append(Message.user("meanwhile"))

        writer = threading.Thread(target=append)
        writer.start()
        started.wait()
        try:
            log.replace_prefix(n, [Message.user("summary")], generation, expected_length=n)
        except StaleGenerationError:
            refused += 1
            writer.join()
            assert len(log) == n + 1 and log.generation == generation  # nothing rewritten
        else:
            applied += 1
            writer.join()
            # The append came after the rewrite was installed: it follows the summary.
            assert [m.text for m in log.to_list()] == ["summary", "meanwhile"]
    assert refused + applied == 200
