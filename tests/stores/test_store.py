"""`ContextStore` contract and `MemoryContextStore` (axio-compatible API plus extensions)."""

from __future__ import annotations

import asyncio

import pytest

from ctxtrim import (
    ContextStore,
    HeuristicTokenCounter,
    InvalidMessage,
    MemoryContextStore,
    Message,
    SessionInfo,
    StaleGenerationError,
)

from helpers import agent_session


async def test_append_and_history_in_order() -> None:
    store = MemoryContextStore()
    msgs = agent_session(3)
    for m in msgs:
        await store.append(m)
    assert await store.get_history() == msgs
    assert await store.get_history(limit=2) == msgs[-2:]
    assert await store.get_history(limit=0) == []
    history = await store.get_history()
    history.append(Message.user("caller's own list"))
    assert len(await store.get_history()) == len(msgs)  # a new list each call
    with pytest.raises(ValueError):
        await store.get_history(limit=-1)


async def test_append_many_is_atomic() -> None:
    store = MemoryContextStore([Message.user("first")])
    bad = [Message.user("ok"), 42]
    with pytest.raises(InvalidMessage) as err:
        await store.append_many(bad)  # type: ignore[arg-type]
    assert err.value.path == "messages[1]"
    assert [m.text for m in await store.get_history()] == ["first"]


async def test_session_ids_are_unique_and_settable() -> None:
    a, b = MemoryContextStore(), MemoryContextStore()
    assert a.session_id != b.session_id and len(a.session_id) == 32
    assert MemoryContextStore(session_id="s1").session_id == "s1"


async def test_fork_is_independent_both_ways_and_keeps_tokens() -> None:
    parent = MemoryContextStore(agent_session(2))
    await parent.set_context_tokens(100, 20)
    child = await parent.fork()
    assert child.session_id != parent.session_id
    assert await child.get_context_tokens() == (100, 20)
    await child.append(Message.user("child"))
    await parent.append(Message.user("parent"))
    assert (await child.get_history())[-1].text == "child"
    assert (await parent.get_history())[-1].text == "parent"
    await parent.clear()
    assert len(await child.get_history()) == len(agent_session(2)) + 1


async def test_context_tokens_accumulate_and_clear_resets() -> None:
    store = MemoryContextStore()
    assert await store.get_context_tokens() == (0, 0)
    await store.add_context_tokens(10, 2)
    await store.add_context_tokens(5, 1)
    assert await store.get_context_tokens() == (15, 3)
    await store.append(Message.user("x"))
    await store.clear()
    assert await store.get_history() == [] and await store.get_context_tokens() == (0, 0)


async def test_from_history_and_from_context() -> None:
    msgs = agent_session(1)
    store = await MemoryContextStore.from_history(msgs)
    assert await store.get_history() == msgs
    copy = await MemoryContextStore.from_context(store)
    assert await copy.get_history() == msgs and copy.session_id != store.session_id


async def test_list_sessions_reports_itself() -> None:
    store = MemoryContextStore([Message.system("s"), Message.user("x" * 200)])
    await store.set_context_tokens(7, 3)
    [info] = await store.list_sessions()
    assert isinstance(info, SessionInfo)
    assert (info.session_id, info.message_count, info.preview) == (store.session_id, 2, "x" * 80)
    assert (info.input_tokens, info.output_tokens) == (7, 3)


async def test_replace_prefix_keeps_a_write_made_during_compaction() -> None:
    store = MemoryContextStore(agent_session(5))
    messages, generation = await store.snapshot()

    async def slow_summary() -> list[Message]:
        await asyncio.sleep(0.01)
        return [Message.user("summary of the task so far")]

    summary_task = asyncio.create_task(slow_summary())
    await store.append(Message.user("appended meanwhile"))
    await store.replace_prefix(len(messages), await summary_task, generation)
    assert [m.text for m in await store.get_history()] == [
        "summary of the task so far",
        "appended meanwhile",
    ]
    assert await store.generation() == generation + 1


async def test_stale_replace_prefix_is_refused_and_changes_nothing() -> None:
    store = MemoryContextStore(agent_session(2))
    _, generation = await store.snapshot()
    await store.clear()
    await store.append(Message.user("new life"))
    with pytest.raises(StaleGenerationError):
        await store.replace_prefix(1, [Message.user("summary")], generation)
    assert [m.text for m in await store.get_history()] == ["new life"]


async def test_remove_turn() -> None:
    store = MemoryContextStore([Message.user("a"), Message.assistant("b"), Message.user("c")])
    assert await store.remove_turn("u2") == 1
    assert [m.text for m in await store.get_history()] == ["a", "b"]


async def test_exact_counter_is_used_once_per_message() -> None:
    calls: list[Message] = []

    class Counting(HeuristicTokenCounter):
        def count_message(self, message: Message) -> int:
            calls.append(message)
            return 7

    store = MemoryContextStore(counter=Counting())
    await store.append(Message.user("a"))
    await store.append_many([Message.user("b"), Message.user("c")])
    assert store.log.token_counts() == [7, 7, 7] and len(calls) == 3
    await store.get_history()
    assert len(calls) == 3


class ListStore(ContextStore):
    """A third-party store written against axio's ABC: only the two abstract methods."""

    def __init__(self) -> None:
        self.items: list[Message] = []

    async def append(self, message: Message) -> None:
        self.items.append(message)

    async def get_history(self, limit: int | None = None) -> list[Message]:
        return list(self.items if limit is None else self.items[-limit:] if limit else [])


async def test_minimal_subclass_gets_working_defaults() -> None:
    store = await ListStore.from_history(agent_session(1))
    assert len(store.session_id) == 32 and store.session_id == store.session_id
    await store.add_context_tokens(3, 4)
    fork = await store.fork()
    assert isinstance(fork, MemoryContextStore)
    assert await fork.get_history() == store.items
    assert await fork.get_context_tokens() == (3, 4)
    [info] = await store.list_sessions()
    assert info.preview == "Find the bug."
    with pytest.raises(NotImplementedError):
        await store.clear()
    with pytest.raises(TypeError):
        ContextStore()  # type: ignore[abstract]


async def test_load_log_is_a_read_only_view_with_cached_counts() -> None:
    store = MemoryContextStore(agent_session(3))
    log = await store.load_log()
    assert log.read_only and log.to_list() == await store.get_history()
    assert log.token_counts() == store.log.token_counts()
    await store.append(Message.user("later"))
    assert len(log) == len(agent_session(3))
    fallback = await (await ListStore.from_history(agent_session(1))).load_log()
    assert fallback.read_only and len(fallback) == len(agent_session(1))


async def test_async_with_closes_any_store() -> None:
    closed: list[bool] = []

    class Closing(ListStore):
        async def close(self) -> None:
            closed.append(True)

    async with Closing() as store:
        await store.append(Message.user("x"))
        assert isinstance(store, Closing)
    assert closed == [True]
