"""What an in-place strategy remembers of the histories it was called on, so that a turn
costs the messages appended since its last call, not the whole history.

The in-place strategies of ``ctxtrim.clearing`` (``TruncateToolOutputs``,
``ClearToolResults``, ``KeepRecentImages``, ``ClearThinking``) decide every message from the
history read oldest first: a pass that keeps its state (``Memo.state``) can take up where
it stopped when the next call's history extends the last one. A ``Pipeline`` runs such a
pass through :meth:`Memoised._private` and passes its own list to the next step while it
holds the memo's lock (``ctxtrim.strategies``). A strategy
keeps one :class:`Memo` per history (up to :data:`MEMOS`, least recently used dropped): the
messages read (``seen``), the pass's state, and for a plain list a log of its own that
carries the token total and the turn count a trigger reads. Invariants:

* **A memo is used only for a history that extends what it read.** A plain list is
  compared with ``seen`` after ``seen`` takes the list's new messages, by identity, entry by
  entry (the core's ``differing``: one pass over two arrays of pointers), so a list edited
  anywhere (another list, a message inserted or removed, a shorter list) is read again from
  the start. A few messages replaced in place (a previous ``Pipeline`` step's edits, an
  equal copy put in) are taken in instead when they keep their role and kind of user
  message and the strategy says its decisions stand with them (``_replaceable``; a list
  memo's log then keeps the token change aside in ``delta``, for the trigger). A
  ``MessageLog`` or ``MemoryContextStore`` is the memo's own log object at the generation it
  read: appends never bump the generation, every other write does (a fork is another
  object), so its new messages are those past the memo's length. Any other log (``await
  store.load_log()``'s snapshots) is compared like a list.
* **The settings a pass read are part of the memo.** Changing ``keep``, ``placeholder``...
  on the strategy starts a new pass; the trigger is checked on every call, from the totals.
* **Tokens come from the source's own counts**, as without the memo: a list's estimate
  (the memo's log), a log's cached counts (read from its snapshot). A memo made on one log
  object is carried over to another only when its pass does not sum counts.
* **The memo's lists never leave it; a list handed out never changes while anyone else
  holds it.** A changed result is a list the memo hands out (:func:`_hand_out`): one it
  handed out before and that nothing but the memo references any more (CPython's reference
  count says so: nobody can see it change) is brought up to date entry by entry (whatever
  the caller did to it before letting go), else a new copy is made. The memo keeps the last
  two, since an agent loop (``window = strategy(history)``) still holds the previous one
  during the call. An unchanged result is the input list itself, as for every strategy.
  The two identity passes (the check and the update) are what is left that grows with the
  history: 0.04 to 0.09 ms each at 100k messages (memory-bound), no Python work per message.
* **One call at a time per strategy.** A call that finds another thread using the memos
  takes the strategy's pass from scratch (no waiting); a failing pass drops its memo, and the
  strategy's plain path then runs (and raises its own error for bad input).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from ctxtrim import _core
from ctxtrim.messages import Message
from ctxtrim.store import MemoryContextStore
from ctxtrim.strategies import ContextStrategy, Source

#: Histories a strategy remembers at once (a server may share one between sessions).
MEMOS = 8

S = TypeVar("S")


class Memo(Generic[S]):
    """One history as a strategy last read it. ``source`` is the list or log object it was
    read from (kept alive, so its ``id`` is not reused while it is a key), ``log`` the memo's
    own log of a list (its token total and turns) or None, ``counts`` whether ``state``
    summed source counts."""

    __slots__ = (
        "counts",
        "delta",
        "generation",
        "handed",
        "key",
        "log",
        "seen",
        "settings",
        "source",
        "state",
    )

    def __init__(
        self,
        source: object,
        settings: Hashable,
        state: S,
        log: _core.MessageLog | None,
        generation: int,
    ) -> None:
        self.source = source
        self.settings = settings
        self.state = state
        self.seen: list[Message] = []
        self.log = log
        self.generation = generation
        self.counts = False
        self.delta = 0  # tokens replaced messages changed by, not in `log` (see _take_in)
        self.key: tuple[bool, int] | None = None
        self.handed: list[list[Message]] = []  # the lists last returned, oldest first


class Memoised(ContextStrategy, Generic[S]):
    """A strategy whose pass over a history keeps its state between calls (see the module
    docstring). Subclasses give the settings the pass reads, a fresh state, the pass over
    ``memo.seen[start:]``, and the result from a state and the current totals."""

    _memo_lock: threading.Lock
    _memos: dict[tuple[bool, int], Memo[S]]
    _chains = True

    def _init_memo(self) -> None:
        self._memo_lock = threading.Lock()
        self._memos = {}

    def __getstate__(self) -> dict[str, Any]:
        # A copy or pickle of a strategy starts with no memo (a lock does not pickle).
        state = self.__dict__.copy()
        state.pop("_memo_lock", None)
        state.pop("_memos", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_memo()

    # -- what subclasses give ------------------------------------------------------------------

    def _settings(self) -> Hashable:
        raise NotImplementedError

    def _needs_log(self) -> bool:
        """Whether a list's memo keeps a log (its token total and turns, for a trigger)."""
        raise NotImplementedError

    def _new_state(self) -> S:
        raise NotImplementedError

    def _advance(
        self, state: S, seen: list[Message], start: int, count: Callable[[int], int]
    ) -> bool:
        """Read ``seen[start:]`` into ``state``; ``count(i)``: the source's tokens of message
        ``i``. Returns whether the state summed counts."""
        raise NotImplementedError

    def _output(self, state: S, log: _core.MessageLog | None, n: int) -> list[Message] | None:
        """The state's output list (the strategy's own, never handed out itself), or None
        when nothing changes; ``log``: the totals (None when no trigger reads them)."""
        raise NotImplementedError

    def _replaceable(self, state: S, i: int, old: Message, new: Message) -> bool:
        """Whether the pass's decisions stand with message ``i`` (read as ``old``) now
        ``new``, of the same role and kind of user message; then :meth:`_replace` takes it
        in. False (the default) reads the history again from the start."""
        return False

    def _replace(self, state: S, i: int, old: Message, new: Message) -> None:
        """Takes in ``new`` at ``i`` in place of ``old`` (see :meth:`_replaceable`)."""
        raise NotImplementedError

    # -- the memoised call ---------------------------------------------------------------------

    def _locks(self) -> tuple[threading.Lock, ...]:
        if "_memo_lock" not in self.__dict__:
            self._init_memo()  # a subclass whose __init__ did not call ours
        return (self._memo_lock,)

    def _apply_fast(self, source: Source) -> list[Message] | None:
        (lock,) = self._locks()
        if not lock.acquire(blocking=False):
            return None  # another call is using the memos: the plain path
        try:
            got = self._private(source)
            if got is None:
                return None
            out, memo = got
            return out if memo is None else _hand_out(memo, out)
        finally:
            lock.release()

    def _private(self, source: object) -> tuple[list[Message], Memo[S] | None] | None:
        """The result before it is handed out, the caller holding :meth:`_locks`: ``(the
        caller's list, None)`` when nothing changes, else ``(a list of the memo's own, the
        memo)``, which must not leave ctxtrim (``Pipeline`` reads it in place while it holds
        the lock, so no other call changes it meanwhile; :func:`_hand_out` gives the caller a
        list of its own). None when there is no memo for ``source`` (the plain path runs)."""
        if type(source) is list:
            return self._on_list(source)
        if isinstance(source, MemoryContextStore):
            return self._on_log(source.log)
        if isinstance(source, _core.MessageLog):
            return self._on_log(source)
        return None

    def _remember(self, key: tuple[bool, int], memo: Memo[S]) -> None:
        memos = self._memos
        memos.pop(key, None)
        if memo.key is not None and memos.get(memo.key) is memo:
            del memos[memo.key]  # carried over from another list or log object
        memo.key = key
        if len(memos) >= MEMOS:
            memos.pop(next(iter(memos)))  # the least recently used
        memos[key] = memo

    def _latest(self, is_log: bool) -> Memo[S] | None:
        """The most recently used memo of a list (or of a log): a history is often a new
        list each turn (LangGraph's state), or a new snapshot (a persistent store's)."""
        for key in reversed(self._memos):
            if key[0] is is_log:
                return self._memos[key]
        return None

    def _extends(self, memo: Memo[S] | None, messages: list[Message]) -> int | None:
        """How many messages of ``messages`` ``memo`` has read, if it extends them; ``seen``
        then holds all of them."""
        if memo is None or memo.settings != self._settings():
            return None
        seen = memo.seen
        k = len(seen)
        if len(messages) < k or (k and messages[0] is not seen[0]):
            return None
        seen += messages[k:]
        replaced = _core.differing(seen, messages, _REPLACED)
        if replaced is None or (replaced and not self._take_in(memo, replaced, messages)):
            del seen[k:]  # the memo stays as it was, for its own history
            return None
        return k

    def _take_in(self, memo: Memo[S], replaced: list[int], messages: list[Message]) -> bool:
        """Takes in the messages at ``replaced`` (other objects than those read, as a previous
        ``Pipeline`` step's edit puts there) if the strategy's decisions stand with each;
        else changes nothing and returns False. A list's memo log keeps the token change
        aside (``delta``); its turns stand, a replacement keeping the role and the kind of
        user message."""
        seen, state = memo.seen, memo.state
        for i in replaced:
            old, new = seen[i], messages[i]
            if (
                old.role != new.role
                or old.is_real_user != new.is_real_user
                or not self._replaceable(state, i, old, new)
            ):
                return False
        for i in replaced:
            old, new = seen[i], messages[i]
            self._replace(state, i, old, new)
            seen[i] = new
            if memo.log is not None:
                memo.delta += _core.message_tokens(new) - _core.message_tokens(old)
        return True

    def _on_list(self, messages: list[Message]) -> tuple[list[Message], Memo[S] | None]:
        key = (False, id(messages))
        memo = self._memos.get(key)
        if memo is None or memo.source is not messages:
            memo = self._latest(False)
        k = self._extends(memo, messages)
        if memo is None or k is None:
            log = _core.MessageLog() if self._needs_log() else None
            memo = Memo(messages, self._settings(), self._new_state(), log, 0)
            memo.seen = list(messages)
            k = 0
        memo.source = messages
        self._remember(key, memo)
        n = len(messages)
        log = memo.log
        try:
            if log is not None:
                log.extend(memo.seen[k:])
                count: Callable[[int], int] = _counter(log)
            else:
                count = _no_counts
            self._advance(memo.state, memo.seen, k, count)
            totals = log if log is None or not memo.delta else _Totals(log, memo.delta)
            out = self._output(memo.state, totals, n)  # type: ignore[arg-type]  # its totals
        except Exception:
            self._memos.pop(key, None)
            raise _Fallback from None
        return (messages, None) if out is None else (out, memo)

    def _on_log(self, live: _core.MessageLog) -> tuple[list[Message], Memo[S]]:
        snap = live.snapshot()  # one consistent view, whatever is written meanwhile
        n = len(snap)
        key = (True, id(live))
        memo = self._memos.get(key)
        k: int | None = None
        if (
            memo is not None
            and memo.source is live
            and memo.generation == snap.generation
            and len(memo.seen) <= n
            and memo.settings == self._settings()
        ):
            k = len(memo.seen)
            memo.seen += snap.to_list(k, n)  # appends alone: the rest is what it read
        else:
            other = self._latest(True)
            if other is not None and not other.counts:
                k = self._extends(other, snap.to_list())
                memo = other if k is not None else None
        if memo is None or k is None:
            memo = Memo(live, self._settings(), self._new_state(), None, snap.generation)
            memo.seen = snap.to_list()
            k = 0
        memo.source = live
        memo.generation = snap.generation
        self._remember(key, memo)
        try:
            memo.counts |= self._advance(memo.state, memo.seen, k, _counter(snap))
            out = self._output(memo.state, snap, n)
        except Exception:
            self._memos.pop(key, None)
            raise _Fallback from None
        return (memo.seen if out is None else out), memo

    def _apply(self, source: Any, report: bool, format: str) -> Any:
        try:
            return super()._apply(source, report, format)
        except _Fallback:
            return self._plain(source)

    def _plain(self, source: Source) -> list[Message]:
        """The result without the memos (the strategy's full pass)."""
        from ctxtrim.strategies import _finish, _Input

        return _finish(self._run(_Input.of(source, self.counter)))


#: Whether a list this module returned and nobody else holds any more may be returned again,
#: brought up to date: on CPython up to 3.13 with the GIL, where ``sys.getrefcount`` counts
#: every reference (3.14 may borrow stack references; a free-threaded build splits counts).
_REUSE = (
    sys.implementation.name == "cpython"
    and sys.version_info < (3, 14)
    and getattr(sys, "_is_gil_enabled", lambda: True)()
)
#: Entries a list handed out earlier may differ by to be brought up to date in place (the
#: messages two calls cleared); past that it is copied anew.
_RESYNC = 1024
#: Lists returned to a caller kept per memo: the previous call's result is usually still held
#: (``window = strategy(history)`` in a loop), the one before has been let go.
_HANDED = 2


def _refs(pool: list[list[Message]], i: int) -> int:
    return sys.getrefcount(pool[i])


#: ``_refs`` of a list only its pool holds (measured, by the same code, for this interpreter).
_SOLE = _refs([[]], 0)


def _hand_out(memo: Memo[Any], private: list[Message]) -> list[Message]:
    """A list holding what ``private`` holds, for the caller: one the memo returned before
    and that nothing but the memo holds any more (so nobody can see it change), brought up
    to date entry by entry, else a copy. The memo's own lists never leave it."""
    pool = memo.handed
    if _REUSE:
        for i in range(len(pool)):
            if _refs(pool, i) != _SOLE:
                continue  # still held: the caller's
            handed = pool.pop(i)
            diff = _core.differing(handed, private, _RESYNC)
            if diff is None:
                break  # rewritten since: a copy, below
            for j in diff:
                handed[j] = private[j]
            n = len(private)
            if len(handed) > n:
                del handed[n:]
            else:
                handed += private[len(handed) :]
            pool.append(handed)
            return handed
    handed = private.copy()
    pool.append(handed)
    if len(pool) > _HANDED:
        del pool[0]
    return handed


#: Replaced messages a memo takes in (:meth:`Memoised._take_in`); past that it reads again.
_REPLACED = 64


class _Totals:
    """A memo log's totals as a trigger reads them, with the token change of the messages
    replaced since it read them (``delta``); the rest is the log's (its turns stand)."""

    __slots__ = ("delta", "log")

    def __init__(self, log: _core.MessageLog, delta: int) -> None:
        self.log = log
        self.delta = delta

    @property
    def total_tokens(self) -> int:
        return self.log.total_tokens + self.delta

    def __getattr__(self, name: str) -> Any:
        return getattr(self.log, name)


class _Fallback(Exception):
    """A memoised pass failed: the plain path runs instead (and raises its own error)."""


def _counter(log: _core.MessageLog) -> Callable[[int], int]:
    return lambda i: log.tokens(i, i + 1)


def _no_counts(i: int) -> int:
    raise AssertionError("no counts without a log")  # pragma: no cover
