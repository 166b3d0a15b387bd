"""Provider formats: lossless round trips both ways, path-naming errors, detection.

For each format two round trips are checked:

* ``to_X(from_X(payload)) == payload`` on realistic provider payloads (the example sessions,
  written natively by examples/sessions/make_sessions.py, and the small payloads below);
* ``from_X(to_X(ms)) == ms`` by hypothesis over ``histories()`` and arbitrary message lists,
  restricted to what the format can express: ``expressible_<format>`` below applies exactly
  the losses each module's docstring lists, and the property also checks that converting the
  unrestricted history carries the same conversation (the losses are the documented ones,
  nothing else) and keeps a provider-valid history valid.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import (
    FitContextWindow,
    ImageBlock,
    InvalidMessage,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    formats,
    validate,
)
from ctxtrim.formats import (
    FormatError,
    detect,
    dump,
    from_anthropic,
    from_ctxtrim,
    from_openai_chat,
    from_openai_responses,
    load,
    parse_json,
    to_anthropic,
    to_anthropic_json,
    to_ctxtrim,
    to_openai_chat,
    to_openai_chat_json,
    to_openai_responses,
    to_openai_responses_json,
)
from ctxtrim.strategies import TruncateToolOutputs

from strategies import histories, json_dicts, json_values, messages

SESSIONS = Path(__file__).resolve().parents[2] / "examples" / "sessions"
PNG = base64.b64decode("iVBORw0KGgo=")
PNG_URL = "data:image/png;base64,iVBORw0KGgo="

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _plain(m: Message, content: list[Any], *, name: bool = False) -> Message:
    return Message(m.role, content, name=m.name if name else None)  # type: ignore[arg-type]  # a list is accepted and stored as a tuple


def _result(r: ToolResultBlock, *, is_error: bool = False, images: bool = True) -> ToolResultBlock:
    content = r.content
    if not isinstance(content, str) and not images:
        content = tuple(b for b in content if type(b) is TextBlock)
    return ToolResultBlock(r.tool_use_id, content, is_error=r.is_error and is_error)


def expressible_chat(ms: list[Message]) -> list[Message]:
    """What survives Chat Completions: no reasoning, no is_error/compact_summary, no images in
    assistant messages or tool results, text before tool calls, tool results split from
    user text (and merged across adjacent result-only messages), names except on results."""
    out: list[Message] = []
    for m in ms:
        if m.role == "system":
            out.append(_plain(m, list(m.content), name=True))
        elif m.role == "assistant":
            texts = [b for b in m.content if type(b) is TextBlock]
            uses = [b for b in m.content if type(b) is ToolUseBlock]
            out.append(_plain(m, texts + uses, name=True))
        else:
            _user_runs(m, out, name=True, images=False)
    return out


def _user_runs(m: Message, out: list[Message], *, name: bool, images: bool) -> None:
    if not m.content:
        out.append(_plain(m, [], name=name))
        return
    run: list[Any] = []

    def flush_run() -> None:
        if run:
            out.append(_plain(m, list(run), name=name))
            run.clear()

    for block in m.content:
        if type(block) is ToolResultBlock:
            flush_run()
            r = _result(block, images=images)
            last = out[-1] if out else None
            if (
                last is not None
                and last.role == "user"
                and last.content
                and all(type(b) is ToolResultBlock for b in last.content)
            ):
                out[-1] = Message("user", [*last.content, r])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
            else:
                out.append(Message("user", [r]))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        else:
            run.append(block)
    flush_run()


def expressible_responses(ms: list[Message]) -> list[Message]:
    """What survives the Responses format: no names, no redacted reasoning, no images in
    assistant messages, no is_error/compact_summary; adjacent assistant messages become one
    (a run of assistant-side items is one message); results split from user text."""
    out: list[Message] = []
    for m in ms:
        if m.role == "system":
            out.append(_plain(m, list(m.content)))
        elif m.role == "assistant":
            blocks = [
                b
                for b in m.content
                if type(b) is not ImageBlock and not (type(b) is ReasoningBlock and b.redacted)
            ]
            if m.content and not blocks:
                continue  # only redacted reasoning: no item at all
            if out and out[-1].role == "assistant":
                out[-1] = Message("assistant", [*out[-1].content, *blocks])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
            else:
                out.append(Message("assistant", blocks))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        else:
            _user_runs(m, out, name=False, images=True)
    return out


def expressible_anthropic(ms: list[Message]) -> list[Message]:
    """What survives Anthropic: leading system messages become one, later ones cannot be
    expressed (left out here), no names, no images in assistant messages, no compact_summary,
    no text in redacted reasoning."""
    out: list[Message] = []
    system: list[Any] | None = None
    started = False
    for m in ms:
        if m.role == "system":
            if not started:
                system = [*(system or []), *m.content]
            continue
        started = True
        if m.role == "assistant":
            blocks = [
                ReasoningBlock("", b.signature, True)
                if type(b) is ReasoningBlock and b.redacted
                else b
                for b in m.content
                if type(b) is not ImageBlock
            ]
            out.append(Message("assistant", blocks))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        else:
            out.append(
                Message(
                    "user",
                    [  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
                        _result(b, is_error=True) if type(b) is ToolResultBlock else b
                        for b in m.content
                    ],
                )
            )
    return ([Message("system", system)] if system is not None else []) + out  # type: ignore[arg-type]  # a list is accepted and stored as a tuple


FORMATS: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., list[Message]]]] = {
    "openai": (from_openai_chat, to_openai_chat, expressible_chat),
    "responses": (from_openai_responses, to_openai_responses, expressible_responses),
    "anthropic": (from_anthropic, to_anthropic, expressible_anthropic),
}


def _mid_system_free(ms: list[Message]) -> list[Message]:
    """Anthropic cannot take a system message after the conversation started."""
    out: list[Message] = []
    for m in ms:
        if m.role == "system" and any(x.role != "system" for x in out):
            continue
        out.append(m)
    return out


def _no_unexpressible(ms: list[Message], fmt: str) -> list[Message]:
    """Remove what ``to_X`` refuses (raises on): images in assistant messages (all formats),
    images in Chat tool results, mid-conversation system messages (Anthropic)."""
    out = []
    for m in ms:
        content = list(m.content)
        if m.role == "assistant":
            content = [b for b in content if type(b) is not ImageBlock]
        if fmt == "openai":
            content = [
                _result(b, is_error=b.is_error, images=False) if type(b) is ToolResultBlock else b
                for b in content
            ]
        out.append(
            Message(m.role, content, id=m.id, turn=m.turn, name=m.name, usage=m.usage, meta=m.meta)  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        )
    return _mid_system_free(out) if fmt == "anthropic" else out


def _check_roundtrip(fmt: str, ms: list[Message]) -> None:
    from_x, to_x, expressible = FORMATS[fmt]
    ms = _no_unexpressible(ms, fmt)
    x = expressible(ms)
    payload = to_x(x)
    assert from_x(payload) == x
    # The only losses are the documented ones: the unrestricted history carries the same
    # conversation (up to the provider-field record, e.g. how assistant items were grouped).
    assert [_plain(m, list(m.content), name=True) for m in from_x(to_x(ms))] == x
    # A provider-valid history stays provider-valid.
    if not validate(ms):
        assert validate(from_x(payload)) == []
    # And the payload is plain JSON.
    assert json.loads(json.dumps(payload)) == payload


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@PROPS
@given(data=st.data())
def test_from_to_roundtrip_on_agent_histories(fmt: str, data: st.DataObject) -> None:
    _check_roundtrip(fmt, data.draw(histories()))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@PROPS
@given(ms=st.lists(messages(), max_size=6))
def test_from_to_roundtrip_on_any_messages(fmt: str, ms: list[Message]) -> None:
    _check_roundtrip(fmt, ms)


@PROPS
@given(ms=st.lists(messages(), max_size=6))
def test_ctxtrim_shape_keeps_every_field(ms: list[Message]) -> None:
    assert from_ctxtrim(to_ctxtrim(ms)) == ms
    assert load(json.dumps(dump(ms, "ctxtrim")), "ctxtrim") == ms


# --------------------------------------------------------------------------------------------
# Realistic payloads: to_X(from_X(payload)) == payload


def _session(name: str) -> Any:
    return parse_json((SESSIONS / name).read_text(encoding="utf-8"))[0]


SESSION_FILES = {
    "openai": "openai_chat.json",
    "responses": "openai_responses.json",
    "anthropic": "anthropic.json",
    "ctxtrim": "ctxtrim.jsonl",
}


@pytest.mark.parametrize("fmt", sorted(SESSION_FILES))
def test_example_sessions_roundtrip_exactly(fmt: str) -> None:
    payload = _session(SESSION_FILES[fmt])
    original = copy.deepcopy(payload)
    assert detect(payload) == fmt
    ms = load(payload, fmt)
    assert dump(ms, fmt) == original
    assert payload == original  # loading did not mutate the caller's data
    # A realistic agent session, provider-valid as a ctxtrim history.
    assert validate(ms) == []
    assert len(ms) >= 40
    assert any(len(m.tool_uses) >= 2 for m in ms)  # parallel calls stay in one message
    assert any("🐛" in m.text and "解析器" in m.text for m in ms)
    longest = max(len(r.content) for m in ms for r in m.tool_results if isinstance(r.content, str))
    assert longest > 4000
    if fmt in ("anthropic", "ctxtrim"):  # OpenAI's formats have no error flag
        assert any(r.is_error for m in ms for r in m.tool_results)
    if fmt != "openai":  # Chat Completions has no reasoning
        assert any(type(b) is ReasoningBlock for m in ms for b in m.content)


def test_example_sessions_hold_the_same_conversation() -> None:
    """Across formats the conversation is the same (text, calls, results)."""

    def essence(ms: list[Message]) -> list[tuple[str, ...]]:
        out: list[tuple[str, ...]] = []
        for m in ms:
            for b in m.content:
                if type(b) is TextBlock:
                    out.append(("text", b.text))
                elif type(b) is ToolUseBlock:
                    out.append(("call", b.name, json.dumps(b.input, sort_keys=True)))
                elif type(b) is ToolResultBlock:
                    out.append(("result", str(b.content)))
        return sorted(out)

    chat = essence(load(_session("openai_chat.json")))
    assert essence(load(_session("anthropic.json"))) == chat
    assert essence(load(_session("openai_responses.json"))) == chat
    assert essence(load(_session("ctxtrim.jsonl"))) == chat


def test_example_sessions_are_reproducible(tmp_path: Path) -> None:
    import runpy

    module = runpy.run_path(str(SESSIONS / "make_sessions.py"))
    module["HERE"] = tmp_path
    module["main"].__globals__["HERE"] = tmp_path
    module["main"]()
    for name in SESSION_FILES.values():
        assert (tmp_path / name).read_bytes() == (SESSIONS / name).read_bytes(), name


CHAT = [
    {"role": "developer", "content": "Be terse.", "name": "ops"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "这张截图里是什么? 😀"},
            {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "high"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"dir": "/"}'},
            },
            {"id": "call_b", "type": "function", "function": {"name": "pwd", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_b", "content": "/work"},
    {"role": "tool", "tool_call_id": "call_a", "content": [{"type": "text", "text": "bin etc"}]},
    {"role": "user", "content": "and now?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
]


def test_chat_payload_roundtrips_and_maps_as_documented() -> None:
    ms = from_openai_chat(copy.deepcopy(CHAT))
    assert to_openai_chat(ms) == CHAT
    system, user, call, results, follow, answer = ms
    assert system.role == "system" and system.name == "ops" and system.text == "Be terse."
    assert user.content[1] == ImageBlock("image/png", PNG)
    assert [u.id for u in call.tool_uses] == ["call_a", "call_b"]
    assert call.tool_uses[0].input == {"dir": "/"}
    # Consecutive tool messages → one user message of results, in order; the user text after
    # them stays its own message.
    assert results.role == "user"
    assert [r.tool_use_id for r in results.tool_results] == ["call_b", "call_a"]
    assert results.tool_results[1].content == (TextBlock("bin etc"),)
    assert follow.text == "and now?" and answer.text == "Done."
    assert validate(ms) == []
    # The exact arguments text survives (prompt caches key on it) ...
    assert to_openai_chat(ms)[2]["tool_calls"][0]["function"]["arguments"] == '{"dir": "/"}'
    # ... but not once the input changed: the record is stale and ignored.
    edited = msgspec.structs.replace(
        call, content=(ToolUseBlock("call_a", "ls", {"dir": "/tmp"}), call.content[1])
    )
    out = to_openai_chat([edited])
    assert out[0]["tool_calls"][0]["function"]["arguments"] == '{"dir":"/tmp"}'


RESPONSES = [
    {"role": "developer", "content": "Be terse."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Fix it 🙏"},
            {"type": "input_image", "image_url": PNG_URL, "detail": "auto"},
        ],
    },
    {
        "id": "rs_1",
        "type": "reasoning",
        "summary": [
            {"type": "summary_text", "text": "Check the files."},
            {"type": "summary_text", "text": "Then the tests."},
        ],
        "encrypted_content": "gAAAAAB",
    },
    {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
    },
    {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_1",
        "name": "ls",
        "arguments": '{"dir":"/"}',
    },
    {
        "id": "fc_2",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_2",
        "name": "cat",
        "arguments": '{"path": "a.py"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "a.py"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "x = 1"}],
    },
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fine."}]},
]


def test_responses_payload_roundtrips_and_maps_as_documented() -> None:
    ms = from_openai_responses(copy.deepcopy(RESPONSES))
    assert to_openai_responses(ms) == RESPONSES
    system, user, turn, results, answer = ms
    assert system.role == "system"
    assert user.content == (TextBlock("Fix it 🙏"), ImageBlock("image/png", PNG))
    # reasoning + message + two function calls → one assistant message, in order
    reasoning, text, a, b = turn.content
    assert reasoning == ReasoningBlock("Check the files.\n\nThen the tests.", "gAAAAAB")
    assert text == TextBlock("Looking.")
    assert (a.id, b.id) == ("call_1", "call_2") and b.input == {"path": "a.py"}  # type: ignore[union-attr]  # the block's kind is known here
    assert [r.tool_use_id for r in results.tool_results] == ["call_1", "call_2"]
    assert answer.text == "Fine."
    assert validate(ms) == []


ANTHROPIC = {
    "system": "You are a coding agent.",
    "messages": [
        {"role": "user", "content": "Fix the bug 🐛 in 解析器"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Read first.", "signature": "EqQBCkYIARgC"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"},
                {"type": "text", "text": "Reading both."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [
                        {"type": "text", "text": "No such file"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBORw0KGgo=",
                            },
                        },
                    ],
                    "is_error": True,
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ],
}


def test_anthropic_payload_roundtrips_and_maps_as_documented() -> None:
    ms = from_anthropic(copy.deepcopy(ANTHROPIC))
    assert to_anthropic(ms) == ANTHROPIC
    system, _task, call, results = ms
    assert system == Message.system("You are a coding agent.")
    thinking, redacted = call.content[:2]
    assert thinking == ReasoningBlock("Read first.", "EqQBCkYIARgC")
    assert redacted == ReasoningBlock("", "EmwKAhgBEgy3", redacted=True)
    ok, failed = results.tool_results
    assert not ok.is_error and failed.is_error
    assert failed.content == (TextBlock("No such file"), ImageBlock("image/png", PNG))
    # The system prompt may also be given separately, or the messages as a bare list.
    assert from_anthropic(ANTHROPIC["messages"], system=ANTHROPIC["system"]) == ms
    assert to_anthropic(ms[1:]) == {"messages": ANTHROPIC["messages"]}


def test_anthropic_rejects_a_system_message_mid_conversation() -> None:
    with pytest.raises(InvalidMessage) as e:
        to_anthropic([Message.user("hi"), Message.system("late")])
    assert e.value.path == "messages[1]"


def test_a_trimmed_message_is_rendered_canonically_not_from_a_stale_record() -> None:
    """A strategy that rewrites a block must see its rewrite in the output."""
    ms = load(_session("anthropic.json"), "anthropic")
    clipped = TruncateToolOutputs(200)(ms)
    out = dump(clipped, "anthropic")
    longest = max(
        len(b["content"])
        for m in out["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result" and isinstance(b["content"], str)
    )
    assert longest < 400
    # The provider fields that still apply are kept (cache_control on the last block).
    assert out["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_cross_format_conversion_keeps_the_conversation() -> None:
    ms = from_openai_chat(CHAT)
    again = from_anthropic(to_anthropic(ms))
    assert [m.role for m in again] == [m.role for m in ms]
    assert [m.tool_uses for m in again] == [m.tool_uses for m in ms]
    assert validate(again) == []
    assert from_openai_responses(to_openai_responses(ms))[2].tool_uses == ms[2].tool_uses


# --------------------------------------------------------------------------------------------
# Malformed input: InvalidMessage naming the path, never KeyError/TypeError


def _chat_with(index: int, message: Any) -> list[Any]:
    payload = copy.deepcopy(CHAT)
    payload[index] = message
    return payload


BAD_CHAT = [
    (
        _chat_with(
            2,
            {
                "role": "assistant",
                "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": "{}"}}],
            },
        ),
        "messages[2].tool_calls[0].id",
    ),
    (
        _chat_with(
            2,
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "ls", "arguments": "{oops"}}],
            },
        ),
        "messages[2].tool_calls[0].function.arguments",
    ),
    (
        _chat_with(
            2,
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "ls", "arguments": "[1]"}}],
            },
        ),
        "messages[2].tool_calls[0].function.arguments",
    ),
    (_chat_with(2, {"role": "assistant", "tool_calls": {"id": "c"}}), "messages[2].tool_calls"),
    (_chat_with(3, {"role": "tool", "content": "x"}), "messages[3].tool_call_id"),
    (
        _chat_with(3, {"role": "tool", "tool_call_id": "", "content": "x"}),
        "messages[3].tool_call_id",
    ),
    (
        _chat_with(
            1,
            {
                "role": "assistant",
                "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
            },
        ),
        "messages[1].content[0].type",
    ),
    (
        _chat_with(
            1,
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,AA=="}}
                ],
            },
        ),
        "messages[1].content[0].image_url.url",
    ),
    (
        _chat_with(1, {"role": "user", "content": [{"type": "future_call", "id": "x"}]}),
        "messages[1].content[0].type",
    ),
    (_chat_with(1, {"role": "user", "content": 7}), "messages[1].content"),
    (_chat_with(1, {"role": "wizard", "content": "x"}), "messages[1].role"),
    (_chat_with(1, {"content": "x"}), "messages[1].role"),
    (_chat_with(1, "hello"), "messages[1]"),
    (_chat_with(1, {"role": "user", "content": "\ud800"}), "messages[1].content"),
    ({"messages": 3}, "messages"),
]


@pytest.mark.parametrize(("payload", "path"), BAD_CHAT)
def test_malformed_chat_names_the_path(payload: Any, path: str) -> None:
    with pytest.raises(InvalidMessage) as e:
        from_openai_chat(payload)
    assert e.value.path == path


BAD_RESPONSES = [
    ([{"type": "function_call", "name": "ls", "arguments": "{}"}], "input[0].call_id"),
    (
        [{"type": "function_call", "call_id": "c", "name": "ls", "arguments": 5}],
        "input[0].arguments",
    ),
    ([{"type": "function_call_output", "output": "x"}], "input[0].call_id"),
    ([{"type": "reasoning", "summary": [{"type": "x"}]}], "input[0].summary[0].type"),
    ([{"type": "reasoning", "summary": "x"}], "input[0].summary"),
    ([{"type": "computer_call", "id": "cu_1", "action": {}}], "input[0].call_id"),
    ([{"type": "mcp_approval_response", "approve": True}], "input[0].approval_request_id"),
    ([{"type": "future_call", "call_id": "c"}], "input[0].type"),
    (
        [{"type": "message", "role": "user", "content": [{"type": "refusal", "refusal": "x"}]}],
        "input[0].content[0].type",
    ),
    (
        [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "input_image", "image_url": PNG_URL}],
            }
        ],
        "input[0].content[0].type",
    ),
    ([{"content": "no role"}], "input[0].type"),
    ([{"type": "message", "role": "user"}], "input[0].content"),
]


@pytest.mark.parametrize(("payload", "path"), BAD_RESPONSES)
def test_malformed_responses_names_the_path(payload: Any, path: str) -> None:
    with pytest.raises(InvalidMessage) as e:
        from_openai_responses(payload)
    assert e.value.path == path


BAD_ANTHROPIC = [
    (
        [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}],
        "messages[0].content[0].tool_use_id",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "x", "input": []}],
            }
        ],
        "messages[0].content[0].input",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t", "name": "x", "input": {"a": float("nan")}}
                ],
            }
        ],
        "messages[0].content[0].input",
    ),
    (
        [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}],
        "messages[0].content[0].type",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [{"type": "server_tool_use", "name": "web_search", "input": {}}],
            }
        ],
        "messages[0].content[0].id",
    ),
    (
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "!!"},
                    }
                ],
            }
        ],
        "messages[0].content[0].source.data",
    ),
    (
        [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}],
            }
        ],
        "messages[0].content[0].is_error",
    ),
    ([{"role": "system", "content": "x"}], "messages[0].role"),
    (
        [{"role": "assistant", "content": [{"type": "web_search_tool_result", "content": []}]}],
        "messages[0].content[0].tool_use_id",
    ),
    ([{"role": "assistant", "content": [{"type": "document"}]}], "messages[0].content[0].type"),
    ({"system": 5, "messages": []}, "system"),
    ({"model": "claude"}, "messages"),
]


@pytest.mark.parametrize(("payload", "path"), BAD_ANTHROPIC)
def test_malformed_anthropic_names_the_path(payload: Any, path: str) -> None:
    with pytest.raises(InvalidMessage) as e:
        from_anthropic(payload)
    assert e.value.path == path


def test_malformed_ctxtrim_shape_names_the_path() -> None:
    with pytest.raises(InvalidMessage) as e:
        from_ctxtrim(
            [
                {"role": "user", "content": []},
                {"role": "user", "content": [{"type": "tool_result"}]},
            ]
        )
    assert e.value.path == "messages[1].content[0].tool_use_id"


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic", "ctxtrim"])
@settings(max_examples=150, deadline=None)
@given(payload=json_values(max_leaves=30))
def test_arbitrary_json_is_accepted_or_rejected_with_invalid_message(
    fmt: str, payload: Any
) -> None:
    from_x = {**{k: v[0] for k, v in FORMATS.items()}, "ctxtrim": from_ctxtrim}[fmt]
    try:
        from_x(payload)
    except InvalidMessage:
        pass


@pytest.mark.parametrize(
    ("fmt", "messages_", "path"),
    [
        ("openai", [Message.assistant([ImageBlock("image/png", PNG)])], "messages[0].content[0]"),
        (
            "openai",
            [Message.tool_results(ToolResultBlock("t", [ImageBlock("image/png", PNG)]))],  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
            "messages[0].content[0].content[0]",
        ),
        (
            "responses",
            [Message.user("x"), Message.assistant(["a", ImageBlock("image/png", PNG)])],
            "messages[1].content[1]",
        ),
        (
            "anthropic",
            [Message.assistant([ImageBlock("image/png", PNG)])],
            "messages[0].content[0]",
        ),
        ("ctxtrim", ["not a message"], "messages[0]"),
    ],
)
def test_what_a_format_cannot_express_raises(fmt: str, messages_: list[Any], path: str) -> None:
    with pytest.raises(InvalidMessage) as e:
        dump(messages_, fmt)
    assert e.value.path == path


# --------------------------------------------------------------------------------------------
# detect / load / dump


@pytest.mark.parametrize(
    ("payload", "fmt"),
    [
        (CHAT, "openai"),
        ([{"role": "user", "content": "hi"}], "openai"),
        (RESPONSES, "responses"),
        ({"input": RESPONSES, "model": "gpt-5"}, "responses"),
        (ANTHROPIC, "anthropic"),
        (ANTHROPIC["messages"], "anthropic"),
        (to_ctxtrim([Message.system("s"), *from_anthropic(ANTHROPIC["messages"])]), "ctxtrim"),
        ({"messages": CHAT, "model": "gpt-4o"}, "openai"),
    ],
)
def test_detect(payload: Any, fmt: str) -> None:
    assert detect(payload) == fmt
    assert load(payload) == load(payload, fmt)


@pytest.mark.parametrize("payload", [5, "text", {"model": "x"}, None])
def test_detect_rejects_what_is_not_a_conversation(payload: Any) -> None:
    with pytest.raises(FormatError):
        detect(payload)


def test_load_accepts_json_and_jsonl_text() -> None:
    ms = from_openai_chat(CHAT)
    assert parse_json('{"role": "user", "content": "hi"}\n') == (
        [{"role": "user", "content": "hi"}],
        True,
    )
    assert load(json.dumps(CHAT)) == ms
    assert load("\n".join(json.dumps(m) for m in CHAT).encode(), "openai") == ms
    with pytest.raises(FormatError, match="line 2"):
        load('{"role": "user", "content": "x"}\nnot json\n')
    with pytest.raises(FormatError):
        load("not json")


def test_unknown_format_name() -> None:
    with pytest.raises(FormatError, match="unknown format 'mistral'"):
        load([], "mistral")
    with pytest.raises(FormatError):
        dump([], "auto")
    assert isinstance(FormatError("x"), ValueError)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


@pytest.mark.parametrize(
    ("fmt", "payload"), [("openai", CHAT), ("responses", RESPONSES), ("anthropic", ANTHROPIC)]
)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_corrupted_payloads_raise_invalid_message_or_convert(
    fmt: str, payload: Any, data: st.DataObject
) -> None:
    """Replace one field anywhere in a realistic payload by an arbitrary JSON value (or delete
    it): the converter either accepts the result — and then round-trips it exactly — or
    raises InvalidMessage; never KeyError, TypeError or AttributeError."""
    from_x, to_x, _ = FORMATS[fmt]
    corrupted = copy.deepcopy(payload)
    path = data.draw(st.sampled_from(_paths(corrupted)[1:]))
    parent = corrupted
    for key in path[:-1]:
        parent = parent[key]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(json_values(max_leaves=4))
    try:
        ms = from_x(copy.deepcopy(corrupted))
    except InvalidMessage as e:
        assert e.path  # names where
        return
    assert from_x(to_x(ms)) == ms
    assert to_x(ms) == corrupted


@pytest.mark.parametrize(
    ("to_dicts", "to_json"),
    [
        (formats.to_openai_chat, formats.to_openai_chat_json),
        (formats.to_openai_responses, formats.to_openai_responses_json),
        (formats.to_anthropic, formats.to_anthropic_json),
    ],
)
def test_renderings_are_kept_and_returned_dicts_are_the_callers_own(
    to_dicts: Any, to_json: Any
) -> None:
    history = [
        Message.system("be brief"),
        Message.user("list /"),
        Message.assistant("", tool_uses=[("t1", "ls", {"dir": "/"})]),
        Message.tool_results(("t1", "bin etc")),
        Message.assistant("bin and etc."),
    ]
    first = to_dicts(history)
    assert json.loads(to_json(history)) == first
    # Mutating everything a call returned changes neither the messages nor the next call.
    before = [m.encode() for m in history]

    def scribble(value: Any) -> None:
        if isinstance(value, dict):
            for v in list(value.values()):
                scribble(v)
            value["scribbled"] = True
        elif isinstance(value, list):
            for v in value:
                scribble(v)
            value.append("scribbled")

    scribble(first)
    assert [m.encode() for m in history] == before
    again = to_dicts(history)
    assert "scribbled" not in json.dumps(again)
    assert again == json.loads(to_json(history))
    # A message's rendering is made once and reused by every later call, on any list.
    assert to_json(history[:1] + history[3:]) == to_json(list(history[:1] + history[3:]))


def _containers(value: Any) -> list[Any]:
    """Every dict and list in ``value``, itself included."""
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in _containers(v))]
    if isinstance(value, list):
        return [value, *(c for v in value for c in _containers(v))]
    return []


def _plain_json(value: Any) -> bool:
    """Exactly what ``json.loads`` makes: plain dicts, lists and scalars, nothing else."""
    if type(value) is dict:
        return all(type(k) is str and _plain_json(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain_json(v) for v in value)
    return type(value) in (str, int, float, bool, type(None))


@PROPS
@given(ms=st.one_of(histories(), st.lists(messages(), max_size=6)))
@pytest.mark.parametrize(
    ("to_dicts", "to_json"),
    [
        (formats.to_openai_chat, formats.to_openai_chat_json),
        (formats.to_openai_responses, formats.to_openai_responses_json),
        (formats.to_anthropic, formats.to_anthropic_json),
    ],
)
def test_the_dicts_of_a_request_are_its_json_decoded_and_new_on_every_call(
    to_dicts: Any, to_json: Any, ms: list[Message]
) -> None:
    # The dicts are copies of the kept renderings: they must be exactly what decoding the
    # request's JSON gives (same types, key order, values), whichever path rendered first,
    # and no dict or list may be shared between two calls.
    fresh = [Message.decode(m.encode()) for m in ms]
    try:
        first = to_dicts(ms)
    except InvalidMessage as e:
        with pytest.raises(InvalidMessage) as again:
            to_json(fresh)
        assert (again.value.path, str(again.value)) == (e.path, str(e))
        return
    decoded = json.loads(to_json(fresh))  # the other path first, on other objects
    assert _plain_json(first)
    assert json.dumps(first) == json.dumps(decoded)
    assert json.dumps(to_dicts(fresh)) == json.dumps(decoded)
    second = to_dicts(ms)
    assert json.dumps(second) == json.dumps(first)
    seen = {id(c) for c in _containers(first)}
    assert not any(id(c) in seen for c in _containers(second))


@PROPS
@given(data=st.data())
def test_the_fast_chat_reader_makes_what_the_general_reader_makes(data: st.DataObject) -> None:
    # Common shapes skip the general reader; the result must be identical, meta included,
    # on histories, on arbitrary messages, and on payloads with extra or odd fields.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        payload = to_openai_chat(ms)
    except InvalidMessage:
        return  # not expressible in Chat Completions (an image in an assistant message)
    # Odd fields on some entries only, so that the core's prefix reader stops midway (maybe
    # inside a run of tool messages) and the loop goes on from there.
    which = data.draw(st.lists(st.booleans(), min_size=len(payload), max_size=len(payload)))
    for odd in (None, "name", "extra", "spaced", "null_calls", "developer"):
        _check_fast_reader(copy.deepcopy(payload), odd, which)


def chat_odd_fields(payload: list[dict[str, Any]], odd: str, which: list[bool]) -> None:
    """Chat Completions fields and values the core does not take (``odd``: one kind), on the
    entries ``which`` marks only: the fast readers must hand those to the general reader and
    go on."""
    for item, changed in zip(payload, which, strict=True):
        if not changed:
            continue
        if odd == "name" and item["role"] != "tool":
            item["name"] = "bob"
        elif odd == "extra":
            item["refusal"] = None
        elif odd == "spaced":
            for call in item.get("tool_calls") or []:
                call["function"]["arguments"] = json.dumps(
                    json.loads(call["function"]["arguments"])
                )
        elif odd == "null_calls" and item["role"] == "assistant" and "tool_calls" not in item:
            item["tool_calls"] = None
        elif odd == "developer" and item["role"] == "system":
            item["role"] = "developer"
        elif odd == "parts" and isinstance(item.get("content"), str):
            item["content"] = [{"type": "text", "text": item["content"]}]


def _check_fast_reader(payload: list[dict[str, Any]], odd: str | None, which: list[bool]) -> None:
    from ctxtrim.formats import openai_chat

    if odd is not None:
        chat_odd_fields(payload, odd, which)
    fast = from_openai_chat(payload)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(openai_chat, "_fast", lambda raw: None)
        m.setattr(openai_chat, "_fast_prefix", lambda items: ([], 0, [], 0))
        general = from_openai_chat(payload)
    assert fast == general
    assert [x.meta for x in fast] == [x.meta for x in general]


def _chat_json(ms: list[Message]) -> bytes | str:
    """``to_openai_chat_json`` of fresh copies (no kept rendering), or the error's text."""
    try:
        return to_openai_chat_json([Message.decode(m.encode()) for m in ms])
    except InvalidMessage as e:
        return f"{e.path}: {e}"


@PROPS
@given(ms=st.one_of(histories(), st.lists(messages(), max_size=6)), name=st.booleans())
def test_the_fast_chat_renderer_renders_what_the_general_renderer_renders(
    ms: list[Message], name: bool
) -> None:
    # Messages in common shapes are rendered in the core, their JSON written straight from
    # the message (or, with that writer off, the core's objects encoded); the bytes must be
    # the general renderer's, key order and escapes included, and anything else must still
    # reach the general one.
    from ctxtrim.formats import openai_chat

    if name:
        ms = [msgspec.structs.replace(m, name="bob") for m in ms]
    written = _chat_json(ms)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(openai_chat._RENDERINGS, "_fast_json", None)
        encoded = _chat_json(ms)
        m.setattr(openai_chat, "_render_fast", lambda message: None)
        m.setattr(openai_chat._RENDERINGS, "_fast", lambda message: None)  # the core's too
        general = _chat_json(ms)
    assert written == encoded == general


def test_the_bytes_path_writes_common_shapes_straight_from_the_message() -> None:
    # A server that only sends bytes keeps one rendering per message, the JSON, and no
    # objects; the bytes are the objects' JSON, escapes included, whichever path came first.
    odd = 'tab\t "quoted" \\ \x00\x1f \u2028 é 😀 </script>'
    ms = [
        Message.system(odd),
        Message.user("q"),
        Message.assistant(odd, tool_uses=[ToolUseBlock("c1", "f", {"k": odd, "n": [1, 2.5]})]),
        Message.tool_results([ToolResultBlock("c1", odd)]),
        Message("user", (TextBlock("a"), TextBlock(odd))),
    ]
    written = to_openai_chat_json(ms)
    for m in ms:
        assert getattr(m, "_ctxtrim_openai_chat", None) is None  # no objects kept
        assert getattr(m, "_ctxtrim_openai_chat_json", None) is not None
    assert json.loads(written) == to_openai_chat(ms)
    fresh = [Message.decode(m.encode()) for m in ms]
    to_openai_chat(fresh)  # the dicts path first: its objects are kept and encoded
    assert to_openai_chat_json(fresh) == written
    assert written == msgspec.json.encode(to_openai_chat(ms))
    # The same for Anthropic, its reasoning blocks and a tool input of nested JSON too; an
    # input holding a float is left to the encoder (msgspec and json.dumps write some apart).
    ms = [m for m in ms if m.role != "system"] + [
        Message.assistant(tool_uses=[ToolUseBlock("c2", "g", {"k": [odd, {"x": None}]})]),
        Message.tool_results([ToolResultBlock("c2", odd, is_error=True)]),
        Message("assistant", (ReasoningBlock(odd, "sig"), TextBlock("x"))),
        Message("assistant", (ReasoningBlock("", "opaque", redacted=True), TextBlock("y"))),
    ]
    written = to_anthropic_json(ms)
    for m in ms:
        floats = any(type(b) is ToolUseBlock and "n" in b.input for b in m.content)
        assert (getattr(m, "_ctxtrim_anthropic", None) is None) is not floats
    assert written == msgspec.json.encode(to_anthropic(ms))


def test_the_anthropic_system_field_is_kept_per_message_object() -> None:
    # A request's system prompt is the same message every turn, so its JSON is kept; it must
    # follow the message object, not its id (an id is reused once its object is gone).
    from ctxtrim.formats import anthropic

    user = Message.user("hi")
    first, second = Message.system("be brief"), Message.system("be thorough")
    assert json.loads(to_anthropic_json([first, user]))["system"] == "be brief"
    assert json.loads(to_anthropic_json([second, user]))["system"] == "be thorough"
    assert json.loads(to_anthropic_json([first, user]))["system"] == "be brief"
    # Another object under the id of `second` (as if `second` had died and its id was
    # reused) is not taken for it.
    anthropic._SYSTEMS[id(second)] = (first, b'"be brief"')
    assert json.loads(to_anthropic_json([second, user]))["system"] == "be thorough"
    for _ in range(anthropic._SYSTEMS_KEPT + 1):  # bounded
        to_anthropic_json([Message.system("x"), user])
    assert len(anthropic._SYSTEMS) <= anthropic._SYSTEMS_KEPT
    both = json.loads(to_anthropic_json([first, second, user]))["system"]
    assert [b["text"] for b in both] == ["be brief", "be thorough"]


def _anthropic_json(ms: list[Message]) -> bytes | str:
    """``to_anthropic_json`` of fresh copies (no kept rendering), or the error's text."""
    try:
        return to_anthropic_json([Message.decode(m.encode()) for m in ms])
    except InvalidMessage as e:
        return f"{e.path}: {e}"


@PROPS
@given(ms=st.one_of(histories(), st.lists(messages(), max_size=6)))
def test_the_fast_anthropic_renderer_renders_what_the_general_renderer_renders(
    ms: list[Message],
) -> None:
    # Messages in common shapes are rendered in the core, their JSON written straight from
    # the message (or, with that writer off, the core's objects encoded); the bytes must be
    # the general renderer's, key order and escapes included, and anything else (images,
    # recorded fields, a system message after the start) must still reach the general one.
    from ctxtrim.formats import anthropic

    written = _anthropic_json(ms)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(anthropic._RENDERINGS, "_fast_json", None)
        encoded = _anthropic_json(ms)
        m.setattr(anthropic, "_render_fast", lambda message: None)
        m.setattr(anthropic._RENDERINGS, "_fast", lambda message: None)  # the core's too
        general = _anthropic_json(ms)
    assert written == encoded == general


@PROPS
@given(data=st.data())
def test_the_fast_anthropic_reader_makes_what_the_general_reader_makes(
    data: st.DataObject,
) -> None:
    # Common shapes are read in the core; the result must be identical, meta included, on
    # histories, arbitrary messages, and payloads with odd fields on some entries only, so
    # that the core's prefix stops midway and the loop goes on from there.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        payload = to_anthropic(ms)
    except InvalidMessage:
        return  # not expressible (a system message mid-conversation, an assistant image)
    which = data.draw(
        st.lists(
            st.booleans(), min_size=len(payload["messages"]), max_size=len(payload["messages"])
        )
    )
    for odd in (None, "extra", "block_extra", "explicit_false", "string", "system_list"):
        _check_fast_anthropic_reader(copy.deepcopy(payload), odd, which)


def _check_fast_anthropic_reader(
    payload: dict[str, Any], odd: str | None, which: list[bool]
) -> None:
    from ctxtrim.formats import anthropic

    if odd == "system_list" and isinstance(payload.get("system"), str):
        payload["system"] = [{"type": "text", "text": payload["system"]}]
    for item, changed in zip(payload["messages"], which, strict=True):
        if not changed:
            continue
        parts = item["content"] if isinstance(item["content"], list) else []
        if odd == "extra":
            item["id"] = "msg_1"
        elif odd == "block_extra" and parts:
            parts[-1]["cache_control"] = {"type": "ephemeral"}
        elif odd == "explicit_false":
            for part in parts:
                if part["type"] == "tool_result" and "is_error" not in part:
                    part["is_error"] = False
        elif odd == "string" and len(parts) == 1 and parts[0]["type"] == "text":
            item["content"] = parts[0]["text"]
    fast = _read(from_anthropic, payload)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(anthropic, "_fast_prefix", lambda system, items: ([], 0))
        general = _read(from_anthropic, payload)
    assert fast == general


@PROPS
@given(data=st.data())
def test_the_fast_responses_reader_makes_what_the_general_reader_makes(
    data: st.DataObject,
) -> None:
    # As for Anthropic, with Responses' grouping: consecutive assistant-side items make one
    # message and consecutive outputs another, so the prefix may stop inside a group.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        payload = to_openai_responses(ms)
    except InvalidMessage:
        return  # not expressible (an image in an assistant message)
    which = data.draw(st.lists(st.booleans(), min_size=len(payload), max_size=len(payload)))
    for odd in (None, "extra", "short", "string", "one_part", "developer", "spaced", "split"):
        _check_fast_responses_reader(copy.deepcopy(payload), odd, which)


def _check_fast_responses_reader(
    payload: list[dict[str, Any]], odd: str | None, which: list[bool]
) -> None:
    from ctxtrim.formats import openai_responses

    items: list[dict[str, Any]] = []
    for item, changed in zip(payload, which, strict=True):
        items.append(item)
        if not changed:
            continue
        is_message = item.get("type") == "message"
        content = item.get("content")
        if odd == "extra":
            item["id"] = "item_1"
        elif odd == "short" and is_message:
            del item["type"]
        elif odd == "string" and is_message and isinstance(content, list) and len(content) == 1:
            item["content"] = content[0].get("text", content[0])  # an image: an error
        elif odd == "one_part" and is_message and isinstance(content, str):
            item["content"] = [{"type": "input_text", "text": content}]
        elif odd == "developer" and item.get("role") == "system":
            item["role"] = "developer"
        elif odd == "spaced" and item.get("type") == "function_call":
            item["arguments"] = json.dumps(json.loads(item["arguments"]))
        elif odd == "split" and is_message and isinstance(content, list) and len(content) > 1:
            # Two text runs in a row: a segmentation the canonical one would not give.
            items.append({**item, "content": content[1:]})
            item["content"] = content[:1]
    fast = _read(from_openai_responses, items)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(openai_responses, "_fast_prefix", lambda items: ([], 0))
        general = _read(from_openai_responses, items)
    assert fast == general


def _read(read: Callable[[Any], list[Message]], payload: Any) -> Any:
    """The messages read with their metas, or the error's path and text (the general
    reader's, whichever path read the items before it)."""
    try:
        ms = read(payload)
    except InvalidMessage as e:
        return f"{e.path}: {e}"
    return ms, [m.meta for m in ms]


def _responses_json(ms: list[Message]) -> bytes | str:
    """``to_openai_responses_json`` of fresh copies (no kept rendering), or the error's text."""
    try:
        return to_openai_responses_json([Message.decode(m.encode()) for m in ms])
    except InvalidMessage as e:
        return f"{e.path}: {e}"


@PROPS
@given(
    ms=st.one_of(histories(), st.lists(messages(), max_size=6)),
    short=st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), st.text())),
)
def test_the_fast_responses_renderer_renders_what_the_general_renderer_renders(
    ms: list[Message], short: list[tuple[str, str]]
) -> None:
    # Messages in common shapes are rendered in the core; the bytes must be the general
    # renderer's, key order included, and anything else (images, recorded fields, arguments
    # kept as text) must still reach the general one. Short-form messages carry the one
    # record the core renders.
    from ctxtrim.formats import openai_responses

    ms = ms + [
        from_openai_responses([{"role": role, "content": text}])[0]
        for role, text in short
        if not _has_surrogate(text)
    ]
    written = _responses_json(ms)  # the core's JSON writer, straight from the message
    with pytest.MonkeyPatch.context() as m:
        m.setattr(openai_responses._RENDERINGS, "_fast_json", None)
        encoded = _responses_json(ms)  # the core's objects, encoded
        m.setattr(openai_responses, "render_common", lambda message: None)
        m.setattr(openai_responses._RENDERINGS, "_fast", lambda message: None)  # the core's too
        general = _responses_json(ms)
    assert written == encoded == general


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


@PROPS
@given(
    args=json_dicts(max_leaves=8),
    form=st.sampled_from(["compact", "spaced", "ascii", "msgspec", "duplicate", "deep"]),
)
def test_tool_arguments_are_read_as_the_general_readers_read_them(
    args: dict[str, Any], form: str
) -> None:
    # The core takes arguments text without the general reader only when it is exactly the
    # canonical text of an object; anything else (other spacing or escapes, msgspec's float
    # spelling, a repeated key, nesting json finds too deep) must give the general result.
    from ctxtrim.formats import openai_chat, openai_responses

    try:
        text = {
            "compact": lambda: json.dumps(args, ensure_ascii=False, separators=(",", ":")),
            "spaced": lambda: json.dumps(args, ensure_ascii=False),
            "ascii": lambda: json.dumps(args, separators=(",", ":")),
            "msgspec": lambda: msgspec.json.encode(args).decode(),
            "duplicate": lambda: '{"k":1,' + json.dumps(args, separators=(",", ":"))[1:],
            "deep": lambda: '{"k":' + "[" * 70 + "]" * 70 + "}",
        }[form]()
    except (msgspec.EncodeError, UnicodeEncodeError):
        return  # a lone surrogate: no such text comes from JSON
    chat = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": text}}
            ],
        }
    ]
    responses = [{"type": "function_call", "call_id": "c", "name": "f", "arguments": text}]
    for read, module, off in (
        (
            from_openai_chat,
            openai_chat,
            {"_fast": lambda raw: None, "_fast_prefix": lambda items: ([], 0, [], 0)},
        ),
        (from_openai_responses, openai_responses, {"_fast_prefix": lambda items: ([], 0)}),
    ):
        payload = chat if module is openai_chat else responses
        fast = _read(read, payload)
        with pytest.MonkeyPatch.context() as m:
            for name, value in off.items():
                m.setattr(module, name, value)
            general = _read(read, payload)
        assert fast == general


@PROPS
@given(args=json_dicts(max_leaves=8))
def test_tool_arguments_are_written_as_the_general_renderers_write_them(
    args: dict[str, Any],
) -> None:
    # The core writes arguments with msgspec only where its text is the canonical one.
    from ctxtrim.formats import openai_chat, openai_responses

    try:
        ms = [Message.assistant(tool_uses=[("c", "f", args)])]
    except InvalidMessage:
        return  # a lone surrogate: not a message
    for to_json, module, name in (
        (_chat_json, openai_chat, "_render_fast"),
        (_responses_json, openai_responses, "render_common"),
    ):
        fast = to_json(ms)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(module, name, lambda message: None)
            m.setattr(module._RENDERINGS, "_fast", lambda message: None)  # the core's too
            m.setattr(module._RENDERINGS, "_fast_json", None)
            general = to_json(ms)
        assert fast == general


def test_an_unknown_responses_item_after_a_directive_stays_an_item() -> None:
    # Found by test_corrupted_payloads_raise_invalid_message_or_convert: an item type no row
    # names, right after a developer message, joins the system message; it was written back
    # as a content part of that message (and read back differently).
    payload = [
        {"role": "developer", "content": "Be terse."},
        {"type": "0", "role": "user", "content": [{"type": "input_text", "text": "Fix"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ]
    messages = formats.from_openai_responses(copy.deepcopy(payload))
    assert formats.to_openai_responses(messages) == payload
    assert formats.from_openai_responses(formats.to_openai_responses(messages)) == messages
    as_part = [{"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "0x"}]}]
    assert formats.to_openai_responses(formats.from_openai_responses(as_part)) == as_part


@pytest.mark.parametrize("block", ["server_tool_use", "document"])
def test_an_anthropic_body_without_system_is_detected_by_its_blocks(block: str) -> None:
    parts = {
        "server_tool_use": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        ],
        "document": [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "x"},
            }
        ],
    }[block]
    role = "assistant" if block == "server_tool_use" else "user"
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "q"}, {"role": role, "content": parts}],
    }
    assert formats.detect(body) == "anthropic"
    assert FitContextWindow(10**6)(body) is body  # read as Anthropic: nothing to trim, no error


def test_an_image_inside_a_tool_result_tells_ctxtrim_dicts_from_anthropic() -> None:
    # Found by tests/trimming/test_dicts.py: ctxtrim's own dicts with tool blocks and no
    # system message read as Anthropic, whose reader then wanted the image's `source`.
    history = [
        Message.user("q"),
        Message.assistant("", tool_uses=[("t", "f", {})]),
        Message("user", (ToolResultBlock("t", (ImageBlock("image/gif", b""),)),)),
    ]
    assert formats.detect(formats.to_ctxtrim(history)) == "ctxtrim"
    assert formats.detect(formats.to_anthropic(history)["messages"]) == "anthropic"
