"""abi3 against a per-version build: the agent-loop and conversion micro paths, timed in two
interpreters that have the two wheels installed, in one run.

    python benches/abi3_vs_version.py VENV_A/bin/python VENV_B/bin/python [--rounds 7]

Each round runs a worker in A, then in B (the order alternates per round, so drift on a
shared machine hits both alike); a worker times every path with ``timeit`` (best of 5) and
prints microseconds per call as JSON. The table gives, per path, the median over the rounds
of each side and B/A. The two interpreters must be the same CPython build (one pyenv
version, two virtualenvs), so the wheel is the only difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SESSION = Path(__file__).resolve().parent.parent / "examples" / "sessions" / "openai_chat.json"


def worker(session_path: str) -> None:
    import timeit

    import ctxtrim
    from ctxtrim import Message, MessageLog, estimate_tokens
    from ctxtrim._core import message_tokens
    from ctxtrim.formats import from_openai_chat, to_openai_chat

    payload = json.loads(Path(session_path).read_text())
    messages = from_openai_chat(payload)
    step = [
        Message.assistant("Reading the file.", tool_uses=[("t1", "read_file", {"path": "a.rs"})]),
        Message.tool_results(("t1", "fn main() {}\n" * 40)),
    ]
    text = "The nightly build fails in the linker step; " * 25  # ~1 KB of English
    full = MessageLog(messages * 20)  # ~1,200 messages

    def agent_step() -> None:  # what a trimmed agent loop does per model call
        log = MessageLog(messages)
        for m in step * 10:
            log.append(m)
            log.fit_budget(3_000)

    paths = {
        "MessageLog.append": (lambda: MessageLog().append(step[0]), 20_000),
        "MessageLog.fit_budget (1.2k msgs)": (lambda: full.fit_budget(8_000), 20_000),
        "agent step (20 x append+fit_budget)": (agent_step, 500),
        "message_tokens": (lambda: message_tokens(step[1]), 50_000),
        "estimate_tokens (1 KB)": (lambda: estimate_tokens(text), 50_000),
        "from_openai_chat (61 msgs)": (lambda: from_openai_chat(payload), 500),
        "to_openai_chat (61 msgs)": (lambda: to_openai_chat(messages), 500),
    }
    out = {"_core": ctxtrim._core.__file__}
    for name, (fn, number) in paths.items():
        best = min(timeit.repeat(fn, number=number, repeat=5))
        out[name] = best / number * 1e6
    print(json.dumps(out))


def run(python: str) -> dict[str, float]:
    proc = subprocess.run(
        [python, __file__, "--worker", str(SESSION)],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",  # never the source tree: time the installed wheel
    )
    result: dict[str, float] = json.loads(proc.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="interpreter with wheel A (e.g. the abi3 wheel)")
    parser.add_argument("b", help="interpreter with wheel B (e.g. the per-version wheel)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"a": [], "b": []}
    for r in range(args.rounds):
        for side in ("a", "b") if r % 2 == 0 else ("b", "a"):
            runs[side].append(run(getattr(args, side)))
    print(f"A: {runs['a'][0]['_core']}\nB: {runs['b'][0]['_core']}\n")
    print("| path | A µs | B µs | B/A |\n|---|---:|---:|---:|")
    for name in runs["a"][0]:
        if name == "_core":
            continue
        a = statistics.median(x[name] for x in runs["a"])
        b = statistics.median(x[name] for x in runs["b"])
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.3f} |")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2])
    else:
        main()
