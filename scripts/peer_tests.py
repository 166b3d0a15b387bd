"""Run the frameworks' own tests against ctxtrim's drop-ins (``make peer-tests``).

    python scripts/peer_tests.py [--only NAME ...] [--keep DIR]

For each framework ctxtrim replaces a component of, the script

1. downloads the framework's published sdist at the installed version
   (``pip download --no-deps --no-binary :all: DIST==VERSION``) into a temporary directory,
2. extracts the test files that exercise the replaced component (and the test helpers they
   import) and the sdist's ``pyproject.toml`` (for its pytest settings),
3. rewrites, in those test files only, the import of the replaced component into an import
   of ctxtrim's drop-in under the same name (``from langchain_core.messages.utils import
   trim_messages`` becomes ``from ctxtrim.integrations.langchain import trim_messages``),
4. runs pytest on them and compares every outcome with tests/peer_expected_differences.toml.

The target fails when a test fails that the list does not name, when a listed test passes
(the entry must go), when a listed test no longer exists, when a test is skipped (a missing
package would shrink the run unseen), when no test runs, or when an import to swap is not
found (the upstream test changed: the swap would silently test the original). The project
contains no copy of the frameworks' tests: they exist only in the temporary directory.

Needs the ``peer-tests`` extra besides ``test`` (the extra packages the upstream tests
import): ``pip install 'ctxtrim[test,peer-tests]'``.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = ROOT / "tests" / "peer_expected_differences.toml"


@dataclass(frozen=True)
class Swap:
    """``from <module> import <name>`` becomes ``from <target> import <replacement> as <name>``."""

    modules: tuple[str, ...]
    name: str
    target: str
    replacement: str


@dataclass(frozen=True)
class Framework:
    name: str
    dist: str  # the distribution on the package index (its installed version is tested)
    extract: tuple[str, ...]  # sdist members to extract: paths, or "dir/**" (sdist-relative)
    run: tuple[str, ...]  # the test files to run; the swaps apply to these files only
    swaps: tuple[Swap, ...]
    # Parametrized cases (regular expressions on the case id, ``[...]``) that run another
    # class than the replaced one, so say nothing about ctxtrim's: deselected.
    exclude: tuple[str, ...] = ()


_AUTOGEN = "autogen_core.model_context"
_LC_MW = "tests/unit_tests/agents/middleware/implementations"
_CTX_MW = "ctxtrim.integrations.langchain_middleware"
_AGENTS = ("agents", "agents.memory", "agents.memory.sqlite_session")

# Not here: llama-index-core (its sdist ships no tests, only the package), whose Memory runs
# side by side with ctxtrim's drop-in in tests/integrations/test_integration_llama_index.py.
FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        name="langchain",
        dist="langchain-core",
        extract=(
            "tests/__init__.py",
            "tests/unit_tests/__init__.py",
            "tests/unit_tests/messages/__init__.py",
            "tests/unit_tests/messages/test_utils.py",
        ),
        run=("tests/unit_tests/messages/test_utils.py",),
        swaps=(
            Swap(
                ("langchain_core.messages.utils", "langchain_core.messages"),
                "trim_messages",
                "ctxtrim.integrations.langchain",
                "trim_messages",
            ),
        ),
    ),
    Framework(
        name="langchain-middleware",
        dist="langchain",
        extract=(
            "tests/__init__.py",
            "tests/unit_tests/__init__.py",
            "tests/unit_tests/agents/__init__.py",
            "tests/unit_tests/agents/model.py",
            "tests/unit_tests/agents/middleware/__init__.py",
            "tests/unit_tests/agents/middleware/implementations/__init__.py",
            f"{_LC_MW}/test_summarization.py",
            f"{_LC_MW}/test_context_editing.py",
        ),
        run=(f"{_LC_MW}/test_summarization.py", f"{_LC_MW}/test_context_editing.py"),
        swaps=tuple(
            Swap((f"langchain.agents.middleware.{module}",), cls, _CTX_MW, cls)
            for module, cls in (
                ("summarization", "SummarizationMiddleware"),
                ("context_editing", "ContextEditingMiddleware"),
                ("context_editing", "ClearToolUsesEdit"),
            )
        ),
    ),
    Framework(
        name="autogen",
        dist="autogen-core",
        extract=("tests/test_model_context.py", "tests/test_memory.py"),
        run=("tests/test_model_context.py", "tests/test_memory.py"),
        swaps=tuple(
            Swap((_AUTOGEN,), cls, "ctxtrim.integrations.autogen", cls)
            for cls in (
                "BufferedChatCompletionContext",
                "HeadAndTailChatCompletionContext",
                "TokenLimitedChatCompletionContext",
                "UnboundedChatCompletionContext",
            )
        ),
    ),
    Framework(
        name="openai-agents",
        dist="openai-agents",
        # The whole tests/ tree: the session tests import its helpers (tests.test_responses,
        # tests.utils …) and its conftest.py sets the tracing up as the tests expect.
        extract=("tests/**",),
        run=(
            "tests/memory/test_session.py",
            "tests/memory/test_session_limit.py",
            "tests/memory/test_compaction_suffix.py",
            "tests/memory/test_compaction_model_visibility.py",
            "tests/memory/test_openai_responses_compaction_session.py",
            "tests/extensions/memory/test_encrypt_session.py",
            "tests/test_agent_runner.py",
            "tests/test_agent_runner_streamed.py",
            "tests/test_max_turns.py",
            "tests/test_tool_batch_failure_history.py",
            "tests/test_native_tool_failure_history.py",
            "tests/test_tool_failure_boundaries.py",
            "tests/test_soft_cancel.py",
            "tests/test_run_impl_resume_paths.py",
            "tests/test_programmatic_tool_calling.py",
        ),
        swaps=(
            Swap(
                _AGENTS,
                "SQLiteSession",
                "ctxtrim.integrations.openai_agents",
                "CtxtrimSQLiteSession",
            ),
        ),
        # test_compaction_suffix.py runs each case on SQLiteSession and on AsyncSQLiteSession
        # (another openai-agents class, not replaced).
        exclude=(r"\[async-sqlite",),
    ),
)

# The pytest plugin that records every test's outcome (written next to the tests).
_REPORT_PLUGIN = '''
import json, os, re

_outcomes = {}
with open(os.environ["CTXTRIM_PEER_SELECT"]) as _f:
    _select = json.load(_f)
_selected = set(_select["tests"])
_exclude = [re.compile(p) for p in _select["exclude"]]


def pytest_collection_modifyitems(config, items):
    """Only the tests that use a replaced component (parametrized cases included)."""
    keep = [
        item
        for item in items
        if item.nodeid.split("[")[0] in _selected
        and not any(p.search(item.nodeid) for p in _exclude)
    ]
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        if hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        else:
            outcome = report.outcome if report.when == "call" else (
                "skipped" if report.skipped else "error")
        if _outcomes.get(report.nodeid) in (None, "passed"):
            _outcomes[report.nodeid] = outcome


def pytest_collectreport(report):
    if report.failed:
        _outcomes[report.nodeid or "<collection>"] = "error"
    elif report.skipped:  # a module-level skip (importorskip of a missing package)
        _outcomes[report.nodeid or "<collection>"] = "skipped"


def pytest_sessionfinish(session):
    with open(os.environ["CTXTRIM_PEER_REPORT"], "w") as f:
        json.dump(_outcomes, f, indent=1, sort_keys=True)
'''


def rewrite(source: str, swaps: tuple[Swap, ...]) -> tuple[str, set[str]]:
    """The source with each swapped name imported from ctxtrim instead; the names swapped."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    swapped: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level:
            continue
        hits = [
            (alias, swap)
            for alias in node.names
            for swap in swaps
            if node.module in swap.modules and alias.name == swap.name
        ]
        if not hits:
            continue
        keep = [a for a in node.names if all(a is not h for h, _ in hits)]
        indent = " " * node.col_offset
        out = []
        if keep:
            out.append(indent + ast.unparse(ast.ImportFrom(node.module, keep, 0)) + "\n")
        for alias, swap in hits:
            local = alias.asname or alias.name
            out.append(f"{indent}from {swap.target} import {swap.replacement} as {local}\n")
            swapped.add(swap.name)
        assert node.end_lineno is not None
        edits.append((node.lineno - 1, node.end_lineno, "".join(out)))
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines), swapped


def touching(source: str, names: set[str]) -> list[str]:
    """The tests of a module that use one of the names: a test function (or a method of a
    Test class) that mentions one, calls a helper of the module that does, or requests a
    fixture that does (helpers and fixtures followed through each other)."""
    tree = ast.parse(source)

    def mentions(node: ast.AST, known: set[str]) -> bool:
        return any(
            (isinstance(n, ast.Name) and n.id in known)
            or (isinstance(n, ast.alias) and n.name in known)  # a local import of it
            for n in ast.walk(node)
        )

    def args(f: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        return {a.arg for a in f.args.args}

    functions = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    helpers: set[str] = set()  # module functions (fixtures too) that reach a name
    while True:
        reach = {
            f.name
            for f in functions
            if not f.name.startswith("test") and (mentions(f, names | helpers) or args(f) & helpers)
        }
        if reach <= helpers:
            break
        helpers |= reach

    def uses(f: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        return mentions(f, names | helpers) or bool(args(f) & helpers)

    tests = [f.name for f in functions if f.name.startswith("test") and uses(f)]
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name.startswith("Test"):
            whole = any(mentions(d, names | helpers) for d in cls.decorator_list)
            tests += [
                f"{cls.name}::{f.name}"
                for f in cls.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and f.name.startswith("test")
                and (whole or uses(f))
            ]
    return tests


def fetch(fw: Framework, work: Path) -> Path:
    """The framework's sdist at its installed version."""
    dest = work / "sdist" / fw.name
    dest.mkdir(parents=True)
    return download(fw.dist, importlib.metadata.version(fw.dist), dest)


def download(dist: str, version: str, dest: Path) -> Path:
    subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--no-binary", ":all:", "--dest", str(dest), f"{dist}=={version}",
        ],
        check=True,
    )  # fmt: skip
    found = [p for p in dest.iterdir() if p.name.endswith((".tar.gz", ".zip"))]
    if len(found) != 1:
        raise SystemExit(f"peer-tests: expected one sdist of {dist} in {dest}, got {found}")
    return found[0]


def extract(sdist: Path, patterns: tuple[str, ...], dest: Path) -> None:
    """The members matching the patterns (paths inside the sdist's top folder), and its
    pyproject.toml, into dest."""
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        wanted = []
        for m in members:
            rel = Path(*Path(m.name).parts[1:])
            if rel.as_posix() == "pyproject.toml" or any(_match(rel, p) for p in patterns):
                m.name = rel.as_posix()
                wanted.append(m)
        tar.extractall(dest, members=wanted, filter="data")


def _match(rel: Path, pattern: str) -> bool:
    if pattern.endswith("/**"):
        return rel.as_posix().startswith(pattern[:-2])
    return rel.as_posix() == pattern


def tiktoken_cache(dest: Path) -> Path | None:
    """A tiktoken cache holding OpenAI's o200k_base and cl100k_base vocabularies, from the
    copies bpe-openai ships (byte-identical: tiktoken checks their SHA-256), so the
    OpenAI client's token counts in autogen's tests need no download."""
    try:
        import bpe_openai.data
        import tiktoken_ext.openai_public as public
    except ImportError:
        return None
    src = Path(public.__file__).read_text()
    shipped = Path(bpe_openai.data.__file__).parent
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("o200k_base", "cl100k_base"):
        urls = re.findall(rf'"(https://[^"]+/{name}\.tiktoken)"', src)
        gz = shipped / f"{name}.tiktoken.gz"
        if len(urls) != 1 or not gz.exists():
            continue
        key = hashlib.sha1(urls[0].encode()).hexdigest()
        (dest / key).write_bytes(gzip.decompress(gz.read_bytes()))
    return dest


@dataclass
class Result:
    framework: str
    version: str
    outcomes: dict[str, str]
    problems: list[str]

    def count(self, *outcomes: str) -> int:
        return sum(o in outcomes for o in self.outcomes.values())


def run_one(
    fw: Framework, sdist: Path, work: Path, expected: dict[str, str], env: dict[str, str]
) -> Result:
    version = importlib.metadata.version(fw.dist)
    print(f"\n=== {fw.name}: {fw.dist} {version}", flush=True)
    problems: list[str] = []
    tree = work / fw.name
    tree.mkdir()
    extract(sdist, fw.extract, tree)
    swapped: set[str] = set()
    selected: list[str] = []
    for rel in fw.run:
        path = tree / rel
        if not path.exists():
            problems.append(f"{rel}: not in the {fw.dist} {version} sdist")
            continue
        source = path.read_text()
        text, names = rewrite(source, fw.swaps)
        path.write_text(text)
        swapped |= names
        selected += [f"{rel}::{t}" for t in touching(source, {s.name for s in fw.swaps})]
    for swap in fw.swaps:
        if swap.name not in swapped:
            problems.append(f"no import of {swap.name} to swap in {', '.join(fw.run)}")
    (tree / "ctxtrim_peer_report.py").write_text(_REPORT_PLUGIN)
    report = tree / "outcomes.json"
    select = tree / "selected.json"
    select.write_text(json.dumps({"tests": selected, "exclude": fw.exclude}))
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-p", "ctxtrim_peer_report", "-o", "addopts=",
        "-W", "ignore::DeprecationWarning", *fw.run,
    ]  # fmt: skip
    if importlib.util.find_spec("pytest_timeout"):
        cmd += ["-o", "timeout=120"]  # a hung upstream test fails instead of stalling CI
    run_env = {
        **env,
        # The tests' tree first; then the caller's path, so a checkout's ctxtrim
        # (PYTHONPATH=python) is the one tested rather than whichever is installed.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")])),
        "CTXTRIM_PEER_REPORT": str(report),
        "CTXTRIM_PEER_SELECT": str(select),
    }
    proc = subprocess.run(cmd, cwd=tree, env=run_env, capture_output=True, text=True)
    log = work / f"{fw.name}.log"
    log.write_text(proc.stdout + proc.stderr)
    if not report.exists():
        print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n")
        problems.append(f"pytest ended without a report (exit {proc.returncode})")
        return Result(fw.name, version, {}, problems)
    outcomes: dict[str, str] = json.loads(report.read_text())
    if not outcomes:
        problems.append("no upstream test ran")
    covered: set[str] = set()
    for test, outcome in sorted(outcomes.items()):
        entry = listed(test, expected)
        if entry is not None:
            covered.add(entry)
        if outcome in ("failed", "error", "xpassed") and entry is None:
            problems.append(f"{test}: {outcome}, not on the expected-differences list")
            _print_failure(proc.stdout, test)
        elif entry is not None and outcome == "passed":
            problems.append(f"{test}: passes now; take it off the expected-differences list")
        elif outcome == "skipped":  # a missing package would silently shrink the run
            problems.append(f"{test}: skipped (the reason: --keep DIR, then DIR/{fw.name}.log)")
    for entry in expected:
        if entry not in covered:
            problems.append(f"{entry}: on the expected-differences list but not run")
    return Result(fw.name, version, outcomes, problems)


def listed(test: str, expected: dict[str, str]) -> str | None:
    """The list's entry for a test id: the id itself, or the id without its parameters
    (an entry for every case of a parametrized test)."""
    if test in expected:
        return test
    base = test.split("[")[0]
    return base if base in expected else None


def _print_failure(stdout: str, test: str) -> None:
    name = test.split("::")[-1]
    start = stdout.find(f"_ {name} _")
    if start >= 0:
        end = stdout.find("\n_____", start + 1)
        print(stdout[start : end if end > 0 else start + 4000][:4000])


def load_expected(path: Path = EXPECTED) -> dict[str, dict[str, str]]:
    """framework -> {test id: why}, from the [[difference]] tables of the list."""
    data = tomllib.loads(path.read_text())
    out: dict[str, dict[str, str]] = {fw.name: {} for fw in FRAMEWORKS}
    for entry in data.get("difference", []):
        framework, tests, why = entry.get("framework"), entry.get("tests"), entry.get("why")
        if framework not in out or not tests or not why:
            raise SystemExit(f"{path}: a [[difference]] needs framework, tests, why: {entry}")
        # The only reason a drop-in may fail an upstream test: the test wants the orphaned
        # tool result or split call the original hands out.
        if entry.get("kind") != "pair-safety":
            raise SystemExit(f"{path}: kind must be pair-safety: {entry}")
        for test in tests:
            if test in out[framework]:
                raise SystemExit(f"{path}: {test} is listed twice")
            out[framework][test] = why
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=[fw.name for fw in FRAMEWORKS])
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    parser.add_argument("--list", type=Path, default=EXPECTED, help="the expected differences")
    args = parser.parse_args(argv)
    expected = load_expected(args.list)
    chosen = [fw for fw in FRAMEWORKS if not args.only or fw.name in args.only]
    work = args.keep or Path(tempfile.mkdtemp(prefix="ctxtrim-peer-tests."))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    cache = tiktoken_cache(work / "tiktoken")
    if cache is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        # The downloads at once (the index's latency dominates), the runs one by one.
        with ThreadPoolExecutor() as pool:
            sdists = list(pool.map(lambda fw: fetch(fw, work), chosen))
        results = [
            run_one(fw, sdist, work, expected[fw.name], env)
            for fw, sdist in zip(chosen, sdists, strict=True)
        ]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n| framework | version | run | passed | expected differences | skipped |")
    print("|---|---|---|---|---|---|")
    for r in results:
        run = len(r.outcomes)
        on_list = sum(listed(t, expected[r.framework]) is not None for t in r.outcomes)
        passed, skipped = r.count("passed"), r.count("skipped")
        print(f"| {r.framework} | {r.version} | {run} | {passed} | {on_list} | {skipped} |")
    problems = [f"{r.framework}: {p}" for r in results for p in r.problems]
    for p in problems:
        print("peer-tests:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
