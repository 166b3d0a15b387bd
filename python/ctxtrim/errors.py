"""The exceptions ctxtrim raises, every one of them defined here.

Every error ctxtrim raises on purpose is a :class:`CtxtrimError`, so a caller can catch the
library's errors in one clause; errors about bad input are also :class:`ValueError` (the
Python convention). The Rust extension defines no exception class: it raises these, looked
up in this module the first time one is needed (PyO3 ``import_exception!``). This module
imports nothing from the extension, so there is no import cycle. ``InvalidStrategy`` and
``FormatError`` are also importable from ``ctxtrim.strategies`` and ``ctxtrim.formats``.
"""

from __future__ import annotations

__all__ = [
    "CompactionError",
    "CompactionSettingsError",
    "CorruptRecordError",
    "CtxtrimError",
    "FormatError",
    "InvalidArgument",
    "InvalidMessage",
    "InvalidSessionId",
    "InvalidStrategy",
    "InvalidToolArguments",
    "InvalidTurnId",
    "MessageTooLarge",
    "NotJSONData",
    "OutcomeUnknownError",
    "StaleGenerationError",
    "StoreError",
    "TokenCountError",
    "UnknownModel",
    "stale_generation_error",
    "stale_length_error",
]


class CtxtrimError(Exception):
    """Base class of every error ctxtrim raises on purpose."""


class StaleGenerationError(CtxtrimError):
    """The history was rewritten (cleared, compacted, a turn removed) since the caller's
    snapshot — or, for a ``replace_prefix`` given ``expected_length``, appended to — so the
    rewrite was refused and nothing changed. ``expected`` and ``actual`` hold the two
    generations (-1 when unknown; equal when only the length moved)."""

    def __init__(self, message: str, expected: int = -1, actual: int = -1) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class InvalidMessage(CtxtrimError, ValueError):
    """A message (or block) is malformed; ``path`` names the offending field.

    ``path`` is a dotted/indexed path from the message, e.g. ``"content[2].input"``, or from
    a list of messages, e.g. ``"messages[3].content[0].tool_use_id"``. Raised at construction
    or at ``append``, never later, and nothing is stored when it is raised.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.reason = message


class InvalidTurnId(CtxtrimError, ValueError):
    """A turn id string is not of the form ``"u<number>"`` or ``"a<number>"``."""


class InvalidToolArguments(InvalidMessage):
    """A tool call's arguments text is not a JSON object (what a model cut off mid-call
    writes); the converters' ``raw_arguments=True`` keeps it as raw text instead."""


class NotJSONData(InvalidMessage, TypeError):
    """A value that must be JSON data is not (an arbitrary object, a set). Also a
    ``TypeError``, the error ``json.dumps`` raises for it, so code written for a store that
    serialises with ``json`` (openai-agents' ``SQLiteSession``) catches it unchanged."""


class MessageTooLarge(InvalidMessage):
    """A message's encoded size is over the store's cap (``max_message_bytes``)."""


class InvalidSessionId(CtxtrimError, ValueError):
    """A session id is not a non-empty ``str`` of valid UTF-8 within the length cap."""


class StoreError(CtxtrimError):
    """A persistent store failed: I/O error, disk full, lock timeout, closed store, a
    database written by a newer ctxtrim. The operation changed nothing (its transaction
    was rolled back); the underlying driver error is the ``__cause__``."""


class OutcomeUnknownError(CtxtrimError):
    """A write to a server store got no answer (connection lost, no reply within the
    store's ``timeout``) after the request may have reached the server: it may have been
    applied, or may still be applied later. Not a :class:`StoreError`, whose promise is that
    nothing changed. Only writes raise it (``append``, ``append_many``, ``clear``,
    ``replace_prefix``, ``fork``, the token setters, ``open``); reads raise ``StoreError``.
    Retrying an append is safe only on a store opened with ``idempotent_ids=True`` and
    messages that carry an ``id``; otherwise re-read the history before deciding.
    ``operation`` names the call; the driver's error is the ``__cause__``."""

    def __init__(self, message: str, operation: str = "") -> None:
        super().__init__(message)
        self.operation = operation


class InvalidArgument(CtxtrimError, ValueError):
    """A call got an argument of the wrong type or out of range: a store's (``upto`` past
    the end or not an int, ``expected_generation`` not an int, a token count outside the
    signed 64-bit range, a bad ``limit`` or ``timeout``), or an int past the range the
    compiled core takes (``MessageLog`` queries, ``cut_window``, ``cut_list``,
    ``TurnCounter``: ``"start must be an int from 0 to 18446744073709551615, got -1"``).
    Raised before any I/O or inside the write's transaction before it changes anything:
    nothing changed. The message reads ``"<name> must be <what>, got <value>"`` (or names
    the range it overflows)."""


class UnknownModel(InvalidArgument):
    """A model name the model table (:mod:`ctxtrim.models`) has no limits for: never
    guessed. ``model`` is the name asked for; the message names close table entries, or
    why a name the SDKs know is not listed, and says to ``ctxtrim.models.register`` it."""

    def __init__(self, message: str, model: str = "") -> None:
        super().__init__(message)
        self.model = model


class CorruptRecordError(StoreError):
    """A stored message fails its checksum or does not decode; ``session_id`` and ``seq``
    name the row. Never skipped silently."""

    def __init__(self, message: str, session_id: str = "", seq: int = -1) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.seq = seq


class CompactionError(CtxtrimError):
    """A summary for compaction could not be made; the history was not changed.

    ``kind`` says why, for callers that retry on some causes only: ``"timeout"``,
    ``"rate_limit"``, ``"server_error"``, ``"connection"``, ``"api_error"`` (any other
    refusal, e.g. a 400), ``"empty_summary"``, ``"transport_error"`` (the transport raised
    something else) or ``"hook_error"`` (``AutoCompactStore``'s ``after_compaction`` raised
    or returned something that is not a pair-complete list of messages). ``status_code``
    is the HTTP status when there was one. The original exception is chained as
    ``__cause__``.
    """

    def __init__(
        self, message: str, *, kind: str = "transport_error", status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code


class InvalidStrategy(CtxtrimError, ValueError):
    """A strategy was configured with a value it cannot work with (named in the message)."""


class FormatError(CtxtrimError, ValueError):
    """An unknown format name, a payload whose format cannot be detected, or text that is
    neither JSON nor JSON Lines."""


class CompactionSettingsError(CtxtrimError, ValueError):
    """A compaction setting is out of range (``keep_recent=-1``, ``threshold=1.5``, an
    empty model name...); the message names the setting and the value."""


class TokenCountError(CtxtrimError):
    """A token count could not be had from a provider's counting endpoint
    (:class:`~ctxtrim.tokens.AnthropicTokenCounter`): the API refused the request or could
    not be reached, answered something that is not a count, or a message was asked for
    that was never counted. ``status_code`` is the HTTP status when there was one; the
    SDK's exception is chained as ``__cause__``."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


def stale_generation_error(expected: int, actual: int) -> StaleGenerationError:
    """The error a store raises when ``replace_prefix`` meets a newer generation."""
    return StaleGenerationError(
        f"stale generation: expected {expected}, the history is at generation {actual}",
        expected,
        actual,
    )


def stale_length_error(generation: int, expected: int, actual: int) -> StaleGenerationError:
    """The error a store raises when ``replace_prefix(..., expected_length=n)`` meets a
    history of another length in the expected generation (it was appended to meanwhile).
    The same text as the core's."""
    return StaleGenerationError(
        f"stale length: expected {expected} messages, but the history holds {actual}"
        " (it was appended to meanwhile)",
        generation,
        generation,
    )
