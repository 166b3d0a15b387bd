"""``from_anthropic_json``: Anthropic JSON text read in the core for the common shapes, and
otherwise by ``from_anthropic(json.loads(...))``. Whichever path reads it, the answer
(messages, meta, or the error and its path) must be the general path's."""

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
from ctxtrim.formats import from_anthropic, from_anthropic_json, to_anthropic

from bytes_readers import edge_texts, in_every_form, same_reading, shuffled
from strategies import histories, json_values, messages
from test_formats import BAD_ANTHROPIC

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _same(data: bytes | bytearray | str, **options: Any) -> None:
    same_reading(
        from_anthropic_json, lambda d, **o: from_anthropic(json.loads(d), **o), data, **options
    )


def _odd(body: dict[str, Any], odd: str, which: list[bool]) -> None:
    """Fields and values the core does not take, on some messages only."""
    for item, changed in zip(body["messages"], which, strict=True):
        if not changed:
            continue
        content = item["content"]
        blocks = content if isinstance(content, list) else []
        if odd == "extra":
            item["id"] = "msg_1"
        elif odd == "cache_control" and blocks:
            blocks[-1]["cache_control"] = {"type": "ephemeral"}
        elif odd == "is_error_false":
            for b in blocks:
                if b.get("type") == "tool_result" and "is_error" not in b:
                    b["is_error"] = False
        elif odd == "string_content" and blocks and all(b.get("type") == "text" for b in blocks):
            item["content"] = "".join(b["text"] for b in blocks)
        elif odd == "result_blocks":
            for b in blocks:
                if b.get("type") == "tool_result" and isinstance(b["content"], str):
                    b["content"] = [{"type": "text", "text": b["content"]}]
        elif odd == "list_system":
            body["system"] = [{"type": "text", "text": "sys"}]


@PROPS
@given(data=st.data())
def test_the_bytes_reader_makes_what_the_dict_reader_makes(data: st.DataObject) -> None:
    # Histories rendered to Anthropic JSON, as they are and with odd fields on some entries,
    # keys reordered, spaced or compact, as a message list or a request body.
    ms = data.draw(st.one_of(histories(), st.lists(messages(), max_size=6)))
    try:
        body = to_anthropic(ms)
    except InvalidMessage:
        return  # not expressible in Anthropic's format
    n = len(body["messages"])
    which = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    odds = (None, "extra", "cache_control", "is_error_false", "string_content", "result_blocks")
    for odd in (*odds, "list_system"):
        payload: Any = copy.deepcopy(body)
        if odd is not None:
            _odd(payload, odd, which)
        if rng.random() < 0.5:
            payload = shuffled(payload, rng)
        if rng.random() < 0.3:
            payload = {"model": "claude-x", "max_tokens": 100, **payload}
        elif rng.random() < 0.2 and "system" not in payload:
            payload = payload["messages"]
        spaced = rng.random() < 0.5
        text = json.dumps(payload, ensure_ascii=rng.random() < 0.5, indent=1 if spaced else None)
        _same(text.encode())
        _same(text)
        _same(text.encode(), system="another system prompt")


def test_the_common_shapes_are_read_in_the_core() -> None:
    # What a server receives every turn takes the core's path, so the test above compares
    # two paths, not one with itself.
    body = {
        "model": "claude-x",
        "max_tokens": 1024,
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "look at a.py"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.py"}},
                    {"type": "tool_use", "id": "c2", "name": "ls", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "x = 1"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "c2",
                        "content": [{"type": "text", "text": "denied"}],
                        "is_error": True,
                    },
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ],
    }
    data = json.dumps(body).encode()
    fast = _core.anthropic_json_fast(data)
    assert fast is not None
    general = from_anthropic(body)
    assert fast == general and [m.meta for m in fast] == [m.meta for m in general]
    assert [m.role for m in fast] == ["system", "user", "assistant", "user", "assistant"]
    assert fast[1].meta is not None  # the string content's form is recorded, as by the dicts
    assert _core.anthropic_json_fast(json.dumps(body["messages"]).encode()) == fast[1:]


@pytest.mark.parametrize(
    "data",
    [
        *edge_texts("messages"),
        b'{"system": null, "messages": []}',
        b'{"system": "a", "system": "b", "messages": []}',
        b'[{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", '
        b'"input": {"a": 1, "a": 2}}]}]',
        b'[{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", '
        b'"input": {"big": ' + b"9" * 40 + b', "f": 1.5e300, "n": null}}]}]',
        b'[{"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f", '
        b'"input": "x"}]}]',
        b'[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "", '
        b'"content": "x"}]}]',
    ],
)
def test_edge_texts_give_what_json_loads_and_the_dict_reader_give(data: bytes) -> None:
    in_every_form(_same, data)


@pytest.mark.parametrize(("payload", "path"), BAD_ANTHROPIC)
def test_malformed_anthropic_json_names_the_same_path(payload: Any, path: str) -> None:
    data = json.dumps(payload).encode()
    with pytest.raises(InvalidMessage) as e:
        from_anthropic_json(data)
    assert e.value.path == path
    _same(data)


@settings(max_examples=100, deadline=None)
@given(payload=json_values(max_leaves=30))
def test_arbitrary_json_gives_what_the_dict_reader_gives(payload: Any) -> None:
    _same(json.dumps(payload).encode())
    _same(json.dumps({"messages": [payload]}).encode())
