"""`ContextStore`, the history store every backend implements, and `MemoryContextStore`.

The ABC keeps the seed's (axio's) async API so existing agent loops drop in unchanged:
``session_id``, ``append``, ``get_history``, ``clear``, ``fork``, the context-token trio,
``close``, ``list_sessions``, ``from_history``, ``from_context``. Every ctxtrim backend adds:

- ``append_many(messages)`` — atomic: every message is validated first; either all are
  stored or none is.
- ``get_history(limit=None)`` — the last ``limit`` messages.
- ``snapshot()`` → ``(messages, generation)`` read together, and
  ``replace_prefix(upto, messages, expected_generation)`` — a compare-and-swap: replaces the
  first ``upto`` messages only if nothing cleared or rewrote the history since the snapshot,
  and keeps every message appended meanwhile. This is how compaction never loses a write.
  With ``expected_length=n`` it also requires that nothing was appended (the history still
  holds exactly the ``n`` messages read): a rewrite of the newest messages (a suffix) needs
  that, since an append would land inside what it replaces.
- ``load_log()`` — the history as a read-only ``MessageLog`` with its cached token counts,
  what the trimming strategies work on.
- ``remove_turn(turn)`` — drops one turn (``"u3"``: the whole turn; ``"a3"``: the
  assistant's side of it, keeping the user's message), atomically.
- ``attach_compact_summary(tool_use_id, summary)`` — gives a stored tool result its
  ``compact_summary`` (the stand-in :class:`~ctxtrim.ClearToolResults` shows), atomically.
- ``generation()`` — bumped by ``clear``, ``replace_prefix``, ``remove_turn`` and
  ``attach_compact_summary`` (each rewrites stored messages), never by ``append``.

Invariants: a message is validated before anything is stored (bad input raises
:class:`~ctxtrim.errors.InvalidMessage` and changes nothing); history order is append
order; a fork is independent of its parent in both directions.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec

from ctxtrim import _core
from ctxtrim.errors import (
    InvalidArgument,
    InvalidMessage,
    StaleGenerationError,
    StoreError,
    stale_generation_error,
    stale_length_error,
)
from ctxtrim.messages import Message, TextBlock, ToolResultBlock
from ctxtrim.tokens import TokenCounter

if TYPE_CHECKING:
    # ``SessionInfo`` is a dataclass defined in ``ctxtrim._records`` (``import ctxtrim`` loads
    # no dataclasses), resolved on first use by the module ``__getattr__``.
    from ctxtrim._records import SessionInfo as SessionInfo

__all__ = ["ContextStore", "HistorySnapshot", "MemoryContextStore", "SessionInfo"]

_S = TypeVar("_S", bound="ContextStore")
_PREVIEW_CHARS = 80
#: How often ``remove_turn`` / ``attach_compact_summary`` re-read and retry when another
#: rewrite (a compaction, a clear) wins the race before giving up with the
#: :class:`~ctxtrim.errors.StaleGenerationError`.
_REWRITE_ATTEMPTS = 5


class HistorySnapshot(NamedTuple):
    """A history and the generation it was read at, for ``replace_prefix``."""

    messages: list[Message]
    generation: int


# -- the argument contract every store shares (one message shape, checked before any I/O) --

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _check_int64(name: str, value: object) -> int:
    """``value`` if it is an ``int`` (not ``bool``) in the signed 64-bit range."""
    if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
        raise InvalidArgument(f"{name} must be a signed 64-bit int, got {value!r}")
    return value


#: The largest token count a store takes for a message: what every backend can hold
#: (PostgreSQL's ``integer`` column; the log itself keeps unsigned 32-bit counts).
MAX_MESSAGE_TOKENS = 2**31 - 1


def _bad_count(count: object, where: str) -> InvalidArgument:
    """The error for a counter's count that is not a count, for the message at ``where``."""
    return InvalidArgument(
        f"the token counter's count_message returned {count!r} for {where}; "
        f"a token count is an int from 0 to {MAX_MESSAGE_TOKENS}"
    )


def _counted(counter: TokenCounter, message: Message, where: str) -> int:
    """``counter``'s count of ``message``, refused before anything is stored unless it is an
    ``int`` (not ``bool``) from 0 to :data:`MAX_MESSAGE_TOKENS`: one bad count must not poison
    a session, and every backend refuses it the same way."""
    count = counter.count_message(message)
    if type(count) is not int or not 0 <= count <= MAX_MESSAGE_TOKENS:
        raise _bad_count(count, where)
    return count


def _token_counts(
    messages: Sequence[Message], counter: TokenCounter | None, path: str = "messages[{}]"
) -> list[int]:
    """Per-message token counts stored with each message, so a loaded history is never
    recounted: the exact ``counter`` when given (a count that is not one is an
    :class:`InvalidArgument` naming ``path.format(i)``: ``"message"`` for ``append``,
    ``"messages[i]"`` for a batch), else the core's estimate."""
    if counter is None:
        return [_core.message_tokens(m) for m in messages]
    return [_counted(counter, m, path.format(i)) for i, m in enumerate(messages)]


def _check_upto(upto: object) -> int:
    if type(upto) is not int or upto < 0:
        raise InvalidArgument(f"upto must be an int >= 0, got {upto!r}")
    return upto


def _check_expected_length(upto: int, expected_length: object) -> int | None:
    """``expected_length``: None, or an int >= ``upto`` (a prefix past it cannot exist)."""
    if expected_length is None:
        return None
    if type(expected_length) is not int or expected_length < 0:
        raise InvalidArgument(
            f"expected_length must be None or an int >= 0, got {expected_length!r}"
        )
    if upto > expected_length:
        raise InvalidArgument(f"upto must be at most expected_length {expected_length}, got {upto}")
    return expected_length


def _upto_past_end(upto: int, length: int) -> InvalidArgument:
    return InvalidArgument(f"upto must be at most the history length {length}, got {upto}")


def _check_limit(limit: object) -> int | None:
    if limit is not None and (type(limit) is not int or limit < 0):
        raise InvalidArgument(f"limit must be None or an int >= 0, got {limit!r}")
    return limit


def _check_batch(messages: object) -> None:
    """A batch must be a sequence (a ``str``, ``bytes`` or lone ``Message`` is not)."""
    if type(messages) is list or type(messages) is tuple:  # the common case, without ABCs
        return
    if isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Iterable):
        raise InvalidMessage(
            f"must be a sequence of Message, got {type(messages).__name__}", "messages"
        )


def _tokens_overflow(name: str, added: int) -> InvalidArgument:
    return InvalidArgument(
        f"{name} total must stay a signed 64-bit int, adding {added} would overflow it"
    )


def _preview(history: Iterable[Message]) -> str:
    """The first user text, cut to 80 characters (what ``list_sessions`` shows)."""
    for message in history:
        if message.role == "user":
            for block in message.content:
                if isinstance(block, TextBlock):
                    return block.text[:_PREVIEW_CHARS]
    return ""


def _summarised(history: Sequence[Message], tool_use_id: str, summary: str) -> tuple[int, Message]:
    """The index of the newest message holding the tool result ``tool_use_id`` and that
    message with ``summary`` as the result's ``compact_summary``; ``KeyError`` if none."""
    if not isinstance(tool_use_id, str) or not isinstance(summary, str):
        raise TypeError("tool_use_id and summary must be str")
    for i in range(len(history) - 1, -1, -1):
        message = history[i]
        if message.role != "user":
            continue
        content = message.content
        for j, block in enumerate(content):
            if type(block) is ToolResultBlock and block.tool_use_id == tool_use_id:
                new_block = msgspec.structs.replace(block, compact_summary=summary)
                new_content = (*content[:j], new_block, *content[j + 1 :])
                return i, msgspec.structs.replace(message, content=new_content)
    raise KeyError(f"no stored tool result answers tool call {tool_use_id!r}")


class ContextStore(ABC):
    """A conversation history. Subclasses implement at least ``append`` and ``get_history``.

    ``session_id`` works without ``super().__init__()`` (a uuid4 hex made on first use), as
    in axio, so third-party subclasses written for axio keep working.
    """

    @property
    def session_id(self) -> str:
        sid = self.__dict__.get("_session_id")
        if sid is None:
            sid = self.__dict__["_session_id"] = uuid.uuid4().hex
        return sid

    @abstractmethod
    async def append(self, message: Message) -> None:
        """Add one message at the end."""

    @abstractmethod
    async def get_history(self, limit: int | None = None) -> list[Message]:
        """The history in order, or its last ``limit`` messages; a new list each call."""

    async def append_many(self, messages: Sequence[Message]) -> None:
        """Add several messages. ctxtrim's stores do it atomically; this fallback, for
        third-party subclasses, appends one by one."""
        for message in messages:
            await self.append(message)

    async def clear(self) -> None:
        """Remove every message (and zero the context tokens)."""
        raise NotImplementedError(f"{type(self).__name__} does not support clear()")

    async def generation(self) -> int:
        """A number that changes whenever the history is rewritten rather than appended to."""
        raise NotImplementedError(f"{type(self).__name__} does not support generations")

    async def snapshot(self) -> HistorySnapshot:
        """The history together with its generation, read atomically."""
        raise NotImplementedError(f"{type(self).__name__} does not support snapshots")

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        """Replace the first ``upto`` messages by ``messages`` if the generation is still
        ``expected_generation`` (and, when ``expected_length`` is given, the history still
        holds exactly that many messages: nothing was appended since it was read); raise
        :class:`~ctxtrim.errors.StaleGenerationError` if not, changing nothing.

        Checks, in this order on every store: ``upto`` (int >= 0), ``expected_generation``
        (64-bit int), ``messages`` (a sequence), ``expected_length`` (None or an int >=
        ``upto``) — :class:`~ctxtrim.errors.InvalidArgument` /
        :class:`~ctxtrim.errors.InvalidMessage` before any I/O; then, atomically, the
        generation, the length, and ``upto`` against the length."""
        raise NotImplementedError(f"{type(self).__name__} does not support replace_prefix()")

    async def remove_turn(self, turn: int | str | _core.TurnId) -> int:
        """Drop one turn and return how many messages went (an interrupted request rolled
        back, say). ``"u3"`` (or ``3``) drops the whole of turn 3; ``"a3"`` drops only the
        assistant's side: turn 3's messages from its first assistant message on (the reply,
        its tool calls and their results), keeping the user's message that opened it.

        Atomic: the history is read with its generation and rewritten by
        :meth:`replace_prefix`, so messages appended meanwhile are kept; if another rewrite
        wins, it re-reads and retries. Bumps the generation. Later messages keep their turn
        ids (they are written with them, so a reopened store numbers them as before). O(n).

        Returns 0 and changes nothing if no message has that turn (or turn 3 has no
        assistant message for ``"a3"``), as agent-air's ``interrupt()`` removes nothing
        then. Raises :class:`~ctxtrim.errors.InvalidTurnId` for a malformed id, and
        ``ValueError`` if the removal would separate a tool call from its result (possible
        only with caller-given turn ids); nothing changes then.
        """
        for attempt in range(_REWRITE_ATTEMPTS):
            history, generation = await self.snapshot()
            log = _core.MessageLog(history)
            try:
                start, end = log.turn_range(turn)
            except KeyError:  # no such turn: nothing to roll back
                return 0
            kept = list(history[:start])
            for j in range(end, len(history)):
                message = history[j]
                if message.turn is None:
                    message = msgspec.structs.replace(message, turn=str(log.turn_of(j)))
                kept.append(message)
            try:
                await self.replace_prefix(len(history), kept, generation)
            except StaleGenerationError:
                if attempt == _REWRITE_ATTEMPTS - 1:
                    raise
                continue
            return end - start
        raise AssertionError("unreachable")  # pragma: no cover

    async def attach_compact_summary(self, tool_use_id: str, summary: str) -> bool:
        """Give the stored tool result answering ``tool_use_id`` (the newest, if the id was
        reused) ``summary`` as its ``compact_summary``, the short stand-in that
        :class:`~ctxtrim.ClearToolResults` shows once the result is old (agent-air's
        ``compact_summaries`` map, kept on the message itself).

        Atomic (a compare-and-swap on the generation, retried if another rewrite wins;
        messages appended meanwhile are kept) and it bumps the generation: the stored message
        is rewritten, so a compaction that read the history before must re-read rather than
        write the old result back. Returns True; False, changing nothing, if no stored tool
        result has that id (agent-air's ``store_compact_summaries`` accepts a summary for
        any id).
        """
        for attempt in range(_REWRITE_ATTEMPTS):
            history, generation = await self.snapshot()
            try:
                index, message = _summarised(history, tool_use_id, summary)
            except KeyError:
                return False
            try:
                await self.replace_prefix(index + 1, [*history[:index], message], generation)
            except StaleGenerationError:
                if attempt == _REWRITE_ATTEMPTS - 1:
                    raise
                continue
            return True
        raise AssertionError("unreachable")  # pragma: no cover

    async def load_log(self) -> _core.MessageLog:
        """The history as a read-only :class:`~ctxtrim.MessageLog` (cached token counts,
        turns, pair-safe cut queries) for the trimming strategies. Stores that keep token
        counts hand them over, so nothing is recounted; this fallback counts once."""
        return _core.MessageLog(await self.get_history()).snapshot()

    async def fork(self) -> ContextStore:
        """An independent copy. The fallback copies the history into a memory store."""
        store = MemoryContextStore(await self.get_history())
        await store.set_context_tokens(*await self.get_context_tokens())
        return store

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Record the provider-reported token totals of this session."""
        self.__dict__["_context_tokens"] = (input_tokens, output_tokens)

    async def get_context_tokens(self) -> tuple[int, int]:
        """The ``(input_tokens, output_tokens)`` recorded so far."""
        tokens: tuple[int, int] = self.__dict__.get("_context_tokens", (0, 0))
        return tokens

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the recorded token totals."""
        current_in, current_out = await self.get_context_tokens()
        await self.set_context_tokens(current_in + input_tokens, current_out + output_tokens)

    async def close(self) -> None:
        """Release connections; the store must not be used afterwards. A no-op here."""
        return None

    async def __aenter__(self: _S) -> _S:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """``async with store:`` closes the store on the way out."""
        await self.close()

    async def list_sessions(self) -> list[SessionInfo]:
        """Sessions this store can see; the fallback reports only its own."""
        from ctxtrim._records import SessionInfo

        history = await self.get_history()
        input_tokens, output_tokens = await self.get_context_tokens()
        return [
            SessionInfo(
                session_id=self.session_id,
                message_count=len(history),
                preview=_preview(history),
                created_at=datetime.now(timezone.utc).isoformat(),
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            )
        ]

    @classmethod
    async def from_history(cls: type[_S], history: Sequence[Message]) -> _S:
        """A new store of this class holding ``history``."""
        store = cls()
        await store.append_many(history)
        return store

    @classmethod
    async def from_context(cls: type[_S], context: ContextStore) -> _S:
        """A new store of this class holding ``context``'s history."""
        return await cls.from_history(await context.get_history())


def _closed() -> StoreError:
    return StoreError("the store is closed")


class MemoryContextStore(ContextStore):
    """A history in process memory, on the Rust copy-on-write log.

    ``fork()`` and ``snapshot()`` are O(1) whatever the length: forks share the (immutable)
    messages and diverge on write. ``append`` is O(1) amortised even while forks are alive.
    Every method is safe to call from several threads; nothing here awaits, so an asyncio
    task switch never interleaves inside one call.

    ``counter`` replaces the built-in estimate with an exact count (called once per
    appended message; the count is cached in the log).
    """

    def __init__(
        self,
        history: Sequence[Message] | None = None,
        *,
        session_id: str | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        if session_id is not None:
            self.__dict__["_session_id"] = session_id
        self._counter = counter
        self._log = _core.MessageLog()
        self._created_at = datetime.now(timezone.utc).isoformat()
        self._input_tokens = 0
        self._output_tokens = 0
        self._closed = False
        if history:
            self._log.extend(history, tokens=self._counts(history))

    def _counts(self, messages: Sequence[Message]) -> list[int] | None:
        # Without a counter the core estimates (and caches) each count itself.
        if self._counter is None:
            return None
        return _token_counts(messages, self._counter)

    @property
    def log(self) -> _core.MessageLog:
        """The underlying log (cached token counts, turns, pair-safe cut queries)."""
        return self._log

    async def load_log(self) -> _core.MessageLog:
        if self._closed:
            raise _closed()
        return self._log.snapshot()

    async def append(self, message: Message) -> None:
        if self._closed:
            raise _closed()
        if self._counter is None:
            self._log.append(message)  # the core estimates the count when it indexes it
        else:
            self._log.append(message, tokens=_counted(self._counter, message, "message"))

    async def append_many(self, messages: Sequence[Message]) -> None:
        if self._closed:
            raise _closed()
        _check_batch(messages)
        if self._counter is None:
            self._log.extend(messages)  # the core estimates the counts when it indexes them
        else:
            self._log.extend(messages, tokens=_token_counts(messages, self._counter))

    async def get_history(self, limit: int | None = None) -> list[Message]:
        if self._closed:
            raise _closed()
        return self._log.tail(_check_limit(limit))

    async def clear(self) -> None:
        if self._closed:
            raise _closed()
        self._log.clear()
        self._input_tokens = self._output_tokens = 0

    async def generation(self) -> int:
        if self._closed:
            raise _closed()
        return self._log.generation

    async def snapshot(self) -> HistorySnapshot:
        if self._closed:
            raise _closed()
        view = self._log.snapshot()
        return HistorySnapshot(view.to_list(), view.generation)

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        if self._closed:
            raise _closed()
        # The same checks, order and messages as the server stores (nothing awaits in
        # between, so the length and generation read here are the ones the swap sees; the
        # core checks both again under its lock, against other threads).
        _check_upto(upto)
        _check_int64("expected_generation", expected_generation)
        _check_batch(messages)
        _check_expected_length(upto, expected_length)
        log = self._log
        if log.generation != expected_generation:
            raise stale_generation_error(expected_generation, log.generation)
        if expected_length is not None and len(log) != expected_length:
            raise stale_length_error(expected_generation, expected_length, len(log))
        if upto > len(log):
            raise _upto_past_end(upto, len(log))
        log.replace_prefix(
            upto,
            messages,
            expected_generation,
            tokens=self._counts(messages),
            expected_length=expected_length,
        )

    async def remove_turn(self, turn: int | str | _core.TurnId) -> int:
        if self._closed:
            raise _closed()
        # One core rewrite under the log's lock: atomic, later turn ids unchanged.
        try:
            return self._log.remove_turn(turn)
        except KeyError:  # no such turn: nothing to roll back
            return 0

    async def attach_compact_summary(self, tool_use_id: str, summary: str) -> bool:
        if self._closed:
            raise _closed()
        for attempt in range(_REWRITE_ATTEMPTS):
            view = self._log.snapshot()
            try:
                index, message = _summarised(view.to_list(), tool_use_id, summary)
            except KeyError:
                return False
            tokens = None if self._counter is None else _counted(self._counter, message, "message")
            try:
                self._log.replace_at(index, message, view.generation, tokens=tokens)
            except StaleGenerationError:
                if attempt == _REWRITE_ATTEMPTS - 1:
                    raise
                continue
            return True
        raise AssertionError("unreachable")  # pragma: no cover

    async def fork(self) -> MemoryContextStore:
        if self._closed:
            raise _closed()
        child = MemoryContextStore(counter=self._counter)
        child._log = self._log.fork()
        child._input_tokens, child._output_tokens = self._input_tokens, self._output_tokens
        return child

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        if self._closed:
            raise _closed()
        self._input_tokens, self._output_tokens = (
            _check_int64("input_tokens", input_tokens),
            _check_int64("output_tokens", output_tokens),
        )

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        if self._closed:
            raise _closed()
        add_in = _check_int64("input_tokens", input_tokens)
        add_out = _check_int64("output_tokens", output_tokens)
        total_in, total_out = self._input_tokens + add_in, self._output_tokens + add_out
        if not _INT64_MIN <= total_in <= _INT64_MAX:
            raise _tokens_overflow("input_tokens", add_in)
        if not _INT64_MIN <= total_out <= _INT64_MAX:
            raise _tokens_overflow("output_tokens", add_out)
        self._input_tokens, self._output_tokens = total_in, total_out

    async def get_context_tokens(self) -> tuple[int, int]:
        if self._closed:
            raise _closed()
        return self._input_tokens, self._output_tokens

    async def list_sessions(self) -> list[SessionInfo]:
        if self._closed:
            raise _closed()
        from ctxtrim._records import SessionInfo

        return [
            SessionInfo(
                session_id=self.session_id,
                message_count=len(self._log),
                preview=_preview(self._log.tail(None)),
                created_at=self._created_at,
                input_tokens=self._input_tokens,
                output_tokens=self._output_tokens,
            )
        ]

    async def close(self) -> None:
        """Close the store: later calls raise :class:`StoreError`, as every backend's do
        (its forks and the logs it handed out stay usable)."""
        self._closed = True

    def __len__(self) -> int:
        return len(self._log)

    def __repr__(self) -> str:
        return f"MemoryContextStore(session_id={self.session_id!r}, messages={len(self._log)})"


def __getattr__(name: str) -> Any:
    if name == "SessionInfo":
        from ctxtrim._records import SessionInfo

        globals()[name] = SessionInfo  # later lookups find it directly
        return SessionInfo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
