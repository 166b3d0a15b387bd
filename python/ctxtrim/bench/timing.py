"""How ``ctxtrim bench`` takes its times: best-of-N samples, GC paused, sides interleaved.

- A *sample* is the seconds per call over ``number`` calls of a function, taken with
  ``time.perf_counter`` and the garbage collector paused (:func:`sampler`, :func:`paused_gc`),
  for every side alike.
- A comparison takes its samples in interleaved rounds, one sample of each side per round
  (:func:`best_interleaved`), and keeps each side's best: the machine's neighbours make
  timings swing, and a burst of noise then lands on every side of a ratio rather than on
  whichever ran during it.
- Async APIs that never await (agentix ``compact``, autogen contexts, ctxtrim's memory
  store) are stepped directly by :func:`drive`, so no event-loop overhead is charged to
  anyone.
- An agent loop is timed turn by turn (:func:`time_turns`) on evenly spaced turns
  (:func:`spread`) when each fit is O(n), so a 10k-turn loop finishes.

:class:`Progress` is the one-line progress bar of a run (stderr).

pytest-benchmark (the suites in ``benches/``) times one function at a time; the side-by-side
table needs interleaved rounds and turn-by-turn loop timing, hence this small module.
"""

from __future__ import annotations

import gc
import math
import statistics
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

__all__ = [
    "Progress",
    "best",
    "best_interleaved",
    "drive",
    "paused_gc",
    "sampler",
    "spread",
    "time_turns",
]

_T = TypeVar("_T")


def drive(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine that never suspends, without an event loop; one that does suspend
    is closed and a ``RuntimeError`` raised."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: _T = stop.value
        return result
    coro.close()
    raise RuntimeError("coroutine suspended; use asyncio.run")


@contextmanager
def paused_gc() -> Iterator[None]:
    """The garbage collector off for the block (restored as it was)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def sampler(fn: Callable[[], object], *, number: int) -> Callable[[], float]:
    """One sample of ``fn``: seconds per call over ``number`` calls, GC paused, after one
    untimed call. Samples of the sides of a comparison are interleaved, so a sample starts
    right after another side's: the untimed call pays for what that side swept out of the
    CPU's caches (agentix's pass over 100k messages left ctxtrim's next turn at 75-109 us
    against 5-10 us for the rest of the sample, and 12 us after its pass over 1k), which is
    the other side's footprint, not the cost of a turn; a turn from cold caches is measured
    on its own (``benches/http_server.py``)."""

    def sample() -> float:
        with paused_gc():
            fn()
            start = time.perf_counter()
            for _ in range(number):
                fn()
            return (time.perf_counter() - start) / number

    return sample


def sampler_with_setup(
    setup: Callable[[], object], fn: Callable[[], object], *, number: int
) -> Callable[[], float]:
    """One sample of ``fn``, ``setup()`` run untimed before each call: seconds per call over
    ``number`` calls, GC paused (for a first-time cost: setup forgets what the call keeps)."""

    def sample() -> float:
        with paused_gc():
            total = 0.0
            for _ in range(number):
                setup()
                start = time.perf_counter()
                fn()
                total += time.perf_counter() - start
            return total / number

    return sample


def best(fn: Callable[[], object], *, number: int, repeat: int) -> float:
    """Seconds per call: the best of ``repeat`` samples of ``number`` calls, GC paused."""
    sample = sampler(fn, number=number)
    return min(sample() for _ in range(repeat))


def best_interleaved(samplers: dict[str, Callable[[], float]], *, repeat: int) -> dict[str, float]:
    """The best of ``repeat`` samples of each sampler (seconds per op), taken in rounds of one
    sample each, so that a burst of noise from the machine's neighbours hits every side of a
    comparison rather than whichever ran during it."""
    out = dict.fromkeys(samplers, math.inf)
    for _ in range(repeat):
        for name, sample in samplers.items():
            out[name] = min(out[name], sample())
    return out


class Loop(Protocol):
    """What :func:`time_turns` drives (see :class:`ctxtrim.bench.loops.Loop`)."""

    stateful: bool

    def add(self, turn: Any) -> None: ...

    def fit(self) -> object: ...


def time_turns(loop: Loop, later: list[Any], timed: set[int], *, median: bool = False) -> float:
    """Run the loop over ``later`` turns; return the mean (or median) seconds of the
    ``timed`` ones. The median is used where the history length is fixed (per-turn cost at
    n), so a load spike from another process does not decide the number."""
    times: list[float] = []
    clock = time.perf_counter
    loop.fit()  # warm-up: first calls pay for lazy imports and caches in some peers
    for i, turn in enumerate(later):
        if i in timed:
            start = clock()
            loop.add(turn)
            loop.fit()
            times.append(clock() - start)
        else:
            loop.add(turn)
            if loop.stateful:
                loop.fit()
    if not times:
        return 0.0
    return statistics.median(times) if median else statistics.fmean(times)


def spread(n: int, k: int) -> set[int]:
    """``k`` evenly spaced indexes of ``range(n)`` (all of them when ``k >= n``)."""
    if k >= n:
        return set(range(n))
    return {round(i * (n - 1) / (k - 1)) for i in range(k)} if k > 1 else {n - 1}


class Progress:
    """A one-line progress bar on stderr (plain text, no dependency); silent when off."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()

    def step(self, label: str) -> None:
        self.done = min(self.done + 1, self.total)
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // self.total
        bar = "#" * filled + "." * (width - filled)
        text = f"[{bar}] {self.done}/{self.total} {label}"
        if self.tty:
            sys.stderr.write("\r" + text[:120].ljust(120))
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(f"ctxtrim bench: {text}\n")
        sys.stderr.flush()
