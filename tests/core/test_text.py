"""ctxtrim._text.clip_text, the one clipping function, against UAX #29 grapheme clusters as
the ``regex`` package's ``\\X`` finds them (an independent implementation, test-only)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxtrim import _core, strategies
from ctxtrim._text import clip_text
from ctxtrim.transports import _render

regex = pytest.importorskip("regex", reason="regex (in the dev extra) is not installed")

# Code points the segmentation rules are about, mixed into arbitrary text so that hypothesis
# builds the sequences (accents, joiners, flags, Hangul syllables, Indic conjuncts, tags).
_INTERESTING = [
    "e",
    "\u0301",
    "\u0308",
    "\u200d",
    "\u200c",
    "\ufe0f",
    "\r",
    "\n",
    "\x00",
    "\U0001f1eb",
    "\U0001f1f7",
    "\U0001f1e9",
    "\U0001f1ea",  # regional indicators
    "\U0001f468",
    "\U0001f469",
    "\U0001f467",
    "\u2764",
    "\U0001f44d",
    "\U0001f3fd",
    "\U0001f3f4",
    "\U000e0067",
    "\U000e0062",
    "\U000e007f",  # emoji tag sequence
    "\u1100",
    "\u1161",
    "\u11a8",
    "\uac00",
    "\uac01",  # Hangul L, V, T, LV, LVT
    "\u0915",
    "\u094d",
    "\u0937",
    "\u093f",
    "\u0903",  # Devanagari: consonants, virama, marks
    "\u0600",
    "\u0e33",
    "\u0d4e",  # prepend and spacing marks
    "a",
    " ",
    "中",
]
_TEXT = st.text(st.sampled_from(_INTERESTING) | st.characters(codec="utf-8"), max_size=40)
_MARKERS = st.sampled_from(["", "…", "...[truncated]"])


def by_clusters(text: str, limit: int) -> str:
    """The longest prefix of whole ``\\X`` clusters within ``limit`` characters."""
    kept = 0
    for cluster in regex.findall(r"\X", text):
        if kept + len(cluster) > limit:
            break
        kept += len(cluster)
    return text[:kept]


@given(_TEXT, st.integers(0, 45), _MARKERS)
@example("ab\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", 3, "")  # the two old clips disagreed
@example("x\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007fy", 7, "")
def test_clip_keeps_whole_grapheme_clusters(text: str, n: int, marker: str) -> None:
    out = clip_text(text, n, marker)
    if len(text) <= n:
        assert out is text
        return
    if n <= len(marker):
        marker = ""
    assert out == by_clusters(text, n - len(marker)) + marker
    assert len(out) <= n


@given(_TEXT, st.integers(0, 45))
def test_the_core_boundary_needs_only_one_character_of_lookahead(text: str, n: int) -> None:
    assert _core.grapheme_floor(text[: n + 1], n) == _core.grapheme_floor(text, n)
    assert text[: _core.grapheme_floor(text, n)] == by_clusters(text, n)


@given(st.text(st.sampled_from(["\ud800", "\udc00", "\u0301", "a", "\U0001f1eb"]), max_size=12))
def test_lone_surrogates_are_clipped_like_any_other_character(text: str) -> None:
    for n in range(len(text) + 1):
        assert clip_text(text, n) == by_clusters(text, n)


def test_examples() -> None:
    assert clip_text("ab\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", 3) == "ab"
    assert (
        clip_text("ab\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", 5, "…") == "ab\U0001f1eb\U0001f1f7…"
    )
    assert clip_text("a\r\nb", 2) == "a"
    assert clip_text("abcdef", 3, "...") == "abc"  # no room for marker and text: no marker
    assert clip_text("abcdef", 4, "...") == "a..."
    text = "fits"
    assert clip_text(text, 4) is text


def test_negative_limit_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_chars must be >= 0"):
        clip_text("abc", -1)


def test_one_function_everywhere() -> None:
    assert strategies.clip_text is clip_text
    assert _render.clip_text is clip_text  # type: ignore[attr-defined]  # the private re-export is what is checked
