"""ctxtrim's own shape keeps every key or refuses it: a key :meth:`Message.from_dict` has no
field for would otherwise vanish (msgspec ignores unknown fields), so
:func:`~ctxtrim.formats.from_ctxtrim` refuses it with :class:`InvalidMessage` naming its
path. Other data belongs in ``meta``, which keeps any JSON."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from ctxtrim.errors import InvalidMessage
from ctxtrim.messages import Message


@functools.cache
def _field_names() -> frozenset[str]:
    """Every key a message, its usage or any block can hold (the tag included)."""
    from msgspec import inspect as mi

    names: set[str] = set()
    seen: set[type] = set()

    def walk(t: Any) -> None:
        if isinstance(t, mi.StructType):
            if t.cls in seen:
                return
            seen.add(t.cls)
            if t.tag_field:
                names.add(t.tag_field)
            for f in t.fields:
                names.add(f.encode_name)
                walk(f.type)
        elif isinstance(t, mi.UnionType):
            for member in t.types:
                walk(member)
        elif isinstance(t, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
            walk(t.item_type)
        elif isinstance(t, mi.TupleType):
            for member in t.item_types:
                walk(member)
        elif isinstance(t, mi.DictType):
            walk(t.value_type)

    walk(msgspec.inspect.type_info(Message))
    return frozenset(names)


def check_nothing_vanished(given: Any, message: Message, path: str) -> None:
    """Raise :class:`InvalidMessage` at the first key of ``given`` (a message in ctxtrim's
    own shape) that ``message``, built from it, does not keep: a key no message, usage or
    block has. A known key left out of the message's dict held its default."""
    if not isinstance(given, dict):
        return
    key_path = _vanished(given, message.to_dict(), path, _field_names())
    if key_path is not None:
        raise InvalidMessage(
            "unknown key: ctxtrim's own shape has no field for it (role, content, id, turn, "
            "name, usage, meta and the blocks' fields); put other data in meta",
            key_path,
        )


def _vanished(given: Any, kept: Any, path: str, known: frozenset[str]) -> str | None:
    if isinstance(given, dict) and isinstance(kept, dict):
        for key, value in given.items():
            here = f"{path}.{key}"
            if key in kept:
                found = _vanished(value, kept[key], here, known)
                if found is not None:
                    return found
            elif key not in known:
                return here
    elif isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        for i, (a, b) in enumerate(zip(given, kept, strict=True)):
            found = _vanished(a, b, f"{path}[{i}]", known)
            if found is not None:
                return found
    return None
