"""Content blocks and their dict form, where axio keeps them (``axio.blocks``).

``from axio.blocks import TextBlock, ToolUseBlock, to_dict, from_dict`` becomes
``from ctxtrim.blocks import ...``: the same names, on ctxtrim's blocks. ``to_dict(block)``
and ``from_dict(data)`` are module-level functions, as axio's are; ``from_dict`` validates
(a malformed dict raises :class:`~ctxtrim.errors.InvalidMessage`, which is a ``ValueError``
as axio's unknown-``type`` error is). The dict shape is ctxtrim's own (``{"type": "text",
"text": ...}``, bytes as base64), the one ``Message.to_dict`` and the stores use.
"""

from __future__ import annotations

from ctxtrim.messages import (
    Block,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.messages import block_from_dict as from_dict
from ctxtrim.messages import block_to_dict as to_dict

#: axio's name for the union of block types.
ContentBlock = Block

__all__ = [
    "Block",
    "ContentBlock",
    "ImageBlock",
    "ProviderBlock",
    "ReasoningBlock",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "from_dict",
    "to_dict",
]
