"""Each drop-in side by side with the framework it replaces, on generated agent histories
(tests/integrations/agent_histories.py: plain assistant runs, tool rounds, parallel calls,
results spread over messages, interjections, late results, empty messages).

The rule, for every history and setting: where the original's output is valid (by the
framework's own notion, judged with ``ctxtrim.validate`` on what it kept), the drop-in's
output is the same; where it is not, the drop-in's output is valid and differs only by
the documented fix (README, "Use with your framework" and "Coming from ..."). Each test
records which case it met with ``hypothesis.event`` (``pytest
--hypothesis-show-statistics`` prints the counts).

A framework that does not install on this Python skips its tests with the version: axio
and 10xScale Agentflow need Python >= 3.12, pydantic-ai 2.x >= 3.11.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from agent_histories import PAIR_KINDS, Converted, agent_histories, problems
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ctxtrim import Message

EXAMPLES = 300


def _needs(
    module: str, dist: str, min_python: tuple[int, int] | None = None
) -> pytest.MarkDecorator:
    """Skip with the reason: the Python version the framework needs, or the missing extra."""
    if min_python is not None and sys.version_info < min_python:
        version = ".".join(map(str, min_python))
        return pytest.mark.skip(
            reason=f"{dist} needs Python >= {version}; this is "
            f"{sys.version_info.major}.{sys.version_info.minor}"
        )
    return pytest.mark.skipif(
        importlib.util.find_spec(module.split(".")[0]) is None
        or importlib.util.find_spec(module) is None,
        reason=f"{dist} not installed (pip install '.[test]')",
    )


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _suffix_cut(positions: Sequence[int], n: int) -> int:
    """Where the kept suffix of ``positions`` (sorted input indices) starts: the smallest p
    such that every index from p to n-1 is kept."""
    kept = set(positions)
    p = n
    while p > 0 and (p - 1) in kept:
        p -= 1
    return p


# -- agentix: TrimRounds, FitContextWindow ------------------------------------------------------

agentix = _needs("agentix.context", "agentix-toolkit")


def _to_agentix(history: Sequence[Message]) -> Converted:
    from agentix.types import Message as AxMessage
    from agentix.types import Role, ToolCall

    out = Converted()
    for m in history:
        if m.role == "system":
            out.add(AxMessage(Role.SYSTEM, m.text), m)
        elif m.role == "assistant":
            calls = [ToolCall(name=u.name, args=dict(u.input), id=u.id) for u in m.tool_uses]
            meta = {"tool_calls": calls} if calls else {}
            out.add(AxMessage(Role.ASSISTANT, m.text, meta=meta), m)
        elif m.tool_results:
            for r in m.tool_results:
                one = Message.tool_results((r.tool_use_id, "out"))
                out.add(AxMessage(Role.TOOL, "out", meta={"call_id": r.tool_use_id}), one)
        else:
            out.add(AxMessage(Role.USER, m.text), m)
    return out


def _agentix_round_starts(items: Sequence[Any]) -> tuple[int, list[int]]:
    """agentix's ``_split``: the end of the pinned head (system messages, then the task if
    a user message follows them) and where each round starts."""
    from agentix.types import Role

    i = 0
    while i < len(items) and items[i].role is Role.SYSTEM:
        i += 1
    if i < len(items) and items[i].role is Role.USER:
        i += 1
    starts = [j for j in range(i, len(items)) if j == i or items[j].role is Role.ASSISTANT]
    return i, starts


def _check_agentix(conv: Converted, theirs: list[Any], ours: list[Any], name: str) -> None:
    items = conv.items
    head, starts = _agentix_round_starts(items)
    mine = conv.ctxtrim(ours)
    assert problems(mine) == [], (name, mine)
    if problems(conv.ctxtrim(theirs)) == []:
        event(f"agentix {name}: agentix valid, equal")
        assert ours == theirs
        if theirs is items:
            assert ours is items  # the same list back when nothing changed
        return
    event(f"agentix {name}: agentix invalid, drop-in differs by the fix")
    # The fix: a round holding a result whose call is in an earlier round is joined to it
    # (kept or dropped together). So the drop-in cuts at another round start, every round
    # start between the two cuts would orphan a result, and the pinned head is unchanged.
    pos = conv.positions(ours)
    cut = max(_suffix_cut(pos, len(items)), head)
    assert pos == [*range(head), *range(cut, len(items))]
    their_cut = max(_suffix_cut(conv.positions(theirs), len(items)), head)
    assert cut != their_cut
    assert cut in starts or cut == head
    if name == "TrimRounds":
        assert cut < their_cut  # a count keeps more rather than orphan a result
    lo, hi = sorted((cut, their_cut))
    for s in [*(s for s in starts if lo < s < hi), their_cut]:
        assert problems(conv.ctxtrim([*items[:head], *items[s:]]), PAIR_KINDS) != []


@agentix
@given(agent_histories(), st.integers(1, 6))
@settings(max_examples=EXAMPLES, deadline=None)
def test_agentix_trim_rounds(history: list[Message], rounds: int) -> None:
    from agentix import context as original

    from ctxtrim.integrations import agentix as dropin

    conv = _to_agentix(history)
    theirs = _run(original.TrimRounds(rounds).compact(conv.items))
    ours = _run(dropin.TrimRounds(rounds).compact(conv.items))
    _check_agentix(conv, theirs, ours, "TrimRounds")


@agentix
@given(agent_histories(), st.integers(1, 400), st.sampled_from([0, 20]))
@settings(max_examples=EXAMPLES, deadline=None)
def test_agentix_fit_context_window(history: list[Message], budget: int, reserve: int) -> None:
    from agentix import context as original

    from ctxtrim.integrations import agentix as dropin

    conv = _to_agentix(history)
    theirs = _run(original.FitContextWindow(budget, reserve_tokens=reserve).compact(conv.items))
    ours = _run(dropin.FitContextWindow(budget, reserve_tokens=reserve).compact(conv.items))
    _check_agentix(conv, theirs, ours, "FitContextWindow")
    # Counting is agentix's, message for message.
    assert dropin.count_tokens(conv.items) == original.count_tokens(conv.items)


# -- 10xScale Agentflow: MessageContextManager ---------------------------------------------------

agentflow = _needs("agentflow.core.state", "10xscale-agentflow", (3, 12))


def _to_agentflow(history: Sequence[Message]) -> Converted:
    from agentflow.core.state import (  # type: ignore[import-not-found, unused-ignore]
        Message as AfMessage,
    )
    from agentflow.core.state.message_block import (  # type: ignore[import-not-found, unused-ignore]
        TextBlock,
        ToolResultBlock,
    )

    out = Converted()
    for m in history:
        if m.role == "assistant" and m.tool_uses:
            calls = [
                {
                    "id": u.id,
                    "type": "function",
                    "function": {"name": u.name, "arguments": json.dumps(dict(u.input))},
                }
                for u in m.tool_uses
            ]
            msg = AfMessage(role="assistant", content=[TextBlock(text=m.text)], tools_calls=calls)
            out.add(msg, m)
        elif m.tool_results:
            for r in m.tool_results:
                block = ToolResultBlock(call_id=r.tool_use_id, output="out")
                one = Message.tool_results((r.tool_use_id, "out"))
                out.add(AfMessage(role="tool", content=[block]), one)
        else:
            out.add(AfMessage(role=m.role, content=[TextBlock(text=m.text)]), m)
    return out


@agentflow
@given(agent_histories(), st.integers(1, 5), st.booleans())
@settings(max_examples=EXAMPLES, deadline=None)
def test_agentflow_message_context_manager(
    history: list[Message], max_messages: int, remove_tool_msgs: bool
) -> None:
    from agentflow.core.state import (  # type: ignore[import-not-found, unused-ignore]
        AgentState,
    )
    from agentflow.core.state import (  # type: ignore[import-not-found, unused-ignore]
        MessageContextManager as Original,
    )

    from ctxtrim.integrations.agentflow import MessageContextManager as DropIn

    conv = _to_agentflow(history)
    state = AgentState(context=list(conv.items))
    original: Any = Original(max_messages, remove_tool_msgs)  # generic in its state type
    theirs: list[Any] = original.trim_context(state).context
    state = AgentState(context=list(conv.items))
    ours = DropIn(max_messages, remove_tool_msgs).trim_context(state).context
    assert ours is state.context
    mine = conv.ctxtrim(ours)
    assert problems(mine) == [], mine
    if problems(conv.ctxtrim(theirs)) == []:
        event(f"agentflow remove_tool_msgs={remove_tool_msgs}: Agentflow valid, equal")
        assert ours == theirs
        return
    event(f"agentflow remove_tool_msgs={remove_tool_msgs}: Agentflow invalid, differs by the fix")
    # The fix: the cut moves back to an earlier user message (so more is kept), and only
    # while the cut at a later one would orphan a tool result.
    assert len(ours) > len(theirs)
    assert [m for m in ours if m in theirs] == theirs or ours == conv.items


# -- axio: compact_context ------------------------------------------------------------------------

axio = _needs("axio.compaction", "axio", (3, 12))


def _to_axio(history: Sequence[Message]) -> Converted:
    from axio import blocks as ab
    from axio.messages import Message as AxioMessage

    out = Converted()
    for m in history:
        if m.role == "system":
            continue  # axio keeps the system prompt outside the history
        content: list[Any] = [ab.TextBlock(m.text)] if m.text else []
        content += [ab.ToolUseBlock(u.id, u.name, dict(u.input)) for u in m.tool_uses]
        content += [ab.ToolResultBlock(r.tool_use_id, "out") for r in m.tool_results]
        out.add(AxioMessage(m.role, content), m)
    return out


@axio
@given(agent_histories(), st.integers(1, 10), st.sampled_from([None, 0, 4, 8, 30]))
@settings(max_examples=EXAMPLES, deadline=None)
def test_axio_compact_context(
    history: list[Message], keep_recent: int, max_messages: int | None
) -> None:
    from axio.compaction import compact_context as original
    from axio.context import MemoryContextStore
    from axio.testing import StubTransport, make_text_response

    from ctxtrim.integrations.axio import compact_context as dropin
    from ctxtrim.integrations.axio import from_axio

    conv = _to_axio(history)
    n = len(conv.items)
    kwargs: dict[str, Any] = {} if max_messages is None else {"max_messages": max_messages}
    ours = _run(
        dropin(
            MemoryContextStore(conv.items),
            StubTransport([make_text_response("SUMMARY")]),
            keep_recent=keep_recent,
            **kwargs,
        )
    )
    if max_messages is not None and n <= max_messages:
        event("axio: max_messages not reached, None")
        assert ours is None  # axio <= 0.6's documented max_messages
        return
    # axio 0.12 has no max_messages: past it, the same call as axio's.
    theirs = _run(
        original(
            MemoryContextStore(conv.items),
            StubTransport([make_text_response("SUMMARY")]),
            keep_recent=keep_recent,
        )
    )

    def meaning(x: Any) -> Message:
        return from_axio(x)

    if theirs is None:
        event("axio: None, equal")
        assert ours is None
        return
    assert ours is not None
    mine = conv.ctxtrim(ours, meaning)
    assert problems(mine) == [], mine
    if problems(conv.ctxtrim(theirs, meaning)) == []:
        event("axio: axio valid, equal")
        assert ours == theirs
        return
    event("axio: axio invalid, differs by the fix")
    # The fix: the kept part starts at the nearest pair-safe cut at or before axio's.
    assert ours[:2] == theirs[:2]
    kept, their_kept = ours[2:], theirs[2:]
    assert len(kept) > len(their_kept) and kept[len(kept) - len(their_kept) :] == their_kept


# -- autogen: Buffered, HeadAndTail ------------------------------------------------------------

autogen = _needs("autogen_core.model_context", "autogen-core")


def _to_autogen(history: Sequence[Message]) -> Converted:
    from autogen_core import FunctionCall
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        SystemMessage,
        UserMessage,
    )

    out = Converted()
    for m in history:
        if m.role == "system":
            out.add(SystemMessage(content=m.text), m)
        elif m.role == "assistant" and m.tool_uses:
            calls = [FunctionCall(id=u.id, name=u.name, arguments="{}") for u in m.tool_uses]
            out.add(AssistantMessage(content=calls, source="a"), m)
        elif m.role == "assistant":
            out.add(AssistantMessage(content=m.text, source="a"), m)
        elif m.tool_results:
            rs = [
                FunctionExecutionResult(call_id=r.tool_use_id, content="out", name="f")
                for r in m.tool_results
            ]
            out.add(FunctionExecutionResultMessage(content=rs), m)
        else:
            out.add(UserMessage(content=m.text, source="u"), m)
    return out


def _placeholder(x: Any) -> Message:
    return Message.user(str(x.content))


@autogen
@given(agent_histories(), st.integers(1, 10))
@settings(max_examples=EXAMPLES, deadline=None)
def test_autogen_buffered(history: list[Message], size: int) -> None:
    from autogen_core import model_context as original

    from ctxtrim.integrations import autogen as dropin

    conv = _to_autogen(history)
    items = conv.items
    theirs = _run(original.BufferedChatCompletionContext(size, items).get_messages())
    ours = _run(dropin.BufferedChatCompletionContext(size, items).get_messages())
    mine = conv.ctxtrim(ours)
    assert problems(mine, PAIR_KINDS) == [] and mine, mine
    # Documented: leading system messages are kept (autogen drops them).
    pinned = 0
    while pinned < len(items) and conv.meaning[id(items[pinned])].role == "system":
        pinned += 1
    system = [x for x in items[:pinned] if x not in theirs]
    # autogen's notion of a valid view: pair-safe (its guard drops a leading function
    # result; a view may start on an assistant message), and not empty — a view of
    # nothing is no model input.
    if theirs and problems(conv.ctxtrim(theirs), PAIR_KINDS) == []:
        event("autogen Buffered: autogen valid, equal (system prompt kept)")
        assert ours == [*system, *theirs]
        return
    event("autogen Buffered: autogen invalid or empty, differs by the fix")
    # The fix: the core's pair-safe cut near autogen's (the view keeps the system prompt
    # and a suffix, the newest round whole).
    pos = conv.positions(ours)
    cut = max(_suffix_cut(pos, len(items)), pinned)
    assert pos == [*range(pinned), *range(cut, len(items))]


@autogen
@given(agent_histories(), st.integers(1, 5), st.integers(1, 6))
@settings(max_examples=EXAMPLES, deadline=None)
def test_autogen_head_and_tail(history: list[Message], head: int, tail: int) -> None:
    from autogen_core import model_context as original

    from ctxtrim.integrations import autogen as dropin

    conv = _to_autogen(history)
    items = conv.items
    theirs = _run(original.HeadAndTailChatCompletionContext(head, tail, items).get_messages())
    ours = _run(dropin.HeadAndTailChatCompletionContext(head, tail, items).get_messages())
    mine = conv.ctxtrim(ours, _placeholder)
    assert problems(mine, PAIR_KINDS) == [], mine
    if problems(conv.ctxtrim(theirs, _placeholder), PAIR_KINDS) == []:
        event("autogen HeadAndTail: autogen valid, equal")
        # The placeholder's count is documented to differ when autogen's guard drops count.
        strip = [x if id(x) in conv.index else "placeholder" for x in ours]
        assert strip == [x if id(x) in conv.index else "placeholder" for x in theirs]
        return
    event("autogen HeadAndTail: autogen invalid, differs by the fix")
