"""AutoCompactStore(after_compaction=...): re-inject what a summary must not lose, right after
the summary, in the same atomic write; a broken hook leaves the history as it was."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ctxtrim import (
    AutoCompactStore,
    CompactionEvent,
    CompactionSettingsError,
    MemoryContextStore,
    Message,
    ToolResultBlock,
    validate,
)
from ctxtrim.compaction import is_summary
from ctxtrim.transports import ExtractiveTransport

from helpers import agent_session

PLAN = Message.user("Plan: 1. reproduce 2. fix 3. test")


def compacting(
    history: list[Message], hook: object, seen: list[CompactionEvent]
) -> AutoCompactStore:
    return AutoCompactStore(
        MemoryContextStore(history),
        ExtractiveTransport(),
        keep_recent=4,
        max_tokens=10**9,
        on_event=seen.append,
        after_compaction=hook,  # type: ignore[arg-type]
    )


async def test_the_hook_sees_the_compacted_history_and_its_messages_follow_the_summary() -> None:
    history = agent_session(12)
    given: list[list[Message]] = []

    def hook(compacted: list[Message]) -> list[Message]:
        given.append(compacted)
        return [PLAN]

    seen: list[CompactionEvent] = []
    store = compacting(history, hook, seen)
    event = await store.compact()
    assert event.kind == "compacted" and event.injected == 1
    after = await store.get_history()
    (compacted,) = given
    assert is_summary(compacted[2]) and compacted[:2] == history[:2]
    assert after == [*compacted[:3], PLAN, *compacted[3:]]
    assert after[-4:] == history[-4:] and validate(after) == []
    assert event.messages_after == len(after) and seen == [event]


async def test_async_hook_with_a_tool_round_and_none() -> None:
    read = Message.assistant(tool_uses=[("r1", "read_file", {"path": "app.py"})])
    content = Message.tool_results(ToolResultBlock("r1", "def main(): ..."))

    async def files_last_read(compacted: list[Message]) -> list[Message]:
        return [read, content]

    seen: list[CompactionEvent] = []
    store = compacting(agent_session(12), files_last_read, seen)
    await store.compact()
    after = await store.get_history()
    assert after[3:5] == [read, content] and validate(after) == []
    assert seen[0].injected == 2

    store = compacting(agent_session(12), lambda compacted: None, seen)
    event = await store.compact()
    assert event.kind == "compacted" and event.injected == 0
    assert not any(m in (read, content) for m in await store.get_history())


def orphan(compacted: list[Message]) -> list[Message]:
    return [Message.tool_results(ToolResultBlock("nowhere", "x"))]


def dangling(compacted: list[Message]) -> list[Message]:
    return [Message.assistant(tool_uses=[("c1", "read_file", {})])]


def raises(compacted: list[Message]) -> list[Message]:
    raise RuntimeError("plan store down")


def not_a_list(compacted: list[Message]) -> Message:
    return PLAN


def not_messages(compacted: list[Message]) -> Sequence[object]:
    return [{"role": "user", "content": "plan"}]


@pytest.mark.parametrize(
    ("hook", "reason"),
    [
        (orphan, "not pair-complete"),
        (dangling, "not pair-complete"),
        (raises, "plan store down"),
        (not_a_list, "must return a list of Messages or None"),
        (not_messages, "not a Message"),
    ],
)
async def test_a_broken_hook_fails_the_compaction_and_changes_nothing(
    hook: object, reason: str
) -> None:
    history = agent_session(12)
    seen: list[CompactionEvent] = []
    store = compacting(history, hook, seen)
    event = await store.compact()
    assert event.kind == "failed" and event.error is not None
    assert event.error.kind == "hook_error" and reason in str(event.error)
    assert await store.get_history() == history


async def test_settings_and_fork() -> None:
    with pytest.raises(CompactionSettingsError, match="after_compaction must be callable"):
        compacting(agent_session(2), "plan", [])

    def hook(compacted: list[Message]) -> list[Message]:
        return [PLAN]

    store = compacting(agent_session(12), hook, [])
    fork = await store.fork()
    assert fork.after_compaction is hook
    assert (await fork.compact()).injected == 1
