"""The checks every message and block runs at construction, and the frozen containers.

Invariants: a value accepted by :func:`_frozen_json_dict` is a :class:`FrozenDict` of plain
JSON (string keys; dict, list, str, int, finite float, bool, None) that survives a JSON round
trip unchanged, with every string valid UTF-8; nothing reachable from it can change. Errors
are :class:`~ctxtrim.errors.InvalidMessage` whose ``path`` names the field relative to the
object being built (:func:`_prefixed` puts the caller's prefix in front). The checks are cheap
on the happy path; the detailed diagnosis (:func:`_json_problem`) only runs on failure.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from . import _core
from .errors import InvalidMessage


def _tname(value: object) -> str:
    return type(value).__name__


def _check_str(value: object, path: str) -> None:
    """Raise unless ``value`` is a ``str`` encodable as UTF-8 (no lone surrogates)."""
    if not isinstance(value, str):
        raise InvalidMessage(f"expected str, got {_tname(value)}", path)
    # ``isascii`` is O(1) in CPython (a flag on the string); only non-ASCII text is scanned.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidMessage(
                f"lone surrogate {value[e.start]!r} at index {e.start}; "
                "it cannot be encoded as UTF-8",
                path,
            ) from None


def _check_nonempty_str(value: object, path: str) -> None:
    _check_str(value, path)
    if not value:
        raise InvalidMessage("must not be empty", path)


def _check_opt_str(value: object, path: str) -> None:
    if value is not None:
        _check_str(value, path)


def _surrogate_problem(s: str, where: str) -> str | None:
    if s.isascii():
        return None
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"{where} has a lone surrogate {s[e.start]!r} at index {e.start}"
    return None


def _json_problem(value: object, where: str, seen: set[int]) -> str | None:
    """Describe the first part of ``value`` that is not plain JSON, or ``None``."""
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"{where} is {value!r}; JSON has no NaN or infinity"
    if isinstance(value, str):
        return _surrogate_problem(value, where)
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return f"{where} contains itself (a reference cycle)"
        seen.add(id(value))
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    return f"{where} has key {k!r} of type {_tname(k)}; JSON keys are strings"
                problem = _surrogate_problem(k, f"key {k!r} of {where}") or _json_problem(
                    v, f"{where}[{k!r}]", seen
                )
                if problem:
                    return problem
        else:
            for i, v in enumerate(value):
                problem = _json_problem(v, f"{where}[{i}]", seen)
                if problem:
                    return problem
        seen.discard(id(value))
        return None
    hint = "; use a list" if isinstance(value, (tuple, set, frozenset)) else ""
    return (
        f"{where} is a {_tname(value)}, which is not JSON "
        f"(allowed: dict, list, str, int, float, bool, None){hint}"
    )


_JSON_ENCODE = msgspec.json.Encoder().encode
_JSON_DECODE = msgspec.json.Decoder().decode


def _read_only(self: object, *args: object, **kwargs: object) -> Any:
    raise TypeError(
        f"{type(self).__name__} is read-only: a message never changes once built "
        "(forks share it); build a new one, e.g. with msgspec.structs.replace"
    )


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes: how a message holds ``ToolUseBlock.input`` and ``meta``.

    It is a ``dict`` (``isinstance``, ``==``, ``json.dumps`` and msgspec all treat it as one),
    but ``d[k] = v``, ``del d[k]``, ``update``, ``pop`` and the other mutators raise
    ``TypeError``, and so do those of the :class:`FrozenList` values inside it. Messages are
    shared by forks, snapshots and caches, so nothing reachable from one may change.
    """

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (dict(self),))


class FrozenList(list[Any]):
    """A list that refuses changes (see :class:`FrozenDict`)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (list(self),))


def _frozen_json_dict(value: object, path: str) -> FrozenDict:
    """``value`` as a :class:`FrozenDict` copy (itself if already frozen throughout); raise
    unless it is a dict that survives a JSON round trip unchanged."""
    frozen = _core.frozen_json(value)  # the common case: plain JSON, checked and copied at once
    if frozen is not None:
        return frozen  # type: ignore[no-any-return]
    _check_json_dict(value, path)
    # Accepted, but not of the exact plain types (e.g. a str or dict subclass): as JSON has it.
    frozen = _core.frozen_json(_JSON_DECODE(_JSON_ENCODE(value)))
    assert frozen is not None
    return frozen  # type: ignore[no-any-return]


def _check_json_dict(value: object, path: str) -> None:
    """Raise unless ``value`` is a dict that survives a JSON round trip unchanged."""
    if not isinstance(value, dict):
        raise InvalidMessage(f"expected a dict, got {_tname(value)}", path)
    # One C-level encode + decode + compare: rejects tuples, sets, bytes, NaN/inf, non-str keys,
    # structs, datetimes... (they all come back as something unequal) and lone surrogates.
    try:
        ok = _JSON_DECODE(_JSON_ENCODE(value)) == value
    except Exception:  # any failure to encode means "not JSON"
        ok = False
    if not ok:
        problem = _json_problem(value, "value", set())
        raise InvalidMessage(
            problem or "does not survive a JSON round trip unchanged",
            path,
        )


def _prefixed(err: InvalidMessage, prefix: str) -> InvalidMessage:
    """``err`` with ``prefix`` put in front of its path."""
    if not err.path:
        path = prefix
    elif err.path.startswith("["):
        path = prefix + err.path
    else:
        path = f"{prefix}.{err.path}"
    return InvalidMessage(err.reason, path)


# msgspec says "<reason> - at `$.a[0].b`", or "- at `key` in `$.meta`" for a bad dict key.
# The patterns are compiled on the first error (by ``re``'s cache), not at import.
_AT = r" - at (`key` in )?`\$(.*)`\Z"
_MISSING = r"Object missing required field `(.*)`\Z"


def _from_msgspec(err: msgspec.ValidationError, root: str) -> InvalidMessage:
    """Translate msgspec's ``... - at `$.content[0].text``` into an :class:`InvalidMessage`."""
    import re

    text = str(err)
    m = re.search(_AT, text, re.S)
    location = m.group(2) if m else ""
    reason = text[: m.start()] if m else text
    if m and m.group(1):
        reason += " (in a key)"
    cause = err.__cause__
    sub = ""
    if isinstance(cause, InvalidMessage):  # raised by a __post_init__ at ``location``
        reason, sub = cause.reason, cause.path
    else:
        missing = re.match(_MISSING, reason, re.S)
        if missing:
            sub = missing.group(1)
    path = (root + location).removeprefix(".")
    if sub:
        path = f"{path}{'' if not path or sub.startswith('[') else '.'}{sub}"
    return InvalidMessage(reason, path)
