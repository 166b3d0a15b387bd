"""Helpers shared by the provider converters: path-naming readers and the provider-field record.

Invariants:

* Every reader either returns a value of the expected type or raises
  :class:`~ctxtrim.errors.InvalidMessage` whose ``path`` names the offending field in the
  provider payload (``messages[3].tool_calls[0].id``); no ``KeyError``/``TypeError`` escapes.
* A *unit* is one provider object (an OpenAI chat message, a Responses input item, an
  Anthropic message) and covers a run of consecutive blocks of one ctxtrim ``Message``.
  Provider fields ctxtrim's model has no place for (item ``id``/``status``, ``cache_control``,
  ``annotations``, the exact JSON text of tool arguments...) are recorded per unit in
  ``Message.meta[<format key>]`` so that converting back reproduces the provider payload
  exactly. The record is only written when something would otherwise be lost, and it is only
  applied when it still matches the message's blocks (a strategy that rewrote a message gets
  the canonical rendering, never a stale one).
"""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import msgspec
from msgspec.structs import force_setattr

from ctxtrim import _core
from ctxtrim.errors import InvalidMessage, InvalidToolArguments
from ctxtrim.messages import IMAGE_MEDIA_TYPES, Block, ImageBlock, Message, ProviderBlock
from ctxtrim.provider import misplaced

T = TypeVar("T")

#: A unit record: ``{"t": kind, "n": blocks, "keys": {...}, "parts": [{...} | {}, ...], ...}``.
Unit = dict[str, Any]

_ENCODE = msgspec.json.Encoder().encode
#: Decodes a window's JSON into fresh dicts and lists (every call gets its own).
decode_json = msgspec.json.Decoder().decode


#: A cut strategy's rule as ``_core.cut_log`` takes it: ``(rule, value, pin_task,
#: start_with_user)``.
CutRule = tuple[Literal["budget", "turns", "rounds", "messages"], int, bool, bool]


class Renderings:
    """Where a provider format keeps each message's rendering, and a window's request made
    from them: fresh dicts (:meth:`dicts`) or JSON bytes (:meth:`json_bytes`).

    A message never changes (it is immutable all the way down), so its rendering never goes
    stale; ``msgspec.structs.replace`` and decoding make a new message, with none. A message
    is rendered once, by ``fast(message)`` (the format's core renderer of common shapes) or,
    when that gives None, by ``render(message, path)``, and keeps, in its slots (``CACHE_SLOTS``):
    under ``attr`` its provider objects as private plain-JSON copies (``_core.kept_rendering``),
    and under ``attr + "_json"`` their comma-joined JSON, once the bytes path asked for it.
    The bytes path writes that JSON straight from a message in a common shape with
    ``fast_json`` (the format's core writer) when it has no objects kept, and then keeps no
    objects: a server that only sends bytes holds one rendering per message, not two. A
    window's request is then one pass of the core over its messages: copying the kept objects
    (new dicts and lists all the way down, so nothing done to a returned dict reaches a stored
    message or a later request) or joining the kept bytes. Error paths count from ``start``.
    """

    __slots__ = ("_attr", "_attr_json", "_fast", "_fast_json", "_render")

    def __init__(
        self,
        attr: str,
        render: Callable[[Message, str], list[dict[str, Any]]],
        fast: Callable[[Message], list[dict[str, Any]] | None],
        fast_json: Callable[[Message], bytes | None] | None = None,
    ) -> None:
        self._attr = attr
        # Interned, as the slot names are: the core finds a slot by identity before equality.
        self._attr_json = sys.intern(attr + "_json")
        self._render = render
        self._fast = fast
        self._fast_json = fast_json

    @property
    def json_attr(self) -> str:
        """The slot of each message's kept JSON in this format."""
        return self._attr_json

    def dicts(self, messages: Sequence[Message], start: int = 0) -> list[dict[str, Any]]:
        """The provider objects of ``messages``, fresh."""

        def render_one(m: object, i: int) -> tuple[dict[str, Any], ...]:
            return self._make(_message(m, start + i), start + i)  # only when none is kept

        return _core.copy_renderings(messages, self._attr, self._fast, render_one)

    def json_bytes(self, messages: Sequence[Message], start: int = 0) -> bytes:
        """The JSON array of the provider objects of ``messages``."""

        def render_one(m: object, i: int) -> bytes:
            return self._json(m, start + i)

        # A message in a common shape is rendered in the core (``fast_json``'s bytes, or
        # ``fast``'s objects encoded); ``render_one`` takes the rest.
        return _core.join_renderings(
            messages, self._attr_json, render_one, self._fast, self._attr, _ENCODE, self._fast_json
        )

    def log_writer(
        self, system: Callable[[list[Message]], bytes] | None = None
    ) -> Callable[[_core.MessageLog, CutRule], bytes]:
        """``writer(log, cut)``: :meth:`json_bytes` of the window the cut rule ``cut`` keeps
        of ``log`` (``_core.cut_log``'s), copying the messages it shares with the window last
        written of ``log`` from that request (``_core.LogJson``, its arguments given once: a
        server calls it every turn). With ``system`` (the JSON of a ``system`` field
        made of the window's leading system messages), the Anthropic body around it."""
        return _core.LogJson(
            self._attr_json,
            self._json,
            self._fast,
            self._attr,
            _ENCODE,
            self._fast_json,
            system,
        )

    def _json(self, m: object, i: int) -> bytes:
        """Item ``i``'s JSON (its objects' array without the brackets), made and kept."""
        message = _message(m, i)
        kept = getattr(message, self._attr, None)
        if kept is None:
            kept = self._make(message, i)
        rendered = _ENCODE(kept)[1:-1]
        force_setattr(message, self._attr_json, rendered)
        return rendered

    def _make(self, m: Message, i: int) -> tuple[dict[str, Any], ...]:
        """Message ``i``'s rendering, made and kept."""
        rendering = self._render(m, f"messages[{i}]")
        kept = _core.kept_rendering(rendering)
        if kept is None:
            # Not plain JSON (a str subclass, say): as the request's JSON has it. The encoder
            # raises for what JSON cannot hold, as it would writing the request.
            kept = _core.kept_rendering(decode_json(_ENCODE(rendering)))
            assert kept is not None
        force_setattr(m, self._attr, kept)  # a slot of the frozen message (CACHE_SLOTS)
        return kept


def _message(m: object, i: int) -> Message:
    """``m`` if it is a message, else the error naming ``messages[i]``."""
    if type(m) is not Message:
        raise InvalidMessage(f"expected a Message, got {tname(m)}", f"messages[{i}]")
    return m


def tname(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def expect_dict(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidMessage(f"expected an object, got {tname(value)}", path)
    return value


def expect_list(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidMessage(f"expected an array, got {tname(value)}", path)
    return value


def expect_str(value: object, path: str, *, nonempty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidMessage(f"expected a string, got {tname(value)}", path)
    if nonempty and not value:
        raise InvalidMessage("must not be empty", path)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidMessage(
                f"lone surrogate {value[e.start]!r} at index {e.start}; not valid UTF-8", path
            ) from None
    return value


def expect_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidMessage(f"expected a boolean, got {tname(value)}", path)
    return value


def required(d: dict[str, Any], key: str, path: str) -> Any:
    if key not in d:
        raise InvalidMessage("missing required field", f"{path}.{key}")
    return d[key]


def build(path: str, make: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``make(*args, **kwargs)``, re-rooting its ``InvalidMessage`` at the provider ``path``."""
    try:
        return make(*args, **kwargs)
    except InvalidMessage as e:
        raise InvalidMessage(e.reason, path) from None


def decode_base64(data: object, path: str) -> bytes:
    text = expect_str(data, path)
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidMessage("not valid base64", path) from None


def encode_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def media_type(value: object, path: str) -> str:
    text = expect_str(value, path)
    if text not in IMAGE_MEDIA_TYPES:
        raise InvalidMessage(
            f"unsupported image media type {text!r}; expected one of "
            f"{', '.join(sorted(IMAGE_MEDIA_TYPES))}",
            path,
        )
    return text


_DATA_URL_PREFIX = "data:"


def image_from_data_url(url: object, path: str) -> ImageBlock:
    """``data:image/png;base64,...`` → ``ImageBlock``; remote URLs cannot be held (no bytes)."""
    text = expect_str(url, path)
    if not text.startswith(_DATA_URL_PREFIX):
        raise InvalidMessage(
            "only inline images (data:<media type>;base64,...) are supported; "
            "ctxtrim keeps the image bytes, not a URL",
            path,
        )
    header, sep, payload = text[len(_DATA_URL_PREFIX) :].partition(",")
    if not sep or not header.endswith(";base64"):
        raise InvalidMessage("expected a base64 data URL (data:<media type>;base64,...)", path)
    return ImageBlock(media_type(header[: -len(";base64")], path), decode_base64(payload, path))


def data_url(image: ImageBlock) -> str:
    return f"data:{image.media_type};base64,{encode_base64(image.data)}"


#: The one key of a tool call's ``input`` that holds arguments text which is not a JSON object
#: (a model cut off mid-call), kept as it is when the converters are asked to
#: (``raw_arguments=True``) so that nothing is lost and the call still pairs with its result.
RAW_ARGUMENTS = "ctxtrim_raw_arguments"


def raw_arguments(value: dict[str, Any]) -> str | None:
    """The kept text when ``value`` is the stand-in for arguments that are not a JSON object
    (``{RAW_ARGUMENTS: text}`` whose text does not parse as one), else None."""
    text = value.get(RAW_ARGUMENTS) if len(value) == 1 else None
    if not isinstance(text, str):
        return None
    try:
        parsed = _core.json_loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return text
    return None if isinstance(parsed, dict) else text


def dumps_arguments(value: dict[str, Any]) -> str:
    """The canonical JSON text of tool arguments (compact, non-ASCII kept, like the models
    emit it: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, made by the
    core); the kept text itself for arguments that were not a JSON object (see
    :data:`RAW_ARGUMENTS`)."""
    raw = raw_arguments(value)
    if raw is not None:
        return raw
    return _core.compact_json(value)


def loads_arguments(text: object, path: str, *, keep_raw: bool = False) -> dict[str, Any]:
    """Tool arguments text → a dict. Text that is not a JSON object raises
    :class:`InvalidToolArguments`, or with ``keep_raw`` becomes ``{RAW_ARGUMENTS: text}``."""
    raw = expect_str(text, path)
    try:
        value = _core.json_loads(raw) if raw.strip() else {}
    except ValueError as e:
        problem = f"tool arguments are not valid JSON ({e})"
    except RecursionError:
        problem = "tool arguments are nested too deeply to read"
    else:
        if isinstance(value, dict):
            return value
        problem = f"tool arguments must be a JSON object, got {tname(value)}"
    if keep_raw:
        return {RAW_ARGUMENTS: raw}
    raise InvalidToolArguments(problem, path)


def extra_keys(d: dict[str, Any], consumed: frozenset[str]) -> dict[str, Any]:
    """The fields of a provider object that the converter did not read."""
    return {k: v for k, v in d.items() if k not in consumed}


# --------------------------------------------------------------------------------------------
# Unit records in Message.meta


def make_message(
    role: str,
    blocks: list[Block],
    units: list[Unit],
    *,
    key: str,
    default: Callable[[Sequence[Block]], list[tuple[str, int]]],
    name: str | None = None,
    path: str,
) -> Message:
    """Build the message, recording ``units`` under ``meta[key]`` only if the canonical
    rendering would lose something (the segmentation or any recorded field)."""
    needed = [(u["t"], u["n"]) for u in units] != default(blocks) or any(len(u) > 2 for u in units)
    meta = {key: units} if needed else None
    # A tuple, the stored form: a list would be accepted too, but only by the slower checks.
    return build(path, Message, role, tuple(blocks), name=name, meta=meta)


def units_for(
    message: Message,
    key: str,
    default: Callable[[Sequence[Block]], list[tuple[str, int]]],
    fits: Callable[[str, Sequence[Block]], bool],
) -> list[tuple[Unit, Sequence[Block]]]:
    """Split ``message.content`` into units: the recorded ones if they still fit the blocks,
    else the canonical segmentation (with no recorded fields)."""
    content = message.content
    recorded = (message.meta or {}).get(key)
    if isinstance(recorded, list) and recorded:
        out: list[tuple[Unit, Sequence[Block]]] = []
        at = 0
        for unit in recorded:
            if not (isinstance(unit, dict) and isinstance(unit.get("n"), int) and unit["n"] >= 0):
                break
            blocks = content[at : at + unit["n"]]
            if len(blocks) != unit["n"] or not fits(str(unit.get("t")), blocks):
                break
            out.append((unit, blocks))
            at += unit["n"]
        else:
            if at == len(content):
                return out
    out = []
    at = 0
    for kind, n in default(content):
        out.append(({"t": kind, "n": n}, content[at : at + n]))
        at += n
    return out


def part_record(unit: Unit, i: int) -> dict[str, Any]:
    parts = unit.get("parts")
    if isinstance(parts, list) and i < len(parts) and isinstance(parts[i], dict):
        record: dict[str, Any] = parts[i]
        return record
    return {}


def merge_keys(target: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """Add the recorded provider fields that the canonical rendering did not produce."""
    keys = record.get("keys")
    if isinstance(keys, dict):
        for k, v in keys.items():
            target.setdefault(k, v)
    return target


def finish_parts(unit: Unit, parts: list[dict[str, Any]]) -> None:
    """Attach per-block records to ``unit`` if any is non-empty."""
    if any(parts):
        unit["parts"] = parts


# --------------------------------------------------------------------------------------------
# Provider blocks: kept verbatim, written back unchanged, mapped across formats where a rule
# exists


def provider_block(
    format: str,
    part: dict[str, Any],
    path: str,
    role: str | None = None,
    pair_id: str | None = None,
) -> ProviderBlock:
    """``part`` kept verbatim as a :class:`ProviderBlock` of ``format``, its problems named at
    the provider ``path`` (``data.id`` → ``<path>.id``). Given ``role``, a block whose row puts
    it in another role's message is refused here, where the path can name it."""
    try:
        block = ProviderBlock(format, part, pair_id)
    except InvalidMessage as e:
        sub = e.path.removeprefix("data").removeprefix(".")
        where = f"{path}.{sub}" if sub and sub != "pair_id" else path
        raise InvalidMessage(e.reason, where) from None
    problem = misplaced(block, role) if role is not None else None
    if problem:
        raise InvalidMessage(problem, f"{path}.type")
    return block


def verbatim(block: ProviderBlock) -> dict[str, Any]:
    """The provider dict a block holds, as a fresh plain copy."""
    return decode_json(_ENCODE(block.data))  # type: ignore[no-any-return]


#: The display names of the formats, for errors.
FORMAT_NAMES = {
    "anthropic": "Anthropic",
    "openai_chat": "OpenAI Chat Completions",
    "openai_responses": "OpenAI Responses",
    "gemini": "Gemini",
}


def image_url_of(block: ProviderBlock) -> str | None:
    """The URL of an image block behind an http(s) URL, in whichever format it came, else
    None (an image by file id has no portable form: a file id is one provider's)."""
    data, url = block.data, None
    if block.format == "anthropic" and data.get("type") == "image":
        source = data.get("source")
        if isinstance(source, dict) and source.get("type") == "url":
            url = source.get("url")
    elif block.format == "openai_chat" and data.get("type") == "image_url":
        image = data.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
    elif block.format == "openai_responses" and data.get("type") == "input_image":
        url = data.get("image_url") if "file_id" not in data or data["file_id"] is None else None
    elif block.format == "gemini":
        file = data.get("file_data", data.get("fileData"))
        if isinstance(file, dict) and str(file.get("mime_type", file.get("mimeType"))).startswith(
            "image/"
        ):
            url = file.get("file_uri", file.get("fileUri"))
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return url
    return None


def render_provider(block: ProviderBlock, target: str, path: str) -> dict[str, Any]:
    """``block`` as a ``target`` format dict: itself when it came in that format; an image
    behind an http(s) URL as that format's URL image; anything else cannot cross formats and
    raises :class:`InvalidMessage` naming the block and the target."""
    if block.format == target:
        return verbatim(block)
    url = image_url_of(block)
    if url is not None:
        if target == "anthropic":
            return {"type": "image", "source": {"type": "url", "url": url}}
        if target == "openai_chat":
            return {"type": "image_url", "image_url": {"url": url}}
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    raise InvalidMessage(
        f"the {FORMAT_NAMES[block.format]} block {block.wire_type!r} cannot be expressed in the "
        f"{FORMAT_NAMES[target]} format",
        path,
    )


def utf8_bytes(data: object) -> bytes | None:
    """JSON text given to a ``from_*_json`` reader as UTF-8 bytes for the core's reader, or
    None (then ``json.loads`` alone reads it, and names what is wrong)."""
    if isinstance(data, str):
        try:
            return data.encode()
        except UnicodeEncodeError:  # a lone surrogate: json.loads decides
            return None
    if isinstance(data, bytearray):
        return bytes(data)
    return None
