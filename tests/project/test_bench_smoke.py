"""The side-by-side runner (`ctxtrim.bench`) in its tiny smoke mode: it measures every
workload for ctxtrim, lists missing peers as skipped with a reason, renders Markdown and a
chart, and its corpora and histories are deterministic. Numbers are not asserted (speed is
for benchmarks); their consistency is."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import bench, validate
from ctxtrim.bench import axio, cli, loops, peers
from ctxtrim.bench.timing import Progress


@pytest.fixture(scope="module")
def table() -> bench.Table:
    return bench.run(quick=True, progress=False, smoke=True)


def test_every_workload_has_a_ctxtrim_measurement(table: bench.Table) -> None:
    for workload in (
        bench.SERVER_TURN,
        bench.PLAIN_LIST,
        bench.SEED_LOOP,
        bench.LOOP,
        bench.PER_TURN,
        bench.APPEND,
        bench.GET_HISTORY,
        bench.FORK,
        bench.ESTIMATE,
    ):
        ours = [r for r in table.rows if r.workload == workload and r.impl.startswith("ctxtrim")]
        assert ours, workload
        assert all(r.seconds is not None and r.seconds > 0 for r in ours), workload


def test_ratios_are_peer_time_over_ctxtrim_time_in_the_same_group(table: bench.Table) -> None:
    for row in table.rows:
        if row.seconds is None:
            assert row.ratio is None and row.note, row
            continue
        group = [
            r
            for r in table.rows
            if (r.workload, r.size) == (row.workload, row.size) and r.impl.startswith("ctxtrim")
        ]
        # same interpreter first (the Python 3.12 subprocess times ctxtrim too), else this one
        same = [r for r in group if r.note == row.note] or [r for r in group if not r.note]
        ref = same[0]
        assert ref.seconds is not None and row.ratio is not None
        assert math.isclose(row.ratio, row.seconds / ref.seconds, rel_tol=1e-9)


def test_floors_are_measured(table: bench.Table) -> None:
    assert table.find(bench.APPEND, "200 appends", "Python list.append") is not None
    assert table.find(bench.GET_HISTORY, "400", "Python list copy") is not None


def test_markdown_lists_rows_accuracy_goals_and_machine(table: bench.Table) -> None:
    text = table.markdown()
    assert text.startswith("Machine: ")
    assert "| workload | size | implementation | time per op | peer / ctxtrim |" in text
    for row in table.rows:
        assert row.impl in text
    assert " goal | measured | met |" in text  # the goals table's header
    assert "append within 3× of list.append" in text  # noqa: RUF001


def test_missing_peer_is_listed_as_skipped_with_its_package(monkeypatch: Any) -> None:
    real = peers.has
    monkeypatch.setattr(peers, "has", lambda m: False if m.startswith("agentix") else real(m))
    names = {name: reason for name, factory, reason in loops.loop_factories(bench.agent_history(2))}
    assert names["agentix FitContextWindow"] == "agentix-toolkit not installed"


def test_missing_python312_is_said_not_hidden(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("CTXTRIM_BENCH_PY312", str(tmp_path / "no-python"))
    rows: list[bench.Row] = []
    axio.bench_axio(bench.SMOKE, rows, Progress(1, enabled=False))
    assert rows and all(r.skipped for r in rows)
    assert all("Python >= 3.12" in r.note for r in rows)


def test_ctxtrim_loop_view_is_provider_valid_and_within_budget() -> None:
    turns = bench.agent_history(600)
    factory = next(f for name, f, _ in loops.loop_factories(turns) if name.startswith("ctxtrim"))
    assert factory is not None
    loop, later = factory(500)
    loop.add(later[0])
    view = loop.fit()
    assert isinstance(view, list)
    assert validate(view) == []
    assert [m.role for m in view[:2]] == ["system", "user"]
    assert len(view) < 4 * 501  # it did trim


def test_histories_and_corpora_are_deterministic() -> None:
    assert bench.agent_history(20) == bench.agent_history(20)
    first, second = bench.corpora(samples=5), bench.corpora(samples=5)
    assert first == second
    assert set(first) == {"English prose", "source code", "JSON tool payloads", "CJK text"}
    assert all(first[k] for k in first)
    assert all(any("\u4e00" <= c <= "\u9fff" for c in t) for t in first["CJK text"])
    result_lengths = [len(t.result) for t in bench.agent_history(50)]
    assert 300 <= sum(result_lengths) / len(result_lengths) <= 400


def test_accuracy_against_a_real_tokenizer() -> None:
    # The estimator's accuracy goal (docs/performance.md, Goals): at most 15 % mean absolute
    # relative error on each corpus, for each encoding priced with its own table; chars/4
    # (what the peers use) is far off on CJK.
    pytest.importorskip("bpe_openai", reason="bpe-openai (in the dev extra) is not installed")
    rows = bench.accuracy(20)
    assert {(r[0], r[1]) for r in rows} == {
        (corpus, tokenizer)
        for corpus in ("English prose", "source code", "JSON tool payloads", "CJK text")
        for tokenizer in ("o200k_base", "cl100k_base")
    }
    for corpus, tokenizer, ours, naive, n in rows:
        assert n == 20
        assert ours <= 0.15, (corpus, tokenizer, ours)
        if corpus == "CJK text":
            assert naive > 0.5 and ours < naive / 5, (tokenizer, ours, naive)


def test_progress_bar_goes_to_stderr(capsys: Any) -> None:
    bar = Progress(4, enabled=True)
    bar.step("first")
    bar.step("second")
    out, err = capsys.readouterr()
    assert out == ""
    assert "[###############...............] 2/4 second" in err


def test_main_writes_markdown_and_chart(
    table: bench.Table, monkeypatch: Any, tmp_path: Path, capsys: Any
) -> None:
    calls: list[tuple[bool, bool, bool]] = []

    def fake_run(
        quick: bool, progress: bool = True, *, smoke: bool = False, python312: str | None = None
    ) -> bench.Table:
        calls.append((quick, progress, smoke))
        return table  # the module's smoke run: main's own job is arguments and output

    monkeypatch.setattr(cli, "run", fake_run)
    md = tmp_path / "bench.md"
    chart = tmp_path / "bench.png"
    want_chart = importlib.util.find_spec("matplotlib") is not None
    argv = ["--smoke", "--markdown", str(md)] + (["--chart", str(chart)] if want_chart else [])
    assert bench.main(argv) == 0
    assert calls == [(False, True, True)]
    out, _ = capsys.readouterr()
    assert md.read_text(encoding="utf-8") == out == table.markdown()
    if want_chart:
        assert chart.read_bytes().startswith(b"\x89PNG")


def test_drive_refuses_a_coroutine_that_suspends() -> None:
    import asyncio

    async def sleeps() -> None:
        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="suspended"):
        bench.drive(sleeps())


def test_the_import_time_script_measures_every_statement() -> None:
    """benches/import_time.py in one run: a row per statement, with its module count (the
    times are not asserted)."""
    script = Path(__file__).resolve().parents[2] / "benches" / "import_time.py"
    out = subprocess.run(
        [sys.executable, str(script), "--runs", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.splitlines()
    spec = importlib.util.spec_from_file_location("import_time", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = {line[: line.index("  ")]: line.split() for line in out[2:]}
    assert list(rows) == list(module.STATEMENTS)
    modules = {name: int(row[-1]) for name, row in rows.items()}
    assert modules["bare interpreter (pass)"] == 0
    assert 0 < modules["import msgspec (the dependency)"] < modules["import ctxtrim"]
    assert modules["import ctxtrim"] <= modules["import ctxtrim.cli (ctxtrim --help)"]
