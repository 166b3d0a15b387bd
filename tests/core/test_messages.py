"""Tests of ctxtrim.messages: round trips, constructors, properties, immutability, validation."""

from __future__ import annotations

import copy
import datetime
import gc
import json
import pickle
import sys
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import _core
from ctxtrim.errors import CtxtrimError, InvalidMessage
from ctxtrim.formats import to_openai_chat
from ctxtrim.messages import (
    IMAGE_MEDIA_TYPES,
    FrozenDict,
    FrozenList,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    block_from_dict,
    block_to_dict,
    decode_messages,
    drop_caches,
    encode_messages,
)

from strategies import (
    blocks,
    broken_histories_with_faults,
    histories,
    messages,
)

PNG = b"\x89PNG\r\n\x1a\n\x00"


def invalid(path: str) -> Any:
    """``pytest.raises(InvalidMessage)`` that also checks the error's path."""

    class _Check:
        def __enter__(self) -> None:
            self._ctx = pytest.raises(InvalidMessage)
            self._info = self._ctx.__enter__()

        def __exit__(self, *exc: Any) -> bool:
            suppressed = self._ctx.__exit__(*exc)
            assert self._info.value.path == path, (self._info.value.path, str(self._info.value))
            assert isinstance(self._info.value, ValueError)
            return bool(suppressed)

    return _Check()


# --------------------------------------------------------------------------------------------
# Round trips


@given(messages())
def test_dict_round_trip(m: Message) -> None:
    d = m.to_dict()
    assert Message.from_dict(d) == m
    assert json.loads(json.dumps(d)) == d  # plain JSON-ready builtins


@given(messages())
def test_json_round_trip(m: Message) -> None:
    data = m.encode()
    assert isinstance(data, bytes)
    back = Message.decode(data)
    assert back == m
    assert type(back.content) is tuple
    assert json.loads(data) == m.to_dict()
    assert Message.decode(data.decode("utf-8")) == m


@given(st.lists(messages(), max_size=5))
def test_list_round_trip(ms: list[Message]) -> None:
    assert decode_messages(encode_messages(ms)) == ms
    assert decode_messages(encode_messages(iter(ms))) == ms


@given(blocks())
def test_block_round_trip(b: Any) -> None:
    assert block_from_dict(block_to_dict(b)) == b
    assert block_to_dict(b)["type"] in {"text", "image", "tool_use", "tool_result", "reasoning"}


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories())
def test_history_round_trip(h: list[Message]) -> None:
    assert decode_messages(encode_messages(h)) == h


def test_pickle_round_trip() -> None:
    m = Message.assistant("x", tool_uses=[("t1", "ls", {"a": [1, 2.5, None]})], usage=Usage(1, 2))
    assert pickle.loads(pickle.dumps(m)) == m


def test_public_json_shape_is_pinned() -> None:
    m = Message.assistant(
        [ReasoningBlock("think", "sig"), "Checking."],
        tool_uses=[("t1", "ls", {"dir": "/"})],
        turn="a1",
        usage=Usage(input_tokens=12, output_tokens=7, model="m"),
    )
    assert m.to_dict() == {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "think", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "/"}},
        ],
        "turn": "a1",
        "usage": {"input_tokens": 12, "output_tokens": 7, "model": "m"},
    }
    assert m.encode() == (
        b'{"role":"assistant","content":[{"type":"reasoning","text":"think","signature":"sig"},'
        b'{"type":"text","text":"Checking."},'
        b'{"type":"tool_use","id":"t1","name":"ls","input":{"dir":"/"}}],'
        b'"turn":"a1","usage":{"input_tokens":12,"output_tokens":7,"model":"m"}}'
    )
    r = Message.tool_results(
        ToolResultBlock("t1", [TextBlock("see"), ImageBlock("image/png", b"hi")], is_error=True),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        ToolResultBlock("t2", "ok", compact_summary="short"),
        id="m7",
        meta={"k": 1},
    )
    assert r.to_dict() == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image", "media_type": "image/png", "data": "aGk="},
                ],
                "is_error": True,
            },
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "content": "ok",
                "compact_summary": "short",
            },
        ],
        "id": "m7",
        "meta": {"k": 1},
    }
    assert Message.user("hi").to_dict() == {
        "role": "user",
        "content": [{"type": "text", "text": "hi"}],
    }
    assert block_to_dict(ReasoningBlock()) == {"type": "reasoning"}


def test_from_dict_accepts_raw_bytes_and_ignores_unknown_keys() -> None:
    d = {
        "role": "user",
        "content": [{"type": "image", "media_type": "image/gif", "data": PNG, "extra": 1}],
        "future_field": {"x": 1},
    }
    assert Message.from_dict(d) == Message.user([ImageBlock("image/gif", PNG)])


def test_to_dict_is_a_fresh_copy() -> None:
    inp = {"a": [1]}
    m = Message.assistant(tool_uses=[("t1", "f", inp)])
    d = m.to_dict()
    d["content"][0]["input"]["a"].append(2)
    assert inp == {"a": [1]}


# --------------------------------------------------------------------------------------------
# Constructors and properties


def test_user_constructor() -> None:
    m = Message.user("hello", id="m1", turn="u1", name="ann", meta={"src": "cli"})
    assert m == Message(
        "user", (TextBlock("hello"),), id="m1", turn="u1", name="ann", meta={"src": "cli"}
    )
    img = ImageBlock("image/png", PNG)
    assert Message.user(["look", img]).content == (TextBlock("look"), img)
    assert Message.user("").content == ()
    assert Message.user(["a", "b"]).text == "ab"


def test_system_constructor() -> None:
    assert Message.system("be brief") == Message("system", [TextBlock("be brief")])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert Message.system(["a", TextBlock("b")]).text == "ab"


def test_assistant_constructor() -> None:
    call = ToolUseBlock("t2", "pwd", {})
    m = Message.assistant("Checking.", tool_uses=[("t1", "ls", {"dir": "/"}), call])
    assert m.content == (TextBlock("Checking."), ToolUseBlock("t1", "ls", {"dir": "/"}), call)
    assert m.role == "assistant"
    assert Message.assistant().content == ()
    assert Message.assistant(tool_uses=[call]).content == (call,)
    assert Message.assistant(tool_uses=iter([call])).content == (call,)
    u = Usage(input_tokens=5, finish_reason="tool_use")
    assert Message.assistant("x", usage=u).usage == u


def test_tool_results_constructor() -> None:
    r1 = ToolResultBlock("t1", "out")
    m = Message.tool_results(r1, ("t2", "bad", True), ("t3", [TextBlock("x")]))
    assert m.role == "user"
    assert m.content == (
        r1,
        ToolResultBlock("t2", "bad", is_error=True),
        ToolResultBlock("t3", (TextBlock("x"),)),
    )
    assert Message.tool_results([r1, ("t2", "x")]) == Message.tool_results(r1, ("t2", "x"))
    assert Message.tool_results(r1, id="m3", turn="u2").id == "m3"
    assert Message.tool_results.__doc__ and "tool results" in Message.tool_results.__doc__


_TEXTS = st.sampled_from(["", "hi", "caf\u00e9", "\ud800", "a\udfffb"]) | st.text(max_size=5)
_VALUES = st.one_of(
    _TEXTS, st.none(), st.integers(-2, 2), st.booleans(), st.just({"k": [1]}), st.just({1: 2})
)
_OPTIONS = st.dictionaries(
    st.sampled_from(["id", "turn", "name", "usage", "meta", "bogus"]),
    st.one_of(
        _VALUES,
        st.sampled_from(["u1", "a7", "x1", "u99999999999"]),
        st.just(Usage(input_tokens=1)),
    ),
    max_size=2,
)
_CALLS = st.one_of(
    st.tuples(_VALUES, _VALUES, _VALUES),
    st.tuples(_VALUES, _VALUES),
    st.just(ToolUseBlock("t9", "ls", {})),
    _VALUES,
)
_RESULTS = st.one_of(
    st.tuples(_VALUES, _VALUES),
    st.tuples(_VALUES, _VALUES, _VALUES),
    st.tuples(_VALUES, st.just([TextBlock("x")])),
    st.just(ToolResultBlock("t9", "ok")),
    _VALUES,
)


def _outcome(make: Any, *args: Any, **kwargs: Any) -> Any:
    """What a constructor call gives: the message, or the error's type, text and path."""
    try:
        return make(*args, **kwargs)
    except Exception as e:  # the comparison is of every outcome, errors included
        return (type(e), str(e), getattr(e, "path", None))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    content=st.one_of(_VALUES, st.lists(st.one_of(_TEXTS, st.just(TextBlock("b"))), max_size=2)),
    calls=st.one_of(st.lists(_CALLS, max_size=3), st.tuples(_CALLS), st.none(), st.just(())),
    results=st.one_of(st.lists(_RESULTS, max_size=3), st.lists(st.lists(_RESULTS, max_size=2))),
    options=_OPTIONS,
)
def test_fast_constructors_build_what_the_python_ones_build(
    content: Any, calls: Any, results: Any, options: dict[str, Any]
) -> None:
    """The constructors run in the core for their common forms and hand the rest to the
    Python ones: either way the result, or the error with its path, is the same."""
    from ctxtrim import messages as m

    assert _outcome(Message.user, content, **options) == _outcome(
        m._user, Message, content, **options
    )
    kw = dict(options) if calls is None else {**options, "tool_uses": calls}
    assert _outcome(Message.assistant, content, **kw) == _outcome(
        m._assistant, Message, content, **kw
    )
    assert _outcome(Message.tool_results, *results, **options) == _outcome(
        m._tool_results, Message, *results, **options
    )


def test_assistant_content_none_is_no_text() -> None:
    """Providers send ``"content": null`` beside tool calls; passing it through works."""
    call: tuple[str, str, dict[str, Any]] = ("t1", "ls", {})
    assert Message.assistant(None, tool_uses=[call]) == Message.assistant(tool_uses=[call])
    with invalid("content"):
        Message.user(None)  # type: ignore[arg-type]


def test_properties() -> None:
    call1, call2 = ToolUseBlock("t1", "a", {}), ToolUseBlock("t2", "b", {"x": 1})
    a = Message.assistant(
        [ReasoningBlock("hmm"), "one", TextBlock("two")], tool_uses=[call1, call2]
    )
    assert a.text == "onetwo"
    assert a.tool_uses == (call1, call2)
    assert a.tool_results == ()
    assert a.has_tool_uses
    assert not a.is_real_user

    r = Message.tool_results(("t1", "x"), ("t2", "y"))
    assert r.tool_results == (ToolResultBlock("t1", "x"), ToolResultBlock("t2", "y"))
    assert r.tool_uses == ()
    assert not r.has_tool_uses
    assert not r.is_real_user
    assert r.text == ""

    mixed = Message("user", [ToolResultBlock("t1", "x"), TextBlock("and now?")])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert mixed.is_real_user
    assert Message.user([ImageBlock("image/png", PNG)]).is_real_user
    assert not Message("user", []).is_real_user  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert not Message.system("s").is_real_user
    assert Message.assistant("plain").text == "plain"
    assert not Message.assistant("plain").has_tool_uses


# --------------------------------------------------------------------------------------------
# Immutability


def test_messages_are_immutable() -> None:
    m = Message.user(["a"], meta={"k": 1})
    with pytest.raises(AttributeError):
        m.role = "assistant"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        m.content = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        m.content[0].text = "b"  # type: ignore[misc, union-attr]
    assert type(m.content) is tuple
    assert type(Message("user", [TextBlock("x")]).content) is tuple  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    r = ToolResultBlock("t1", [TextBlock("x")])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert type(r.content) is tuple
    with pytest.raises(AttributeError):
        r.is_error = True  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Usage().input_tokens = 3  # type: ignore[misc]
    # Immutable and hashable when every field is (dict fields make a struct unhashable).
    assert hash(Message.user("x")) == hash(Message.user("x"))


def facts(m: Message) -> object:
    return getattr(m, "_ctxtrim_facts", None)


def test_an_agent_round_leaves_nothing_for_the_cyclic_gc() -> None:
    # The content tuple of a message the core builds holds only gc=False blocks: it is
    # untracked when made (CPython would untrack it only at the collection after), so the
    # messages an agent appends each turn add nothing the cyclic GC counts or walks.
    from ctxtrim.formats import from_openai_chat

    round_ = [
        Message.user("look at a.py"),
        Message.assistant("Reading.", tool_uses=[("t1", "read_file", {"path": "a.py"})]),
        Message.tool_results(("t1", "def f(): ...")),
        Message.assistant("It defines f."),
    ]
    round_ += from_openai_chat(
        [
            {"role": "user", "content": "and b.py?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path":"b.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t2", "content": "x = 1"},
        ]
    )
    for m in round_:
        assert not gc.is_tracked(m) and not gc.is_tracked(m.content), m
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        kept = [Message.user(f"q{i}") for i in range(100)]
        assert len(gc.get_objects()) - before <= 2  # the list `kept` (and its frame's)
    finally:
        gc.enable()
    assert len(kept) == 100


def test_messages_and_what_they_hold_are_not_gc_tracked() -> None:
    # gc=False: no reference cycle can go through a block or a message (their dicts and
    # lists are frozen copies of plain JSON), so a server holding millions of messages gives
    # the cyclic GC nothing to walk: not the message, its frozen dicts, its facts or renderings.
    m = Message.assistant(
        "x", tool_uses=[("t1", "ls", {"dir": "/", "opts": ["-l", {"a": 1}]})], meta={"k": [1]}
    )
    _core.message_tokens(m)
    to_openai_chat([Message.user("hi"), m])
    decoded = Message.decode(m.encode())
    _core.message_tokens(decoded)
    for msg in (m, decoded):
        use = msg.tool_uses[0]
        meta = msg.meta
        assert meta is not None
        held = [msg, use, use.input, use.input["opts"], use.input["opts"][1], meta]
        held += [meta["k"], facts(msg)]
        for obj in held:
            assert obj is not None and not gc.is_tracked(obj), obj
    assert getattr(m, "_ctxtrim_openai_chat", None) is not None
    for obj in (TextBlock("x"), Usage(), ToolResultBlock("t", "x")):
        assert not gc.is_tracked(obj)
    # A cache is a slot, not an attribute anyone can set.
    with pytest.raises(AttributeError):
        m._ctxtrim_facts = None  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        m.anything = 1  # type: ignore[attr-defined]


def test_dropped_messages_release_their_caches() -> None:
    m = Message.user("x" * 100)
    _core.message_tokens(m)
    to_openai_chat([m])
    held = [facts(m), m._ctxtrim_openai_chat]  # type: ignore[attr-defined]
    before = [sys.getrefcount(obj) for obj in held]
    del m  # no collection needed: nothing of it is in a cycle
    assert [sys.getrefcount(obj) for obj in held] == [n - 1 for n in before]


def test_facts_are_cached_on_the_message_and_never_copied() -> None:
    m = Message.assistant("x", tool_uses=[("t1", "ls", {"dir": "/"})])
    assert facts(m) is None
    tokens = _core.message_tokens(m)
    kept = facts(m)
    assert kept is not None
    assert _core.message_tokens(m) == tokens and facts(m) is kept
    # Not a field: not encoded, not compared, and never carried to a new message.
    assert m == Message.assistant("x", tool_uses=[("t1", "ls", {"dir": "/"})])
    assert hash(Message.user("y")) == hash(Message.user("y"))
    assert b"facts" not in m.encode()
    bigger = msgspec.structs.replace(m, content=[TextBlock("x" * 400)])
    assert facts(bigger) is None
    assert _core.message_tokens(bigger) > tokens
    assert facts(copy.copy(m)) is None
    assert facts(pickle.loads(pickle.dumps(m))) is None
    assert pickle.loads(pickle.dumps(m)) == m and copy.copy(m) == m
    drop_caches(m)
    assert facts(m) is None
    assert _core.message_tokens(m) == tokens and facts(m) is not kept


def test_replace_validates() -> None:
    m = Message.user("x")
    assert msgspec.structs.replace(m, content=[TextBlock("y")]).content == (TextBlock("y"),)
    with invalid("role"):
        msgspec.structs.replace(m, role="tool")


# --------------------------------------------------------------------------------------------
# Validation


class _Obj:
    pass


SURR = "ok\ud800"

BAD_BLOCKS: list[tuple[str, Any, str]] = [
    ("text-int", lambda: TextBlock(5), "text"),  # type: ignore[arg-type]  # wrong type on purpose
    ("text-none", lambda: TextBlock(None), "text"),  # type: ignore[arg-type]  # wrong type on purpose
    ("text-surrogate", lambda: TextBlock(SURR), "text"),
    ("text-low-surrogate", lambda: TextBlock("\udfff"), "text"),
    ("image-media-type", lambda: ImageBlock("image/bmp", PNG), "media_type"),
    ("image-short-media-type", lambda: ImageBlock("png", PNG), "media_type"),
    ("image-upper-media-type", lambda: ImageBlock("image/PNG", PNG), "media_type"),
    ("image-media-type-int", lambda: ImageBlock(3, PNG), "media_type"),  # type: ignore[arg-type]  # wrong type on purpose
    ("image-data-str", lambda: ImageBlock("image/png", "aGk="), "data"),  # type: ignore[arg-type]  # wrong type on purpose
    ("image-data-bytearray", lambda: ImageBlock("image/png", bytearray(b"x")), "data"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-use-empty-id", lambda: ToolUseBlock("", "ls", {}), "id"),
    ("tool-use-int-id", lambda: ToolUseBlock(1, "ls", {}), "id"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-use-empty-name", lambda: ToolUseBlock("t1", "", {}), "name"),
    ("tool-use-surrogate-name", lambda: ToolUseBlock("t1", SURR, {}), "name"),
    ("tool-use-input-list", lambda: ToolUseBlock("t1", "ls", [1]), "input"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-use-input-none", lambda: ToolUseBlock("t1", "ls", None), "input"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-use-input-set", lambda: ToolUseBlock("t1", "ls", {"a": {1, 2}}), "input"),
    ("tool-use-input-tuple", lambda: ToolUseBlock("t1", "ls", {"a": (1, 2)}), "input"),
    ("tool-use-input-bytes", lambda: ToolUseBlock("t1", "ls", {"a": b"x"}), "input"),
    ("tool-use-input-nan", lambda: ToolUseBlock("t1", "ls", {"a": float("nan")}), "input"),
    ("tool-use-input-inf", lambda: ToolUseBlock("t1", "ls", {"a": [float("-inf")]}), "input"),
    ("tool-use-input-int-key", lambda: ToolUseBlock("t1", "ls", {1: "x"}), "input"),  # type: ignore[dict-item]  # wrong type on purpose
    ("tool-use-input-nested-key", lambda: ToolUseBlock("t1", "ls", {"a": {None: 1}}), "input"),
    ("tool-use-input-object", lambda: ToolUseBlock("t1", "ls", {"a": _Obj()}), "input"),
    (
        "tool-use-input-datetime",
        lambda: ToolUseBlock("t1", "ls", {"a": datetime.date(2024, 1, 1)}),
        "input",
    ),
    ("tool-use-input-struct", lambda: ToolUseBlock("t1", "ls", {"a": TextBlock("x")}), "input"),
    ("tool-use-input-surrogate", lambda: ToolUseBlock("t1", "ls", {"a": [SURR]}), "input"),
    ("tool-use-input-surrogate-key", lambda: ToolUseBlock("t1", "ls", {SURR: 1}), "input"),
    ("tool-result-empty-id", lambda: ToolResultBlock("", "x"), "tool_use_id"),
    ("tool-result-content-int", lambda: ToolResultBlock("t1", 3), "content"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-result-content-none", lambda: ToolResultBlock("t1", None), "content"),  # type: ignore[arg-type]  # wrong type on purpose
    ("tool-result-content-surrogate", lambda: ToolResultBlock("t1", SURR), "content"),
    (
        "tool-result-content-item",
        lambda: ToolResultBlock("t1", [TextBlock("a"), "b"]),  # type: ignore[arg-type]  # wrong type on purpose
        "content[1]",
    ),
    (
        "tool-result-content-tool-use",
        lambda: ToolResultBlock("t1", [ToolUseBlock("t", "n", {})]),  # type: ignore[arg-type]  # wrong type on purpose
        "content[0]",
    ),
    ("tool-result-is-error-int", lambda: ToolResultBlock("t1", "x", is_error=1), "is_error"),  # type: ignore[arg-type]  # wrong type on purpose
    (
        "tool-result-summary-int",
        lambda: ToolResultBlock("t1", "x", compact_summary=1),  # type: ignore[arg-type]  # wrong type on purpose
        "compact_summary",
    ),
    ("reasoning-text-int", lambda: ReasoningBlock(1), "text"),  # type: ignore[arg-type]  # wrong type on purpose
    ("reasoning-signature-surrogate", lambda: ReasoningBlock("x", SURR), "signature"),
    ("reasoning-redacted-str", lambda: ReasoningBlock(redacted="yes"), "redacted"),  # type: ignore[arg-type]  # wrong type on purpose
    ("usage-negative", lambda: Usage(input_tokens=-1), "input_tokens"),
    ("usage-negative-cache", lambda: Usage(cache_write_tokens=-5), "cache_write_tokens"),
    ("usage-float", lambda: Usage(output_tokens=1.0), "output_tokens"),  # type: ignore[arg-type]  # wrong type on purpose
    ("usage-bool", lambda: Usage(cache_read_tokens=True), "cache_read_tokens"),
    ("usage-model-int", lambda: Usage(model=3), "model"),  # type: ignore[arg-type]  # wrong type on purpose
    ("usage-finish-surrogate", lambda: Usage(finish_reason=SURR), "finish_reason"),
]


@pytest.mark.parametrize(
    ("make", "path"), [(m, p) for _, m, p in BAD_BLOCKS], ids=[n for n, _, _ in BAD_BLOCKS]
)
def test_bad_blocks(make: Any, path: str) -> None:
    with invalid(path):
        make()


def _call(**kw: Any) -> Any:
    return lambda: Message(**kw)


BAD_MESSAGES: list[tuple[str, Any, str]] = [
    ("unknown-role", _call(role="tool", content=[]), "role"),
    ("role-int", _call(role=1, content=[]), "role"),
    ("role-unhashable", _call(role=["user"], content=[]), "role"),
    ("content-str", _call(role="user", content="hi"), "content"),
    ("content-none", _call(role="user", content=None), "content"),
    ("content-dict", _call(role="user", content={"type": "text", "text": "x"}), "content"),
    ("content-generator", _call(role="user", content=(b for b in [])), "content"),  # type: ignore[var-annotated]  # an empty generator on purpose
    ("content-item-str", _call(role="user", content=[TextBlock("a"), "b"]), "content[1]"),
    (
        "content-item-dict",
        _call(role="user", content=[{"type": "text", "text": "x"}]),
        "content[0]",
    ),
    (
        "tool-use-in-user",
        _call(role="user", content=[ToolUseBlock("t", "n", {})]),
        "content[0]",
    ),
    (
        "tool-result-in-assistant",
        _call(role="assistant", content=[TextBlock("x"), ToolResultBlock("t", "x")]),
        "content[1]",
    ),
    ("reasoning-in-user", _call(role="user", content=[ReasoningBlock()]), "content[0]"),
    ("image-in-system", _call(role="system", content=[ImageBlock("image/png", PNG)]), "content[0]"),
    ("id-empty", _call(role="user", content=[], id=""), "id"),
    ("id-int", _call(role="user", content=[], id=3), "id"),
    ("id-surrogate", _call(role="user", content=[], id=SURR), "id"),
    ("turn-bad", _call(role="user", content=[], turn="t3"), "turn"),
    ("turn-no-number", _call(role="user", content=[], turn="u"), "turn"),
    ("turn-sign", _call(role="user", content=[], turn="u+3"), "turn"),
    ("turn-overflow", _call(role="user", content=[], turn="u4294967296"), "turn"),
    ("turn-int", _call(role="user", content=[], turn=3), "turn"),
    ("turn-unicode-digit", _call(role="user", content=[], turn="u\u0663"), "turn"),
    ("name-empty", _call(role="user", content=[], name=""), "name"),
    ("usage-dict", _call(role="assistant", content=[], usage={"input_tokens": 1}), "usage"),
    ("meta-list", _call(role="user", content=[], meta=[1]), "meta"),
    ("meta-set", _call(role="user", content=[], meta={"a": {1}}), "meta"),
    ("meta-nan", _call(role="user", content=[], meta={"a": float("nan")}), "meta"),
    ("meta-int-key", _call(role="user", content=[], meta={1: 1}), "meta"),
    ("meta-surrogate", _call(role="user", content=[], meta={"a": SURR}), "meta"),
    ("user-bad-item", lambda: Message.user(["ok", 5]), "content[1]"),  # type: ignore[list-item]  # wrong type on purpose
    ("user-surrogate", lambda: Message.user(SURR), "content[0].text"),
    ("user-surrogate-item", lambda: Message.user(["ok", SURR]), "content[1].text"),
    ("user-int", lambda: Message.user(5), "content"),  # type: ignore[arg-type]  # wrong type on purpose
    ("system-tool-use", lambda: Message.system([ToolUseBlock("t", "n", {})]), "content[0]"),  # type: ignore[list-item]  # wrong type on purpose
    (
        "assistant-bad-call",
        lambda: Message.assistant("x", tool_uses=[("t1", "ls", {"a": {1}})]),
        "content[1].input",
    ),
    (
        "assistant-empty-call-id",
        lambda: Message.assistant(tool_uses=[("t1", "ls", {}), ("", "ls", {})]),
        "content[1].id",
    ),
    ("assistant-short-tuple", lambda: Message.assistant(tool_uses=[("t1", "ls")]), "content[0]"),  # type: ignore[list-item]  # wrong type on purpose
    ("assistant-bad-call-type", lambda: Message.assistant(tool_uses=["t1"]), "content[0]"),  # type: ignore[list-item]  # wrong type on purpose
    (
        "tool-results-bad-content",
        lambda: Message.tool_results(("t1", "x"), ("t2", 5)),
        "content[1].content",
    ),
    (
        "tool-results-nested-item",
        lambda: Message.tool_results(("t1", [TextBlock("a"), 5])),
        "content[0].content[1]",
    ),
    (
        "tool-results-empty-id",
        lambda: Message.tool_results(("", "x")),
        "content[0].tool_use_id",
    ),
    ("tool-results-long-tuple", lambda: Message.tool_results(("t", "x", True, 1)), "content[0]"),
    ("tool-results-text", lambda: Message.tool_results("t1"), "content[0]"),
]


@pytest.mark.parametrize(
    ("make", "path"), [(m, p) for _, m, p in BAD_MESSAGES], ids=[n for n, _, _ in BAD_MESSAGES]
)
def test_bad_messages(make: Any, path: str) -> None:
    with invalid(path):
        make()


def test_error_is_a_value_error_and_names_the_field() -> None:
    with pytest.raises(InvalidMessage) as info:
        ToolUseBlock("t1", "ls", {"a": [1, {"b": {1, 2}}]})
    err = info.value
    assert isinstance(err, ValueError)
    assert isinstance(err, CtxtrimError)
    assert err.path == "input"
    assert "['a'][1]['b']" in err.reason and "set" in err.reason
    assert str(err).startswith("input: ")


def test_reference_cycle_in_input_is_rejected() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with invalid("input"):
        ToolUseBlock("t1", "ls", cyclic)


def test_valid_edge_cases_are_accepted() -> None:
    ToolUseBlock("t1", "ls", {"big": 2**100, "neg": -(2**70), "f": -0.0, "u": "\x00😀你好"})
    Message("user", [], turn="u0")  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    Message("assistant", [], turn="a4294967295")  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    Message.user("\U0010ffff\x00")
    ImageBlock("image/webp", b"")
    ToolResultBlock("t1", [])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    for media_type in IMAGE_MEDIA_TYPES:
        ImageBlock(media_type, PNG)


# --------------------------------------------------------------------------------------------
# Decoding garbage


def _image_result(data: Any = "aGk=", media_type: str = "image/png") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": "x"},
                    {"type": "image", "media_type": media_type, "data": data},
                ],
            }
        ],
    }


def _tool_use(**kw: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t", "name": "n", "input": {}, **kw}


def _text(value: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": value}]}


GARBAGE: list[tuple[str, Any, str]] = [
    ("not-a-dict", "hello", ""),
    ("none", None, ""),
    ("list", [], ""),
    ("missing-role", {"content": []}, "role"),
    ("missing-content", {"role": "user"}, "content"),
    ("unknown-role", {"role": "tool", "content": []}, "role"),
    ("content-str", {"role": "user", "content": "hi"}, "content"),
    ("unknown-block-type", {"role": "user", "content": [{"type": "video"}]}, "content[0].type"),
    ("missing-block-type", {"role": "user", "content": [{"text": "x"}]}, "content[0].type"),
    ("block-not-dict", {"role": "user", "content": ["hi"]}, "content[0]"),
    ("missing-field", {"role": "user", "content": [{"type": "text"}]}, "content[0].text"),
    ("wrong-type", _text(5), "content[0].text"),
    ("surrogate", _text("\ud83d"), "content[0].text"),
    ("bad-base64", _image_result(data="%%%"), "content[0].content[1].data"),
    ("bad-media-type", _image_result(media_type="png"), "content[0].content[1].media_type"),
    (
        "tool-use-in-user",
        {"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
        "content[0]",
    ),
    (
        "empty-tool-id",
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "", "name": "n", "input": {}}],
        },
        "content[0].id",
    ),
    (
        "input-not-object",
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "n", "input": 1}],
        },
        "content[0].input",
    ),
    (
        "usage-negative",
        {"role": "assistant", "content": [], "usage": {"output_tokens": -1}},
        "usage.output_tokens",
    ),
    ("usage-str", {"role": "assistant", "content": [], "usage": {"model": 1}}, "usage.model"),
    ("turn", {"role": "user", "content": [], "turn": "x"}, "turn"),
    ("meta-not-dict", {"role": "user", "content": [], "meta": []}, "meta"),
    ("meta-nan", {"role": "user", "content": [], "meta": {"a": float("inf")}}, "meta"),
    ("meta-int-key", {"role": "user", "content": [], "meta": {1: "x"}}, "meta"),
    (
        "input-int-key",
        {"role": "assistant", "content": [_tool_use(input={1: 2})]},
        "content[0].input",
    ),
]
#: Cases that JSON cannot express (json.dumps would change or refuse them).
NOT_JSON = {"surrogate", "meta-nan", "meta-int-key", "input-int-key"}


@pytest.mark.parametrize(
    ("data", "path"), [(d, p) for _, d, p in GARBAGE], ids=[n for n, _, _ in GARBAGE]
)
def test_from_dict_garbage(data: Any, path: str) -> None:
    with invalid(path):
        Message.from_dict(data)


@pytest.mark.parametrize(
    ("data", "path"),
    [(d, p) for n, d, p in GARBAGE if n not in NOT_JSON],
    ids=[n for n, _, _ in GARBAGE if n not in NOT_JSON],
)
def test_decode_garbage(data: Any, path: str) -> None:
    with invalid(path):
        Message.decode(json.dumps(data).encode())
    with invalid(f"messages[1].{path}".rstrip(".")):
        decode_messages(json.dumps([Message.user("ok").to_dict(), data]))


def test_decode_malformed_json() -> None:
    with invalid(""):
        Message.decode(b'{"role": "user", ')
    with invalid(""):
        Message.decode(b'{"role":"user","content":[{"type":"text","text":"\\ud800"}]}')
    with invalid("messages"):
        decode_messages(b'[{"role": "us')
    with invalid("messages"):
        decode_messages(b'{"role": "user", "content": []}')
    with invalid("messages[0]"):
        decode_messages(b"[1]")


def test_decode_errors_are_never_raw_msgspec_errors() -> None:
    for bad in (b"", b"nul", b"[]", b'{"role":"user","content":[{"type":"image"}]}'):
        with pytest.raises(InvalidMessage) as info:
            Message.decode(bad)
        assert not isinstance(info.value, msgspec.MsgspecError)


def test_block_from_dict_garbage() -> None:
    assert block_from_dict({"type": "text", "text": "x"}) == TextBlock("x")
    with invalid("type"):
        block_from_dict({"type": "nope"})
    with invalid("input"):
        block_from_dict({"type": "tool_use", "id": "t", "name": "n", "input": []})
    with invalid("content[0].media_type"):
        block_from_dict(
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "image", "media_type": "x", "data": ""}],
            }
        )
    with invalid(""):
        block_from_dict(3)


def test_encode_messages_rejects_non_messages() -> None:
    with invalid("messages[1]"):
        encode_messages([Message.user("x"), {"role": "user", "content": []}])  # type: ignore[list-item]


# --------------------------------------------------------------------------------------------
# The strategies themselves


def _check_history(h: list[Message]) -> None:
    ids = [m.id for m in h]
    assert len(set(ids)) == len(ids)
    first = next(m for m in h if m.role != "system")
    assert first.is_real_user
    issued: dict[str, int] = {}
    assistants_seen = 0
    answered: set[str] = set()
    for m in h:
        if m.role == "assistant":
            assistants_seen += 1
            for call in m.tool_uses:
                assert call.id not in issued
                issued[call.id] = assistants_seen
        for r in m.tool_results:
            assert r.tool_use_id in issued
            assert r.tool_use_id not in answered
            assert assistants_seen - issued[r.tool_use_id] <= 1  # late by at most one round
            answered.add(r.tool_use_id)
    for call_id, at in issued.items():
        if call_id not in answered:
            assert assistants_seen - at <= 1  # pending only at the end


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories())
def test_histories_are_plausible(h: list[Message]) -> None:
    _check_history(h)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(broken_histories_with_faults())
def test_broken_histories_are_broken(pair: tuple[list[Message], frozenset[str]]) -> None:
    h, faults = pair
    assert faults
    with pytest.raises(AssertionError):
        _check_history(h)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


def _containers(value: object) -> list[dict[Any, Any] | list[Any]]:
    """Every dict and list inside ``value`` (``value`` included)."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


@given(st.dictionaries(st.text(), _json_values, max_size=4))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_messages_are_immutable_all_the_way_down(value: dict[str, Any]) -> None:
    # The caller's dicts are copied in: changing them afterwards changes no message (nor the
    # token count cached for it).
    caller = copy.deepcopy(value)
    m = Message.assistant("x", tool_uses=[("t1", "f", caller)], meta=caller)
    tokens = _core.message_tokens(m)
    before = m.encode()
    for c in _containers(caller):
        if isinstance(c, dict):
            c["new"] = 1
        else:
            c.append(1)
    assert m.encode() == before
    assert _core.message_tokens(m) == tokens
    # And what the message holds refuses every change.
    use = m.content[-1]
    assert isinstance(use, ToolUseBlock) and m.meta is not None
    assert use.input == value and m.meta == value
    for c in [*_containers(use.input), *_containers(m.meta)]:
        assert isinstance(c, (FrozenDict, FrozenList))
        with pytest.raises(TypeError, match="read-only"):
            if isinstance(c, dict):
                c["new"] = 1
            else:
                c.append(1)
    assert m.encode() == before


def test_frozen_values_are_shared_not_copied_again() -> None:
    first = Message.user("x", meta={"a": [1, {"b": 2}]})
    again = msgspec.structs.replace(first, content=[TextBlock("y")])
    assert again.meta is first.meta
    # copy, deepcopy and pickle give equal, still read-only values.
    for twin in (copy.deepcopy(first), pickle.loads(pickle.dumps(first))):
        assert twin == first and isinstance(twin.meta, FrozenDict)
        assert isinstance(twin.meta["a"], FrozenList)


class _OwnMessage(Message, frozen=True):
    """A subclass: the core reads and writes its fields through the class, not at offsets."""


class _OwnToolUse(ToolUseBlock, frozen=True):
    pass


@pytest.mark.parametrize("cls", [Message, _OwnMessage])
@pytest.mark.parametrize("use_cls", [ToolUseBlock, _OwnToolUse])
def test_construction_stores_what_it_checked_and_releases_what_it_replaced(
    cls: type[Message], use_cls: type[ToolUseBlock]
) -> None:
    # A list of blocks is stored as its tuple, `meta` and a tool call's `input` as frozen
    # copies, for the exact classes (written at the fields' offsets) as for subclasses
    # (through msgspec); what each field held before is released, not leaked.
    blocks = [TextBlock("hi")]  # a list, as agent code writes it (stored as its tuple)
    meta = {"a": [1]}
    args = {"q": {"r": 1}}
    held = [sys.getrefcount(x) for x in (blocks, meta, args)]
    make: Any = cls
    for _ in range(50):
        m = make("user", blocks, meta=meta)
        use = use_cls("t1", "f", args)
        assert type(m.content) is tuple and m.content == tuple(blocks)
        assert isinstance(m.meta, FrozenDict) and m.meta == meta
        assert isinstance(use.input, FrozenDict) and use.input == args
        assert isinstance(use.input["q"], FrozenDict)
    assert [sys.getrefcount(x) for x in (blocks, meta, args)] == held


@pytest.mark.parametrize("make", ["user", "system", "assistant", "tool_results"])
def test_a_wrong_keyword_names_the_constructor_called(make: str) -> None:
    with pytest.raises(TypeError, match=rf"^Message\.{make}\(\) got an unexpected keyword"):
        getattr(Message, make)("x", bogus=1)


def test_the_checks_the_fast_constructors_skip_still_run_for_everything_else() -> None:
    # The fast constructors skip the struct checks for what they built from parts they
    # checked; the skip must end with them, and a subclass or options keep every check.
    for _ in range(2):
        Message.user("hi")
        Message.assistant("ok", tool_uses=[("c1", "f", {"x": 1})])
        Message.tool_results(("c1", "done"))
        with pytest.raises(InvalidMessage):
            TextBlock(5)  # type: ignore[arg-type]
        with pytest.raises(InvalidMessage):
            Message("user", (ToolUseBlock("c1", "f", {}),))
        with pytest.raises(InvalidMessage):
            Message.user("hi", id="")
        with pytest.raises(InvalidMessage):
            Message("system", (TextBlock("a"),), turn="x9")

    class Tagged(Message, frozen=True):
        def __post_init__(self) -> None:
            if self.role == "user":
                raise InvalidMessage("no users here", "role")

    with pytest.raises(InvalidMessage, match="no users here"):
        Tagged.user("hi")


def test_messages_the_core_builds_hold_one_reference_per_field_and_release_it() -> None:
    # The common messages are built in the core by writing their fields at their slots: each
    # field must take exactly one reference to its value and give it back with the message.
    text = "".join(["a text ", "that is not interned"])
    call_id = "".join(["call", "-7"])
    before = (sys.getrefcount(text), sys.getrefcount(call_id))
    built = [
        Message.user(text),
        Message.assistant(text, tool_uses=[(call_id, "f", {"k": text})]),
        Message.tool_results((call_id, text)),
    ]
    # the user's text block, the assistant's text block and frozen input, the result
    assert sys.getrefcount(text) - before[0] == 4
    assert sys.getrefcount(call_id) - before[1] == 2  # the call and the result
    result = built[2].content[0]
    assert isinstance(result, ToolResultBlock) and result.tool_use_id is call_id
    assert built[0].text == text
    assert [type(m) for m in built] == [Message] * 3 and not any(gc.is_tracked(m) for m in built)
    del built, result
    assert (sys.getrefcount(text), sys.getrefcount(call_id)) == before
