"""What the installed distribution promises: `python -m ctxtrim` is the `ctxtrim` command,
the metadata is complete (licence, Python range, typed), and a plain install pulls in only
what the main job needs."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import ctxtrim


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxtrim", *args], capture_output=True, text=True, timeout=60
    )


def test_python_m_ctxtrim_is_the_command() -> None:
    proc = run_module("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ctxtrim {ctxtrim.__version__}"
    proc = run_module("trim", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: ctxtrim trim")


def test_python_m_ctxtrim_reports_bad_input_like_the_command(tmp_path: Path) -> None:
    proc = run_module("stats", str(tmp_path / "missing.json"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("ctxtrim: error: ") and proc.stderr.count("\n") == 1


def test_metadata_is_complete() -> None:
    meta = metadata.metadata("ctxtrim")
    assert meta["Name"] == "ctxtrim" and meta["Version"] == ctxtrim.__version__
    assert meta["Requires-Python"] == ">=3.10"
    assert "MIT" in (meta.get("License") or meta.get("License-Expression") or "")  # type: ignore[attr-defined]  # an email Message at runtime; typeshed's protocol lacks get
    classifiers = set(meta.get_all("Classifier") or [])
    assert {
        "Typing :: Typed",
        "License :: OSI Approved :: MIT License",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.13",
        "Programming Language :: Rust",
    } <= classifiers
    # There is no public home yet: no invented URLs.
    assert not meta.get_all("Project-URL") and not meta.get("Home-page")  # type: ignore[attr-defined]  # an email Message at runtime; typeshed's protocol lacks get
    assert (Path(ctxtrim.__file__).parent / "py.typed").exists()


def test_a_plain_install_needs_only_msgspec() -> None:
    """`pip install .` (the README's first command) brings msgspec and nothing else; the
    test suite's needs are in the `test` extra."""
    requires = metadata.requires("ctxtrim") or []
    plain = [r for r in requires if "extra ==" not in r]
    assert plain == ["msgspec>=0.19"]
    extras = set(metadata.metadata("ctxtrim").get_all("Provides-Extra") or [])
    assert {"test", "lint", "build", "dev", "redis", "postgres"} <= extras


#: What a process that only trims never needs: the stores' and compaction's machinery, the
#: exact counters' and the converters' modules, the benchmark harness, the in-place
#: strategies and their trigger specs, logging (made on the first trim, by ctxtrim.observe)
#: and the standard modules only a rare path uses (JSON of a callable counter, base64 of an
#: inline document). benches/import_time.py measures what the rest costs.
HEAVY = (
    "asyncio",
    "sqlite3",
    "concurrent.futures",
    "ssl",
    "gzip",
    "logging",
    "json",
    "base64",
    "ctxtrim.formats",
    "ctxtrim.bench",
    "ctxtrim.clearing",
    "ctxtrim.triggers",
    "ctxtrim.compaction",
    "ctxtrim.models",
)


def loaded_after(code: str) -> list[list[str]]:
    """Run ``code`` in a fresh interpreter; at each ``probe()`` in it, which of HEAVY are
    loaded."""
    script = f"""
import sys
HEAVY = {HEAVY!r}
def probe():
    print(repr([h for h in HEAVY if h in sys.modules]))  # repr: the probe loads no json
probe()
{code}
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    first, *rest = map(ast.literal_eval, out)
    assert first == []  # the bare interpreter loads none of them
    return rest


def test_import_ctxtrim_is_light_until_a_store_or_compaction_is_used() -> None:
    at_import, after_trim, after_use = loaded_after(
        """
import ctxtrim
probe()
from ctxtrim import FitContextWindow, Message
FitContextWindow(100)([Message.user("hi"), Message.assistant("hello")])
probe()
ctxtrim.SQLiteContextStore, ctxtrim.AutoCompactStore, ctxtrim.compact_context
probe()
"""
    )
    assert at_import == []  # nothing heavy at import
    assert after_trim == ["logging"]  # the first trim makes the ctxtrim.trim logger
    assert {"asyncio", "sqlite3", "ctxtrim.compaction"} <= set(after_use)  # on first use
    assert "ctxtrim.bench" not in after_use


def test_the_command_line_loads_no_benchmark_harness(tmp_path: Path) -> None:
    """`ctxtrim stats` / `trim` / `validate` never import ctxtrim.bench (it loads the peers
    it measures); only `ctxtrim bench` does."""
    session = Path(__file__).resolve().parents[2] / "examples" / "sessions" / "openai_chat.json"
    out = tmp_path / "out.json"
    (loaded,) = loaded_after(
        f"""
import contextlib, io
from ctxtrim.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    main(["stats", {str(session)!r}])
    main(["validate", {str(session)!r}])
    main(["trim", {str(session)!r}, "--max-tokens", "3000", "-o", {str(out)!r}])
probe()
"""
    )
    assert "ctxtrim.bench" not in loaded and "ctxtrim.formats" in loaded


def test_the_lazy_names_are_the_public_api() -> None:
    """Every name of ``ctxtrim.__all__`` is listed by ``dir``, resolves, and is the object
    its module defines; ``validate`` stays the function whoever imports its module first."""
    code = """
import json, sys
import ctxtrim.validate, ctxtrim
listed = sorted(set(ctxtrim.__all__) & set(dir(ctxtrim)))  # before any lazy name is used
ours = {  # classes and functions: not __version__ (a str) or Block (a union)
    name: value.__module__
    for name in ctxtrim.__all__
    if str(getattr(value := getattr(ctxtrim, name), "__module__", "")).startswith("ctxtrim")
}
same = [n for n, module in ours.items() if getattr(sys.modules[module], n) is getattr(ctxtrim, n)]
print(json.dumps([listed, sorted(ours), same, ctxtrim.validate.__module__]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    listed, ours, same, validate_module = json.loads(out)
    assert listed == sorted(ctxtrim.__all__)
    assert len(ours) == len(ctxtrim.__all__) - 2 and sorted(same) == ours
    assert validate_module == "ctxtrim.validate"  # the function, not the module
