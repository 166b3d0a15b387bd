"""OpenAI Chat Completions messages ⇄ ctxtrim messages.

Mapping:

* ``system`` and ``developer`` messages → system messages (``developer`` is remembered);
* ``user`` content (a string or ``text`` / ``image_url`` parts; images as base64 data URLs)
  → a user message;
* ``assistant`` content and ``tool_calls`` (``arguments`` is a JSON string) → an assistant
  message with text blocks followed by ``ToolUseBlock``\\ s;
* a run of consecutive ``tool`` messages → **one** user message of ``ToolResultBlock``\\ s
  (ctxtrim's model, Anthropic's too); converting back splits it into one ``tool`` message per
  result, in order. A ``user`` message right after the tool messages stays its own message;
* ``name`` ↔ ``Message.name`` (user, assistant and system messages);
* anything else — ``image_url`` parts with an http(s) URL, ``input_audio``, ``file`` and
  ``refusal`` parts, ``custom`` tool calls (answered by ``tool`` messages like function
  calls), the legacy ``function_call`` field and ``function`` messages (paired in order: the
  wire has no ids) — is kept verbatim as a :class:`~ctxtrim.messages.ProviderBlock`, paired
  and priced by its row of :data:`ctxtrim.provider.SPECS`, and written back unchanged.
  Another format's provider block raises ``InvalidMessage`` naming it, except an image
  behind an http(s) URL (an ``image_url`` part).

What Chat Completions cannot carry, and so is dropped by :func:`to_openai_chat`: reasoning
blocks, ``ToolResultBlock.is_error`` and ``compact_summary``, ``Message.id``/``turn``/
``usage``/``meta`` (other than this module's own record), the ``name`` of a message holding
only tool results, and the order of text relative to tool calls in an assistant message
(text comes first). Images in assistant messages or in tool results cannot be expressed and
raise :class:`~ctxtrim.errors.InvalidMessage`, as do system messages with non-text content.

Lossless: fields ctxtrim has no place for (``refusal``, ``annotations``, an image's
``detail``, the exact text of ``arguments``, a ``developer`` role, content given as a list
rather than a string...) are kept in ``Message.meta["openai_chat"]`` and written back, so
``to_openai_chat(from_openai_chat(payload)) == payload``.
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
    verbatim,
)

__all__ = [
    "KEY",
    "from_openai_chat",
    "from_openai_chat_json",
    "to_openai_chat",
    "to_openai_chat_json",
]

#: The ``Message.meta`` key holding the Chat Completions fields ctxtrim has no place for.
KEY = "openai_chat"

_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_IMAGE_KEYS = frozenset({"url"})


def _default(blocks: Sequence[Block]) -> list[tuple[str, int]]:
    """Canonical units of a message's blocks (the role decides for system/assistant)."""
    if not blocks:
        return [("any", 0)]
    kinds = {type(b) for b in blocks}
    if ToolUseBlock in kinds or ReasoningBlock in kinds or ToolResultBlock not in kinds:
        return [("any", len(blocks))]
    out: list[tuple[str, int]] = []
    for b in blocks:
        if type(b) is ToolResultBlock:
            out.append(("tool", 1))
        elif out and out[-1][0] == "any":
            out[-1] = ("any", out[-1][1] + 1)
        else:
            out.append(("any", 1))
    return out


def _fits(kind: str, blocks: Sequence[Block]) -> bool:
    if kind == "tool":
        return len(blocks) == 1 and type(blocks[0]) is ToolResultBlock
    return kind == "any" and all(type(b) is not ToolResultBlock for b in blocks)


# --------------------------------------------------------------------------------------------
# from


def _content(value: Any, path: str, *, role: str | None, unit: Unit) -> list[Block]:
    """A message's ``content`` (string, null or parts) → blocks; records its form. ``role``
    is the message's (None in a tool message): parts other than text and inline images are
    kept verbatim, each checked against the role its row names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [TextBlock(expect_str(value, path))]
    parts = expect_list(value, path)
    blocks: list[Block] = []
    records: list[dict[str, Any]] = []
    for j, raw in enumerate(parts):
        p = f"{path}[{j}]"
        part = expect_dict(raw, p)
        kind = expect_str(required(part, "type", p), f"{p}.type")
        record: dict[str, Any] = {}
        if kind == "text":
            blocks.append(build(p, TextBlock, expect_str(required(part, "text", p), f"{p}.text")))
            keys = extra_keys(part, frozenset({"type", "text"}))
        elif kind == "image_url" and role == "user" and _inline(part, p):
            image = part["image_url"]
            blocks.append(
                image_from_data_url(required(image, "url", f"{p}.image_url"), f"{p}.image_url.url")
            )
            keys = extra_keys(part, frozenset({"type", "image_url"}))
            if nested := extra_keys(image, _IMAGE_KEYS):
                record["image_url"] = nested
        else:  # an image behind a URL, audio, a file, a refusal...: kept as it came
            blocks.append(provider_block(KEY, part, p, role))
            keys = {}
        if keys:
            record["keys"] = keys
        records.append(record)
    if (len(blocks) == 1 and type(blocks[0]) is TextBlock) or not blocks:
        unit["form"] = "list"  # the canonical rendering would be a string or null
    finish_parts(unit, records)
    return blocks


def _inline(part: dict[str, Any], p: str) -> bool:
    """Whether an ``image_url`` part holds the image itself (a data URL): an ``ImageBlock``."""
    image = expect_dict(required(part, "image_url", p), f"{p}.image_url")
    url = image.get("url")
    return not (isinstance(url, str) and url.startswith(("http://", "https://")))


def _tool_calls(value: Any, path: str, unit: Unit, first: int, *, keep_raw: bool) -> list[Block]:
    calls = expect_list(value, path)
    out: list[Block] = []
    records: list[dict[str, Any]] = list(unit.get("parts", []))
    records += [{}] * (first - len(records))  # the blocks before the calls have none
    for k, raw in enumerate(calls):
        p = f"{path}[{k}]"
        call = expect_dict(raw, p)
        call_id = expect_str(required(call, "id", p), f"{p}.id", nonempty=True)
        kind = call.get("type", "function")
        if kind != "function":  # a custom tool call: kept as it came
            out.append(provider_block(KEY, call, p, "assistant"))
            records.append({})
            continue
        fn = expect_dict(required(call, "function", p), f"{p}.function")
        name = expect_str(
            required(fn, "name", f"{p}.function"), f"{p}.function.name", nonempty=True
        )
        raw_args = required(fn, "arguments", f"{p}.function")
        args = loads_arguments(raw_args, f"{p}.function.arguments", keep_raw=keep_raw)
        out.append(build(p, ToolUseBlock, call_id, name, args))
        record: dict[str, Any] = {}
        if raw_args != dumps_arguments(args):
            record["arguments"] = raw_args  # byte-exact: provider prompt caches key on it
        if "type" not in call:
            record["no_type"] = True
        if keys := extra_keys(call, _CALL_KEYS):
            record["keys"] = keys
        if fn_keys := extra_keys(fn, frozenset({"name", "arguments"})):
            record["function"] = fn_keys
        records.append(record)
    finish_parts(unit, records)
    return out


#: The common shapes read without the general reader, in the core: a ``system``/``user``
#: message whose content is a string, an ``assistant`` one with string or null content and
#: plain function calls whose ``arguments`` are the compact JSON of a dict (parsed and
#: re-encoded with ``_core.json_loads``/``_core.compact_json``, as the general reader does), a
#: ``tool`` message with string content (its result block, for the run it joins). These need
#: no record, so the result is exactly what the general reader makes; on anything else (extra
#: keys, a ``name``, parts, odd arguments, bad values) it gives None and the general reader
#: records what it must or names what is wrong.
_fast: Callable[[Any], Message | ToolResultBlock | None] = functools.partial(
    _core.chat_fast, RAW_ARGUMENTS
)
_fast_prefix: Callable[
    [list[Any]], tuple[list[Message], int, list[ToolResultBlock | Block], int]
] = functools.partial(_core.chat_fast_prefix, RAW_ARGUMENTS)


def from_openai_chat(messages: Any, *, raw_arguments: bool = False) -> list[Message]:
    """Chat Completions ``messages`` (a list, or a request body with ``"messages"``) → messages.

    Raises :class:`~ctxtrim.errors.InvalidMessage` naming the path, e.g.
    ``messages[3].tool_calls[0].id``, for anything malformed. Tool ``arguments`` that are not
    a JSON object raise too, unless ``raw_arguments`` keeps their text as the call's input
    ``{RAW_ARGUMENTS: text}``, which converting back writes out unchanged.
    """
    if isinstance(messages, dict) and "messages" in messages:
        messages = messages["messages"]
    items = expect_list(messages, "messages")
    # The longest prefix in common shapes is read in the core; the loop below takes the rest.
    out, start, run, run_start = _fast_prefix(items)
    # ``run``: consecutive tool messages → one user message
    run_units: list[Unit] = [{"t": "tool", "n": 1} for _ in run]
    run_path = f"messages[{run_start}]"
    legacy_call: str | None = None  # the pair id of the latest unanswered function_call

    def flush() -> None:
        if run:
            out.append(
                make_message(
                    "user", list(run), list(run_units), key=KEY, default=_default, path=run_path
                )
            )
            run.clear()
            run_units.clear()

    for i in range(start, len(items)):
        raw = items[i]
        fast = _fast(raw)
        if type(fast) is ToolResultBlock:
            if not run:
                run_path = f"messages[{i}]"
            run.append(fast)
            run_units.append({"t": "tool", "n": 1})
            continue
        if fast is not None:
            flush()
            out.append(fast)  # type: ignore[arg-type]
            continue
        path = f"messages[{i}]"
        msg = expect_dict(raw, path)
        role = expect_str(required(msg, "role", path), f"{path}.role")
        unit: Unit = {"t": "any", "n": 0}
        if role == "tool":
            if not run:
                run_path = path
            call_id = expect_str(
                required(msg, "tool_call_id", path), f"{path}.tool_call_id", nonempty=True
            )
            content = required(msg, "content", path)
            if content is None:
                raise InvalidMessage("expected a string or an array, got null", f"{path}.content")
            if isinstance(content, str):
                result = ToolResultBlock(call_id, expect_str(content, f"{path}.content"))
            else:
                blocks = _content(content, f"{path}.content", role=None, unit=unit)
                unit.pop("form", None)  # a list stays a list for tool results
                result = build(f"{path}.content", ToolResultBlock, call_id, tuple(blocks))
            unit["t"], unit["n"] = "tool", 1
            if keys := extra_keys(msg, frozenset({"role", "tool_call_id", "content"})):
                unit["keys"] = keys
            run.append(result)
            run_units.append(unit)
            continue
        flush()
        if role == "function":  # legacy function calling: the answer to the latest call
            pair_id, legacy_call = legacy_call or f"function:{i}", None
            out.append(Message("user", (provider_block(KEY, msg, path, "user", pair_id),)))
            continue
        name = msg.get("name")
        if name is not None:
            expect_str(name, f"{path}.name", nonempty=True)
        elif "name" in msg:
            unit["null_name"] = True
        if "content" not in msg:
            if role != "assistant":
                raise InvalidMessage("missing required field", f"{path}.content")
            unit["form"] = "absent"
        if role in ("system", "developer"):
            blocks = _content(msg.get("content"), f"{path}.content", role="system", unit=unit)
            if role == "developer":
                unit["role"] = "developer"
            ours = "system"
        elif role == "user":
            blocks = _content(msg.get("content"), f"{path}.content", role="user", unit=unit)
            ours = "user"
        elif role == "assistant":
            blocks = _content(msg.get("content"), f"{path}.content", role="assistant", unit=unit)
            if msg.get("function_call") is not None:  # legacy function calling
                legacy_call = f"function_call:{i}"
                field = {"function_call": msg["function_call"]}
                blocks.append(provider_block(KEY, field, path, "assistant", legacy_call))
            if msg.get("tool_calls") is not None:
                blocks += _tool_calls(
                    msg["tool_calls"],
                    f"{path}.tool_calls",
                    unit,
                    len(blocks),
                    keep_raw=raw_arguments,
                )
            elif "tool_calls" in msg:
                unit["null_tool_calls"] = True
            if msg.get("tool_calls") == []:
                unit["empty_tool_calls"] = True
            ours = "assistant"
        else:
            raise InvalidMessage(
                f"unknown role {role!r}; expected system, developer, user, assistant or tool",
                f"{path}.role",
            )
        unit["n"] = len(blocks)
        consumed = _MESSAGE_KEYS
        if role == "assistant" and msg.get("function_call") is not None:
            consumed = _MESSAGE_KEYS | {"function_call"}  # its block holds it
        if keys := extra_keys(msg, consumed):
            unit["keys"] = keys
        out.append(
            make_message(ours, blocks, [unit], key=KEY, default=_default, name=name, path=path)
        )
    flush()
    return out


def from_openai_chat_json(
    data: bytes | bytearray | str, *, raw_arguments: bool = False
) -> list[Message]:
    """:func:`from_openai_chat` of JSON text (a request body as it arrives, or its
    ``messages`` array), for servers that read raw bodies: the same messages and the same
    errors as ``from_openai_chat(json.loads(data))``, which is what it runs for anything but
    the common shapes. Those (string content, plain function calls, string tool results: what
    agents send on every turn) are read from the bytes in the core, with no dicts in between.
    Text that is not JSON raises :class:`json.JSONDecodeError`, as ``json.loads`` does.
    """
    raw = data if type(data) is bytes else utf8_bytes(data)
    if raw is not None:
        # Each message read there keeps its rendering's JSON too: sending it on costs nothing.
        fast = _core.chat_json_fast(RAW_ARGUMENTS, raw, _JSON_ATTR)
        if fast is not None:
            return fast
    return from_openai_chat(json.loads(data), raw_arguments=raw_arguments)


# --------------------------------------------------------------------------------------------
# to


def _level(b: Block) -> str:
    """Where a block goes in a Chat message: ``"part"`` of its content, an entry of
    ``tool_calls`` (``"tool_call"``), a ``"field"`` of it (legacy ``function_call``), a whole
    ``"message"`` (legacy ``function`` role)."""
    if type(b) is ProviderBlock:
        return b.spec.level if b.format == KEY else "part"
    return "tool_call" if type(b) is ToolUseBlock else "part"


def _render_content(blocks: Sequence[Block], unit: Unit, path: str, at: int) -> Any:
    texts = [
        b
        for b in blocks
        if type(b) in (TextBlock, ImageBlock) or (type(b) is ProviderBlock and _level(b) == "part")
    ]
    form = unit.get("form")
    if not texts and form != "list":
        return None
    if len(texts) == 1 and type(texts[0]) is TextBlock and form != "list":
        return texts[0].text
    parts: list[dict[str, Any]] = []
    for k, b in enumerate(blocks):
        if type(b) is TextBlock:
            part: dict[str, Any] = {"type": "text", "text": b.text}
        elif type(b) is ImageBlock:
            record = part_record(unit, k)
            image: dict[str, Any] = {"url": data_url(b)}
            if isinstance(record.get("image_url"), dict):
                image.update(record["image_url"])
            part = {"type": "image_url", "image_url": image}
        elif type(b) is ProviderBlock and _level(b) == "part":
            part = render_provider(b, KEY, f"{path}.content[{at + k}]")
        else:
            continue
        parts.append(merge_keys(part, part_record(unit, k)))
    return parts


def _check_images(blocks: Sequence[Block], path: str, at: int, where: str) -> None:
    for k, b in enumerate(blocks):
        if type(b) is ImageBlock:
            raise InvalidMessage(
                f"an image in {where} cannot be expressed in OpenAI Chat Completions",
                f"{path}.content[{at + k}]",
            )


def to_openai_chat(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """ctxtrim messages → Chat Completions ``messages`` (see the module docstring for what
    cannot be carried). Each message is converted once and kept; every call returns fresh
    dicts."""
    return _RENDERINGS.dicts(messages)


def to_openai_chat_json(messages: Sequence[Message]) -> bytes:
    """:func:`to_openai_chat` as JSON bytes (the request's ``messages`` array), for servers
    that post raw bodies: the messages' kept renderings joined, nothing decoded."""
    return _RENDERINGS.json_bytes(messages)


#: A message with no recorded fields in a common shape (text; plain tool calls; string tool
#: results alone), rendered in the core exactly as ``_render`` renders it; else None.
_render_fast: Callable[[Message], list[dict[str, Any]] | None] = functools.partial(
    _core.chat_render, RAW_ARGUMENTS
)


def _render(m: Message, path: str) -> list[dict[str, Any]]:
    """One message's Chat Completions messages."""
    fast = _render_fast(m)
    if fast is not None:
        return fast
    if len(m.content) == 1 and type(m.content[0]) is ProviderBlock:
        if _level(m.content[0]) == "message":  # a legacy function message, kept whole
            return [verbatim(m.content[0])]
    out: list[dict[str, Any]] = []
    at = 0
    for unit, blocks in units_for(m, KEY, _default, _fits):
        d: dict[str, Any]
        if unit["t"] == "tool":
            result = blocks[0]
            assert type(result) is ToolResultBlock
            if isinstance(result.content, str):
                content: Any = result.content
            else:
                _check_images(result.content, f"{path}.content[{at}]", 0, "a tool result")
                content = [
                    render_provider(t, KEY, f"{path}.content[{at}].content[{k}]")
                    if type(t) is ProviderBlock
                    else merge_keys({"type": "text", "text": t.text}, part_record(unit, k))  # type: ignore[union-attr]
                    for k, t in enumerate(result.content)
                ]
            d = {"role": "tool", "tool_call_id": result.tool_use_id, "content": content}
        elif m.role == "system":
            d = {"role": "developer" if unit.get("role") == "developer" else "system"}
            if m.name is not None:
                d["name"] = m.name
            d["content"] = _render_content(blocks, unit, path, at)
        elif m.role == "assistant":
            _check_images(blocks, path, at, "an assistant message")
            d = {"role": "assistant"}
            if m.name is not None:
                d["name"] = m.name
            texts = [b for b in blocks if type(b) is not ToolUseBlock and _level(b) == "part"]
            if unit.get("form") != "absent" or texts:
                d["content"] = _render_content(blocks, unit, path, at)
            calls = []
            for k, b in enumerate(blocks):
                if type(b) is ProviderBlock and _level(b) == "field":
                    d.update(verbatim(b))
                    continue
                if type(b) is ProviderBlock and _level(b) == "tool_call":
                    calls.append(render_provider(b, KEY, f"{path}.content[{at + k}]"))
                    continue
                if type(b) is not ToolUseBlock:
                    continue
                record = part_record(unit, k)
                raw = record.get("arguments")
                args = dumps_arguments(b.input)
                if isinstance(raw, str) and raw != args:
                    try:
                        if loads_arguments(raw, "") == b.input:
                            args = raw
                    except InvalidMessage:
                        pass
                fn: dict[str, Any] = {"name": b.name, "arguments": args}
                if isinstance(record.get("function"), dict):
                    merge_keys(fn, {"keys": record["function"]})
                call: dict[str, Any] = {"id": b.id}
                if not record.get("no_type"):
                    call["type"] = "function"
                call["function"] = fn
                calls.append(merge_keys(call, record))
            if calls or unit.get("empty_tool_calls"):
                d["tool_calls"] = calls
            elif unit.get("null_tool_calls"):
                d["tool_calls"] = None
        else:
            d = {"role": "user"}
            if m.name is not None:
                d["name"] = m.name
            d["content"] = _render_content(blocks, unit, path, at)
        if m.name is None and unit.get("null_name") and unit["t"] != "tool":
            d["name"] = None
        out.append(merge_keys(d, unit))
        at += len(blocks)
    return out


#: Where a message keeps its Chat Completions rendering.
_RENDERINGS = Renderings(
    "_ctxtrim_openai_chat",
    _render,
    _render_fast,
    functools.partial(_core.chat_render_json, RAW_ARGUMENTS),
)
#: ``log_json(log, cut)``: :func:`to_openai_chat_json` of the window the cut rule ``cut`` keeps of
#: ``log``, written from the request last written of ``log`` (``Renderings.log_writer``).
log_json = _RENDERINGS.log_writer()
#: The slot of each message's kept Chat Completions JSON (read per body: no property call).
_JSON_ATTR = _RENDERINGS.json_attr
