"""OpenAI Responses API input items ⇄ ctxtrim messages.

Mapping (items are read in order):

* ``message`` items (also the short ``{"role": ..., "content": ...}`` form) with ``user``,
  ``system`` or ``developer`` roles → a message of that role (``developer`` → system);
  content is a string or ``input_text`` / ``input_image`` parts (images as base64 data URLs);
* a run of consecutive assistant-side items — ``reasoning``, assistant ``message``
  (``output_text`` parts) and ``function_call`` — → **one** assistant message, so parallel
  calls stay together: ``ReasoningBlock`` (summary texts joined by a blank line,
  ``encrypted_content`` as the signature), ``TextBlock``\\ s, ``ToolUseBlock``\\ s
  (``call_id``, ``name``, JSON ``arguments``);
* a run of consecutive ``function_call_output`` items → one user message of
  ``ToolResultBlock``\\ s.

Converting back splits each message into items again, one per reasoning block, per tool call,
per tool result and per run of text/image blocks.

What the Responses format cannot carry, and :func:`to_openai_responses` drops: redacted
reasoning (Anthropic's ``redacted_thinking``), ``ToolResultBlock.is_error`` and
``compact_summary``, ``Message.name``/``id``/``turn``/``usage``/``meta`` (other than this
module's record). Images in assistant messages raise
:class:`~ctxtrim.errors.InvalidMessage`.

Every other item and content part — hosted tool calls (``web_search_call``...), client-side
tool calls and their outputs (``computer_call`` / ``computer_call_output``, shell, apply-patch,
custom tools, programs, tool search), MCP items, ``compaction``, ``item_reference``, images by
URL or file id, files, audio — is kept verbatim as a :class:`~ctxtrim.messages.ProviderBlock`,
paired and priced by its row of :data:`ctxtrim.provider.SPECS`: the model's items join the
assistant message, outputs the user message of results, developer directives a system
message; each is written back as the item it was. Another format's provider block raises
``InvalidMessage`` naming it, except an image behind an http(s) URL (an ``input_image``).

Lossless: item ``id`` and ``status``, ``annotations``/``logprobs`` of output text, an image's
``detail``, the exact ``arguments`` text, how the summary was split, the short message form
and the ``developer`` role are kept in ``Message.meta["openai_responses"]`` and written back,
so ``to_openai_responses(from_openai_responses(items)) == items``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

from ctxtrim import _core
from ctxtrim.errors import InvalidMessage
from ctxtrim.messages import (
    Block,
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.provider import SPECS, UNKNOWN

from ._common import (
    RAW_ARGUMENTS,
    Renderings,
    Unit,
    build,
    data_url,
    dumps_arguments,
    expect_dict,
    expect_list,
    expect_str,
    extra_keys,
    finish_parts,
    image_from_data_url,
    loads_arguments,
    make_message,
    merge_keys,
    part_record,
    provider_block,
    render_provider,
    required,
    units_for,
    utf8_bytes,
)

__all__ = [
    "KEY",
    "SUMMARY_SEPARATOR",
    "from_openai_responses",
    "from_openai_responses_json",
    "item_pair",
    "to_openai_responses",
    "to_openai_responses_json",
]

#: The ``Message.meta`` key holding the Responses fields ctxtrim has no place for.
KEY = "openai_responses"
#: Joins the parts of a reasoning summary into one ``ReasoningBlock.text``.
SUMMARY_SEPARATOR = "\n\n"

_KIND_OF_BLOCK: dict[type, str] = {
    ReasoningBlock: "reasoning",
    ToolUseBlock: "call",
    ToolResultBlock: "output",
    TextBlock: "message",
    ImageBlock: "message",
}


def _kind(b: Block) -> str:
    """The unit a block renders in: an item of its own, or a part of a ``message`` item (a
    provider block of this format is an item when its row says so)."""
    if type(b) is ProviderBlock:
        return "item" if b.format == KEY and b.spec.level == "item" else "message"
    return _KIND_OF_BLOCK[type(b)]


def _default(blocks: Sequence[Block]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for b in blocks:
        kind = _kind(b)
        if kind == "message" and out and out[-1][0] == "message":
            out[-1] = ("message", out[-1][1] + 1)
        else:
            out.append((kind, 1))
    return out or [("message", 0)]


def _fits(kind: str, blocks: Sequence[Block]) -> bool:
    if kind == "message":
        return all(_kind(b) == "message" for b in blocks)
    if len(blocks) != 1:
        return False
    b = blocks[0]
    if _kind(b) == kind:
        return True
    # A type no row names is a part or an item as it came: the layout read it as an item.
    return kind == "item" and type(b) is ProviderBlock and b.format == KEY and b.spec is UNKNOWN


# --------------------------------------------------------------------------------------------
# from


def _parts(
    value: Any, path: str, *, assistant: bool, unit: Unit, role: str | None = None
) -> list[Block]:
    """Message content or tool output parts → blocks (records non-canonical details). Parts
    other than text and inline images are kept verbatim, checked against ``role`` (the
    message's; None in a tool output)."""
    parts = expect_list(value, path)
    text_type = "output_text" if assistant else "input_text"
    blocks: list[Block] = []
    records: list[dict[str, Any]] = []
    for j, raw in enumerate(parts):
        p = f"{path}[{j}]"
        part = expect_dict(raw, p)
        kind = expect_str(required(part, "type", p), f"{p}.type")
        record: dict[str, Any] = {}
        if kind in ("input_text", "output_text"):
            text = expect_str(required(part, "text", p), f"{p}.text")
            blocks.append(TextBlock(text))
            consumed = frozenset({"type", "text"})
            if kind != text_type:
                record["type"] = kind
        elif kind == "input_image" and not assistant and _inline(part):
            blocks.append(image_from_data_url(required(part, "image_url", p), f"{p}.image_url"))
            consumed = frozenset({"type", "image_url"})
        else:  # an image by URL or file id, a file, audio, a refusal...: kept as it came
            blocks.append(provider_block(KEY, part, p, role))
            consumed = frozenset(part)
        if keys := extra_keys(part, consumed):
            record["keys"] = keys
        records.append(record)
    finish_parts(unit, records)
    return blocks


def _inline(part: dict[str, Any]) -> bool:
    """Whether an ``input_image`` part holds the image itself (a data URL, no file id)."""
    url = part.get("image_url")
    return part.get("file_id") is None and not (
        isinstance(url, str) and url.startswith(("http://", "https://"))
    )


#: The group a provider item joins, by the side its row names: results and what the client
#: sends join a user message of results, developer directives a system message.
_GROUP_OF_SIDE = {"assistant": "assistant", "user": "results", "system": "system"}


def from_openai_responses(items: Any, *, raw_arguments: bool = False) -> list[Message]:
    """Responses ``input`` items (a list, or a request body with ``"input"``) → messages.

    Raises :class:`~ctxtrim.errors.InvalidMessage` naming the path, e.g.
    ``input[4].call_id``, for anything malformed. Tool ``arguments`` that are not a JSON
    object raise too, unless ``raw_arguments`` keeps their text as the call's input
    ``{RAW_ARGUMENTS: text}``, which converting back writes out unchanged.
    """
    if isinstance(items, dict) and "input" in items:
        items = items["input"]
    if isinstance(items, str):  # the API's shorthand for one user message
        items = [{"role": "user", "content": items}]
    seq = expect_list(items, "input")
    # The longest prefix in common shapes is read in the core; the loop below takes the rest.
    out, start = _fast_prefix(seq)
    group: list[Block] = []
    units: list[Unit] = []
    group_role = ""
    group_path = ""

    def flush() -> None:
        nonlocal group_role
        if group_role:
            out.append(
                make_message(
                    "user" if group_role == "results" else group_role,
                    list(group),
                    list(units),
                    key=KEY,
                    default=_default,
                    path=group_path,
                )
            )
        group.clear()
        units.clear()
        group_role = ""

    def join(role: str, path: str) -> None:
        nonlocal group_role, group_path
        if group_role != role:
            flush()
            group_role, group_path = role, path

    for i in range(start, len(seq)):
        raw = seq[i]
        path = f"input[{i}]"
        item = expect_dict(raw, path)
        kind = item.get("type")
        if "type" in item:
            expect_str(kind, f"{path}.type")
        unit: Unit = {"t": "", "n": 1}
        if (kind is None and "role" in item) or kind == "message":
            if kind is None:
                if "role" not in item:
                    raise InvalidMessage("missing required field", f"{path}.type")
                unit["short"] = True
            role = expect_str(required(item, "role", path), f"{path}.role")
            if role not in ("user", "system", "developer", "assistant"):
                raise InvalidMessage(
                    f"unknown role {role!r}; expected user, system, developer or assistant",
                    f"{path}.role",
                )
            assistant = role == "assistant"
            content = required(item, "content", path)
            if isinstance(content, str):
                blocks: list[Block] = [TextBlock(expect_str(content, f"{path}.content"))]
                if assistant:
                    unit["form"] = "str"
            else:
                blocks = _parts(
                    content,
                    f"{path}.content",
                    assistant=assistant,
                    unit=unit,
                    role="system" if role == "developer" else role,
                )
                if not assistant and len(blocks) == 1 and type(blocks[0]) is TextBlock:
                    unit["form"] = "list"
            unit["t"], unit["n"] = "message", len(blocks)
            if role == "developer":
                unit["role"] = "developer"
            consumed = frozenset({"type", "role", "content"})
            if assistant:
                join("assistant", path)
            else:
                flush()
                group_role, group_path = ("system" if role == "developer" else role), path
        elif kind == "function_call":
            call_id = expect_str(required(item, "call_id", path), f"{path}.call_id", nonempty=True)
            name = expect_str(required(item, "name", path), f"{path}.name", nonempty=True)
            raw_args = required(item, "arguments", path)
            args = loads_arguments(raw_args, f"{path}.arguments", keep_raw=raw_arguments)
            blocks = [build(path, ToolUseBlock, call_id, name, args)]
            if raw_args != dumps_arguments(args):
                unit["arguments"] = raw_args  # byte-exact: provider prompt caches key on it
            unit["t"] = "call"
            consumed = frozenset({"type", "call_id", "name", "arguments"})
            join("assistant", path)
        elif kind == "function_call_output":
            call_id = expect_str(required(item, "call_id", path), f"{path}.call_id", nonempty=True)
            output = required(item, "output", path)
            if isinstance(output, str):
                result = ToolResultBlock(call_id, expect_str(output, f"{path}.output"))
            else:
                parts = _parts(output, f"{path}.output", assistant=False, unit=unit)
                result = build(f"{path}.output", ToolResultBlock, call_id, parts)
            blocks = [result]
            unit["t"] = "output"
            consumed = frozenset({"type", "call_id", "output"})
            join("results", path)  # never merges with a user message item
        elif kind == "reasoning":
            summary = expect_list(required(item, "summary", path), f"{path}.summary")
            texts = []
            for j, raw_part in enumerate(summary):
                p = f"{path}.summary[{j}]"
                part = expect_dict(raw_part, p)
                if part.get("type") != "summary_text":
                    raise InvalidMessage("expected a summary_text part", f"{p}.type")
                texts.append(expect_str(required(part, "text", p), f"{p}.text"))
            text = SUMMARY_SEPARATOR.join(texts)
            canonical = [{"type": "summary_text", "text": text}] if text else []
            if summary != canonical:
                unit["summary"] = summary
            encrypted = item.get("encrypted_content")
            if encrypted is None:
                if "encrypted_content" in item:
                    unit["null_encrypted"] = True
                signature = ""
            else:
                signature = expect_str(encrypted, f"{path}.encrypted_content")
                if not signature:
                    unit["empty_encrypted"] = True
            blocks = [build(path, ReasoningBlock, text, signature)]
            unit["t"] = "reasoning"
            consumed = frozenset({"type", "summary", "encrypted_content"})
            join("assistant", path)
        else:  # hosted and client-side tools, MCP, compaction...: kept as they came
            block = provider_block(KEY, item, path)
            blocks = [block]
            unit["t"] = "item"
            consumed = frozenset(item)
            join(_GROUP_OF_SIDE.get(block.spec.side) or group_role or "assistant", path)
        if keys := extra_keys(item, consumed):
            unit["keys"] = keys
        group.extend(blocks)
        units.append(unit)
    flush()
    return out


def from_openai_responses_json(
    data: bytes | bytearray | str, *, raw_arguments: bool = False
) -> list[Message]:
    """:func:`from_openai_responses` of JSON text (a request body as it arrives, its
    ``input`` array, or the string shorthand), for servers that read raw bodies: the same
    messages and the same errors as
    ``from_openai_responses(json.loads(data), raw_arguments=raw_arguments)``, which is what
    it runs for anything but the common shapes. Those (text messages, function calls with
    object arguments, string outputs: what agents send on every turn) are read from the
    bytes in the core, with no dicts in between; the body's other keys (``instructions``,
    ``tools``...) are ignored, as :func:`from_openai_responses` ignores them. Text that is
    not JSON raises :class:`json.JSONDecodeError`, as ``json.loads`` does.
    """
    raw = data if type(data) is bytes else utf8_bytes(data)
    if raw is not None:
        # ``raw_arguments`` changes nothing there: the core takes only object arguments.
        fast = _core.responses_json_fast(RAW_ARGUMENTS, raw)
        if fast is not None:
            return fast
    return from_openai_responses(json.loads(data), raw_arguments=raw_arguments)


# --------------------------------------------------------------------------------------------
# to


def _render_parts(
    blocks: Sequence[Block], unit: Unit, path: str, *, assistant: bool
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for k, b in enumerate(blocks):
        if type(b) is ProviderBlock:
            parts.append(render_provider(b, KEY, f"{path}[{k}]"))
            continue
        record = part_record(unit, k)
        if type(b) is TextBlock:
            ptype = record.get("type")
            if ptype not in ("input_text", "output_text"):
                ptype = "output_text" if assistant else "input_text"
            part: dict[str, Any] = {"type": ptype, "text": b.text}
        elif type(b) is ImageBlock:
            part = {"type": "input_image", "image_url": data_url(b)}
        else:  # pragma: no cover - _fits guarantees text or image
            continue
        parts.append(merge_keys(part, record))
    return parts


def to_openai_responses(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """ctxtrim messages → Responses ``input`` items (see the module docstring for what cannot
    be carried). Each message is converted once and kept; every call returns fresh dicts."""
    return _RENDERINGS.dicts(messages)


def to_openai_responses_json(messages: Sequence[Message]) -> bytes:
    """:func:`to_openai_responses` as JSON bytes (the request's ``input`` array), for servers
    that post raw bodies: the messages' kept renderings joined, nothing decoded."""
    return _RENDERINGS.json_bytes(messages)


# --------------------------------------------------------------------------------------------
# Common shapes, read and rendered in the core


_SHORT_USER = {KEY: [{"t": "message", "n": 1, "short": True}]}
_SHORT_ASSISTANT = {KEY: [{"t": "message", "n": 1, "short": True, "form": "str"}]}

#: The common shapes read without the general reader, in the core: ``message`` items (and
#: the short ``{"role", "content"}`` form) of role user, system or assistant whose content is
#: a string or text parts with exactly ``type`` and ``text``; ``function_call`` items whose
#: ``arguments`` are the compact JSON of an object (parsed and re-encoded with the functions
#: the general reader uses); ``function_call_output`` items with a string output. Grouped
#: into messages as the loop below groups them, each with the record it writes, so the
#: result is exactly the general reader's. The first item in any other shape (extra keys, a
#: ``developer`` role, reasoning, images, odd arguments, bad values) ends the prefix, at the
#: first item of the message it would join: ``(messages, next)``.
_fast_prefix: Callable[[list[Any]], tuple[list[Message], int]] = functools.partial(
    _core.responses_fast_prefix, RAW_ARGUMENTS
)


def item_pair(item: Any) -> tuple[str, str] | None:
    """``("call", id)`` or ``("result", id)`` when the input item ``item`` is one half of a
    call/result pair (a function call and its output, and every pair of the format's table:
    computer, shell, apply-patch, custom-tool, program, tool-search calls, MCP approvals),
    else None. For callers that keep the items themselves (the openai-agents session)."""
    if type(item) is not dict:
        return None
    kind = item.get("type")
    if kind == "function_call" or kind == "function_call_output":
        call_id = item.get("call_id")
        side = "call" if kind == "function_call" else "result"
        return (side, call_id) if isinstance(call_id, str) else None
    spec = SPECS[KEY].get(kind) if isinstance(kind, str) else None
    if spec is None or not spec.pair:
        return None
    call_id = item.get(spec.id_key)
    return (spec.pair, call_id) if isinstance(call_id, str) else None


def read_common_item(data: dict[str, Any]) -> Message | None:
    """The message ``from_openai_responses([data])`` makes of the one item ``data``, read in
    the core for the items an agent loop is made of (a function call, its text output, a
    message with text), or None. For callers that keep one message per item (the
    openai-agents session; checked against the general reader on generated items by
    tests/integrations/test_integration_openai_agents.py)."""
    read, n = _fast_prefix([data])
    return read[0] if n == 1 else None


#: ``_render(m)`` built in the core for a message in a common shape (text, tool calls,
#: string tool results, reasoning; no recorded fields, or only the short form of one text),
#: or None. ``_render`` tries it first; a session's ``get_items``, which renders every
#: message fresh from its store, calls it directly. The same items as the general renderer,
#: key order included (tests/formats/test_formats.py and
#: tests/integrations/test_integration_openai_agents.py).
render_common: Callable[[Message], list[dict[str, Any]] | None] = functools.partial(
    _core.responses_render, RAW_ARGUMENTS, _SHORT_USER, _SHORT_ASSISTANT
)
#: ``render_common``'s items as their JSON (comma-joined objects), written in the core
#: straight from the message: the bytes path's first rendering of a message, no dicts made.
render_common_json: Callable[[Message], bytes | None] = functools.partial(
    _core.responses_render_json, RAW_ARGUMENTS, _SHORT_USER, _SHORT_ASSISTANT
)


def _render(m: Message, path: str) -> list[dict[str, Any]]:
    """One message's Responses input items."""
    common = render_common(m)
    if common is not None:
        return common
    out: list[dict[str, Any]] = []
    at = 0
    for unit, blocks in units_for(m, KEY, _default, _fits):
        kind = unit["t"]
        item: dict[str, Any]
        if kind == "message":
            assistant = m.role == "assistant"
            if assistant:
                for k, b in enumerate(blocks):
                    if type(b) is ImageBlock:
                        raise InvalidMessage(
                            "an image in an assistant message cannot be expressed in the "
                            "OpenAI Responses format",
                            f"{path}.content[{at + k}]",
                        )
            role = "developer" if m.role == "system" and unit.get("role") == "developer" else m.role
            single = len(blocks) == 1 and type(blocks[0]) is TextBlock
            as_str = single and (
                unit.get("form") == "str" if assistant else unit.get("form") != "list"
            )
            content: Any = (
                blocks[0].text  # type: ignore[union-attr]
                if as_str
                else _render_parts(blocks, unit, f"{path}.content", assistant=assistant)
            )
            item = {"role": role, "content": content}
            if not unit.get("short"):
                item = {"type": "message", **item}
        elif kind == "call":
            b = blocks[0]
            assert type(b) is ToolUseBlock
            args = dumps_arguments(b.input)
            raw = unit.get("arguments")
            if isinstance(raw, str) and raw != args:
                try:
                    if loads_arguments(raw, "") == b.input:
                        args = raw
                except InvalidMessage:
                    pass
            item = {"type": "function_call", "call_id": b.id, "name": b.name, "arguments": args}
        elif kind == "item":
            b = blocks[0]
            assert type(b) is ProviderBlock
            item = render_provider(b, KEY, f"{path}.content[{at}]")
        elif kind == "output":
            r = blocks[0]
            assert type(r) is ToolResultBlock
            output: Any = (
                r.content
                if isinstance(r.content, str)
                else _render_parts(
                    r.content, unit, f"{path}.content[{at}].content", assistant=False
                )
            )
            item = {"type": "function_call_output", "call_id": r.tool_use_id, "output": output}
        else:
            rb = blocks[0]
            assert type(rb) is ReasoningBlock
            if rb.redacted:
                at += len(blocks)
                continue
            summary = unit.get("summary")
            if not (
                isinstance(summary, list)
                and all(isinstance(s, dict) and isinstance(s.get("text"), str) for s in summary)
                and SUMMARY_SEPARATOR.join(s["text"] for s in summary) == rb.text
            ):
                summary = [{"type": "summary_text", "text": rb.text}] if rb.text else []
            item = {"type": "reasoning", "summary": summary}
            if rb.signature:
                item["encrypted_content"] = rb.signature
            elif unit.get("null_encrypted"):
                item["encrypted_content"] = None
            elif unit.get("empty_encrypted"):
                item["encrypted_content"] = ""
        out.append(merge_keys(item, unit))
        at += len(blocks)
    return out


#: Where a message keeps its Responses rendering.
_RENDERINGS = Renderings("_ctxtrim_openai_responses", _render, render_common, render_common_json)
#: ``log_json(log, cut)``: :func:`to_openai_responses_json` of the window the cut rule
#: ``cut`` keeps of ``log``, written from the request last written of ``log``
#: (``Renderings.log_writer``).
log_json = _RENDERINGS.log_writer()
