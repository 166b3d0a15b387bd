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
  the cache. :func:`budget_window` reads only the head and the tail of the list (the tail
  doubling until the decision cannot change with more), so a call costs O(window) however
  long the history, and a message is converted (and counted) only when it is first read.
* :class:`Mirror` — for the autogen contexts, which own their storage: a skeleton list
  kept in step with the context's append-only list (O(new) a call), which the core reads
  from its ends only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from ctxtrim import _core
from ctxtrim._core import MessageLog
from ctxtrim.messages import Message, ToolResultBlock, ToolUseBlock

T = TypeVar("T")

__all__ = [
    "Counts",
    "Mirror",
    "Skeletons",
    "budget_window",
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
    messages the last call read (and 4096), it keeps only those.
    """

    def __init__(self, convert: Callable[[T, int], Message], counts: Counts | None = None) -> None:
        self._convert = convert
        self.counts = counts
        self._cache: dict[int, tuple[T, Message]] = {}

    def of(self, objs: Sequence[T], start: int = 0) -> list[Message]:
        """The skeletons of ``objs`` (``start`` is the index of ``objs[0]`` in the history:
        it names tool calls that arrive without an id)."""
        cache = self._cache
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
        for b in skeletons[c].content:
            if type(b) is ToolResultBlock:
                pending.add(b.tool_use_id)
            elif type(b) is ToolUseBlock:
                pending.discard(b.id)
        out[c - start] = not pending
    return out


def _tokens(skeletons: Sequence[Message], counter: Any) -> int:
    return sum(_core.message_tokens(m, counter=counter) for m in skeletons)


def budget_window(
    objs: Sequence[T],
    skeletons: Skeletons[T],
    budget: int,
    *,
    pin_task: bool,
    start_with_user: bool = False,
    counter: Any = None,
) -> tuple[Ranges, bool, bool]:
    """``(ranges, unchanged, over_budget)`` of the core's budget rule on ``objs``, reading
    (and converting) only the head and the tail of the list.

    The core decides on ``head + tail`` (the first ``h`` and last ``r`` messages). That
    decision is the one the whole list would get when it cuts strictly inside the tail and
    the message before the cut is already over the budget (tokens only grow going back, and
    whether a cut is pair-safe depends only on the messages after it), and when the head
    read holds the whole pinned head. Otherwise ``r`` (or ``h``) grows fourfold, up to the
    whole list.
    """
    n = len(objs)
    counter = skeletons.counts if counter is None else counter
    h = min(n, 8)
    r = 256

    def decide(sk: list[Any]) -> tuple[Ranges, bool, bool]:
        return _core.cut_window(
            sk,
            "budget",
            budget,
            pin_task=pin_task,
            start_with_user=start_with_user,
            counter=counter,
        )

    while True:
        if h + r >= n:
            sk = skeletons.of(objs)
            ranges, unchanged, over = decide(sk)
            skeletons.trim(objs)
            return ranges, unchanged, over
        head = skeletons.of(objs[:h])
        tail_start = n - r
        tail = skeletons.of(objs[tail_start:], tail_start)
        system_end, task, _, _ = MessageLog(head).pinned_head(pin_task)
        if system_end >= h or (pin_task and task is None):
            h *= 4  # the pinned head may go on past what was read
            continue
        sk = head + tail
        ranges, unchanged, over = decide(sk)
        if not ranges:  # nothing kept at all: let the whole list decide
            r = n
            continue
        s = ranges[-1][0]
        pinned = ranges[:-1]
        if (
            not unchanged
            and s > h
            and all(b < h for _, b in pinned)
            and closed_from(sk, s)[0]  # no result kept whose call is in the part not read
            and (
                over
                or _tokens(sk[s - 1 :], counter) + sum(_tokens(sk[a:b], counter) for a, b in pinned)
                > budget
            )
        ):
            shift = tail_start - h
            skeletons.trim([*objs[:h], *objs[tail_start:]])
            return (
                [*pinned, (s + shift, ranges[-1][1] + shift)],
                False,
                over,
            )
        r *= 4


def take(objs: Sequence[T], ranges: Ranges) -> list[T]:
    """``objs[a:b]`` for each range, concatenated."""
    if len(ranges) == 1:
        a, b = ranges[0]
        return list(objs[a:b])
    out: list[T] = []
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
    """A skeleton list kept in step with a framework's append-only message list.

    ``sync(messages)`` appends skeletons for new messages only (O(new)); if the list was
    replaced or rewritten (``clear``, ``load_state``), which it detects by the identity of
    its first and last mirrored objects, it rebuilds — reusing the skeleton of every
    message object it has seen (``Skeletons``), so a rebuild converts nothing twice. With
    ``with_log`` it also keeps a :class:`MessageLog` of the skeletons (O(1) safe-cut
    queries), extended the same way.
    """

    def __init__(self, skeletons: Skeletons[T], *, with_log: bool = False) -> None:
        self.skeletons = skeletons
        self._with_log = with_log
        self.source: list[T] = []
        self.list: list[Message] = []
        self.log = MessageLog()

    def sync(self, messages: Sequence[T]) -> list[Message]:
        src = self.source
        k = len(src)
        if k and (len(messages) < k or messages[0] is not src[0] or messages[k - 1] is not src[-1]):
            self.reset()
            src = self.source
            k = 0
        if len(messages) > k:
            new = messages[k:]
            skeletons = self.skeletons.of(new, k)
            self.list.extend(skeletons)
            if self._with_log:
                self.log.extend(skeletons)
            src.extend(new)
            self.skeletons.trim(src)
        return self.list

    def reset(self) -> None:
        self.source = []
        self.list = []
        self.log = MessageLog()
