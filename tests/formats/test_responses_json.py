"""``from_openai_responses_json``: OpenAI Responses JSON text read in the core for the common
shapes, and otherwise by ``from_openai_responses(json.loads(...))``. Whichever path reads it,
the answer (messages, meta, or the error and its path) must be the general path's."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import _core
from ctxtrim.errors import InvalidMessage
from ctxtrim.formats import (
    from_openai_responses,
    from_openai_responses_json,
    to_openai_responses,
)
from ctxtrim.formats._common import RAW_ARGUMENTS

from bytes_readers import edge_texts, in_every_form, same_reading, shuffled
from strategies import histories, json_values, messages
from test_formats import BAD_RESPONSES

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(data: bytes | bytearray | str, **options: Any) -> None:
    same_reading(
        from_openai_responses_json,
        lambda d, **o: from_openai_responses(json.loads(d), **o),
        data,
        **options,
    )


def _odd(items: list[dict[str, Any]], odd: str, which: list[bool]) -> None:
    """Fields and values the core does not take (or takes differently), on some items only."""
    # ``which`` was drawn for all the items: ``_common`` may have left fewer.
    for item, changed in zip(items, which, strict=False):
        if not changed:
            continue
        kind = item.get("type")
        content = item.get("content")
        if odd == "extra":
            item["id"] = "it_1"
        elif odd == "status" and kind is not None:
            item["status"] = "completed"
        elif odd == "developer" and item.get("role") == "system":
            item["role"] = "developer"
        elif odd == "form" and "role" in item:  # the long form for the short, and back
            if kind is None:
                item["type"] = "message"
            else:
                del item["type"]
        elif odd == "parts" and isinstance(content, str):
            ptype = "output_text" if item["role"] == "assistant" else "input_text"
            item["content"] = [{"type": ptype, "text": content}]
        elif odd == "other_part" and isinstance(content, list):
            for part in content:
                if part.get("type") in ("input_text", "output_text"):
                    part["type"] = "input_text" if part["type"] == "output_text" else "output_text"
        elif odd == "spaced" and kind == "function_call":
            item["arguments"] = json.dumps(json.loads(item["arguments"]))
        elif odd == "list_output" and kind == "function_call_output":
            if isinstance(item["output"], str):
                item["output"] = [{"type": "input_text", "text": item["output"]}]
        elif odd == "null" and kind == "function_call_output":
            item["output"] = None


def _common(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items in the shapes the core reads (text messages, calls, string outputs), so
    that most examples take its path, not only those with no reasoning or image."""
    texts = ("input_text", "output_text")

    def common(item: dict[str, Any]) -> bool:
        kind: str = item.get("type", "message")
        if kind == "message":
            content = item["content"]
            return isinstance(content, str) or all(p.get("type") in texts for p in content)
        if kind == "function_call_output":
            return isinstance(item["output"], str)
        return kind == "function_call"

    return [item for item in items if common(item)]


_ODDS = (None, "extra", "status", "developer", "form", "parts", "other_part", "spaced")


@PROPS
@given(data=st.data())
def test_the_bytes_reader_makes_what_the_dict_reader_makes(data: st.DataObject) -> None:
    # Histories rendered to Responses JSON, as they are and with odd fields on some items,
    # keys reordered, spaced or compact, unicode-escaped or not, as an item array or inside a
    # request body.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        items = to_openai_responses(ms)
    except InvalidMessage:
        return  # not expressible in the Responses format
    which = data.draw(st.lists(st.booleans(), min_size=len(items), max_size=len(items)))
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    for odd in (*_ODDS, "list_output", "null"):
        payload: Any = copy.deepcopy(items)
        if rng.random() < 0.5:
            payload = _common(payload)
        if odd is not None:
            _odd(payload, odd, which)
        if rng.random() < 0.5:
            payload = shuffled(payload, rng)
        if rng.random() < 0.3:
            payload = {"model": "gpt-x", "instructions": "be brief", "input": payload, "n": 1}
        spaced = rng.random() < 0.5
        text = json.dumps(payload, ensure_ascii=rng.random() < 0.5, indent=1 if spaced else None)
        _same(text.encode())
        _same(text)
        _same(text.encode(), raw_arguments=True)


def _turn() -> list[dict[str, Any]]:
    """A turn's items in the shapes agents send: every one of them read in the core."""
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "look at a.py"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "reading"}],
        },
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"path":"a.py"}'},
        {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x = 1"},
        {"type": "function_call_output", "call_id": "c2", "output": ""},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "and"},
                {"type": "input_text", "text": "b.py"},
            ],
        },
        {"type": "message", "role": "assistant", "content": "done"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ok"}]},
    ]


def test_the_common_shapes_are_read_in_the_core() -> None:
    # What a server receives every turn takes the core's path, so the test above compares
    # two paths, not one with itself.
    turn = _turn()
    fast = _core.responses_json_fast(RAW_ARGUMENTS, json.dumps(turn).encode())
    assert fast is not None
    general = from_openai_responses(turn)
    assert fast == general and [m.meta for m in fast] == [m.meta for m in general]
    assert [m.role for m in fast] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
    ]
    assert len(fast[2].content) == 3  # the text and both calls: one assistant message
    assert len(fast[3].content) == 2  # both outputs: one user message
    assert fast[0].meta is not None  # the short form is recorded, as by the dicts
    body = {"model": "m", "instructions": "x", "tools": [{"x": [1.5, None]}], "input": turn}
    assert _core.responses_json_fast(RAW_ARGUMENTS, json.dumps(body).encode()) == fast
    # The string shorthand, alone or as a body's input: one user message.
    for data in (b'"hi"', b'{"input": "hi"}'):
        short = _core.responses_json_fast(RAW_ARGUMENTS, data)
        assert short is not None
        assert short == from_openai_responses("hi")
        assert [m.meta for m in short] == [m.meta for m in from_openai_responses("hi")]


@pytest.mark.parametrize(
    "data",
    [
        *edge_texts("input"),
        b'{"instructions": "x"}',
        b'[{"role": "developer", "content": "x"}]',
        b'[{"type": "message", "role": "user", "content": "x", "id": "m1"}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\\"a\\": 1}"}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", '
        b'"arguments": "{\\"a\\":1,\\"a\\":2}"}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\\"'
        + RAW_ARGUMENTS.encode()
        + b'\\":\\"x\\"}"}]',
        b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}, '
        b'{"type": "function_call", "call_id": "c", "name": "g", "arguments": "{}"}]',
        b'[{"type": "function_call_output", "call_id": "c", "output": "x"}, '
        b'{"type": "function_call_output", "call_id": "c", "output": "y"}]',
        b'[{"type": "function_call_output", "call_id": "", "output": "x"}]',
        b'[{"type": "reasoning", "summary": []}, {"role": "assistant", "content": "x"}]',
    ],
)
def test_edge_texts_give_what_json_loads_and_the_dict_reader_give(data: bytes) -> None:
    in_every_form(_same, data)
    in_every_form(lambda d: _same(d, raw_arguments=True), data)


@pytest.mark.parametrize(("payload", "path"), BAD_RESPONSES)
def test_malformed_responses_json_names_the_same_path(payload: Any, path: str) -> None:
    data = json.dumps(payload).encode()
    with pytest.raises(InvalidMessage) as e:
        from_openai_responses_json(data)
    assert e.value.path == path
    _same(data)


@settings(max_examples=100, deadline=None)
@given(payload=json_values(max_leaves=30))
def test_arbitrary_json_gives_what_the_dict_reader_gives(payload: Any) -> None:
    _same(json.dumps(payload).encode())
    _same(json.dumps({"input": [payload]}).encode())
    _same(json.dumps({"input": payload}).encode())
