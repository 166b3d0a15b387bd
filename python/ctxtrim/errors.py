"""The exceptions ctxtrim raises.

Every error ctxtrim raises on purpose is a :class:`CtxtrimError`, so a caller can catch the
library's errors in one clause. Errors about bad input are also :class:`ValueError` (the
Python convention), which is why the hierarchy lives here in Python rather than in the
extension: a class made with PyO3's ``create_exception!`` can only have one base. The Rust
bindings raise these same classes (``import_exception!``), so there is one hierarchy.
"""

from __future__ import annotations

__all__ = [
    "CtxtrimError",
    "InvalidMessage",
    "InvalidTurnId",
    "StaleGenerationError",
]


class CtxtrimError(Exception):
    """Base class of every error ctxtrim raises on purpose."""


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


class StaleGenerationError(CtxtrimError):
    """``replace_prefix`` was given a generation that is no longer current.

    The history was cleared, compacted or had a turn removed since the caller's snapshot, so
    the replacement was refused and nothing changed. Take a new snapshot and try again.
    """

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"stale generation: expected {expected}, the history is at generation {actual}"
        )
        self.expected = expected
        self.actual = actual
