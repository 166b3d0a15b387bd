"""Misuse a newcomer makes, each met by a typed error that says what to call instead (or, where
the intent is plain, by doing it)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxtrim
from ctxtrim import InvalidMessage, Message, TextBlock, ToolUseBlock
from ctxtrim.stores import PostgresContextStore, RedisContextStore

CHAT_CALL = {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}

#: (what the user wrote, the error's class, what its text must say)
MISUSE: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "a number as content",
        lambda: Message.user(123),  # type: ignore[arg-type]
        InvalidMessage,
        "content: expected a str, a block, or a list of blocks and strs, got int",
    ),
    (
        "None as a user message's content",
        lambda: Message.user(None),  # type: ignore[arg-type]
        InvalidMessage,
        "expected a str, a block, or a list of blocks and strs, got NoneType",
    ),
    (
        "a Chat message to Message.from_dict",
        lambda: Message.from_dict({"role": "user", "content": "hi"}),
        InvalidMessage,
        "OpenAI Chat Completions message, not ctxtrim's own dict: "
        "ctxtrim.formats.from_openai_chat reads it",
    ),
    (
        "a Chat tool message to Message.from_dict",
        lambda: Message.from_dict({"role": "tool", "tool_call_id": "a", "content": "x"}),
        InvalidMessage,
        "ctxtrim.formats.from_openai_chat reads it",
    ),
    (
        "a Responses item to Message.from_dict",
        lambda: Message.from_dict({"type": "function_call", "call_id": "a", "name": "f"}),
        InvalidMessage,
        "ctxtrim.formats.from_openai_responses reads it",
    ),
    (
        "a Chat message to Message.decode",
        lambda: Message.decode(b'{"role": "user", "content": "hi"}'),
        InvalidMessage,
        "ctxtrim.formats.from_openai_chat reads it",
    ),
    (
        "a store constructed instead of opened",
        lambda: ctxtrim.SQLiteContextStore("chat.db"),  # type: ignore[arg-type]
        TypeError,
        "SQLiteContextStore is opened, not constructed: "
        "`await SQLiteContextStore.open(path, session_id)`",
    ),
    (
        "a Redis store constructed with its URL",
        lambda: RedisContextStore("redis://localhost"),
        TypeError,
        "`await RedisContextStore.open(url, session_id, prefix=...)`",
    ),
    (
        "a PostgreSQL store constructed with its DSN",
        lambda: PostgresContextStore("postgresql://localhost/db"),
        TypeError,
        "`await PostgresContextStore.open(dsn, session_id)`",
    ),
    (
        "a Chat tool call in tool_uses",
        lambda: Message.assistant("x", tool_uses=[CHAT_CALL]),
        InvalidMessage,
        "content[1]: expected (id, name, input), a ToolUseBlock or a dict with id, name and "
        "input; got an OpenAI Chat tool call",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "text"), [m[1:] for m in MISUSE], ids=[m[0] for m in MISUSE]
)
def test_a_misuse_says_what_to_call_instead(
    call: Callable[[], Any], error: type[Exception], text: str
) -> None:
    with pytest.raises(error) as info:
        call()
    assert text in str(info.value)


def test_a_malformed_ctxtrim_dict_gets_no_provider_hint() -> None:
    with pytest.raises(InvalidMessage) as info:
        Message.from_dict({"role": "user", "content": [{"type": "text", "text": "x"}], "turn": 5})
    assert "looks like" not in str(info.value) and "turn" in str(info.value)


def test_plain_intent_is_done_not_refused() -> None:
    block = ToolUseBlock("a", "f", {"q": 1})
    assert Message.assistant("x", tool_uses=[{"id": "a", "name": "f", "input": {"q": 1}}]) == (
        Message.assistant("x", tool_uses=[block])
    )
    typed = {"type": "tool_use", "id": "a", "name": "f", "input": {"q": 1}}
    assert Message.assistant("", tool_uses=[typed]).content == (block,)
    assert Message.user(TextBlock("hi")) == Message.user("hi")
    with pytest.raises(InvalidMessage, match=r"content\[0\]\.input"):
        Message.assistant("", tool_uses=[{"id": "a", "name": "f", "input": [1]}])


def test_the_command_line_names_json_types_in_json_terms(tmp_path: Path) -> None:
    (tmp_path / "null.json").write_text("null")
    result = subprocess.run(
        [sys.executable, "-m", "ctxtrim", "trim", str(tmp_path / "null.json"), "--max-tokens", "9"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "cannot detect the format: expected a list of messages, got null" in result.stderr
    assert "NoneType" not in result.stderr


@pytest.mark.parametrize(
    ("store", "client", "extra"),
    [("RedisContextStore", "redis", "redis"), ("PostgresContextStore", "psycopg", "postgres")],
)
def test_a_missing_store_client_names_its_extra_once(store: str, client: str, extra: str) -> None:
    probe = (
        f"import sys; sys.modules[{client!r}] = None\n"
        "from ctxtrim import stores\n"
        "try:\n"
        f"    stores.{store}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert f"pip install 'ctxtrim[{extra}]'" in out
    assert out.count("pip install") == 1  # one hint, not the same one twice
