"""ExactTokenCounter (OpenAI's encodings through bpe-openai) and tool definitions' tokens."""

from __future__ import annotations

import struct
import warnings
from collections.abc import Callable

import msgspec
import pytest

from ctxtrim import (
    ExactTokenCounter,
    FitContextWindow,
    ImageBlock,
    InvalidStrategy,
    Message,
    MessageLog,
    ReasoningBlock,
    TextBlock,
    TokenCounter,
    ToolResultBlock,
    _core,
    bench,
    tool_tokens,
)

bpe_openai = pytest.importorskip("bpe_openai")

ENCODINGS = ["o200k_base", "cl100k_base"]


def encoder(name: str) -> Callable[[str], list[int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        encode: Callable[[str], list[int]] = bpe_openai.get_encoding(name).encode
        return encode


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sIIBBBBB", 13, b"IHDR", w, h, 8, 6, 0, 0, 0)


@pytest.mark.parametrize("name", ENCODINGS)
def test_equal_to_bpe_openai_on_every_text_of_the_accuracy_corpora(name: str) -> None:
    counter = ExactTokenCounter(name)
    assert isinstance(counter, TokenCounter)
    encode = encoder(name)
    texts = [t for corpus in bench.corpora(samples=40).values() for t in corpus]
    assert len(texts) >= 160
    for text in texts:
        real = len(encode(text))
        assert counter.count_text(text) == real
        # A chat message: 3 tokens of framing, its role and its content (OpenAI's cookbook).
        for role, make in (("user", Message.user), ("assistant", Message.assistant)):
            assert counter.count_message(make(text)) == 3 + len(encode(role)) + real


@pytest.mark.parametrize("name", ENCODINGS)
def test_message_framing_names_tools_results_and_images(name: str) -> None:
    counter = ExactTokenCounter(name)
    n = counter.count_text
    assert n("") == 0 and n("hello world") == 2
    assert counter.count_message(Message.system("Be brief.")) == 3 + n("system") + n("Be brief.")
    named = Message.user("hi", name="alice")
    assert counter.count_message(named) == 3 + n("user") + n("hi") + n("alice") + 1
    call = Message.assistant("ok", tool_uses=[("t1", "read_file", {"path": "/a b.rs"})])
    args = msgspec.json.encode({"path": "/a b.rs"}).decode()
    assert counter.count_message(call) == 3 + n("assistant") + n("ok") + n("read_file") + n(args)
    # Tool results are one `tool` message each in Chat Completions; text beside them is a user
    # message of its own.
    results = Message.tool_results(ToolResultBlock("t1", "42 lines"), ToolResultBlock("t2", "x"))
    tool = 3 + n("tool")
    assert counter.count_message(results) == tool + n("42 lines") + tool + n("x")
    mixed = Message("user", [ToolResultBlock("t1", "done"), TextBlock("and now?")])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert counter.count_message(mixed) == tool + n("done") + 3 + n("user") + n("and now?")
    # Tool messages carry no name, so a message holding results does not bill one.
    named_mixed = Message("user", [ToolResultBlock("t1", "done"), TextBlock("ok")], name="bob")  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert counter.count_message(named_mixed) == tool + n("done") + 3 + n("user") + n("ok")
    reasoning = Message.assistant([ReasoningBlock("thinking hard"), TextBlock("done")])
    assert counter.count_message(reasoning) == 3 + n("assistant") + n("done")
    shot = Message.user(["see", ImageBlock("image/png", png(1280, 800))])
    assert counter.count_message(shot) == 3 + n("user") + n("see") + 1105
    # Special tokens' text is plain text.
    assert n("<|endoftext|>") == len(encoder(name)("<|endoftext|>", disallowed_special=()))  # type: ignore[call-arg]  # bpe-openai's encode takes tiktoken's keyword; its stub omits it


def test_long_texts_and_lone_surrogates_are_counted() -> None:
    counter = ExactTokenCounter("o200k_base")
    line = "def handler(event):\n    return {'status': 200}\n"
    # bpe-openai's encode refuses 1M characters and more; a tool result can be that long.
    long = line * (1_100_000 // len(line))
    assert len(long) > 1_000_000
    assert counter.count_text(long) >= len(long) // 8
    assert counter.count_text("a\ud800b") == len(encoder("o200k_base")("a\ufffdb"))


def test_model_names_and_refusals() -> None:
    assert ExactTokenCounter("gpt-4o").encoding == "o200k_base"
    assert ExactTokenCounter("o3").encoding == "o200k_base"
    assert ExactTokenCounter("gpt-4").encoding == "cl100k_base"
    assert repr(ExactTokenCounter("gpt-4.1-mini")) == "ExactTokenCounter('o200k_base')"
    with pytest.raises(ValueError, match="no public tokenizer"):
        ExactTokenCounter("claude-sonnet-4-5")
    with pytest.raises(ValueError, match="p50k"):
        ExactTokenCounter("p50k_base")


class Counting(ExactTokenCounter):
    __slots__ = ("calls",)

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls = 0

    def count_message(self, message: Message) -> int:
        self.calls += 1
        return super().count_message(message)


def test_each_message_is_counted_once_per_counter() -> None:
    counter = Counting("gpt-4o")
    history = [Message.user("task")]
    for i in range(30):
        history += [Message.assistant(f"step {i} " * 20), Message.user(f"result {i} " * 30)]
    strategy = FitContextWindow(300, counter=counter)
    out = strategy(history)
    assert 1 < len(out) < len(history)
    first = counter.calls
    assert first <= len(history)
    strategy(history)
    strategy.describe(history)
    MessageLog(history, tokens=[_core.message_tokens(m, counter=counter) for m in history])
    assert counter.calls == first
    # Fits exactly under the exact counts.
    assert sum(counter.count_message(m) for m in out) <= 300


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Relative path"}},
                "required": ["path"],
            },
        },
    },
    {"name": "bash", "description": "Run a shell command.", "input_schema": {"type": "object"}},
]


def test_tools_come_off_the_budget_estimated_once() -> None:
    est = tool_tokens(TOOLS)
    assert est == sum(_core.estimate_tokens(msgspec.json.encode(t).decode()) for t in TOOLS)
    strategy = FitContextWindow(2_000, reserve_tokens=100, tools=TOOLS)
    assert strategy.tools_tokens == est and strategy.budget == 2_000 - 100 - est
    exact = ExactTokenCounter("gpt-4o")
    encode = encoder("o200k_base")
    counted = FitContextWindow(2_000, tools=TOOLS, counter=exact)
    assert counted.tools_tokens == sum(len(encode(msgspec.json.encode(t).decode())) for t in TOOLS)
    # The budget left for the history decides the cut.
    history = [Message.user("task")]
    for _ in range(10):
        history += [Message.assistant("word " * 50), Message.user("more " * 10)]
    without = FitContextWindow(est + 300)(history)
    with_tools = FitContextWindow(est + 300, tools=TOOLS)(history)
    assert len(with_tools) < len(without)
    assert sum(_core.message_tokens(m) for m in with_tools) <= 300
    assert FitContextWindow(500, tools=[]).budget == 500


def test_bad_tools_are_invalid_strategy_errors() -> None:
    with pytest.raises(InvalidStrategy, match="leaving no room"):
        FitContextWindow(10, tools=TOOLS)
    with pytest.raises(InvalidStrategy, match=r"tools\[0\] is not JSON-encodable"):
        FitContextWindow(1_000, tools=[object()])
    with pytest.raises(InvalidStrategy, match="sequence of tool definitions"):
        FitContextWindow(1_000, tools="read_file")
