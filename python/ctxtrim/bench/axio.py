"""axio, which needs Python >= 3.12: its fork, get_history and SQLite append, in a subprocess.

The rows come from :func:`child_main`, run by the interpreter named by
``--python312`` or the ``CTXTRIM_BENCH_PY312`` environment variable (a required setting:
there is no default, and without one the axio rows are skipped with that reason). That
interpreter must have this ctxtrim, ``axio`` and ``axio-context-sqlite`` installed. The
subprocess times ctxtrim too, for fork and get_history, so those ratios are
same-interpreter ratios; its rows carry the note ``Python 3.x subprocess``. Measured there:

- **fork**: ``MemoryContextStore.fork()`` (axio deep-copies the history; ctxtrim shares it).
- **get_history()**: the whole history of ``plan.history_size`` messages.
- **SQLite append / full read**: axio-context-sqlite, as :mod:`ctxtrim.bench.stores` times
  ctxtrim's store (axio has no batch append, so the store is filled one by one).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from ctxtrim import MemoryContextStore

from .history import SYSTEM_PROMPT, TASK, Turn, agent_history, ctxtrim_messages
from .micro import fork
from .plan import Plan
from .report import FORK, GET_HISTORY, SQLITE_APPEND, SQLITE_READ, Row
from .stores import time_appends
from .timing import Progress, best, drive

__all__ = ["PY312_ENV", "bench_axio", "child_main", "python312"]

PY312_ENV = "CTXTRIM_BENCH_PY312"
"""The environment variable naming the Python >= 3.12 interpreter for the axio rows."""

_RowTuple = tuple[str, str, str, "float | None", str]


def python312(python: str | None = None) -> tuple[str | None, str]:
    """The Python 3.12 interpreter for axio (``python``, else ``$CTXTRIM_BENCH_PY312``), or
    None and why not."""
    path = python or os.environ.get(PY312_ENV) or None
    if path is None:
        return None, (
            f"axio needs Python >= 3.12: pass --python312 PATH or set {PY312_ENV} to an "
            "interpreter that has ctxtrim, axio and axio-context-sqlite"
        )
    if not Path(path).exists():
        return None, f"axio needs Python >= 3.12: no interpreter at {path}"
    return path, ""


def bench_axio(plan: Plan, rows: list[Row], progress: Progress, python: str | None = None) -> None:
    """Append axio's rows (and ctxtrim's from the same subprocess) to ``rows``, or one
    skipped row per axio workload that says why there are none."""
    py, reason = python312(python)
    if py is not None:
        config = json.dumps(
            {
                "fork_sizes": plan.fork_sizes,
                "history_size": plan.history_size,
                "sqlite_sizes": plan.sqlite_sizes,
                "sqlite_appends": plan.sqlite_appends,
                "repeat": plan.repeat,
            }
        )
        try:
            proc = subprocess.run(
                [py, "-c", "from ctxtrim.bench.axio import child_main; child_main()", config],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason = f"axio subprocess failed: {exc}"
        else:
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                reason = f"axio subprocess failed: {last}"
            else:
                for r in json.loads(proc.stdout.strip().splitlines()[-1]):
                    rows.append(Row(r[0], r[1], r[2], r[3], note=r[4]))
    if reason:
        rows.append(Row(FORK, "", "axio MemoryContextStore.fork()", None, note=reason))
        rows.append(Row(SQLITE_APPEND, "", "axio-context-sqlite", None, note=reason))
    progress.step("axio (Python 3.12 subprocess)")


def _child(cfg: dict[str, Any]) -> list[_RowTuple]:
    """Runs inside the Python 3.12 interpreter: axio's fork, get_history and SQLite append,
    with ctxtrim timed in the same interpreter for the fork and get_history ratios."""
    blocks = importlib.import_module("axio.blocks")
    amsg = importlib.import_module("axio.messages").Message
    actx = importlib.import_module("axio.context")
    note = f"Python {platform.python_version()} subprocess"
    out: list[_RowTuple] = []
    rep = int(cfg["repeat"])

    def axio_turn(t: Turn) -> list[Any]:
        return [
            amsg("user", [blocks.TextBlock(t.user)]),
            amsg("assistant", [blocks.ToolUseBlock(t.call_id, t.tool, t.args)]),
            amsg("user", [blocks.ToolResultBlock(t.call_id, t.result)]),
            amsg("assistant", [blocks.TextBlock(t.answer)]),
        ]

    head = [
        amsg("system", [blocks.TextBlock(SYSTEM_PROMPT)]),
        amsg("user", [blocks.TextBlock(TASK)]),
    ]
    biggest = max(
        [*cfg["fork_sizes"], cfg["history_size"], cfg["sqlite_sizes"][1] + cfg["sqlite_appends"]]
    )
    turns = agent_history(biggest // 4 + 1)
    ours = ctxtrim_messages(turns)
    theirs = head + [m for t in turns for m in axio_turn(t)]

    for f in cfg["fork_sizes"]:
        cstore = MemoryContextStore(ours[:f])
        astore = actx.MemoryContextStore(theirs[:f])
        size = f"{f:,}"
        ctx_fork = best(partial(fork, cstore), number=1000, repeat=rep)
        out.append((FORK, size, "ctxtrim await MemoryContextStore.fork()", ctx_fork, note))
        axio_fork = best(partial(fork, astore), number=1, repeat=max(2, rep // 2))
        out.append((FORK, size, "axio MemoryContextStore.fork() (deepcopy)", axio_fork, note))

    n = cfg["history_size"]
    cstore = MemoryContextStore(ours[:n])
    astore = actx.MemoryContextStore(theirs[:n])
    number = max(1, 20_000 // max(n // 100, 1))
    for impl, store in (
        ("ctxtrim await MemoryContextStore.get_history()", cstore),
        ("axio MemoryContextStore.get_history()", astore),
    ):
        seconds = best(partial(_get_history, store), number=number, repeat=rep)
        out.append((GET_HISTORY, f"{n:,}", impl, seconds, note))

    sqlite = importlib.import_module("axio_context_sqlite")
    small, large = cfg["sqlite_sizes"]
    k = int(cfg["sqlite_appends"])

    async def sqlite_rows(n: int, path: str) -> None:
        conn = await sqlite.connect(path)
        try:
            store = sqlite.SQLiteContextStore(conn, "bench", project="bench")
            for m in theirs[:n]:  # axio has no batch append
                await store.append(m)
            append, read = await time_appends(store.append, store.get_history, theirs[n : n + k])
            out.append((SQLITE_APPEND, f"at {n:,}", "axio-context-sqlite", append, note))
            out.append((SQLITE_READ, f"{n + k:,}", "axio-context-sqlite", read, note))
        finally:
            await conn.close()

    tmp = tempfile.mkdtemp(prefix="ctxtrim-bench-axio-")
    try:
        for n in (small, large):
            asyncio.run(sqlite_rows(n, os.path.join(tmp, f"axio{n}.db")))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _get_history(store: Any) -> object:
    return drive(store.get_history())


def child_main() -> None:
    """The subprocess's entry: the config (JSON) in ``sys.argv[1]``, the rows (JSON) out."""
    print(json.dumps(_child(json.loads(sys.argv[1]))))
