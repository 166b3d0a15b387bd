"""The core's reader of autogen messages (``_core.autogen_skeletons``, behind
``ctxtrim.integrations.autogen.to_skeletons``) makes exactly what the Python definition
``to_skeleton`` makes, message for message, on any history: the same structs of the same
classes with the same field values, the same token facts, and the same error for a message
``to_skeleton`` refuses."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "autogen_core", reason="autogen-core not installed: pip install 'ctxtrim[autogen]'"
)

from autogen_core import FunctionCall, Image
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)

from ctxtrim import Message, MessageLog, _core
from ctxtrim.integrations import autogen as ours


class _UserSub(UserMessage):
    """A subclass: the core leaves it to ``to_skeleton``."""


class _CallSub(FunctionCall):
    pass


class _Str(str):
    pass


def _image() -> Any:
    pil = pytest.importorskip("PIL.Image")
    return Image.from_pil(pil.new("RGB", (1, 1)))


# Text of every kind: empty, unicode, JSON with what its encoder escapes (quotes,
# backslashes, control characters: a tool call is priced on its input's JSON), and now and
# then a lone surrogate (not UTF-8: a message to_skeleton refuses).
texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "é", "日本語", "a\u200db", "\U0001f600", "x\ud800", "\x7f\u2028"]),
    st.sampled_from(['{"q": "x"}', '"' * 40, "\\" * 40, "a\nb\tc\x01" * 8, '{"p": "C:\\\\"}']),
)
ids = st.one_of(st.sampled_from(["", "c1", "c2", "c3", "ü"]), texts)


@st.composite
def calls(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["plain", "plain", "plain", "sub", "dict-args", "none-id"]))
    call_id, name, arguments = draw(ids), draw(st.sampled_from(["", "search", "ö"])), draw(texts)
    if kind == "sub":
        return _CallSub(id=call_id, name=name, arguments=arguments)
    if kind == "dict-args":
        return FunctionCall(id=call_id, name=name, arguments={"q": 1})  # type: ignore[arg-type]
    if kind == "none-id":
        return FunctionCall(id=None, name=name, arguments=arguments)  # type: ignore[arg-type]
    return FunctionCall(id=call_id, name=name, arguments=arguments)


@st.composite
def results(draw: st.DrawFn) -> Any:
    is_error: Any = draw(st.sampled_from([None, True, False, "odd"]))
    call_id, content = draw(ids), draw(texts)
    if is_error == "odd":  # not of the declared type: built around pydantic's checks
        return FunctionExecutionResult.model_construct(
            call_id=call_id, content=content, name="f", is_error=1
        )
    return FunctionExecutionResult(call_id=call_id, content=content, name="f", is_error=is_error)


@st.composite
def messages(draw: st.DrawFn) -> LLMMessage:
    kind = draw(
        st.sampled_from(
            [
                "system",
                "user",
                "user-parts",
                "assistant",
                "calls",
                "results",
                "user-sub",
                "str-sub",
                "odd-content",
                "odd-thought",
            ]
        )
    )
    if kind == "system":
        return SystemMessage(content=draw(texts))
    if kind == "user":
        return UserMessage(content=draw(texts), source="u")
    if kind == "user-parts":
        parts = draw(st.lists(st.one_of(texts, st.just("<image>"), st.just("<str-sub>"))))
        items = [
            _image() if p == "<image>" else _Str("sub") if p == "<str-sub>" else p for p in parts
        ]
        return UserMessage.model_construct(content=items, source="u")
    if kind == "assistant":
        return AssistantMessage(content=draw(texts), source="a")
    if kind == "calls":
        thought = draw(st.one_of(st.none(), texts))
        return AssistantMessage.model_construct(
            content=draw(st.lists(calls(), max_size=3)), thought=thought, source="a"
        )
    if kind == "results":
        return FunctionExecutionResultMessage.model_construct(
            content=draw(st.lists(results(), max_size=3))
        )
    if kind == "user-sub":
        return _UserSub(content=draw(texts), source="u")
    if kind == "str-sub":
        return SystemMessage.model_construct(content=_Str(draw(texts)))
    if kind == "odd-content":
        cls: Any = draw(st.sampled_from([SystemMessage, UserMessage, AssistantMessage]))
        odd: LLMMessage = cls.model_construct(
            content=draw(st.sampled_from([3, None, ("x",)])), source="s"
        )
        return odd
    return AssistantMessage.model_construct(
        content=[FunctionCall(id="c9", name="f", arguments="{}")], thought=7, source="a"
    )


def shape(x: Any) -> Any:
    """``x`` with the class of every part: equal shapes are the same structs, field for field."""
    if isinstance(x, msgspec.Struct):
        return (type(x), tuple(shape(getattr(x, f)) for f in x.__struct_fields__))
    if isinstance(x, dict):
        return (type(x), sorted((shape(k), shape(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return (type(x), [shape(v) for v in x])
    return (type(x), x)


def outcome(f: Any) -> Any:
    try:
        return ("ok", f())
    except Exception as e:  # the error is what is compared
        return ("error", type(e), str(e))


def index(skeletons: list[Message]) -> Any:
    """What a MessageLog reads of the skeletons' facts: pair-safety, tool-id checks, turns."""
    log = MessageLog(skeletons)
    return (
        [log.is_safe_cut(c) for c in range(len(skeletons) + 1)],
        [log.turn_of(i) for i in range(len(skeletons))],
        log.pinned_head(True),
        _core.validate(skeletons),
    )


def reference(history: list[LLMMessage], start: int, *, facts: bool = False) -> list[Any]:
    """What ``to_skeletons`` stands for: ``to_skeleton`` of each message."""
    return [ours.to_skeleton(m, start + j) for j, m in enumerate(history)]


def same_reading(history: list[LLMMessage], start: int, facts: bool) -> None:
    want = outcome(lambda: reference(history, start))
    got = outcome(lambda: ours.to_skeletons(history, start, facts=facts))
    if want[0] == "error":
        assert got == want
        return
    assert got[0] == "ok"
    assert [shape(m) for m in got[1]] == [shape(m) for m in want[1]]
    # The facts the core reads of them (role, tool ids, token estimate): the same.
    assert [_core.message_tokens(m) for m in got[1]] == [_core.message_tokens(m) for m in want[1]]
    assert index(got[1]) == index(want[1])


@settings(max_examples=400, deadline=None)
@given(st.lists(messages(), max_size=12), st.integers(0, 5), st.booleans())
def test_native_skeletons_are_to_skeletons(
    history: list[LLMMessage], start: int, facts: bool
) -> None:
    same_reading(history, start, facts)
    # Message by message too: a history with one message to_skeleton refuses is all one
    # error, which would hide how the others were read.
    for j, message in enumerate(history):
        same_reading([message], start + j, facts)


def _count_conversions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The indices ``to_skeleton`` (the Python conversion) is called with from now on."""
    calls: list[int] = []
    real = ours.to_skeleton

    def counting(message: LLMMessage, i: int = 0) -> Message:
        calls.append(i)
        return real(message, i)

    monkeypatch.setattr(ours, "to_skeleton", counting)
    return calls


def _round(i: int) -> list[LLMMessage]:
    cid = f"call_{i}"
    return [
        AssistantMessage(
            content=[FunctionCall(id=cid, name="search", arguments='{"q": "x"}')],
            thought="looking" if i % 2 else None,
            source="a",
        ),
        FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(
                    call_id=cid, content=f"r {i}", name="s", is_error=i % 3 == 0
                )
            ]
        ),
        AssistantMessage(content=f"answer {i}", source="a"),
    ]


def test_the_core_reads_the_shapes_autogen_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common shapes never reach the Python definition; an unusual message does, once."""
    history: list[LLMMessage] = [
        SystemMessage(content="sys"),
        UserMessage(content="task", source="user"),
        UserMessage(content=["look", _image()], source="user"),
    ]
    for i in range(50):
        history += _round(i)
    real = ours.to_skeleton
    calls = _count_conversions(monkeypatch)
    want = [real(m, j) for j, m in enumerate(history)]
    assert [shape(m) for m in ours.to_skeletons(history)] == [shape(m) for m in want]
    assert calls == []
    history.insert(20, _UserSub(content="odd", source="u"))
    want = [real(m, j) for j, m in enumerate(history)]
    assert [shape(m) for m in ours.to_skeletons(history)] == [shape(m) for m in want]
    assert calls == [20]


@pytest.mark.parametrize("kind", ["Buffered", "HeadAndTail", "TokenLimited"])
def test_first_view_over_initial_messages_equals_the_python_path(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context's first view over a long history, read by the core, is the view the
    per-message Python conversion gives."""

    class Client:
        def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            return 3 + sum(len(str(m.content)) // 4 + 4 for m in messages)

        def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            return 900 - self.count_tokens(messages, tools=tools)

    cases: dict[str, dict[str, Any]] = {
        "Buffered": {"buffer_size": 40},
        "HeadAndTail": {"head_size": 3, "tail_size": 40},
        "TokenLimited": {"model_client": Client(), "token_limit": 900},
    }
    args = cases[kind]
    history: list[LLMMessage] = [SystemMessage(content="sys"), UserMessage(content="t", source="u")]
    for i in range(300):
        history += _round(i)
    cls = getattr(ours, f"{kind}ChatCompletionContext")

    def view() -> list[LLMMessage]:
        return asyncio.run(cls(initial_messages=list(history), **args).get_messages())

    native = view()
    monkeypatch.setattr(ours, "to_skeletons", reference)
    python = view()
    assert native == python
    assert all(a is b for a, b in zip(native[-10:], python[-10:], strict=True))


def test_token_limited_rebuilds_count_only_what_the_view_reads() -> None:
    """TokenLimited keeps no second cache of its skeletons: a view after the list was changed
    behind its back, or after ``load_state``, is a fresh context's view, and the client is
    asked again only for the messages that view reads, not for the whole history."""
    asked: list[int] = []

    class Client:
        def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            if len(messages) == 1:
                asked.append(1)
            return 3 + sum(len(str(m.content)) // 4 + 4 for m in messages)

        def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
            return 900 - self.count_tokens(messages, tools=tools)

    history: list[LLMMessage] = [SystemMessage(content="sys"), UserMessage(content="t", source="u")]
    for i in range(1000):
        history += _round(i)

    async def main() -> None:
        client: Any = Client()  # duck-typed, as autogen's own tests' clients
        ctx = ours.TokenLimitedChatCompletionContext(
            client, token_limit=900, initial_messages=list(history)
        )
        first = await ctx.get_messages()
        read = len(asked)
        assert 0 < read < 200  # the view's messages and a few more, not 3002
        ctx._messages[-1] = AssistantMessage(content="edited", source="a")
        asked.clear()
        view = await ctx.get_messages()
        assert view[-1].content == "edited"
        fresh = ours.TokenLimitedChatCompletionContext(
            client, token_limit=900, initial_messages=list(ctx._messages)
        )
        assert view == await fresh.get_messages()
        assert 0 < len(asked) < 2 * read + 10
        state = await ctx.save_state()
        await ctx.load_state(state)
        assert await ctx.get_messages() == view
        assert first[:2] == view[:2]

    asyncio.run(main())


def test_the_reader_names_wrong_kinds() -> None:
    with pytest.raises(TypeError, match="kinds must be"):
        _core.autogen_skeletons((SystemMessage, UserMessage), [], 0, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.autogen_skeletons((1, 2, 3, 4, 5, 6), [], 0, 0)  # type: ignore[arg-type]


def test_buffered_reads_only_its_window_and_converts_each_message_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Buffered's first view over a long history converts the window it reads, not the
    history; a message added through ``add_message`` is converted there (in one batch by
    the core), so the next view converts nothing; the cache of skeletons stays bounded."""
    converted = _count_conversions(monkeypatch)
    history: list[LLMMessage] = [SystemMessage(content="sys"), UserMessage(content="t", source="u")]
    for i in range(10_000):
        history += _round(i)

    async def main() -> None:
        ctx = ours.BufferedChatCompletionContext(200, initial_messages=list(history))
        first = await ctx.get_messages()
        assert first[0] == history[0] and len(first) <= 1 + 200 + 3  # the system prompt kept
        assert 0 < len(converted) < 400  # the window and a margin, not 30,002
        # Read from the end, and the head (its leading system messages, then one more).
        assert all(i < 2 or i > len(history) - 400 for i in converted)
        for i in range(10_000, 12_000):
            converted.clear()
            for m in _round(i):
                await ctx.add_message(m)
            view = await ctx.get_messages()
            assert view[-3:] == ctx._messages[-3:] and not converted
        assert len(ctx._skeletons._cache) <= 4096 + 3 * 2_000

    asyncio.run(main())
