"""``ctxtrim.blocks``: the block classes with module-level ``to_dict`` / ``from_dict``, where
axio keeps its own (``axio.blocks``), so that import changes in one line."""

from __future__ import annotations

import pytest

from ctxtrim import InvalidMessage, Message
from ctxtrim.blocks import (
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    from_dict,
    to_dict,
)

BLOCKS = [
    TextBlock("hi"),
    ImageBlock("image/png", b"\x89PNG\x00"),
    ToolUseBlock("c1", "echo", {"msg": "x", "n": [1, 2]}),
    ToolResultBlock("c1", [TextBlock("a"), ImageBlock("image/gif", b"GIF8")], is_error=True),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    ToolResultBlock("c2", "plain"),
    ReasoningBlock("thinking", "sig", False),
]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: type(b).__name__)
def test_to_dict_from_dict_round_trip(block: object) -> None:
    data = to_dict(block)  # type: ignore[arg-type]
    assert isinstance(data, dict) and isinstance(data["type"], str)
    assert from_dict(data) == block


def test_the_dict_shape_is_the_messages_own() -> None:
    message = Message.assistant([TextBlock("t"), ToolUseBlock("c", "f", {})])
    assert message.to_dict()["content"] == [to_dict(b) for b in message.content]
    assert to_dict(ImageBlock("image/png", b"\x00\x01"))["data"] == "AAE="  # base64, as axio


@pytest.mark.parametrize(
    "data",
    [{"type": "nope"}, {"type": "text"}, {"type": "tool_use", "id": "", "name": "f"}, "text"],
)
def test_from_dict_refuses_malformed_blocks(data: object) -> None:
    with pytest.raises(InvalidMessage) as info:
        from_dict(data)
    assert isinstance(info.value, ValueError)  # axio raises ValueError for an unknown type
