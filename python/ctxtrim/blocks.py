"""Content blocks: what a :class:`~ctxtrim.messages.Message` holds, and their dict form.

Blocks are frozen msgspec Structs tagged by ``"type"``, validated in ``__post_init__`` (bad
input raises :class:`~ctxtrim.errors.InvalidMessage` naming the field) and deeply immutable
(dict fields are :class:`~ctxtrim.messages.FrozenDict` copies), because forks, snapshots and
caches share them. A :class:`ProviderBlock` keeps a provider's dict exactly; its row of
:data:`ctxtrim.provider.SPECS` says which role carries it and what it pairs with.

This is also where axio keeps them (``axio.blocks``): ``from axio.blocks import TextBlock,
ToolUseBlock, to_dict, from_dict`` becomes ``from ctxtrim.blocks import ...``: the same names,
on ctxtrim's blocks. ``to_dict(block)`` and ``from_dict(data)`` are module-level functions, as
axio's are; ``from_dict`` validates (a malformed dict raises
:class:`~ctxtrim.errors.InvalidMessage`, which is a ``ValueError`` as axio's unknown-``type``
error is). The dict shape is ctxtrim's own (``{"type": "text", "text": ...}``, bytes as
base64), the one ``Message.to_dict`` and the stores use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import msgspec
from msgspec.structs import force_setattr

from . import _core
from . import provider as _provider
from ._checks import (
    _JSON_DECODE,
    _check_nonempty_str,
    _check_opt_str,
    _check_str,
    _from_msgspec,
    _frozen_json_dict,
    _tname,
)
from .errors import InvalidMessage

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "Block",
    "ContentBlock",
    "ImageBlock",
    "ProviderBlock",
    "ReasoningBlock",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "block_from_dict",
    "block_to_dict",
    "from_dict",
    "pair_sides",
    "to_dict",
]

#: The image media types ``ImageBlock`` accepts (those every major provider accepts).
IMAGE_MEDIA_TYPES: frozenset[str] = frozenset(
    {"image/jpeg", "image/png", "image/gif", "image/webp"}
)


class _BlockBase(msgspec.Struct, frozen=True, tag_field="type", gc=False, omit_defaults=True):
    """Shared configuration of the block structs (tagged by ``"type"``)."""


class TextBlock(_BlockBase, frozen=True, tag="text"):
    """Plain text."""

    text: str

    # Checks in the core, with no Python frame; ``_check`` names the problem.
    __post_init__ = _core.text_post_init  # type: ignore[misc]  # a function of the core, not a method

    def _check(self) -> None:
        _check_str(self.text, "text")


class ImageBlock(_BlockBase, frozen=True, tag="image"):
    """An inline image: ``media_type`` is one of :data:`IMAGE_MEDIA_TYPES`, ``data`` the raw bytes.

    Encoded as base64 in dicts and JSON. Short forms such as ``"png"`` are rejected, not
    normalised.
    """

    media_type: str
    data: bytes

    def __post_init__(self) -> None:
        media_type = self.media_type
        if not isinstance(media_type, str):
            raise InvalidMessage(f"expected str, got {_tname(media_type)}", "media_type")
        if media_type not in IMAGE_MEDIA_TYPES:
            raise InvalidMessage(
                f"unsupported image media type {media_type!r}; "
                f"expected one of {', '.join(sorted(IMAGE_MEDIA_TYPES))}",
                "media_type",
            )
        if type(self.data) is not bytes:
            raise InvalidMessage(f"expected bytes, got {_tname(self.data)}", "data")


class ProviderBlock(_BlockBase, frozen=True, tag="provider"):
    """A provider's block or item kept exactly as it arrived: ``data`` is the provider's dict
    (frozen), ``format`` the format it came in (``"anthropic"``, ``"openai_responses"``,
    ``"openai_chat"``).

    Server-side and MCP tool calls and their results, documents, images behind a URL or a file
    id, audio and file parts, provider compaction items, and whatever else ctxtrim does not
    model with a block of its own. Written back to its own format unchanged; what ctxtrim
    knows of it (which role carries it, whether it is half of a call/result pair and by which
    id, how it is priced) is its row in :data:`ctxtrim.provider.SPECS`. ``pair_id`` is the
    pairing id ctxtrim gives a call and its answer where the wire has none (Chat's legacy
    ``function_call``); None otherwise.
    """

    format: str
    data: dict[str, Any]
    pair_id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.format, str) or self.format not in _provider.FORMATS:
            raise InvalidMessage(
                f"unknown format {self.format!r}; expected one of "
                f"{', '.join(sorted(_provider.FORMATS))}",
                "format",
            )
        frozen = _frozen_json_dict(self.data, "data")
        if frozen is not self.data:
            force_setattr(self, "data", frozen)
        if not _provider.wire_type(self.format, frozen):
            raise InvalidMessage("missing required field", "data.type")
        spec = _provider.spec_of(self.format, frozen)
        if spec is None:
            raise InvalidMessage(
                f"unsupported {self.format} type {_provider.wire_type(self.format, frozen)!r}: "
                "it carries an id, so it may be half of a call/result pair ctxtrim does not "
                "know",
                "data.type",
            )
        if self.pair_id is not None:
            _check_nonempty_str(self.pair_id, "pair_id")
        elif spec.pair and spec.id_key:
            if spec.id_key not in frozen:
                raise InvalidMessage("missing required field", f"data.{spec.id_key}")
            _check_nonempty_str(frozen[spec.id_key], f"data.{spec.id_key}")
        elif spec.pair:
            raise InvalidMessage(
                f"a {self.wire_type} has no id on the wire: give it a pair_id", "pair_id"
            )

    @property
    def wire_type(self) -> str:
        """The provider's type of this block (``"server_tool_use"``, ``"computer_call"``...)."""
        return _provider.wire_type(self.format, self.data)

    @property
    def spec(self) -> _provider.Spec:
        """This block's row of :data:`ctxtrim.provider.SPECS`."""
        spec = _provider.spec_of(self.format, self.data)
        assert spec is not None  # checked at construction
        return spec

    @property
    def call_id(self) -> str | None:
        """The id this block pairs by (as a call or as a result), or None."""
        spec = self.spec
        if not spec.pair:
            return None
        if self.pair_id is not None:
            return self.pair_id
        value: str = self.data[spec.id_key]
        return value

    def with_call_id(self, new_id: str) -> ProviderBlock:
        """This block with its pairing id replaced (what ``repair`` does to a duplicate)."""
        if self.pair_id is not None or not self.spec.id_key:
            return ProviderBlock(self.format, self.data, new_id)
        data = {**self.data, self.spec.id_key: new_id}
        return ProviderBlock(self.format, data)

    def _facts(self) -> tuple[str | None, str | None, bool, bool, str, int, int]:
        """What the core reads (once per message): ``(call id, answered id, opens a user
        turn, is a compaction, text to price, extra tokens, flat-priced images)``."""
        return _provider.facts(self)


class ToolUseBlock(_BlockBase, frozen=True, tag="tool_use"):
    """A tool call issued by the assistant. ``input`` must be a plain-JSON dict."""

    id: str
    name: str
    input: dict[str, Any]

    # Every check at once in the core, ``input`` frozen, no Python frame; ``_check`` names the
    # problem.
    __post_init__ = _core.tool_use_post_init  # type: ignore[misc]  # a function of the core, not a method

    def _check(self) -> None:
        _check_nonempty_str(self.id, "id")
        _check_nonempty_str(self.name, "name")
        frozen = _frozen_json_dict(self.input, "input")
        if frozen is not self.input:
            force_setattr(self, "input", frozen)


_RESULT_ITEM_TYPES = frozenset({TextBlock, ImageBlock, ProviderBlock})


class ToolResultBlock(_BlockBase, frozen=True, tag="tool_result"):
    """The result of the tool call ``tool_use_id``; travels in a user message.

    ``content`` is a string or a sequence of ``TextBlock`` / ``ImageBlock`` / ``ProviderBlock``
    (a document, a search result or an image behind a URL; stored as a tuple).
    ``compact_summary`` is an optional short stand-in that strategies may show instead of the
    full result once it is old.
    """

    tool_use_id: str
    content: str | tuple[TextBlock | ImageBlock | ProviderBlock, ...]
    is_error: bool = False
    compact_summary: str | None = None

    # Every check at once in the core, no Python frame; ``_check`` names the problem.
    __post_init__ = _core.tool_result_post_init  # type: ignore[misc]  # a function of the core, not a method

    def _check(self) -> None:
        _check_nonempty_str(self.tool_use_id, "tool_use_id")
        content: object = self.content
        if isinstance(content, str):
            _check_str(content, "content")
        elif type(content) is tuple or type(content) is list:
            for i, item in enumerate(content):
                if type(item) not in _RESULT_ITEM_TYPES:
                    raise InvalidMessage(
                        f"expected a TextBlock, ImageBlock or ProviderBlock, got {_tname(item)}",
                        f"content[{i}]",
                    )
            if type(content) is list:
                force_setattr(self, "content", tuple(content))
        else:
            raise InvalidMessage(
                f"expected a str or a list of TextBlock/ImageBlock/ProviderBlock, "
                f"got {_tname(content)}",
                "content",
            )
        if type(self.is_error) is not bool:
            raise InvalidMessage(f"expected bool, got {_tname(self.is_error)}", "is_error")
        _check_opt_str(self.compact_summary, "compact_summary")


class ReasoningBlock(_BlockBase, frozen=True, tag="reasoning"):
    """Model reasoning ("thinking"): its text, the provider's signature, and whether redacted."""

    text: str = ""
    signature: str = ""
    redacted: bool = False

    def __post_init__(self) -> None:
        _check_str(self.text, "text")
        _check_str(self.signature, "signature")
        if type(self.redacted) is not bool:
            raise InvalidMessage(f"expected bool, got {_tname(self.redacted)}", "redacted")


Block: TypeAlias = (
    TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | ReasoningBlock | ProviderBlock
)

_BLOCK_TYPES = frozenset(
    {TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock, ReasoningBlock, ProviderBlock}
)

# Which block types each role may carry (see the module docstring); a ProviderBlock's row
# names its role.
_ALLOWED: dict[str, frozenset[type]] = {
    "system": frozenset({TextBlock, ProviderBlock}),
    "user": frozenset({TextBlock, ImageBlock, ToolResultBlock, ProviderBlock}),
    "assistant": frozenset({TextBlock, ImageBlock, ToolUseBlock, ReasoningBlock, ProviderBlock}),
}


def pair_sides(blocks: Sequence[Block]) -> list[tuple[str, str | None]]:
    """For each block, how the pair-safe index counts it: ``("call", id)`` (a tool call, or a
    provider block its row makes a call), ``("result", id)``, or ``("", None)``. A call and its
    result in the same message (a server-side tool and its result) pair within it and count
    as neither, as the core reads them."""
    sides: list[tuple[str, str | None]] = []
    for b in blocks:
        if type(b) is ToolUseBlock:
            sides.append(("call", b.id))
        elif type(b) is ToolResultBlock:
            sides.append(("result", b.tool_use_id))
        elif type(b) is ProviderBlock and b.spec.pair:
            sides.append((b.spec.pair, b.call_id))
        else:
            sides.append(("", None))
    calls = {i for side, i in sides if side == "call"}
    within = calls & {i for side, i in sides if side == "result"}
    if within:
        sides = [("", None) if i in within else (side, i) for side, i in sides]
    return sides


#: axio's name for the union of block types.
ContentBlock = Block

_ENCODER = msgspec.json.Encoder()


def block_to_dict(block: Block) -> dict[str, Any]:
    """One block in the public dict shape (``{"type": ..., ...}``)."""
    return _JSON_DECODE(_ENCODER.encode(block))  # type: ignore[no-any-return]


def block_from_dict(data: Any) -> Block:
    """Build and validate one block from its dict shape."""
    try:
        block: Block = msgspec.convert(data, Block)
        return block
    except msgspec.ValidationError as e:
        raise _from_msgspec(e, "") from None


#: axio's names for the two.
to_dict = block_to_dict
from_dict = block_from_dict
