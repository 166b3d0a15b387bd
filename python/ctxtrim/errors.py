"""The exceptions ctxtrim raises.

Every error ctxtrim raises on purpose is a :class:`CtxtrimError`, so a caller can catch the
library's errors in one clause. ``CtxtrimError`` and ``StaleGenerationError`` are created in
the extension (PyO3 ``create_exception!``); errors about bad input are also
:class:`ValueError` (the Python convention), and a ``create_exception!`` class has one base
only, so those two are defined here on top of ``CtxtrimError``. The extension raises these
same classes, so there is one hierarchy.
"""

from __future__ import annotations

from ctxtrim._core import CtxtrimError, StaleGenerationError

__all__ = [
    "CompactionError",
    "CompactionSettingsError",
    "CorruptRecordError",
    "CtxtrimError",
    "InvalidMessage",
    "InvalidSessionId",
    "InvalidTurnId",
    "MessageTooLarge",
    "StaleGenerationError",
    "StoreError",
    "stale_generation_error",
]


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


class MessageTooLarge(InvalidMessage):
    """A message's encoded size is over the store's cap (``max_message_bytes``)."""


class InvalidSessionId(CtxtrimError, ValueError):
    """A session id is not a non-empty ``str`` of valid UTF-8 within the length cap."""


class StoreError(CtxtrimError):
    """A persistent store failed: I/O error, disk full, lock timeout, closed store, a
    database written by a newer ctxtrim. The operation changed nothing (its transaction
    was rolled back); the underlying driver error is the ``__cause__``."""


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
    refusal, e.g. a 400), ``"empty_summary"`` or ``"transport_error"`` (the transport raised
    something else). ``status_code`` is the HTTP status when there was one. The original
    exception is chained as ``__cause__``.
    """

    def __init__(
        self, message: str, *, kind: str = "transport_error", status_code: int | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code


class CompactionSettingsError(CtxtrimError, ValueError):
    """A compaction setting is out of range (``keep_recent=-1``, ``threshold=1.5``, an
    empty model name...); the message names the setting and the value."""


def stale_generation_error(expected: int, actual: int) -> StaleGenerationError:
    """The error a store raises when ``replace_prefix`` meets a newer generation."""
    err = StaleGenerationError(
        f"stale generation: expected {expected}, the history is at generation {actual}"
    )
    err.expected = expected
    err.actual = actual
    return err
