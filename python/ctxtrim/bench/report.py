# ruff: noqa: RUF001, RUF002, RUF003  (the tables print ×)
"""The results of a run: the workloads' names, rows, ratios, the Markdown table and chart.

A :class:`Row` is one measurement ``(workload, size, implementation, seconds per
operation, ratio)``; *ratio* is the implementation's time divided by ctxtrim's time for
the same workload and size (:func:`with_ratios`), so 40.0 means ctxtrim is 40× faster and
the Python floors (``list.append``, a list copy) come out below 1. A peer that is not
installed, or too slow for a size, is a row with ``seconds=None`` and the reason in
``note``, never silently missing. :class:`Table` holds a run's rows, its token-accuracy
results and its goals (:mod:`ctxtrim.bench.goals`), and renders them as Markdown; it also
draws per-turn cost against history length (needs matplotlib).
"""

from __future__ import annotations

import importlib
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "APPEND",
    "CONSTRUCT",
    "CONVERT",
    "ESTIMATE",
    "FORK",
    "GET_HISTORY",
    "LOOP",
    "PER_TURN",
    "PLAIN_LIST",
    "SEED_LOOP",
    "SERVER_TURN",
    "SQLITE_APPEND",
    "SQLITE_READ",
    "SQLITE_TURN",
    "TOOL_INPUT_JSON",
    "Goal",
    "Row",
    "Table",
    "fmt_ratio",
    "fmt_time",
    "machine_description",
    "with_ratios",
]

# The workloads, in the order a run measures them (the user paths first).
SERVER_TURN = "OpenAI-chat server turn (dicts in → window dicts out)"
SQLITE_TURN = "the same turn on SQLite (NORMAL)"
PLAIN_LIST = "plain list: append 4 Messages + FitContextWindow(8000)"
SEED_LOOP = "agent loop as the seeds write it: Message(role, [blocks]), await append, apply"
CONSTRUCT = "Message construction, 4 kinds"
CONVERT = "provider conversion, per message"
TOOL_INPUT_JSON = "tool-call input as JSON text, per tool call"
LOOP = "agent loop, mean per turn"
PER_TURN = "per-turn cost at n messages"
APPEND = "append one message"
GET_HISTORY = "get_history()"
FORK = "fork"
ESTIMATE = "token estimate throughput"
SQLITE_APPEND = "SQLite append"
SQLITE_READ = "SQLite full read"


@dataclass(frozen=True, slots=True)
class Row:
    """One measurement. ``seconds`` is per operation (None when skipped); ``ratio`` is the
    peer's time over ctxtrim's for the same workload and size (1.0 for ctxtrim itself)."""

    workload: str
    size: str
    impl: str
    seconds: float | None
    ratio: float | None = None
    note: str = ""

    @property
    def skipped(self) -> bool:
        return self.seconds is None


@dataclass(frozen=True, slots=True)
class Goal:
    """A goal of docs/performance.md checked against this run."""

    goal: str
    measured: str
    met: bool | None  # None: could not be measured in this run (a peer missing)


@dataclass
class Table:
    """The rows of one run, the token-accuracy results, the goals and the machine."""

    rows: list[Row] = field(default_factory=list)
    accuracy: list[tuple[str, str, float, float, int]] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    machine: str = ""
    quick: bool = False

    def find(self, workload: str, size: str, impl: str) -> Row | None:
        for row in self.rows:
            if (row.workload, row.size, row.impl) == (workload, size, impl):
                return row
        return None

    def skipped(self) -> list[Row]:
        return [r for r in self.rows if r.skipped]

    def markdown(self) -> str:
        """The whole run as Markdown: ratios, token accuracy, goals, machine."""
        lines = [
            f"Machine: {self.machine}" + (" (quick run)" if self.quick else ""),
            "",
            "| workload | size | implementation | time per op | peer / ctxtrim |",
            "|---|---|---|---:|---:|",
        ]
        for r in self.rows:
            if r.skipped:
                lines.append(f"| {r.workload} | {r.size} | {r.impl} | skipped: {r.note} | |")
                continue
            ratio = "" if r.ratio is None else fmt_ratio(r.ratio)
            note = f" ({r.note})" if r.note else ""
            lines.append(
                f"| {r.workload} | {r.size} | {r.impl}{note} | {fmt_time(r.seconds)} | {ratio} |"
            )
        if self.accuracy:
            lines += [
                "",
                "Token-estimate accuracy: mean absolute relative error against a real tokenizer "
                "(target ≤ 15 % on every corpus).",
                "",
                "| corpus | tokenizer | ctxtrim `estimate_tokens` | chars / 4 | samples |",
                "|---|---|---:|---:|---:|",
            ]
            for corpus, tok, ours, naive, n in self.accuracy:
                lines.append(f"| {corpus} | {tok} | {ours:.1%} | {naive:.1%} | {n} |")
        if self.goals:
            lines += ["", "| goal | measured | met |", "|---|---|---|"]
            for g in self.goals:
                met = "n/a" if g.met is None else ("yes" if g.met else "**no**")
                lines.append(f"| {g.goal} | {g.measured} | {met} |")
        return "\n".join(lines) + "\n"

    def curve(self) -> dict[str, list[tuple[int, float]]]:
        """Per-turn cost against history length, per implementation (for the chart)."""
        out: dict[str, list[tuple[int, float]]] = {}
        for r in self.rows:
            if r.workload == PER_TURN and r.seconds is not None:
                out.setdefault(r.impl, []).append((int(r.size.replace(",", "")), r.seconds))
        return out

    def write_chart(self, path: str | os.PathLike[str]) -> None:
        """A PNG of per-turn cost (append 4 messages + fit 8k) against history length."""
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt = importlib.import_module("matplotlib.pyplot")
        fig, ax = plt.subplots(figsize=(9.5, 4.8), dpi=110)
        for impl, points in sorted(self.curve().items()):
            points.sort()
            xs = [p[0] for p in points]
            ys = [p[1] * 1e6 for p in points]
            style = "-o" if impl.startswith("ctxtrim") else "--s"
            ax.plot(xs, ys, style, label=impl, linewidth=2 if impl.startswith("ctxtrim") else 1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("messages in the history")
        ax.set_ylabel("µs per agent turn (append 4 + fit 8k tokens)")
        ax.set_title("Per-turn cost against history length (lower is better)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        fig.savefig(os.fspath(path))
        plt.close(fig)


def with_ratios(rows: list[Row]) -> list[Row]:
    """``rows`` with ``ratio`` = time / ctxtrim's time, per (workload, size, interpreter).
    The reference of a group is its first ctxtrim row; rows from the Python 3.12 subprocess
    (their note names it) are compared with ctxtrim timed in that same subprocess when it
    was (fork, get_history), else with ctxtrim in this process (SQLite, I/O-bound)."""

    def key(r: Row) -> tuple[str, str, str]:
        return (r.workload, r.size, r.note if "subprocess" in r.note else "")

    ref: dict[tuple[str, str, str], float] = {}
    for r in rows:
        if r.impl.startswith("ctxtrim") and r.seconds and key(r) not in ref:
            ref[key(r)] = r.seconds
    out = []
    for r in rows:
        base = ref.get(key(r), ref.get((r.workload, r.size, "")))
        ratio = None if (r.seconds is None or base is None) else r.seconds / base
        out.append(Row(r.workload, r.size, r.impl, r.seconds, ratio, r.note))
    return out


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:,.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.2f} µs"
    return f"{seconds * 1e9:.0f} ns"


def machine_description() -> str:
    """CPU model, cores, OS and Python version of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )
