"""ctxtrim.integrations.agentflow, against Agentflow's documented behaviour (its package,
10xscale-agentflow / 10xgraph, does not install on this Python), and what every ctxtrim
strategy does with a mid-conversation system message."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

import ctxtrim
from ctxtrim import Message, Pipeline, ToolResultBlock, ToolUseBlock, validate
from ctxtrim.integrations.agentflow import (
    MessageContextManager,
    RemoveToolSequences,
    remove_tool_messages,
)


@dataclass
class AfMessage:  # the fields Agentflow's manager reads
    role: str
    text: str = ""
    tools_calls: list[dict[str, Any]] | None = None


@dataclass
class AgentState:
    context: list[AfMessage] = field(default_factory=list)


def af_call(cid: str) -> AfMessage:
    return AfMessage("assistant", tools_calls=[{"id": cid, "type": "function"}])


def test_max_messages_counts_user_messages_and_hoists_system() -> None:
    ctx = [AfMessage("system", "s0"), AfMessage("user", "q1"), AfMessage("assistant", "a1")]
    ctx += [AfMessage("system", "mid"), AfMessage("user", "q2"), af_call("c")]
    ctx += [AfMessage("tool", "r"), AfMessage("assistant", "a2"), AfMessage("user", "q3")]
    state = AgentState(ctx)
    mgr = MessageContextManager(max_messages=2)
    assert mgr.trim_context(state) is state
    assert [m.text or m.role for m in state.context] == [
        "s0",
        "mid",
        "q2",
        "assistant",
        "r",
        "a2",
        "q3",
    ]
    # Within the limit: the same list, system message left where it was.
    same = AgentState(ctx)
    assert MessageContextManager(3).trim_context(same).context is ctx
    out = asyncio.run(MessageContextManager(1).atrim_context(AgentState(list(ctx))))
    assert [m.text for m in out.context] == ["s0", "mid", "q3"]


def test_remove_tool_msgs_removes_complete_sequences_only() -> None:
    ctx = [AfMessage("user", "q"), af_call("1"), AfMessage("tool", "r1"), af_call("2")]
    ctx += [AfMessage("tool", "r2"), AfMessage("assistant", "final")]
    out = remove_tool_messages(ctx)
    # call1/result1 are followed by another call (incomplete): kept; call2/result2 go.
    assert out == [ctx[0], ctx[1], ctx[2], ctx[5]]
    state = AgentState(ctx)
    MessageContextManager(10, remove_tool_msgs=True).trim_context(state)
    assert state.context == out  # committed even without trimming
    pending = [AfMessage("user", "q"), af_call("1"), AfMessage("tool", "r1")]
    assert remove_tool_messages(pending) is pending


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        MessageContextManager(0)
    with pytest.raises(TypeError):
        MessageContextManager(2, remove_tool_msgs="yes")  # type: ignore[arg-type]


def call(tid: str) -> Message:
    return Message.assistant([ToolUseBlock(id=tid, name="ls", input={})])


def result(tid: str) -> Message:
    return Message.tool_results([ToolResultBlock(tool_use_id=tid, content="r")])


def test_remove_tool_sequences_strategy() -> None:
    h = [Message.user("q"), call("1"), result("1"), call("2"), result("2")]
    h += [Message.assistant("final"), Message.user("q2"), call("3"), result("3")]
    out = RemoveToolSequences()(h)
    assert out == [h[0], h[1], h[2], h[5], h[6], h[7], h[8]]
    assert validate(out) == []
    # As Agentflow's reducer: once call2 is gone, call1's sequence is complete too.
    again = RemoveToolSequences()(out)
    assert again == [h[0], h[5], h[6], h[7], h[8]]
    assert RemoveToolSequences()(again) is again  # nothing left: the same list
    # A results message that does not answer exactly the calls is left alone.
    odd = [Message.user("q"), call("1"), result("x"), Message.assistant("final")]
    assert RemoveToolSequences()(odd) is odd
    both = Pipeline(RemoveToolSequences(), ctxtrim.KeepLastTurns(1, pin_task=False))
    assert both(h) == [h[6], h[7], h[8]]
    assert both.describe(h).dropped_messages == 6


MID = Message.system("mid-conversation rule")


def mid_history() -> list[Message]:
    h = [Message.system("sys"), Message.user("task"), Message.assistant("a1")]
    h += [MID, Message.user("q2"), Message.assistant("a2")]
    for i in range(3):
        h += [Message.user(f"q{i + 3}"), call(f"t{i}"), result(f"t{i}"), Message.assistant("ok")]
    return h


@pytest.mark.parametrize(
    "strategy",
    [
        ctxtrim.KeepLastTurns(1),
        ctxtrim.TrimRounds(1),
        ctxtrim.KeepLastMessages(2),
        ctxtrim.FitContextWindow(60),
        ctxtrim.HeadAndTail(2, 2),
    ],
    ids=repr,
)
def test_mid_conversation_system_message_is_an_ordinary_message(
    strategy: ctxtrim.ContextStrategy,
) -> None:
    # Decision: only leading system messages are pinned; a later one is dropped with the
    # prefix like any message, and kept in place when it falls in the kept window.
    h = mid_history()
    out = strategy(h)
    assert out[0] is h[0] and MID not in out
    assert validate(out) == []
    wide = type(strategy)(*(10_000,) * (2 if isinstance(strategy, ctxtrim.HeadAndTail) else 1))
    assert wide(h) is h


@pytest.mark.parametrize(
    "strategy",
    [
        ctxtrim.TruncateToolOutputs(1),
        ctxtrim.ClearToolResults(trigger=1, keep=0),
        RemoveToolSequences(),
    ],
    ids=repr,
)
def test_in_place_strategies_keep_a_mid_conversation_system_message(
    strategy: ctxtrim.ContextStrategy,
) -> None:
    h = mid_history()
    out = strategy(h)
    assert MID in out and out.index(MID) == 3


def test_a_user_interjecting_while_a_tool_runs_never_orphans_its_result() -> None:
    """Agentflow cuts at the ``max_messages``-th last user message even when that message
    stands between a tool call and its result; the drop-in moves the cut back."""
    ctx = [AfMessage("user", "q1"), AfMessage("assistant", "a1"), AfMessage("user", "q2")]
    ctx += [af_call("c"), AfMessage("user", "wait, also check b"), AfMessage("tool", "r")]
    ctx += [AfMessage("assistant", "a2"), AfMessage("user", "q3")]
    out = MessageContextManager(max_messages=2).trim_messages(ctx)
    assert [m.text or m.role for m in out] == [
        "q2",
        "assistant",
        "wait, also check b",
        "r",
        "a2",
        "q3",
    ]
    # Dropping the call and its result together is a clean cut.
    first = [af_call("c"), AfMessage("user", "hm"), AfMessage("tool", "r"), AfMessage("user", "q")]
    assert [m.text for m in MessageContextManager(1).trim_messages(first)] == ["q"]
    # No user message left to move to: nothing is cut.
    only = [*first[:3], AfMessage("assistant", "a"), AfMessage("user", "q")]
    assert MessageContextManager(1).trim_messages(only) == [AfMessage("user", "q")]
    assert MessageContextManager(1).trim_messages(only[:4]) == only[:4]
    late = [AfMessage("user", "q0"), af_call("c"), AfMessage("user", "hm"), AfMessage("tool", "r")]
    assert MessageContextManager(1).trim_messages(late) == late  # moved back to q0
