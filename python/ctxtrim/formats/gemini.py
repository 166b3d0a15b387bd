"""Gemini (``google-genai``) ``contents`` ⇄ ctxtrim messages.

One ``Content`` is one message: role ``"model"`` ↔ assistant, ``"user"`` ↔ user (function
responses travel in user contents, as tool results do in ctxtrim). Parts:

* ``text`` ↔ ``TextBlock``; a ``thought`` text part of the model (with its
  ``thought_signature``) ↔ ``ReasoningBlock(text, signature)``;
* ``inline_data`` holding a JPEG, PNG, GIF or WebP image ↔ ``ImageBlock`` (the bytes; the
  base64 alphabet it came in, standard or URL-safe as ``model_dump(mode="json")`` writes it,
  is remembered);
* ``function_call`` {id, name, args} ↔ ``ToolUseBlock``; ``function_response`` {id, name,
  response} ↔ ``ToolResultBlock``: a response ``{"output": text}`` is the result's text,
  ``{"error": text}`` an error result, any other response its JSON text (written back as the
  object while it still parses to one; a strategy's placeholder becomes ``{"output": ...}``).
  The function's name is remembered; a result without one (converted from another format)
  takes the name of its call earlier in the history being written (a result before its
  call, or without one, is an orphan and is written without a name, as it reads back);
* everything else — ``file_data``, other ``inline_data`` (audio, video, PDF...),
  ``executable_code`` ↔ ``code_execution_result``, server-side ``tool_call`` ↔
  ``tool_response``, and any part the table does not model — is kept verbatim as a
  :class:`~ctxtrim.messages.ProviderBlock` of format ``"gemini"``, paired and priced by its row
  of :data:`ctxtrim.provider.SPECS`.

**Pairs without ids.** Gemini often sends calls without ``id``. A call without one gets a
ctxtrim id (``gemini_`` and a hash of its content, the same for the same input) that is
never written back; a response without one answers the waiting call of the same name in the
latest model content (else the first waiting one), as the API pairs them: in order, by name.
``executable_code`` and ``code_execution_result`` (and ``tool_call``/``tool_response``)
without ids pair by position within their model content (a ``pair_id``).

**The system instruction.** :func:`to_gemini` returns ``{"system_instruction": ...,
"contents": [...]}`` (``system_instruction`` only when the history starts with system
messages: a string for one text, else a ``Content``); :func:`from_gemini` takes that, a whole
request body (``systemInstruction`` too; other keys are ignored), a bare list of contents, or
``system=`` separately (a string, a ``Content`` or a list of parts). A system message after
the conversation started cannot be expressed and raises.

Keys come in the SDK's snake_case (``inline_data``, ``thought_signature``) or the REST API's
camelCase (``inlineData``, ``thoughtSignature``); each part is written back as it came.
Thought signatures stay with the part that carried them (a function call, a text). Pass
the SDK's objects as ``content.model_dump(mode="json", exclude_none=True)``.

What Gemini cannot carry, and :func:`to_gemini` drops: ``compact_summary``,
``Message.name``/``id``/``turn``/``usage``/``meta`` (other than this module's record).
Another format's provider block raises ``InvalidMessage`` naming it, except an image behind
an http(s) URL, which becomes a ``file_data`` part.

Lossless: ``to_gemini(from_gemini(body)) == body`` for the fragment's keys; fields ctxtrim
has no place for are kept in ``Message.meta["gemini"]`` and written back.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec.structs import force_setattr

from ctxtrim import _core
from ctxtrim.errors import InvalidMessage
from ctxtrim.messages import (
    IMAGE_MEDIA_TYPES,
    Block,
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.provider import misplaced

from ._common import (
    FORMAT_NAMES,
    Renderings,
    Unit,
    _message,
    build,
    decode_json,
    expect_dict,
    expect_list,
    expect_str,
    extra_keys,
    finish_parts,
    image_url_of,
    make_message,
    merge_keys,
    part_record,
    provider_block,
    required,
    units_for,
    verbatim,
)

__all__ = ["KEY", "from_gemini", "to_gemini", "to_gemini_json"]

#: The ``Message.meta`` key holding the Gemini fields ctxtrim has no place for.
KEY = "gemini"

_SNAKE = ("text", "inline_data", "function_call", "function_response", "thought_signature")
_CAMEL_OF = {
    "inline_data": "inlineData",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "thought_signature": "thoughtSignature",
    "mime_type": "mimeType",
}
#: Keys that mark a part written in the REST API's camelCase.
_CAMEL_KEYS = frozenset(_CAMEL_OF.values())
_PAIRED = ("executable_code", "code_execution_result", "tool_call", "tool_response")
_PAIRED_KEYS = {
    "executable_code": ("executable_code", "executableCode"),
    "code_execution_result": ("code_execution_result", "codeExecutionResult"),
    "tool_call": ("tool_call", "toolCall"),
    "tool_response": ("tool_response", "toolResponse"),
}
_PARTNER = {"executable_code": "code_execution_result", "tool_call": "tool_response"}


def _default(blocks: Sequence[Block]) -> list[tuple[str, int]]:
    return [("content", len(blocks))]


def _fits(kind: str, blocks: Sequence[Block]) -> bool:
    return kind == "content"


# --------------------------------------------------------------------------------------------
# from


def _b64(text: str) -> tuple[bytes, bool] | None:
    """The bytes of canonical base64 text and whether it is URL-safe; None if it is not
    written exactly as either alphabet writes it back."""
    try:
        if "-" in text or "_" in text:
            raw = base64.urlsafe_b64decode(text)
            return (raw, True) if base64.urlsafe_b64encode(raw).decode("ascii") == text else None
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return (raw, False) if base64.b64encode(raw).decode("ascii") == text else None


def _image(blob: Any, camel: bool, record: dict[str, Any]) -> ImageBlock | None:
    """An ``inline_data`` blob as an ``ImageBlock``, or None (kept verbatim instead)."""
    if not isinstance(blob, dict):
        return None
    mime_key = "mimeType" if camel else "mime_type"
    mt = blob.get(mime_key)
    data = blob.get("data")
    if mt not in IMAGE_MEDIA_TYPES or not isinstance(data, str):
        return None
    decoded = _b64(data)
    if decoded is None:
        return None
    if decoded[1]:
        record["url"] = True
    if nested := extra_keys(blob, frozenset({mime_key, "data"})):
        record["blob"] = nested
    return ImageBlock(mt, decoded[0])


_FC_KEYS = frozenset({"name", "args", "id"})
_FR_KEYS = frozenset({"name", "id", "response"})


class _Pairs:
    """The pairing state of one read: the waiting calls of the latest model content."""

    __slots__ = ("names", "seen", "waiting")

    def __init__(self) -> None:
        self.waiting: list[tuple[str, str]] = []  # (name, id) of calls not yet answered
        self.seen: dict[str, int] = {}  # synthetic ids given, to keep them apart
        self.names: dict[str, str] = {}  # the name of every call read, by id

    def synthetic(self, content: Any, k: int) -> str:
        """The ctxtrim id of the id-less call ``k`` of ``content`` (same input, same id)."""
        try:
            text = msgspec.json.encode(content)
        except (TypeError, ValueError):  # not JSON: refused later, naming the field
            text = b""
        digest = hashlib.blake2b(text, digest_size=8, person=b"ctxtrim").hexdigest()
        base = f"gemini_{digest}_{k}"
        n = self.seen.get(base, 0)
        self.seen[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def answer(self, name: Any, call_id: str | None) -> str | None:
        """The id of the waiting call a response answers (its own ``call_id`` first)."""
        waiting = self.waiting
        if call_id is not None:
            for j, (_, waiting_id) in enumerate(waiting):
                if waiting_id == call_id:
                    del waiting[j]
                    break
            return call_id
        for j, (waiting_name, waiting_id) in enumerate(waiting):
            if waiting_name == name:
                del waiting[j]
                return waiting_id
        if waiting and name is None:
            return waiting.pop(0)[1]
        return None


def _function_call(
    fc: Any,
    p: str,
    record: dict[str, Any],
    pairs: _Pairs,
    content: Any,
    k: int,
) -> ToolUseBlock:
    fc = expect_dict(fc, p)
    name = expect_str(required(fc, "name", p), f"{p}.name", nonempty=True)
    if "args" in fc:
        args = expect_dict(fc["args"], f"{p}.args")
    else:
        args = {}
        record["no_args"] = True
    call_id = fc.get("id")
    if call_id is None:
        if "id" in fc:
            raise InvalidMessage("expected a string, got null", f"{p}.id")
        call_id = pairs.synthetic(content, k)
        record["no_id"] = True
    else:
        call_id = expect_str(call_id, f"{p}.id", nonempty=True)
    if not fc.keys() <= _FC_KEYS:
        record["fc"] = extra_keys(fc, _FC_KEYS)
    pairs.waiting.append((name, call_id))
    pairs.names.setdefault(call_id, name)
    return build(p, ToolUseBlock, call_id, name, args)


def _function_response(
    fr: Any, p: str, record: dict[str, Any], pairs: _Pairs, orphan: str
) -> ToolResultBlock:
    fr = expect_dict(fr, p)
    name = fr.get("name")
    if name is None:
        if "name" in fr:
            raise InvalidMessage("expected a string, got null", f"{p}.name")
    else:
        expect_str(name, f"{p}.name")
    own = fr.get("id")
    if own is not None:
        own = expect_str(own, f"{p}.id", nonempty=True)
    elif "id" in fr:
        raise InvalidMessage("expected a string, got null", f"{p}.id")
    call_id = pairs.answer(name, own)
    if own is None:
        record["no_id"] = True
        if call_id is None:
            call_id = orphan  # answers nothing waiting: an orphan, as validate reports
    assert call_id is not None
    if name is None:
        if call_id in pairs.names:
            record["no_name"] = True  # the writer would give it its call's
    elif pairs.names.get(call_id) != name:
        record["name"] = name  # not its call's (or the call is not in this read): kept
    is_error = False
    content: str
    if "response" not in fr:
        content = ""
        record["resp"] = "none"
    else:
        response = expect_dict(fr["response"], f"{p}.response")
        if len(response) == 1 and type(response.get("output")) is str:
            content = expect_str(response["output"], f"{p}.response.output")
        elif len(response) == 1 and type(response.get("error")) is str:
            content = expect_str(response["error"], f"{p}.response.error")
            is_error = True
        else:
            try:
                content = _core.compact_json(response)
            except (TypeError, ValueError) as e:
                raise InvalidMessage(str(e), f"{p}.response") from None
            record["resp"] = "json"
    if not fr.keys() <= _FR_KEYS:
        record["fr"] = extra_keys(fr, _FR_KEYS)
    return build(p, ToolResultBlock, call_id, content, is_error=is_error)


def _paired(
    part: dict[str, Any],
    kind: str,
    p: str,
    role: str,
    k: int,
    open_: dict[str, str],
    pairs: _Pairs,
    content: Any,
) -> ProviderBlock:
    """A code execution or server tool part: paired by its nested ``id``, else by position
    (a result answers the latest call of its kind in the same content)."""
    inner = next((part[key] for key in _PAIRED_KEYS[kind] if key in part), None)
    nested_id = inner.get("id") if isinstance(inner, dict) else None
    if isinstance(nested_id, str) and nested_id:
        pair_id = nested_id
    elif kind in _PARTNER:
        pair_id = open_[kind] = pairs.synthetic(content, k)
    else:
        call = next(c for c, r in _PARTNER.items() if r == kind)
        pair_id = open_.pop(call, "") or pairs.synthetic(content, k)
    return _verbatim(part, p, role, pair_id)


def _verbatim(part: dict[str, Any], p: str, role: str, pair_id: str | None = None) -> ProviderBlock:
    """``part`` kept as it came; refused in a content its row does not put it in."""
    try:
        block = provider_block(KEY, part, p, None, pair_id)
    except InvalidMessage as e:  # a part has no "type": its problems are the part's
        raise InvalidMessage(e.reason, p if e.path == f"{p}.type" else e.path) from None
    ours = "assistant" if role == "model" else role
    if problem := misplaced(block, ours):
        raise InvalidMessage(problem, p)
    return block


def _part(
    part: dict[str, Any],
    p: str,
    role: str,
    record: dict[str, Any],
    pairs: _Pairs,
    content: Any,
    i: int,
    k: int,
    open_: dict[str, str],
) -> Block:
    camel = not _CAMEL_KEYS.isdisjoint(part)
    if camel:
        record["ck"] = True
    inline_key, fc_key, fr_key, sig_key = (
        (_CAMEL_OF[s] for s in _SNAKE[1:]) if camel else _SNAKE[1:]
    )
    consumed: frozenset[str]
    block: Block
    if fc_key in part and role == "model":
        block = _function_call(part[fc_key], f"{p}.{fc_key}", record, pairs, content, k)
        consumed = frozenset({fc_key})
    elif fr_key in part and role != "model":
        orphan = f"gemini_orphan_{i}_{k}"
        block = _function_response(part[fr_key], f"{p}.{fr_key}", record, pairs, orphan)
        consumed = frozenset({fr_key})
    elif fc_key in part or fr_key in part:
        what = "function_call" if fc_key in part else "function_response"
        where = "a user" if fc_key in part else "a model"
        raise InvalidMessage(f"a {what} part is not allowed in {where} content", f"{p}.{fc_key}")
    elif part.get("thought") is True and role == "model" and _OTHER_DATA.isdisjoint(part):
        if "text" in part:
            text = expect_str(part["text"], f"{p}.text")
        else:
            text = ""
            record["no_text"] = True
        if sig_key in part:
            signature = expect_str(part[sig_key], f"{p}.{sig_key}")
        else:
            signature = ""
            record["no_sig"] = True
        block = ReasoningBlock(text, signature)
        consumed = frozenset({"text", "thought", sig_key})
    elif "text" in part and _OTHER_DATA.isdisjoint(part):
        block = TextBlock(expect_str(part["text"], f"{p}.text"))
        consumed = frozenset({"text"})
    elif inline_key in part and (image := _image(part[inline_key], camel, record)) is not None:
        block = image
        consumed = frozenset({inline_key})
    else:
        record.clear()
        kind = next((key for key in _PAIRED if any(k2 in part for k2 in _PAIRED_KEYS[key])), "")
        if kind:
            return _paired(part, kind, p, role, k, open_, pairs, content)
        return _verbatim(part, p, role)  # kept as it came
    if not part.keys() <= consumed:
        record["keys"] = extra_keys(part, consumed)
    return block


#: The fields that make a part something other than a text or a thought.
_OTHER_DATA = frozenset(
    {"inline_data", "inlineData", "file_data", "fileData"}.union(*_PAIRED_KEYS.values())
)
_ROLES = {"user": "user", "model": "assistant", "function": "user"}


def _content(
    raw: Any, path: str, pairs: _Pairs, i: int, role: str | None = None
) -> tuple[str, list[Block], Unit]:
    """One ``Content`` → (ctxtrim role, blocks, unit record). ``role`` given: a system
    instruction (its own role, if any, is recorded, not read)."""
    msg = expect_dict(raw, path)
    unit: Unit = {"t": "content", "n": 0}
    if role is None:
        wire_role = msg.get("role")
        if wire_role is None:
            if "role" in msg:
                raise InvalidMessage("expected a string, got null", f"{path}.role")
            unit["no_role"] = True
            wire_role = "user"
        elif wire_role not in _ROLES:
            expect_str(wire_role, f"{path}.role")
            raise InvalidMessage(
                f"unknown role {wire_role!r}; expected user or model", f"{path}.role"
            )
        elif wire_role == "function":
            unit["role"] = "function"
        ours = _ROLES[wire_role]
        gemini_role = "model" if ours == "assistant" else "user"
        consumed = frozenset({"role", "parts"})
    else:
        ours, gemini_role = role, "system"
        consumed = frozenset({"parts"})
    if "parts" not in msg:
        unit["no_parts"] = True
        parts: list[Any] = []
    else:
        parts = expect_list(msg["parts"], f"{path}.parts")
    if gemini_role == "model":
        pairs.waiting = []  # a new model turn: its calls are the ones waiting
    blocks: list[Block] = []
    records: list[dict[str, Any]] = []
    open_: dict[str, str] = {}
    for k, raw_part in enumerate(parts):
        p = f"{path}.parts[{k}]"
        part = expect_dict(raw_part, p)
        if len(part) == 1 and type(part.get("text")) is str:  # the common shape
            blocks.append(TextBlock(expect_str(part["text"], f"{p}.text")))
            records.append({})
            continue
        record: dict[str, Any] = {}
        blocks.append(_part(part, p, gemini_role, record, pairs, msg, i, k, open_))
        records.append(record)
    finish_parts(unit, records)
    unit["n"] = len(blocks)
    if not msg.keys() <= consumed:
        unit["keys"] = extra_keys(msg, consumed)
    return ours, blocks, unit


def _system(value: Any, key: str, pairs: _Pairs) -> Message:
    """The system instruction (a string, a ``Content`` or a list of parts) → one message."""
    if isinstance(value, str):
        unit: Unit = {"t": "content", "n": 1}
        blocks: list[Block] = [TextBlock(expect_str(value, key))]
    elif isinstance(value, list):
        _, blocks, unit = _content({"parts": value}, key, pairs, -1, "system")
        unit["form"] = "parts"
    else:
        _, blocks, unit = _content(value, key, pairs, -1, "system")
        if len(blocks) == 1 and type(blocks[0]) is TextBlock:
            unit["form"] = "content"  # one text would be written as a string
    if key != "system_instruction":
        unit["key"] = key
    return make_message("system", blocks, [unit], key=KEY, default=_default, path=key)


def from_gemini(data: Any, *, system: Any = None) -> list[Message]:
    """Gemini ``contents`` → ctxtrim messages.

    ``data`` is a list of ``Content`` dicts or a dict with ``"contents"`` (and optionally
    ``"system_instruction"`` or ``"systemInstruction"``; other keys are ignored); ``system``
    (a string, a ``Content`` or a list of parts) may also be given here. Raises
    :class:`~ctxtrim.errors.InvalidMessage` naming the path, e.g.
    ``contents[2].parts[1].function_call.name``, for anything malformed.
    """
    key = "system_instruction"
    if isinstance(data, dict):
        if "contents" not in data:
            raise InvalidMessage("missing required field", "contents")
        for name in ("system_instruction", "systemInstruction"):
            if name in data:
                if data[name] is None:
                    raise InvalidMessage(
                        "expected a string, a Content or an array of parts, got null", name
                    )
                if system is not None:
                    raise InvalidMessage("the system instruction is given twice", name)
                system, key = data[name], name
        data = data["contents"]
    items = expect_list(data, "contents")
    pairs = _Pairs()
    out: list[Message] = []
    if system is not None:
        out.append(_system(system, key, pairs))
    # Runs of contents in common shapes are read in the core; the loop takes each other one.
    fast_prefix = _core.gemini_fast_prefix if _FAST else _no_fast_prefix
    i, n = 0, len(items)
    while i < n:
        read, i = fast_prefix(items, i, pairs.names, pairs.waiting)
        out += read
        if i < n:
            path = f"contents[{i}]"
            role, blocks, unit = _content(items[i], path, pairs, i)
            out.append(make_message(role, blocks, [unit], key=KEY, default=_default, path=path))
            i += 1
    return out


#: Whether :func:`from_gemini` reads runs of contents in common shapes in the core
#: (``gemini_fast_prefix``: exactly ``role`` (``user`` or ``model``) and ``parts``, each part
#: one of ``{"text": str}``, a model's ``{"function_call": {"id", "name", "args"}}``, a user's
#: ``{"function_response": {"id", "name", "response": {"output": str}}}`` whose name is its
#: call's; these need no record, so each message is exactly what the general reader makes,
#: and the pairing state is updated as it would update it). The tests turn it off to check
#: that the general reader makes the same messages.
_FAST = True


def _no_fast_prefix(
    items: list[Any], start: int, names: dict[str, str], waiting: list[tuple[str, str]]
) -> tuple[list[Message], int]:
    return [], start


# --------------------------------------------------------------------------------------------
# to


class _Names:
    """The function names of the calls in the history being written, read once when a result
    without a recorded name (its call's, or converted from another format) needs its call's.
    Only a call in a message before the result's (``at``, its index in the history) counts:
    the reader knows only the calls it has read, so a name taken from a later call would come
    back as the result's own, and the API answers calls already made. ``missed``: no such
    call (its result is written without a name, as an orphan, and that rendering is not kept:
    the next history may hold the call before it)."""

    __slots__ = ("_by_id", "_messages", "at", "missed")

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages
        self._by_id: dict[str, tuple[int, str]] | None = None
        self.at = 0
        self.missed = False

    def get(self, call_id: str) -> str | None:
        found = self._lookup(call_id)
        if found is None or found[0] >= self.at:
            self.missed = True
            return None
        return found[1]

    def _lookup(self, call_id: str) -> tuple[int, str] | None:
        if self._by_id is None:
            by_id: dict[str, tuple[int, str]] = {}
            for i, m in enumerate(self._messages):
                if type(m) is Message:
                    for b in m.content:
                        if type(b) is ToolUseBlock:
                            by_id.setdefault(b.id, (i, b.name))  # the first, as the reader does
            self._by_id = by_id
        return self._by_id.get(call_id)


def _encode_b64(data: bytes, urlsafe: bool) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(data).decode("ascii")


def _render_image(b: ImageBlock, record: dict[str, Any], camel: bool) -> dict[str, Any]:
    blob: dict[str, Any] = {
        "mimeType" if camel else "mime_type": b.media_type,
        "data": _encode_b64(b.data, bool(record.get("url"))),
    }
    if isinstance(record.get("blob"), dict):
        merge_keys(blob, {"keys": record["blob"]})
    return blob


def _response(b: ToolResultBlock, record: dict[str, Any], path: str) -> dict[str, Any] | None:
    content = b.content
    if not isinstance(content, str):
        texts = []
        for j, item in enumerate(content):
            if type(item) is TextBlock:
                texts.append(item.text)
            elif type(item) is not ImageBlock:
                raise InvalidMessage(
                    f"a {item.format} block in a tool result cannot be expressed in the "  # type: ignore[union-attr]
                    "Gemini format",
                    f"{path}.content[{j}]",
                )
        content = "\n".join(texts)
    if b.is_error:
        return {"error": content}
    resp = record.get("resp")
    if resp == "json":
        try:
            parsed = _core.json_loads(content)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    elif resp == "none" and not content:
        return None
    return {"output": content}


def _render_part(
    b: Block, record: dict[str, Any], path: str, names: _Names | None
) -> dict[str, Any]:
    camel = bool(record.get("ck"))
    out: dict[str, Any]
    if type(b) is TextBlock:
        out = {"text": b.text}
    elif type(b) is ToolUseBlock:
        fc: dict[str, Any] = {} if record.get("no_id") else {"id": b.id}
        fc["name"] = b.name
        if b.input or not record.get("no_args"):
            fc["args"] = b.input
        if isinstance(record.get("fc"), dict):
            merge_keys(fc, {"keys": record["fc"]})
        out = {"functionCall" if camel else "function_call": fc}
    elif type(b) is ToolResultBlock:
        fr: dict[str, Any] = {} if record.get("no_id") else {"id": b.tool_use_id}
        name = record.get("name")
        if not isinstance(name, str) and not record.get("no_name") and names is not None:
            name = names.get(b.tool_use_id)
        if isinstance(name, str):
            fr["name"] = name
        response = _response(b, record, path)
        if response is not None:
            fr["response"] = response
        if not isinstance(b.content, str) and any(type(t) is ImageBlock for t in b.content):
            fr["parts"] = [
                {"inline_data": _render_image(t, {}, False)}
                for t in b.content
                if type(t) is ImageBlock
            ]
        if isinstance(record.get("fr"), dict):
            merge_keys(fr, {"keys": record["fr"]})
        out = {"functionResponse" if camel else "function_response": fr}
    elif type(b) is ImageBlock:
        out = {"inlineData" if camel else "inline_data": _render_image(b, record, camel)}
    elif type(b) is ReasoningBlock:
        out = {"thought": True} if record.get("no_text") and not b.text else {"text": b.text}
        out["thought"] = True
        if b.signature or not record.get("no_sig"):
            out["thoughtSignature" if camel else "thought_signature"] = b.signature
    elif type(b) is ProviderBlock:
        return _render_provider(b, path)
    else:  # pragma: no cover - Message validation admits only these blocks
        raise TypeError(type(b).__name__)
    return merge_keys(out, record)


def _render_provider(b: ProviderBlock, path: str) -> dict[str, Any]:
    if b.format == KEY:
        return verbatim(b)
    url = image_url_of(b)
    if url is not None:
        guessed = mimetypes.guess_type(url.split("?", 1)[0])[0]
        mime = guessed if guessed and guessed.startswith("image/") else "image/jpeg"
        return {"file_data": {"file_uri": url, "mime_type": mime}}
    raise InvalidMessage(
        f"the {FORMAT_NAMES.get(b.format, b.format)} block {b.wire_type!r} cannot be "
        "expressed in the Gemini format",
        path,
    )


def _render(m: Message, path: str, names: _Names | None = None) -> list[dict[str, Any]]:
    """One (non-system) message's ``Content``."""
    if m.role == "system":
        raise InvalidMessage(
            "a system message after the conversation started cannot be expressed in the "
            "Gemini format (only a leading system instruction can)",
            path,
        )
    if m.meta is None or KEY not in m.meta:
        plain = _render_plain(m, names)
        if plain is not None:
            return plain
    unit = units_for(m, KEY, _default, _fits)[0][0]
    parts = [
        _render_part(b, part_record(unit, k), f"{path}.content[{k}]", names)
        for k, b in enumerate(m.content)
    ]
    out: dict[str, Any] = {}
    if not unit.get("no_role"):
        role = unit.get("role")
        out["role"] = (
            role if isinstance(role, str) else "model" if m.role == "assistant" else "user"
        )
    if parts or not unit.get("no_parts"):
        out["parts"] = parts
    return [merge_keys(out, unit)]


def _render_plain(m: Message, names: _Names | None) -> list[dict[str, Any]] | None:
    """A message with no record in the common shapes (text, tool calls, string results
    whose call is in the history), rendered as :func:`_render_part` renders it with no
    record; None for anything else."""
    parts: list[dict[str, Any]] = []
    for b in m.content:
        kind = type(b)
        if kind is TextBlock:
            parts.append({"text": b.text})  # type: ignore[union-attr]
        elif kind is ToolUseBlock:
            call = {"id": b.id, "name": b.name, "args": b.input}  # type: ignore[union-attr]
            parts.append({"function_call": call})
        elif kind is ToolResultBlock and type(b.content) is str and names is not None:  # type: ignore[union-attr]
            name = names.get(b.tool_use_id)  # type: ignore[union-attr]
            if name is None:
                return None
            response = {"error" if b.is_error else "output": b.content}  # type: ignore[union-attr]
            fr = {"id": b.tool_use_id, "name": name, "response": response}  # type: ignore[union-attr]
            parts.append({"function_response": fr})
        else:
            return None
    return [{"role": "model" if m.role == "assistant" else "user", "parts": parts}]


def _no_fast(m: Message) -> None:
    return None


_ATTR = "_ctxtrim_gemini"


class _Renderings(Renderings):
    """Where a message keeps its Gemini rendering; results without a recorded function name
    take their call's from the messages before theirs in the history being written when
    first rendered, and a rendering that could not find one is used once, not kept."""

    __slots__ = ("_names",)

    def __init__(self, messages: Sequence[Message]) -> None:
        names = self._names = _Names(messages)
        super().__init__(_ATTR, lambda m, path: _render(m, path, names), _no_fast)

    def _make(self, m: Message, i: int) -> tuple[dict[str, Any], ...]:
        self._names.missed = False
        self._names.at = i  # its index in the history: only calls before it give a name
        rendering = self._render(m, f"messages[{i}]")
        kept = _core.kept_rendering(rendering)
        if kept is None:  # not plain JSON (a str subclass, say): as the request's JSON has it
            kept = _core.kept_rendering(decode_json(_ENCODE(rendering)))
            assert kept is not None
        if not self._names.missed:
            force_setattr(m, _ATTR, kept)  # a slot of the frozen message (CACHE_SLOTS)
        return kept

    def json_bytes(self, messages: Sequence[Message], start: int = 0) -> bytes:
        def render_one(m: object, i: int) -> bytes:
            message = _message(m, start + i)
            kept = getattr(message, _ATTR, None)
            if kept is None:
                self._names.missed = False
                kept = self._make(message, start + i)
                if self._names.missed:
                    return _ENCODE(kept)[1:-1]
            rendered = _ENCODE(kept)[1:-1]
            force_setattr(message, _ATTR + "_json", rendered)
            return rendered

        return _core.join_renderings(messages, _ATTR + "_json", render_one)


def _renderings(messages: Sequence[Message]) -> _Renderings:
    return _Renderings(messages)


def _leading_system(messages: Sequence[Message]) -> int:
    n = 0
    for m in messages:
        if type(m) is not Message or m.role != "system":
            break
        n += 1
    return n


def _system_instruction(messages: Sequence[Message]) -> tuple[str, Any]:
    """``(key, value)`` of the leading system messages' system instruction: a string for one
    plain text, else a ``Content`` (or the list of parts it came as)."""
    parts: list[dict[str, Any]] = []
    key = "system_instruction"
    unit: Unit = {}
    for i, m in enumerate(messages):
        unit = units_for(m, KEY, _default, _fits)[0][0]
        if isinstance(unit.get("key"), str):
            key = unit["key"]
        parts += [
            _render_part(b, part_record(unit, k), f"messages[{i}].content[{k}]", None)
            for k, b in enumerate(m.content)
        ]
    form = unit.get("form")
    if len(messages) == 1 and form is None and len(parts) == 1 and list(parts[0]) == ["text"]:
        return key, parts[0]["text"]
    if len(messages) == 1 and form == "parts":
        return key, parts
    content: dict[str, Any] = {"parts": parts} if parts or not unit.get("no_parts") else {}
    if len(messages) == 1:
        merge_keys(content, unit)
    return key, content


_ENCODE = msgspec.json.Encoder().encode


def to_gemini(messages: Sequence[Message]) -> dict[str, Any]:
    """ctxtrim messages → ``{"system_instruction": ..., "contents": [...]}``
    (``system_instruction`` only if the history starts with system messages). Each message is
    converted once and kept; every call returns fresh dicts."""
    n_system = _leading_system(messages)
    rest = _renderings(messages).dicts(messages[n_system:], n_system)
    if not n_system:
        return {"contents": rest}
    key, system = _system_instruction(messages[:n_system])
    return {key: decode_json(_ENCODE(system)), "contents": rest}


def to_gemini_json(messages: Sequence[Message]) -> bytes:
    """:func:`to_gemini` as JSON bytes (the request's ``system_instruction`` and
    ``contents``), for servers that post raw bodies: the messages' kept renderings joined."""
    n_system = _leading_system(messages)
    rest = _renderings(messages).json_bytes(messages[n_system:], n_system)
    body = b'"contents":' + rest + b"}"
    if not n_system:
        return b"{" + body
    key, system = _system_instruction(messages[:n_system])
    return b"{" + _ENCODE(key) + b":" + _ENCODE(system) + b"," + body
