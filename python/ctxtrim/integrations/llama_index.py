"""A pair-safe, per-turn-constant ``Memory`` for LlamaIndex agents (llama-index-core).

Change the import, keep the call::

    from ctxtrim.integrations.llama_index import Memory

    memory = Memory.from_defaults(session_id="s1", token_limit=40_000)

:class:`Memory` *is* a ``llama_index.core.memory.Memory`` (a subclass: the agents'
``BaseMemory`` type, ``from_defaults`` and every field are LlamaIndex's own) and keeps its
chat store as LlamaIndex does: every message is written to the ``sql_store`` when it is
put, flushed messages are archived there, and ``get_all``/``reset``/``set`` go to it. The
memory blocks (static, fact extraction, vector, custom) are LlamaIndex's own code: a flush
hands them the flushed messages, ``get`` asks them for their content, truncates and inserts
it with LlamaIndex's methods.

What changes is where the active queue is read from. LlamaIndex's ``put`` reads the whole
active queue back from the store and re-counts every message with the tokenizer on each
call, and ``get`` reads and re-counts it again: a turn costs O(active messages) of SQL rows,
JSON decoding and tokenizing. Here the active queue is kept in memory beside the store: each
message is counted once (with LlamaIndex's own ``_estimate_token_count``, so the counts are
the same), its running total and its skeleton (role, tool-call ids) go into a ctxtrim
:class:`MessageLog`, and a flush is decided on them — a put costs O(1) plus the store's
insert, a get O(1) plus the copy of the list it returns.

Invariants:

* The flush is LlamaIndex's waterfall, decision for decision, on valid histories: when the
  active queue passes ``token_limit * chat_history_token_ratio`` tokens, the oldest
  messages, about ``token_flush_size`` tokens at a time, are archived and handed to the
  memory blocks; the queue then starts at a user message; a last turn is kept whole, and a
  queue without a user message is flushed entirely (both as LlamaIndex does).
* The queue starts only at a *pair-safe* user message: one that no tool result after it
  answers a call before it. LlamaIndex starts at the first user message whatever follows,
  so a person writing while a tool runs (``assistant(call) → user → tool(result)``) left
  the result in the queue without its call — a request OpenAI and Anthropic reject. Where
  that happens the flush goes on to the next pair-safe user message (or keeps the last
  whole turn, as LlamaIndex's own rule does).
* ``get`` returns the messages that were put (the objects, as ``ChatMemoryBuffer`` does),
  not copies decoded from the store; a message the memory blocks' text is inserted into is
  copied first, so the stored one never accumulates it. Memory blocks receive copies of
  the flushed messages (LlamaIndex's store hands them decoded copies; a block marks them
  with the ``session_id``).
* The in-memory queue is loaded from the store on first use, and again whenever the
  ``session_id`` or ``sql_store`` is replaced: one ``Memory`` object is the writer of its
  session while it is used (as in an agent run); another object writing the same session's
  rows meanwhile is not seen until a new ``Memory`` is made.

Tool calls in llama-index-core 0.14: an assistant ``ChatMessage`` carries them as
``ToolCallBlock`` blocks (``tool_call_id``) or, from older integrations, in
``additional_kwargs["tool_calls"]`` (items with an ``id``); a result is a ``role="tool"``
message with ``additional_kwargs["tool_call_id"]`` (as ``FunctionAgent`` writes it).
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterable, Sequence
from typing import Any

from ctxtrim._core import MessageLog
from ctxtrim.integrations._common import missing_extra
from ctxtrim.messages import Message, ToolResultBlock, ToolUseBlock

try:
    from llama_index.core.base.llms.types import ChatMessage, ContentBlock, ToolCallBlock
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.memory import Memory as _LlamaMemory
    from llama_index.core.memory.memory import InsertMethod
    from llama_index.core.storage.chat_store.base_db import MessageStatus
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("llama-index-core", "llama-index", _err) from _err

__all__ = ["Memory", "to_skeleton"]

# Skeletons without tool ids carry nothing per message: one shared object each. The user
# skeleton has text, so the core reads it as a real user message (a turn start).
_USER = Message.user("u")
_ASSISTANT = Message.assistant("")
_SYSTEM = Message.system("")


def _call_ids(message: ChatMessage) -> list[str | None]:
    """The ids of the tool calls an assistant message makes, in order, each once (a call
    can be both a block and an ``additional_kwargs`` entry); None for a call without id."""
    ids: list[str | None] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            ids.append(block.tool_call_id or None)
    legacy = message.additional_kwargs.get("tool_calls")
    if isinstance(legacy, list):
        for call in legacy:
            if isinstance(call, dict):
                cid = call.get("id") or call.get("tool_id") or call.get("tool_call_id")
            else:  # OpenAI's ChatCompletionMessageToolCall, LlamaIndex's ToolSelection
                cid = (
                    getattr(call, "id", None)
                    or getattr(call, "tool_id", None)
                    or getattr(call, "tool_call_id", None)
                )
            ids.append(cid if isinstance(cid, str) and cid else None)
    if len(ids) > 1:
        seen: set[str] = set()
        unique: list[str | None] = []
        for cid in ids:
            if cid is None or cid not in seen:
                unique.append(cid)
                if cid is not None:
                    seen.add(cid)
        ids = unique
    return ids


def to_skeleton(message: ChatMessage, i: int = 0) -> Message:
    """The ctxtrim skeleton of one LlamaIndex ``ChatMessage``: its role and tool-call ids
    (``i``, the message's index, only names calls that arrive without an id)."""
    role = message.role
    if role == "user":
        return _USER
    if role in ("system", "developer"):
        return _SYSTEM
    if role == "tool":
        cid = message.additional_kwargs.get("tool_call_id")
        if isinstance(cid, str) and cid:
            return Message("user", (ToolResultBlock(cid, ""),))
        return _ASSISTANT  # a result naming no call pairs with nothing
    ids = _call_ids(message)
    if not ids:
        return _ASSISTANT
    return Message.assistant(
        "",
        tool_uses=[
            ToolUseBlock(cid or f"\x00llama-index-{i}-{j}", "?", {}) for j, cid in enumerate(ids)
        ],
    )


class Memory(_LlamaMemory):
    """``llama_index.core.memory.Memory`` with the active queue kept in a ctxtrim log: the
    same fields, ``from_defaults`` and chat store, a pair-safe flush, O(1) a turn."""

    # The active queue since it was loaded: ``_msgs[_start:]`` (flushed ones are dropped
    # from the front in batches), ``_prefix[i]`` the tokens of ``_msgs[:i]`` (so a range's
    # tokens is one subtraction), ``_log`` their skeletons (for the pair-safe user cuts).
    _msgs: list[ChatMessage] = PrivateAttr(default_factory=list)
    _prefix: list[int] = PrivateAttr(default_factory=lambda: [0])
    _log: MessageLog = PrivateAttr(default_factory=MessageLog)
    _start: int = PrivateAttr(default=0)
    _seen: int = PrivateAttr(default=0)  # messages ever mirrored: names calls without id
    # (session_id, sql_store) the queue was loaded for; None: not loaded yet.
    _loaded_for: tuple[str, int] | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "Memory"

    # ---- the in-memory queue ----

    async def _queue(self) -> None:
        """Load the active queue from the store, on first use or for a new session/store."""
        key = (self.session_id, id(self.sql_store))
        if self._loaded_for == key:
            return
        active = await self.sql_store.get_messages(self.session_id, status=MessageStatus.ACTIVE)
        self._loaded_for = key
        self._clear()
        self._mirror(active)

    def _clear(self) -> None:
        self._msgs = []
        self._prefix = [0]
        self._log = MessageLog()
        self._start = 0

    def _mirror(self, messages: Iterable[ChatMessage]) -> None:
        """Append ``messages`` to the queue: counted once, with LlamaIndex's estimate."""
        new = list(messages)
        if not new:
            return
        counts = [self._estimate_token_count(m) for m in new]
        base = self._seen
        skeletons = [to_skeleton(m, base + j) for j, m in enumerate(new)]
        self._seen = base + len(new)
        self._log.extend(skeletons, tokens=counts)
        self._msgs.extend(new)
        prefix = self._prefix
        total = prefix[-1]
        for c in counts:
            total += c
            prefix.append(total)

    def _active(self) -> list[ChatMessage]:
        return self._msgs[self._start :]

    def _active_tokens(self) -> int:
        return self._prefix[-1] - self._prefix[self._start]

    def _flush_cuts(self) -> list[tuple[int, int]]:
        """The batches ``[a, b)`` LlamaIndex's waterfall flushes from the queue (its
        ``_manage_queue``, step for step), each ending at a pair-safe user message; the
        queue's start moves past them."""
        prefix = self._prefix
        n = len(self._msgs)
        s = self._start
        limit = self.token_limit * self.chat_history_token_ratio
        flush_size = self.token_flush_size
        batches: list[tuple[int, int]] = []
        if n == s or prefix[n] - prefix[s] <= limit:
            return batches
        log = self._log
        while prefix[n] - prefix[s] - limit > 0:
            if n - s <= 1:  # a single message is kept whatever its size
                break
            # The oldest messages up to the flush size, leaving at least one...
            j = min(bisect.bisect_left(prefix, prefix[s] + flush_size, s + 1, n), n - 1)
            # ...then on to the next user message that is a pair-safe start...
            c = log.user_cut_at_or_after(j)
            if c is None or c >= n:
                # ...or, when there is none, keep the last turn whole (from the last
                # pair-safe user message), or flush everything if the queue has none.
                u = log.user_cut_at_or_before(n - 1)
                c = n if u is None or u < s else u
            if c <= s:  # nothing flushable: LlamaIndex stops too
                break
            batches.append((s, c))
            s = c
        self._start = s
        return batches

    def _compact(self) -> None:
        """Drop the flushed messages from the front once they are most of the list (each
        message is moved O(1) times overall)."""
        s = self._start
        if s < 1024 or 2 * s < len(self._msgs):
            return
        base = self._prefix[s]
        self._prefix = [t - base for t in self._prefix[s:]]
        counts = self._log.token_counts()[s:]
        self._log = MessageLog(self._log.to_list(s), tokens=counts)
        self._msgs = self._msgs[s:]
        self._start = 0

    async def _manage_queue(self) -> None:
        """LlamaIndex's ``_manage_queue`` on the in-memory queue: archive each flushed batch
        in the store and hand it to the memory blocks, as LlamaIndex does."""
        await self._queue()
        msgs = self._msgs
        batches = [msgs[a:b] for a, b in self._flush_cuts()]
        self._compact()
        blocks = [b for b in self.memory_blocks if b.accept_short_term_memory]
        for flushed in batches:
            await self.sql_store.archive_oldest_messages(self.session_id, n=len(flushed))
            if blocks:
                await asyncio.gather(
                    *[
                        # Copies: a block marks its messages with the session id (LlamaIndex's
                        # blocks get copies decoded from the store, never the caller's).
                        block.aput(
                            [m.model_copy(deep=True) for m in flushed],
                            from_short_term_memory=True,
                            session_id=self.session_id,
                        )
                        for block in blocks
                    ]
                )

    # ---- LlamaIndex's API ----

    async def aput(self, message: ChatMessage) -> None:
        """Add a message to the chat store and flush into the memory blocks if needed."""
        await self._queue()
        await self.sql_store.add_message(self.session_id, message, status=MessageStatus.ACTIVE)
        self._mirror([message])
        await self._manage_queue()

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Add several messages to the chat store, then flush if needed (one decision)."""
        await self._queue()
        await self.sql_store.add_messages(self.session_id, messages, status=MessageStatus.ACTIVE)
        self._mirror(messages)
        await self._manage_queue()

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the chat history (no flush, as LlamaIndex's)."""
        await self.sql_store.set_messages(self.session_id, messages, status=MessageStatus.ACTIVE)
        self._loaded_for = (self.session_id, id(self.sql_store))
        self._clear()
        self._mirror(messages)

    async def areset(self, status: MessageStatus | None = None) -> None:
        """Delete the session's messages (of one ``status``, or all)."""
        await self.sql_store.delete_messages(self.session_id, status=status)
        if status is None or status == MessageStatus.ACTIVE:
            self._loaded_for = (self.session_id, id(self.sql_store))
            self._clear()

    async def aget(
        self, input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> list[ChatMessage]:
        """The active queue with the memory blocks' content inserted (LlamaIndex's ``aget``,
        reading the queue and its token total from memory instead of the store)."""
        await self._queue()
        chat_history = self._active()
        chat_history_tokens = self._active_tokens()
        content_per_memory_block = await self._get_memory_blocks_content(
            chat_history, input=input, **block_kwargs
        )
        if not content_per_memory_block:
            return chat_history
        memory_blocks_tokens = sum(
            self._estimate_token_count(content) for content in content_per_memory_block.values()
        )
        truncated_content = await self._truncate_memory_blocks(
            content_per_memory_block, memory_blocks_tokens, chat_history_tokens
        )
        memory_blocks_data, chat_message_data = await self._format_memory_blocks(truncated_content)
        memory_content: list[ContentBlock] = []
        if memory_blocks_data:
            memory_block_messages = self.memory_blocks_template.format_messages(
                memory_blocks=memory_blocks_data
            )
            memory_content = memory_block_messages[0].blocks if memory_block_messages else []
        return self._insert_memory_content(chat_history, memory_content, chat_message_data)

    def _insert_memory_content(
        self,
        chat_history: list[ChatMessage],
        memory_content: list[ContentBlock],
        chat_message_data: list[ChatMessage],
    ) -> list[ChatMessage]:
        """LlamaIndex's insertion, on a list whose target message is a copy: LlamaIndex
        writes the memory content into that message's blocks, which here is a stored one."""
        if memory_content:
            combined = [*chat_message_data, *chat_history]
            target = _insert_target(combined, self.insert_method)
            if target is not None:
                k = target - len(chat_message_data)
                if k >= 0:
                    chat_history = list(chat_history)
                    chat_history[k] = chat_history[k].model_copy()
                else:
                    chat_message_data = list(chat_message_data)
                    chat_message_data[target] = chat_message_data[target].model_copy()
        return super()._insert_memory_content(chat_history, memory_content, chat_message_data)


def _insert_target(messages: Sequence[ChatMessage], method: InsertMethod) -> int | None:
    """The index of the message LlamaIndex writes the memory content into: the first
    system message, or the last user message."""
    if method == InsertMethod.SYSTEM:
        return next((i for i, m in enumerate(messages) if m.role == "system"), None)
    if method == InsertMethod.USER:
        return next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None
        )
    return None
