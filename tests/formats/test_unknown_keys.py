"""A key a converter does not know never vanishes: the provider formats carry it along in
``Message.meta`` and write it back where it was (the README's promise, checked here at every
level a key can sit), and ctxtrim's own shape, which has a field for everything it keeps,
refuses it with ``InvalidMessage`` naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import InvalidMessage, Message, Usage
from ctxtrim.formats import (
    from_anthropic,
    from_ctxtrim,
    from_openai_chat,
    from_openai_responses,
    load,
    to_anthropic,
    to_ctxtrim,
    to_openai_chat,
    to_openai_responses,
)

SESSIONS = Path(__file__).resolve().parents[2] / "examples" / "sessions"

EXTRA = {"x_vendor": {"trace": [1, 2, {"deep": None}]}}

# An OpenAI Chat history with an unknown key at every level: each message, a content part,
# an image part's inner dict, a tool call, its function, each of two parallel tool results.
CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "be terse", "x_system": 1},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is here?", "x_part": 2},
            {"type": "image_url", "image_url": {"url": "https://e.x/a.png", "x_img": 3}},
        ],
        **EXTRA,
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"dir": "/"}', "x_fn": 4},
                "x_call": 5,
            },
            {"id": "c2", "type": "function", "function": {"name": "pwd", "arguments": "{}"}},
        ],
        "x_assistant": 6,
    },
    {"role": "tool", "tool_call_id": "c1", "content": "bin etc", "x_tool": 7},
    {"role": "tool", "tool_call_id": "c2", "content": "/", "x_tool": 8, "name": "pwd"},
    {"role": "assistant", "content": "done", "refusal": None, "x_last": {"a": [True]}},
]


@pytest.mark.parametrize("raw_arguments", [False, True])
def test_from_openai_chat_keeps_unknown_keys_at_every_level(raw_arguments: bool) -> None:
    messages = from_openai_chat(CHAT, raw_arguments=raw_arguments)
    assert to_openai_chat(messages) == CHAT
    # Through a store's encoding too (the keys live in meta, which is plain JSON).
    again = [Message.decode(m.encode()) for m in messages]
    assert to_openai_chat(again) == CHAT


def test_from_openai_chat_keeps_unknown_keys_in_a_long_history() -> None:
    """Long histories go through the compiled fast path: the keys survive it too."""
    chat: list[dict[str, Any]] = []
    for i in range(400):
        chat.append({"role": "user", "content": f"q{i}", **({"x": i} if i % 7 == 0 else {})})
        chat.append({"role": "assistant", "content": f"a{i}", **({"y": {"z": i}} if i % 5 else {})})
    assert to_openai_chat(from_openai_chat(chat)) == chat
    assert to_openai_chat(load(json.dumps(chat), "openai")) == chat


def test_anthropic_and_responses_keep_unknown_keys() -> None:
    anthropic = {
        "system": "s",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q", "x_b": 1}], "x_m": 2},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}, "x": 3}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r", "x": 4}],
            },
        ],
    }
    assert to_anthropic(from_anthropic(anthropic)) == anthropic
    responses = [
        {"role": "user", "content": [{"type": "input_text", "text": "q", "x": 1}], "x_m": 2},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}", "x": 3},
        {"type": "function_call_output", "call_id": "c1", "output": "r", "x": 4},
    ]
    assert to_openai_responses(from_openai_responses(responses)) == responses


def _own() -> list[dict[str, Any]]:
    return to_ctxtrim(
        [
            Message.user("q", meta={"anything": {"goes": [1]}}),
            Message.assistant(tool_uses=[("c1", "ls", {"dir": "/"})]),
            Message.tool_results(("c1", "bin")),
        ]
    )


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (lambda d: d[0], "messages[0].x_vendor"),
        (lambda d: d[0]["content"][0], "messages[0].content[0].x_vendor"),
        (lambda d: d[1]["content"][0], "messages[1].content[0].x_vendor"),
        (lambda d: d[2]["content"][0], "messages[2].content[0].x_vendor"),
    ],
)
def test_from_ctxtrim_refuses_a_key_it_has_no_field_for(where: Any, path: str) -> None:
    data = _own()
    where(data)["x_vendor"] = 1
    with pytest.raises(InvalidMessage) as e:
        from_ctxtrim(data)
    assert e.value.path == path
    assert "unknown key" in str(e.value) and "meta" in str(e.value)


def test_from_ctxtrim_refuses_an_unknown_usage_key_and_keeps_meta_whole() -> None:
    data = to_ctxtrim([Message.assistant("a", usage=Usage(input_tokens=3, output_tokens=1))])
    data[0]["usage"]["bogus"] = 2
    with pytest.raises(InvalidMessage) as e:
        from_ctxtrim(data)
    assert e.value.path == "messages[0].usage.bogus"
    own = _own()
    assert to_ctxtrim(from_ctxtrim(own)) == own  # meta's own keys are data, not fields


def test_from_ctxtrim_takes_known_keys_at_their_defaults() -> None:
    data = [{"role": "user", "content": [{"type": "text", "text": "q"}], "id": None, "turn": None}]
    assert from_ctxtrim(data) == [Message.user("q")]


def test_the_example_session_round_trips_in_ctxtrim_shape() -> None:
    lines = (SESSIONS / "ctxtrim.jsonl").read_text(encoding="utf-8").splitlines()
    data = [json.loads(line) for line in lines if line.strip()]
    assert to_ctxtrim(from_ctxtrim(data)) == to_ctxtrim(
        from_ctxtrim(to_ctxtrim(from_ctxtrim(data)))
    )
    assert len(from_ctxtrim(data)) == len(data)
