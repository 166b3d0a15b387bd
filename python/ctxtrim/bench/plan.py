"""How big and how many: the sizes and sample counts of a full, quick and smoke run."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["FULL", "QUICK", "SMOKE", "Plan"]


@dataclass(frozen=True)
class Plan:
    """Sizes and sample counts of one run (see each field)."""

    loop_turns: tuple[int, ...]
    """Agent loops: turns per loop, from an empty history."""
    loop_samples: int
    """Agent loops: turns timed per loop for peers whose fit is O(n)."""
    per_turn_sizes: tuple[int, ...]
    """Per-turn cost: messages already in the history."""
    per_turn_samples: int
    """Per-turn cost: turns timed at each size (the median is kept)."""
    fork_sizes: tuple[int, ...]
    """Fork: messages in the forked store."""
    history_size: int
    """get_history and the token-estimate history: messages."""
    append_count: int
    """Append: messages appended per sample, to a fresh log."""
    sqlite_sizes: tuple[int, int]
    """SQLite append: messages already stored (small, large)."""
    sqlite_appends: int
    """SQLite append: appends timed at each size."""
    accuracy_samples: int
    """Token accuracy and throughput: texts per corpus."""
    repeat: int
    """Samples per micro-benchmark (the best is kept)."""


FULL = Plan(
    (1_000, 10_000),
    60,
    (1_000, 10_000, 100_000),
    20,
    (5_000, 50_000),
    10_000,
    20_000,
    (100, 10_000),
    20,
    60,
    9,
)
# Quick: fewer samples of the agent loops only (their ratios are far from the goals' bars).
# Everything else a goal is checked on (per-turn flatness, append, get_history, the token
# estimate and its corpus, SQLite flatness) is measured as in a full run: with fewer samples
# those come out noisy or on a smaller corpus, and a quick run would report goals unmet that
# a full run meets.
QUICK = dataclasses.replace(FULL, loop_samples=12)
# Smoke: tiny sizes, seconds in total; for the tests (the numbers mean nothing).
SMOKE = Plan((50,), 3, (200, 400), 2, (300,), 400, 200, (20, 200), 3, 4, 1)
