"""Token estimates: script-aware, cached per message, pluggable counters."""

from __future__ import annotations

from ctxtrim import (
    HeuristicTokenCounter,
    ImageBlock,
    Message,
    MessageLog,
    TokenCounter,
    _core,
    estimate_tokens,
)


def test_empty_and_simple() -> None:
    assert estimate_tokens("") == 0
    assert 1 <= estimate_tokens("hello world") <= 3


def test_chinese_is_not_under_counted_like_chars_over_four() -> None:
    text = "我们今天讨论上下文窗口的管理方法以及工具调用的配对问题" * 4
    # cl100k/o200k spend roughly one token per Chinese character; chars/4 says a quarter
    assert estimate_tokens(text) >= 0.7 * len(text)
    assert len(text) / 4 < 0.4 * estimate_tokens(text)


def test_message_tokens_include_overhead_images_and_tool_calls() -> None:
    counter = HeuristicTokenCounter()
    assert isinstance(counter, TokenCounter)
    text = Message.user("hello world")
    assert counter.count_message(text) == _core.MESSAGE_OVERHEAD + estimate_tokens("hello world")
    image = Message.user([ImageBlock("image/png", b"\x89PNG")])
    assert counter.count_message(image) == _core.MESSAGE_OVERHEAD + _core.IMAGE_TOKENS
    tool = Message.assistant(tool_uses=[("t1", "read_file", {"path": "/src/main.rs"})])
    assert counter.count_message(tool) > _core.MESSAGE_OVERHEAD + estimate_tokens("read_file")


def test_log_caches_the_same_counts() -> None:
    msgs = [Message.user("hello"), Message.assistant("a longer answer with more words")]
    log = MessageLog(msgs)
    assert log.token_counts() == [HeuristicTokenCounter().count_message(m) for m in msgs]
