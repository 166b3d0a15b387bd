"""Strategies made of strategies: :class:`Pipeline` runs steps in order, each on the
previous one's output, and :class:`CacheStable` keeps a window whose start moves only past a
high-water mark, then runs an inner strategy on it.

Invariants: a composed outcome maps every kept message back to the input it came from
(``_compose``), so a report of the whole names the input's indices; a step's output is
priced with the counts its input already had for the messages it did not rewrite
(``_next_input``); a ``Pipeline`` takes its steps' shortcuts (memos, a cut's ``Tail``) only
when every step has one and no step has its own counter, holding every memo's lock until the
result is handed out, and otherwise runs each step's full pass. Both are importable from
``ctxtrim.strategies`` too, where they were first defined.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxtrim import _core
from ctxtrim.errors import InvalidStrategy
from ctxtrim.messages import Message
from ctxtrim.store import MemoryContextStore
from ctxtrim.strategies import (
    SKIPPED_META_KEY,
    ContextStrategy,
    Source,
    _check_bool,
    _check_int,
    _cut_outcome,
    _Input,
    _Outcome,
    _pinned_head,
    _unchanged,
)

if TYPE_CHECKING:
    import threading

__all__ = ["CacheStable", "Pipeline"]


class Pipeline(ContextStrategy):
    """Run strategies in order, each on the previous one's output (e.g. clip old tool
    outputs, then fit the window). Token counts carry over between steps; only messages a
    step rewrote are recounted."""

    def __init__(self, *strategies: ContextStrategy) -> None:
        for i, s in enumerate(strategies):
            if not isinstance(s, ContextStrategy):
                raise InvalidStrategy(
                    f"Pipeline step {i} must be a ContextStrategy, got {type(s).__name__}"
                )
        self.strategies: tuple[ContextStrategy, ...] = strategies
        # A plain list is counted once, with the first exact counter a step asks for.
        self.counter = next((s.counter for s in strategies if s.counter is not None), None)

    def __repr__(self) -> str:
        return f"Pipeline({', '.join(map(repr, self.strategies))})"

    @property
    def _chains(self) -> bool:  # type: ignore[override]  # a property of the steps
        return all(s._chains and s.counter is None for s in self.strategies)

    def _locks(self) -> tuple[threading.Lock, ...]:
        return tuple(lock for s in self.strategies for lock in s._locks())

    def _apply_fast(self, source: Source) -> list[Message] | None:
        # Every memo of the chain is held until the result is handed out: a memo's own list
        # goes from one step to the next, and no other call may change it meanwhile.
        locks = self._locks()
        held = 0
        try:
            for lock in locks:
                if not lock.acquire(blocking=False):
                    return None  # another call is using a memo (or a step comes twice)
                held += 1
            got = self._private(source)
            if got is None:
                return None
            out, memo = got
            if memo is None:
                return out
            from ctxtrim._memo import _hand_out

            return _hand_out(memo, out)
        finally:
            for lock in locks[:held]:
                lock.release()

    def _private(self, source: object) -> tuple[list[Message], Any] | None:
        # Each step's shortcut on the previous step's output: a clearing step's memo reads
        # only what was appended since its last call, and a cut reads a list from its ends,
        # so a turn of `Pipeline(ClearToolResults(...), FitContextWindow(...))` costs the new
        # messages and the window, not the history. A memo's own list is passed on as it is
        # (the steps only read it) and handed out only if it is the result. Counts: a list is
        # priced by the built-in estimate at every step, as on the plain path; so is a
        # memory store without a counter. Any other log (a persistent store's `load_log()`,
        # whose counts a counter may have made) goes through the plain path, where counts
        # carry over between steps.
        if not self._chains or not self.strategies:
            return None
        if type(source) is not list and not (
            isinstance(source, MemoryContextStore) and source._counter is None
        ):
            return None
        current: object = source
        owner: tuple[list[Message], Any] | None = None  # the last memo's list, and the memo
        for step in self.strategies:
            got = step._private(current)
            if got is None:
                return None  # no shortcut for this input: the plain path
            out, memo = got
            if memo is not None:
                owner = (out, memo)
            current = out
        if owner is not None and current is owner[0]:
            return owner
        return out, None

    def _run(self, inp: _Input) -> _Outcome:
        total = _unchanged(inp)
        current = inp
        for step in self.strategies:
            out = step._run(current)
            total = _compose(total, out, current)
            if out.messages is not current._messages:
                current = _next_input(current, out)
        return total


class CacheStable(ContextStrategy):
    """Trim only past a high-water mark, and then well below it, so the kept prefix stays
    byte-identical between trims and provider prompt caches keep hitting (no peer does).

    The kept window is the pinned head plus a suffix whose start moves only when the window
    grows past ``high`` tokens, and then jumps to the longest pair-safe suffix within
    ``low``; so trims are at least ``high - low`` tokens of new messages apart. The start is
    a function of the history alone (the core replays its growth), so the strategy stays
    pure: call it on the full history every turn. ``strategy`` then runs on the window —
    e.g. ``TruncateToolOutputs`` to clip it, or a ``FitContextWindow`` as a hard cap for a
    window the newest round alone pushes over ``high``.
    """

    def __init__(
        self,
        strategy: ContextStrategy,
        *,
        high: int,
        low: int,
        pin_task: bool = True,
        start_with_user: bool = True,
    ) -> None:
        if not isinstance(strategy, ContextStrategy):
            raise InvalidStrategy(
                f"strategy must be a ContextStrategy, got {type(strategy).__name__}"
            )
        self.strategy = strategy
        self.high = _check_int("high", high, 1)
        self.low = _check_int("low", low, 0)
        if self.low >= self.high:
            raise InvalidStrategy(f"low ({low}) must be less than high ({high})")
        self.pin_task = _check_bool("pin_task", pin_task)
        self.start_with_user = _check_bool("start_with_user", start_with_user)
        self.counter = strategy.counter

    def __repr__(self) -> str:
        return f"CacheStable({self.strategy!r}, high={self.high}, low={self.low})"

    def _run(self, inp: _Input) -> _Outcome:
        log = inp.log
        head = _pinned_head(inp, self.pin_task)
        fixed = head.tokens(log)
        user_start = self.start_with_user and not head.has_user
        cut, kept, _ = log.stable_cut(
            fixed, self.high, self.low, floor=head.floor, user_start=user_start
        )
        if head.floor < cut < inp.n and SKIPPED_META_KEY in (inp.log[cut].meta or {}):
            # Never open the window at a HeadAndTail placeholder: the inner strategy put it
            # there on an earlier call, and cutting to it would make the next call differ from
            # this one (the window must stay what the inner strategy was given).
            earlier = (
                log.user_cut_at_or_before(cut - 1)
                if user_start
                else log.safe_cut_at_or_before(cut - 1)
            )
            if earlier is not None and earlier >= head.floor:
                cut = earlier
                kept = log.tokens(cut)
        window = _cut_outcome(inp, head, cut, over_budget=fixed + kept > self.high)
        window.budget = self.high
        current = inp if window.messages is inp._messages else _next_input(inp, window)
        return _compose(window, self.strategy._run(current), current)


def _compose(total: _Outcome, out: _Outcome, current: _Input) -> _Outcome:
    """``total`` (input → ``current``) followed by ``out`` (``current`` → result)."""
    if out.messages is current._messages:  # unchanged (it is the materialised input)
        if out.budget is not None:
            total.budget = out.budget
        total.over_budget = total.over_budget or out.over_budget
        return total
    # Map the step's origins (indices into `current`) back to the input.
    origin = [None if o is None else total.origin[o] for o in out.origin]
    changed = {o for o in (total.origin[c] for c in out.changed) if o is not None}
    changed |= {o for o in origin if o is not None and o in total.changed}
    return _Outcome(
        out.messages,
        origin,
        changed,
        out.budget if out.budget is not None else total.budget,
        total.over_budget or out.over_budget,
    )


def _next_input(prev: _Input, out: _Outcome) -> _Input:
    """The log of a step's output, reusing the cached counts of messages it did not touch."""
    log = prev.log
    short = prev._counts is None and len(out.messages) * 8 < prev.n
    counts = None if short else prev.counts()

    def count_of(i: int) -> int:
        # A short window of a long log looks its counts up one by one (O(log n) each)
        # rather than fetching every count of the log.
        return log.tokens(i, i + 1) if counts is None else counts[i]

    tokens = [
        count_of(o) if (o is not None and o not in out.changed) else prev.count(m)
        for m, o in zip(out.messages, out.origin, strict=True)
    ]
    return _Input(out.messages, _core.MessageLog(out.messages, tokens=tokens), prev.counter)
