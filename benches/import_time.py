"""What ``import ctxtrim`` costs a fresh interpreter, over the bare interpreter's start.

Run: ``python benches/import_time.py [--runs 21] [--python PATH] [--tree DIR ...]``.

Each statement below runs in a fresh ``python -c`` process, the statements taking turns
(round-robin, so a slow stretch of a shared machine falls on all of them alike); reported
are the median wall time of each and the median CPU time (user + system) of its process,
each minus the bare interpreter's (``pass``: the floor on this machine), and how many
modules the statement adds to ``sys.modules``. On a machine shared with other work the CPU
time is the steadier of the two: waiting for a core is not counted in it. With
``--instructions`` (Linux ``perf`` installed and allowed), the user-space instructions each
process retires are counted too (median of 5): a count the machine's other load hardly
moves, to compare checkouts on a busy machine.

msgspec is ctxtrim's one dependency and its message model, so ``import msgspec`` is the
floor of anything that builds a message (it imports typing, timed alone too, datetime,
decimal and uuid); the last line is what ctxtrim adds to it. ``--python`` times another
interpreter: a fresh virtualenv holding only the wheel and msgspec is what ``pip install
ctxtrim`` gives a user, where a development one may hold typing_extensions, which msgspec
then imports, and inspect with it.

Every process reads compiled bytecode, as an installed wheel does (pip compiles it at
install): the runs share a bytecode cache in a temporary directory
(``PYTHONPYCACHEPREFIX``), filled by a first untimed run, whatever
``PYTHONDONTWRITEBYTECODE`` says. A script, not a test: measured, never asserted (the test
suite checks *which* modules ``import ctxtrim`` loads: tests/project/test_packaging.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

STATEMENTS = {
    "bare interpreter (pass)": "pass",
    "import typing": "import typing",
    "import msgspec (the dependency)": "import msgspec",
    "import ctxtrim": "import ctxtrim",
    "from ctxtrim import Message, FitContextWindow": (
        "from ctxtrim import Message, FitContextWindow"
    ),
    "... and the first trim": (
        "from ctxtrim import Message, FitContextWindow\n"
        "FitContextWindow(100)([Message.user('hi'), Message.assistant('hello')])"
    ),
    "import ctxtrim.cli (ctxtrim --help)": "import ctxtrim.cli",
}


def _modules(python: str, code: str, env: dict[str, str]) -> int:
    """How many modules ``code`` adds to those the bare interpreter has at start."""
    probe = f"import sys\nn = len(sys.modules)\n{code}\nprint(len(sys.modules) - n)"
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env)
    out.check_returncode()
    return int(out.stdout) - 1  # `import sys` is already loaded; the probe adds nothing else


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each statement")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        help="a directory holding a ctxtrim package to import (PYTHONPATH); repeat it to "
        "compare checkouts in the same run (default: the ctxtrim this Python imports)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter to time, e.g. a fresh venv's bin/python holding only the wheel "
        "and msgspec (default: the one running this script)",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions with `perf stat`"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        trees = [{**env, "PYTHONPATH": tree} for tree in args.tree] or [env]
        labels = [f" [{tree}]" for tree in args.tree] or [""]
        run(args.python, args.runs, trees, labels, args.instructions)


def _instructions(python: str, code: str, env: dict[str, str]) -> float:
    """Millions of user-space instructions ``python -c code`` retires (median of 5)."""
    counts = []
    for _ in range(5):
        perf = ["perf", "stat", "-x,", "-e", "instructions:u"]
        out = subprocess.run([*perf, python, "-c", code], capture_output=True, text=True, env=env)
        out.check_returncode()
        counts.append(int(out.stderr.strip().splitlines()[-1].split(",")[0]) / 1e6)
    return statistics.median(counts)


def run(
    python: str, runs: int, trees: list[dict[str, str]], labels: list[str], count: bool
) -> None:
    # What does not import ctxtrim runs once, whatever the trees.
    cases = [
        (name + (label if "ctxtrim" in code else ""), code, env)
        for name, code in STATEMENTS.items()
        for env, label in (
            zip(trees, labels, strict=True) if "ctxtrim" in code else [(trees[0], "")]
        )
    ]
    wall: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _, code, env in cases:  # fill the bytecode cache, warm the page cache
        subprocess.run([python, "-c", code], check=True, env=env)
    for _ in range(runs):
        for name, code, env in cases:
            used = _children_cpu()
            t = time.perf_counter()
            subprocess.run([python, "-c", code], check=True, env=env)
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(_children_cpu() - used)
    wall_ms = {name: statistics.median(times) * 1e3 for name, times in wall.items()}
    cpu_ms = {name: statistics.median(times) * 1e3 for name, times in cpu.items()}
    floor, cpu_floor = wall_ms["bare interpreter (pass)"], cpu_ms["bare interpreter (pass)"]
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    load = os.getloadavg()[0]
    print(f"Python {version} ({python}), {runs} runs each, load average {load:.2f}")
    width = max(len(name) for name in wall)
    extra = f" {'M instr':>8} {'over pass':>10}" if count else ""
    print(
        f"{'statement':{width}} {'wall ms':>8} {'over pass':>10} {'CPU ms':>8} {'over pass':>10}"
        f" {'modules':>8}{extra}"
    )
    instr_floor = _instructions(python, "pass", cases[0][2]) if count else 0.0
    for name, code, env in cases:
        w, c = wall_ms[name], cpu_ms[name]
        added = _modules(python, code, env) if code != "pass" else 0
        if count:
            i = _instructions(python, code, env)
            extra = f" {i:>8.1f} {i - instr_floor:>10.1f}"
        print(
            f"{name:{width}} {w:>8.1f} {w - floor:>10.1f} {c:>8.1f}"
            f" {c - cpu_floor:>10.1f} {added:>8}{extra}"
        )
    msgspec = "import msgspec (the dependency)"
    for label in labels:
        ours = "import ctxtrim" + label
        print(
            f"ctxtrim's own share{label} (import ctxtrim - import msgspec): "
            f"{wall_ms[ours] - wall_ms[msgspec]:.1f} ms wall, "
            f"{cpu_ms[ours] - cpu_ms[msgspec]:.1f} ms CPU"
        )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
