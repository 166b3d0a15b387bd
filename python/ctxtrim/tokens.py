"""Token counting: the `TokenCounter` protocol and the built-in heuristic counter.

The Rust core estimates every message's tokens once, at append, and caches the count in the
log (prefix sums make any range's total O(1)). An exact counter plugs in by implementing
:class:`TokenCounter`; stores call ``count_message`` once per appended message and hand the
result to the core, so no history is ever recounted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ctxtrim import _core

if TYPE_CHECKING:
    from ctxtrim.messages import Message

__all__ = ["HeuristicTokenCounter", "TextTokenCounter", "TokenCounter", "estimate_tokens"]

estimate_tokens = _core.estimate_tokens


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text and of a whole message (content, tool calls, overhead)."""

    def count_text(self, text: str) -> int:
        """Tokens of a plain text."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens a provider bills for this message, per-message overhead included."""
        ...


class HeuristicTokenCounter:
    """The core's script-aware estimate: no model files, no network, about 50 ns per word.

    English words, digits, punctuation, whitespace, CJK and other scripts, and emoji are
    priced separately, so Chinese is not under-counted four times as the ``len(text) / 4``
    rule of thumb does. A message costs its texts plus a fixed overhead
    (``_core.MESSAGE_OVERHEAD``), a flat ``_core.IMAGE_TOKENS`` per image, and its tool
    names and JSON inputs.

    ``encoding`` picks the price table: ``"cl100k_base"`` (the default, GPT-4 and older;
    it prices CJK highest, the safe side when trimming) or ``"o200k_base"`` (GPT-4o and
    later, which spends ~30 % fewer tokens on Chinese, Japanese and Korean). The two agree
    on English, code and JSON. An unknown name raises ``ValueError``.
    """

    __slots__ = ("encoding",)

    def __init__(self, encoding: str = "cl100k_base") -> None:
        _core.estimate_tokens("", encoding=encoding)  # validates the name now
        self.encoding = encoding

    def count_text(self, text: str) -> int:
        return _core.estimate_tokens(text, encoding=self.encoding)

    def __call__(self, text: str) -> int:
        """``count_text``: the counter is also a plain ``str -> int`` callable."""
        return _core.estimate_tokens(text, encoding=self.encoding)

    def count_message(self, message: Message) -> int:
        return _core.message_tokens(message, encoding=self.encoding)

    def __repr__(self) -> str:
        return f"HeuristicTokenCounter(encoding={self.encoding!r})"


class TextTokenCounter:
    """A :class:`TokenCounter` built from a text counter (any ``str -> int`` callable, e.g.
    ``len``, ``lambda s: len(enc.encode(s))``, or another counter's ``count_text``).

    A message costs ``per_message_overhead``, plus ``count_text`` of each text (text and
    reasoning blocks, string tool results), ``tokens_per_media`` per image, and
    ``count_text`` of each tool call's name and JSON input. The defaults are the built-in
    estimate's (``_core.MESSAGE_OVERHEAD`` and ``_core.IMAGE_TOKENS``); agentix's are 4 and 600.
    """

    __slots__ = ("per_message_overhead", "text", "tokens_per_media")

    def __init__(
        self,
        text: Callable[[str], int],
        *,
        per_message_overhead: int | None = None,
        tokens_per_media: int | None = None,
    ) -> None:
        if not callable(text):
            raise TypeError(f"text must be a callable str -> int, got {type(text).__name__}")
        for name, value in (
            ("per_message_overhead", per_message_overhead),
            ("tokens_per_media", tokens_per_media),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        self.text = text
        self.per_message_overhead = (
            _core.MESSAGE_OVERHEAD if per_message_overhead is None else per_message_overhead
        )
        self.tokens_per_media = _core.IMAGE_TOKENS if tokens_per_media is None else tokens_per_media

    def count_text(self, text: str) -> int:
        n = self.text(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"the text counter must return an int >= 0, got {n!r}")
        return n

    def count_message(self, message: Message) -> int:
        from ctxtrim.messages import (
            ImageBlock,
            ReasoningBlock,
            TextBlock,
            ToolResultBlock,
            ToolUseBlock,
        )

        total = self.per_message_overhead
        for block in message.content:
            if type(block) is TextBlock or type(block) is ReasoningBlock:
                total += self.count_text(block.text)
            elif type(block) is ImageBlock:
                total += self.tokens_per_media
            elif type(block) is ToolUseBlock:
                total += self.count_text(block.name)
                total += self.count_text(json.dumps(block.input, ensure_ascii=False))
            elif type(block) is ToolResultBlock:
                if isinstance(block.content, str):
                    total += self.count_text(block.content)
                else:
                    for item in block.content:
                        if type(item) is TextBlock:
                            total += self.count_text(item.text)
                        else:
                            total += self.tokens_per_media
        return total

    def __repr__(self) -> str:
        return (
            f"TextTokenCounter({self.text!r}, per_message_overhead={self.per_message_overhead}, "
            f"tokens_per_media={self.tokens_per_media})"
        )


def as_token_counter(
    counter: object,
    *,
    per_message_overhead: int | None = None,
    tokens_per_media: int | None = None,
) -> TokenCounter | None:
    """``counter`` as a :class:`TokenCounter`: a ``TokenCounter`` as is (unless overhead or
    media prices are given, which wrap its ``count_text``), a plain callable wrapped in a
    :class:`TextTokenCounter`; ``None`` stays ``None`` unless prices are given (then the
    built-in estimate with those prices). Anything else raises ``TypeError``."""
    custom = per_message_overhead is not None or tokens_per_media is not None
    if counter is None:
        if not custom:
            return None
        counter = HeuristicTokenCounter()
    if isinstance(counter, TokenCounter):
        if not custom:
            return counter
        text: Callable[[str], int] = counter.count_text
    elif callable(counter):
        text = counter
    else:
        raise TypeError(
            "counter must be a TokenCounter (count_text and count_message) or a callable "
            f"str -> int, got {type(counter).__name__}"
        )
    return TextTokenCounter(
        text, per_message_overhead=per_message_overhead, tokens_per_media=tokens_per_media
    )
