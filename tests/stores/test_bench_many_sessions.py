"""The server's-day benchmark (``benches/many_sessions.py``) in a small run: every backend
runs its turns, and the SQLite store's threads and file descriptors do not grow with the
number of sessions. Speed is reported by the script, never asserted here."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


def _bench() -> ModuleType:
    path = Path(__file__).parents[2] / "benches" / "many_sessions.py"
    spec = importlib.util.spec_from_file_location("many_sessions", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("many_sessions", module)
    spec.loader.exec_module(module)
    return module


async def test_sqlite_threads_and_fds_do_not_grow_with_sessions(tmp_path: Path) -> None:
    bench = _bench()
    for backend in ("SQLite FULL", "MemoryContextStore"):
        (few_dir := tmp_path / f"{backend[:6]}-few").mkdir()
        (many_dir := tmp_path / f"{backend[:6]}-many").mkdir()
        few = await bench.run(backend, 10, 2, 3, few_dir)
        many = await bench.run(backend, 300, 2, 3, many_dir)
        assert (few["threads"], few["fds"]) == (many["threads"], many["fds"]), backend
        assert many["turns_per_s"] > 0 and many["p99_ms"] >= many["p50_ms"] > 0


async def test_the_openai_agents_turn_runs_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("agents")
    bench = _bench()
    result = await bench.run("openai-agents SQLiteSession", 5, 2, 3, tmp_path)
    assert result["turns_per_s"] > 0
    window = bench.cut_items([it for i in range(20) for it in bench.turn_items(i)])
    assert 0 < len(window) < 80  # the 8k-token cut keeps the newest items only
