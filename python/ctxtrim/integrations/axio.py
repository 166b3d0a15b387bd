"""ctxtrim stores where axio expects a ``ContextStore`` (axio needs Python >= 3.12).

Wrap the store, keep the agent::

    from ctxtrim.integrations.axio import AxioContextStore

    context = AxioContextStore(await SQLiteContextStore.open("chats.db", "user-42"))
    agent = Agent(system="...", transport=transport)  # axio's Agent, unchanged
    await agent.run("question", context)

:class:`AxioContextStore` is a real ``axio.context.ContextStore`` over any
:class:`ctxtrim.ContextStore` (memory, SQLite, Redis, PostgreSQL): every axio method is
delegated (``append``, ``get_history``, ``clear``, ``fork``, the token totals, ``close``,
``list_sessions``, ``from_history``/``from_context``), converting messages both ways.

Invariants: conversion is lossless — ``get_history`` returns messages equal to those
appended. Blocks ctxtrim models (text, image, tool use, tool result, reasoning) map onto
ctxtrim's blocks, so ctxtrim's strategies, validation and compaction see real content and
tool ids; what ctxtrim has no field for (a text or tool-call ``signature``/``provider``,
reasoning ``id``, audio, video, opaque ``ProviderBlock``\\s) makes the message also carry
axio's own dict in ``Message.meta["axio"]``, from which it is read back exactly. A block
ctxtrim cannot model is stood in for by an empty text block (tool pairs are kept intact:
a tool result inside such a message is still a ``ToolResultBlock``).
"""

from __future__ import annotations

import base64
from typing import Any

from ctxtrim.errors import InvalidMessage
from ctxtrim.integrations._common import missing_extra
from ctxtrim.messages import (
    Block,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.store import ContextStore as CtxtrimStore
from ctxtrim.store import MemoryContextStore

try:
    from axio import blocks as ab
    from axio.context import ContextStore, SessionInfo
    from axio.messages import Message as AxioMessage
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("axio (Python >= 3.12)", "axio", _err) from _err

__all__ = ["META_KEY", "AxioContextStore", "from_axio", "to_axio"]

#: ``Message.meta`` key holding axio's own dict of a message ctxtrim cannot model exactly.
META_KEY = "axio"


def _block_to_ctxtrim(b: Any) -> Block:
    if isinstance(b, ab.TextBlock):
        return TextBlock(b.text)
    if isinstance(b, ab.ImageBlock):
        return ImageBlock(b.media_type, b.data)
    if isinstance(b, ab.ToolUseBlock):
        return ToolUseBlock(b.id, b.name, dict(b.input))
    if isinstance(b, ab.ReasoningBlock):
        return ReasoningBlock(b.text, b.signature, b.redacted)
    if isinstance(b, ab.ToolResultBlock):
        if isinstance(b.content, str):
            content: Any = b.content
        else:
            content = [
                _block_to_ctxtrim(c)
                if isinstance(c, (ab.TextBlock, ab.ImageBlock))
                else TextBlock("")
                for c in b.content
            ]
        return ToolResultBlock(b.tool_use_id, content, bool(b.is_error))
    return TextBlock("")  # audio, video, provider blocks: kept in meta


def _block_to_axio(b: Block) -> Any:
    if isinstance(b, TextBlock):
        return ab.TextBlock(b.text)
    if isinstance(b, ImageBlock):
        # axio types media_type as the four web image types; ctxtrim keeps what it was given.
        return ab.ImageBlock(b.media_type, b.data)  # type: ignore[arg-type]
    if isinstance(b, ToolUseBlock):
        return ab.ToolUseBlock(b.id, b.name, dict(b.input))
    if isinstance(b, ReasoningBlock):
        return ab.ReasoningBlock(text=b.text, signature=b.signature, redacted=b.redacted)
    content = b.content if isinstance(b.content, str) else [_block_to_axio(c) for c in b.content]
    return ab.ToolResultBlock(b.tool_use_id, content, b.is_error)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def from_axio(message: AxioMessage) -> Message:
    """An axio message as a ctxtrim message (axio's dict in meta when not exact)."""
    try:
        out = Message(message.role, tuple(_block_to_ctxtrim(b) for b in message.content))
    except InvalidMessage:
        # A block ctxtrim rejects (e.g. an image type it does not know): keep the roles'
        # tool pairs, stand in for the rest.
        keep = (ab.ToolUseBlock, ab.ToolResultBlock)
        out = Message(
            message.role,
            tuple(
                _block_to_ctxtrim(b) if isinstance(b, keep) else TextBlock("")
                for b in message.content
            ),
        )
    if to_axio(out) != message:
        out = Message(out.role, out.content, meta={META_KEY: _jsonable(message.to_dict())})
    return out


def to_axio(message: Message) -> AxioMessage:
    """A ctxtrim message as an axio message (exactly the appended one when it came from
    :func:`from_axio`)."""
    if message.meta and META_KEY in message.meta:
        return AxioMessage.from_dict(message.meta[META_KEY])
    return AxioMessage(message.role, [_block_to_axio(b) for b in message.content])


class AxioContextStore(ContextStore):
    """An axio ``ContextStore`` backed by a ctxtrim store (a memory store when none given)."""

    def __init__(self, store: CtxtrimStore | None = None) -> None:
        self.store = store if store is not None else MemoryContextStore()

    @property
    def session_id(self) -> str:
        return self.store.session_id

    async def append(self, message: AxioMessage) -> None:
        await self.store.append(from_axio(message))

    async def get_history(self) -> list[AxioMessage]:
        return [to_axio(m) for m in await self.store.get_history()]

    async def clear(self) -> None:
        await self.store.clear()

    async def fork(self) -> AxioContextStore:
        return AxioContextStore(await self.store.fork())

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        await self.store.set_context_tokens(input_tokens, output_tokens)

    async def get_context_tokens(self) -> tuple[int, int]:
        return await self.store.get_context_tokens()

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        await self.store.add_context_tokens(input_tokens, output_tokens)

    async def close(self) -> None:
        await self.store.close()

    async def list_sessions(self) -> list[SessionInfo]:
        return [
            SessionInfo(
                session_id=s.session_id,
                message_count=s.message_count,
                preview=s.preview,
                created_at=s.created_at,
                input_tokens=s.input_tokens,
                output_tokens=s.output_tokens,
            )
            for s in await self.store.list_sessions()
        ]
