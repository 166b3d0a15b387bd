"""ExactTokenCounter (OpenAI's encodings through bpe-openai) and tool definitions' tokens."""

from __future__ import annotations

import functools
import random
import struct
import warnings
from collections.abc import Callable

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    tokens,
    tool_tokens,
)

bpe_openai = pytest.importorskip("bpe_openai")

ENCODINGS = ["o200k_base", "cl100k_base"]


def encoder(name: str) -> Callable[..., list[int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        encode: Callable[..., list[int]] = bpe_openai.get_encoding(name).encode
        return encode


@pytest.fixture(params=["ctxtrim", "bpe-openai"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which tokenizer ExactTokenCounter counts with: the core's (on bpe-openai's vocabulary
    file), or bpe-openai's own where that file cannot be read."""
    if request.param == "bpe-openai":
        monkeypatch.setattr(tokens, "_core_counter", lambda name: None)
    return str(request.param)


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sIIBBBBB", 13, b"IHDR", w, h, 8, 6, 0, 0, 0)


@pytest.mark.parametrize("name", ENCODINGS)
def test_equal_to_bpe_openai_on_every_text_of_the_accuracy_corpora(name: str, backend: str) -> None:
    counter = ExactTokenCounter(name)
    assert isinstance(counter, TokenCounter)
    assert counter.backend == backend
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
def test_message_framing_names_tools_results_and_images(name: str, backend: str) -> None:
    counter = ExactTokenCounter(name)
    assert counter.backend == backend
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
    assert n("<|endoftext|>") == len(encoder(name)("<|endoftext|>", disallowed_special=()))


def test_long_texts_and_lone_surrogates_are_counted(backend: str) -> None:
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


def test_only_the_messages_the_window_needs_are_counted() -> None:
    # The window is read from the end (and the pinned head from the front): messages older
    # than the window are never counted exactly, and a turn counts only its new messages.
    counter = Counting("o200k_base")
    history = bench.ctxtrim_messages(bench.agent_history(2_500))
    window = FitContextWindow(8_000, counter=counter)(history)
    assert len(history) == 10_002 and 100 < len(window) < 300
    assert counter.calls < 2 * len(window)
    before = counter.calls
    history += bench.ctxtrim_turn(bench.agent_history(2_501)[2_500])
    FitContextWindow(8_000, counter=counter)(history)
    assert counter.calls == before + 4


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


# The core's tokenizer against bpe-openai: the characters its split tells apart (letters of
# each case class, marks, digits and other numbers, the contraction letters and the long s
# that folds to "s", line breaks, Unicode spaces, punctuation, "/", CJK, emoji)...
SPLIT_CHARS = (
    "aZxQ'sStTrReEvVmMlLdD\u017f 0129\t\r\n\x0b\x0c/.,!-_\"{}()"
    "\u00e9\u0301\u0300\u20dd\u0903\u00c0\u01c5\u02b0\u3042\u4e2d\u0661\u00b2\u2167"
    "\u00a0\u2003\u3000\u0085\u2028\U0001f642\U0001f600<|>"
)
# Snippets where the split's rules meet: contractions in any case (and the long s, which
# folds to "s"), marks after letters, spaces before line breaks and the end.
SNIPPETS = [
    "'s",
    "'S",
    "'\u017f",
    "'t",
    "'re",
    "'RE",
    "'ve",
    "'m",
    "'ll",
    "'Ll",
    "'d",
    "'x",
    "'",
    "it",
    "IT",
    "Ab",
    "aB",
    "\u01c5a",
    "e\u0301",
    "\u0301",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    " \n ",
    "\u00a0",
    "12",
    "3",
    "\u00b2",
    ".",
    "/",
    "//",
    "!!",
    "(",
    "\u4e2d",
    "\U0001f642",
]
# ... and any character at all.
ANY_TEXT = (
    st.text(st.sampled_from(SPLIT_CHARS), max_size=40)
    | st.lists(st.sampled_from(SNIPPETS), max_size=16).map("".join)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
)


@functools.cache
def bpe_openai_pieces(name: str) -> Callable[[str], list[str]] | None:
    """bpe-openai's split of a text (not its public API: None where it is not there)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        backend = getattr(bpe_openai.get_encoding(name), "_backend", None)
    split: Callable[[str], list[str]] | None = getattr(backend, "pretokenize", None)
    return split


def same_as_bpe_openai(name: str, text: str) -> None:
    core = tokens._core_counter(name)
    assert core is not None
    assert core.count(text) == bpe_openai_count(name)(text), text
    assert "".join(core.pieces(text)) == text
    split = bpe_openai_pieces(name)
    if split is not None:  # the same pieces, not only the same total
        assert core.pieces(text) == split(text), text


@functools.cache
def bpe_openai_count(name: str) -> Callable[[str], int]:
    encode = encoder(name)
    return lambda text: len(encode(text, disallowed_special=()))


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=2000, deadline=None)
@given(text=ANY_TEXT)
def test_the_core_tokenizer_equals_bpe_openai_on_any_text(name: str, text: str) -> None:
    same_as_bpe_openai(name, text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_contractions_fold_case_as_the_regex_does(name: str) -> None:
    for text in ("it's", "IT'S", "it'\u017f", "we'RE", "they'Ll", "I'D", "'\u017ftart", "o'x"):
        same_as_bpe_openai(name, text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_long_pieces_merge_alike_both_ways(name: str) -> None:
    # Pieces of 128 bytes and more merge with a heap, shorter ones by tiktoken's rescans: both
    # give the same parts, and the whole equals bpe-openai's count.
    core = tokens._core_counter(name)
    assert core is not None
    count = bpe_openai_count(name)
    rng = random.Random(5)
    for length in (2, 3, 60, 127, 128, 129, 400, 3_000):
        for alphabet in ("abcdefghijklmnopqrstuvwxyz\u00e9\u00fc", "=-*#", "ab", "\u4e2d\u6587"):
            text = "".join(rng.choice(alphabet) for _ in range(length))
            scan, heap = core._merge_both(text.encode())
            assert scan == heap
            assert core.count(text) == count(text)
    # One piece of 200k letters, and long runs of spaces and punctuation.
    for text in ("a" * 200_000, " " * 5_000 + "x", "=" * 10_000, "ab" * 50_000):
        assert core.count(text) == count(text)


def test_the_core_tokenizer_refuses_what_is_not_a_vocabulary() -> None:
    with pytest.raises(ValueError, match="cl100k_base' or 'o200k_base"):
        _core.BpeCounter(b"", "p50k_base")
    with pytest.raises(ValueError, match="line 1"):
        _core.BpeCounter(b"not base64! 0\n", "o200k_base")
    with pytest.raises(ValueError, match="lacks the single byte 0x00"):
        _core.BpeCounter(b"YQ== 0\n", "o200k_base")


def test_a_vocabulary_file_that_is_not_openais_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # The file must hash to OpenAI's published SHA-256; else bpe-openai counts.
    tokens._core_counter.cache_clear()
    monkeypatch.setitem(tokens._VOCABULARY_SHA256, "cl100k_base", "0" * 64)
    try:
        counter = ExactTokenCounter("cl100k_base")
        assert counter.backend == "bpe-openai"
        assert counter.count_text("hello world") == 2
    finally:
        tokens._core_counter.cache_clear()
    monkeypatch.undo()
    assert ExactTokenCounter("cl100k_base").backend == "ctxtrim"
