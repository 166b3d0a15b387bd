"""Images priced by their size: header reading (PNG, JPEG, GIF, WebP) and the providers' rules."""

from __future__ import annotations

import io
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import HeuristicTokenCounter, ImageBlock, Message, MessageLog, ToolResultBlock, _core
from ctxtrim.tokens import image_size, image_tokens, price_table


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sIIBBBBB", 13, b"IHDR", w, h, 8, 6, 0, 0, 0)


def gif(w: int, h: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", w, h) + b"\xf7\x00\x00"


def jpeg(w: int, h: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, h, w, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app0 + sof0


def webp_lossless(w: int, h: int) -> bytes:
    bits = (w - 1) | (h - 1) << 14
    return b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f" + struct.pack("<I", bits)


def openai_high(w: int, h: int) -> int:
    """OpenAI's published rule: fit in 2048 x 2048, then shortest side to 768, 85 + 170/tile."""
    if max(w, h) > 2048:
        long = max(w, h)
        w, h = max(1, w * 2048 // long), max(1, h * 2048 // long)
    if min(w, h) > 768:
        short = min(w, h)
        w, h = max(1, w * 768 // short), max(1, h * 768 // short)
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic(w: int, h: int) -> int:
    """Anthropic's published rule: long edge to 1568, then width x height / 750 (at most
    ~1,600 tokens)."""
    if max(w, h) > 1568:
        long = max(w, h)
        w, h = max(1, w * 1568 // long), max(1, h * 1568 // long)
    return min(math.ceil(w * h / 750), 1600)


SIDES = [1, 63, 64, 200, 511, 512, 513, 767, 768, 769, 800, 1024, 1092, 1280, 1568, 1569]
SIDES += [2048, 2049, 3000, 4096, 8000, 16383]


@pytest.mark.parametrize("make", [png, gif, jpeg, webp_lossless])
def test_every_size_on_the_grid_is_priced_by_the_published_rule(make: object) -> None:
    for w in SIDES:
        for h in SIDES:
            if make is gif and max(w, h) > 65535:
                continue
            data = make(w, h)  # type: ignore[operator]
            assert image_size(data) == (w, h)
            assert image_tokens(data, rule="openai-high") == openai_high(w, h), (w, h)
            assert image_tokens(data, rule="openai-low") == 85
            assert image_tokens(data, rule="anthropic") == anthropic(w, h), (w, h)
            # The price tables pick the rule.
            assert image_tokens(data) == openai_high(w, h)
            assert image_tokens(data, encoding="gpt-4o") == openai_high(w, h)
            assert image_tokens(data, encoding="claude-sonnet-4-5") == anthropic(w, h)


def test_the_providers_worked_examples() -> None:
    # OpenAI: 1024 x 1024 → 765; 2048 x 4096 → 1105; low detail 85.
    assert image_tokens(png(1024, 1024)) == 765
    assert image_tokens(png(2048, 4096)) == 1105
    assert image_tokens(png(4096, 8192), rule="openai-low") == 85
    # The screenshot: 1280 x 800 is 1105 on OpenAI, 1,365.3 on Anthropic.
    assert image_tokens(png(1280, 800)) == 1105
    assert image_tokens(png(1280, 800), encoding="anthropic") == 1366
    # Anthropic's table: 200 x 200 ≈ 54 tokens, 1092 x 1092 ≈ 1,590.
    assert image_tokens(png(200, 200), encoding="anthropic") == 54
    assert image_tokens(png(1092, 1092), encoding="anthropic") == 1590


def test_real_files_from_pillow() -> None:
    pil = pytest.importorskip("PIL.Image")
    for fmt in ("PNG", "JPEG", "GIF", "WEBP"):
        for size in ((1, 1), (64, 48), (1280, 800), (333, 2001)):
            buf = io.BytesIO()
            pil.new("RGB", size, (200, 30, 90)).save(buf, format=fmt)
            assert image_size(buf.getvalue()) == size, (fmt, size)
    # Lossy and lossless WebP, progressive JPEG with EXIF before the frame header.
    for kwargs in ({"format": "WEBP", "lossless": True}, {"format": "WEBP", "quality": 50}):
        buf = io.BytesIO()
        pil.new("RGBA", (300, 200)).save(buf, **kwargs)
        assert image_size(buf.getvalue()) == (300, 200)
    buf = io.BytesIO()
    exif = pil.Exif()
    exif[0x010E] = "x" * 5000
    pil.new("RGB", (640, 480)).save(buf, format="JPEG", progressive=True, exif=exif)
    assert image_size(buf.getvalue()) == (640, 480)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "not a PNG, JPEG, GIF or WebP"),
        (b"\x89PNG", "ends before its size"),
        (png(0, 10), "width or height of 0"),
        (png(10, 10)[:20], "ends before its size"),
        (b"\xff\xd8\xff\xda\x00\x02", "malformed"),
        (b"GIF89z\x01\x00\x01\x00", "malformed"),
        (b"RIFF\0\0\0\0WEBPVP8?\0\0\0\0", "malformed"),
        (b"BM" + b"\0" * 40, "not a PNG"),
    ],
)
def test_an_unreadable_header_costs_the_flat_price_and_says_why(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        image_size(data)
    for rule in ("openai-high", "anthropic"):
        assert image_tokens(data, rule=rule) == _core.IMAGE_TOKENS
    message = Message.user([ImageBlock("image/png", data)])
    assert _core.message_tokens(message) == _core.MESSAGE_OVERHEAD + _core.IMAGE_TOKENS


@settings(max_examples=500, deadline=None)
@given(
    prefix=st.sampled_from(
        [b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8", b"GIF89a", b"RIFF\0\0\0\0WEBP"]
    ),
    rest=st.binary(max_size=80),
)
def test_the_header_reader_never_fails_on_random_bytes(prefix: bytes, rest: bytes) -> None:
    data = prefix + rest
    try:
        w, h = image_size(data)
        assert w > 0 and h > 0
    except ValueError:
        pass
    for table in ("cl100k_base", "o200k_base", "anthropic"):
        assert 1 <= image_tokens(data, encoding=table) <= max(_core.IMAGE_TOKENS, 1600)


def test_a_message_prices_its_images_by_size_under_its_table() -> None:
    small, shot = png(64, 64), png(1280, 800)
    message = Message.user(["look", ImageBlock("image/png", shot), ImageBlock("image/png", small)])
    text = _core.estimate_tokens("look")
    base = _core.MESSAGE_OVERHEAD + text
    assert _core.message_tokens(message) == base + 1105 + 255
    assert _core.message_tokens(message, encoding="o200k_base") == base + 1105 + 255
    assert _core.message_tokens(message, encoding="anthropic") == base + 1366 + 6
    assert HeuristicTokenCounter("claude-opus-4").count_message(message) == base + 1366 + 6
    # Images inside tool results are priced the same way.
    results = Message.tool_results(ToolResultBlock("t1", [ImageBlock("image/png", shot)]))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    plain = Message.tool_results(ToolResultBlock("t1", [ImageBlock("image/png", b"?")]))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert _core.message_tokens(plain) - _core.message_tokens(results) == _core.IMAGE_TOKENS - 1105
    # A log under a model's table holds the same counts.
    log = MessageLog([message], encoding="claude-3-7-sonnet")
    assert log.encoding == "anthropic"
    assert log.token_counts() == [base + 1366 + 6]


def test_the_price_is_part_of_the_message_facts() -> None:
    message = Message.user([ImageBlock("image/png", png(1280, 800))])
    first = _core.message_tokens(message, encoding="anthropic")
    facts = getattr(message, "_ctxtrim_facts", None)  # a slot (CACHE_SLOTS), unset until read
    assert facts is not None
    assert _core.message_tokens(message, encoding="anthropic") == first
    assert getattr(message, "_ctxtrim_facts", None) is facts


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1-mini", "o200k_base"),
        ("gpt-4.5-preview", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-4-0613", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("claude-3-5-sonnet-20241022", "anthropic"),
        ("claude-sonnet-4-5", "anthropic"),
        ("anthropic/claude-opus-4-1", "anthropic"),
        ("cl100k_base", "cl100k_base"),
        ("o200k", "o200k_base"),
        ("anthropic", "anthropic"),
    ],
)
def test_price_table_by_model_name(name: str, table: str) -> None:
    assert price_table(name) == table
    assert HeuristicTokenCounter(name).encoding == table


@pytest.mark.parametrize("name", ["p50k_base", "llama-3", "o300", "gpt-40", "", "gemini-2.5-pro"])
def test_an_unknown_model_is_a_value_error_naming_it(name: str) -> None:
    with pytest.raises(ValueError, match="unknown encoding or model"):
        price_table(name)
