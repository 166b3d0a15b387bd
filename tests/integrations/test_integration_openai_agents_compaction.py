"""``CtxtrimSession._get_compaction_snapshot``, the hook through which openai-agents'
``OpenAIResponsesCompactionSession`` and ``EncryptedSession`` compact a bounded suffix of the
history atomically, with the real openai-agents classes on every ctxtrim store: the suffix
the runner just added is compacted and the older history kept; a write that lands between
the snapshot and the replacement (through another handle on the session) refuses the
replacement and is not lost; a failed replacement changes nothing; and the hook never
separates a tool call from its output, neither in the suffix nor in the pruned prefix."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from unittest.mock import AsyncMock, MagicMock

import pytest

pytest.importorskip(
    "agents", reason="openai-agents not installed: pip install 'ctxtrim[openai-agents]'"
)

from agents import Agent, RunConfig, Runner
from agents.memory import OpenAIResponsesCompactionSession
from agents.testing import ScriptedModel
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from ctxtrim import (
    ContextStore,
    InvalidArgument,
    Message,
    SQLiteContextStore,
    StoreError,
    ToolResultBlock,
)
from ctxtrim.integrations.openai_agents import CtxtrimSession, CtxtrimSQLiteSession

from store_backends import BACKENDS, Backend

SUMMARY: Any = {"type": "compaction", "id": "cmp-1", "encrypted_content": "the summary"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def fc(i: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}


def fo(i: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": i, "output": "ok"}


def reply(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="r1",
        type="message",
        role="assistant",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        status="completed",
    )


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    factory: Callable[[Path], Backend] = request.param
    made = factory(tmp_path)
    yield made
    await made.cleanup()


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[ContextStore]:
    opened = await backend.open("compaction")
    yield opened
    await opened.close()


@pytest.fixture(params=[*BACKENDS, pytest.param(None, id="SQLiteSession-tables")])
async def session(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """A ``CtxtrimSession`` on each ctxtrim store, and the ``CtxtrimSQLiteSession`` that
    ``CtxtrimSession(session_id, db_path)`` makes (``SQLiteSession``'s own tables)."""
    if request.param is None:
        made = CtxtrimSession("compaction", tmp_path / "agents.db")
        assert isinstance(made, CtxtrimSQLiteSession)
        yield made
        made.close()
        return
    backend = request.param(tmp_path)
    opened = await backend.open("compaction")
    yield CtxtrimSession(opened)
    await opened.close()
    await backend.cleanup()


def compaction_session(
    session: CtxtrimSession, compact: Callable[..., Any]
) -> tuple[OpenAIResponsesCompactionSession, MagicMock]:
    client = MagicMock()
    client.responses.compact = AsyncMock(side_effect=compact)
    wrapper = OpenAIResponsesCompactionSession(
        "compaction",
        cast(Any, session),  # a Session structurally; mypy reads the items' TypedDicts
        client=client,
        compaction_mode="input",
        should_trigger_compaction=lambda _: True,
    )
    return wrapper, client


async def run_turn(session: Any, answer: str) -> dict[str, Any]:
    out = reply(answer)
    await Runner.run(
        Agent(name="worker", model=ScriptedModel(steps=[[out]])),
        "continue",
        session=session,
        run_config=RunConfig(session_settings={"limit": 1}),
    )
    dumped: dict[str, Any] = out.model_dump(exclude_unset=True)
    return dumped


async def test_the_runner_compacts_only_the_suffix_it_just_added(session: CtxtrimSession) -> None:
    older = [user("task"), fc("c1"), fo("c1"), assistant("first answer")]
    await session.add_items(older)

    async def compact(**kwargs: Any) -> SimpleNamespace:
        return SimpleNamespace(output=[SUMMARY])

    wrapper, client = compaction_session(session, compact)
    answer = await run_turn(wrapper, "done")
    client.responses.compact.assert_awaited_once()
    # The request holds the bounded suffix (this turn's input and answer), not the history.
    sent = client.responses.compact.call_args.kwargs["input"]
    assert len(sent) == 2 and sent[0].get("content") == "continue"
    assert answer["content"][0]["text"] == "done"
    assert await session.get_items() == [*older, SUMMARY]


async def test_an_append_between_the_snapshot_and_the_replacement_is_not_lost(
    backend: Backend, store: ContextStore
) -> None:
    session = CtxtrimSession(store)
    older = [user(str(i)) for i in range(4)]
    await session.add_items(older)
    # Another writer of the same session: a second handle (a second connection) on the
    # database stores, the same store object for the memory one.
    other_store = await backend.open("compaction") if backend.persistent else store
    other = CtxtrimSession(other_store)
    newer = user("appended by another writer while the model compacted")

    async def compact(**kwargs: Any) -> SimpleNamespace:
        await other.add_items([newer])
        return SimpleNamespace(output=[SUMMARY])

    try:
        wrapper, client = compaction_session(session, compact)
        answer = await run_turn(wrapper, "done")
        client.responses.compact.assert_awaited_once()
        # The replacement was refused: nothing compacted, nothing lost.
        assert await session.get_items() == [*older, user("continue"), answer, newer]
        assert await other.get_items() == await session.get_items()
        # The next turn compacts its own exchange: the model saw the append (the newest
        # history item, limit=1), then this turn's input and answer.
        wrapper, _ = compaction_session(session, lambda **kw: SimpleNamespace(output=[SUMMARY]))
        await run_turn(wrapper, "again")
        assert await session.get_items() == [*older, user("continue"), answer, SUMMARY]
    finally:
        if other_store is not store:
            await other_store.close()


async def test_a_failed_replacement_changes_nothing(tmp_path: Path) -> None:
    """The same failure openai-agents injects into SQLiteSession's table, on ctxtrim's: a
    trigger refusing the compacted item's insert. The one transaction rolls back whole."""
    path = tmp_path / "history.db"
    store = await SQLiteContextStore.open(path, "s")
    try:
        session = CtxtrimSession(store)
        older = [user(str(i)) for i in range(4)]
        await session.add_items(older)
        # `with` on a connection only commits; `closing` closes it too.
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON ctxtrim_messages"
                " WHEN CAST(NEW.payload AS TEXT) LIKE '%the summary%'"
                " BEGIN SELECT RAISE(ABORT, 'injected insert failure'); END"
            )
        wrapper, _ = compaction_session(session, lambda **kw: SimpleNamespace(output=[SUMMARY]))
        generation = await store.generation()
        with pytest.raises(StoreError, match="injected insert failure"):
            await run_turn(wrapper, "done")
        items = await session.get_items()
        assert items[:5] == [*older, user("continue")] and len(items) == 6
        assert await store.generation() == generation
    finally:
        await store.close()


async def test_the_hook_refuses_to_replace_an_output_whose_call_it_keeps(
    session: CtxtrimSession,
) -> None:
    history = [user("task"), fc("c1"), fo("c1"), assistant("answer")]
    await session.add_items(history)
    snapshot = await session._get_compaction_snapshot(10)
    assert snapshot is not None and snapshot.items == history and snapshot.complete
    # Replacing from the output on would leave the call without it.
    assert await snapshot.replace_suffix(2, [SUMMARY]) is False
    assert await session.get_items() == history
    # From the call on, the pair goes together.
    assert await snapshot.replace_suffix(1, [SUMMARY]) is True
    assert await session.get_items() == [user("task"), SUMMARY]
    # A used snapshot is stale: the history was rewritten since.
    assert await snapshot.replace_suffix(0, []) is False
    assert await session.get_items() == [user("task"), SUMMARY]


async def test_a_bounded_snapshot_starts_at_a_pair_safe_item(session: CtxtrimSession) -> None:
    history = [user("task"), fc("c1"), fo("c1"), assistant("answer")]
    await session.add_items(history)
    snapshot = await session._get_compaction_snapshot(2)
    assert snapshot is not None
    # The last 2 items would start with c1's output: the window moves past it.
    assert snapshot.items == [assistant("answer")] and not snapshot.complete
    assert await snapshot.replace_suffix(1, [SUMMARY]) is False  # nothing there to replace
    with pytest.raises(InvalidArgument, match="limit must be an int >= 1"):
        await session._get_compaction_snapshot(0)
    with pytest.raises(InvalidArgument, match="start must be an int >= 0"):
        await snapshot.replace_suffix(-1, [])
    assert await session.get_items() == history


async def test_pruning_the_expired_prefix_keeps_every_kept_output_s_call(
    session: CtxtrimSession,
) -> None:
    history = [
        user("expired"),
        fc("c1"),  # expired, but its output is not: it must stay
        fo("c1"),
        user("live"),
        assistant("answer"),
    ]
    await session.add_items(history)

    def is_expired(item: Any) -> bool:  # the first two items
        return item in (user("expired"), fc("c1"))

    snapshot = await session._get_compaction_snapshot(2, prune_prefix=is_expired)
    assert snapshot is not None and snapshot.items == [user("live"), assistant("answer")]
    assert await snapshot.replace_suffix(0, [SUMMARY]) is True
    # "expired" went; the expired call stayed with its live output.
    assert await session.get_items() == [fc("c1"), fo("c1"), SUMMARY]


async def test_pruning_never_separates_parallel_calls_from_their_outputs(
    session: CtxtrimSession,
) -> None:
    """Two parallel calls and their outputs, interleaved: whichever of them expired, no
    prefix short of the whole group can go without orphaning an output."""
    group = [fc("a"), fc("b"), fo("a"), fo("b")]
    history = [*group, user("live"), assistant("answer")]
    await session.add_items(history)
    for expired in (1, 2, 3):

        def is_expired(item: Any, k: int = expired) -> bool:
            return item in history[:k]

        snapshot = await session._get_compaction_snapshot(1, prune_prefix=is_expired)
        answer: Any = assistant("answer")  # a plain dict: the items' wire form
        assert snapshot is not None and snapshot.items == [answer]
        assert await snapshot.replace_suffix(0, [answer]) is True
        assert await session.get_items() == history  # nothing pruned
    snapshot = await session._get_compaction_snapshot(1, prune_prefix=lambda it: it in group)
    assert snapshot is not None and await snapshot.replace_suffix(0, [SUMMARY]) is True
    assert await session.get_items() == [user("live"), SUMMARY]


async def test_a_message_of_several_items_is_split_where_the_suffix_starts(
    store: ContextStore,
) -> None:
    """A message another writer stored holds several items (an answer with a tool call);
    a suffix starting inside it keeps its leading items, one message each."""
    await store.append_many(
        [
            Message.user("task"),
            Message.assistant("let me look", tool_uses=[("c1", "f", {})]),
            Message.user([ToolResultBlock(tool_use_id="c1", content="ok")]),
        ]
    )
    session = CtxtrimSession(store)
    items = await session.get_items()
    assert [it.get("type", "message") for it in items] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]
    snapshot = await session._get_compaction_snapshot(10)
    assert snapshot is not None and snapshot.items == items
    assert await snapshot.replace_suffix(2, [SUMMARY]) is True  # from the call on
    assert await session.get_items() == [*items[:2], SUMMARY]


async def test_pruning_reads_the_prefix_a_chunk_at_a_time_and_keeps_a_far_output_s_call(
    tmp_path: Path,
) -> None:
    """On SQLiteSession's tables the expired prefix is read ``limit`` rows at a time (as
    SQLiteSession does); an expired call whose output lies chunks further on still stays."""
    session = CtxtrimSession("s", tmp_path / "agents.db")
    expired = [user(f"old {i}") for i in range(5)]
    history = [*expired, fc("far"), *[user(f"old {i}") for i in range(5, 9)], fo("far")]
    history += [user("live"), assistant("answer")]
    try:
        await session.add_items(history)

        def is_expired(item: Any) -> bool:
            return item in expired or item == fc("far")

        snapshot = await session._get_compaction_snapshot(2, prune_prefix=is_expired)
        assert snapshot is not None and snapshot.items == history[-2:]
        assert await snapshot.replace_suffix(1, [SUMMARY]) is True
        # The five expired user items went; the expired call stays with its output.
        assert await session.get_items() == [*history[5:-1], SUMMARY]
        # Without the far call, the whole expired run goes.
        snapshot = await session._get_compaction_snapshot(1, prune_prefix=lambda it: True)
        assert snapshot is not None and await snapshot.replace_suffix(0, [SUMMARY]) is True
        assert await session.get_items() == [SUMMARY]
    finally:
        session.close()
