"""Token counting: the `TokenCounter` protocol and the built-in heuristic counter.

The Rust core estimates every message's tokens once, at append, and caches the count in the
log (prefix sums make any range's total O(1)). An exact counter plugs in by implementing
:class:`TokenCounter`; stores call ``count_message`` once per appended message and hand the
result to the core, so no history is ever recounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ctxtrim import _core

if TYPE_CHECKING:
    from ctxtrim.messages import Message

__all__ = ["HeuristicTokenCounter", "TokenCounter", "estimate_tokens"]

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

    def count_message(self, message: Message) -> int:
        return _core.message_tokens(message, encoding=self.encoding)

    def __repr__(self) -> str:
        return f"HeuristicTokenCounter(encoding={self.encoding!r})"
