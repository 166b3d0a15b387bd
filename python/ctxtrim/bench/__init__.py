# ruff: noqa: RUF002, RUF003  (the docs print ×)
"""Side-by-side benchmarks of ctxtrim against the peer libraries (``ctxtrim bench``).

:func:`run` measures the workloads of the goals table in ``docs/performance.md`` for
ctxtrim and for every peer that is installed, in one process and one run, and returns a
:class:`Table` of rows ``(workload, size, implementation, seconds per operation, ratio)``,
where *ratio* is the peer's time divided by ctxtrim's for the same workload and size (so
40.0 means ctxtrim is 40× faster). :func:`main` (``ctxtrim bench``, ``python -m
ctxtrim.bench``) prints it as Markdown and can draw a chart. The modules, one concern each:

- :mod:`~ctxtrim.bench.history` — the deterministic agent history every side gets.
- :mod:`~ctxtrim.bench.peers` — the peers' message types, built from that history.
- :mod:`~ctxtrim.bench.timing` — how a sample is taken (best-of-N, GC paused, interleaved).
- :mod:`~ctxtrim.bench.paths` — the user paths: a server's turn, a plain list, construction.
- :mod:`~ctxtrim.bench.conversion` — provider conversion, and a tool call's JSON text.
- :mod:`~ctxtrim.bench.loops` — the agent loop: per-turn cost against history length.
- :mod:`~ctxtrim.bench.micro` — append, get_history and fork against the Python floors.
- :mod:`~ctxtrim.bench.tokens` — token estimates: accuracy and throughput.
- :mod:`~ctxtrim.bench.stores` — SQLite append and full read.
- :mod:`~ctxtrim.bench.axio` — axio's rows, from a Python >= 3.12 subprocess.
- :mod:`~ctxtrim.bench.plan` — the sizes of a full, quick and smoke run.
- :mod:`~ctxtrim.bench.report` — rows, ratios, the Markdown table and the chart.
- :mod:`~ctxtrim.bench.goals` — the goals, checked against a run.
- :mod:`~ctxtrim.bench.cli` — :func:`run` and :func:`main`.

Only the standard library and ctxtrim are imported here; peers, tokenizers and matplotlib
are imported when used, and a peer that is not installed is a row that says so.
"""

from __future__ import annotations

from .cli import main, run
from .history import BUDGET, Turn, agent_history, ctxtrim_messages, ctxtrim_turn
from .plan import FULL, QUICK, SMOKE, Plan
from .report import (
    APPEND,
    CONSTRUCT,
    CONVERT,
    ESTIMATE,
    FORK,
    GET_HISTORY,
    LOOP,
    PER_TURN,
    PLAIN_LIST,
    SEED_LOOP,
    SERVER_TURN,
    SQLITE_APPEND,
    SQLITE_READ,
    SQLITE_TURN,
    TOOL_INPUT_JSON,
    Goal,
    Row,
    Table,
)
from .timing import drive
from .tokens import accuracy, corpora

__all__ = [
    "APPEND",
    "BUDGET",
    "CONSTRUCT",
    "CONVERT",
    "ESTIMATE",
    "FORK",
    "FULL",
    "GET_HISTORY",
    "LOOP",
    "PER_TURN",
    "PLAIN_LIST",
    "QUICK",
    "SEED_LOOP",
    "SERVER_TURN",
    "SMOKE",
    "SQLITE_APPEND",
    "SQLITE_READ",
    "SQLITE_TURN",
    "TOOL_INPUT_JSON",
    "Goal",
    "Plan",
    "Row",
    "Table",
    "Turn",
    "accuracy",
    "agent_history",
    "corpora",
    "ctxtrim_messages",
    "ctxtrim_turn",
    "drive",
    "main",
    "run",
]
