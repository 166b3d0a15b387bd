"""What the tests of the three bytes readers (``from_openai_chat_json``,
``from_anthropic_json``, ``from_openai_responses_json``) share.

Each reads the common shapes in the core and hands anything else to its general path, the
dict reader of ``json.loads``; whichever path reads a text, the answer must be the general
path's. :func:`same_reading` checks that for one text, :func:`in_every_form` for each form a
caller may pass it in, and :func:`edge_texts` lists the texts where the two paths could
part: JSON that Python's ``json`` and ``serde_json`` read differently (a duplicate key, a
lone surrogate, ``NaN``, a number out of range, a byte-order mark...) and bodies that are
not quite a request body. Each test file adds the edge texts of its own format.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from ctxtrim import Message
from ctxtrim.errors import InvalidMessage

Reader = Callable[..., list[Message]]


def answer(read: Reader, data: bytes | bytearray | str, **options: Any) -> list[Message] | str:
    """What ``read(data, **options)`` gives: the messages, or its error and path."""
    try:
        return read(data, **options)
    except (InvalidMessage, ValueError) as e:
        return f"{type(e).__name__} {getattr(e, 'path', '')}: {e}"


def same_reading(
    fast: Reader, general: Reader, data: bytes | bytearray | str, **options: Any
) -> None:
    """A ``from_*_json`` reader (``fast``) gives what its general path (``general``: the
    dict reader of ``json.loads``) gives: the messages with their meta and roles, or the
    same error."""
    got, expected = answer(fast, data, **options), answer(general, data, **options)
    assert got == expected
    if isinstance(got, list) and isinstance(expected, list):
        assert [m.meta for m in got] == [m.meta for m in expected]
        assert [m.role for m in got] == [m.role for m in expected]


def in_every_form(check: Callable[[bytes | bytearray | str], None], data: bytes) -> None:
    """``check`` of the JSON as bytes, as a bytearray and, when it is UTF-8, as text."""
    check(data)
    check(bytearray(data))
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return
    check(text)


def shuffled(value: Any, rng: random.Random) -> Any:
    """``value`` with every object's keys in another order (the same JSON object)."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


def edge_texts(key: str) -> list[Any]:
    """The edge texts of every format, for ``pytest.mark.parametrize``: ``key`` is the
    request body's key of the messages (``"messages"``, or ``"input"`` for Responses)."""
    k = key.encode()
    body = b'{"' + k + b'": '  # a body's first key: the messages
    cases = {
        # Python keeps the last of a duplicate key.
        "duplicate message key": b'[{"role": "user", "content": "a", "content": "b"}]',
        "duplicate body key": body + b'[], "' + k + b'": [{"role": "user", "content": "hi"}]}',
        "lone surrogate": b'[{"role": "user", "content": "\\ud83d\\ude00 \\ud800"}]',
        # inf to Python, before the messages and after them.
        "1e400 first": b'{"temperature": 1e400, "' + k + b'": []}',
        "1e400 last": body + b'[], "temperature": 1e400}',
        "NaN first": b'{"temperature": NaN, "' + k + b'": []}',
        "NaN last": body + b'[], "temperature": NaN}',
        "too many digits for Python": b'{"seed": ' + b"9" * 5000 + b', "' + k + b'": []}',
        # json.loads takes a UTF-8 byte-order mark from bytes.
        "byte-order mark": b"\xef\xbb\xbf[]",
        "not UTF-8": b'[{"role": "user", "content": "\xff"}]',
        "trailing text": b"[] x",
        "empty": b"",
        "a string": b'"text"',
        "an empty string": b'""',
        "no messages key": b'{"model": "m"}',
        "null messages": body + b"null}",
        "messages an object": body + b'{"' + k + b'": []}}',
        "a number item": b"[1]",
        "user content empty": b'[{"role": "user", "content": []}]',
        "assistant content empty": b'[{"role": "assistant", "content": []}]',
        "user content null": b'[{"role": "user", "content": null}]',
    }
    return [pytest.param(data, id=name) for name, data in cases.items()]
