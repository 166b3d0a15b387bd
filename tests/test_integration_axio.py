"""ctxtrim.integrations.axio against the real axio (Python >= 3.12): a ctxtrim store runs
an axio Agent loop in place of axio's store, messages convert both ways exactly, and
ctxtrim's pair-safe compaction boundary works on the history axio wrote.

CI runs Python 3.11, where axio cannot be installed: these tests skip there. Run them with
a 3.12 interpreter, e.g. ``python3.12 -m venv v && v/bin/pip install . axio`` then
``v/bin/python -m pytest tests/test_integration_axio.py``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("axio requires Python >= 3.12", allow_module_level=True)
pytest.importorskip("axio", reason="axio not installed: pip install 'ctxtrim[axio]'")

from axio import blocks as ab
from axio.agent import Agent
from axio.context import ContextStore, MemoryContextStore
from axio.messages import Message as AxioMessage
from axio.testing import (
    StubTransport,
    make_echo_tool,
    make_text_response,
    make_tool_use_response,
)

from ctxtrim import KeepLastTurns, SQLiteContextStore, validate
from ctxtrim.integrations.axio import AxioContextStore, from_axio, to_axio

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
