"""Token estimates: script-aware, cached per message, pluggable counters."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_o200k_prices_cjk_lower_and_agrees_elsewhere() -> None:
    zh = "我们今天讨论上下文窗口的管理方法以及工具调用的配对问题" * 4
    cl, o200k = estimate_tokens(zh), estimate_tokens(zh, encoding="o200k_base")
    assert o200k < 0.85 * cl and 0.6 * len(zh) <= o200k <= 0.8 * len(zh)
    code = "def main():\n    return {'path': '/src/main.rs', 'line': 42}\n"
    assert estimate_tokens(code, encoding="o200k") == estimate_tokens(code)


def test_unknown_encoding_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="p50k"):
        estimate_tokens("x", encoding="p50k_base")
    with pytest.raises(ValueError, match="p50k"):
        HeuristicTokenCounter("p50k_base")
    with pytest.raises(ValueError, match="p50k"):
        MessageLog(encoding="p50k_base")


def test_log_encoding_prices_its_messages_and_is_inherited() -> None:
    msgs = [Message.user("请帮我找出夜间构建失败的原因并修复它")]
    log = MessageLog(msgs, encoding="o200k_base")
    counter = HeuristicTokenCounter("o200k_base")
    assert log.encoding == "o200k_base" and MessageLog().encoding == "cl100k_base"
    assert log.token_counts() == [counter.count_message(msgs[0])]
    assert log.token_counts()[0] < MessageLog(msgs).token_counts()[0]
    log.append(Message.user("再来一次"))
    fork, snap = log.fork(), log.snapshot()
    assert fork.encoding == snap.encoding == "o200k_base"
    assert fork.token_counts() == snap.token_counts() == log.token_counts()
    assert repr(counter) == "HeuristicTokenCounter(encoding='o200k_base')"


# Strings with what a JSON writer must escape (quotes, backslashes, control characters) or
# keep as is (DEL, U+2028, astral characters), besides hypothesis's arbitrary text.
_TRICKY = st.text(
    st.sampled_from(['"', "\\", "\x00", "\x1f", "\n", "\x7f", "\u2028", "é", "\U0001f600", "a"])
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # big ones too: msgspec writes any int
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)  # 5e-324 and 1.8e308 included
    | st.text()
    | _TRICKY,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text() | _TRICKY, inner, max_size=4)
    ),
    max_leaves=12,
)


def _priced(value: dict[str, object]) -> int:
    return _core.message_tokens(Message.assistant(tool_uses=[("t1", "search", value)]))


@settings(max_examples=300)
@given(st.dictionaries(st.text() | _TRICKY, _JSON, max_size=5))
def test_tool_input_is_priced_as_its_msgspec_json(tool_input: dict[str, object]) -> None:
    # The core prices a tool call on its input's JSON text as msgspec.json.encode writes it
    # (the text the provider formats send); there is no second JSON writer to disagree with.
    json_text = msgspec.json.encode(tool_input).decode()
    assert _priced(tool_input) - _priced({}) == estimate_tokens(json_text) - estimate_tokens("{}")


def test_deeply_nested_tool_input_is_priced_as_its_msgspec_json() -> None:
    deep: dict[str, object] = {"leaf": [1.5, "x\u2028", 2**70, {}, []]}
    for depth in range(60):
        deep = {f"k{depth}": [deep]}
    json_text = msgspec.json.encode(deep).decode()
    assert _priced(deep) - _priced({}) == estimate_tokens(json_text) - estimate_tokens("{}")
