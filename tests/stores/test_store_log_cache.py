"""A persistent store trimmed every turn reads only what was appended since it last looked.

``load_log()`` keeps the log it last read and extends it with the rows appended since, by
this handle or any other (another process); a clear, a compaction or a removed turn moves the
generation, and the next load reads the session whole. Run on every persistent backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import FitContextWindow, Message

from helpers import agent_session
from store_backends import PERSISTENT_BACKENDS, Backend, opened


def _counting_decodes(store: object, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the payloads the store's module decodes from now on."""
    module = importlib.import_module(type(store).__module__)
    real = module.decode_payload
    seen: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Message:
        seen.append(1)
        return real(*args, **kwargs)  # type: ignore[no-any-return]

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

            # Appends by this handle and by another one: only those rows are read.
            more = agent_session(2)[1:]
            await store.append_many(more[:3])
            await other.append_many(more[3:])
            history += more
            del decoded[:]
            log = await store.load_log()
            assert log.to_list() == history and len(decoded) == len(more)
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
