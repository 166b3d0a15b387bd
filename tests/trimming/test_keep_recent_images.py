"""KeepRecentImages: only the newest n images stay; older ones become a text placeholder."""

from __future__ import annotations

import struct

import pytest

from ctxtrim import (
    FitContextWindow,
    ImageBlock,
    InvalidStrategy,
    KeepRecentImages,
    Message,
    MessageLog,
    Pipeline,
    TextBlock,
    ToolResultBlock,
    TruncateToolOutputs,
    _core,
    validate,
)


def shot(i: int) -> ImageBlock:
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 1280 + i, 800) + b"\0" * 5
    return ImageBlock("image/png", data)


def computer_use(steps: int) -> list[Message]:
    """A task, then per step a click and its screenshot in the tool result."""
    out = [Message.user(["Book a table for two.", shot(0)])]
    for i in range(1, steps + 1):
        out.append(Message.assistant(tool_uses=[(f"t{i}", "computer", {"action": "click"})]))
        out.append(Message.tool_results(ToolResultBlock(f"t{i}", [TextBlock("ok"), shot(i)])))  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    return out


def images(messages: list[Message]) -> list[ImageBlock]:
    found: list[ImageBlock] = []
    for m in messages:
        for b in m.content:
            if type(b) is ImageBlock:
                found.append(b)
            elif type(b) is ToolResultBlock and not isinstance(b.content, str):
                found.extend(x for x in b.content if type(x) is ImageBlock)
    return found


def test_keeps_the_newest_n_and_replaces_the_rest() -> None:
    history = computer_use(6)  # 7 images
    out = KeepRecentImages(3)(history)
    assert len(out) == len(history)
    assert images(out) == [shot(4), shot(5), shot(6)]
    assert out[0].content == (TextBlock("Book a table for two."), TextBlock("[image removed]"))
    removed = TextBlock("[image removed]")
    assert out[2].content[0] == ToolResultBlock("t1", [TextBlock("ok"), removed])  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    assert out[-1] is history[-1] and out[-3] is history[-3]
    assert not validate(out)
    assert sum(_core.message_tokens(m) for m in out) < sum(_core.message_tokens(m) for m in history)


def test_same_list_when_unchanged_and_idempotent() -> None:
    history = computer_use(2)
    assert KeepRecentImages(3)(history) is history
    out = KeepRecentImages(1, placeholder="[screenshot]")(history)
    assert KeepRecentImages(1, placeholder="[screenshot]")(out) is out
    assert images(out) == [shot(2)]
    assert KeepRecentImages(0)(history)[-1].content[0].content[1] == TextBlock("[image removed]")  # type: ignore[union-attr]  # the block's kind is known here


def test_chunks_change_the_prefix_once_every_chunk_images() -> None:
    strategy = KeepRecentImages(2, chunk=3)
    kept = []
    history = computer_use(0)
    for steps in range(1, 10):
        history = strategy(history + computer_use(steps)[-2:])
        kept.append(len(images(history)))
        assert strategy(history) is history
    assert kept == [2, 3, 4, 2, 3, 4, 2, 3, 4]


def test_composes_in_a_pipeline_and_reports() -> None:
    history = computer_use(8)
    pipeline = Pipeline(KeepRecentImages(2), TruncateToolOutputs(100), FitContextWindow(3_000))
    out = pipeline(history)
    assert len(images(out)) <= 2 and not validate(out)
    assert pipeline(out) == out
    report = KeepRecentImages(2).describe(history)
    assert report.changed == (0, 2, 4, 6, 8, 10, 12)
    assert report.tokens_after < report.tokens_before and report.dropped == ()
    log = MessageLog(history)
    assert KeepRecentImages(2).apply(log) == KeepRecentImages(2)(history)


def test_bad_arguments_are_invalid_strategy_errors() -> None:
    with pytest.raises(InvalidStrategy, match="n must be >= 0"):
        KeepRecentImages(-1)
    with pytest.raises(InvalidStrategy, match="chunk must be >= 1"):
        KeepRecentImages(1, chunk=0)
    with pytest.raises(InvalidStrategy, match="placeholder"):
        KeepRecentImages(1, placeholder="")
    assert repr(KeepRecentImages(3, chunk=2)) == "KeepRecentImages(3, chunk=2)"
