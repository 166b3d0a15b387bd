"""What every drop-in shares: framework messages mirrored as ctxtrim skeletons in a log.

A *skeleton* is a :class:`ctxtrim.Message` carrying what trimming needs of one framework
message — its role, the ids of the tool calls it makes and of the results it answers, and
(through the log's ``tokens=``) its token count. The Rust log answers the pair-safe cut
queries on the skeletons; the drop-in maps the chosen indices back to the framework's own
objects, so nothing the user passed in is copied or converted on the way out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from ctxtrim._core import MessageLog
from ctxtrim.messages import Message
from ctxtrim.strategies import ContextStrategy

T = TypeVar("T")

__all__ = ["Mirror", "missing_extra", "select", "shrink_until"]


def missing_extra(framework: str, extra: str, err: ImportError) -> ImportError:
    """The ImportError a drop-in raises when its framework is not installed."""
    return ImportError(
        f"ctxtrim.integrations needs {framework} for this module: "
        f"pip install 'ctxtrim[{extra}]' ({err})"
    )


def select(strategy: ContextStrategy, log: MessageLog) -> list[int | Message]:
    """Run ``strategy`` on the log: per output message, the input index it came from, or
    the new ctxtrim message the strategy made (a placeholder)."""
    skeletons = log.to_list()
    where = {id(m): i for i, m in enumerate(skeletons)}
    out: list[int | Message] = []
    for m in strategy.apply(log):
        i = where.get(id(m))
        out.append(m if i is None else i)
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
    alone when nothing of the suffix fits.
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
    """A log of skeletons kept in step with a framework's append-mostly message list.

    ``sync(messages)`` appends skeletons for new messages only (O(new)); if the list was
    replaced or rewritten (``clear``, ``load_state``, an edit in place), which it detects by
    the identity of its first and last mirrored objects, it rebuilds from scratch. Token
    counts come from ``count`` once per message and stay cached in the log.
    """

    def __init__(
        self,
        skeleton: Callable[[T, int], Message],
        count: Callable[[T], int] | None = None,
    ) -> None:
        self._skeleton = skeleton
        self._count = count
        self._source: list[T] = []
        self.log = MessageLog()

    def _add(self, messages: Sequence[T], start: int) -> None:
        new = messages[start:]
        skeletons = [self._skeleton(m, start + j) for j, m in enumerate(new)]
        tokens = None if self._count is None else [self._count(m) for m in new]
        self.log.extend(skeletons, tokens=tokens)
        self._source.extend(new)

    def sync(self, messages: Sequence[T]) -> MessageLog:
        src = self._source
        k = len(src)
        if k and (len(messages) < k or messages[0] is not src[0] or messages[k - 1] is not src[-1]):
            self._source = []
            self.log = MessageLog()
            k = 0
        if len(messages) > k:
            self._add(messages, k)
        return self.log

    def reset(self) -> None:
        self._source = []
        self.log = MessageLog()
