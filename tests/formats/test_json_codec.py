"""The core's tool-arguments JSON (``_core.json_loads``, ``_core.compact_json``) against
Python's ``json`` module: the same value or the same error, on any input.

The converters parse and write every tool call's arguments with these; the fast paths and the
general converters must agree with what ``json.loads`` / ``json.dumps(value,
ensure_ascii=False, separators=(",", ":"))`` make, or a round trip would change a payload."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import _core
from ctxtrim.messages import FrozenDict, FrozenList

from strategies import json_values

_DUMPS = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _outcome(f: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("ok", f(value))
    except Exception as e:  # the same error type and text from both
        return ("error", (type(e), str(e)))


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 is not 1.0, -0.0 is not 0.0). A loop,
    not a recursion: some texts below nest thousands deep, and Python 3.13's `json` reads
    them."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif isinstance(x, float):
            if not ((math.isnan(x) and math.isnan(y)) or (x == y and str(x) == str(y))):
                return False
        elif x != y:
            return False
    return True


# Texts that msgspec and json read differently, or only one of them reads.
_ODD_TEXTS = [
    "NaN",
    "-Infinity",
    "1e400",
    '{"x": -1e999}',
    '"\\ud800"',
    '{"a": "\\udc00x"}',
    '{"a":1,"a":2}',
    "[1,2,]",
    "\ufeff{}",
    " \t{}\n",
    "1" * 5000,
    "[" * 3000 + "]" * 3000,
    '{"big": 123456789012345678901234567890}',
    '{"f": 1E5, "g": -0.0, "h": -0}',
    "",
]


@pytest.mark.parametrize("text", _ODD_TEXTS)
def test_json_loads_reads_odd_texts_as_json_loads_does(text: str) -> None:
    ours, theirs = _outcome(_core.json_loads, text), _outcome(json.loads, text)
    assert ours[0] == theirs[0]
    if ours[0] == "ok":
        assert _same(ours[1], theirs[1])
    else:
        assert ours[1] == theirs[1]


@settings(max_examples=300, deadline=None)
@given(value=json_values(), spaced=st.booleans())
def test_json_loads_reads_what_json_loads_reads(value: Any, spaced: bool) -> None:
    text = json.dumps(value, ensure_ascii=spaced) if spaced else _DUMPS(value)
    assert _same(_core.json_loads(text), json.loads(text))


_ODD_VALUES: list[Any] = [
    1e16,
    {"x": 1e-5, "y": [1.5e300]},
    {"s": "\ud800"},
    {1: "int key"},
    {"t": (1, 2, "three")},
    FrozenDict({"a": FrozenList([1, None, True])}),
    {"nested": [[[[[]]]]]},
    [2**70, -(2**70)],
    {"ctl": '\x00\x1f\x7f\u2028"\\/é😀'},
    float("nan"),
    {"set": {1, 2}},
    True,
]


@pytest.mark.parametrize("value", _ODD_VALUES, ids=repr)
def test_compact_json_writes_odd_values_as_json_dumps_does(value: Any) -> None:
    assert _outcome(_core.compact_json, value) == _outcome(_DUMPS, value)


def test_compact_json_refuses_a_cycle_as_json_dumps_does() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["me"] = cyclic
    assert _outcome(_core.compact_json, cyclic) == _outcome(_DUMPS, cyclic)


@settings(max_examples=300, deadline=None)
@given(value=json_values())
def test_compact_json_writes_what_json_dumps_writes(value: Any) -> None:
    assert _core.compact_json(value) == _DUMPS(value)


def test_msgspec_writes_every_character_as_the_canonical_arguments_encoder_does() -> None:
    # The core reads and writes tool arguments with msgspec wherever its JSON is the
    # canonical encoder's (no floats, no integers beyond 64 bits): that rests on the two
    # escaping every character alike. Lone surrogates are no message's (msgspec refuses them).
    text = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    assert msgspec.json.encode(text) == _DUMPS(text).encode()
    values: list[Any] = [0, -1, 2**63 - 1, -(2**63), True, False, None, [], {}, {"a": [1, {}]}]
    for value in values:
        assert msgspec.json.encode(value) == _DUMPS(value).encode()
