"""Rendering an old history as text for a summariser.

Invariants:

* **Never splits a character.** Tool inputs and results are shortened with
  :func:`ctxtrim._text.clip_text`, which cuts only between whole grapheme clusters, and
  end in :data:`ELLIPSIS` when cut.
* **Deterministic.** Same messages, same text: no clock, no randomness, dict keys in the
  order the message holds them. Prompt caches and tests rely on it.
* **Summaries are not conversation.** A message marked as an earlier summary (see
  :func:`is_summary`) is rendered under "Previous summary", never as a user turn, so a
  summariser merges it instead of summarising a summary.
* A tool result's ``compact_summary``, when present, stands in for its content.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ctxtrim._text import clip_text
from ctxtrim.messages import (
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "ELLIPSIS",
    "SUMMARY_HEADER",
    "is_summary",
    "render_transcript",
    "result_text",
    "summary_body",
]

#: The summariser's instructions when the caller gives none.
DEFAULT_SYSTEM_PROMPT = (
    "You compact the history of an AI agent's conversation so the agent can continue its "
    "work with a much shorter context. Write a concise summary that keeps: the user's task "
    "and constraints; decisions taken and why; every tool used with its outcome, errors "
    "included; file names, ids, numbers and other values later steps will need; and the "
    "current state and next steps. If a previous summary is given, merge it into the new "
    "one instead of repeating it. Reply with the summary only."
)

#: What ends a clipped tool input or result in a rendered transcript.
ELLIPSIS = "…"

#: The first line of the user message that carries a compaction summary.
SUMMARY_HEADER = "[Summary of the earlier conversation]"


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary written by an earlier compaction (its ``meta`` holds
    ``{"ctxtrim": {"summary": true}}``)."""
    meta = message.meta
    if not meta:
        return False
    tag = meta.get("ctxtrim")
    return isinstance(tag, dict) and tag.get("summary") is True


def summary_body(message: Message) -> str:
    """The text of an earlier summary without its header line."""
    text = message.text
    if text.startswith(SUMMARY_HEADER):
        text = text[len(SUMMARY_HEADER) :]
    return text.strip()


def result_text(block: ToolResultBlock) -> str:
    """A tool result as text: its ``compact_summary`` if it has one, else its content with
    images shown as ``[image: type]``."""
    if block.compact_summary is not None:
        return block.compact_summary
    if isinstance(block.content, str):
        return block.content
    parts: list[str] = []
    for part in block.content:
        if isinstance(part, TextBlock):
            parts.append(part.text)
        elif isinstance(part, ImageBlock):
            parts.append(f"[image: {part.media_type}]")
        elif isinstance(part, ProviderBlock):
            parts.append(f"[{part.wire_type}: {_json(part.data)}]")
    return "\n".join(parts)


def _json(value: Any) -> str:
    # ensure_ascii=False keeps non-ASCII readable (and short); the clip is by characters.
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _render_message(
    message: Message, names: dict[str, str], max_result_chars: int, max_input_chars: int
) -> Iterable[str]:
    speaker = message.role.capitalize()
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                yield f"{speaker}: {block.text}"
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            args = clip_text(_json(block.input), max_input_chars, ELLIPSIS)
            yield f"[{speaker} called tool {block.name} (id {block.id}) with input {args}]"
        elif isinstance(block, ToolResultBlock):
            name = names.get(block.tool_use_id, "tool")
            status = "error" if block.is_error else "result"
            body = clip_text(result_text(block), max_result_chars, ELLIPSIS)
            yield f"[{name} {status} (id {block.tool_use_id})]: {body}"
        elif isinstance(block, ImageBlock):
            yield f"[{speaker} sent an image: {block.media_type}]"
        elif isinstance(block, ReasoningBlock):
            continue  # private chain of thought; the conclusions are in the text blocks
        elif isinstance(block, ProviderBlock):  # a server tool, a document...: its JSON
            data = clip_text(_json(block.data), max_result_chars, ELLIPSIS)
            yield f"[{speaker} {block.wire_type}: {data}]"


def render_transcript(
    messages: Sequence[Message], *, max_result_chars: int = 1000, max_input_chars: int = 500
) -> str:
    """The history as one text for a summariser: earlier summaries first under "Previous
    summary", then the conversation, one line per block, tool inputs and results clipped
    (character-safe) to the given lengths."""
    previous = [summary_body(m) for m in messages if is_summary(m)]
    names: dict[str, str] = {}
    lines: list[str] = []
    for m in messages:
        if not is_summary(m):
            lines.extend(_render_message(m, names, max_result_chars, max_input_chars))
    parts: list[str] = []
    if previous:
        parts.append("Previous summary:\n" + "\n\n".join(previous))
    parts.append("Conversation to summarise:\n" + ("\n".join(lines) if lines else "(empty)"))
    return "\n\n".join(parts)
