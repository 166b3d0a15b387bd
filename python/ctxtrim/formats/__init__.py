"""Provider message formats ⇄ ctxtrim messages, losslessly.

=================  =========================================  ===============================
format name        provider shape                             converters
=================  =========================================  ===============================
``"openai"``       Chat Completions ``messages`` (a list)     :func:`from_openai_chat` /
                                                              :func:`to_openai_chat`
``"responses"``    Responses API ``input`` items (a list)     :func:`from_openai_responses` /
                                                              :func:`to_openai_responses`
``"anthropic"``    ``{"system": ..., "messages": [...]}``     :func:`from_anthropic` /
                                                              :func:`to_anthropic`
``"gemini"``       ``{"system_instruction": ...,              :func:`from_gemini` /
                   "contents": [...]}``                       :func:`to_gemini`
``"ctxtrim"``      ``[Message.to_dict(), ...]``               ``Message.from_dict`` / ``to_dict``
=================  =========================================  ===============================

Invariants:

* ``to_X(from_X(payload)) == payload`` for every payload ``from_X`` accepts: provider fields
  ctxtrim's model has no place for are kept in ``Message.meta[<format key>]`` and written
  back (see each module's docstring).
* ``from_X(to_X(messages)) == messages`` for every history the format can express; what a
  format cannot carry (reasoning in Chat Completions, ``is_error`` outside Anthropic, ``id``/
  ``turn``/``usage`` everywhere but ctxtrim's own shape...) is listed in its module and
  dropped by ``to_X``; what would change the conversation's meaning (an image in an
  assistant message, a mid-conversation system message for Anthropic) raises.
* Malformed input raises :class:`~ctxtrim.errors.InvalidMessage` whose ``path`` names the
  field (``messages[3].tool_calls[0].id``, ``input[2].call_id``); never ``KeyError`` or
  ``TypeError``.

:func:`load` and :func:`dump` pick the converter by name, and :func:`detect` guesses the
format of a parsed payload (``format="auto"``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ctxtrim._core import MessageLog
from ctxtrim.errors import FormatError, InvalidMessage, InvalidToolArguments
from ctxtrim.messages import Message
from ctxtrim.provider import SPECS

from . import anthropic, openai_chat, openai_responses
from ._common import RAW_ARGUMENTS, CutRule, tname
from ._kept import check_nothing_vanished
from .anthropic import from_anthropic, from_anthropic_json, to_anthropic, to_anthropic_json
from .gemini import from_gemini, to_gemini, to_gemini_json
from .openai_chat import (
    from_openai_chat,
    from_openai_chat_json,
    to_openai_chat,
    to_openai_chat_json,
)
from .openai_responses import (
    from_openai_responses,
    from_openai_responses_json,
    to_openai_responses,
    to_openai_responses_json,
)

__all__ = [
    "FORMATS",
    "RAW_ARGUMENTS",
    "FormatError",
    "InvalidToolArguments",
    "detect",
    "dump",
    "dump_json",
    "from_anthropic",
    "from_anthropic_json",
    "from_ctxtrim",
    "from_gemini",
    "from_openai_chat",
    "from_openai_chat_json",
    "from_openai_responses",
    "from_openai_responses_json",
    "load",
    "parse_json",
    "to_anthropic",
    "to_anthropic_json",
    "to_ctxtrim",
    "to_gemini",
    "to_gemini_json",
    "to_openai_chat",
    "to_openai_chat_json",
    "to_openai_responses",
    "to_openai_responses_json",
]

#: The format names :func:`load` and :func:`dump` accept (besides ``"auto"`` for ``load``).
FORMATS = ("openai", "responses", "anthropic", "gemini", "ctxtrim")
_ALIASES = {"openai_chat": "openai", "chat": "openai", "openai_responses": "responses"}


def from_ctxtrim(data: Any) -> list[Message]:
    """ctxtrim's own shape (a list of ``Message.to_dict()``) → messages; paths ``messages[i]``.
    A key no message or block has is refused (:class:`InvalidMessage` naming it), never
    dropped: other data belongs in ``meta``."""
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise InvalidMessage(f"expected an array, got {tname(data)}", "messages")
    out = []
    for i, item in enumerate(data):
        try:
            message = Message.from_dict(item)
        except InvalidMessage as e:
            sub = e.path
            path = f"messages[{i}]" + ("" if not sub else sub if sub.startswith("[") else f".{sub}")
            raise InvalidMessage(e.reason, path) from None
        check_nothing_vanished(item, message, f"messages[{i}]")  # an unknown key: refused
        out.append(message)
    return out


def to_ctxtrim(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages → ctxtrim's own shape (every field kept)."""
    out = []
    for i, m in enumerate(messages):
        if type(m) is not Message:
            raise InvalidMessage(f"expected a Message, got {type(m).__name__}", f"messages[{i}]")
        out.append(m.to_dict())
    return out


_FROM: dict[str, Callable[[Any], list[Message]]] = {
    "openai": from_openai_chat,
    "responses": from_openai_responses,
    "anthropic": from_anthropic,
    "gemini": from_gemini,
    "ctxtrim": from_ctxtrim,
}
_TO = {
    "openai": to_openai_chat,
    "responses": to_openai_responses,
    "anthropic": to_anthropic,
    "gemini": to_gemini,
    "ctxtrim": to_ctxtrim,
}


def _name(format: str, *, auto: bool) -> str:
    name = _ALIASES.get(format, format) if isinstance(format, str) else format
    if name in FORMATS or (auto and name == "auto"):
        return name
    choices = ("auto", *FORMATS) if auto else FORMATS
    raise FormatError(f"unknown format {format!r}; expected one of {', '.join(choices)}")


_BOM = "\ufeff"


def parse_json(text: str | bytes | bytearray) -> tuple[Any, bool]:
    """Parse JSON, or JSON Lines (one value per non-blank line); returns ``(data, is_jsonl)``.

    JSON Lines come back as a list (a lone message object counts as one line of JSON Lines).
    A leading UTF-8 byte order mark (what some Windows editors write) is skipped. Raises
    :class:`FormatError` naming the line for neither, and for JSON nested too deeply to read.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"not UTF-8 text (byte {e.start})") from None
    text = text.removeprefix(_BOM)
    try:
        return _parse_json(text)
    except RecursionError:
        raise FormatError(
            f"JSON nested too deeply to read (more than about {sys.getrecursionlimit()} levels)"
        ) from None


def _parse_json(text: str) -> tuple[Any, bool]:
    try:
        data = json.loads(text)
    except ValueError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            raise FormatError(f"not JSON: {whole}") from None
        out = []
        for n, line in lines:
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise FormatError(f"neither JSON nor JSON Lines: line {n}: {e}") from None
        return out, True
    if (
        isinstance(data, dict)
        and ("role" in data or "type" in data)
        and not ("messages" in data or "input" in data)
    ):
        return [data], True  # JSON Lines with a single message
    return data, False


_RESPONSES_ITEMS = frozenset({"message", "function_call", "function_call_output", "reasoning"})
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image"})
#: Anthropic's own block types: thinking, and every row of its provider table that no other
#: format has (server tools, documents, search results...).
_ANTHROPIC_PARTS = frozenset({"thinking", "redacted_thinking"}) | (
    frozenset(SPECS["anthropic"]).difference(
        {"image"}, *(SPECS[f] for f in SPECS if f != "anthropic")
    )
)


#: What a message's role says of its format (``system`` only counts next to blocks), and
#: what a key it has says.
_ROLE_MARKERS: dict[object, str] = {
    "tool": "openai",
    "developer": "openai",
    "function": "openai",
    "model": "gemini",
    "system": "system_role",
}
_KEY_MARKERS = {
    "tool_calls": "openai",
    "parts": "gemini",
    "turn": "ctxtrim",
    "usage": "ctxtrim",
    "meta": "ctxtrim",
}


def detect(data: Any) -> str:
    """Guess the format of a parsed payload: ``"openai"``, ``"responses"``, ``"anthropic"``,
    ``"gemini"`` or ``"ctxtrim"``. Raises :class:`FormatError` when nothing fits.

    Rules, first match wins: a ``{"contents": [...]}`` body, or contents with ``parts`` (or
    the ``model`` role) → gemini; Responses item types (``function_call``, ``reasoning``...) or
    parts (``input_text``...) → responses; ``tool_calls``, a ``tool``/``developer`` role or
    ``image_url`` parts → openai; a top-level ``{"system", "messages"}``, ``thinking`` blocks,
    base64 ``source`` images or a block type only Anthropic has (``server_tool_use``,
    ``document``...) → anthropic; ctxtrim's own keys (``turn``, ``usage``,
    ``meta``, ``reasoning`` blocks, images with ``media_type``) or a ``system`` role next to
    content blocks → ctxtrim; other ``tool_use``/``tool_result`` blocks → anthropic; plain
    ``{"role", "content"}`` messages → openai.
    """
    if isinstance(data, dict):
        if "contents" in data and "messages" not in data:
            return "gemini"
        if "input" in data and "messages" not in data:
            return "responses"
        if "messages" not in data:
            raise FormatError(
                "cannot detect the format: expected a list of messages or an "
                "object with 'messages' (or 'input', or 'contents')"
            )
        if "system" in data:
            return "anthropic"
        data = data["messages"]
    if not isinstance(data, list):
        raise FormatError(
            f"cannot detect the format: expected a list of messages, got {tname(data)}"
        )
    seen: set[str] = set()  # the markers found anywhere; priority decides below
    # One pass with a few dict lookups an item (it runs on every strategy call given dicts).
    for item in data:
        if not isinstance(item, dict):
            continue
        if item.get("type") in _RESPONSES_ITEMS:
            seen.add("responses")
        marker = _ROLE_MARKERS.get(item.get("role"))
        if marker is not None:
            seen.add(marker)
        if not item.keys().isdisjoint(_KEY_MARKERS):
            seen.update(_KEY_MARKERS[k] for k in item.keys() & _KEY_MARKERS.keys())
        content = item.get("content")
        if type(content) is not list:
            continue
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind in _RESPONSES_PARTS:
                seen.add("responses")
            elif kind == "image_url":
                seen.add("openai")
            elif kind in _ANTHROPIC_PARTS or (kind == "image" and "source" in part):
                seen.add("anthropic")
            elif kind == "reasoning" or (kind == "image" and "media_type" in part):
                seen.add("ctxtrim")
            elif kind in ("tool_use", "tool_result"):
                seen.add("blocks")
                inner = part.get("content")
                if kind == "tool_result" and type(inner) is list:
                    # An image in a result says whose shape it is, as one in a message does.
                    for sub in inner:
                        if isinstance(sub, dict) and sub.get("type") == "image":
                            seen.add("anthropic" if "source" in sub else "ctxtrim")
    for name in ("gemini", "responses", "openai", "anthropic", "ctxtrim"):
        if name in seen:
            return name
    if "blocks" in seen:
        return "ctxtrim" if "system_role" in seen else "anthropic"
    return "openai"


def load(data: Any, format: str = "auto", *, raw_arguments: bool = False) -> list[Message]:
    """A conversation in ``format`` → messages.

    ``data`` is a parsed payload (list or dict) or JSON / JSON Lines text (``str`` or
    ``bytes``). ``format="auto"`` uses :func:`detect`. ``raw_arguments`` keeps tool-call
    arguments that are not a JSON object (OpenAI formats) as ``{RAW_ARGUMENTS: text}``
    instead of raising :class:`InvalidToolArguments`.
    """
    name = _name(format, auto=True)
    if isinstance(data, (str, bytes, bytearray)):
        data, _ = parse_json(data)
    if name == "auto":
        name = detect(data)
    if name == "openai":
        return from_openai_chat(data, raw_arguments=raw_arguments)
    if name == "responses":
        return from_openai_responses(data, raw_arguments=raw_arguments)
    return _FROM[name](data)


def dump(messages: Sequence[Message], format: str) -> Any:
    """Messages → the JSON-ready payload of ``format`` (a list; a dict for ``"anthropic"``
    and ``"gemini"``)."""
    return _TO[_name(format, auto=False)](messages)


def dump_json(messages: Sequence[Message], format: str) -> bytes:
    """Messages → :func:`dump`'s payload as JSON bytes, for servers that post raw bodies:
    ``to_<format>_json`` (the messages' kept renderings joined, nothing decoded)."""
    return _TO_JSON[_name(format, auto=False)](messages)


def _to_ctxtrim_json(messages: Sequence[Message]) -> bytes:
    return msgspec.json.encode(to_ctxtrim(messages))


_TO_JSON: dict[str, Callable[[Sequence[Message]], bytes]] = {
    "openai": to_openai_chat_json,
    "responses": to_openai_responses_json,
    "anthropic": to_anthropic_json,
    "gemini": to_gemini_json,
    "ctxtrim": _to_ctxtrim_json,
}

#: The formats whose request a log writes from the one it wrote last (``log_json`` of the
#: format's module: the messages' kept renderings joined, the leading system messages apart
#: for Anthropic); Gemini's regroups the messages and the ctxtrim format has no renderings.
_LOG_JSON: dict[str, Callable[[MessageLog, CutRule], bytes]] = {
    "openai": openai_chat.log_json,
    "responses": openai_responses.log_json,
    "anthropic": anthropic.log_json,
}


def log_writer(format: str) -> Callable[[MessageLog, CutRule], bytes] | None:
    """How a log writes ``format``'s request of a cut strategy's window from the one it wrote
    last, if it can (``_LOG_JSON``); FormatError for an unknown format."""
    return _LOG_JSON.get(_name(format, auto=False))
