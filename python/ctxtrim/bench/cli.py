"""The entry points: :func:`run` measures everything into a table, :func:`main` is
``ctxtrim bench`` / ``python -m ctxtrim.bench``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .axio import PY312_ENV, bench_axio
from .conversion import bench_conversion, bench_tool_input_json
from .goals import goals
from .history import agent_history
from .loops import bench_loops, loop_factories
from .micro import bench_micro
from .paths import bench_paths
from .plan import FULL, QUICK, SMOKE
from .report import Row, Table, machine_description, with_ratios
from .stores import bench_sqlite
from .timing import Progress
from .tokens import accuracy, bench_estimate

__all__ = ["main", "run"]


def run(
    quick: bool, progress: bool = True, *, smoke: bool = False, python312: str | None = None
) -> Table:
    """Measure every workload for ctxtrim and each installed peer; return the table.

    Args:
        quick: fewer samples of the agent loops (about a minute instead of several); what a
            goal is checked on is measured as in a full run.
        progress: draw a progress bar on stderr.
        smoke: tiny sizes, seconds in total; for tests only (the numbers mean nothing).
        python312: the Python >= 3.12 interpreter for the axio rows (default:
            ``$CTXTRIM_BENCH_PY312``; without one they are skipped, with the reason).
    """
    plan = SMOKE if smoke else (QUICK if quick else FULL)
    n_impls = len(loop_factories(agent_history(1)))
    total = (
        2  # user paths, tool-input JSON
        + n_impls * (len(plan.loop_turns) + len(plan.per_turn_sizes))
        + 3  # append, get_history, token estimate
        + len(plan.fork_sizes)
        + 2  # SQLite: ctxtrim, openai-agents
        + 1  # axio subprocess
        + 1  # token accuracy
    )
    bar = Progress(total, progress)
    rows: list[Row] = []
    # The user paths first: the README leads with them (log-only rows come after).
    repeat = max(3, plan.repeat // 2) if quick else plan.repeat
    bench_paths(rows, smoke=smoke, repeat=repeat)
    bench_conversion(rows, repeat=repeat, smoke=smoke)
    bar.step("user paths")
    bench_tool_input_json(rows, repeat=repeat, smoke=smoke)
    bar.step("tool-call input JSON")
    bench_loops(plan, rows, bar)
    bench_micro(plan, rows, bar)
    bench_estimate(plan, rows, bar)
    bench_sqlite(plan, rows, bar)
    bench_axio(plan, rows, bar, python312)
    table = Table(rows=with_ratios(rows), machine=machine_description(), quick=quick or smoke)
    table.accuracy = accuracy(plan.accuracy_samples)
    bar.step("token accuracy")
    table.goals = goals(table)
    return table


def main(argv: list[str] | None = None) -> int:
    """``ctxtrim bench [--quick] [--markdown FILE] [--chart FILE]``: print the table."""
    parser = argparse.ArgumentParser(
        prog="ctxtrim bench", description="Benchmark ctxtrim against the installed peers."
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer samples of the agent loops (about a minute)"
    )
    parser.add_argument(
        "--python312",
        metavar="PATH",
        help=f"a Python >= 3.12 with ctxtrim, axio and axio-context-sqlite, for the axio rows "
        f"(default: ${PY312_ENV}; without one they are skipped)",
    )
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    parser.add_argument("--chart", metavar="FILE", help="write a PNG chart of per-turn cost")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    table = run(
        args.quick, progress=not args.no_progress, smoke=args.smoke, python312=args.python312
    )
    text = table.markdown()
    sys.stdout.write(text)
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    if args.chart:
        try:
            table.write_chart(args.chart)
        except ImportError:
            sys.stderr.write("ctxtrim bench: --chart needs matplotlib (pip install matplotlib)\n")
            return 2
    skipped = sorted({f"{r.impl}: {r.note}" for r in table.skipped()})
    if skipped:
        sys.stderr.write("".join(f"ctxtrim bench: skipped {s}\n" for s in skipped))
    return 0
