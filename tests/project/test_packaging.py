"""What the installed distribution promises: `python -m ctxtrim` is the `ctxtrim` command,
the metadata is complete (licence, Python range, typed), and a plain install pulls in only
what the main job needs."""

from __future__ import annotations

import ast
import dataclasses
import json
import pickle
import subprocess
import sys
import typing
from importlib import metadata
from pathlib import Path
from typing import Any

import ctxtrim
from ctxtrim import Message


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
#: strategies and their trigger specs, logging (made on the first trim, by ctxtrim.observe;
#: it brings threading), the public records' dataclasses (ctxtrim._records: dataclasses
#: brings inspect, ast, dis and tokenize) and the standard modules only a rare path uses
#: (JSON of a callable counter, base64 of an inline document, bisect of a report,
#: importlib.resources of an exact counter). benches/import_time.py measures what the rest
#: costs. Not listed: what msgspec itself imports (re, and inspect where typing_extensions
#: is installed).
HEAVY = (
    "asyncio",
    "sqlite3",
    "concurrent.futures",
    "ssl",
    "gzip",
    "logging",
    "threading",
    "json",
    "base64",
    "binascii",
    "bisect",
    "dataclasses",
    "importlib.resources",
    "ctxtrim._records",
    "ctxtrim.formats",
    "ctxtrim.bench",
    "ctxtrim.clearing",
    "ctxtrim.triggers",
    "ctxtrim.compaction",
    "ctxtrim.models",
)


def loaded_after(code: str) -> list[list[str]]:
    """Run ``code`` in a fresh interpreter; at each ``probe()`` in it, which of HEAVY are
    loaded that msgspec, ctxtrim's one dependency, did not load itself (on CPython 3.10 its
    ``uuid`` import brings ``platform``, ``subprocess`` and so ``threading``)."""
    script = f"""
import sys
HEAVY = {HEAVY!r}
BASE = set()
def probe():
    loaded = [h for h in HEAVY if h in sys.modules and h not in BASE]
    print(repr(loaded))  # repr: the probe loads no json
probe()
import msgspec
BASE = set(sys.modules)
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
    # The first trim makes the ctxtrim.trim logger (logging brings threading, unless msgspec
    # did), and runs unwatched: no report, no dataclass.
    assert "logging" in after_trim and set(after_trim) <= {"logging", "threading"}
    assert {"asyncio", "sqlite3", "ctxtrim.compaction"} <= set(after_use)  # on first use
    assert "ctxtrim.bench" not in after_use


def test_the_public_records_are_made_on_first_use() -> None:
    """The records are dataclasses, made by the first call that returns one: a trim and the
    ``validate`` of a valid history make none, a report does."""
    after_trim, after_report = loaded_after(
        """
from ctxtrim import FitContextWindow, Message, validate
h = [Message.user("task")] + [Message.assistant(f"r{i}") for i in range(9)]
FitContextWindow(8)(h)
assert validate(h) == []
probe()
FitContextWindow(8).describe(h)
probe()
"""
    )
    assert "dataclasses" not in after_trim and "ctxtrim._records" not in after_trim
    assert {"dataclasses", "ctxtrim._records"} <= set(after_report)


async def test_the_public_records_keep_their_modules_and_dataclass_behaviour() -> None:
    """Made in ``ctxtrim._records``, each record is still the class of the module that
    documents it (its name, ``repr`` and pickles unchanged) and a dataclass (``asdict`` and
    ``replace`` are documented on them); a provider row's hints resolve in its module."""
    from ctxtrim import observe, provider

    history = [Message.user("task")] + [Message.assistant(f"r{i}") for i in range(9)]
    report = ctxtrim.FitContextWindow(8).describe(history)
    events: list[object] = []
    remove = observe.add_listener(events.append)
    try:
        ctxtrim.KeepLastMessages(2)(history)
    finally:
        remove()
    (violation,) = ctxtrim.validate([Message.assistant("first")])
    (session,) = await ctxtrim.MemoryContextStore(history, session_id="s").list_sessions()
    row = provider.SPECS["anthropic"]["web_search_tool_result"]
    records: dict[str, Any] = {
        "ctxtrim.strategies.TrimReport": report,
        "ctxtrim.observe.TrimEvent": events[0],
        "ctxtrim.validate.Violation": violation,
        "ctxtrim.store.SessionInfo": session,
        "ctxtrim.provider.Spec": row,
    }
    for name, record in records.items():
        cls = type(record)
        assert f"{cls.__module__}.{cls.__qualname__}" == name
        assert getattr(sys.modules[cls.__module__], cls.__name__) is cls
        assert dataclasses.replace(record) == record and dataclasses.is_dataclass(record)
        assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.asdict(report)["messages_before"] == 10
    assert provider.UNKNOWN == provider.Spec("any") and row.opaque == ("content",)
    assert typing.get_type_hints(provider.Spec)["side"] == provider.Side


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
