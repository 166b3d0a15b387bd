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
    """

    __slots__ = ()

    def count_text(self, text: str) -> int:
        return _core.estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        return _core.message_tokens(message)

    def __repr__(self) -> str:
        return "HeuristicTokenCounter()"
