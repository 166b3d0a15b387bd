"""Valid instances of every member of the official provider SDKs' unions, built from the SDKs'
own type definitions.

Nothing here lists a wire type: each function walks one union of the installed SDK with
typing introspection (the members' pydantic ``model_fields`` or TypedDict annotations) and
builds, for every member, a "full" instance (every field set, required and optional) plus one
variant per alternative of each field whose type is a union of several object types (an image
``source`` that is base64 | url | file, a tool result's ``content`` that is a string or a list
of parts...; at most MAX_FIELD_VARIANTS a field, MAX_VARIANTS a member). A new SDK release
with a new member type therefore shows up as a new case, and one the generator cannot build
raises :class:`GenerationError` naming it: nothing is dropped silently.

Every payload is plain JSON and validates back into its SDK type (pydantic ``TypeAdapter``);
a pydantic member's payload is its ``model_dump(mode="json", by_alias=True,
exclude_none=True)``, as a client sends it back. Values are deterministic and derived from the
field names; the id of a call and of its result are the same (``"call_1"``) so pairs line up.

The SDKs (and pydantic) are imported inside the functions only: this module imports without
them.
"""

from __future__ import annotations

import base64
import collections.abc
import enum
import functools
import importlib
import importlib.metadata
import json
import operator
import struct
import types
import typing
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GENERATORS",
    "GenerationError",
    "Member",
    "anthropic_request_blocks",
    "anthropic_response_blocks",
    "chat_message_params",
    "gemini_part_dicts",
    "gemini_parts",
    "installed_versions",
    "responses_input_item_params",
    "responses_input_items",
]


@dataclass(frozen=True)
class Member:
    """One generated instance of one member of an SDK union."""

    #: The union, e.g. ``"anthropic.BetaContentBlockParam"``.
    union: str
    #: The member class name plus a variant suffix, e.g.
    #: ``"BetaImageBlockParam[source=BetaURLImageSourceParam]"``.
    name: str
    #: The value of the member's ``"type"`` Literal; ``""`` if it has none (a Chat
    #: Completions message: its extra cases built for a content part or a tool call carry
    #: that part's or call's type, the legacy ``function_call`` case ``"function_call"``).
    wire_type: str
    #: The wire dict, plain JSON.
    payload: dict[str, Any]


class GenerationError(RuntimeError):
    """A member of an SDK union that the generator cannot build or that does not validate."""


#: Extra variants per member at most (besides its full instance), and per field of a member.
MAX_VARIANTS = 24
MAX_FIELD_VARIANTS = 16
#: Below this depth objects get every field; deeper, their required fields only.
FULL_DEPTH = 6
#: A type nested deeper than this is a generator bug (or a recursive type): raise.
MAX_DEPTH = 30

#: The id of every call and of every result, so that pairs line up.
CALL_ID = "call_1"
_ID_FIELDS = frozenset({"id", "call_id", "tool_use_id", "tool_call_id", "approval_request_id"})
#: Optional fields that are alternative sources of one content (an image by URL or by file
#: id): an object with several gets one variant per source, the others left out.
_SOURCE_FIELDS = ("image_url", "file_id", "file_data", "file_url")
#: Fields holding a call's JSON arguments.
_JSON_ARG_FIELDS = frozenset({"arguments", "input"})
_JSON_ARGS_TEXT = '{"q": "x"}'
_JSON_SCHEMA_FIELDS = frozenset({"input_schema", "parameters", "schema"})


def _png_1x1() -> bytes:
    """A real 1x1 RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _wav_2_samples() -> bytes:
    """A real WAV: 8 kHz mono 16-bit, two silent samples."""
    samples = b"\x00\x00\x00\x00"
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(samples))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(samples))
        + samples
    )


PNG_B64 = base64.b64encode(_png_1x1()).decode("ascii")
PDF_B64 = base64.b64encode(b"%PDF-1.4\n%%EOF").decode("ascii")
WAV_B64 = base64.b64encode(_wav_2_samples()).decode("ascii")


def installed_versions() -> dict[str, str]:
    """The installed versions of the SDKs this module reads (the missing ones left out)."""
    versions: dict[str, str] = {}
    for dist in ("anthropic", "openai", "google-genai"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


# --- typing introspection --------------------------------------------------------------------


def _typing_objects(name: str) -> tuple[Any, ...]:
    """``typing.NAME`` and ``typing_extensions.NAME`` (which may differ on older Pythons)."""
    found: list[Any] = []
    for module_name in ("typing", "typing_extensions"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        obj = getattr(module, name, None)
        if obj is not None and obj not in found:
            found.append(obj)
    return tuple(found)


_NONE_TYPE = type(None)
_UNION_ORIGINS: tuple[Any, ...] = (typing.Union, types.UnionType)
_LIST_ORIGINS: tuple[Any, ...] = (
    list,
    tuple,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Iterable,
    collections.abc.Collection,
)
_DICT_ORIGINS: tuple[Any, ...] = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _strip(tp: Any) -> Any:
    """``tp`` without its Annotated, Required, NotRequired, ReadOnly and alias wrappers."""
    annotated = _typing_objects("Annotated")
    qualifiers = (
        _typing_objects("Required") + _typing_objects("NotRequired") + _typing_objects("ReadOnly")
    )
    alias_types: tuple[type[Any], ...] = tuple(
        t for t in _typing_objects("TypeAliasType") if isinstance(t, type)
    )
    while True:
        if alias_types and isinstance(tp, alias_types):
            tp = tp.__value__
            continue
        origin = typing.get_origin(tp)
        if origin is not None and (origin in annotated or origin in qualifiers):
            tp = typing.get_args(tp)[0]
            continue
        return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in _UNION_ORIGINS


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) in _typing_objects("Literal")


def _union_args(tp: Any) -> list[Any]:
    """The alternatives of a union (nested unions flattened, None left out); ``[tp]`` else."""
    tp = _strip(tp)
    if not _is_union(tp):
        return [tp]
    out: list[Any] = []
    for arg in typing.get_args(tp):
        for alt in _union_args(arg):
            if alt is not _NONE_TYPE and alt not in out:
                out.append(alt)
    return out


def _list_item(tp: Any) -> Any | None:
    """The item type of a list-like type, or None."""
    origin = typing.get_origin(tp)
    if origin is None and tp in (list, tuple):
        return Any
    if origin not in _LIST_ORIGINS:
        return None
    args = typing.get_args(tp)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        raise GenerationError(f"fixed-length tuple type {tp!r}")
    return args[0] if args else Any


def _dict_value(tp: Any) -> Any | None:
    """The value type of a dict-like type, or None."""
    origin = typing.get_origin(tp)
    if origin is None and tp is dict:
        return Any
    if origin not in _DICT_ORIGINS:
        return None
    args = typing.get_args(tp)
    return args[1] if len(args) == 2 else Any


def _is_model(tp: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _is_typeddict(tp: Any) -> bool:
    import typing_extensions

    return isinstance(tp, type) and typing_extensions.is_typeddict(tp)


def _is_object_type(tp: Any) -> bool:
    """A pydantic model or a TypedDict."""
    return _is_model(tp) or _is_typeddict(tp)


def _is_structured(tp: Any) -> bool:
    """An object type, or a list of them."""
    tp = _strip(tp)
    if _is_object_type(tp):
        return True
    item = _list_item(tp)
    return item is not None and any(_is_object_type(alt) for alt in _union_args(item))


@dataclass(frozen=True)
class _Field:
    key: str  # the wire key (the alias, if any)
    tp: Any
    required: bool


_FIELDS_CACHE: dict[Any, list[_Field]] = {}


def _fields(cls: Any) -> list[_Field]:
    """The fields of a pydantic model or a TypedDict, in declaration order, by wire key."""
    cached = _FIELDS_CACHE.get(cls)
    if cached is not None:
        return cached
    fields: list[_Field] = []
    if _is_model(cls):
        for name, info in cls.model_fields.items():
            tp = info.annotation  # its Annotated metadata is only discriminators
            key = info.alias if isinstance(info.alias, str) else name
            fields.append(_Field(key, tp, info.is_required()))
    elif _is_typeddict(cls):
        import typing_extensions

        hints = typing_extensions.get_type_hints(cls, include_extras=True)
        required_keys: frozenset[str] = cls.__required_keys__
        for key, tp in hints.items():
            fields.append(_Field(key, tp, key in required_keys))
    else:
        raise GenerationError(f"{cls!r} is neither a pydantic model nor a TypedDict")
    _FIELDS_CACHE[cls] = fields
    return fields


def _type_name(tp: Any) -> str:
    """A short label of a type, for variant names."""
    tp = _strip(tp)
    if _is_literal(tp):
        return "Literal[" + ", ".join(repr(v) for v in typing.get_args(tp)) + "]"
    item = _list_item(tp)
    if item is not None:
        return f"list[{_type_name(item)}]"
    if _dict_value(tp) is not None:
        return "dict"
    if _is_union(tp):
        return " | ".join(_type_name(alt) for alt in _union_args(tp))
    name = getattr(tp, "__name__", None)
    return name if isinstance(name, str) else repr(tp)


def _literal_of(tp: Any) -> str:
    """The single string value of a (possibly Optional) Literal type, else ``""``."""
    alts = _union_args(tp)
    if len(alts) == 1 and _is_literal(alts[0]):
        values = [v for v in typing.get_args(alts[0]) if v is not None]
        if len(values) == 1 and isinstance(values[0], str):
            return values[0]
    return ""


def _wire_type(cls: Any, key: str = "type") -> str:
    for field in _fields(cls):
        if field.key == key:
            return _literal_of(field.tp)
    return ""


# --- values ---------------------------------------------------------------------------------


def _string(name: str, siblings: dict[str, Any]) -> str:
    if name in _ID_FIELDS:
        return CALL_ID
    if name == "arguments":
        return _JSON_ARGS_TEXT
    if name == "data":
        media_type = siblings.get("media_type")
        if isinstance(media_type, str) and media_type.startswith("image/"):
            return PNG_B64
        if media_type == "application/pdf":
            return PDF_B64
        if siblings.get("format") in ("wav", "mp3"):
            return WAV_B64
    if name == "file_data":
        return f"data:application/pdf;base64,{PDF_B64}"
    if name == "filename":
        return "file_1.pdf"
    if name in ("media_type", "mime_type"):
        return "text/plain"
    if name == "url" or name.endswith("_url"):
        return f"https://example.com/{name}"
    return f"{name}_1"


def _bytes(name: str, siblings: dict[str, Any]) -> str:
    """A ``bytes`` field as pydantic's ``model_dump(mode="json")`` writes it: URL-safe
    base64 (google-genai's blobs and thought signatures)."""
    mime_type = siblings.get("mime_type", siblings.get("mimeType"))
    if name == "data" and isinstance(mime_type, str) and mime_type.startswith("image/"):
        raw = _png_1x1()
    elif name == "data" and mime_type == "application/pdf":
        raw = b"%PDF-1.4\n%%EOF"
    else:
        raw = f"{name}_1".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _object_value(name: str) -> Any:
    """The value of a field typed ``object`` or ``Any``."""
    if name in _JSON_ARG_FIELDS:
        return {"q": "x"}
    if name in _JSON_SCHEMA_FIELDS:
        return {"type": "object"}
    return "x"


def _literal(values: tuple[Any, ...], name: str) -> Any:
    choices = [v for v in values if v is not None]
    if not choices:
        raise GenerationError(f"Literal field {name!r} allows only None")
    if name == "media_type" and "image/png" in choices:
        return "image/png"  # the image data is a PNG
    if name == "format" and "wav" in choices:
        return "wav"  # the audio data is a WAV
    return choices[0]


def _preferred(alts: list[Any]) -> Any:
    """The alternative of a union a full instance uses: the first object (or list of objects),
    else the first Literal, else the first."""
    for alt in alts:
        if _is_structured(alt):
            return alt
    for alt in alts:
        if _is_literal(_strip(alt)):
            return alt
    return alts[0]


def _value(tp: Any, name: str, depth: int, siblings: dict[str, Any]) -> Any:
    """A value of type ``tp`` for the field ``name``."""
    if depth > MAX_DEPTH:
        raise GenerationError(f"field {name!r} nests deeper than {MAX_DEPTH} levels")
    tp = _strip(tp)
    if tp is Any or tp is object:
        return _object_value(name)
    if _is_union(tp):
        alts = _union_args(tp)
        if not alts:
            raise GenerationError(f"field {name!r} allows only None")
        return _value(_preferred(alts), name, depth, siblings)
    if _is_literal(tp):
        return _literal(typing.get_args(tp), name)
    if tp is str:
        return _string(name, siblings)
    if tp is bool:
        return name != "is_error"
    if tp is int:
        return 1
    if tp is float:
        return 0.5
    if tp is bytes:
        return _bytes(name, siblings)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp if not str(m.value).endswith("_UNSPECIFIED")]
        return values[0] if values else next(iter(tp)).value
    item = _list_item(tp)
    if item is not None:
        return [_value(item, name, depth + 1, {})]
    value_tp = _dict_value(tp)
    if value_tp is not None:
        if name in _JSON_ARG_FIELDS:
            return {"q": "x"}
        stripped = _strip(value_tp)
        if stripped in (str, object) or stripped is Any:
            return {"k": "v"}
        return {"k": _value(value_tp, "k", depth + 1, {})}
    if _is_object_type(tp):
        return _instance(tp, depth + 1)
    raise GenerationError(f"field {name!r}: unsupported type {tp!r}")


def _instance(cls: Any, depth: int, omit: frozenset[str] = frozenset()) -> dict[str, Any]:
    """An instance of an object type: every field (only the required ones past FULL_DEPTH)."""
    fields = [f for f in _fields(cls) if f.key not in omit and (f.required or depth <= FULL_DEPTH)]
    # The Literals first: a "data" field's value follows its sibling "media_type".
    siblings: dict[str, Any] = {}
    for field in fields:
        if field.key in ("media_type", "format", "mime_type", "mimeType"):
            siblings[field.key] = _value(field.tp, field.key, depth, {})
    out: dict[str, Any] = {}
    for field in fields:
        out[field.key] = _value(field.tp, field.key, depth, siblings)
    return out


def _source_variants(cls: Any, depth: int) -> list[tuple[str, dict[str, Any]]]:
    """One instance per alternative source field of ``cls`` (the others left out), or one full
    instance if it has fewer than two."""
    sources = [f.key for f in _fields(cls) if not f.required and f.key in _SOURCE_FIELDS]
    if len(sources) < 2:
        return [(_type_name(cls), _instance(cls, depth))]
    return [
        (f"{_type_name(cls)}({source})", _instance(cls, depth, frozenset(sources) - {source}))
        for source in sources
    ]


def _alternatives(tp: Any, name: str, depth: int) -> list[tuple[str, Any]]:
    """The labelled values of each alternative of a field whose type is a union of several
    object types (a list of a union counts one alternative per item type); ``[]`` for a field
    of any other type."""
    entries: list[tuple[str, Any]] = []
    for alt in _union_args(tp):
        item = _list_item(alt)
        if item is not None and _is_structured(alt):
            for item_alt in _union_args(item):
                if _is_object_type(item_alt):
                    for label, value in _source_variants(item_alt, depth + 2):
                        entries.append((f"list[{label}]", [value]))
                else:
                    value = _value(item_alt, name, depth + 1, {})
                    entries.append((f"list[{_type_name(item_alt)}]", [value]))
        elif _is_object_type(alt):
            entries.extend(_source_variants(alt, depth + 1))
        else:
            entries.append((_type_name(alt), _value(alt, name, depth, {})))
    structured = [label for label, value in entries if isinstance(value, (dict, list))]
    return entries if len(structured) > 1 else []


def _cases(cls: Any) -> list[tuple[str, dict[str, Any]]]:
    """The full instance of a member and its variants, as (name, raw dict): one variant per
    alternative of each field that is a union of object types, at most MAX_FIELD_VARIANTS a
    field and MAX_VARIANTS in all, in field order."""
    name = _type_name(cls)
    full = _instance(cls, 0)
    cases = [(name, full)]
    for field in _fields(cls):
        for index, (label, value) in enumerate(_alternatives(field.tp, field.key, 0)):
            if len(cases) > MAX_VARIANTS or index >= MAX_FIELD_VARIANTS:
                break
            cases.append((f"{name}[{field.key}={label}]", {**full, field.key: value}))
    return cases


# --- validation ------------------------------------------------------------------------------


_EAGER_CACHE: dict[Any, Any] = {}


def _eager(tp: Any) -> Any:
    """``tp`` with every TypedDict rebuilt so that pydantic checks it completely: its
    ``Iterable`` fields as lists (pydantic validates an ``Iterable`` lazily, and takes a dict for
    one in a union with a TypedDict) and its unknown keys refused. Pydantic models are kept."""
    import typing_extensions
    from pydantic import ConfigDict

    tp = _strip(tp)
    if _is_union(tp):
        return functools.reduce(operator.or_, [_eager(arg) for arg in typing.get_args(tp)])
    item = _list_item(tp)
    if item is not None:
        return list[_eager(item)]  # type: ignore[misc]
    value_tp = _dict_value(tp)
    if value_tp is not None:
        return dict[str, _eager(value_tp)]  # type: ignore[misc]
    if not _is_typeddict(tp):
        return tp
    if tp in _EAGER_CACHE:
        cached = _EAGER_CACHE[tp]
        return tp if cached is None else cached  # None: a recursive TypedDict, kept as it is
    _EAGER_CACHE[tp] = None
    fields = {
        f.key: (typing_extensions.Required if f.required else typing_extensions.NotRequired)[
            _eager(f.tp)
        ]
        for f in _fields(tp)
    }
    make_typeddict: Any = typing_extensions.TypedDict
    rebuilt: Any = make_typeddict(tp.__name__, fields)
    rebuilt.__pydantic_config__ = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    _EAGER_CACHE[tp] = rebuilt
    return rebuilt


def _refuse_extra(value: Any) -> None:
    """Refuse the extra keys an SDK model accepts silently (a key under a wrong name)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        extra = value.__pydantic_extra__
        if extra:
            raise GenerationError(f"{type(value).__name__}: unknown keys {sorted(extra)}")
        for field_name in type(value).model_fields:
            _refuse_extra(getattr(value, field_name))
    elif isinstance(value, dict):
        for item in value.values():
            _refuse_extra(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_extra(item)


_ADAPTERS: dict[Any, Any] = {}


def _adapter(tp: Any) -> Any:
    """A cached pydantic TypeAdapter of ``tp`` (building one for a large union takes seconds)."""
    from pydantic import TypeAdapter

    adapter = _ADAPTERS.get(tp)
    if adapter is None:
        adapter = _ADAPTERS[tp] = TypeAdapter(tp)
    return adapter


def _validate(tp: Any, value: Any) -> None:
    """Validate ``value`` as ``tp`` with pydantic, completely and strictly (see _eager)."""
    _adapter(tp).validate_python(value)  # the SDK's own type (an Iterable checked lazily)
    _refuse_extra(_adapter(_eager(tp)).validate_python(value))


def _payload(cls: Any, raw: dict[str, Any], name: str) -> dict[str, Any]:
    """The wire dict of a generated instance, checked against its SDK type."""
    from pydantic import ValidationError

    try:
        if json.loads(json.dumps(raw)) != raw:
            raise GenerationError("not plain JSON")
        _validate(cls, raw)
    except (ValidationError, GenerationError, TypeError, ValueError) as exc:
        raise GenerationError(f"{name}: the generated instance does not validate: {exc}") from exc
    if not _is_model(cls):
        copy: dict[str, Any] = json.loads(json.dumps(raw))  # shares nothing with other cases
        return copy
    dumped = cls.model_validate(raw).model_dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(dumped, dict) or dumped != raw:
        raise GenerationError(f"{name}: model_dump differs from the generated dict: {dumped!r}")
    return dumped


def _members(union_tp: Any, union: str) -> list[Member]:
    """Every case of every member of ``union_tp``."""
    members: list[Member] = []
    seen: set[str] = set()
    for cls in _union_args(union_tp):
        cls_name = _type_name(cls)
        try:
            if not _is_object_type(cls):
                raise GenerationError(f"member {cls!r} is neither a pydantic model nor a TypedDict")
            wire_type = _wire_type(cls)
            for name, raw in _cases(cls):
                if name in seen:
                    raise GenerationError(f"two members of {union} are named {name}")
                seen.add(name)
                members.append(Member(union, name, wire_type, _payload(cls, raw, name)))
        except GenerationError as exc:
            raise GenerationError(f"{union}: cannot generate {cls_name}: {exc}") from exc
        except Exception as exc:
            raise GenerationError(f"{union}: cannot generate {cls_name}: {exc!r}") from exc
    return members


def _check_union(union_tp: Any, members: list[Member]) -> list[Member]:
    """Every payload validates against the union as a whole too."""
    from pydantic import ValidationError

    for member in members:
        try:
            _validate(union_tp, member.payload)
        except (ValidationError, GenerationError) as exc:
            raise GenerationError(
                f"{member.name} does not validate as {member.union}: {exc}"
            ) from exc
    return members


def _sdk_type(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


# --- the unions ------------------------------------------------------------------------------


def anthropic_request_blocks() -> list[Member]:
    """Every member of ``anthropic.types.beta.BetaContentBlockParam`` (TypedDicts, and the
    response blocks it also accepts, dumped as a client sends them back)."""
    union_tp = _sdk_type("anthropic.types.beta", "BetaContentBlockParam")
    return _check_union(union_tp, _members(union_tp, "anthropic.BetaContentBlockParam"))


def anthropic_response_blocks() -> list[Member]:
    """Every member of ``anthropic.types.beta.BetaContentBlock`` (pydantic)."""
    union_tp = _sdk_type("anthropic.types.beta", "BetaContentBlock")
    return _check_union(union_tp, _members(union_tp, "anthropic.BetaContentBlock"))


def responses_input_items() -> list[Member]:
    """Every member of ``openai.types.responses.ResponseInputItem`` (pydantic)."""
    union_tp = _sdk_type("openai.types.responses", "ResponseInputItem")
    return _check_union(union_tp, _members(union_tp, "openai.ResponseInputItem"))


def responses_input_item_params() -> list[Member]:
    """Every member of ``openai.types.responses.ResponseInputItemParam`` (TypedDicts)."""
    union_tp = _sdk_type("openai.types.responses", "ResponseInputItemParam")
    return _check_union(union_tp, _members(union_tp, "openai.ResponseInputItemParam"))


def _member_by_role(union_tp: Any, role: str) -> Any:
    for cls in _union_args(union_tp):
        if _is_object_type(cls) and _wire_type(cls, "role") == role:
            return cls
    raise GenerationError(f"no member with role {role!r} in {union_tp!r}")


def _field_type(cls: Any, key: str) -> Any:
    for field in _fields(cls):
        if field.key == key:
            return field.tp
    raise GenerationError(f"{_type_name(cls)} has no field {key!r}")


def chat_message_params() -> list[Member]:
    """Every member of ``openai.types.chat.ChatCompletionMessageParam`` (a message has no
    ``type``: its wire_type is ``""``), plus one user message per member of the content part
    union, one assistant message per member of the ``tool_calls`` union (wire_type: that
    part's or tool call's type) and an assistant message with the legacy ``function_call``
    (wire_type ``"function_call"``)."""
    union = "openai.ChatCompletionMessageParam"
    union_tp = _sdk_type("openai.types.chat", "ChatCompletionMessageParam")
    part_union = _sdk_type("openai.types.chat", "ChatCompletionContentPartParam")
    members = _members(union_tp, union)
    names = {member.name for member in members}

    def add(cls: Any, name: str, wire_type: str, raw: dict[str, Any]) -> None:
        member = Member(union, name, wire_type, _payload(cls, raw, name))
        if name in names:  # a variant of the member already: replaced
            index = next(i for i, m in enumerate(members) if m.name == name)
            members[index] = member
        else:
            names.add(name)
            members.append(member)

    user = _member_by_role(union_tp, "user")
    user_name = _type_name(user)
    user_full = _instance(user, 0)
    for part in _union_args(part_union):
        if not _is_object_type(part):
            raise GenerationError(f"{union}: content part {part!r} is not a TypedDict")
        for label, value in _source_variants(part, 2):
            add(
                user,
                f"{user_name}[content=list[{label}]]",
                _wire_type(part),
                {**user_full, "content": [value]},
            )

    assistant = _member_by_role(union_tp, "assistant")
    assistant_name = _type_name(assistant)
    assistant_full = _instance(assistant, 0)
    tool_call_item = _list_item(_strip(_union_args(_field_type(assistant, "tool_calls"))[0]))
    if tool_call_item is None:
        raise GenerationError(f"{union}: {assistant_name}.tool_calls is not a list")
    for call in _union_args(tool_call_item):
        if not _is_object_type(call):
            raise GenerationError(f"{union}: tool call {call!r} is not a TypedDict")
        base = {k: v for k, v in assistant_full.items() if k != "function_call"}
        add(
            assistant,
            f"{assistant_name}[tool_calls=list[{_type_name(call)}]]",
            _wire_type(call),
            {**base, "tool_calls": [_instance(call, 2)]},
        )
    legacy = {k: v for k, v in assistant_full.items() if k != "tool_calls"}
    add(assistant, f"{assistant_name}[function_call]", "function_call", legacy)
    return _check_union(union_tp, members)


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _gemini_part_cases(cls: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, wire type, raw part)`` of a google-genai part type: each field alone, each
    two fields together (a thought and its text, a signature on a call...), every field at
    once, and an ``inline_data`` variant per kind of blob the tables price apart (an image,
    a PDF). The wire type is the first field's, in snake_case."""
    name = _type_name(cls)
    fields = _fields(cls)
    values = {f.key: _value(f.tp, f.key, 1, {}) for f in fields}
    cases = [(f"{name}[{f.key}]", _snake(f.key), {f.key: values[f.key]}) for f in fields]
    for i, f in enumerate(fields):
        for g in fields[i + 1 :]:
            raw = {f.key: values[f.key], g.key: values[g.key]}
            cases.append((f"{name}[{f.key}+{g.key}]", _snake(f.key), raw))
    cases.append((name, _snake(fields[0].key), _instance(cls, 0)))
    for f in fields:
        blob = values[f.key]
        mime_key = next(
            (k for k in ("mime_type", "mimeType") if isinstance(blob, dict) and k in blob), ""
        )
        if not mime_key or "data" not in blob:
            continue
        for mime_type in ("image/png", "application/pdf"):
            data = _bytes("data", {"mime_type": mime_type})
            raw = {f.key: {**blob, mime_key: mime_type, "data": data}}
            cases.append((f"{name}[{f.key}={mime_type}]", _snake(f.key), raw))
    return cases


def _gemini(cls_name: str, union: str) -> list[Member]:
    cls = _sdk_type("google.genai.types", cls_name)
    members = []
    for name, wire_type, raw in _gemini_part_cases(cls):
        try:
            members.append(Member(union, name, wire_type, _payload(cls, raw, name)))
        except GenerationError as exc:
            raise GenerationError(f"{union}: cannot generate {name}: {exc}") from exc
    return members


def gemini_parts() -> list[Member]:
    """Every field of ``google.genai.types.Part`` (pydantic; dumped by alias, the REST API's
    camelCase), alone, two by two and all together; wire_type: the first field, snake_case."""
    return _gemini("Part", "google.genai.Part")


def gemini_part_dicts() -> list[Member]:
    """The same cases of ``google.genai.types.PartDict`` (the SDK's snake_case dicts)."""
    return _gemini("PartDict", "google.genai.PartDict")


def gemini_content_fields(dicts: bool) -> list[str]:
    """The fields of ``google.genai.types.Content`` (or ``ContentDict``), by wire key."""
    cls = _sdk_type("google.genai.types", "ContentDict" if dicts else "Content")
    return [f.key for f in _fields(cls)]


def validate_gemini_content(payload: dict[str, Any], dicts: bool) -> None:
    """Check ``payload`` against ``google.genai.types.ContentDict`` (or ``Content``)."""
    cls = _sdk_type("google.genai.types", "ContentDict" if dicts else "Content")
    _validate(cls, payload)


#: Every generator, by name (for a test's parametrization).
GENERATORS: dict[str, Callable[[], list[Member]]] = {
    "anthropic_request_blocks": anthropic_request_blocks,
    "anthropic_response_blocks": anthropic_response_blocks,
    "responses_input_items": responses_input_items,
    "responses_input_item_params": responses_input_item_params,
    "chat_message_params": chat_message_params,
    "gemini_parts": gemini_parts,
    "gemini_part_dicts": gemini_part_dicts,
}
