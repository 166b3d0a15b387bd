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

:func:`compact_context` is axio's ``axio.compaction.compact_context`` on ctxtrim's pair-safe
cut: the same signature, an axio transport (axio's streaming ``CompletionTransport``), axio
messages back, and ``None`` where axio returns ``None`` (nothing before the kept part, or the
summary call failed — logged). :class:`AxioTransport` makes an axio transport a ctxtrim
summariser, for ``ctxtrim.compact_context`` and ``ctxtrim.AutoCompactStore`` (which also
wrap an axio transport themselves when given one).

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
import logging
from collections.abc import Sequence
from typing import Any

from ctxtrim import _core
from ctxtrim._core import MessageLog
from ctxtrim.errors import CompactionSettingsError, InvalidMessage
from ctxtrim.integrations._common import missing_extra
from ctxtrim.messages import (
    Block,
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.store import ContextStore as CtxtrimStore
from ctxtrim.store import MemoryContextStore
from ctxtrim.transports._render import is_summary, summary_body

try:
    from axio import blocks as ab
    from axio.agent import Agent
    from axio.compaction import DEFAULT_COMPACTION_PROMPT
    from axio.context import ContextStore, SessionInfo
    from axio.context import MemoryContextStore as AxioMemoryStore
    from axio.messages import Message as AxioMessage
    from axio.transport import CompletionTransport as AxioCompletionTransport
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("axio (Python >= 3.12)", "axio", _err) from _err

__all__ = [
    "ACKNOWLEDGEMENT",
    "DEFAULT_COMPACTION_PROMPT",
    "META_KEY",
    "SUMMARY_REQUEST",
    "AxioContextStore",
    "AxioTransport",
    "compact_context",
    "from_axio",
    "to_axio",
]

logger = logging.getLogger("ctxtrim.integrations.axio")

#: What axio asks the summariser after the old messages (its own words).
SUMMARY_REQUEST = "Summarize the conversation above."
#: The assistant message axio puts after the summary (its own words).
ACKNOWLEDGEMENT = "Understood, context restored."

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
    if isinstance(b, ProviderBlock):
        # axio has no block for a provider's own (a server tool call, a document): its JSON,
        # as text the model still reads, rather than a silent drop.
        return ab.TextBlock(_core.compact_json(dict(b.data)))
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


# -- compaction with an axio transport --------------------------------------------------------


async def _axio_summary(
    transport: AxioCompletionTransport, old: list[AxioMessage], system_prompt: str
) -> str:
    """What axio does: a one-iteration axio ``Agent`` on a memory copy of ``old``."""
    agent = Agent(system=system_prompt, transport=transport, max_iterations=1)
    text = await agent.run(SUMMARY_REQUEST, AxioMemoryStore(old))
    if not isinstance(text, str):
        raise TypeError(f"axio's Agent.run returned {type(text).__name__}, not str")
    return text


class AxioTransport:
    """An axio transport (``stream(messages, tools, system)``) as a ctxtrim
    :class:`~ctxtrim.compaction.CompletionTransport`: ``complete`` runs axio's own summary
    call (a one-iteration axio ``Agent`` asked to "Summarize the conversation above.") on
    the messages converted to axio's. An earlier ctxtrim summary among them is handed over
    as a user message headed "Previous summary:" so the model merges it. ``max_tokens`` is
    not passed on: an axio transport takes no per-call limit (set it on the transport).
    ``model`` is the transport's, so ``AutoCompactStore`` reads its ``context_window``."""

    def __init__(self, transport: AxioCompletionTransport) -> None:
        if not callable(getattr(transport, "stream", None)):
            raise TypeError(
                f"transport must be an axio transport (a stream() method), got "
                f"{type(transport).__name__}"
            )
        self.transport = transport
        self.model = getattr(transport, "model", None)
        #: The model's context window (axio's ``transport.model.context_window``), which
        #: ``AutoCompactStore`` takes as its ``max_tokens`` when none is given.
        self.context_window: int | None = getattr(self.model, "context_window", None)

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        old: list[AxioMessage] = []
        for m in messages:
            if is_summary(m):
                text = "Previous summary:\n" + summary_body(m)
                old.append(AxioMessage("user", [ab.TextBlock(text)]))
            else:
                old.append(to_axio(m))
        return await _axio_summary(self.transport, old, system)


async def compact_context(
    context: ContextStore,
    transport: AxioCompletionTransport,
    *,
    max_messages: int | None = None,
    keep_recent: int = 6,
    system_prompt: str | None = DEFAULT_COMPACTION_PROMPT,
) -> list[AxioMessage] | None:
    """axio's ``compact_context``: the history of ``context`` (any axio ``ContextStore``,
    :class:`AxioContextStore` included; read, never modified) with everything before the
    last ``keep_recent`` messages replaced by ``[user(summary), assistant("Understood,
    context restored.")]``, as axio messages; ``None`` when nothing lies before the kept
    part or when the summary call raises (logged on ``ctxtrim.integrations.axio``, as axio
    logs it). The summary is axio's own call on ``transport``.

    Both of axio's signatures work: ``max_messages`` (axio 0.1-0.6, the one its README
    shows: ``compact_context(context, transport, max_messages=20, keep_recent=6)``) returns
    ``None`` while the history has at most ``max_messages`` messages, as those versions did;
    left out (axio >= 0.7, which dropped it), only ``keep_recent`` decides.
    ``system_prompt=None`` is axio's default prompt, as in axio 0.1-0.3.

    Where axio's result is valid this returns the same messages. Deliberate differences:
    the cut is ctxtrim's pair-safe cut (no tool call before it has its result after it;
    axio only steps back past tool-result messages, so a person's message between a call
    and its result, or a result that arrived after another reply, leaves axio's result an
    orphan), so a little more may be kept; ``keep_recent=0`` summarises everything (axio
    raises ``IndexError``). A negative or non-int ``keep_recent`` or ``max_messages``, or a
    ``system_prompt`` that is not a str, raises
    :class:`~ctxtrim.errors.CompactionSettingsError`.
    """
    if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
        raise CompactionSettingsError(f"keep_recent must be an int >= 0, got {keep_recent!r}")
    if max_messages is not None and (
        isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 0
    ):
        raise CompactionSettingsError(
            f"max_messages must be None or an int >= 0, got {max_messages!r}"
        )
    if system_prompt is None:
        system_prompt = DEFAULT_COMPACTION_PROMPT
    if not isinstance(system_prompt, str):
        raise CompactionSettingsError(f"system_prompt must be a str, got {system_prompt!r}")
    if not callable(getattr(transport, "stream", None)):
        raise CompactionSettingsError(
            f"transport must be an axio transport (a stream() method), got "
            f"{type(transport).__name__}"
        )
    history = await context.get_history()
    n = len(history)
    if max_messages is not None and n <= max_messages:
        return None
    log = MessageLog([from_axio(m) for m in history])
    split = log.safe_cut_at_or_before(max(0, n - keep_recent))
    if split <= 0:
        return None
    old, recent = history[:split], history[split:]
    try:
        summary = await _axio_summary(transport, list(old), system_prompt)
    except Exception:
        logger.warning("Context compaction failed, keeping original history", exc_info=True)
        return None
    return [
        AxioMessage(role="user", content=[ab.TextBlock(text=summary)]),
        AxioMessage(role="assistant", content=[ab.TextBlock(text=ACKNOWLEDGEMENT)]),
        *recent,
    ]
