"""Trimming strategies: turn a history into one that fits, without breaking a tool pair.

A strategy is called on a history (``strategy(messages)``) and returns the history to send.
Every shipped strategy is:

- **synchronous and pure** — it reads its input and returns a new list; nothing is mutated,
  and the result depends on the input alone (``describe`` reports what a call would do):
  what a strategy keeps between calls (a cut strategy's ``Tail``, a clearing strategy's
  memo, ``ctxtrim._memo``) only spares it re-reading a history it has read;
- **pair-safe** — cuts fall only on indices where no tool use before the cut has its result
  at or after it, so the output never holds an orphaned result or a call cut from its
  result (a call still waiting for its result at the very end stays as it was);
- **head-pinning** — leading system messages and, with ``pin_task=True`` (the default), the
  first real user message (the task) are always kept, even when an assistant spoke first;
- **user-first** — with ``start_with_user=True`` (the default) the first message after the
  system prompt is a user message (Anthropic and Gemini reject anything else);
- **idempotent** — applying it to its own output changes nothing;
- **identity-preserving** — when nothing changes, the *same list object* comes back, so an
  agent loop can skip work with ``out is messages``.

The cut strategies (``FitContextWindow``, ``KeepLastTurns``, ``TrimRounds``,
``KeepLastMessages``) are decided in one call into the Rust core: on a plain list it reads
the head and the window from the end only; on a :class:`~ctxtrim.MessageLog` or store it uses
the log's index. Every message's facts (tokens, role, tool ids) are read once and kept on it.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

from ctxtrim import _core
from ctxtrim import observe as _observe
from ctxtrim._text import clip_text
from ctxtrim.dicts import Payload, ProviderPayload, is_payload
from ctxtrim.errors import InvalidMessage, InvalidStrategy
from ctxtrim.messages import Message
from ctxtrim.store import MemoryContextStore
from ctxtrim.tokens import TokenCounter, as_token_counter, tool_tokens

if TYPE_CHECKING:
    import threading  # (annotations only: ``import ctxtrim`` does not load threading)

    # Defined in ``ctxtrim._records`` (a dataclass: ``import ctxtrim`` loads no dataclasses)
    # and resolved on first use by the module ``__getattr__`` at the end.
    from ctxtrim._records import TrimReport as TrimReport
    from ctxtrim.formats._common import CutRule

__all__ = [
    "SKIPPED_META_KEY",
    "CacheStable",
    "ContextStrategy",
    "FitContextWindow",
    "HeadAndTail",
    "InvalidStrategy",
    "KeepLastMessages",
    "KeepLastTurns",
    "Pipeline",
    "Source",
    "TrimReport",
    "TrimRounds",
    "clip_text",
]

#: What a strategy accepts: a history, a log with cached token counts, or a memory store.
Source: TypeAlias = Sequence[Message] | _core.MessageLog | MemoryContextStore


# ============================================================================================
# Internal plumbing: the input as a log, the pinned head, the outcome of one strategy


def _count(counter: TokenCounter | None, message: Message) -> int:
    # Cached on the message: the estimate once per message, a counter's count once per counter.
    return _core.message_tokens(message, counter=counter)


class _Input:
    """A history with its log (cached token counts, cut index) and the caller's list.

    From a log or store the full list is materialised only when a strategy needs it (an
    unchanged result, in-place edits, a report): a cut keeps only what it returns.
    """

    __slots__ = ("_counts", "_messages", "counter", "log", "n")

    def __init__(
        self,
        messages: list[Message] | None,
        log: _core.MessageLog,
        counter: TokenCounter | None,
    ) -> None:
        self._messages = messages  # the caller's list itself when given a list
        self.log = log
        self.n = len(log)
        self.counter = counter
        self._counts: list[int] | None = None

    @property
    def messages(self) -> list[Message]:
        if self._messages is None:
            self._messages = self.log.to_list()
        return self._messages

    def slice(self, start: int, end: int) -> list[Message]:
        if self._messages is None:
            return self.log.to_list(start, end)
        return self._messages[start:end]

    def role(self, i: int) -> str:
        return (self.log[i] if self._messages is None else self._messages[i]).role

    @classmethod
    def of(cls, source: object, counter: TokenCounter | None) -> _Input:
        if isinstance(source, _core.MessageLog):
            return cls(None, source.snapshot(), counter)
        if isinstance(source, MemoryContextStore):
            return cls(None, source.log.snapshot(), counter)
        if isinstance(source, (str, bytes)) or not isinstance(source, Sequence):
            raise TypeError(
                "a strategy takes a sequence of Message, a MessageLog or a MemoryContextStore "
                f"(use `await store.load_log()` for other stores), got {type(source).__name__}"
            )
        messages = source if isinstance(source, list) else list(source)
        tokens = None if counter is None else [_count(counter, m) for m in messages]
        return cls(messages, _core.MessageLog(messages, tokens=tokens), counter)

    def counts(self) -> list[int]:
        if self._counts is None:
            self._counts = self.log.token_counts()
        return self._counts

    def count(self, message: Message) -> int:
        return _count(self.counter, message)


# The two private records below are plain slotted classes, not dataclasses: a dataclass
# is built at import by generating and compiling its methods, which ``import ctxtrim`` paid
# for records no user sees (the public reports stay dataclasses, made on first use).
class _Head:
    """The pinned head: ``ranges`` are always kept; the kept suffix starts at ``floor`` or
    later; ``has_user`` says whether the head already puts a user message first."""

    __slots__ = ("floor", "has_user", "ranges")

    def __init__(self, ranges: tuple[tuple[int, int], ...], floor: int, has_user: bool) -> None:
        self.ranges = ranges
        self.floor = floor
        self.has_user = has_user

    def tokens(self, log: _core.MessageLog) -> int:
        return sum(log.tokens(a, b) for a, b in self.ranges)


def _pinned_head(inp: _Input, pin_task: bool) -> _Head:
    """Leading system messages, plus the task (the first real user message) if pinned.

    The task is pinned on its own (an assistant greeting before it is droppable) unless it
    answers tool calls made before it: then everything up to the task is kept, since
    keeping a result without its call would break the pair (the core decides, O(log n)).
    """
    system_end, task, floor, contiguous = inp.log.pinned_head(pin_task)
    if task is None:
        return _Head(((0, system_end),) if system_end else (), floor, False)
    if contiguous:
        return _Head(((0, floor),), floor, True)
    ranges = ((0, system_end), (task, task + 1)) if system_end else ((task, task + 1),)
    return _Head(ranges, floor, True)


class _Outcome:
    """A strategy's result: output messages with the input index each came from (``None``
    for a message the strategy made, e.g. a placeholder), the input indices rewritten in
    place, and budget facts."""

    __slots__ = ("budget", "changed", "messages", "origin", "over_budget", "over_count")

    def __init__(
        self,
        messages: list[Message],
        origin: list[int | None],
        changed: set[int] | None = None,
        budget: int | None = None,
        over_budget: bool = False,
        over_count: int = 0,
    ) -> None:
        self.messages = messages
        self.origin = origin
        self.changed: set[int] = set() if changed is None else changed
        self.budget = budget
        self.over_budget = over_budget
        self.over_count = over_count


def _unchanged(inp: _Input) -> _Outcome:
    return _Outcome(inp.messages, list(range(inp.n)))


def _cut_outcome(inp: _Input, head: _Head, cut: int, over_budget: bool = False) -> _Outcome:
    """Keep the head ranges and ``messages[cut:]``."""
    kept: list[int | None] = []
    for a, b in head.ranges:
        kept.extend(range(a, b))
    start = max(cut, head.floor)
    kept.extend(range(start, inp.n))
    if len(kept) == inp.n:
        out = _unchanged(inp)
        out.over_budget = over_budget
        return out
    msgs: list[Message] = []
    for a, b in head.ranges:
        msgs.extend(inp.slice(a, b))
    msgs.extend(inp.slice(start, inp.n))
    return _Outcome(msgs, kept, over_budget=over_budget)


def _finish(out: _Outcome) -> list[Message]:
    # Unchanged outcomes carry the input list itself: the caller's list when given one.
    return out.messages


def _report(name: str, inp: _Input, out: _Outcome) -> TrimReport:
    from ctxtrim._records import TrimReport

    n = inp.n
    kept = {i for i in out.origin if i is not None}
    dropped = tuple(i for i in range(n) if i not in kept)
    msgs = inp.messages
    counts = inp.counts() if (out.changed or len(kept) < n) else None
    tokens_before = inp.log.total_tokens
    if counts is None:
        tokens_after = tokens_before
    else:
        tokens_after = 0
        for m, o in zip(out.messages, out.origin, strict=True):
            tokens_after += counts[o] if (o is not None and o not in out.changed) else inp.count(m)
    return TrimReport(
        strategy=name,
        messages_before=n,
        messages_after=len(out.messages),
        dropped=dropped,
        changed=tuple(sorted(out.changed)),
        dropped_messages=len(dropped),
        changed_messages=len(out.changed),
        inserted=sum(1 for o in out.origin if o is None),
        dropped_turns=sum(1 for i in dropped if msgs[i].is_real_user),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        budget=out.budget,
        over_budget=out.over_budget,
        dropped_compacted=_dropped_before(dropped, inp.log.newest_compaction),
        over_count=out.over_count,
    )


def _dropped_before(dropped: tuple[int, ...], end: int | None) -> int:
    """How many of the ``dropped`` indices (ascending) are below ``end`` (none for None)."""
    if end is None:
        return 0
    import bisect  # here: only a report needs it

    return bisect.bisect_left(dropped, end)


# ============================================================================================
# The base class


class ContextStrategy(ABC):  # noqa: B024 (abstract by intent: subclasses override compact)
    """Base of every strategy: ``strategy(messages)``, ``apply(source)``, ``describe(...)``.

    **Writing your own**: subclass and override :meth:`compact` (a plain list in, a list
    out; return the input list itself when nothing changes). Nothing private to implement;
    the subclass then works everywhere a shipped strategy does — called directly, in
    :class:`Pipeline` and :class:`CacheStable`, with ``apply(log_or_store)`` and
    ``describe`` (which reports an output message that is an input object as kept, and any
    other as inserted). Keep the output pair-safe (:func:`ctxtrim.validate` checks a
    history): a custom strategy is trusted, not checked on every call.

    ``counter`` (when a strategy has one) counts the tokens of a plain list; a
    ``MessageLog`` or store brings its own cached counts.
    """

    counter: TokenCounter | None = None

    def compact(self, messages: list[Message]) -> list[Message]:
        """The trimmed history; ``messages`` itself if nothing changed. Override this in a
        custom strategy; the shipped strategies implement it as :meth:`apply`."""
        return self.apply(messages)

    def _run(self, inp: _Input) -> _Outcome:
        # The shipped strategies override this (the core path); a custom one runs `compact`.
        if type(self).compact is ContextStrategy.compact:
            raise NotImplementedError(f"{type(self).__name__} must override compact()")
        messages = inp.messages
        out = self.compact(messages)
        if out is messages:
            return _unchanged(inp)
        if not isinstance(out, list) or not all(type(m) is Message for m in out):
            raise InvalidStrategy(
                f"{type(self).__name__}.compact must return a list of ctxtrim.Message"
            )
        where = {id(m): i for i, m in enumerate(messages)}
        return _Outcome(out, [where.get(id(m)) for m in out])

    @overload
    def __call__(self, messages: Sequence[Message]) -> list[Message]: ...
    @overload
    def __call__(self, messages: ProviderPayload, *, format: str = "auto") -> Any: ...
    def __call__(
        self, messages: Sequence[Message] | ProviderPayload, *, format: str = "auto"
    ) -> Any:
        """The trimmed history; ``messages`` itself (same object) if nothing changed. Provider
        dicts (a Chat, Responses or Anthropic list or request body) are read as ``format``
        (detected by default; naming it skips the detection's pass) and come back in their
        own format and shape (:mod:`ctxtrim.dicts`)."""
        return self.apply(messages, format=format)

    @overload
    def apply(
        self, source: Source, *, report: Literal[False] = False, format: str = "auto"
    ) -> list[Message]: ...
    @overload
    def apply(
        self, source: Source, *, report: Literal[True], format: str = "auto"
    ) -> tuple[list[Message], TrimReport]: ...
    @overload
    def apply(
        self, source: ProviderPayload, *, report: bool = False, format: str = "auto"
    ) -> Any: ...
    def apply(
        self, source: Source | ProviderPayload, *, report: bool = False, format: str = "auto"
    ) -> Any:
        """Apply to a list, a ``MessageLog`` (e.g. ``await store.load_log()``) or a
        ``MemoryContextStore``; the latter two use the cached per-message token counts.
        Provider dicts are read as ``format`` (detected by default) and the result written
        back in it; a report's indices then count the payload's entries.

        With ``report=True``, return ``(messages, report)``: the result and the
        :meth:`describe` report of the same run (the strategy runs once). Watched calls
        (:mod:`ctxtrim.observe`) are logged and told to listeners."""
        if _observe.state.watching and _observe.watching():
            out, rep = _observe.watched(lambda: self._apply(source, True, format))
            return (out, rep) if report else out
        if type(source) is MemoryContextStore and not report:
            fast = self._on_store(source)
            if fast is not None:
                return fast
        return self._apply(source, report, format)

    def apply_json(self, source: Source, format: str) -> bytes:
        """The trimmed history as ``format``'s request JSON (``"openai"``, ``"responses"``,
        ``"anthropic"``, ``"gemini"``, ``"ctxtrim"``, or an alias): the bytes
        ``formats.dump_json(self.apply(source), format)`` gives, the request a server posts.

        A cut strategy (``FitContextWindow``, ``KeepLastTurns``, ...) on a
        ``MemoryContextStore`` or a ``MessageLog`` writes the Chat Completions, Responses and
        Anthropic requests from the one it wrote last of that log: the messages both windows
        hold are copied from it, not read again (a session out of the CPU's caches costs
        what its new messages cost)."""
        from ctxtrim import formats

        return formats.dump_json(self.apply(source), format)

    def _apply(self, source: Source | ProviderPayload, report: bool, format: str) -> Any:
        if is_payload(source):
            return self._apply_payload(Payload(source, format), report)
        if not report:
            fast = self._apply_fast(source)  # type: ignore[arg-type]  # not a payload
            if fast is not None:
                return fast
        inp = _Input.of(source, self.counter)
        out = self._run(inp)
        if report:
            return _finish(out), _report(repr(self), inp, out)
        return _finish(out)

    def _apply_payload(self, payload: Payload, report: bool) -> Any:
        if not report:
            return payload.write(self._apply(payload.messages, False, "auto"))
        out, rep = self._apply(payload.messages, True, "auto")
        return payload.write(out), payload.report(rep, out)

    def _apply_fast(self, source: Source) -> list[Message] | None:
        """The result without building a report, if this strategy has a shortcut for
        ``source``; else None."""
        return None

    def _on_store(self, store: MemoryContextStore) -> list[Message] | None:
        """``apply(store)``'s result (unwatched, no report) in one step, if this strategy
        has one; else None (the generic path runs)."""
        return None

    #: Whether :meth:`_private` answers for a list, a ``MessageLog`` and a memory store, so
    #: that a :class:`Pipeline` of such steps takes the fast path (see its ``_private``).
    _chains = False

    def _locks(self) -> tuple[threading.Lock, ...]:
        """The locks :meth:`_private`'s caller holds (a memo's: see ``ctxtrim._memo``)."""
        return ()

    def _private(self, source: object) -> tuple[list[Message], Any] | None:
        """:meth:`_apply_fast`'s result before it is handed to a caller, who holds
        :meth:`_locks`: ``(result, memo)``, where ``memo`` is None when the result is the
        caller's (or a new) list, else the strategy's memo whose own list it is
        (``ctxtrim._memo``), which a ``Pipeline`` may read but must hand out through the
        memo. None: no shortcut for ``source``."""
        out = self._apply_fast(source)  # type: ignore[arg-type]  # the caller checked it
        return None if out is None else (out, None)

    def describe(self, source: Source | ProviderPayload, *, format: str = "auto") -> TrimReport:
        """What applying the strategy to ``source`` would drop or change; changes nothing."""
        if is_payload(source):
            report: TrimReport = self._apply_payload(Payload(source, format), True)[1]
            return report
        inp = _Input.of(source, self.counter)
        return _report(repr(self), inp, self._run(inp))


#: Per format name as callers write it, how a log writes its request of a cut strategy's
#: window (``formats.log_writer``), or None; filled on first use (``import ctxtrim`` does not
#: import the formats).
_LOG_JSON: dict[str, Callable[[_core.MessageLog, CutRule], bytes] | None] = {}


def _log_writer(format: str) -> Callable[[_core.MessageLog, CutRule], bytes] | None:
    from ctxtrim import formats

    write = formats.log_writer(format)  # FormatError for an unknown format
    _LOG_JSON[format] = write
    return write


#: The largest count or budget a strategy takes: the core keeps them as 64-bit integers.
_MAX_INT = 2**63 - 1


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidStrategy(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise InvalidStrategy(f"{name} must be >= {minimum}, got {value}")
    if value > _MAX_INT:
        raise InvalidStrategy(f"{name} must be <= {_MAX_INT} (a 64-bit int), got {value}")
    return value


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidStrategy(f"{name} must be a bool, got {type(value).__name__}")
    return value


class _CutStrategy(ContextStrategy):
    """Shared options of the strategies that drop a prefix."""

    def __init__(self, *, pin_task: bool, start_with_user: bool) -> None:
        self.pin_task = _check_bool("pin_task", pin_task)
        self.start_with_user = _check_bool("start_with_user", start_with_user)

    def _options(self) -> str:
        opts = []
        if not self.pin_task:
            opts.append("pin_task=False")
        if not self.start_with_user:
            opts.append("start_with_user=False")
        return "".join(", " + o for o in opts)


class _CoreCut(_CutStrategy):
    """A cut strategy the core decides in one call (all but :class:`HeadAndTail`)."""

    _chains = True

    #: The core's name for the cut rule (``"budget"``, ``"turns"``, ``"rounds"``,
    #: ``"messages"``) and the attribute holding its budget or count.
    _rule: Literal["budget", "turns", "rounds", "messages"]
    _value: str
    #: What this strategy keeps of the list it was last called on (its head and its end,
    #: about the window): the next call on that list, grown by a few messages, reads only
    #: those and checks the rest by identity. It holds about the last window's messages.
    _tail: _core.Tail

    def __init__(self, *, pin_task: bool, start_with_user: bool) -> None:
        super().__init__(pin_task=pin_task, start_with_user=start_with_user)
        self._tail = _core.Tail()

    def _window(
        self, source: Sequence[Message] | _core.MessageLog
    ) -> tuple[list[tuple[int, int]], bool, bool]:
        """``(ranges, unchanged, over_budget)``: one call into the core decides the window. A
        list is read from its ends only, as far back as the decision needs."""
        return _core.cut_window(
            source,
            self._rule,
            getattr(self, self._value),
            pin_task=self.pin_task,
            start_with_user=self.start_with_user,
            counter=self.counter,
        )

    @overload
    def __call__(self, messages: Sequence[Message]) -> list[Message]: ...
    @overload
    def __call__(self, messages: ProviderPayload, *, format: str = "auto") -> Any: ...
    def __call__(
        self, messages: Sequence[Message] | ProviderPayload, *, format: str = "auto"
    ) -> Any:
        """The trimmed history; ``messages`` itself (same object) if nothing changed."""
        # An agent's own list, unwatched: one call into the core.
        if type(messages) is list and not _observe.state.watching:
            try:
                return _core.cut_list(
                    messages,  # type: ignore[arg-type]  # a payload raises: handled below
                    self._rule,
                    getattr(self, self._value),
                    self.pin_task,
                    self.start_with_user,
                    self.counter,
                    self._tail,
                )
            except InvalidMessage:
                if not is_payload(messages):  # provider dicts: checked after, costs nothing
                    raise
        return self.apply(messages, format=format)

    def _on_store(self, store: MemoryContextStore) -> list[Message] | None:
        # A server turn's call goes straight to the core: the generic path's frames cost as
        # much as the core's decision on a turn (so does the `log` property's).
        return _core.cut_log(store._log, *self._cut_rule())[0]

    def apply_json(self, source: Source, format: str) -> bytes:
        if not _observe.state.watching:
            # `_log`, not the `log` property: a server turn's frames cost as much as the copy.
            log = source._log if type(source) is MemoryContextStore else source
            if type(log) is _core.MessageLog:
                write = _LOG_JSON[format] if format in _LOG_JSON else _log_writer(format)
                if write is not None:
                    return write(log, self._cut_rule())
        return super().apply_json(source, format)

    def _apply_fast(self, source: Source) -> list[Message] | None:
        # The hot path: a list (or a log or memory store) goes straight to the core, with no
        # per-call log or report built; reports, `describe` and `Pipeline` go through `_run`.
        if type(source) is list:
            return self(source)
        log = source.log if isinstance(source, MemoryContextStore) else source
        if isinstance(log, _core.MessageLog):
            return self._cut_log(log)
        return None

    def _cut_log(self, log: _core.MessageLog) -> list[Message]:
        # One call: the window of the log as it is now, whatever is written meanwhile.
        return _core.cut_log(log, *self._cut_rule())[0]

    def _cut_rule(self) -> CutRule:
        """The rule as the core's log cuts take it."""
        return (self._rule, getattr(self, self._value), self.pin_task, self.start_with_user)

    def _run(self, inp: _Input) -> _Outcome:
        ranges, unchanged, over = self._window(inp.log)
        if unchanged:
            out = _unchanged(inp)
        else:
            out = _Outcome(
                [m for a, b in ranges for m in inp.slice(a, b)],
                [i for a, b in ranges for i in range(a, b)],
            )
        out.over_budget = over
        if self._rule == "budget":
            out.budget = getattr(self, self._value)
        else:
            out.over_count = self._over_count(inp.log, ranges)
        return out

    def _over_count(self, log: _core.MessageLog, ranges: Sequence[tuple[int, int]]) -> int:
        """Messages kept past the count besides the pinned head (O(log n): ranges only)."""
        system_end, task, floor, contiguous = log.pinned_head(self.pin_task)
        if task is None:
            head: list[tuple[int, int]] = [(0, system_end)]
        elif contiguous:
            head = [(0, floor)]
        else:
            head = [(0, system_end), (task, task + 1)]

        def beyond_head(end: int) -> int:
            """Kept messages below ``end`` that are not in the head."""
            kept = sum(max(0, min(b, end) - a) for a, b in ranges)
            return kept - sum(max(0, min(b, end) - a) for a, b in head)

        count: int = getattr(self, self._value)
        if self._rule == "messages":
            return max(0, beyond_head(len(log)) - count)
        start = (
            log.kth_last_turn_start(count)
            if self._rule == "turns"
            else log.kth_last_round_start(count)
        )
        return 0 if start is None else beyond_head(max(start, floor))


# ============================================================================================
# Cut strategies


class KeepLastTurns(_CoreCut):
    """Keep the last ``n`` user turns (agent-air, agentflow), plus the pinned head.

    A turn starts at a real user message. If a turn start is not a safe cut (a tool result
    for an earlier call arrives after it), the cut moves back to the nearest safe one, so a
    turn is never kept without the call its first results answer.
    """

    def __init__(self, n: int, *, pin_task: bool = True, start_with_user: bool = True) -> None:
        super().__init__(pin_task=pin_task, start_with_user=start_with_user)
        self.n = _check_int("n", n, 1)

    _rule = "turns"
    _value = "n"

    def __repr__(self) -> str:
        return f"KeepLastTurns({self.n}{self._options()})"


class TrimRounds(_CoreCut):
    """Keep the last ``max_rounds`` rounds (agentix), plus the pinned head.

    A round starts at a real user message, or at an assistant message that follows tool
    results (or a system message); so a user question stays in the round of the tool calls
    it caused; agentix's ``TrimRounds`` puts it in the round before and drops it while keeping
    the call (tests/trimming/test_peer_bugs.py, ``test_4_8_*``).
    """

    def __init__(
        self, max_rounds: int, *, pin_task: bool = True, start_with_user: bool = True
    ) -> None:
        super().__init__(pin_task=pin_task, start_with_user=start_with_user)
        self.max_rounds = _check_int("max_rounds", max_rounds, 1)

    _rule = "rounds"
    _value = "max_rounds"

    def __repr__(self) -> str:
        return f"TrimRounds({self.max_rounds}{self._options()})"


class KeepLastMessages(_CoreCut):
    """Keep at most the last ``n`` messages besides the pinned head (autogen Buffered).

    The longest window with no more than ``n`` messages whose cut is pair-safe: the first
    safe cut at or after ``len - n``, so it keeps fewer than ``n`` rather than orphan a tool
    result. Only when the newest round alone (the question or tool step being answered) is
    longer does it keep more: that round, and ``describe`` reports ``over_count``, the
    messages kept past ``n``.
    """

    def __init__(self, n: int, *, pin_task: bool = True, start_with_user: bool = True) -> None:
        super().__init__(pin_task=pin_task, start_with_user=start_with_user)
        self.n = _check_int("n", n, 1)

    _rule = "messages"
    _value = "n"

    def __repr__(self) -> str:
        return f"KeepLastMessages({self.n}{self._options()})"


#: The ``meta`` key marking a :class:`HeadAndTail` placeholder (its value: messages skipped).
SKIPPED_META_KEY = "ctxtrim_skipped"


class HeadAndTail(_CutStrategy):
    """The first ``head`` and last ``tail`` messages, with a placeholder user message between
    them that states the true number of messages skipped (autogen's under-counts it:
    https://github.com/microsoft/autogen/pull/8070).

    Both ends move to safe cuts — the head's end backwards, the tail's start backwards
    (so the tail keeps a call with its results) — and the head always covers the pinned
    head. Run again on a longer history holding its own placeholder, it skips further
    messages after the placeholder and adds them to the count, so the count stays true.
    ``placeholder`` is formatted with ``skipped=<count>``. There is no ``start_with_user``
    option: the head is the conversation's own start, and the placeholder a user message.
    """

    def __init__(
        self,
        head: int,
        tail: int,
        *,
        placeholder: str = "[{skipped} earlier messages skipped]",
        pin_task: bool = True,
    ) -> None:
        super().__init__(pin_task=pin_task, start_with_user=True)
        self.head = _check_int("head", head, 0)
        self.tail = _check_int("tail", tail, 1)
        if not isinstance(placeholder, str) or "{skipped}" not in placeholder:
            raise InvalidStrategy("placeholder must be a str containing '{skipped}'")
        self.placeholder = placeholder

    def __repr__(self) -> str:
        return f"HeadAndTail({self.head}, {self.tail}{self._options()})"

    def _marker(self, skipped: int) -> Message:
        return Message.user(
            self.placeholder.format(skipped=skipped), meta={SKIPPED_META_KEY: skipped}
        )

    def _run(self, inp: _Input) -> _Outcome:
        log = inp.log
        messages = inp.messages
        n = len(messages)
        prior = next(
            (i for i, m in enumerate(messages) if m.meta and SKIPPED_META_KEY in m.meta), None
        )
        if prior is None:
            if n <= self.head + self.tail:
                return _unchanged(inp)
            pinned = _pinned_head(inp, self.pin_task)
            h = max(log.safe_cut_at_or_before(self.head), pinned.floor)
            already = 0
            tail_floor = h
        else:
            meta = messages[prior].meta or {}
            count = meta.get(SKIPPED_META_KEY)
            already = count if isinstance(count, int) and count >= 0 else 0
            h = prior
            tail_floor = prior + 1
        t = log.safe_cut_at_or_before(n - self.tail)
        if t <= tail_floor:
            return _unchanged(inp)
        skipped = already + (t - tail_floor)
        kept: list[int | None] = [*range(h), None, *range(t, n)]
        out = [*messages[:h], self._marker(skipped), *messages[t:]]
        return _Outcome(out, kept)


class FitContextWindow(_CoreCut):
    """The longest pair-safe suffix that fits ``max_tokens - reserve_tokens`` with the head.

    Works on one-task agent loops with hundreds of tool rounds (it cuts between rounds, not
    only at user turns). When not even the pinned head plus the newest round fits, that
    minimum is kept and :meth:`describe` reports ``over_budget``. ``counter`` counts a plain
    list's tokens (the built-in estimate otherwise): a :class:`~ctxtrim.TokenCounter`, or a
    plain ``str -> int`` callable as agentix takes (``FitContextWindow(8000, len)``), which
    prices a message as ``per_message_overhead`` + its texts + ``tokens_per_media`` per
    image + its tool names and JSON inputs (:class:`~ctxtrim.tokens.TextTokenCounter`).
    ``tools`` are the tool definitions sent with every request: their tokens
    (:func:`ctxtrim.tokens.tool_tokens`, counted once, here) are taken off the budget too.
    """

    def __init__(
        self,
        max_tokens: int,
        counter: TokenCounter | Callable[[str], int] | None = None,
        *,
        reserve_tokens: int = 0,
        per_message_overhead: int | None = None,
        tokens_per_media: int | None = None,
        pin_task: bool = True,
        start_with_user: bool = True,
        tools: Sequence[object] = (),
    ) -> None:
        super().__init__(pin_task=pin_task, start_with_user=start_with_user)
        self.max_tokens = _check_int("max_tokens", max_tokens, 1)
        self.reserve_tokens = _check_int("reserve_tokens", reserve_tokens, 0)
        if self.reserve_tokens >= self.max_tokens:
            raise InvalidStrategy(
                f"reserve_tokens ({reserve_tokens}) must be less than max_tokens ({max_tokens})"
            )
        try:
            self.counter = as_token_counter(
                counter,
                per_message_overhead=per_message_overhead,
                tokens_per_media=tokens_per_media,
            )
        except (TypeError, ValueError) as e:
            raise InvalidStrategy(str(e)) from None
        self.tools_tokens = _tools_tokens(
            tools, self.counter, self.max_tokens - self.reserve_tokens
        )

    _rule = "budget"
    _value = "budget"

    @property
    def budget(self) -> int:
        """Tokens the kept history may use: ``max_tokens - reserve_tokens - tools_tokens``."""
        return self.max_tokens - self.reserve_tokens - self.tools_tokens

    def __repr__(self) -> str:
        reserve = f", reserve_tokens={self.reserve_tokens}" if self.reserve_tokens else ""
        return f"FitContextWindow({self.max_tokens}{reserve}{self._options()})"


def _tools_tokens(tools: Sequence[object], counter: TokenCounter | None, room: int) -> int:
    """The tokens of the tool definitions ``tools``, checked to leave room for a history."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
        raise InvalidStrategy(
            f"tools must be a sequence of tool definitions, got {type(tools).__name__}"
        )
    try:
        n = tool_tokens(tools, counter=counter)
    except TypeError as e:
        raise InvalidStrategy(str(e)) from None
    if n >= room:
        raise InvalidStrategy(
            f"the tool definitions take {n} tokens, leaving no room in a budget of {room}"
        )
    return n


# The in-place strategies live in ``ctxtrim.clearing``; ``from ctxtrim.strategies import
# ClearToolResults`` (where they were before) still works. Resolved lazily: ``clearing``
# imports this module, so an import at the top would be a cycle.
_MOVED_TO_CLEARING = frozenset(
    {"TRUNCATION_MARKER", "ClearToolResults", "KeepRecentImages", "TruncateToolOutputs"}
)


# The strategies made of strategies (``ctxtrim.composition``), defined on top of this module
# and imported at its end, once everything they use from it is defined.
from ctxtrim.composition import CacheStable, Pipeline  # noqa: E402


def __getattr__(name: str) -> Any:
    if name == "TrimReport":
        from ctxtrim._records import TrimReport

        globals()[name] = TrimReport  # later lookups find it directly
        return TrimReport
    if name in _MOVED_TO_CLEARING:
        from ctxtrim import clearing

        return getattr(clearing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
