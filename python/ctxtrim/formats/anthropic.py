"""Anthropic Messages API ⇄ ctxtrim messages.

ctxtrim's model *is* Anthropic's (tool results travel in user messages), so the mapping is
block for block: ``text`` ↔ ``TextBlock``, ``image`` (base64 source) ↔ ``ImageBlock``,
``tool_use`` ↔ ``ToolUseBlock``, ``tool_result`` (string or list content, ``is_error``) ↔
``ToolResultBlock``, ``thinking`` (with its ``signature``) ↔ ``ReasoningBlock``,
``redacted_thinking`` ↔ ``ReasoningBlock(signature=data, redacted=True)``.

**The system prompt.** Anthropic takes it as a separate ``system`` parameter, so
:func:`to_anthropic` returns the request fragment ``{"system": ..., "messages": [...]}``
(``system`` only when there is one) — splat it into ``client.messages.create(**fragment,
model=..., max_tokens=...)``. The leading system messages become ``system`` (a string for one
text, else a list of text blocks); a system message after the first user or assistant
message cannot be expressed and raises :class:`~ctxtrim.errors.InvalidMessage`.
:func:`from_anthropic` accepts that fragment (or a whole request body; other keys are
ignored), a bare list of messages, and ``system=`` given separately, and puts the system
prompt first as one system message.

What Anthropic cannot carry, and :func:`to_anthropic` drops: ``compact_summary``,
``Message.name``/``id``/``turn``/``usage``/``meta`` (other than this module's record), the
text of a redacted reasoning block. Images in assistant messages raise ``InvalidMessage``.

Every other block — an image by URL or file id, documents, search results, server-side and
MCP tool calls with their results, container uploads, compaction... — is kept verbatim as a
:class:`~ctxtrim.messages.ProviderBlock` in the message it came in, paired and priced by its
row of :data:`ctxtrim.provider.SPECS`, and written back unchanged (a server tool's result
pairs with its call in the same assistant message). Another format's provider block raises
``InvalidMessage`` naming it, except an image behind an http(s) URL, which becomes an
``image`` with a ``url`` source.

Lossless: ``cache_control``, ``citations`` and other fields ctxtrim has no place for, and
content given as a string rather than a list, are kept in ``Message.meta["anthropic"]`` and
written back, so ``to_anthropic(from_anthropic(body)) == body`` for the fragment's keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

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

from ._common import (
    Renderings,
    Unit,
    build,
    decode_base64,
    decode_json,
    encode_base64,
    expect_bool,
    expect_dict,
    expect_list,
    expect_str,
    extra_keys,
    finish_parts,
    make_message,
    media_type,
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
    "from_anthropic",
    "from_anthropic_json",
    "to_anthropic",
    "to_anthropic_json",
]

#: The ``Message.meta`` key holding the Anthropic fields ctxtrim has no place for.
KEY = "anthropic"


# Which blocks each role may hold (the message model's rule, checked here to name the path).
_ALLOWED: dict[str, tuple[type, ...]] = {
    "system": (TextBlock,),
    "user": (TextBlock, ImageBlock, ToolResultBlock, ProviderBlock),
    "assistant": (TextBlock, ImageBlock, ToolUseBlock, ReasoningBlock, ProviderBlock),
}


def _default(blocks: Sequence[Block]) -> list[tuple[str, int]]:
    return [("message", len(blocks))]


def _fits(kind: str, blocks: Sequence[Block]) -> bool:
    return kind == "message"


# --------------------------------------------------------------------------------------------
# from


def _image(part: dict[str, Any], p: str, record: dict[str, Any]) -> ImageBlock | ProviderBlock:
    source = expect_dict(required(part, "source", p), f"{p}.source")
    kind = source.get("type")
    if kind != "base64":  # a URL or a file id: kept as it came
        return provider_block(KEY, part, p)
    mt = media_type(required(source, "media_type", f"{p}.source"), f"{p}.source.media_type")
    data = decode_base64(required(source, "data", f"{p}.source"), f"{p}.source.data")
    if nested := extra_keys(source, frozenset({"type", "media_type", "data"})):
        record["source"] = nested
    return ImageBlock(mt, data)


def _result_content(value: Any, p: str, record: dict[str, Any]) -> str | tuple[Any, ...]:
    if isinstance(value, str):
        return value
    items = expect_list(value, p)
    out: list[TextBlock | ImageBlock | ProviderBlock] = []
    records: list[dict[str, Any]] = []
    for j, raw in enumerate(items):
        q = f"{p}[{j}]"
        part = expect_dict(raw, q)
        kind = expect_str(required(part, "type", q), f"{q}.type")
        sub: dict[str, Any] = {}
        if kind == "text":
            out.append(TextBlock(expect_str(required(part, "text", q), f"{q}.text")))
            consumed = frozenset({"type", "text"})
        elif kind == "image":
            image = _image(part, q, sub)
            out.append(image)
            consumed = frozenset({"type", "source"} if type(image) is ImageBlock else part)
        else:  # a document, a search result...: kept as it came
            out.append(provider_block(KEY, part, q))
            consumed = frozenset(part)  # kept whole
        if keys := extra_keys(part, consumed):
            sub["keys"] = keys
        records.append(sub)
    if any(records):
        record["content"] = records
    return tuple(out)  # the stored form (a list takes the slower checks)


def _block(part: dict[str, Any], p: str, record: dict[str, Any], role: str) -> Block:
    kind = expect_str(required(part, "type", p), f"{p}.type")
    consumed: frozenset[str]
    block: Block
    if kind == "text":
        block = TextBlock(expect_str(required(part, "text", p), f"{p}.text"))
        consumed = frozenset({"type", "text"})
    elif kind == "image":
        block = _image(part, p, record)
        consumed = frozenset({"type", "source"} if type(block) is ImageBlock else part)
    elif kind == "tool_use":
        tid = expect_str(required(part, "id", p), f"{p}.id", nonempty=True)
        name = expect_str(required(part, "name", p), f"{p}.name", nonempty=True)
        tool_input = expect_dict(required(part, "input", p), f"{p}.input")
        block = build(f"{p}.input", ToolUseBlock, tid, name, tool_input)
        consumed = frozenset({"type", "id", "name", "input"})
    elif kind == "tool_result":
        tid = expect_str(required(part, "tool_use_id", p), f"{p}.tool_use_id", nonempty=True)
        if "content" in part:
            content = _result_content(part["content"], f"{p}.content", record)
        else:
            content = ""
            record["no_content"] = True
        is_error = part.get("is_error", False)
        expect_bool(is_error, f"{p}.is_error")
        if "is_error" in part and not is_error:
            record["explicit_is_error"] = True
        block = ToolResultBlock(tid, content, is_error=is_error)
        consumed = frozenset({"type", "tool_use_id", "content", "is_error"})
    elif kind == "thinking":
        text = expect_str(required(part, "thinking", p), f"{p}.thinking")
        signature = expect_str(part.get("signature", ""), f"{p}.signature")
        if "signature" not in part:
            record["no_signature"] = True
        block = ReasoningBlock(text, signature)
        consumed = frozenset({"type", "thinking", "signature"})
    elif kind == "redacted_thinking":
        block = ReasoningBlock("", expect_str(required(part, "data", p), f"{p}.data"), True)
        consumed = frozenset({"type", "data"})
    else:  # server-side and MCP tools, documents, compaction...: kept as they came
        block = provider_block(KEY, part, p, role)
        consumed = frozenset(part)  # kept whole
    if keys := extra_keys(part, consumed):
        record["keys"] = keys
    return block


def _content(value: Any, path: str, role: str, unit: Unit) -> list[Block]:
    if isinstance(value, str):
        unit["form"] = "str"
        return [TextBlock(expect_str(value, path))]
    parts = expect_list(value, path)
    blocks: list[Block] = []
    records: list[dict[str, Any]] = []
    for j, raw in enumerate(parts):
        p = f"{path}[{j}]"
        record: dict[str, Any] = {}
        block = _block(expect_dict(raw, p), p, record, role)
        if type(block) not in _ALLOWED[role]:
            raise InvalidMessage(
                f"a {expect_str(raw['type'], p)} block is not allowed in a {role} message",
                f"{p}.type",
            )
        blocks.append(block)
        records.append(record)
    finish_parts(unit, records)
    return blocks


#: The common shapes read without the general reader, in the core: a string system prompt,
#: then ``user``/``assistant`` messages with exactly ``role`` and ``content``, the content a
#: string or a list of text blocks, tool calls (assistant) and tool results (user) whose
#: content is a string or text blocks and whose ``is_error``, if given, is true, each block
#: with exactly the keys read below. These need no record but the string form, so each
#: message is exactly what the general reader makes; the first message in any other shape
#: (or with a value a constructor refuses) ends the prefix, and the loop goes on from there,
#: recording what it must or naming what is wrong. ``(messages, next)``; nothing is read
#: when a system prompt is given that the core leaves to the general reader.
_fast_prefix: Callable[[Any, list[Any]], tuple[list[Message], int]] = _core.anthropic_fast_prefix


def from_anthropic(data: Any, *, system: Any = None) -> list[Message]:
    """Anthropic messages → ctxtrim messages.

    ``data`` is a list of messages or a dict with ``"messages"`` (and optionally
    ``"system"``); ``system`` (a string or a list of text blocks) may also be given here.
    Raises :class:`~ctxtrim.errors.InvalidMessage` naming the path, e.g.
    ``messages[2].content[1].tool_use_id``, for anything malformed.
    """
    if isinstance(data, dict):
        if "messages" not in data:
            raise InvalidMessage("missing required field", "messages")
        if "system" in data:
            if data["system"] is None:
                raise InvalidMessage(
                    "expected a string or an array of text blocks, got null", "system"
                )
            if system is not None:
                raise InvalidMessage("the system prompt is given twice", "system")
            system = data["system"]
        data = data["messages"]
    items = expect_list(data, "messages")
    # The longest prefix in common shapes (a string system prompt first) is read in the core;
    # the loop below takes the rest.
    out, start = _fast_prefix(system, items)
    if system is not None and not out:  # a system prompt the core leaves to this reader
        unit: Unit = {"t": "message", "n": 0}
        if isinstance(system, str):
            blocks: list[Block] = [TextBlock(expect_str(system, "system"))]
        else:
            blocks = _content(expect_list(system, "system"), "system", "system", unit)
            if len(blocks) == 1:
                unit["form"] = "list"
        unit["n"] = len(blocks)
        out.append(make_message("system", blocks, [unit], key=KEY, default=_default, path="system"))
        more, start = _fast_prefix(None, items)
        out += more
    for i in range(start, len(items)):
        raw = items[i]
        path = f"messages[{i}]"
        msg = expect_dict(raw, path)
        role = expect_str(required(msg, "role", path), f"{path}.role")
        if role not in ("user", "assistant"):
            hint = " (pass the system prompt as `system`)" if role == "system" else ""
            raise InvalidMessage(
                f"unknown role {role!r}; expected user or assistant{hint}", f"{path}.role"
            )
        unit = {"t": "message", "n": 0}
        blocks = _content(required(msg, "content", path), f"{path}.content", role, unit)
        unit["n"] = len(blocks)
        if keys := extra_keys(msg, frozenset({"role", "content"})):
            unit["keys"] = keys
        out.append(make_message(role, blocks, [unit], key=KEY, default=_default, path=path))
    return out


def from_anthropic_json(data: bytes | bytearray | str, *, system: Any = None) -> list[Message]:
    """:func:`from_anthropic` of JSON text (a request body as it arrives, or its
    ``messages`` array), for servers that read raw bodies: the same messages and the same
    errors as ``from_anthropic(json.loads(data), system=system)``, which is what it runs for
    anything but the common shapes. Those (string or text content, tool calls, tool results
    of text, a string system prompt: what agents send on every turn) are read from the bytes
    in the core, with no dicts in between. Text that is not JSON raises
    :class:`json.JSONDecodeError`, as ``json.loads`` does.
    """
    if system is None:
        raw = data if type(data) is bytes else utf8_bytes(data)
        if raw is not None:
            fast = _core.anthropic_json_fast(raw)
            if fast is not None:
                return fast
    return from_anthropic(json.loads(data), system=system)


# --------------------------------------------------------------------------------------------
# to


def _render_image(b: ImageBlock, record: dict[str, Any]) -> dict[str, Any]:
    source: dict[str, Any] = {
        "type": "base64",
        "media_type": b.media_type,
        "data": encode_base64(b.data),
    }
    if isinstance(record.get("source"), dict):
        merge_keys(source, {"keys": record["source"]})
    return {"type": "image", "source": source}


def _render_block(b: Block, record: dict[str, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any]
    if type(b) is TextBlock:
        out = {"type": "text", "text": b.text}
    elif type(b) is ImageBlock:
        out = _render_image(b, record)
    elif type(b) is ToolUseBlock:
        out = {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
    elif type(b) is ToolResultBlock:
        out = {"type": "tool_result", "tool_use_id": b.tool_use_id}
        if isinstance(b.content, str):
            if b.content or not record.get("no_content"):
                out["content"] = b.content
        else:
            subs = record.get("content")
            items = []
            for j, item in enumerate(b.content):
                sub = (
                    subs[j]
                    if isinstance(subs, list) and j < len(subs) and isinstance(subs[j], dict)
                    else {}
                )
                rendered: dict[str, Any]
                if type(item) is TextBlock:
                    rendered = {"type": "text", "text": item.text}
                elif type(item) is ProviderBlock:
                    rendered = render_provider(item, KEY, f"{path}.content[{j}]")
                else:
                    rendered = _render_image(item, sub)  # type: ignore[arg-type]
                items.append(merge_keys(rendered, sub))
            out["content"] = items
        if b.is_error or record.get("explicit_is_error"):
            out["is_error"] = b.is_error
    elif type(b) is ProviderBlock:
        return render_provider(b, KEY, path)
    elif type(b) is ReasoningBlock:
        if b.redacted:
            out = {"type": "redacted_thinking", "data": b.signature}
        else:
            out = {"type": "thinking", "thinking": b.text}
            if b.signature or not record.get("no_signature"):
                out["signature"] = b.signature
    else:  # pragma: no cover - Message validation admits only these blocks
        raise TypeError(type(b).__name__)
    return merge_keys(out, record)


def _render_content(m: Message, unit: Unit, path: str) -> Any:
    if unit.get("form") == "str" and len(m.content) == 1 and type(m.content[0]) is TextBlock:
        return m.content[0].text
    out = []
    for k, b in enumerate(m.content):
        if m.role == "assistant" and type(b) is ImageBlock:
            raise InvalidMessage(
                "an image in an assistant message cannot be expressed in the Anthropic format",
                f"{path}.content[{k}]",
            )
        out.append(_render_block(b, part_record(unit, k), f"{path}.content[{k}]"))
    return out


def to_anthropic(messages: Sequence[Message]) -> dict[str, Any]:
    """ctxtrim messages → ``{"system": ..., "messages": [...]}`` (``system`` only if the
    history starts with system messages). Each message is converted once and kept; every
    call returns fresh dicts."""
    n_system = _leading_system(messages)
    rest = _RENDERINGS.dicts(messages[n_system:], n_system)
    if not n_system:
        return {"messages": rest}
    system = decode_json(_ENCODE(_system(messages[:n_system])))  # fresh, like the rest
    return {"system": system, "messages": rest}


def to_anthropic_json(messages: Sequence[Message]) -> bytes:
    """:func:`to_anthropic` as JSON bytes (the request's ``system`` and ``messages``), for
    servers that post raw bodies: the messages' kept renderings joined, nothing decoded."""
    n_system = _leading_system(messages)
    return _body(_RENDERINGS.json_bytes(messages[n_system:], n_system), messages[:n_system])


def _body(rest: bytes, system: Sequence[Message]) -> bytes:
    """The request of ``rest`` (the JSON array of the messages after the leading system
    messages) and those ``system`` messages, joined in one copy."""
    if not system:
        return b"".join((b'{"messages":', rest, b"}"))
    return b"".join((b'{"system":', _system_json(system), b',"messages":', rest, b"}"))


def _leading_system(messages: Sequence[Message]) -> int:
    """How many system messages the history starts with (they become ``system``)."""
    n = 0
    for m in messages:
        if type(m) is not Message or m.role != "system":
            break
        n += 1
    return n


_ENCODE = msgspec.json.Encoder().encode


def _system_json(messages: Sequence[Message]) -> bytes:
    """The JSON of the ``system`` field of the leading system messages. A request's system
    prompt is the same message every turn: a single one's JSON is kept (``_SYSTEMS``)."""
    if len(messages) != 1:
        return _ENCODE(_system(messages))
    (m,) = messages
    kept = _SYSTEMS.get(id(m))
    if kept is not None and kept[0] is m:
        return kept[1]
    written = _ENCODE(_system(messages))
    if len(_SYSTEMS) >= _SYSTEMS_KEPT:
        _SYSTEMS.clear()
    _SYSTEMS[id(m)] = (m, written)
    return written


#: ``id(message)`` → the message (held, so that its id is not reused) and its ``system``
#: JSON; a message never changes, so neither does its JSON. Emptied when full.
_SYSTEMS: dict[int, tuple[Message, bytes]] = {}
_SYSTEMS_KEPT = 256


def _system(messages: Sequence[Message]) -> str | list[dict[str, Any]]:
    """The ``system`` field of the leading system messages: one string for a single plain one."""
    blocks: list[dict[str, Any]] = []
    text: str | None = None
    for i, m in enumerate(messages):
        unit = units_for(m, KEY, _default, _fits)[0][0]
        rendered = _render_content(
            m, {**unit, "form": "str"} if unit.get("form") != "list" else unit, f"messages[{i}]"
        )
        if isinstance(rendered, str):
            text = rendered
            blocks.append({"type": "text", "text": rendered})
        else:
            blocks.extend(rendered)
    if len(messages) == 1 and text is not None:
        return text
    return blocks


#: A message with no recorded fields in a common shape (text, tool calls, string tool
#: results, reasoning), rendered in the core exactly as ``_render`` renders it; else None.
_render_fast: Callable[[Message], list[dict[str, Any]] | None] = _core.anthropic_render


def _render(m: Message, path: str) -> list[dict[str, Any]]:
    """One (non-system) message's Anthropic message."""
    fast = _render_fast(m)
    if fast is not None:
        return fast
    if m.role == "system":
        raise InvalidMessage(
            "a system message after the conversation started cannot be expressed in "
            "the Anthropic format (only a leading system prompt can)",
            path,
        )
    unit = units_for(m, KEY, _default, _fits)[0][0]
    return [merge_keys({"role": m.role, "content": _render_content(m, unit, path)}, unit)]


#: Where a message keeps its Anthropic rendering.
_RENDERINGS = Renderings("_ctxtrim_anthropic", _render, _render_fast, _core.anthropic_render_json)
#: ``log_json(log, cut)``: :func:`to_anthropic_json` of the window the cut rule ``cut`` keeps of
#: ``log``, written from the request last written of ``log`` (``Renderings.log_writer``).
log_json = _RENDERINGS.log_writer(_system_json)
