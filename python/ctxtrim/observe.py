"""Watching what trimming does: a log line per call, and listeners (OpenTelemetry's among them).

Every strategy call made from outside (``strategy(messages)``, ``strategy.apply(...)``; the
steps of a :class:`~ctxtrim.Pipeline` are one call) and every compaction attempt of an
:class:`~ctxtrim.AutoCompactStore` is reported, when someone watches:

* to the ``ctxtrim.trim`` logger, one DEBUG line with the numbers (messages and tokens before
  and after, what was dropped or changed, over budget, how long it took) and never message
  content. Compactions keep logging to ``ctxtrim.compaction`` as they did;
* to each listener added with :func:`add_listener`, as a :class:`TrimEvent` or a
  :class:`~ctxtrim.compaction.CompactionEvent`.
  :func:`ctxtrim.integrations.opentelemetry.instrument` is such a listener.

Invariant: **unwatched, it costs one flag test.** :data:`state` says whether anyone watches:
a listener is registered, or the ``ctxtrim.trim`` logger is enabled for DEBUG. The logger
check is not made per call; it is remade whenever the logging configuration changes, which
the standard library signals by clearing each logger's level cache (``setLevel`` anywhere,
``logging.disable``, ``dictConfig``). A watched call runs with a report (its cost: the
report's pass over the history's cached counts), so turning watching on makes trims dearer
and leaves them the same; a listener that raises is logged and does not fail the trim.

``import ctxtrim`` does not import :mod:`logging` (``import ctxtrim`` stays light): when
logging is already loaded the logger is made and hooked at import, as before; otherwise
:data:`state` says "watching" until the first strategy call (or the first use of
:data:`logger` or :func:`add_listener`) makes and hooks the logger, then says what is true.
Nobody can have configured the ``ctxtrim.trim`` logger before logging was imported, and any
change after the hook clears the cache it watches, so the flag is never wrong once a call
has read it. A call that finds the flag set asks :func:`watching`, which makes the logger
first if it is not made yet, so the first call of an unwatched process runs unwatched too
(no report, and no :class:`TrimEvent`, whose dataclass is made on first use).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    # ``TrimEvent`` is a dataclass defined in ``ctxtrim._records`` (``import ctxtrim`` loads
    # no dataclasses), resolved on first use by the module ``__getattr__``.
    from ctxtrim._records import TrimEvent as TrimEvent
    from ctxtrim._records import TrimReport
    from ctxtrim.compaction import CompactionEvent

    logger: logging.Logger

__all__ = ["TrimEvent", "add_listener", "logger", "state"]


Listener = Callable[["TrimEvent | CompactionEvent"], Any]


class _State:
    """Whether anyone watches (``watching``), kept current without a per-call logger check."""

    __slots__ = ("listeners", "watching")

    def __init__(self) -> None:
        self.listeners: tuple[Listener, ...] = ()
        self.watching = True  # until the first refresh says otherwise

    def refresh(self) -> None:
        log = _logger()
        self.watching = bool(self.listeners) or log.isEnabledFor(_DEBUG)


#: The one flag the strategies test per call.
state = _State()

_DEBUG = 10  # logging.DEBUG, without importing logging to name it
_made: list[logging.Logger] = []  # the ``ctxtrim.trim`` logger, once made and hooked


def _logger() -> logging.Logger:
    """The ``ctxtrim.trim`` logger; the first call imports logging and hooks its level cache."""
    if _made:
        return _made[0]
    import logging

    log = logging.getLogger("ctxtrim.trim")
    _made.append(log)
    globals()["logger"] = log  # from now on a plain module attribute, as it was made before
    if isinstance(getattr(log, "_cache", None), dict):
        log._cache = _LevelCache()  # type: ignore[attr-defined]
        state.refresh()
    # else (a Python whose loggers keep no such cache): always watching, always correct.
    return log


class _LevelCache(dict[int, bool]):
    """The logger's own level cache, which tells :data:`state` when it is cleared: the
    standard library clears every logger's cache on any level or configuration change."""

    __slots__ = ()

    def clear(self) -> None:
        super().clear()
        state.refresh()


def __getattr__(name: str) -> Any:
    if name == "logger":
        return _logger()
    if name == "TrimEvent":
        from ctxtrim._records import TrimEvent

        globals()[name] = TrimEvent  # later lookups find it directly
        return TrimEvent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if "logging" in sys.modules:  # loaded anyway: hook now, and the flag is right from the start
    _logger()


def watching() -> bool:
    """Whether anyone watches, the logger made and hooked first if it is not yet: what a call
    that finds :data:`state` set asks before it pays for a report."""
    if not _made:
        _logger()
    return state.watching


def add_listener(listener: Listener) -> Callable[[], None]:
    """Call ``listener(event)`` after every trim and compaction; returns the function that
    removes it. Listeners run in the caller's thread, after the call, in the order added."""
    state.listeners = (*state.listeners, listener)
    state.refresh()

    def remove() -> None:
        state.listeners = tuple(x for x in state.listeners if x is not listener)
        state.refresh()

    return remove


def watched(call: Callable[[], tuple[Any, TrimReport]]) -> tuple[Any, TrimReport]:
    """Run ``call`` (a strategy's run with its report) and tell the watchers."""
    log = _logger()  # the first call of a process without logging makes it here
    start = time.time_ns()
    began = time.perf_counter_ns()
    out, report = call()
    from ctxtrim._records import TrimEvent

    event = TrimEvent(report, start, time.perf_counter_ns() - began)
    if log.isEnabledFor(_DEBUG):
        log.debug("%s", _line(event))
    _tell(event)
    return out, report


def compacted(event: CompactionEvent) -> None:
    """Tell the listeners of a compaction attempt (it logs on its own)."""
    if state.listeners:
        _tell(event)


def _tell(event: TrimEvent | CompactionEvent) -> None:
    for listener in state.listeners:
        try:
            listener(event)
        except Exception:
            _logger().exception("a ctxtrim listener failed on %r", type(event).__name__)


def _line(event: TrimEvent) -> str:
    r = event.report
    parts = [
        f"{r.strategy}: {r.messages_before} -> {r.messages_after} messages",
        f"~{r.tokens_before} -> ~{r.tokens_after} tokens",
    ]
    if r.budget is not None:
        parts.append(f"budget {r.budget}{' (over)' if r.over_budget else ''}")
    if r.dropped_messages:
        parts.append(f"dropped {r.dropped_messages} messages, {r.dropped_turns} turns")
    if r.changed_messages:
        parts.append(f"changed {r.changed_messages}")
    if r.inserted:
        parts.append(f"inserted {r.inserted}")
    parts.append(f"{event.duration_ns / 1000:.1f} us")
    return ", ".join(parts)
