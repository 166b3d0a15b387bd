"""The ``ctxtrim`` command: trim, inspect and validate a saved conversation.

::

    ctxtrim trim FILE --max-tokens N [--format F] [--keep-turns N]
                 [--truncate-tool-outputs CHARS] [--reserve-tokens N] [--repair] [-o OUT]
    ctxtrim stats FILE [--format F] [--json]
    ctxtrim validate FILE [--format F] [--repair] [-o OUT]

``FILE`` is JSON or JSON Lines (``-`` reads stdin) in any format of :mod:`ctxtrim.formats`
(``--format auto`` detects it). Output is written in the input's format and shape (a request
body keeps its other keys, JSON Lines stay JSON Lines), to stdout unless ``-o`` is given.
Reports go to stderr, so ``ctxtrim trim a.json --max-tokens 8000 > b.json`` works.

Exit codes: 0 success; 1 ``validate`` found violations; 2 bad input (unreadable file, not
JSON, unknown or undetectable format, malformed message, a history with broken tool pairs
given to ``trim`` without ``--repair``, a bad option) — always one ``ctxtrim: error: ...``
line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from ctxtrim import __version__
from ctxtrim.errors import CtxtrimError
from ctxtrim.formats import FORMATS, detect, dump, load, parse_json
from ctxtrim.messages import Message, ToolResultBlock
from ctxtrim.strategies import (
    ContextStrategy,
    FitContextWindow,
    KeepLastTurns,
    Pipeline,
    TruncateToolOutputs,
)
from ctxtrim.tokens import HeuristicTokenCounter
from ctxtrim.validate import Violation, repair, validate

__all__ = ["main"]


class CliError(Exception):
    """A problem to report as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line (argparse's default prints the usage block first).
        self.exit(2, f"ctxtrim: error: {message} (see ctxtrim {self._sub_hint()}--help)\n")

    def _sub_hint(self) -> str:
        parts = self.prog.split()
        return f"{parts[-1]} " if len(parts) > 1 else ""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


# --------------------------------------------------------------------------------------------
# Reading and writing


@dataclass
class Document:
    """A parsed input: its messages, format, original payload and whether it was JSONL."""

    messages: list[Message]
    format: str
    payload: Any
    jsonl: bool


def read(path: str, format: str) -> Document:
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    name = "<stdin>" if path == "-" else path
    try:
        payload, jsonl = parse_json(raw)
        fmt = detect(payload) if format == "auto" else format
        return Document(load(payload, fmt), fmt, payload, jsonl)
    except CtxtrimError as e:
        hint = "" if format == "auto" else f" (read as --format {format})"
        raise CliError(f"{name}: {e}{hint}") from None


def render(doc: Document, messages: list[Message]) -> str:
    """``messages`` in the document's format and shape, as text."""
    out = dump(messages, doc.format)
    original = doc.payload
    if doc.format == "anthropic":
        if isinstance(original, dict):  # keep the request body's other keys, in order
            merged = {
                k: out.get(k) if k in ("system", "messages") else v for k, v in original.items()
            }
            merged = {
                k: v for k, v in merged.items() if k in out or k not in ("system", "messages")
            }
            out = {**merged, **{k: v for k, v in out.items() if k not in merged}}
        elif "system" not in out:
            out = out["messages"]  # a bare list came in: a bare list goes out
    elif isinstance(original, dict):
        key = "input" if doc.format == "responses" else "messages"
        out = {**original, key: out}
    if doc.jsonl and isinstance(out, list):
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in out)
    return json.dumps(out, ensure_ascii=False, indent=2) + "\n"


def write(text: str, path: str | None) -> None:
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None


def _violations(violations: list[Violation]) -> str:
    return "\n".join(f"messages[{v.index}]: {v.kind}: {v.description}" for v in violations)


# --------------------------------------------------------------------------------------------
# Commands


def cmd_trim(args: argparse.Namespace) -> int:
    doc = read(args.file, args.format)
    messages = doc.messages
    problems = validate(messages)
    if problems:
        if not args.repair:
            first = problems[0]
            raise CliError(
                f"{args.file}: {len(problems)} tool-pair violation(s), first at "
                f"messages[{first.index}]: {first.description}; run `ctxtrim validate` to list "
                "them, or pass --repair"
            )
        messages = repair(messages)
        print(f"repaired {len(problems)} violation(s) first", file=sys.stderr)
    steps: list[ContextStrategy] = []
    if args.truncate_tool_outputs is not None:
        steps.append(TruncateToolOutputs(args.truncate_tool_outputs))
    if args.keep_turns is not None:
        steps.append(KeepLastTurns(args.keep_turns))
    steps.append(FitContextWindow(args.max_tokens, reserve_tokens=args.reserve_tokens))
    strategy = Pipeline(*steps) if len(steps) > 1 else steps[0]
    report = strategy.describe(messages)
    trimmed = strategy(messages)
    write(render(doc, trimmed), args.output)
    status = (
        f"OVER BUDGET: the minimum kept (system prompt, task and newest round) needs "
        f"~{report.tokens_after:,} tokens"
        if report.over_budget
        else "within budget"
    )
    print(
        f"ctxtrim: kept {report.messages_after} of {report.messages_before} messages "
        f"({doc.format}); dropped {report.dropped_messages} message(s) and "
        f"{report.dropped_turns} user turn(s), clipped {report.changed_messages} tool output(s); "
        f"~{report.tokens_before:,} -> ~{report.tokens_after:,} tokens "
        f"(budget {args.max_tokens:,}); {status}",
        file=sys.stderr,
    )
    return 0


def stats(messages: Sequence[Message]) -> dict[str, Any]:
    """Counts for ``ctxtrim stats``: messages, turns, tool pairs, estimated tokens by role."""
    counter = HeuristicTokenCounter()
    tokens = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
    counts = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
    calls: set[str] = set()
    pairs = 0
    for m in messages:
        role = (
            "tool"
            if m.role == "user" and m.content and all(type(b) is ToolResultBlock for b in m.content)
            else m.role
        )
        tokens[role] += counter.count_message(m)
        counts[role] += 1
        for r in m.tool_results:
            if r.tool_use_id in calls:
                pairs += 1
                calls.discard(r.tool_use_id)
        calls.update(u.id for u in m.tool_uses)
    return {
        "messages": len(messages),
        "turns": sum(1 for m in messages if m.is_real_user),
        "tool_calls": sum(len(m.tool_uses) for m in messages),
        "tool_pairs": pairs,
        "tool_errors": sum(1 for m in messages for r in m.tool_results if r.is_error),
        "messages_by_role": counts,
        "tokens_by_role": tokens,
        "tokens": sum(tokens.values()),
        "violations": len(validate(messages)),
    }


def cmd_stats(args: argparse.Namespace) -> int:
    doc = read(args.file, args.format)
    s = stats(doc.messages)
    if args.json:
        write(json.dumps({"format": doc.format, **s}, indent=2) + "\n", None)
        return 0
    lines = [
        f"format       {doc.format}",
        f"messages     {s['messages']}",
        f"turns        {s['turns']}",
        f"tool calls   {s['tool_calls']} ({s['tool_pairs']} answered, {s['tool_errors']} failed)",
        f"violations   {s['violations']}",
        f"tokens       ~{s['tokens']:,} (estimated)",
    ]
    for role in ("system", "user", "assistant", "tool"):
        label = "tool results" if role == "tool" else role
        lines.append(
            f"  {label:<12} ~{s['tokens_by_role'][role]:>8,} in {s['messages_by_role'][role]} "
            "message(s)"
        )
    write("\n".join(lines) + "\n", None)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    doc = read(args.file, args.format)
    problems = validate(doc.messages)
    if args.repair:
        write(render(doc, repair(doc.messages)), args.output)
        if problems:
            print(_violations(problems), file=sys.stderr)
        print(f"ctxtrim: repaired {len(problems)} violation(s)", file=sys.stderr)
        return 0
    if args.output is not None:
        raise CliError("-o/--output needs --repair (validate writes nothing otherwise)")
    if not problems:
        print(f"ok: {len(doc.messages)} messages, no violations")
        return 0
    print(_violations(problems))
    print(f"{len(problems)} violation(s)", file=sys.stderr)
    return 1


# --------------------------------------------------------------------------------------------
# Entry point


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ctxtrim",
        description="Trim, inspect and validate LLM agent conversations (JSON or JSON Lines).",
    )
    parser.add_argument("--version", action="version", version=f"ctxtrim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    formats = ("auto", *FORMATS)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", metavar="FILE", help="JSON or JSON Lines file, - for stdin")
        p.add_argument(
            "--format",
            choices=formats,
            default="auto",
            help="input format (default: detect); output uses the same format",
        )

    trim = sub.add_parser("trim", help="fit a conversation into a token budget, pair-safely")
    common(trim)
    trim.add_argument("--max-tokens", type=_positive, required=True, help="the token budget")
    trim.add_argument(
        "--reserve-tokens", type=_non_negative, default=0, help="keep this many free (answer)"
    )
    trim.add_argument("--keep-turns", type=_positive, help="keep at most the last N user turns")
    trim.add_argument(
        "--truncate-tool-outputs",
        type=_positive,
        metavar="CHARS",
        help="clip older tool results to CHARS characters first",
    )
    trim.add_argument(
        "--repair", action="store_true", help="repair broken tool pairs instead of refusing"
    )
    trim.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")
    trim.set_defaults(run=cmd_trim)

    st = sub.add_parser("stats", help="messages, turns, tool pairs, estimated tokens by role")
    common(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(run=cmd_stats)

    val = sub.add_parser("validate", help="list what a provider would reject (exit 1 if any)")
    common(val)
    val.add_argument("--repair", action="store_true", help="write the repaired conversation")
    val.add_argument("-o", "--output", metavar="OUT", help="with --repair: write here")
    val.set_defaults(run=cmd_validate)

    # Listed for --help; its own options are parsed by ctxtrim.bench (see main).
    sub.add_parser(
        "bench",
        help="benchmark ctxtrim against the installed peer libraries "
        "(ctxtrim bench --help for its options)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from ctxtrim import bench  # imported on demand: it loads the peers it measures

        return bench.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "reserve_tokens", 0) and args.reserve_tokens >= args.max_tokens:
        parser.error(
            f"--reserve-tokens ({args.reserve_tokens}) must be less than --max-tokens "
            f"({args.max_tokens})"
        )
    try:
        code: int = args.run(args)
        return code
    except (CliError, CtxtrimError) as e:
        print(f"ctxtrim: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `ctxtrim stats ... | head`
        return 0
    except Exception as e:  # a bug: still one line, never a traceback
        print(f"ctxtrim: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
