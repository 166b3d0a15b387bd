"""Grapheme-safe clipping: the one function ctxtrim shortens text with.

A cut falls only between two extended grapheme clusters (Unicode UAX #29), so a clipped
text never ends in half a user-perceived character: no base letter without its combining
accent, no lone regional indicator (half a flag shows as a different symbol), no ZWJ emoji
sequence, skin-tone modifier or emoji tag sequence cut short, no CR without its LF. Python
strings index code points, so a UTF-8 sequence is never split either (agent-air's
compactor panics slicing UTF-8 bytes: tests/formats/test_transports.py).

The segmentation runs in the Rust core (the ``unicode-segmentation`` crate); see
docs/design.md, "Clipping text", for why it is not hand-written rules or a Python package.
"""

from __future__ import annotations

from ctxtrim import _core

__all__ = ["clip_text"]


def clip_text(text: str, max_chars: int, marker: str = "") -> str:
    """``text`` cut to at most ``max_chars`` characters, ``marker`` included, at a grapheme
    cluster boundary; ``text`` itself when it fits.

    The kept part is the longest prefix of whole grapheme clusters within
    ``max_chars - len(marker)`` characters (possibly empty, when the first cluster is longer
    than that), then ``marker``. When ``max_chars`` leaves no room for the marker and a
    character, the marker is left out and the whole budget goes to text.
    """
    if max_chars < 0:
        raise ValueError(f"max_chars must be >= 0, got {max_chars}")
    if len(text) <= max_chars:
        return text
    if max_chars <= len(marker):
        marker = ""
    limit = max_chars - len(marker)
    head = text[: limit + 1]  # boundaries up to `limit` depend on nothing further
    try:
        end = _core.grapheme_floor(head, limit)
    except UnicodeEncodeError:
        # Lone surrogates cannot cross into Rust as UTF-8. U+FFFD is one code point with
        # the grapheme properties UAX #29 gives an unpaired surrogate, so the cut is the same.
        import re  # here: only a text with a lone surrogate needs it

        end = _core.grapheme_floor(re.sub("[\ud800-\udfff]", "\ufffd", head), limit)
    return text[:end] + marker
