"""What the installed distribution promises: `python -m ctxtrim` is the `ctxtrim` command,
the metadata is complete (licence, Python range, typed), and a plain install pulls in only
what the main job needs."""

from __future__ import annotations

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
#: exact counters' and the converters' modules.
HEAVY = ("asyncio", "sqlite3", "concurrent.futures", "ssl", "gzip", "ctxtrim.formats")


def test_import_ctxtrim_is_light_until_a_store_or_compaction_is_used() -> None:
    probe = f"""
import json, sys
import ctxtrim
print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))
ctxtrim.SQLiteContextStore, ctxtrim.AutoCompactStore, ctxtrim.compact_context
print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))
"""
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert json.loads(out[0]) == []  # nothing heavy at import
    assert {"asyncio", "sqlite3"} <= set(json.loads(out[1]))  # loaded on first use
