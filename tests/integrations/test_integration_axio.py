"""ctxtrim.integrations.axio against the real axio (Python >= 3.12): a ctxtrim store runs
an axio Agent loop in place of axio's store, messages convert both ways exactly, and
ctxtrim's pair-safe compaction boundary works on the history axio wrote.

CI runs Python 3.11, where axio cannot be installed: these tests skip there. Run them with
a 3.12 interpreter, e.g. ``python3.12 -m venv v && v/bin/pip install . axio`` then
``v/bin/python -m pytest tests/integrations/test_integration_axio.py``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 12):
    pytest.skip("axio requires Python >= 3.12", allow_module_level=True)
pytest.importorskip("axio", reason="axio not installed: pip install 'ctxtrim[axio]'")

from axio import blocks as ab
from axio.agent import Agent
from axio.compaction import compact_context as axio_compact_context
from axio.context import ContextStore, MemoryContextStore
from axio.messages import Message as AxioMessage
from axio.testing import (
    StubTransport,
    make_echo_tool,
    make_text_response,
    make_tool_use_response,
)

from ctxtrim import AutoCompactStore, KeepLastTurns, Message, SQLiteContextStore, validate
from ctxtrim import MemoryContextStore as CtxtrimMemory
from ctxtrim import compact_context as ctxtrim_compact_context
from ctxtrim.errors import CompactionSettingsError
from ctxtrim.integrations.axio import (
    AxioContextStore,
    AxioTransport,
    compact_context,
    from_axio,
    to_axio,
)

SAMPLES = [
    AxioMessage("system", [ab.TextBlock("be terse")]),
    AxioMessage("user", [ab.TextBlock("hi"), ab.ImageBlock("image/png", b"\x89PNG")]),
    AxioMessage(
        "assistant",
        [
            ab.ReasoningBlock("thinking", signature="sig"),
            ab.TextBlock("calling"),
            ab.ToolUseBlock("t1", "echo", {"msg": "x"}),
        ],
    ),
    AxioMessage("user", [ab.ToolResultBlock("t1", "x", is_error=False)]),
    AxioMessage("user", [ab.ToolResultBlock("t2", [ab.TextBlock("a")], is_error=True)]),
    # Fields ctxtrim has no place for travel in meta and come back exactly.
    AxioMessage("assistant", [ab.TextBlock("signed", signature="s", provider="anthropic")]),
    AxioMessage("assistant", [ab.ToolUseBlock("t3", "echo", {}, signature="s2")]),
    AxioMessage("user", [ab.AudioBlock("audio/wav", b"RIFF")]),
]


@pytest.mark.parametrize("message", SAMPLES, ids=range(len(SAMPLES)))
def test_messages_convert_both_ways_exactly(message: AxioMessage) -> None:
    converted = from_axio(message)
    assert to_axio(converted) == message
    # Tool ids stay real ctxtrim blocks even when the message needed meta.
    ids = [b.id for b in message.content if isinstance(b, ab.ToolUseBlock)]
    assert [u.id for u in converted.tool_uses] == ids


def test_is_an_axio_context_store_and_round_trips_history() -> None:
    async def main() -> None:
        store = AxioContextStore()
        assert isinstance(store, ContextStore)
        for m in SAMPLES:
            await store.append(m)
        assert await store.get_history() == SAMPLES
        fork = await store.fork()
        await fork.append(AxioMessage("user", [ab.TextBlock("only in fork")]))
        assert len(await store.get_history()) == len(SAMPLES)
        assert len(await fork.get_history()) == len(SAMPLES) + 1
        await store.add_context_tokens(10, 5)
        await store.add_context_tokens(1, 1)
        assert await store.get_context_tokens() == (11, 6)
        copied = await AxioContextStore.from_context(store)
        assert await copied.get_history() == SAMPLES
        await store.clear()
        assert await store.get_history() == []

    asyncio.run(main())


def run_agent(context: ContextStore) -> list[AxioMessage]:
    transport = StubTransport(
        [
            make_tool_use_response(tool_id="call_1", iteration=1),
            make_tool_use_response(tool_id="call_2", iteration=2),
            make_text_response("Done", iteration=3),
        ]
    )
    agent = Agent(system="be terse", transport=transport, tools=[make_echo_tool()])

    async def main() -> list[AxioMessage]:
        assert await agent.run("echo twice", context) == "Done"
        return await context.get_history()

    return asyncio.run(main())


def test_axio_agent_runs_on_a_sqlite_ctxtrim_store(tmp_path: Path) -> None:
    async def open_store() -> SQLiteContextStore:
        return await SQLiteContextStore.open(tmp_path / "axio.db", "s1")

    store = asyncio.run(open_store())
    ours = run_agent(AxioContextStore(store))
    theirs = run_agent(MemoryContextStore())
    assert ours == theirs  # the same history as axio's own store
    # ctxtrim sees real tool pairs in what axio wrote: valid, and trimmable pair-safely.
    history = asyncio.run(store.get_history())
    assert validate(history) == []
    trimmed = KeepLastTurns(1)(history)
    assert validate(trimmed) == []
    asyncio.run(store.close())


# ---- compact_context with an axio transport, against axio's own -----------------------------


def _chat(n: int) -> list[AxioMessage]:
    return [
        AxioMessage("user" if i % 2 == 0 else "assistant", [ab.TextBlock(f"m{i}")])
        for i in range(n)
    ]


def _with_tools() -> list[AxioMessage]:
    # 12 messages; with keep_recent=4 the split (index 8) lands on a tool result.
    h = _chat(6)
    h += [
        AxioMessage("user", [ab.TextBlock("run it")]),
        AxioMessage("assistant", [ab.ToolUseBlock("c1", "echo", {"msg": "x"})]),
        AxioMessage("user", [ab.ToolResultBlock("c1", "x")]),
        AxioMessage("assistant", [ab.TextBlock("done")]),
        AxioMessage("user", [ab.TextBlock("thanks")]),
        AxioMessage("assistant", [ab.TextBlock("bye")]),
    ]
    return h


async def _axio_store(history: list[AxioMessage]) -> AxioContextStore:
    store = AxioContextStore()
    for m in history:
        await store.append(m)
    return store


def _both(
    history: list[AxioMessage], responses: list[Any], keep_recent: int = 6
) -> tuple[list[AxioMessage] | None, list[AxioMessage] | None]:
    """ctxtrim's and axio's compact_context on the same history and the same transport."""

    async def main() -> tuple[list[AxioMessage] | None, list[AxioMessage] | None]:
        ours = await compact_context(
            await _axio_store(history), StubTransport(responses), keep_recent=keep_recent
        )
        theirs = await axio_compact_context(
            MemoryContextStore(list(history)), StubTransport(responses), keep_recent=keep_recent
        )
        return ours, theirs

    return asyncio.run(main())


def test_compact_context_returns_what_axios_returns() -> None:
    ours, theirs = _both(_chat(22), [make_text_response("SUMMARY")])
    assert isinstance(ours, list) and ours == theirs
    assert [m.role for m in ours[:2]] == ["user", "assistant"]
    assert ours[0].content == [ab.TextBlock("SUMMARY")] and len(ours) == 8


def test_compact_context_returns_none_where_axio_does() -> None:
    assert _both(_chat(5), [make_text_response("S")]) == (None, None)  # nothing before
    assert _both([], [make_text_response("S")]) == (None, None)
    # The summary call fails: axio logs and returns None; so does ctxtrim.
    failing = [[RuntimeError("provider down")]]
    assert _both(_chat(22), failing) == (None, None)


def test_a_cut_on_a_tool_result_walks_back_and_returns_what_axio_returns() -> None:
    ours, theirs = _both(_with_tools(), [make_text_response("S")], keep_recent=4)
    assert isinstance(ours, list) and isinstance(theirs, list)
    # axio's shape, two assistant messages in a row included (valid: providers take it).
    assert [m.role for m in theirs[:3]] == ["user", "assistant", "assistant"]
    assert ours == theirs
    assert validate([from_axio(m) for m in ours]) == []


def test_axio_readme_signature_with_max_messages() -> None:
    # axio's README (and axio 0.1-0.6): compact_context(context, transport, max_messages=20,
    # keep_recent=6) -- None while the history has at most max_messages messages.
    history = _chat(22)
    store = asyncio.run(_axio_store(history))
    transport = StubTransport([make_text_response("SUMMARY")])
    assert asyncio.run(compact_context(store, transport, max_messages=22, keep_recent=6)) is None
    out = asyncio.run(
        compact_context(store, transport, max_messages=20, keep_recent=6, system_prompt=None)
    )
    assert out is not None and len(out) == 8 and out[0].content == [ab.TextBlock("SUMMARY")]
    with pytest.raises(CompactionSettingsError, match="max_messages"):
        asyncio.run(compact_context(store, transport, max_messages=-1))


def test_ctxtrim_compact_context_given_an_axio_store_names_what_to_call() -> None:
    store = AxioContextStore()
    transport = StubTransport([make_text_response("S")])
    with pytest.raises(TypeError, match=r"integrations\.axio\.compact_context") as err:
        asyncio.run(ctxtrim_compact_context(store, transport))  # type: ignore[arg-type, unused-ignore]
    assert ".store" in str(err.value)
    # What it names works: the store's own ctxtrim store, or axio's call on the drop-in.
    asyncio.run(ctxtrim_compact_context(store.store, transport))


def test_keep_recent_zero_summarises_everything_where_axio_raises() -> None:
    history = _chat(8)
    ours = asyncio.run(
        compact_context(
            asyncio.run(_axio_store(history)),
            StubTransport([make_text_response("S")]),
            keep_recent=0,
        )
    )
    assert ours is not None and [m.role for m in ours] == ["user", "assistant"]
    with pytest.raises(IndexError):
        asyncio.run(
            axio_compact_context(
                MemoryContextStore(history), StubTransport([make_text_response("S")]), keep_recent=0
            )
        )
    with pytest.raises(CompactionSettingsError, match="keep_recent"):
        asyncio.run(
            compact_context(asyncio.run(_axio_store(history)), StubTransport([]), keep_recent=-1)
        )


def test_ctxtrim_compaction_takes_an_axio_transport() -> None:
    history = [Message.user("task")] + [
        Message.assistant(f"a{i}") if i % 2 else Message.user(f"u{i}") for i in range(1, 12)
    ]
    transport = StubTransport([make_text_response("the summary")])
    out = asyncio.run(ctxtrim_compact_context(history, transport, max_messages=4, keep_recent=2))
    assert out is not None and out[0].text == "task" and "the summary" in out[1].text
    assert out[2:] == history[-2:]
    store = AutoCompactStore(CtxtrimMemory(), StubTransport([make_text_response("s")]))
    assert isinstance(store.transport, AxioTransport)
    with pytest.raises(TypeError, match="axio transport"):
        AxioTransport(object())  # type: ignore[arg-type, unused-ignore]
