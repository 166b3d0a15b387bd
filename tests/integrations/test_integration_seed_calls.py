"""Calls copied from the seed frameworks' documentation work on ctxtrim, or fail with a typed
error that names what to call instead (issue 30). axio's own calls (``compact_context(...,
max_messages=20, keep_recent=6)``, ``ctxtrim.compact_context(AxioContextStore(...))``) are
in tests/integrations/test_integration_axio.py, which needs Python >= 3.12."""

from __future__ import annotations

import asyncio
import math

import pytest

import ctxtrim
from ctxtrim import MemoryContextStore, Message, TurnCounter
from ctxtrim.tokens import TextTokenCounter


def test_heuristic_token_counter_given_chars_per_token_names_agentix_s_counter() -> None:
    # agentix documents HeuristicTokenCounter(chars_per_token=4.0); positionally that is
    # ctxtrim's encoding argument.
    with pytest.raises(TypeError, match=r"integrations\.agentix\.HeuristicTokenCounter\(4\.0\)"):
        ctxtrim.HeuristicTokenCounter(4.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="characters per token"):
        ctxtrim.HeuristicTokenCounter(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):  # a name it does not know stays a ValueError
        ctxtrim.HeuristicTokenCounter("no-such-table")
    # What the error names works (with agentix installed).
    agentix = pytest.importorskip("ctxtrim.integrations.agentix")
    counter = agentix.HeuristicTokenCounter(4.0)
    assert counter("hello world") == math.ceil(11 / 4)
    per_message = TextTokenCounter(counter, per_message_overhead=4)
    assert per_message.count_message(Message.user("hello world")) == 4 + 3


def test_messages_answer_is_user_and_is_assistant() -> None:
    assert Message.user("q").is_user() and not Message.user("q").is_assistant()
    assert Message.assistant("a").is_assistant() and not Message.assistant("a").is_user()
    assert Message.tool_results(("t1", "out")).is_user()  # results travel as user messages
    assert not Message.tool_results(("t1", "out")).is_real_user
    assert not Message.system("s").is_user() and not Message.system("s").is_assistant()


def test_rolling_back_a_turn_that_is_not_there_removes_nothing() -> None:
    # agent-air's interrupt() removes the current turn's messages, and nothing when there
    # are none; remove_turn does the same instead of raising KeyError.
    async def main() -> None:
        turns = TurnCounter()
        store = MemoryContextStore()
        await store.append(Message.user("list /tmp", turn=turns.next_user()))
        g = await store.generation()
        assert await store.remove_turn("a1") == 0  # the reply never arrived
        assert await store.remove_turn("u7") == 0
        assert await store.generation() == g
        await store.append(Message.assistant("Listing...", turn=turns.next_assistant()))
        assert await store.remove_turn("a1") == 1
        assert [m.text for m in await store.get_history()] == ["list /tmp"]

    asyncio.run(main())


def test_a_summary_for_a_result_not_stored_is_accepted() -> None:
    # agent-air's store_compact_summaries takes a summary for any tool id.
    async def main() -> None:
        store = MemoryContextStore()
        await store.append(Message.user("q"))
        await store.append(Message.assistant("", tool_uses=[("t1", "ls", {})]))
        assert await store.attach_compact_summary("t9", "never ran") is False
        await store.append(Message.tool_results(("t1", "a b c")))
        assert await store.attach_compact_summary("t1", "3 files") is True
        history = await store.get_history()
        assert history[-1].tool_results[0].compact_summary == "3 files"

    asyncio.run(main())


def test_ctxtrim_compact_context_given_another_framework_s_store_names_what_to_call() -> None:
    class OtherStore:  # what an axio ContextStore looks like to ctxtrim
        async def get_history(self) -> list[object]:
            return []

    class Transport:
        async def complete(self, messages: object, *, system: str, max_tokens: int) -> str:
            return "s"

    with pytest.raises(TypeError, match=r"integrations\.axio\.compact_context") as err:
        asyncio.run(ctxtrim.compact_context(OtherStore(), Transport()))  # type: ignore[arg-type]
    assert "OtherStore" in str(err.value) and ".store" in str(err.value)
