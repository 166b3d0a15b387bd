"""compact_context and AutoCompactStore: shape, pair safety, folding, failure, concurrency.

Each compaction defect found in a peer has a named scenario test here:
axio's ``keep_recent=0`` crash, lost write and leaked SQLite snapshot session,
Agentflow's orphaned results after the summary split, axio's consecutive assistant
messages. agent-air's byte slicing is in test_transports.py.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import (
    AutoCompactStore,
    CompactionError,
    CompactionEvent,
    CompactionSettingsError,
    ContextStore,
    InvalidMessage,
    MemoryContextStore,
    Message,
    SQLiteContextStore,
    compact_context,
    validate,
)
from ctxtrim.compaction import is_summary
from ctxtrim.transports import ExtractiveTransport, OpenAITransport

from fake_provider import FakeProvider
from helpers import agent_session, call, results
from strategies import histories

# -- transports used as test doubles: real CompletionTransport implementations -----------------


class Recording(ExtractiveTransport):
    """The extractive transport, remembering what it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[list[Message], str, int]] = []

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        self.calls.append((list(messages), system, max_tokens))
        return await super().complete(messages, system=system, max_tokens=max_tokens)


class Gated(ExtractiveTransport):
    """Summarises only once ``release`` is set: a slow model, under the test's control."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        self.started.set()
        await self.release.wait()
        return await super().complete(messages, system=system, max_tokens=max_tokens)


class Failing:
    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        raise RuntimeError("model exploded")


class Rewriting(ExtractiveTransport):
    """While summarising, someone else rewrites the store (``times`` times): it is cleared
    and refilled with ``refill``, which bumps its generation."""

    def __init__(self, store: ContextStore, times: int, refill: list[Message]) -> None:
        super().__init__()
        self.store, self.times, self.refill = store, times, refill

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        if self.times > 0:
            self.times -= 1
            await self.store.clear()
            await self.store.append_many(self.refill)
        return await super().complete(messages, system=system, max_tokens=max_tokens)


def fill(n: int) -> list[Message]:
    """axio's fixture: alternating plain user/assistant messages."""
    return [Message.user(f"m{i}") if i % 2 == 0 else Message.assistant(f"m{i}") for i in range(n)]


def texts(history: Sequence[Message]) -> list[str]:
    return [m.text for m in history]


def no_consecutive_assistants(history: Sequence[Message]) -> bool:
    roles = [m.role for m in history]
    return all(not (a == b == "assistant") for a, b in itertools.pairwise(roles))


# -- compact_context ---------------------------------------------------------------------------


async def test_returns_none_when_not_longer_than_max_messages() -> None:
    transport = Recording()
    assert await compact_context(fill(20), transport) is None
    assert await compact_context(fill(5), transport, max_messages=5) is None
    assert transport.calls == []
    assert await compact_context(fill(21), transport) is not None


async def test_store_is_read_not_modified_and_list_input_works() -> None:
    store = MemoryContextStore(agent_session(15))
    before = await store.get_history()
    out = await compact_context(store, ExtractiveTransport(), keep_recent=4)
    assert out is not None and await store.get_history() == before
    assert out == await compact_context(before, ExtractiveTransport(), keep_recent=4)


async def test_shape_pinned_head_summary_then_recent() -> None:
    history = agent_session(15)  # system, task, 15 rounds, final answer
    transport = Recording()
    out = await compact_context(history, transport, keep_recent=4)
    assert out is not None
    system, task, summary, *recent = out
    assert system == history[0] and task == history[1]
    assert summary.role == "user" and is_summary(summary)
    assert summary.text.startswith("[Summary of the earlier conversation]\n\n")
    assert recent == history[len(history) - len(recent) :] and len(recent) >= 4
    assert recent[0].role == "assistant"  # the cut walked back to the call, not a result
    ((sent, system_prompt, max_tokens),) = transport.calls
    assert sent == history[2 : len(history) - len(recent)]  # neither head nor recent
    assert "summary" in system_prompt.lower() and max_tokens == 1024
    assert validate(out) == []


async def test_axio_keep_recent_zero_crash() -> None:
    # axio: _find_safe_boundary(fill(6), keep_recent=0) -> IndexError (axio 0.12.2).
    out = await compact_context(fill(6), ExtractiveTransport(), max_messages=0, keep_recent=0)
    assert out is not None
    assert texts(out)[0] == "m0" and is_summary(out[1]) and len(out) == 2
    sess = agent_session(8)
    out = await compact_context(sess, ExtractiveTransport(), max_messages=0, keep_recent=0)
    assert out is not None and out[:2] == sess[:2] and len(out) == 3 and validate(out) == []


async def test_agentflow_orphaned_results_after_summary_split() -> None:
    # Agentflow splits at len - keep_recent with no pair check and kept two tool results
    # whose call had been summarised (agentflow 0.10.1). Parallel call c2+c3, results in two
    # messages: a naive split at len-3 starts on the c3 result.
    history = [
        Message.system("S"),
        Message.user("q1"),
        call("", "c1"),
        results("c1"),
        Message.assistant("a1"),
        Message.user("q2"),
        call("", "c2", "c3"),
        results("c2"),
        results("c3"),
        Message.assistant("a2"),
    ]
    out = await compact_context(history, ExtractiveTransport(), max_messages=3, keep_recent=3)
    assert out is not None
    assert validate(out) == []
    kept = out[3:]
    assert kept[0] == history[6] and not kept[0].tool_results  # starts at the call
    assert [m.role for m in out[:3]] == ["system", "user", "user"]  # summary is a user message


async def test_axio_no_two_consecutive_assistant_messages() -> None:
    # axio: [summary, "Understood", *recent] with recent starting on an assistant tool call
    # gave user, assistant, assistant(tool_use), user(result), assistant.
    history = [*fill(9), call("", "t1"), results("t1"), Message.assistant("done")]
    assert no_consecutive_assistants(history)
    for keep in range(len(history) + 1):
        out = await compact_context(
            history, ExtractiveTransport(), max_messages=0, keep_recent=keep
        )
        if out is not None:
            assert no_consecutive_assistants(out), keep
            assert validate(out) == []


async def test_task_after_an_assistant_greeting_is_pinned() -> None:
    history = [
        Message.system("S"),
        Message.assistant("Hello! How can I help?"),
        Message.user("Rename the module."),
        *[m for r in range(6) for m in (call("", f"t{r}"), results(f"t{r}"))],
        Message.assistant("Renamed."),
    ]
    out = await compact_context(history, ExtractiveTransport(), max_messages=0, keep_recent=2)
    assert out is not None
    assert out[0] == history[0] and out[1] == history[2] and is_summary(out[2])
    assert "Hello! How can I help?" in out[2].text  # the greeting was summarised, not lost
    assert validate(out) == []


async def test_previous_summary_is_folded_not_resummarised() -> None:
    transport = Recording()
    first = await compact_context(agent_session(10), transport, max_messages=0, keep_recent=2)
    assert first is not None
    grown = [*first, Message.user("and the tests?"), call("", "x1"), results("x1")]
    second = await compact_context(grown, transport, max_messages=0, keep_recent=0)
    assert second is not None
    assert sum(is_summary(m) for m in second) == 1
    sent = transport.calls[-1][0]
    assert sum(is_summary(m) for m in sent) == 1  # handed over as the previous summary
    assert "Previous summary:" in second[2].text
    count = second[2].meta["ctxtrim"]["summarised_messages"]  # type: ignore[index]
    assert count == first[2].meta["ctxtrim"]["summarised_messages"] + len(sent) - 1  # type: ignore[index]
    # Only a summary before the cut: nothing new to summarise.
    assert await compact_context(second, transport, max_messages=0, keep_recent=0) is None


async def test_compact_summary_of_tool_results_is_used() -> None:
    from ctxtrim import ToolResultBlock

    history = [
        Message.user("task"),
        call("", "t1"),
        Message.tool_results(ToolResultBlock("t1", "row " * 3000, compact_summary="3000 rows")),
        Message.assistant("ok"),
    ]
    out = await compact_context(history, ExtractiveTransport(), max_messages=0, keep_recent=0)
    assert out is not None and "3000 rows" in out[1].text and "row row" not in out[1].text


@settings(max_examples=80, deadline=None)
@given(histories(), st.integers(0, 12))
async def test_compaction_never_adds_a_violation(history: list[Message], keep: int) -> None:
    before = {(v.kind, v.tool_use_id) for v in validate(history)}
    out = await compact_context(history, ExtractiveTransport(), max_messages=0, keep_recent=keep)
    if out is None:
        return
    after = {(v.kind, v.tool_use_id) for v in validate(out)}
    assert after <= before
    n_sys = next((i for i, m in enumerate(history) if m.role != "system"), len(history))
    assert out[:n_sys] == history[:n_sys]
    first = out[n_sys]
    assert first.role == "user" and not first.tool_results
    summaries = [i for i, m in enumerate(out) if is_summary(m)]
    assert len(summaries) == 1
    tail = out[summaries[0] + 1 :]
    assert tail == history[len(history) - len(tail) :]
    assert not (tail and tail[0].tool_results)
    if no_consecutive_assistants(history):
        assert no_consecutive_assistants(out)


async def test_transport_failure_raises_and_changes_nothing() -> None:
    store = MemoryContextStore(agent_session(12))
    before = await store.get_history()
    with pytest.raises(CompactionError) as info:
        await compact_context(store, Failing(), keep_recent=2)
    assert info.value.kind == "transport_error"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert await store.get_history() == before


async def test_slow_transport_times_out() -> None:
    gated = Gated()
    with pytest.raises(CompactionError) as info:
        await compact_context(agent_session(12), gated, keep_recent=2, timeout=0.05)
    assert info.value.kind == "timeout" and "0.05" in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"keep_recent": -1},
        {"max_messages": -1},
        {"max_messages": "3"},
        {"keep_recent": True},
        {"timeout": 0},
        {"max_summary_tokens": 0},
        {"system_prompt": 5},
    ],
)
async def test_bad_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(CompactionSettingsError) as info:
        await compact_context(fill(30), ExtractiveTransport(), **kwargs)
    assert isinstance(info.value, ValueError)
    assert next(iter(kwargs)) in str(info.value)


async def test_bad_input_is_rejected() -> None:
    with pytest.raises(CompactionSettingsError, match="or be an axio transport"):
        await compact_context(fill(30), object())  # type: ignore[arg-type]
    with pytest.raises(InvalidMessage, match=r"\[1\]"):
        await compact_context([Message.user("a"), {"role": "user"}], ExtractiveTransport())  # type: ignore[list-item]


# -- AutoCompactStore --------------------------------------------------------------------------


def auto(
    store: ContextStore, transport: Any, **kw: Any
) -> tuple[AutoCompactStore, list[CompactionEvent]]:
    events: list[CompactionEvent] = []
    return AutoCompactStore(store, transport, on_event=events.append, **kw), events


async def test_triggers_on_reported_input_tokens() -> None:
    store, events = auto(MemoryContextStore(fill(30)), ExtractiveTransport(), max_tokens=10_000)
    assert store.trigger_tokens == 7500
    await store.add_context_tokens(7000, 50)
    assert events == [] and len(await store.get_history()) == 30
    await store.add_context_tokens(7600, 50)
    (event,) = events
    assert event.kind == "compacted" and event.trigger == "reported"
    assert event.messages_before == 30 and event.messages_after == len(await store.get_history())
    assert event.messages_after < 30 and event.tokens_before == 7600
    assert await store.get_context_tokens() == (14600, 100)  # cumulative totals kept


async def test_triggers_on_the_estimate_when_nothing_is_reported() -> None:
    inner = MemoryContextStore(fill(4))
    store, events = auto(inner, ExtractiveTransport(), max_tokens=400, keep_recent=4)
    while not events:
        await store.append(Message.user("tell me more " * 5))
        await store.append(Message.assistant("here is more " * 5))
    assert events[0].kind == "compacted" and events[0].trigger == "estimate"
    assert events[0].tokens_before >= 300 > events[0].tokens_after
    assert (await inner.load_log()).estimated_context_tokens() < 300


async def test_reported_tokens_plus_appended_estimate_triggers() -> None:
    store, events = auto(MemoryContextStore(fill(10)), ExtractiveTransport(), max_tokens=1000)
    await store.add_context_tokens(700, 1)  # under 750
    assert events == []
    await store.append(Message.user("x " * 200))  # ~200 tokens more than reported
    assert [e.kind for e in events] == ["compacted"] and events[0].trigger == "estimate"


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_axio_lost_write_during_compaction(backend: str, tmp_path: Path) -> None:
    # axio: clear() + re-append of the snapshot's result dropped the message appended while
    # the summary ran (axio 0.12.2). Here a writer appends five messages meanwhile.
    if backend == "memory":
        inner: ContextStore = MemoryContextStore(fill(14))
    else:
        inner = await SQLiteContextStore.open(tmp_path / "ctx.db", "sess-1")
        await inner.append_many(fill(14))
    gated = Gated()
    store, events = auto(inner, gated, max_tokens=1, keep_recent=4)
    late = [
        Message.user(f"late {i}") if i % 2 == 0 else Message.assistant(f"late {i}")
        for i in range(5)
    ]

    async def writer() -> None:
        await gated.started.wait()
        for m in late:
            await store.append(m)  # the store stays writable during the summary
        gated.release.set()

    await asyncio.gather(store.add_context_tokens(2, 0), writer())
    history = await store.get_history()
    assert [e.kind for e in events] == ["compacted"]
    assert history[-5:] == late  # every late message, in order, at the end
    assert texts(history[-9:-5]) == ["m10", "m11", "m12", "m13"]  # the kept recent part
    assert texts(history[:1]) == ["m0"] and is_summary(history[1]) and len(history) == 11
    await store.close()


async def test_axio_leaked_sqlite_snapshot_session(tmp_path: Path) -> None:
    # axio compacted a fork of the SQLite store and never deleted it: every compaction left
    # a full-history session behind (axio-context-sqlite 0.12.2).
    path = tmp_path / "ctx.db"
    inner = await SQLiteContextStore.open(path, "sess-1")
    await inner.append_many(fill(14))
    store, events = auto(inner, ExtractiveTransport(), max_tokens=1, keep_recent=4)
    await store.add_context_tokens(2, 0)
    await store.append(Message.user("again"))
    await store.compact()
    assert [e.kind for e in events][:1] == ["compacted"] and len(events) >= 2
    sessions = await inner.list_sessions()
    assert [s.session_id for s in sessions] == ["sess-1"]
    history = await store.get_history()
    await store.close()
    reopened = await SQLiteContextStore.open(path, "sess-1")
    assert await reopened.get_history() == history  # the compaction is what was persisted
    assert [s.session_id for s in await reopened.list_sessions()] == ["sess-1"]
    await reopened.close()


async def test_sdk_failure_leaves_history_untouched_and_emits_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeProvider() as fake:
        client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
        inner = MemoryContextStore(agent_session(12))
        before = await inner.get_history()
        store, events = auto(inner, OpenAITransport(client, "m"), max_tokens=1)
        fake.fail(500, "boom")
        with caplog.at_level(logging.WARNING, logger="ctxtrim.compaction"):
            await store.add_context_tokens(5, 0)  # never raises out of the write path
        await client.close()
    assert await inner.get_history() == before
    (event,) = events
    assert event.kind == "failed" and event.messages_after == event.messages_before
    assert event.error is not None and event.error.kind == "server_error"
    assert "500" in event.reason and "unchanged" in event.reason
    assert any("compaction failed" in r.getMessage() for r in caplog.records)
    with pytest.raises(AttributeError):
        event.kind = "compacted"  # type: ignore[misc]  # frozen


async def test_timeout_leaves_history_untouched_and_emits_event() -> None:
    inner = MemoryContextStore(agent_session(12))
    before = await inner.get_history()
    store, events = auto(inner, Gated(), max_tokens=1, timeout=0.05)
    await store.add_context_tokens(5, 0)
    assert await inner.get_history() == before
    assert [(e.kind, e.error.kind if e.error else None) for e in events] == [("failed", "timeout")]


async def test_stale_generation_retries_once_on_a_fresh_snapshot() -> None:
    inner = MemoryContextStore(agent_session(12))
    refill = agent_session(6)
    store, events = auto(inner, Rewriting(inner, 1, refill), max_tokens=1, keep_recent=0)
    event = await store.compact()
    assert event.kind == "compacted" and event.attempts == 2 and events == [event]
    history = await inner.get_history()  # the second attempt compacted the rewritten history
    assert history[:2] == refill[:2] and is_summary(history[2]) and len(history) == 3
    assert history[2].meta["ctxtrim"]["summarised_messages"] == len(refill) - 2  # type: ignore[index]


async def test_stale_generation_twice_gives_up_and_says_so() -> None:
    inner = MemoryContextStore(agent_session(12))
    refill = agent_session(3)
    store, events = auto(inner, Rewriting(inner, 5, refill), max_tokens=1, keep_recent=0)
    event = await store.compact()
    assert event.kind == "stale" and event.attempts == 2 and "gave up" in event.reason
    assert events == [event]
    assert await inner.get_history() == refill  # the other writer's history, untouched


async def test_second_compaction_while_one_runs_is_skipped() -> None:
    gated = Gated()
    store, _ = auto(MemoryContextStore(agent_session(12)), gated, max_tokens=10**6)

    async def second() -> CompactionEvent:
        await gated.started.wait()
        event = await store.compact()
        gated.release.set()
        return event

    first, skipped = await asyncio.gather(store.compact(), second())
    assert skipped.kind == "skipped" and "already running" in skipped.reason
    assert first.kind == "compacted"


async def test_nothing_to_summarise_is_skipped() -> None:
    store, events = auto(MemoryContextStore(fill(3)), ExtractiveTransport(), keep_recent=6)
    event = await store.compact()
    assert event.kind == "skipped" and events == [event]
    assert len(await store.get_history()) == 3


async def test_fork_keeps_settings_and_is_independent() -> None:
    store, _ = auto(MemoryContextStore(fill(10)), ExtractiveTransport(), max_tokens=5000)
    store2 = AutoCompactStore(
        store.inner,
        store.transport,
        keep_recent=3,
        max_tokens=900,
        threshold=0.5,
        timeout=7.0,
        system_prompt="P",
        max_summary_tokens=77,
    )
    child = await store2.fork()
    assert isinstance(child, AutoCompactStore) and child.inner is not store2.inner
    for name in (
        "transport",
        "keep_recent",
        "max_tokens",
        "threshold",
        "on_event",
        "timeout",
        "system_prompt",
        "max_summary_tokens",
        "trigger_tokens",
    ):
        assert getattr(child, name) == getattr(store2, name), name
    await child.append(Message.user("only in the child"))
    assert len(await store2.get_history()) == 10


async def test_delegates_the_whole_store_api() -> None:
    inner = MemoryContextStore(agent_session(2), session_id="s1")
    store = AutoCompactStore(inner, ExtractiveTransport())
    assert store.session_id == "s1"
    assert store.log is inner.log  # backend extras pass through
    await store.set_context_tokens(3, 4)
    assert await inner.get_context_tokens() == (3, 4) == await store.get_context_tokens()
    assert await store.list_sessions() == await inner.list_sessions()
    assert await store.get_history(2) == (await inner.get_history())[-2:]
    snap = await store.snapshot()
    assert snap.generation == await store.generation()
    await store.replace_prefix(1, [Message.system("new")], snap.generation)
    assert (await inner.get_history())[0].text == "new"
    assert len(await store.load_log()) == len(inner)
    assert await store.remove_turn(1) > 0
    await store.clear()
    assert len(inner) == 0
    with pytest.raises(TypeError, match="wraps a store"):
        await AutoCompactStore.from_history([])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0},
        {"threshold": 1.5},
        {"keep_recent": -2},
        {"max_tokens": 0},
        {"timeout": -1},
        {"on_event": 3},
    ],
)
def test_auto_bad_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(CompactionSettingsError) as info:
        AutoCompactStore(MemoryContextStore(), ExtractiveTransport(), **kwargs)
    assert next(iter(kwargs)) in str(info.value)


def test_store_without_replace_prefix_is_rejected() -> None:
    class AppendOnly(ContextStore):
        def __init__(self) -> None:
            self.items: list[Message] = []

        async def append(self, message: Message) -> None:
            self.items.append(message)

        async def get_history(self, limit: int | None = None) -> list[Message]:
            return list(self.items)

    with pytest.raises(CompactionSettingsError, match="snapshot"):
        AutoCompactStore(AppendOnly(), ExtractiveTransport())


async def test_broken_on_event_callback_does_not_break_append(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def boom(event: CompactionEvent) -> None:
        raise RuntimeError("callback bug")

    store = AutoCompactStore(
        MemoryContextStore(fill(20)), ExtractiveTransport(), max_tokens=1, on_event=boom
    )
    with caplog.at_level(logging.ERROR, logger="ctxtrim.compaction"):
        await store.append(Message.user("x"))
    assert any(is_summary(m) for m in await store.get_history())
    assert any("on_event callback failed" in r.getMessage() for r in caplog.records)


async def test_after_a_failure_the_next_automatic_attempt_waits_for_growth() -> None:
    transport = Failing()
    store, events = auto(MemoryContextStore(agent_session(12)), transport, max_tokens=1000)
    await store.add_context_tokens(800, 1)  # over 750: one attempt, which fails
    for _ in range(5):
        await store.append(Message.user("ok"))  # a few tokens each: no new attempt
    await store.add_context_tokens(820, 1)
    assert [e.kind for e in events] == ["failed"]
    await store.add_context_tokens(900, 1)  # grown by more than 75 tokens: try again
    assert [e.kind for e in events] == ["failed", "failed"]
    assert (await store.compact()).kind == "failed"  # on demand: always tries


async def test_long_agent_loop_on_sqlite_stays_valid_bounded_and_one_session(
    tmp_path: Path,
) -> None:
    inner = await SQLiteContextStore.open(tmp_path / "loop.db", "agent")
    events: list[CompactionEvent] = []
    store = AutoCompactStore(
        inner, ExtractiveTransport(), max_tokens=1500, keep_recent=6, on_event=events.append
    )
    await store.append_many([Message.system("You are terse."), Message.user("Audit the repo.")])
    for r in range(120):
        await store.append(call(f"step {r}", f"t{r}"))
        await store.append(results(f"t{r}"))
        history = await store.get_history()
        assert validate(history) == [], r
        assert sum(is_summary(m) for m in history) <= 1
        assert texts(history[:2]) == ["You are terse.", "Audit the repo."]
    kinds = {e.kind for e in events}
    assert kinds == {"compacted"} and len(events) >= 3
    assert await store.context_tokens() < 1500
    summary = next(m for m in await store.get_history() if is_summary(m))
    assert summary.meta["ctxtrim"]["summarised_messages"] > 200  # type: ignore[index]
    assert [s.session_id for s in await inner.list_sessions()] == ["agent"]
    await store.close()


async def test_a_streaming_transport_needs_axio() -> None:
    """A transport with only ``stream()`` is taken as an axio transport: wrapped when axio
    imports (tests/integrations/test_integration_axio.py runs it on Python >= 3.12), a clear
    settings error naming the extra when it does not."""

    class Streaming:
        def stream(self, messages: Any, tools: Any, system: str) -> Any:
            raise AssertionError("not called")

    try:
        import axio  # noqa: F401
    except ImportError:
        with pytest.raises(CompactionSettingsError, match=r"ctxtrim\[axio\]"):
            await compact_context(fill(30), Streaming())  # type: ignore[arg-type]
    else:
        pytest.skip(
            "axio is installed: tests/integrations/test_integration_axio.py covers the wrapping"
        )
