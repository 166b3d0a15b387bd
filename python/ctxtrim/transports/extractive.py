"""`ExtractiveTransport`: a summary without a model, for offline use and tests.

It reads the messages it is given and writes, deterministically (same input, same text):

* **Previous summary** — an earlier compaction's summary, kept (clipped first when over
  budget, since its own details were already condensed once);
* **Requests** — what the user asked in the summarised span;
* **Tools used** — per tool, how many calls and errors, then one line per call with its
  input, its outcome (``ok``, ``error`` or ``no result``) and a preview of the result (the
  result's ``compact_summary`` when it has one);
* **Files and ids mentioned** — paths, URLs and identifiers from tool inputs and texts;
* **Last conclusions** — the assistant's last texts.

The whole summary stays within ``max_tokens`` as priced by :func:`ctxtrim.estimate_tokens`;
every cut is character-safe (:func:`ctxtrim._text.clip_text`). The ``system`` prompt
is ignored (there is no model to instruct).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ctxtrim._text import clip_text
from ctxtrim.errors import CompactionSettingsError
from ctxtrim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ctxtrim.tokens import estimate_tokens
from ctxtrim.transports._render import ELLIPSIS, _json, is_summary, result_text, summary_body

__all__ = ["ExtractiveTransport"]

# Paths with a slash or a short extension, URLs, and issue/ticket style ids (#123, ABC-42).
_MENTION_RE = re.compile(
    r"https?://[^\s\"'<>)\]]+"
    r"|(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+"
    r"|(?<![\w/.-])[\w-]+\.(?:py|rs|ts|tsx|js|jsx|go|java|c|h|cpp|hpp|md|txt|json|toml|yaml"
    r"|yml|ini|cfg|sql|sh|html|css|csv|lock|log)\b"
    r"|(?<![\w#])#\d+\b"
    r"|\b[A-Z][A-Z0-9]+-\d+\b"
)
# Tool input keys whose string values are names worth keeping verbatim.
_NAME_KEYS = ("path", "file", "dir", "url", "id", "name", "branch", "table", "key")
_MAX_MENTIONS = 40
_PREVIEW_CHARS = 160
_INPUT_CHARS = 120
_REQUEST_CHARS = 400
_CONCLUSION_CHARS = 600
_LAST_CONCLUSIONS = 3

# Shares of the budget when everything does not fit, by section (previous summary,
# requests, tools, mentions, conclusions). A section that needs less gives the rest back.
_SHARES = (0.25, 0.15, 0.30, 0.10, 0.20)


def _clip_to_tokens(text: str, max_tokens: int) -> str:
    """The longest character-safe prefix of ``text`` (plus a marker) within ``max_tokens``."""
    if estimate_tokens(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # largest n with estimate(clip_text(text, n, …)) <= max_tokens
        mid = (lo + hi + 1) // 2
        if estimate_tokens(clip_text(text, mid, ELLIPSIS)) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return clip_text(text, lo, ELLIPSIS) if lo > 0 else ""


def _keep_last_lines(lines: list[str], max_tokens: int, head: int = 0) -> str:
    """Join ``lines`` within ``max_tokens``: the first ``head`` lines, then as many of the
    newest of the others as fit, with a line saying how many were left out."""
    text = "\n".join(lines)
    if estimate_tokens(text) <= max_tokens:
        return text
    fixed, rest = lines[:head], lines[head:]
    budget = max_tokens - estimate_tokens("\n".join([*fixed, "(999999 earlier lines omitted)"]))
    kept: list[str] = []
    for line in reversed(rest):
        cost = estimate_tokens(line) + 1
        if cost > budget:
            break
        kept.append(line)
        budget -= cost
    kept.reverse()
    omitted = len(rest) - len(kept)
    note = [f"({omitted} earlier lines omitted)"] if omitted else []
    return _clip_to_tokens("\n".join([*fixed, *note, *kept]), max_tokens)


def _mentions(messages: Sequence[Message]) -> list[str]:
    seen: dict[str, None] = {}

    def add(value: str) -> None:
        value = value.strip().rstrip(".,;:")
        if value and len(value) <= 200 and len(seen) < _MAX_MENTIONS:
            seen.setdefault(value, None)

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and any(k in key.lower() for k in _NAME_KEYS):
            add(value)

    for m in messages:
        for block in m.content:
            if isinstance(block, ToolUseBlock):
                walk(block.input)
            texts: Iterable[str] = ()
            if isinstance(block, TextBlock):
                texts = (block.text,)
            elif isinstance(block, ToolResultBlock):
                texts = (result_text(block),)
            for text in texts:
                for found in _MENTION_RE.findall(text):
                    add(found)
    return list(seen)


class ExtractiveTransport:
    """A deterministic, offline :class:`~ctxtrim.compaction.CompletionTransport`.

    ``max_result_chars`` bounds each tool result's preview line before the token budget
    applies. Never raises on any valid history; costs one pass over the messages plus the
    token estimates of the lines it writes.
    """

    #: No real context window; :class:`~ctxtrim.AutoCompactStore` falls back to its default.
    context_window: int | None = None

    def __init__(self, *, max_result_chars: int = _PREVIEW_CHARS) -> None:
        if max_result_chars < 1:
            raise CompactionSettingsError(f"max_result_chars must be >= 1, got {max_result_chars}")
        self.max_result_chars = max_result_chars

    def __repr__(self) -> str:
        return f"ExtractiveTransport(max_result_chars={self.max_result_chars})"

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        return self.summarise(messages, max_tokens=max_tokens)

    def summarise(self, messages: Sequence[Message], *, max_tokens: int) -> str:
        """The summary text (synchronous; :meth:`complete` calls this)."""
        if max_tokens < 1:
            raise CompactionSettingsError(f"max_tokens must be >= 1, got {max_tokens}")
        previous = "\n\n".join(summary_body(m) for m in messages if is_summary(m))
        convo = [m for m in messages if not is_summary(m)]

        requests = [
            "- " + clip_text(" ".join(m.text.split()), _REQUEST_CHARS, ELLIPSIS)
            for m in convo
            if m.role == "user" and m.text.strip()
        ]

        outcomes: dict[str, ToolResultBlock] = {}
        for m in convo:
            for r in m.tool_results:
                outcomes[r.tool_use_id] = r
        calls = [b for m in convo for b in m.content if isinstance(b, ToolUseBlock)]
        tool_lines: list[str] = []
        if calls:
            counts = Counter(c.name for c in calls)
            errors = Counter(c.name for c in calls if c.id in outcomes and outcomes[c.id].is_error)
            tool_lines.append(
                ", ".join(
                    f"{name} x{n}" + (f" ({errors[name]} failed)" if errors[name] else "")
                    for name, n in counts.items()
                )
            )
            for c in calls:
                args = clip_text(_json(c.input), _INPUT_CHARS, ELLIPSIS)
                result = outcomes.get(c.id)
                if result is None:
                    tool_lines.append(f"- {c.name}({args}) -> no result")
                    continue
                status = "error" if result.is_error else "ok"
                preview = clip_text(
                    " ".join(result_text(result).split()), self.max_result_chars, ELLIPSIS
                )
                tool_lines.append(f"- {c.name}({args}) -> {status}: {preview}")

        mentions = _mentions(convo)
        conclusions = [
            "- " + clip_text(" ".join(m.text.split()), _CONCLUSION_CHARS, ELLIPSIS)
            for m in convo
            if m.role == "assistant" and m.text.strip()
        ][-_LAST_CONCLUSIONS:]

        titles = ("Previous summary:", "Requests:", "Tools used:", "Files and ids mentioned:")
        bodies = [
            previous,
            "\n".join(requests),
            "\n".join(tool_lines),
            ", ".join(mentions),
            "\n".join(conclusions),
        ]
        titled = [*titles, "Last conclusions:"]
        sections = [(t, b) for t, b in zip(titled, bodies, strict=True) if b]
        text = "\n\n".join(f"{t}\n{b}" for t, b in sections)
        if not sections:
            return _clip_to_tokens("(nothing to summarise)", max_tokens)
        if estimate_tokens(text) <= max_tokens:
            return text

        # Over budget: give each section its share, handing unused shares to the others.
        headers = estimate_tokens("\n\n".join(t for t, _ in sections)) + 2 * len(sections)
        available = max(0, max_tokens - headers)
        need = {t: estimate_tokens(b) for t, b in sections}
        share = {t: s for t, s in zip(titled, _SHARES, strict=True) if t in need}
        total_share = sum(share.values())
        alloc = {t: int(available * share[t] / total_share) for t in share}
        spare = sum(max(0, alloc[t] - need[t]) for t in alloc)
        hungry = [t for t in alloc if need[t] > alloc[t]]
        for t in hungry:
            alloc[t] += int(spare * share[t] / sum(share[h] for h in hungry))
        out: list[str] = []
        for t, b in sections:
            if t == "Tools used:":
                body = _keep_last_lines(b.split("\n"), alloc[t], head=1)
            elif t in ("Requests:", "Last conclusions:"):
                body = _keep_last_lines(b.split("\n"), alloc[t])
            else:
                body = _clip_to_tokens(b, alloc[t])
            if body:
                out.append(f"{t}\n{body}")
        # A budget too small for the section headers gets the head of the full text.
        return _clip_to_tokens("\n\n".join(out), max_tokens) or _clip_to_tokens(text, max_tokens)
