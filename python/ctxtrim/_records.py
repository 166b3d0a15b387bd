"""The public records ctxtrim hands back, as dataclasses, defined on first use.

:class:`TrimReport` (a strategy's ``describe`` / ``report=True``), :class:`TrimEvent` (what
an :mod:`ctxtrim.observe` listener is told), :class:`Violation` (what ``validate`` finds),
:class:`SessionInfo` (``list_sessions``) and :class:`Spec` (a row of
``ctxtrim.provider.SPECS``). They are dataclasses because users rely on it:
``dataclasses.asdict(report)`` is the documented way to a JSON-ready dict, and ``replace``
works on each of them.

They live here, not in the modules that document them, because ``dataclasses`` imports
``inspect`` (with ``ast``, ``dis``, ``tokenize``) and every dataclass compiles its generated
methods when its class is made: about two thirds of what ``import ctxtrim`` added to
msgspec's import (CPython 3.11: 58 of 90 million instructions), for records a process that
only trims never makes. Nothing imports this module at ``import ctxtrim``; each home module
(``ctxtrim.strategies``, ``ctxtrim.observe``, ``ctxtrim.validate``, ``ctxtrim.store``,
``ctxtrim.provider``) resolves its record on first use through its module ``__getattr__``,
and imports it inside the functions that make one.

Invariants: each record's ``__module__`` is its home module, so its name, its ``repr``, a
pickle of it and ``typing.get_type_hints`` (which resolves the annotations in that
module's namespace) are what they were when it was defined there; ``from ctxtrim.strategies
import TrimReport`` and ``ctxtrim.TrimReport`` are this one class. This module is imported
only after its home modules (``import ctxtrim`` loads them all), which ``dataclasses``
looks up by ``__module__`` while it makes each class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxtrim.provider import Level, Pair, Price, Side

__all__ = ["SessionInfo", "Spec", "TrimEvent", "TrimReport", "Violation"]


@dataclass(frozen=True, slots=True)
class TrimReport:
    """What applying a strategy to a history drops or changes (``strategy.describe``).

    ``dropped`` and ``changed`` are input indices (``changed``: kept but rewritten in place,
    e.g. a clipped tool result); ``dropped_messages`` and ``changed_messages`` are their
    sizes; ``inserted`` counts messages the strategy made (a placeholder);
    ``dropped_turns`` counts the real user messages (turn starts) dropped;
    ``dropped_compacted`` counts the dropped messages that a provider's compaction (an
    Anthropic ``compaction`` block, a Responses ``compaction`` item) already summarised: those
    before the newest one, which a trimming window drops first. ``over_budget``
    is true when a token budget applies and even the minimum a strategy keeps (the pinned
    head plus the newest round) is over it. ``over_count`` is how many messages a count
    strategy keeps past its count, besides the pinned head, because no window that keeps
    fewer is valid: ``KeepLastMessages(n)`` past ``n`` messages (the newest round alone is
    longer, or a tool call's result reaches back past the cut), ``KeepLastTurns(n)`` /
    ``TrimRounds(n)`` the messages before the n-th last turn or round (a result in it
    answers a call made before it). Plain fields, so ``dataclasses.asdict`` gives a
    JSON-ready dict.
    """

    __module__ = "ctxtrim.strategies"

    strategy: str
    messages_before: int
    messages_after: int
    dropped: tuple[int, ...]
    changed: tuple[int, ...]
    dropped_messages: int
    changed_messages: int
    inserted: int
    dropped_turns: int
    tokens_before: int
    tokens_after: int
    budget: int | None = None
    over_budget: bool = False
    dropped_compacted: int = 0
    over_count: int = 0

    @property
    def unchanged(self) -> bool:
        """True when applying the strategy returns the input list itself."""
        return not (self.dropped or self.changed or self.inserted)


@dataclass(frozen=True, slots=True)
class TrimEvent:
    """One strategy call: its :class:`~ctxtrim.TrimReport`, when it started (``time.time_ns``)
    and how long it took, in nanoseconds."""

    __module__ = "ctxtrim.observe"

    report: TrimReport
    start_ns: int
    duration_ns: int


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason a provider would reject the history.

    ``kind`` is one of ``"orphan_result"``, ``"result_before_call"``, ``"dangling_call"``,
    ``"duplicate_tool_use_id"``, ``"duplicate_result"``, ``"non_user_first_turn"``;
    ``index`` is the offending message; ``related_index`` the call (or first occurrence) it
    relates to, when there is one.
    """

    __module__ = "ctxtrim.validate"

    kind: str
    index: int
    tool_use_id: str | None
    related_index: int | None
    description: str

    def __str__(self) -> str:
        return self.description


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One stored session, as ``list_sessions`` reports it."""

    __module__ = "ctxtrim.store"

    session_id: str
    message_count: int
    preview: str
    created_at: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Spec:
    """One row: what ctxtrim knows of a provider block or item (see the module docstring
    of :mod:`ctxtrim.provider`)."""

    __module__ = "ctxtrim.provider"

    side: Side
    pair: Pair = ""
    id_key: str = ""
    level: Level = "part"
    price: Price = "json"
    opaque: tuple[str, ...] = ()
    compaction: bool = False
    partner: str = ""
