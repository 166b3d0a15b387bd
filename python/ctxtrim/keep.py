"""How much a compaction keeps: a *keep policy* by messages, tokens or a fraction of the
model's window, in the vocabulary of :mod:`ctxtrim.triggers` (and of LangChain's
``SummarizationMiddleware(keep=...)``).

A keep spec is one ``(kind, value)`` pair or a one-entry dict:

* ``("messages", 20)`` keeps **at least** the last 20 messages: the cut is moved back to the
  nearest pair-safe index, so slightly more may be kept (what ``keep_recent=20`` always did);
* ``("tokens", 3000)`` keeps **at most** 3,000 tokens: the longest pair-safe suffix whose
  tokens fit (possibly empty, when the newest tool call with its results alone is larger);
* ``("fraction", 0.3)`` is ``("tokens", int(0.3 * window))``, turned into tokens once, so
  the window must be known (``model=`` looked up in :mod:`ctxtrim.models`, or given).

Invariant: :meth:`Keep.cut` returns a safe cut of the log (no tool use before it has its
result after it), never below ``floor``; tokens are the log's own (ctxtrim's counters,
cached per message, so a cut is a binary search over prefix sums, not a recount).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ctxtrim import _core

__all__ = ["KEEP_KINDS", "Keep", "KeepSpec"]

#: The kinds of keep policy.
KEEP_KINDS = ("messages", "tokens", "fraction")

KeepSpec = Any  # a (kind, value) pair or a one-entry dict: see the module docstring


@dataclass(frozen=True, slots=True)
class Keep:
    """A parsed keep policy: ``kind`` is ``"messages"`` or ``"tokens"`` (a fraction is
    already tokens); ``spec`` is what the caller wrote, for messages."""

    kind: Literal["messages", "tokens"]
    value: int
    spec: str

    @classmethod
    def parse(cls, spec: KeepSpec, *, window: int | None, error: type[Exception]) -> Keep:
        """The policy ``spec`` says; ``window`` (tokens) turns a fraction into tokens;
        ``error`` is raised, naming the problem, for a bad spec."""
        if isinstance(spec, Mapping):
            if len(spec) != 1:
                raise error(
                    f"keep: one condition, as (kind, value) or {{kind: value}}, got {spec!r}"
                )
            ((kind, value),) = spec.items()
        elif isinstance(spec, tuple) and len(spec) == 2:
            kind, value = spec
        else:
            raise error(
                f"keep must be a (kind, value) pair such as ('messages', 20), "
                f"('tokens', 3000) or ('fraction', 0.3), got {spec!r}"
            )
        if kind not in KEEP_KINDS:
            raise error(f"keep: unknown kind {kind!r}; expected one of {', '.join(KEEP_KINDS)}")
        if kind == "fraction":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise error(f"keep: fraction must be a number in (0, 1], got {value!r}")
            if window is None:
                raise error(
                    "keep: a fraction needs the model's context window: give model= "
                    "(looked up in ctxtrim.models) or context_window="
                )
            return cls("tokens", max(1, int(window * value)), repr(spec))
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise error(f"keep: {kind} must be an int >= 0, got {value!r}")
        return cls(kind, value, repr(spec))

    @classmethod
    def messages(cls, n: int) -> Keep:
        """``("messages", n)``: what ``keep_recent=n`` means."""
        return cls("messages", n, repr(("messages", n)))

    def cut(self, log: _core.MessageLog, floor: int = 0) -> int:
        """Where the kept part of ``log`` starts: a safe cut >= ``floor`` (``len(log)``
        when nothing is kept)."""
        n = len(log)
        if self.kind == "messages":
            return max(floor, log.safe_cut_at_or_before(max(floor, n - self.value)))
        # The earliest start whose suffix fits (suffix tokens shrink as the start grows:
        # binary search on the prefix sums), then forward to a safe cut, which only drops
        # more, so the kept part still fits.
        lo, hi = floor, n
        while lo < hi:
            mid = (lo + hi) // 2
            if log.tokens(mid, n) <= self.value:
                hi = mid
            else:
                lo = mid + 1
        return log.safe_cut_at_or_after(lo)
