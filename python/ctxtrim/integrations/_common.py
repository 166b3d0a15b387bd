"""What every drop-in shares: framework messages read as ctxtrim skeletons, once each.

A *skeleton* is a :class:`ctxtrim.Message` carrying what trimming needs of one framework
message — its role, the ids of the tool calls it makes and of the results it answers, and
(through a :class:`Counts` counter, or the core's estimate of its text) its token count.
The core decides the window on the skeletons; the drop-in maps the chosen indices back to
the framework's own objects, so nothing the user passed in is copied on the way out.

Two ways to keep the conversion at once per framework message, for the two shapes of
drop-in:

* :class:`Skeletons` — for functions and callbacks that are handed a list each call (a new
  list, often: LangGraph's reducer, the openai-agents runner). Skeletons are cached by the
  identity of the framework object, and the cache entry holds the object itself, so an id
  is never reused while its entry lives and an edited or replaced message simply misses
  the cache. :func:`ends_window` hands the list to the core, which reads it from its two
  ends as it reads a list of ctxtrim messages (``_core.cut_window`` with ``convert``), so
  a call costs O(window) however long the history, and a message is converted (and
  counted) only when it is first read.
* :class:`Mirror` — for the autogen contexts, which own their storage, and for the
  callables once they are handed the same history again: a skeleton list and a
  :class:`MessageLog` kept in step with the framework's append-only list (O(new) a call),
  on which the core decides in O(log n).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar

from ctxtrim import _core
from ctxtrim._core import MessageLog
from ctxtrim.messages import Message, pair_ids

T = TypeVar("T")

__all__ = [
    "Counts",
    "Mirror",
    "Skeletons",
    "ends_window",
    "missing_extra",
    "shrink_until",
]

Ranges = list[tuple[int, int]]


def missing_extra(framework: str, extra: str, err: ImportError) -> ImportError:
    """The ImportError a drop-in raises when its framework is not installed."""
    return ImportError(
        f"ctxtrim.integrations needs {framework} for this module: "
        f"pip install 'ctxtrim[{extra}]' ({err})"
    )


class Counts:
    """A :class:`ctxtrim.TokenCounter` pricing each skeleton with a function of the
    framework message it stands for (a model client's count, langchain's counter).

    The core asks it once per skeleton, only for the skeletons it reads, and caches the
    answer on the skeleton's facts: a message is counted once, and only when a window
    reaches it.
    """

    def __init__(self, count: Callable[[Any], int]) -> None:
        self._count = count
        # id(skeleton) -> (skeleton, framework message); the entry keeps the skeleton alive,
        # so its id is not reused while the entry exists.
        self._origin: dict[int, tuple[Message, Any]] = {}

    def bind(self, skeleton: Message, source: Any) -> None:
        self._origin[id(skeleton)] = (skeleton, source)

    def bind_many(self, skeletons: Sequence[Message], sources: Sequence[Any]) -> None:
        """``bind`` of each skeleton to its source, pairwise, in one C-level update."""
        pairs = zip(skeletons, sources, strict=True)
        self._origin.update(zip(map(id, skeletons), pairs, strict=True))

    def forget(self, skeletons: dict[int, tuple[Message, Any]]) -> None:
        self._origin = skeletons

    def count_text(self, text: str) -> int:
        return _core.estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        hit = self._origin.get(id(message))
        if hit is None or hit[0] is not message:  # not one of ours: the estimate
            return _core.message_tokens(message)
        return max(int(self._count(hit[1])), 0)


class Skeletons(Generic[T]):
    """Skeletons of framework messages, converted once per message object.

    Keyed by ``id(obj)``; each entry holds ``obj`` and is trusted only when ``entry[0] is
    obj``. The cache is bounded by the history it serves: when it outgrows four times the
    messages the last call read (and 4096), it keeps only those. ``cached=False`` keeps no
    cache, for a :class:`Mirror` of a list its owner holds (the autogen contexts): the
    mirror keeps the skeletons, and only a rebuild converts again.
    """

    def __init__(
        self,
        convert: Callable[[T, int], Message],
        counts: Counts | None = None,
        *,
        convert_many: Callable[[Sequence[T], int], list[Message]] | None = None,
        cached: bool = True,
    ) -> None:
        self._convert = convert
        self._convert_many = convert_many
        self.counts = counts
        self._cache: dict[int, tuple[T, Message]] = {}
        # Without the cache (``cached=False``, for a Mirror that keeps the skeletons of the
        # list it mirrors) every call converts, and ``reset`` forgets the counts' bindings.
        self._cached = cached
        #: What :func:`ends_window` read of the list it was last given (its head and its
        #: end, each item with its facts): the next call on that list, grown by a round,
        #: reads only the new items and checks the others by identity.
        self.tail = _core.Tail()

    def of(self, objs: Sequence[T], start: int = 0) -> list[Message]:
        """The skeletons of ``objs`` (``start`` is the index of ``objs[0]`` in the history:
        it names tool calls that arrive without an id).

        With ``convert_many`` (``convert`` of each item, in one call) and nothing cached yet
        — a history's first sight — the items are converted in one batch and cached in one
        C-level update, with no Python step per item.
        """
        if not self._cached:
            if self._convert_many is not None:
                fresh = self._convert_many(objs, start)
            else:
                fresh = [self._convert(obj, start + j) for j, obj in enumerate(objs)]
            if self.counts is not None:
                self.counts.bind_many(fresh, objs)
            return fresh
        cache = self._cache
        if not cache and self._convert_many is not None:
            return self.remember(objs, start)
        out: list[Message] = []
        for j, obj in enumerate(objs):
            hit = cache.get(id(obj))
            if hit is None or hit[0] is not obj:
                sk = self._convert(obj, start + j)
                hit = (obj, sk)
                cache[id(obj)] = hit
                if self.counts is not None:
                    self.counts.bind(sk, obj)
            out.append(hit[1])
        return out

    def remember(self, objs: Sequence[T], start: int) -> list[Message]:
        """Convert ``objs``, the items from index ``start`` on, now and cache them (their
        skeletons): in one batch with ``convert_many``, and in one C-level cache update
        (a history's first sight, a context converting each message as it is added)."""
        if self._convert_many is None:
            return self.of(objs, start)
        fresh = self._convert_many(objs, start)
        self._cache.update(zip(map(id, objs), zip(objs, fresh, strict=True), strict=True))
        if self.counts is not None:
            self.counts.bind_many(fresh, objs)
        return fresh

    def one(self, obj: T, i: int) -> Message:
        """The skeleton of ``obj``, the item at index ``i`` (converted on first sight)."""
        if not self._cached:
            sk = self._convert(obj, i)
            if self.counts is not None:
                self.counts.bind(sk, obj)
            return sk
        hit = self._cache.get(id(obj))
        if hit is None or hit[0] is not obj:
            sk = self._convert(obj, i)
            hit = (obj, sk)
            self._cache[id(obj)] = hit
            if self.counts is not None:
                self.counts.bind(sk, obj)
        return hit[1]

    def reset(self) -> None:
        """Called when the skeletons made so far are dropped (a Mirror's rebuild): without
        the cache, nothing can hand them out again, so the counts forget them."""
        if not self._cached and self.counts is not None:
            self.counts.forget({})

    def trim_to(self, objs: Sequence[T], ranges: Ranges) -> None:
        """Bound the cache after a window of ``objs``: past its cap, keep the head, the
        kept ranges and a margin before the suffix (what the next call reads again)."""
        if len(self._cache) <= 4096 or not ranges:
            return
        a, b = ranges[-1]
        keep = [o for x, y in ranges[:-1] for o in objs[x:y]]
        keep += objs[max(a - max(b - a, 64), 0) :]
        self.trim(keep)

    def trim(self, keep: Sequence[T]) -> None:
        """Bound the cache: past its cap, keep only the entries of ``keep``."""
        if len(self._cache) <= max(4096, 4 * len(keep)):
            return
        cache = self._cache
        self._cache = {id(o): cache[id(o)] for o in keep if id(o) in cache}
        if self.counts is not None:
            self.counts.forget({id(sk): (sk, o) for o, sk in self._cache.values()})


def closed_from(skeletons: Sequence[Message], start: int) -> list[bool]:
    """``out[c - start]``: whether every tool result in ``skeletons[c:]`` answers a call in
    ``skeletons[c:]``, for ``c`` in ``[start, len]``. On a list read from the end of a
    history, this is the history's own pair-safety at ``c`` (a result whose call lies
    before the part read, or nowhere, makes every cut up to it unsafe)."""
    n = len(skeletons)
    out = [True] * (n - start + 1)
    pending: set[str] = set()
    for c in range(n - 1, start - 1, -1):
        calls, results = pair_ids(skeletons[c])
        pending.update(results)
        pending.difference_update(calls)
        out[c - start] = not pending
    return out


def ends_window(
    objs: Sequence[T],
    skeletons: Skeletons[T],
    rule: Literal["budget", "turns", "rounds", "messages"],
    value: int,
    *,
    pin_task: bool,
    start_with_user: bool = False,
    counter: Any = None,
) -> tuple[Ranges, bool, bool]:
    """``(ranges, unchanged, over_budget)`` of the core's cut ``rule`` (with its budget or
    count, ``value``) on ``objs``, read from the list's two ends.

    The core reads the list from its two ends, as far back as the decision needs (the
    reader that serves lists of ctxtrim messages), converting an item only when it reads it
    (``skeletons.one``: once per item object): a call costs O(window), not O(history); and
    with ``skeletons.tail`` kept from the last call, a list that grew by a round costs
    O(new items) plus one identity check per item the tail holds.
    """
    counter = skeletons.counts if counter is None else counter
    ranges, unchanged, over = _core.cut_window(
        objs,
        rule,
        value,
        pin_task=pin_task,
        start_with_user=start_with_user,
        counter=counter,
        convert=skeletons.one,
        tail=skeletons.tail,
    )
    skeletons.trim_to(objs, ranges)
    return ranges, unchanged, over


def take(objs: Sequence[T], ranges: Ranges) -> list[T]:
    """``objs[a:b]`` for each range, concatenated (a new list)."""
    if type(objs) is list and ranges:  # a list's slices are new lists: no copy of a copy
        if len(ranges) == 1:
            a, b = ranges[0]
            return objs[a:b]
        out = objs[ranges[0][0] : ranges[0][1]]
        for a, b in ranges[1:]:
            out += objs[a:b]
        return out
    out = []
    for a, b in ranges:
        out += objs[a:b]
    return out


def shrink_until(
    log: MessageLog,
    kept: list[int],
    fits: Callable[[list[int]], bool],
    *,
    pin_task: bool,
) -> list[int]:
    """Drop more of the kept suffix, one pair-safe cut at a time, until ``fits`` says yes.

    For counters that are not a sum of per-message counts (a model's counter adds a few
    priming tokens per call): the per-message counts chose ``kept``; one call checks it,
    and only when it is over does the suffix's start move to the next safe cut. The pinned
    head (leading system messages, and the task with ``pin_task``) stays; returns the head
    alone when nothing of the suffix fits. ``log`` holds (at least) the kept messages'
    skeletons, at their indices.
    """
    if fits(kept):
        return kept
    n = len(log)
    system_end, task, floor, contiguous = log.pinned_head(pin_task)
    if task is None:
        pinned = set(range(system_end))
    elif contiguous:
        pinned = set(range(floor))
    else:
        pinned = {*range(system_end), task}
    head = [i for i in kept if i in pinned]
    rest = [i for i in kept if i not in pinned]
    cut = rest[0] if rest else n
    while cut < n:
        cut = log.safe_cut_at_or_after(cut + 1)
        trial = head + [i for i in range(cut, n) if i not in pinned]
        if fits(trial):
            return trial
    return head


class Mirror(Generic[T]):
    """Skeletons of a framework's append-only message list, kept in step with it: a list
    and (``with_log``) a :class:`MessageLog`, on which the core decides a window in
    O(log n) of the history's length.

    ``sync(messages)`` appends skeletons for new messages only (O(new)); if the list was
    replaced or rewritten (``clear``, ``load_state``, a new list), which it detects by the
    identity of its first and last mirrored objects, it rebuilds — reusing the skeleton of
    every message object it has seen when ``Skeletons`` caches them, so a rebuild converts
    nothing twice (else it converts again, in one batch where ``convert_many`` is native).
    A context that owns its list mirrors it at once (``eager``); a function handed a list
    per call mirrors a list only from the second call that starts with the same object (a
    history kept across calls), since mirroring a list seen once would convert all of it
    where reading its ends converts only the window. ``counter`` prices the skeletons put
    in the log (else the log's estimate).
    """

    def __init__(
        self,
        skeletons: Skeletons[T],
        *,
        with_log: bool = False,
        eager: bool = True,
        counter: Any = None,
    ) -> None:
        self.skeletons = skeletons
        self._with_log = with_log
        self._eager = eager
        self._counter = counter
        self._seen: Any = None  # (lazy mode) the first item of the last list not mirrored
        self.source: list[T] = []
        self.list: list[Message] = []
        self.log = MessageLog()

    def sync(self, messages: Sequence[T]) -> list[Message] | None:
        """The skeletons of ``messages`` (None in lazy mode when the list is not mirrored)."""
        src = self.source
        k = len(src)
        n = len(messages)
        if k and (n < k or messages[0] is not src[0] or messages[k - 1] is not src[-1]):
            self.reset()
            src = self.source
            k = 0
        if not k and not self._eager:
            first = messages[0] if n else None
            if first is None or first is not self._seen:
                self._seen = first
                return None
        if n > k:
            self.append(messages[k:], k)
        return self.list

    def append(self, new: Sequence[T], k: int) -> None:
        """Mirror ``new``, the items from index ``k`` on (the source's length)."""
        skeletons = self.skeletons.of(new, k)
        self.list.extend(skeletons)
        if self._with_log:
            self.log.extend(skeletons, tokens=self._tokens(skeletons))
        self.source.extend(new)
        self.skeletons.trim(self.source)

    def _tokens(self, skeletons: list[Message]) -> list[int] | None:
        # A counter's counts are read now (facts and counts are cached on each skeleton), not
        # when the log is next indexed: a context that mirrors on append pays for a message
        # when it arrives. Without one, the log's own estimate is the same count, read by the
        # core when it indexes the batch (no Python call per message).
        counter = self._counter
        if counter is None:
            return None
        return [_core.message_tokens(sk, counter=counter) for sk in skeletons]

    def same(self, messages: Sequence[T], a: int, b: int) -> bool:
        """Whether the mirror still stands for ``messages[a:b]``: item by item the same
        object, or an equal one (whose skeleton is the same). One list comparison, which
        tests identity first, in C: no Python call per item."""
        part = messages[a:b]
        if type(part) is not list:
            part = list(part)
        return part == self.source[a:b]

    def window(
        self,
        messages: Sequence[T],
        rule: Literal["budget", "turns", "rounds", "messages"],
        value: int,
        *,
        pin_task: bool,
        start_with_user: bool,
        extra: Sequence[Any] = (),
        convert_extra: Callable[[Any, int], Message] | None = None,
    ) -> tuple[Ranges, bool, bool] | None:
        """``(ranges, unchanged, over_budget)`` of ``rule`` on ``messages`` (followed by the
        ``extra`` items, converted by ``convert_extra``, not mirrored), decided by the core
        on the log; None when the list is not mirrored (lazy mode).

        What the decision read — the kept ranges and the message before the cut, or every
        message when all are kept — is checked item by item (:meth:`same`); a list changed
        there behind the mirror's back is re-read.
        """
        for _ in range(2):
            if self.sync(messages) is None:
                return None
            log = self.log
            k = len(self.source)
            if extra:
                assert convert_extra is not None
                log = log.fork()
                more = [convert_extra(x, k + j) for j, x in enumerate(extra)]
                log.extend(more, tokens=self._tokens(more))
            ranges, unchanged, over = _core.cut_window(
                log, rule, value, pin_task=pin_task, start_with_user=start_with_user
            )
            if self._read_same(messages, ranges, unchanged, k):
                return ranges, unchanged, over
            self.reset()
        raise AssertionError("unreachable: a mirror rebuilt from the list stands for it")

    def _read_same(self, messages: Sequence[T], ranges: Ranges, unchanged: bool, k: int) -> bool:
        """Whether the mirror stands for what a decision on its first ``k`` items read."""
        if unchanged:
            return self.same(messages, 0, k)
        cut = ranges[-1][0]
        if not self.same(messages, cut - 1 if cut > 0 else 0, k):
            return False
        for a, b in ranges[:-1]:  # the pinned head: a range or two
            b = b if b < k else k
            if a < b and not self.same(messages, a, b):
                return False
        return True

    def reset(self) -> None:
        self.source = []
        self.list = []
        self.log = MessageLog()
        self.skeletons.reset()
