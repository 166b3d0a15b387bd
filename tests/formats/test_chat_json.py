"""``from_openai_chat_json``: Chat Completions JSON text read in the core for the common
shapes, and otherwise by ``from_openai_chat(json.loads(...))``. Whichever path reads it, the
answer (messages, meta, or the error and its path) must be the general path's."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import Message, _core
from ctxtrim.errors import InvalidMessage
from ctxtrim.formats import (
    from_openai_chat,
    from_openai_chat_json,
    to_openai_chat,
    to_openai_chat_json,
)
from ctxtrim.formats._common import RAW_ARGUMENTS

from bytes_readers import answer, edge_texts, in_every_form, same_reading, shuffled
from strategies import histories, json_values, messages
from test_formats import BAD_CHAT, chat_odd_fields

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(data: bytes | bytearray | str, **options: Any) -> None:
    same_reading(
        from_openai_chat_json, lambda d, **o: from_openai_chat(json.loads(d), **o), data, **options
    )
    # A message read from bytes may keep its rendering's JSON from the read: it must be what
    # rendering the same message afresh writes.
    got = answer(from_openai_chat_json, data, **options)
    if isinstance(got, list):
        fresh = [Message.decode(m.encode()) for m in got]
        assert to_openai_chat_json(got) == to_openai_chat_json(fresh)


@PROPS
@given(data=st.data())
def test_the_bytes_reader_makes_what_the_dict_reader_makes(data: st.DataObject) -> None:
    # Histories rendered to Chat Completions JSON, as they are and with odd fields on some
    # entries, keys reordered, spaced or compact, as a message list or a request body.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        payload = to_openai_chat(ms)
    except InvalidMessage:
        return  # not expressible in Chat Completions
    which = data.draw(st.lists(st.booleans(), min_size=len(payload), max_size=len(payload)))
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    for odd in (None, "name", "extra", "spaced", "null_calls", "developer", "parts"):
        body: Any = copy.deepcopy(payload)
        if odd is not None:
            chat_odd_fields(body, odd, which)
        if rng.random() < 0.5:
            body = shuffled(body, rng)
        if rng.random() < 0.3:
            body = {"model": "gpt-x", "temperature": 0.2, "messages": body, "n": 1}
        spaced = rng.random() < 0.5
        text = json.dumps(body, ensure_ascii=rng.random() < 0.5, indent=1 if spaced else None)
        _same(text.encode())
        _same(text)
        _same(text.encode(), raw_arguments=True)


def test_the_common_shapes_are_read_in_the_core() -> None:
    # What a server receives every turn takes the core's path, so the test above compares
    # two paths, not one with itself.
    turn = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "look at a.py"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "tool", "tool_call_id": "c2", "content": ""},
        {"role": "assistant", "content": "done"},
    ]
    data = json.dumps(turn).encode()
    fast = _core.chat_json_fast(RAW_ARGUMENTS, data)
    assert fast is not None
    assert fast == from_openai_chat(turn)
    assert [m.role for m in fast] == ["system", "user", "assistant", "user", "assistant"]
    assert len(fast[3].content) == 2  # the two tool messages, one user message
    # Read through the API, each message keeps its rendering's JSON: the request is the
    # body's messages, written compactly, with nothing rendered.
    read = from_openai_chat_json(data)
    assert all(m._ctxtrim_openai_chat_json for m in read)  # type: ignore[attr-defined]
    assert to_openai_chat_json(read) == json.dumps(turn, separators=(",", ":")).encode()
    body = json.dumps({"model": "m", "tools": [{"x": [1.5, None]}], "messages": turn}).encode()
    assert _core.chat_json_fast(RAW_ARGUMENTS, body) == fast


@pytest.mark.parametrize(
    "data",
    [
        *edge_texts("messages"),
        b'[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": '
        b'"function", "function": {"name": "f", "arguments": "{\\"a\\": 1}"}}]}]',
        b'[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": '
        b'"function", "function": {"name": "f", "arguments": "{\\"a\\":1,\\"a\\":2}"}}]}]',
        b'[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": '
        b'"function", "function": {"name": "f", "arguments": "[1]"}}]}]',
        b'[{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": '
        b'"function", "function": {"name": "f", "arguments": "{\\"'
        + RAW_ARGUMENTS.encode()
        + b'\\":\\"x\\"}"}}]}]',
    ],
)
def test_edge_texts_give_what_json_loads_and_the_dict_reader_give(data: bytes) -> None:
    in_every_form(_same, data)


@pytest.mark.parametrize(("payload", "path"), BAD_CHAT)
def test_malformed_chat_json_names_the_same_path(payload: Any, path: str) -> None:
    data = json.dumps(payload).encode()
    with pytest.raises(InvalidMessage) as e:
        from_openai_chat_json(data)
    assert e.value.path == path
    _same(data)


@settings(max_examples=100, deadline=None)
@given(payload=json_values(max_leaves=30))
def test_arbitrary_json_gives_what_the_dict_reader_gives(payload: Any) -> None:
    _same(json.dumps(payload).encode())
    _same(json.dumps({"messages": [payload]}).encode())
