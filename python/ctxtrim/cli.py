"""The ``ctxtrim`` command: trim, inspect and validate a saved conversation.

::

    ctxtrim trim FILE --max-tokens N [--format F] [--keep-turns N]
                 [--truncate-tool-outputs CHARS [--truncate-recent-turns N]]
                 [--reserve-tokens N] [--repair] [-o OUT] [--json]
    ctxtrim stats FILE [--format F] [--json]
    ctxtrim validate FILE [--format F] [--repair] [-o OUT] [--json]

``FILE`` is JSON or JSON Lines (``-`` reads stdin; a UTF-8 byte order mark is skipped) in
any format of :mod:`ctxtrim.formats` (``--format auto`` detects it). Output is written in
the input's format and shape (a request body keeps its other keys, JSON Lines stay JSON
Lines), to stdout unless ``-o`` is given; ``-o`` writes a temporary file next to the target
and renames it over the target, so ``-o`` may name the input file and a failed write leaves
the target as it was. When a command changes nothing, the input's bytes are written as they
are (and a same-file ``-o`` is not touched). Reports go to stderr, every line starting with
``ctxtrim:``, so ``ctxtrim trim a.json --max-tokens 8000 > b.json`` works; ``--json`` prints
the report as one JSON object on stdout instead (``trim`` and ``validate --repair`` then need
``-o`` for the conversation).

Counts are given in the input's own entries (OpenAI chat messages, Responses items,
Anthropic messages) as well as in ctxtrim messages (a run of tool results is one message).
Every error about the content of a file names the format it was read as, and whether that
format was detected.

Tool calls whose ``arguments`` text is not a JSON object (a model cut off mid-call) are
refused by ``trim`` and listed by ``validate``; with ``--repair`` the text is kept as it is
(nothing is lost, and the call still pairs with its result).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from ctxtrim import __version__
from ctxtrim.blocks import pair_sides
from ctxtrim.clearing import TruncateToolOutputs
from ctxtrim.errors import CtxtrimError
from ctxtrim.formats import FORMATS, InvalidToolArguments, detect, dump, load, parse_json
from ctxtrim.formats._common import loads_arguments, raw_arguments
from ctxtrim.messages import Message, ProviderBlock, ToolUseBlock
from ctxtrim.provider import price
from ctxtrim.strategies import (
    ContextStrategy,
    FitContextWindow,
    KeepLastTurns,
    Pipeline,
)
from ctxtrim.tokens import HeuristicTokenCounter, estimate_tokens
from ctxtrim.validate import Violation, repair, validate

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_OVER_BUDGET", "EXIT_VIOLATIONS", "main"]

#: Success (``trim``: the result is within the budget).
EXIT_OK = 0
#: ``validate`` found problems (without ``--repair``).
EXIT_VIOLATIONS = 1
#: Bad input, a bad option, an unreadable file or an output that could not be written.
EXIT_ERROR = 2
#: ``trim``: even the minimum it keeps (system prompt, task, newest round) is over the
#: budget; the result is written all the same.
EXIT_OVER_BUDGET = 3

EXIT_CODES = """\
exit codes:
  0  success (trim: the result fits the budget)
  1  validate: violations found (not with --repair)
  2  bad input, bad option, unreadable file or failed write (one "ctxtrim: error:" line)
  3  trim: over budget, even the minimum kept (system prompt, task, newest round)
     does not fit; the result is written all the same
"""


class CliError(Exception):
    """A problem to report as one line and exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line (argparse's default prints the usage block first).
        self.exit(2, f"ctxtrim: error: {message} (see ctxtrim {self._sub_hint()}--help)\n")

    def _sub_hint(self) -> str:
        parts = self.prog.split()
        return f"{parts[-1]} " if len(parts) > 1 else ""


#: The largest count or budget the command line takes (what a strategy takes: 64 bits).
_MAX_WHOLE = 2**63 - 1


def _whole(text: str, low: int, what: str) -> int:
    """``text`` as an int from ``low`` to :data:`_MAX_WHOLE`; argparse prints the error as
    one line naming the option (``1e30`` and ``10**31`` included: no "internal error")."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{what}, got {value}")
    if value > _MAX_WHOLE:
        raise argparse.ArgumentTypeError(
            f"must be at most {_MAX_WHOLE} (a signed 64-bit int), got {text.strip()}"
        )
    return value


def _positive(text: str) -> int:
    return _whole(text, 1, "must be at least 1")


def _non_negative(text: str) -> int:
    return _whole(text, 0, "must not be negative")


def note(text: str) -> None:
    """Report on stderr, every line prefixed with ``ctxtrim:``."""
    sys.stderr.write("".join(f"ctxtrim: {line}\n" for line in text.splitlines()))
    sys.stderr.flush()


# --------------------------------------------------------------------------------------------
# Reading


@dataclass
class Document:
    """A parsed input: its messages, format, original payload and bytes."""

    messages: list[Message]
    format: str
    payload: Any
    jsonl: bool
    raw: bytes
    path: str
    detected: bool

    @property
    def name(self) -> str:
        return "<stdin>" if self.path == "-" else self.path

    @property
    def about(self) -> str:
        """The format it was read as, for reports and errors."""
        return f"{self.format} format, detected" if self.detected else f"--format {self.format}"

    @property
    def entries(self) -> int:
        return entries(self.payload, self.format)

    @property
    def root(self) -> str:
        """The name of the entries' array in the provider payload (paths in errors)."""
        return _ROOTS.get(self.format, "messages")


#: The name of the entries' array in a provider payload, where it is not ``messages``.
_ROOTS = {"responses": "input", "gemini": "contents"}
#: The keys ``dump`` gives besides the entries, for the formats that return a dict.
_SYSTEM_KEYS = {"anthropic": ("system",), "gemini": ("system_instruction", "systemInstruction")}


def entries(payload: Any, format: str) -> int:
    """How many entries of the provider's own list ``payload`` holds."""
    if isinstance(payload, dict):
        payload = payload.get(_ROOTS.get(format, "messages"))
    if isinstance(payload, list):
        return len(payload)
    return 1 if isinstance(payload, str) else 0  # Responses' one-user-message shorthand


def read(path: str, format: str) -> Document:
    """Read and convert ``path``; tool arguments that are not JSON are kept as raw text
    (the commands decide whether to accept them)."""
    try:
        if path == "-":
            raw = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror or e}") from None
    name = "<stdin>" if path == "-" else path
    hint = "" if format == "auto" else f" (read as --format {format})"
    try:
        payload, jsonl = parse_json(raw)
        fmt = detect(payload) if format == "auto" else format
    except CtxtrimError as e:
        raise CliError(f"{name}: {e}{hint}") from None
    detected = format == "auto"
    try:
        messages = load(payload, fmt, raw_arguments=True)
    except CtxtrimError as e:
        about = f"detected as {fmt} format; --format chooses another" if detected else hint[2:-1]
        raise CliError(f"{name}: {e} ({about})") from None
    return Document(messages, fmt, payload, jsonl, raw, path, detected)


@dataclass(frozen=True)
class Problem:
    """A violation or a tool call with unreadable arguments, located in the input."""

    kind: str
    description: str
    message: int | None  # index among ctxtrim messages
    entry: int | None  # index among the input's entries
    path: str

    def line(self) -> str:
        return f"{self.path}: {self.kind}: {self.description}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entry": self.entry,
            "message": self.message,
            "kind": self.kind,
            "description": self.description,
        }


def _entry_starts(doc: Document, messages: Sequence[Message]) -> list[int] | None:
    """The index of the first entry of each message in ``doc``'s format (None if the
    messages cannot be placed one by one)."""
    starts = []
    at = 0
    try:
        for m in messages:
            starts.append(at)
            at += entries(dump([m], doc.format), doc.format)
        total = entries(dump(messages, doc.format), doc.format)
    except CtxtrimError:
        return None
    return starts if at == total else None


def problems(doc: Document, violations: Sequence[Violation]) -> list[Problem]:
    """``violations`` of ``doc.messages`` and its unreadable tool arguments, with the path of
    the entry each is in."""
    out: list[Problem] = []
    if violations:
        starts = _entry_starts(doc, doc.messages)
        for v in violations:
            entry = None if starts is None else starts[v.index]
            path = f"{doc.root}[{entry}]" if entry is not None else f"message {v.index}"
            out.append(Problem(v.kind, v.description, v.index, entry, path))
    out += _bad_arguments(doc)
    return sorted(out, key=lambda p: (p.entry is None, p.entry or 0, p.message or 0))


def _bad_arguments(doc: Document) -> list[Problem]:
    """The tool calls whose arguments text is not a JSON object (kept as raw text)."""
    if not any(
        type(b) is ToolUseBlock and raw_arguments(b.input) is not None
        for m in doc.messages
        for b in m.content
    ):
        return []
    out: list[Problem] = []
    items = doc.payload.get(doc.root) if isinstance(doc.payload, dict) else doc.payload
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        calls: list[tuple[str, Any, Any]] = []  # (path, the dict with "arguments", call id)
        if doc.format == "responses" and item.get("type") == "function_call":
            calls.append((f"input[{i}].arguments", item, item.get("call_id")))
        elif doc.format == "openai" and isinstance(item.get("tool_calls"), list):
            for k, call in enumerate(item["tool_calls"]):
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    path = f"messages[{i}].tool_calls[{k}].function.arguments"
                    calls.append((path, fn, call.get("id")))
        for path, holder, call_id in calls:
            try:
                loads_arguments(holder.get("arguments"), path)
            except InvalidToolArguments as e:
                out.append(
                    Problem(
                        "invalid_arguments",
                        f"{e.reason} (call {call_id})",
                        None,
                        i,
                        path,
                    )
                )
            except CtxtrimError:
                pass
    return out


# --------------------------------------------------------------------------------------------
# Writing


def render(doc: Document, messages: list[Message]) -> tuple[str, int]:
    """``messages`` in the document's format and shape, as text; and its entry count."""
    try:
        out = dump(messages, doc.format)
    except CtxtrimError as e:
        raise CliError(f"{doc.name}: cannot write the result as {doc.about}: {e}") from None
    original = doc.payload
    if doc.format in _SYSTEM_KEYS:
        ours = (*_SYSTEM_KEYS[doc.format], _ROOTS.get(doc.format, "messages"))
        if isinstance(original, dict):  # keep the request body's other keys, in order
            merged = {k: out.get(k) if k in ours else v for k, v in original.items()}
            merged = {k: v for k, v in merged.items() if k in out or k not in ours}
            out = {**merged, **{k: v for k, v in out.items() if k not in merged}}
        elif len(out) == 1:
            out = out[ours[-1]]  # a bare list came in: a bare list goes out
    elif isinstance(original, dict):
        out = {**original, _ROOTS.get(doc.format, "messages"): out}
    count = entries(out, doc.format)
    if doc.jsonl and isinstance(out, list):
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in out), count
    return json.dumps(out, ensure_ascii=False, indent=2) + "\n", count


def _silence_stdout() -> None:
    """After stdout failed (closed pipe, full disk): point it at /dev/null, so the
    interpreter's final flush does not report the same failure again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def out(data: str | bytes) -> None:
    """Write to stdout (UTF-8, whatever the locale)."""
    try:
        sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:
            sys.stdout.write(data.decode("utf-8") if isinstance(data, bytes) else data)
        else:
            buffer.write(data.encode("utf-8") if isinstance(data, str) else data)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        _silence_stdout()
        raise CliError(f"cannot write to stdout: {e.strerror or e}") from None


def same_file(a: str, b: str | None) -> bool:
    if a == "-" or b is None or b == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def write(data: str | bytes, path: str | None) -> None:
    """Write to ``path`` atomically (a temporary file in the same directory renamed over
    it; the target's permissions kept), or to stdout for None or ``-``. A path that exists
    and is not a regular file (a device, a pipe), or is under /dev or /proc, is written
    directly."""
    if path is None or path == "-":
        out(data)
        return
    raw = data.encode("utf-8") if isinstance(data, str) else data
    target = os.path.realpath(path)  # a symlink: replace what it points to, not the link
    try:
        special = path.startswith(("/dev/", "/proc/"))  # /dev/stdout is a stream, not a file
        if special or (os.path.exists(target) and not os.path.isfile(target)):
            with open(target, "wb") as f:
                f.write(raw)
            return
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=os.path.dirname(target)
        )
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
            try:
                mode = stat.S_IMODE(os.stat(target).st_mode)
            except FileNotFoundError:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None


def write_result(doc: Document, text: str | None, output: str | None) -> bool:
    """Write the result (``None``: unchanged, so the input's own bytes); returns whether
    anything was written (an unchanged result is not written over its own input)."""
    if text is None:
        if same_file(doc.path, output):
            return False
        write(doc.raw, output)
        return True
    write(text, output)
    return True


def _count_clipped(before: Sequence[Message], after: Sequence[Message]) -> int:
    """Tool results in ``after`` whose content differs from the same call's in ``before``."""
    contents: dict[str, list[object]] = {}
    for m in before:
        for r in m.tool_results:
            contents.setdefault(r.tool_use_id, []).append(r.content)
    clipped = 0
    for m in after:
        for r in m.tool_results:
            queue = contents.get(r.tool_use_id)
            if queue:
                clipped += queue.pop(0) != r.content
    return clipped


# --------------------------------------------------------------------------------------------
# Commands


def _json_out(report: dict[str, Any]) -> None:
    out(json.dumps(report, ensure_ascii=False, indent=2) + "\n")


def cmd_trim(args: argparse.Namespace) -> int:
    if args.json and args.output in (None, "-"):
        raise CliError("--json prints the report on stdout: give -o OUT for the conversation")
    doc = read(args.file, args.format)
    messages = doc.messages
    violations = validate(messages)
    found = problems(doc, violations)
    if found and not args.repair:
        first = found[0]
        raise CliError(
            f"{doc.name}: {len(found)} violation(s), first at {first.path}: {first.kind}: "
            f"{first.description} ({doc.about}); run `ctxtrim validate` to list them, or pass "
            "--repair"
        )
    if violations:
        messages = repair(messages)
    kept_raw = sum(p.kind == "invalid_arguments" for p in found)
    steps: list[ContextStrategy] = []
    if args.truncate_tool_outputs is not None:
        steps.append(
            TruncateToolOutputs(
                args.truncate_tool_outputs, keep_recent_turns=args.truncate_recent_turns
            )
        )
    if args.keep_turns is not None:
        steps.append(KeepLastTurns(args.keep_turns))
    steps.append(FitContextWindow(args.max_tokens, reserve_tokens=args.reserve_tokens))
    strategy = Pipeline(*steps) if len(steps) > 1 else steps[0]
    trimmed, report = strategy.apply(messages, report=True)  # one run for both
    if report.unchanged and not violations:
        text, entries_after = None, doc.entries
    else:
        text, entries_after = render(doc, trimmed)
    written = write_result(doc, text, args.output)
    clipped = _count_clipped(messages, trimmed)
    code = EXIT_OVER_BUDGET if report.over_budget else EXIT_OK
    if args.json:
        _json_out(
            {
                "file": doc.name,
                "output": args.output,
                "written": written,
                "format": doc.format,
                "format_detected": doc.detected,
                "messages_before": report.messages_before,
                "messages_after": report.messages_after,
                "dropped_messages": report.dropped_messages,
                "entries_before": doc.entries,
                "entries_after": entries_after,
                "dropped_entries": doc.entries - entries_after,
                "dropped_turns": report.dropped_turns,
                "dropped_compacted": report.dropped_compacted,
                "clipped_tool_outputs": clipped,
                "tokens_before": report.tokens_before,
                "tokens_after": report.tokens_after,
                "budget": args.max_tokens,
                "reserve_tokens": args.reserve_tokens,
                "over_budget": report.over_budget,
                "repaired": len(violations),
                "kept_raw_arguments": kept_raw,
                "violations": [p.as_dict() for p in found],
                "exit_code": code,
            }
        )
        return code
    if violations:
        note(f"repaired {len(violations)} violation(s) first")
    if kept_raw:
        note(f"kept the arguments of {kept_raw} tool call(s) as raw text (not valid JSON)")
    if report.dropped_compacted:
        note(
            f"{report.dropped_compacted} dropped message(s) came before the provider's newest "
            "compaction, which summarises them"
        )
    status = (
        f"OVER BUDGET (exit code 3): the minimum kept (system prompt, task and newest round) "
        f"needs ~{report.tokens_after:,} tokens"
        if report.over_budget
        else "within budget"
    )
    same = "" if written else f"; nothing changed, {args.output} left as it was"
    note(
        f"kept {report.messages_after} of {report.messages_before} messages = {entries_after} "
        f"of {doc.entries} entries ({doc.about}); dropped {report.dropped_messages} "
        f"message(s) and {report.dropped_turns} user turn(s), clipped {clipped} tool "
        f"output(s); ~{report.tokens_before:,} -> ~{report.tokens_after:,} tokens "
        f"(budget {args.max_tokens:,}); {status}{same}"
    )
    return code


def stats(messages: Sequence[Message]) -> dict[str, Any]:
    """Counts for ``ctxtrim stats``: messages, turns, tool pairs, estimated tokens by role."""
    counter = HeuristicTokenCounter()
    tokens = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
    counts = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
    calls: set[str] = set()
    pairs = n_calls = 0
    provider: dict[str, list[int]] = {}  # wire type -> [count, tokens]
    for m in messages:
        sides = pair_sides(m.content)
        role = (
            "tool"
            if m.role == "user" and m.content and all(side == "result" for side, _ in sides)
            else m.role
        )
        tokens[role] += counter.count_message(m)
        counts[role] += 1
        for side, call_id in sides:
            if side == "result" and call_id in calls:
                pairs += 1
                calls.discard(call_id)
        issued = [call_id for side, call_id in sides if side == "call" and call_id is not None]
        calls.update(issued)
        n_calls += len(issued)
        for b in _provider_blocks(m):
            row = provider.setdefault(f"{b.format}:{b.wire_type}", [0, 0])
            row[0] += 1
            row[1] += price(b, estimate_tokens)
    return {
        "messages": len(messages),
        "turns": sum(1 for m in messages if m.is_real_user),
        "tool_calls": n_calls,
        "tool_pairs": pairs,
        "tool_errors": sum(1 for m in messages for r in m.tool_results if r.is_error),
        "invalid_arguments": sum(
            1 for m in messages for u in m.tool_uses if raw_arguments(u.input) is not None
        ),
        "messages_by_role": counts,
        "tokens_by_role": tokens,
        "tokens": sum(tokens.values()),
        "violations": len(validate(messages)),
        "provider_items": {k: {"count": c, "tokens": t} for k, (c, t) in sorted(provider.items())},
    }


def _provider_blocks(m: Message) -> list[ProviderBlock]:
    """The provider blocks of a message, those inside its tool results too."""
    out = [b for b in m.content if type(b) is ProviderBlock]
    for r in m.tool_results:
        if not isinstance(r.content, str):
            out += [b for b in r.content if type(b) is ProviderBlock]
    return out


def cmd_stats(args: argparse.Namespace) -> int:
    doc = read(args.file, args.format)
    s = stats(doc.messages)
    if args.json:
        _json_out(
            {"format": doc.format, "format_detected": doc.detected, "entries": doc.entries, **s}
        )
        return EXIT_OK
    calls = f"{s['tool_calls']} ({s['tool_pairs']} answered, {s['tool_errors']} failed"
    if s["invalid_arguments"]:
        calls += f", {s['invalid_arguments']} with arguments that are not JSON"
    lines = [
        f"format       {doc.format}" + (" (detected)" if doc.detected else ""),
        f"entries      {doc.entries}",
        f"messages     {s['messages']} (ctxtrim messages: a run of tool results is one)",
        f"turns        {s['turns']}",
        f"tool calls   {calls})",
        f"violations   {s['violations']}",
        f"tokens       ~{s['tokens']:,} (estimated)",
    ]
    for role in ("system", "user", "assistant", "tool"):
        label = "tool results" if role == "tool" else role
        lines.append(
            f"  {label:<12} ~{s['tokens_by_role'][role]:>8,} in {s['messages_by_role'][role]} "
            "message(s)"
        )
    if s["provider_items"]:
        lines.append("provider items (kept verbatim)")
        for kind, row in s["provider_items"].items():
            lines.append(f"  {kind:<50} {row['count']:>5} ~{row['tokens']:>8,} tokens")
    out("\n".join(lines) + "\n")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    if args.output is not None and not args.repair:
        raise CliError("-o/--output needs --repair (validate writes nothing otherwise)")
    if args.json and args.repair and args.output in (None, "-"):
        raise CliError(
            "--json prints the report on stdout: give -o OUT for the repaired conversation"
        )
    doc = read(args.file, args.format)
    violations = validate(doc.messages)
    found = problems(doc, violations)
    kept_raw = sum(p.kind == "invalid_arguments" for p in found)
    written = False
    if args.repair:
        text = render(doc, repair(doc.messages))[0] if violations else None
        written = write_result(doc, text, args.output)
        code = EXIT_OK
    else:
        code = EXIT_VIOLATIONS if found else EXIT_OK
    if args.json:
        report: dict[str, Any] = {
            "file": doc.name,
            "format": doc.format,
            "format_detected": doc.detected,
            "entries": doc.entries,
            "messages": len(doc.messages),
            "ok": not found,
            "violations": [p.as_dict() for p in found],
        }
        if args.repair:
            report.update(
                output=args.output,
                written=written,
                repaired=len(violations),
                kept_raw_arguments=kept_raw,
            )
        _json_out({**report, "exit_code": code})
        return code
    if args.repair:
        if found:
            note("\n".join(p.line() for p in found))
        summary = f"repaired {len(violations)} violation(s) ({doc.about})"
        if kept_raw:
            summary += f"; kept the arguments of {kept_raw} tool call(s) as raw text"
        if not written:
            summary += f"; nothing to repair, {args.output} left as it was"
        note(summary)
        return code
    if not found:
        out(f"ok: {doc.entries} entries ({len(doc.messages)} messages, {doc.about}), ")
        out("no violations\n")
        return code
    out("".join(p.line() + "\n" for p in found))
    note(f"{len(found)} violation(s) ({doc.about})")
    return code


# --------------------------------------------------------------------------------------------
# Entry point


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ctxtrim",
        description="Trim, inspect and validate LLM agent conversations (JSON or JSON Lines).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"ctxtrim {__version__}")
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

    trim = sub.add_parser(
        "trim",
        help="fit a conversation into a token budget, pair-safely",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
        help="first clip tool results older than the newest user turn to CHARS characters "
        "plus a '...[truncated]' marker (only where that makes them shorter)",
    )
    trim.add_argument(
        "--truncate-recent-turns",
        type=_non_negative,
        default=1,
        metavar="N",
        help="with --truncate-tool-outputs: leave the results of the last N user turns whole "
        "(default 1; 0 clips every result)",
    )
    trim.add_argument(
        "--repair",
        action="store_true",
        help="repair broken tool pairs instead of refusing, and keep tool arguments that are "
        "not JSON as raw text",
    )
    trim.add_argument(
        "-o", "--output", metavar="OUT", help="write here instead of stdout (may be FILE)"
    )
    trim.add_argument(
        "--json", action="store_true", help="print the report as JSON on stdout (needs -o)"
    )
    trim.set_defaults(run=cmd_trim)

    st = sub.add_parser("stats", help="entries, messages, turns, tool pairs, tokens by role")
    common(st)
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(run=cmd_stats)

    val = sub.add_parser(
        "validate",
        help="list what a provider would reject (exit 1 if any)",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common(val)
    val.add_argument(
        "--repair",
        action="store_true",
        help="write the repaired conversation (tool arguments that are not JSON are kept as "
        "raw text); an input with nothing to repair is written unchanged",
    )
    val.add_argument("-o", "--output", metavar="OUT", help="with --repair: write here")
    val.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON on stdout (with --repair, needs -o)",
    )
    val.set_defaults(run=cmd_validate)

    # Listed for --help; its own options are parsed by ctxtrim.bench (see main).
    sub.add_parser(
        "bench",
        help="benchmark ctxtrim against the installed peer libraries "
        "(ctxtrim bench --help for its options)",
    )
    return parser


def _error(message: str) -> int:
    sys.stderr.write(f"ctxtrim: error: {message}\n")
    return EXIT_ERROR


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
        return _error(str(e))
    except BrokenPipeError:  # e.g. `ctxtrim stats ... | head`
        _silence_stdout()
        return EXIT_OK
    except RecursionError:
        return _error("the input is nested too deeply to process")
    except MemoryError:
        return _error("out of memory (the input is too large for this machine)")
    except OSError as e:  # reading and writing report their own; anything else the system did
        where = f": {e.filename}" if e.filename else ""
        return _error(f"{e.strerror or e}{where}")
    except KeyboardInterrupt:
        _error("interrupted")
        return 130  # the shell's convention for SIGINT
    except Exception as e:  # a bug: still one line, never a traceback
        sys.stderr.write(f"ctxtrim: internal error: {type(e).__name__}: {e}\n")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
