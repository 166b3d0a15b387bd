"""Helpers every persistent backend shares: input checks, payload codec, token counts.

Invariants the backends rely on:

* :func:`check_messages` runs before any I/O and either returns the encoded payloads of
  *all* messages or raises (nothing is stored on error). It accepts only exact
  :class:`~ctxtrim.Message` instances (already validated at construction), re-checks that
  each still round-trips through JSON unchanged (a caller could have mutated a
  ``meta``/``input`` dict after construction) and enforces the size cap.
* A payload is the message's msgspec JSON (``Message.encode()``): plain text, no class
  reconstruction on read, NUL and every non-surrogate code point escaped or kept as UTF-8.
  :func:`payload_checksum` (CRC-32) is stored beside it so a reader can prove a row is whole;
  :func:`decode_payload` raises :class:`~ctxtrim.errors.CorruptRecordError` instead of
  skipping a bad row.
* Session ids are any non-empty ``str`` of valid UTF-8 up to :data:`MAX_SESSION_ID_BYTES`
  bytes; NUL, ``*``, ``:``, ``}`` are ordinary characters (ids are bound parameters or hashed,
  never spliced into a query or key pattern).
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable, Iterable, Sequence

import msgspec

from ctxtrim import _core
from ctxtrim.errors import (
    CorruptRecordError,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    InvalidTurnId,
    MessageTooLarge,
    StoreError,
)
from ctxtrim.messages import Message
from ctxtrim.store import (
    _INT64_MAX,
    _INT64_MIN,
    _check_batch,
    _check_int64,
    _check_limit,
    _check_upto,
    _preview,
    _tokens_overflow,
    _upto_past_end,
)
from ctxtrim.tokens import TokenCounter

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_TIMEOUT",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_SESSION_ID_BYTES",
    "TURN_ATTEMPTS",
    "LogCache",
    "check_batch",
    "check_int64",
    "check_limit",
    "check_max_message_bytes",
    "check_messages",
    "check_replace_args",
    "check_session_id",
    "check_timeout",
    "check_tokens",
    "decode_payload",
    "encode_payload",
    "load_cached",
    "payload_checksum",
    "preview",
    "token_counts",
    "tokens_overflow",
    "turn_guard",
    "turns_kept_moving",
    "upto_past_end",
]

#: Default cap on one message's encoded size (JSON bytes): 16 MiB.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Cap on a session id's UTF-8 length.
MAX_SESSION_ID_BYTES = 4096
#: Default bound (seconds) on one call to a server store, waits for a connection included.
DEFAULT_TIMEOUT = 10.0

INT64_MIN, INT64_MAX = _INT64_MIN, _INT64_MAX
check_int64 = _check_int64
check_batch = _check_batch
tokens_overflow = _tokens_overflow
upto_past_end = _upto_past_end

_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(Message).decode


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a usable id, else raise :class:`InvalidSessionId`."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionId("session_id must not be empty")
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise InvalidSessionId(
            f"session_id has a lone surrogate at index {e.start}; it cannot be UTF-8"
        ) from None
    if size > MAX_SESSION_ID_BYTES:
        raise InvalidSessionId(
            f"session_id is {size} bytes of UTF-8, over the cap of {MAX_SESSION_ID_BYTES}"
        )
    return session_id


def check_max_message_bytes(value: object) -> int:
    """Validate a ``max_message_bytes`` option (a positive int)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"max_message_bytes must be a positive int, got {value!r}")
    return value


def check_limit(limit: object) -> int | None:
    """Validate ``get_history``'s ``limit`` (None or an int >= 0)."""
    return _check_limit(limit)


def check_timeout(timeout: object) -> float:
    """Validate a store's ``timeout`` option (seconds, a finite number > 0)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout < float("inf")
    ):
        raise InvalidArgument(f"timeout must be a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def check_tokens(input_tokens: object, output_tokens: object) -> tuple[int, int]:
    """Both token counts as signed 64-bit ints, or :class:`InvalidArgument` (before I/O)."""
    return _check_int64("input_tokens", input_tokens), _check_int64("output_tokens", output_tokens)


def check_replace_args(upto: object, expected_generation: object, messages: object) -> None:
    """``replace_prefix``'s argument checks, in the order every store makes them."""
    _check_upto(upto)
    _check_int64("expected_generation", expected_generation)
    _check_batch(messages)


def encode_payload(message: object, max_bytes: int, path: str = "message") -> bytes:
    """The stored form of one message: its JSON bytes. Raises :class:`InvalidMessage` for a
    non-``Message`` (exact type; subclasses would not decode back as themselves) or a message
    that no longer encodes, and :class:`MessageTooLarge` over ``max_bytes``."""
    if type(message) is not Message:
        raise InvalidMessage(f"expected a ctxtrim.Message, got {type(message).__name__}", path)
    try:
        data = _ENCODE(message)
    except Exception as e:  # mutated dict holding a set, a lone surrogate, ...
        raise InvalidMessage(f"message does not encode as JSON: {e}", path) from None
    if len(data) > max_bytes:
        raise MessageTooLarge(
            f"encoded message is {len(data)} bytes, over the cap of {max_bytes}", path
        )
    # What is stored must be what comes back. A message is checked at construction, but its
    # dicts are the caller's objects: a set or NaN put in later would encode as a list or
    # null and come back changed. One decode (C speed, ~the cost of the encode) proves it.
    try:
        same = _DECODE(data) == message
    except Exception:
        same = False
    if not same:
        raise InvalidMessage(
            "message does not survive a JSON round trip (a dict in it was changed after "
            "construction to hold a non-JSON value)",
            path,
        )
    return data


def check_messages(messages: Iterable[object], max_bytes: int) -> list[bytes]:
    """Encode every message of a batch, or raise naming ``messages[i]`` (nothing stored)."""
    _check_batch(messages)
    return [encode_payload(m, max_bytes, f"messages[{i}]") for i, m in enumerate(messages)]


def payload_checksum(data: bytes) -> int:
    """CRC-32 of a payload (stored beside it; checked on every read)."""
    return zlib.crc32(data)


def decode_payload(
    data: bytes, *, session_id: str, seq: int, checksum: int | None = None
) -> Message:
    """Decode one stored row; raise :class:`CorruptRecordError` naming the row if its
    checksum does not match or it does not decode as a valid message."""
    if checksum is not None and zlib.crc32(data) != checksum:
        raise CorruptRecordError(
            f"session {session_id!r} message {seq}: checksum mismatch (torn or altered row)",
            session_id,
            seq,
        )
    try:
        return Message.decode(data)
    except Exception as e:
        raise CorruptRecordError(
            f"session {session_id!r} message {seq} does not decode: {e}", session_id, seq
        ) from e


def token_counts(messages: Sequence[Message], counter: TokenCounter | None) -> list[int]:
    """Per-message token counts stored with each row, so a loaded history is never
    recounted: the exact ``counter`` when given, else the core's estimate."""
    if counter is None:
        return [_core.message_tokens(m) for m in messages]
    return [counter.count_message(m) for m in messages]


def preview(history: Iterable[Message]) -> str:
    """What ``list_sessions`` shows: the first user text, cut to 80 characters. Consumes
    ``history`` lazily, so a backend can feed it decoded rows one at a time."""
    return _preview(history)


class LogCache:
    """The log a store last read, so that trimming a session every turn reads only the rows
    appended since (O(new), not O(history)).

    A backend reads ``(generation, since, messages, counts, mark)``: the rows from position
    ``since`` (``None``: the whole history) of ``generation``, and ``mark``, where the next
    read starts. Rows only ever get appended within a generation, and everything else
    (clear, compaction, a removed turn) moves the generation, so a read that continues the
    cached log from its own mark in its own generation extends it; any other read replaces
    it. Two loads that raced leave the second's read not continuing the cache: it is read
    again whole (rare, always correct).
    """

    __slots__ = ("_generation", "_log", "_mark")

    def __init__(self) -> None:
        self._generation: int | None = None
        self._log: _core.MessageLog | None = None
        self._mark: int | None = None

    def start(self) -> tuple[int | None, int | None]:
        """``(generation, mark)`` to read from: what the cached log holds."""
        return (self._generation, self._mark) if self._log is not None else (None, None)

    def load(
        self,
        generation: int,
        since: int | None,
        messages: Sequence[Message],
        counts: Sequence[int],
        mark: int,
    ) -> _core.MessageLog | None:
        """The log after that read, or ``None`` if the read does not continue the cache."""
        log = self._log
        if since is None:
            # A whole history is read as a rewrite reads it (what the memory store's
            # ``replace_prefix`` does): a caller-given turn id below the turn before it, which
            # only a ``replace_prefix`` can have stored, is numbered at that turn.
            log = _core.MessageLog()
            log.replace_prefix(0, messages, log.generation, tokens=list(counts))
        elif log is None or since != self._mark or generation != self._generation:
            return None
        else:
            try:
                log.extend(messages, tokens=list(counts))
            except InvalidTurnId:  # written by a ctxtrim that did not check turns: read whole
                return None
        self._log, self._generation, self._mark = log, generation, mark
        return log.snapshot()


LogRead = tuple[int, int | None, list[Message], list[int], int]


async def load_cached(
    cache: LogCache, read: Callable[[int | None, int | None], Awaitable[LogRead]]
) -> _core.MessageLog:
    """The session's log through ``cache``: ``read(generation, mark)`` reads what follows
    ``mark`` if the session is still in ``generation`` (else the whole history)."""
    log = cache.load(*await read(*cache.start()))
    if log is None:
        log = cache.load(*await read(None, None))
    assert log is not None  # a whole read always replaces the cache
    return log


#: How often an append carrying caller-given turn ids re-checks them when the session
#: changed between the check and the write, before giving up with a ``StoreError``.
TURN_ATTEMPTS = 8


def turns_kept_moving(session_id: str) -> StoreError:
    return StoreError(
        f"session {session_id!r} kept changing while its turn ids were checked"
        f" ({TURN_ATTEMPTS} attempts); nothing was appended"
    )


async def turn_guard(
    log: Callable[[], Awaitable[_core.MessageLog]], cache: LogCache, messages: Sequence[Message]
) -> tuple[int, int] | None:
    """The one turn rule of every store, for a persistent store's append.

    ``None`` if no message carries a caller-given turn id (nothing to check). Otherwise the
    session's log is read (``log()``, the store's cached ``load_log``), the batch is checked
    against the turn it is at exactly as the memory store's log checks an append (an id
    lower than the current turn, or than an earlier id of the batch, raises
    :class:`~ctxtrim.errors.InvalidTurnId` with the core's message), and the
    ``(generation, mark)`` the check was made at is returned: the write must store the batch
    only if the session is still there (same generation, same length), inside the write's
    own transaction or script, and write nothing otherwise (the caller checks again).
    """
    if all(m.turn is None for m in messages):
        return None
    current = await log()
    generation, mark = cache.start()
    assert generation is not None and mark is not None  # a load always fills the cache
    current.fork().extend(messages, tokens=[0] * len(messages))  # raises InvalidTurnId
    return generation, mark
