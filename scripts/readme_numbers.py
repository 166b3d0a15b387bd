"""The numbers the README states about ctxtrim's own deterministic behaviour, recomputed.

Run: ``python scripts/readme_numbers.py`` (or ``--check``) to list every number that moved
and exit 1 if any did; ``--write`` to rewrite them in place. tests/project/test_readme.py
runs the check, so a change that moves one fails CI until the README says the new value.

Two kinds of number are checked:

* **Console examples**: every ```` ```console ```` block of the README is a list of
  ``$ ctxtrim ...`` commands (``| tail -N`` / ``| head -N`` allowed) and what they print;
  each command is run from the repository root (``-o FILE`` into a temporary directory,
  named back as ``FILE``) and its stdout and stderr compared: as JSON when the block's
  output is JSON, line for line otherwise, where a ``...`` line stands for the lines left
  out between the first ones and the last ones.
* **Stated facts** (:data:`FACTS`): a number in the prose next to the words that say what
  it is (a session's length, an image's price, a default), and the code that computes it.

Measured numbers (timings, sizes, build times, ratios) are not here: no machine can
recompute them, so each is stated with the machine and the date of its measurement, in
docs/performance.md or beside it in the README.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import re
import shlex
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


@dataclass(frozen=True)
class Fact:
    """``pattern`` finds the number(s) in ``doc`` (one regex group each, the text around
    them saying what they are); ``compute`` gives their true values, as the README writes
    them."""

    what: str
    pattern: str
    compute: Callable[[], tuple[str, ...]]
    doc: Path = README


def _n(value: int) -> str:
    return f"{value:,}"


def _png(width: int, height: int) -> bytes:
    """The smallest PNG whose header ctxtrim reads: the signature and the IHDR chunk."""
    ihdr = b"IHDR" + struct.pack(">II", width, height) + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def _image(width: int, height: int, encoding: str) -> str:
    from ctxtrim import _core

    return _n(_core.image_tokens(_png(width, height), encoding=encoding))


def _session_length(name: str) -> tuple[str]:
    from ctxtrim.formats import load

    return (str(len(load(json.loads((ROOT / "examples" / "sessions" / name).read_text())))),)


def _oracle_examples() -> tuple[str]:
    text = (ROOT / "tests" / "trimming" / "test_oracle.py").read_text()
    found = re.search(r'"CTXTRIM_ORACLE_EXAMPLES", "(\d+)"', text)
    assert found, "tests/trimming/test_oracle.py no longer reads CTXTRIM_ORACLE_EXAMPLES"
    return (_n(int(found[1])),)


def _quickstart_steps() -> tuple[str]:
    found = re.search(r"^STEPS = (\d+)", (ROOT / "examples" / "quickstart.py").read_text(), re.M)
    assert found, "examples/quickstart.py no longer sets STEPS"
    return (found[1],)


def _const(module: str, name: str, scale: int = 1, commas: bool = True) -> Callable[[], tuple[str]]:
    def compute() -> tuple[str]:
        import importlib

        value = getattr(importlib.import_module(module), name) // scale
        return (_n(value) if commas else str(value),)

    return compute


def _anthropic_concurrency() -> tuple[str]:
    from ctxtrim import AnthropicTokenCounter

    default = inspect.signature(AnthropicTokenCounter).parameters["max_concurrency"].default
    return (str(default),)


def _redis_pool() -> tuple[str]:
    from ctxtrim.stores import RedisContextStore

    default = inspect.signature(RedisContextStore.open).parameters["max_connections"].default
    return (str(default),)


def _genai_prices() -> tuple[str]:
    import ctxtrim.models

    found = re.search(r"``genai-prices`` package, version ([\d.]+)", ctxtrim.models.__doc__ or "")
    assert found, "ctxtrim.models no longer names the genai-prices version of its windows"
    return (found[1],)


FACTS = [
    Fact(
        "the quickstart's agent loop",
        r"runs the main\s+job on the embedded default: a (\d+)-round agent loop",
        _quickstart_steps,
    ),
    Fact(
        "the Set up example session's length",
        r"trims a (\d+)-message\s+example session to 3,000 tokens",
        lambda: _session_length("anthropic.json"),
    ),
    Fact(
        "OpenAI's price of a 1280x800 and a 64x64 image",
        r"a 1280\N{MULTIPLICATION SIGN}800 screenshot is ([\d,]+), "
        r"a 64\N{MULTIPLICATION SIGN}64 icon ([\d,]+)\)",
        lambda: (_image(1280, 800, "cl100k_base"), _image(64, 64, "cl100k_base")),
    ),
    Fact(
        "Anthropic's price of the same two images",
        r"width \N{MULTIPLICATION SIGN} height / 750 after its resize \(([\d,]+) and ([\d,]+)\)",
        lambda: (_image(1280, 800, "anthropic"), _image(64, 64, "anthropic")),
    ),
    Fact(
        "the price of an image whose header cannot be read",
        r"An image whose header cannot be read\s+costs a flat ([\d,]+)",
        _const("ctxtrim._core", "IMAGE_TOKENS"),
    ),
    Fact(
        "the price of an image behind a URL",
        r"the flat image price\s+\(([\d,]+) tokens\)",
        _const("ctxtrim._core", "IMAGE_TOKENS"),
    ),
    Fact(
        "a PDF page's price",
        r"A PDF counts ([\d,]+) tokens a page",
        _const("ctxtrim.provider", "PDF_PAGE_TOKENS"),
    ),
    Fact(
        "a document of unknown size",
        r"a document behind a URL or a file id ([\d,]+) \(five pages",
        _const("ctxtrim.provider", "UNKNOWN_DOCUMENT_TOKENS"),
    ),
    Fact(
        "a Chat message's framing tokens",
        r"([\d,]+) tokens of framing per chat message",
        _const("ctxtrim.tokens", "OPENAI_TOKENS_PER_MESSAGE"),
    ),
    Fact(
        "the tokens that prime the reply",
        r"The ([\d,]+) tokens that prime the reply",
        _const("ctxtrim.tokens", "OPENAI_REPLY_PRIMING"),
    ),
    Fact(
        "the stores' default message cap",
        r"max_message_bytes=(\d+) MiB",
        _const("ctxtrim.stores._common", "DEFAULT_MAX_MESSAGE_BYTES", 1 << 20),
    ),
    Fact(
        "the longest session id",
        r"session ids are any non-empty string up to\s+(\d+) UTF-8 bytes",
        _const("ctxtrim.stores._common", "MAX_SESSION_ID_BYTES", commas=False),
    ),
    Fact(
        "AnthropicTokenCounter's concurrency",
        r"sends at most `max_concurrency` \((\d+)\) requests at once",
        _anthropic_concurrency,
    ),
    Fact(
        "the cached logs' default cap",
        r"`ctxtrim\.stores\.log_caches\.limit_bytes` of stored messages \(their JSON size; "
        r"default\s+(\d+) MiB",
        _const("ctxtrim.stores._common", "DEFAULT_LOG_CACHE_BYTES", 1 << 20),
    ),
    Fact(
        "the Redis store's pool size",
        r"is blocking \(`max_connections`, default (\d+)\)",
        _redis_pool,
    ),
    Fact(
        "the genai-prices data the model table was written from",
        r"The windows come from the `genai-prices` ([\d.]+) data",
        _genai_prices,
    ),
    Fact(
        "the strategy oracle's default run",
        r"runs ([\d,]+) random histories per rule",
        _oracle_examples,
    ),
]


@dataclass
class Moved:
    doc: Path
    what: str
    stated: str
    actual: str
    span: tuple[int, int]  # where the stated text is, in the doc's text


def check_facts(texts: dict[Path, str]) -> list[Moved]:
    moved = []
    for fact in FACTS:
        text = texts.setdefault(fact.doc, fact.doc.read_text())
        found = list(re.finditer(fact.pattern, text))
        if len(found) != 1:
            raise SystemExit(
                f"{fact.doc.name}: {fact.what}: the pattern {fact.pattern!r} matched "
                f"{len(found)} times, not once; update FACTS in scripts/readme_numbers.py"
            )
        actual = fact.compute()
        for i, value in enumerate(actual, start=1):
            if found[0][i] != value:
                span = found[0].span(i)
                moved.append(Moved(fact.doc, fact.what, found[0][i], value, span))
    return moved


# ---- console examples ----------------------------------------------------------------------

_CONSOLE = re.compile(r"```console\n(.*?)```", re.S)


def _run(command: str, tmp: Path) -> str:
    """What ``$ command`` prints, run from the repository root."""
    pipeline = [shlex.split(part) for part in command.split("|")]
    args = pipeline[0]
    assert args[0] == "ctxtrim", f"a console example runs ctxtrim, not {args[0]}: {command}"
    names = {}
    for i, arg in enumerate(args[:-1]):
        if arg in ("-o", "--output"):
            names[str(tmp / args[i + 1])] = args[i + 1]
            args[i + 1] = str(tmp / args[i + 1])
    proc = subprocess.run(
        [sys.executable, "-m", "ctxtrim", *args[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    for path, name in names.items():
        out = out.replace(path, name)
    lines = out.splitlines()
    for tool, *count in pipeline[1:]:  # `tail -9`, `head -n 5`
        assert tool in ("head", "tail") and count, f"only head and tail after ctxtrim: {command}"
        n = int(count[-1].lstrip("-"))
        lines = lines[-n:] if tool == "tail" else lines[:n]
    return "\n".join(lines)


def _wrapped_json(data: dict[str, object], width: int = 90) -> str:
    """A JSON object as the README prints one: its items on as few lines as fit."""
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data.items()]
    lines: list[str] = []
    line = ""
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "}")
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = " " + piece
        else:
            line = f"{line} {piece}" if line else "{" + piece
    lines.append(line)
    return "\n".join(lines)


def _compare(stated: str, actual: str) -> str | None:
    """The text the README should show, or None if ``stated`` already says it."""
    try:
        stated_json = json.loads(stated)
    except ValueError:
        pass
    else:
        actual_json = json.loads(actual)
        return None if stated_json == actual_json else _wrapped_json(actual_json)
    lines, real = stated.split("\n"), actual.split("\n")
    if "..." in [line.strip() for line in lines]:
        cut = [line.strip() for line in lines].index("...")
        head, tail = lines[:cut], lines[cut + 1 :]
        if real[: len(head)] == head and (not tail or real[-len(tail) :] == tail):
            return None
        return "\n".join([*real[: len(head)], lines[cut], *(real[-len(tail) :] if tail else [])])
    return None if lines == real else actual


def check_console(texts: dict[Path, str]) -> list[Moved]:
    text = texts.setdefault(README, README.read_text())
    moved = []
    with tempfile.TemporaryDirectory() as tmp:
        for block in _CONSOLE.finditer(text):
            body, start = block[1], block.start(1)
            commands = list(re.finditer(r"^\$ (.*)\n", body, re.M))
            for i, command in enumerate(commands):
                end = commands[i + 1].start() if i + 1 < len(commands) else len(body)
                stated = body[command.end() : end].rstrip("\n")
                actual = _run(command[1], Path(tmp))
                should = _compare(stated, actual)
                if should is not None:
                    span = (start + command.end(), start + command.end() + len(stated))
                    moved.append(Moved(README, f"$ {command[1]}", stated, should, span))
    return moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list what moved (the default)")
    parser.add_argument("--write", action="store_true", help="rewrite the moved numbers")
    args = parser.parse_args()
    texts: dict[Path, str] = {}
    moved = check_facts(texts) + check_console(texts)
    for m in moved:
        if "\n" not in m.stated + m.actual:
            print(f"{m.doc.name}: {m.what}: the README says {m.stated!r}, it is {m.actual!r}")
            continue
        print(f"{m.doc.name}: {m.what}: the README's output (-) against the real one (+):")
        diff = difflib.unified_diff(m.stated.split("\n"), m.actual.split("\n"), lineterm="")
        print("\n".join(list(diff)[2:]))
    if args.write and moved:
        for doc in {m.doc for m in moved}:
            text = texts[doc]
            for m in sorted((m for m in moved if m.doc == doc), key=lambda m: -m.span[0]):
                text = text[: m.span[0]] + m.actual + text[m.span[1] :]
            doc.write_text(text)
        print(f"rewrote {len(moved)} number(s)")
    elif moved:
        sys.exit(1)
    else:
        print(f"{len(FACTS)} stated facts and every console example: as the README says")


if __name__ == "__main__":
    main()
