"""ctxtrim.integrations.autogen against the real autogen-core: autogen's context
bugs (microsoft/autogen#7955, PRs #8070 and #8207) pass through the drop-ins fixed, the
views equal autogen's wherever autogen is correct, and state/component round trips keep
real message objects."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

autogen_core = pytest.importorskip(
    "autogen_core", reason="autogen-core not installed: pip install 'ctxtrim[autogen]'"
)

from autogen_core import FunctionCall  # noqa: E402
from autogen_core import model_context as peer  # noqa: E402
from autogen_core.models import (  # noqa: E402
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from ctxtrim import Message, ToolResultBlock  # noqa: E402
from ctxtrim.integrations import autogen as ours  # noqa: E402

from strategies import histories  # noqa: E402


class TenPerMessage:
    """A duck-typed client as in microsoft/autogen#7955: 10 tokens per message, none per call."""

    def count_tokens(self, msgs: Sequence[LLMMessage], tools: object = ()) -> int:
        return 10 * len(msgs)

    def remaining_tokens(self, msgs: Sequence[LLMMessage], tools: object = ()) -> int:
        return 100 - self.count_tokens(msgs)


class PrimedCounter(TenPerMessage):
    """Like a real model client: 3 extra tokens per request, as OpenAI's reply priming."""

    def count_tokens(self, msgs: Sequence[LLMMessage], tools: object = ()) -> int:
        return 10 * len(msgs) + 3


def call(i: int) -> AssistantMessage:
    return AssistantMessage(
        content=[FunctionCall(id=f"c{i}", name="f", arguments="{}")], source="a"
    )


def res(i: int) -> FunctionExecutionResultMessage:
    return FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(call_id=f"c{i}", content="ok", name="f", is_error=False)]
    )


PEER_HISTORY: list[LLMMessage] = [
    SystemMessage(content="sys"),
    UserMessage(content="task", source="u"),
    call(1),
    res(1),
    call(2),
    res(2),
    call(3),
    res(3),
    AssistantMessage(content="done", source="a"),
]


def pair_problems(out: Sequence[LLMMessage], source: Sequence[LLMMessage]) -> list[str]:
    """Orphan results and calls cut from their results (the obvious way, in Python)."""
    answered = {
        r.call_id
        for m in source
        if isinstance(m, FunctionExecutionResultMessage)
        for r in m.content
    }
    seen: set[str] = set()
    kept_results = set()
    problems = []
    for m in out:
        if isinstance(m, FunctionExecutionResultMessage):
            for r in m.content:
                if r.call_id not in seen:
                    problems.append(f"orphan result {r.call_id}")
                kept_results.add(r.call_id)
        elif isinstance(m, AssistantMessage) and isinstance(m.content, list):
            seen |= {c.id for c in m.content}
    problems += [f"call {c} without its result" for c in seen & answered - kept_results]
    return problems


def to_autogen(history: Sequence[Message]) -> list[LLMMessage]:
    """A ctxtrim history (tests/strategies.py) as autogen messages."""
    out: list[LLMMessage] = []
    for m in history:
        if m.role == "system":
            out.append(SystemMessage(content=m.text))
        elif m.role == "assistant" and m.tool_uses:
            calls = [FunctionCall(id=u.id, name=u.name, arguments="{}") for u in m.tool_uses]
            out.append(AssistantMessage(content=calls, source="a"))
        elif m.role == "assistant":
            out.append(AssistantMessage(content=m.text, source="a"))
        elif m.tool_results:
            rs = [
                FunctionExecutionResult(call_id=r.tool_use_id, content="r", name="f")
                for r in m.tool_results
                if isinstance(r, ToolResultBlock)
            ]
            out.append(FunctionExecutionResultMessage(content=rs))
        else:
            out.append(UserMessage(content=m.text, source="u"))
    return out


def view(ctx: object) -> list[LLMMessage]:
    return asyncio.run(ctx.get_messages())  # type: ignore[attr-defined]


# -- TokenLimited orphans results and calls (microsoft/autogen#7955) ---------------------------


@pytest.mark.parametrize("limit", [80, 60, 50, 40, 30])
def test_token_limited_peer_scenario_is_pair_safe(limit: int) -> None:
    out = view(
        ours.TokenLimitedChatCompletionContext(
            TenPerMessage(),  # type: ignore[arg-type]  # duck-typed: only count_tokens is called
            token_limit=limit,
            initial_messages=PEER_HISTORY,
        )
    )
    assert pair_problems(out, PEER_HISTORY) == []
    assert 10 * len(out) <= limit
    # The system prompt and the task survive; the newest messages are kept as a suffix.
    assert out[:2] == PEER_HISTORY[:2]
    assert out[2:] == PEER_HISTORY[len(PEER_HISTORY) - len(out) + 2 :]


def test_token_limited_peer_itself_breaks_pairs_on_that_history() -> None:
    # autogen's own output on that history, so the test above is known to exercise the bug.
    broken = [
        view(
            peer.TokenLimitedChatCompletionContext(
                TenPerMessage(),  # type: ignore[arg-type]
                token_limit=limit,
                initial_messages=PEER_HISTORY,
            )
        )
        for limit in (80, 60, 50)
    ]
    assert all(pair_problems(out, PEER_HISTORY) for out in broken)


def test_token_limited_checks_the_whole_view_with_the_client() -> None:
    # Per-message counts sum to 10 * n, but the client adds 3 per request: the view
    # must still be within the limit by the client's own count.
    out = view(
        ours.TokenLimitedChatCompletionContext(
            PrimedCounter(),  # type: ignore[arg-type]  # duck-typed: only count_tokens is called
            token_limit=60,
            initial_messages=PEER_HISTORY,
        )
    )
    assert PrimedCounter().count_tokens(out) <= 60
    assert pair_problems(out, PEER_HISTORY) == []


def test_token_limited_without_limit_uses_remaining_tokens() -> None:
    # 18 messages, 180 tokens; the client's window is 100.
    history = [*PEER_HISTORY, *(UserMessage(content=f"q{i}", source="u") for i in range(9))]
    out = view(ours.TokenLimitedChatCompletionContext(TenPerMessage(), initial_messages=history))  # type: ignore[arg-type]  # a duck-typed client: TokenLimited only calls count_tokens
    assert TenPerMessage().remaining_tokens(out) >= 0
    assert len(out) == 10
    assert out[:2] == history[:2] and out[2:] == history[-8:]


def test_token_limited_returns_everything_within_the_limit() -> None:
    ctx = ours.TokenLimitedChatCompletionContext(
        TenPerMessage(),  # type: ignore[arg-type]  # duck-typed: only count_tokens is called
        token_limit=90,
        initial_messages=PEER_HISTORY,
    )
    assert view(ctx) == PEER_HISTORY


def test_token_limited_rejects_a_bad_limit() -> None:
    with pytest.raises(ValueError, match="token_limit"):
        ours.TokenLimitedChatCompletionContext(TenPerMessage(), token_limit=0)  # type: ignore[arg-type]  # a duck-typed client: TokenLimited only calls count_tokens


# -- HeadAndTail's placeholder under-counts (microsoft/autogen PR #8070) -----------------------


def test_head_and_tail_placeholder_states_the_true_count() -> None:
    hist: list[LLMMessage] = [
        UserMessage(content="task", source="u"),
        call(1),
        res(1),
        call(2),
        res(2),
        AssistantMessage(content="done", source="a"),
    ]
    out = view(ours.HeadAndTailChatCompletionContext(2, 2, initial_messages=hist))
    placeholders = [m for m in out if isinstance(m, UserMessage) and m.source == "System"]
    assert len(placeholders) == 1
    skipped = len(hist) - (len(out) - 1)
    assert placeholders[0].content == f"Skipped {skipped} messages."
    assert pair_problems(out, hist) == []
    # autogen says 2 while it omits 4.
    theirs = view(peer.HeadAndTailChatCompletionContext(2, 2, initial_messages=hist))
    assert [m.content for m in theirs if getattr(m, "source", "") == "System"] == [
        "Skipped 2 messages."
    ]
    assert len(hist) - (len(theirs) - 1) == 4


# -- component round trip turns messages into dicts (microsoft/autogen PR #8207) ---------------


@pytest.mark.parametrize(
    "make",
    [
        lambda ms: ours.BufferedChatCompletionContext(buffer_size=5, initial_messages=ms),
        lambda ms: ours.HeadAndTailChatCompletionContext(1, 1, initial_messages=ms),
        lambda ms: ours.UnboundedChatCompletionContext(initial_messages=ms),
    ],
)
def test_component_round_trip_keeps_message_objects(make: object) -> None:
    ctx = make([UserMessage(content="hi", source="u"), call(1), res(1)])  # type: ignore[operator]
    again = type(ctx).load_component(ctx.dump_component())
    assert type(again) is type(ctx)
    assert view(again) == view(ctx)
    assert all(not isinstance(m, dict) for m in view(again))
    # The peer's Buffered round trip gives dicts (the bug this fixes).
    theirs = peer.BufferedChatCompletionContext(
        buffer_size=5, initial_messages=[UserMessage(content="hi", source="u")]
    )
    assert [type(m) for m in view(type(theirs).load_component(theirs.dump_component()))] == [dict]  # type: ignore[comparison-overlap]  # autogen's round trip gives dicts at runtime (the bug this checks)


def test_save_and_load_state_round_trip() -> None:
    async def main() -> None:
        ctx = ours.BufferedChatCompletionContext(buffer_size=4)
        for m in PEER_HISTORY:
            await ctx.add_message(m)
        before = await ctx.get_messages()
        state = await ctx.save_state()
        fresh = ours.BufferedChatCompletionContext(buffer_size=4)
        await fresh.add_message(UserMessage(content="stale", source="u"))
        await fresh.get_messages()  # mirrors the stale list, which load_state replaces
        await fresh.load_state(state)
        assert await fresh.get_messages() == before
        await fresh.clear()
        assert await fresh.get_messages() == []

    asyncio.run(main())


def test_unbounded_returns_a_copy() -> None:
    ctx = ours.UnboundedChatCompletionContext(initial_messages=PEER_HISTORY)
    view(ctx).clear()
    assert view(ctx) == PEER_HISTORY


# -- the framework's usage pattern: an agent loop adding messages ----------------------------


def test_agent_loop_every_view_is_pair_safe_and_bounded() -> None:
    async def main() -> None:
        contexts = [
            ours.BufferedChatCompletionContext(buffer_size=5),
            ours.HeadAndTailChatCompletionContext(head_size=2, tail_size=3),
            ours.TokenLimitedChatCompletionContext(TenPerMessage(), token_limit=70),  # type: ignore[arg-type]  # a duck-typed client: TokenLimited only calls count_tokens
        ]
        history: list[LLMMessage] = []
        step = [UserMessage(content="task", source="u")]
        for i in range(40):
            step += [call(i), res(i)] if i % 5 else [AssistantMessage(content="ok", source="a")]  # type: ignore[list-item]  # any LLMMessage; mypy infers the list from its first item
            for m in step:
                history.append(m)
                for ctx in contexts:
                    await ctx.add_message(m)
            step = []
            for ctx in contexts:
                out = await ctx.get_messages()
                assert pair_problems(out, history) == [], (type(ctx).__name__, i)
            assert len(await contexts[2].get_messages()) <= 7

    asyncio.run(main())


# -- same result as autogen where autogen is correct ------------------------------------------


def text_history(n: int) -> list[LLMMessage]:
    return [
        UserMessage(content=f"u{i}", source="u")
        if i % 2 == 0
        else AssistantMessage(content=f"a{i}", source="a")
        for i in range(n)
    ]


@given(st.integers(1, 30), st.integers(2, 12))
@settings(max_examples=60, deadline=None)
def test_buffered_equals_autogen_on_text_histories(n: int, size: int) -> None:
    hist = text_history(n)
    assert view(ours.BufferedChatCompletionContext(size, initial_messages=hist)) == view(
        peer.BufferedChatCompletionContext(size, initial_messages=hist)
    )


@given(st.integers(1, 30), st.integers(1, 6), st.integers(1, 6))
@settings(max_examples=60, deadline=None)
def test_head_and_tail_equals_autogen_on_text_histories(n: int, head: int, tail: int) -> None:
    hist = text_history(n)
    assert view(ours.HeadAndTailChatCompletionContext(head, tail, initial_messages=hist)) == view(
        peer.HeadAndTailChatCompletionContext(head, tail, initial_messages=hist)
    )


def test_buffered_keeps_autogen_s_window_and_never_an_empty_one() -> None:
    # Buffered(1) keeps what autogen keeps: the answer alone.
    hist = text_history(4)
    assert view(ours.BufferedChatCompletionContext(1, initial_messages=hist)) == hist[3:]
    assert view(peer.BufferedChatCompletionContext(1, initial_messages=hist)) == hist[3:]
    # The newest message is a function result: autogen drops it and keeps nothing at all;
    # ours keeps the newest round whole: the question, the call and its result.
    tools: list[LLMMessage] = [UserMessage(content="task", source="u"), call(1), res(1)]
    assert view(peer.BufferedChatCompletionContext(1, initial_messages=tools)) == []
    assert view(ours.BufferedChatCompletionContext(1, initial_messages=tools)) == tools


def test_buffered_keeps_the_system_prompt_autogen_drops() -> None:
    # A deliberate difference (docs/design.md): leading system messages are pinned.
    hist = [SystemMessage(content="sys"), *text_history(8)]
    ours_out = view(ours.BufferedChatCompletionContext(4, initial_messages=hist))
    theirs = view(peer.BufferedChatCompletionContext(4, initial_messages=hist))
    assert ours_out == [hist[0], *theirs]


# -- properties on generated agent histories ---------------------------------------------------


@given(histories(), st.integers(1, 12), st.integers(1, 6), st.integers(10, 200))
@settings(max_examples=50, deadline=None)
def test_views_of_generated_histories_are_pair_safe(
    history: list[Message], size: int, tail: int, limit: int
) -> None:
    hist = to_autogen(history)
    pos = {id(m): i for i, m in enumerate(hist)}
    for ctx in (
        ours.BufferedChatCompletionContext(size, initial_messages=hist),
        ours.HeadAndTailChatCompletionContext(size, tail, initial_messages=hist),
        ours.TokenLimitedChatCompletionContext(
            TenPerMessage(),  # type: ignore[arg-type]  # duck-typed: only count_tokens is called
            token_limit=limit,
            initial_messages=hist,
        ),
    ):
        out = view(ctx)
        assert pair_problems(out, hist) == []
        # autogen's own objects, in order, plus at most one placeholder.
        where = [pos[id(m)] for m in out if id(m) in pos]
        assert where == sorted(set(where))
        assert len(where) >= len(out) - 1


# -- autogen compatibility: leading orphans, request overhead, configs, long histories --------


def test_token_limited_drops_a_leading_orphan_result_like_buffered() -> None:
    async def main() -> None:
        stored = [res(0), UserMessage(content="q", source="u"), call(1), res(1)]
        for ctx in (
            ours.TokenLimitedChatCompletionContext(TenPerMessage(), token_limit=1000),  # type: ignore[arg-type]  # a duck-typed client: TokenLimited only calls count_tokens
            ours.BufferedChatCompletionContext(10),
            ours.HeadAndTailChatCompletionContext(1, 1),
        ):
            for m in stored:
                await ctx.add_message(m)  # type: ignore[arg-type]  # autogen messages; pydantic's BaseModel is the inferred join
            view = await ctx.get_messages()
            assert not isinstance(view[0], FunctionExecutionResultMessage), type(ctx)
            assert pair_problems(view, stored) == []  # type: ignore[arg-type]  # autogen messages; pydantic's BaseModel is the inferred join

    asyncio.run(main())


def test_token_limited_counts_the_request_overhead_once_not_per_message() -> None:
    async def main() -> None:
        # PrimedCounter: 10 a message + 3 a request. Three messages take 33 <= 35.
        ctx = ours.TokenLimitedChatCompletionContext(
            PrimedCounter(),  # type: ignore[arg-type]  # duck-typed: only count_tokens is called
            token_limit=35,
            pin_task=False,
        )
        for i in range(6):
            await ctx.add_message(UserMessage(content=f"m{i}", source="u"))
        view = await ctx.get_messages()
        assert [m.content for m in view] == ["m3", "m4", "m5"]
        assert PrimedCounter().count_tokens(view) <= 35

    asyncio.run(main())


@pytest.mark.parametrize(
    ("theirs", "kwargs"),
    [
        (peer.BufferedChatCompletionContext, {"buffer_size": 3}),
        (peer.HeadAndTailChatCompletionContext, {"head_size": 1, "tail_size": 2}),
        (peer.UnboundedChatCompletionContext, {}),
    ],
)
def test_configs_dumped_by_autogen_load_as_ctxtrims_class(
    theirs: type, kwargs: dict[str, Any]
) -> None:
    config = theirs(initial_messages=PEER_HISTORY, **kwargs).dump_component()
    name = theirs.__name__
    loaded = getattr(ours, name).load_component(config)
    assert type(loaded) is getattr(ours, name)

    async def main() -> None:
        assert pair_problems(await loaded.get_messages(), PEER_HISTORY) == []

    asyncio.run(main())


def test_long_history_views_follow_appends_and_edits() -> None:
    """The mirror is extended by new messages only; a list edited behind the context's back
    is caught by the identity check of what the view relies on."""

    async def main() -> None:
        buffered = ours.BufferedChatCompletionContext(20)
        ht = ours.HeadAndTailChatCompletionContext(2, 20)
        plain = peer.BufferedChatCompletionContext(20)
        msgs: list[LLMMessage] = [UserMessage(content="task", source="u")]
        for i in range(3000):
            msgs += [call(i), res(i)]
        for ctx in (buffered, ht, plain):
            for m in msgs:
                await ctx.add_message(m)
        assert await buffered.get_messages() == await plain.get_messages()
        view = await ht.get_messages()
        assert view[1].content == f"Skipped {len(msgs) - 21} messages."  # head: the task
        # Replace the newest message in storage (not through add_message).
        for ctx in (buffered, ht, plain):
            ctx._messages[-1] = UserMessage(content="edited", source="u")
        assert (await buffered.get_messages())[-1].content == "edited"
        assert (await ht.get_messages())[-1].content == "edited"

    asyncio.run(main())
