"""The message model: content blocks, :class:`Message` and :class:`Usage`.

Messages are `msgspec <https://jcristharif.com/msgspec/>`_ Structs. Invariants:

* **Immutable, all the way down.** Every struct is ``frozen``; ``Message.content`` and
  ``ToolResultBlock.content`` are stored as tuples (a list given at construction is turned into
  a tuple), and the dict values (``ToolUseBlock.input``, ``Message.meta``) are copied in as
  :class:`FrozenDict` / :class:`FrozenList` (dict and list subclasses whose mutators raise),
  because forks, snapshots and the cached facts of every message share them: changing the
  caller's dict afterwards changes no message, and nothing reachable from a message can change.
* **Validated at construction.** ``__post_init__`` runs on ``Message(...)``, on every
  constructor, on ``from_dict`` / ``decode`` and on ``msgspec.structs.replace``. Bad input raises
  :class:`ctxtrim.errors.InvalidMessage` (a ``ValueError``) whose ``path`` names the field,
  relative to the object being built: ``"input"`` for a lone ``ToolUseBlock``,
  ``"content[2].input"`` for a message, ``"messages[3].content[0].tool_use_id"`` for
  :func:`decode_messages`. A valid message therefore always encodes, and every string in it is
  valid UTF-8 (no lone surrogates).
* **Lossless round trips.** ``Message.from_dict(m.to_dict()) == m`` and
  ``Message.decode(m.encode()) == m`` for every message; ``bytes`` travel as base64 strings.
  Fields equal to their default are omitted from dicts and JSON.

The public dict/JSON shape (stable; a test pins it)::

    {"role": "assistant",
     "content": [{"type": "text", "text": "Checking."},
                 {"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "/"}}],
     "turn": "a1",
     "usage": {"input_tokens": 12, "output_tokens": 7}}

Rules beyond field types:

* ``role`` is ``"system"``, ``"user"`` or ``"assistant"``. Tool results travel in user
  messages (Anthropic's model), so ``ToolResultBlock`` is only allowed in user messages,
  ``ToolUseBlock`` and ``ReasoningBlock`` only in assistant messages, and system messages hold
  only ``TextBlock`` — and ``ProviderBlock``, which goes in the role its format's table names
  (:data:`ctxtrim.provider.SPECS`: a server tool's call and result in an assistant message, a
  computer-use screenshot in a user message, a developer directive in a system message).
* ``Message(...)`` itself takes a list or tuple of blocks; a bare string is accepted only by
  the convenience constructors (:meth:`Message.user` and friends), where ``""`` means no block.
* ``ImageBlock.media_type`` is exactly one of :data:`IMAGE_MEDIA_TYPES` (lower-case full MIME
  types; short forms such as ``"png"`` are rejected rather than normalised, so what you store is
  what you get back). ``data`` must be ``bytes``.
* ``ToolUseBlock.input`` and ``Message.meta`` must be dicts that survive a JSON round trip
  unchanged: string keys; values ``dict``/``list``/``str``/``int``/finite ``float``/``bool``/
  ``None``. Tuples, sets, bytes, NaN and infinity, datetimes, structs are rejected (they would
  come back as something else).
* Tool-use ids, tool names, ``tool_use_id`` and ``Message.id``/``name`` are non-empty strings;
  ``turn`` is a turn id ``"u<n>"`` / ``"a<n>"`` (``n`` a decimal ``u32``); usage counts are
  non-negative ``int`` (not ``bool``).
* Blocks are checked by exact type (no subclasses), since only these types decode back.
* Unknown keys in dicts/JSON are ignored (a newer writer's extra field does not break an older
  reader), while unknown block types, unknown roles, missing and ill-typed fields are errors.

Conveniences: ``Message.text`` joins the text blocks with no separator; ``Message.tool_results``
is the constructor when called on the class and the tuple of result blocks on an instance.
Structs are ``gc=False`` (no reference cycle can run through a valid message: its dicts and
lists are frozen copies of plain JSON, themselves untracked by the cyclic GC) and hashable only
when no ``dict`` field (``input``, ``meta``) is set. What is read or rendered from a
:class:`Message` is kept in slots (:data:`CACHE_SLOTS`), not an instance ``__dict__``, so that
it can be ``gc=False`` too.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, overload

import msgspec
from msgspec.structs import force_setattr

from . import _core
from . import provider as _provider
from ._checks import (
    _JSON_DECODE,
    FrozenDict,
    FrozenList,
    _check_nonempty_str,
    _check_opt_str,
    _from_msgspec,
    _frozen_json_dict,
    _prefixed,
    _tname,
)
from .blocks import (
    _ALLOWED,
    _BLOCK_TYPES,
    IMAGE_MEDIA_TYPES,
    Block,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    block_from_dict,
    block_to_dict,
    pair_sides,
)
from .errors import InvalidMessage

__all__ = [
    "IMAGE_MEDIA_TYPES",
    "Block",
    "FrozenDict",
    "FrozenList",
    "ImageBlock",
    "Message",
    "ProviderBlock",
    "ReasoningBlock",
    "Role",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Usage",
    "block_from_dict",
    "block_to_dict",
    "decode_messages",
    "encode_messages",
]

Role: TypeAlias = Literal["system", "user", "assistant"]

_ROLES = frozenset({"system", "user", "assistant"})
_TURN_RE = re.compile(r"[ua][0-9]+")
_U32_MAX = 2**32 - 1


# --------------------------------------------------------------------------------------------
# Pairs


def pair_ids(message: Message) -> tuple[list[str], list[str]]:
    """``(calls, results)``: the ids ``message`` issues and answers (see :func:`pair_sides`)."""
    calls: list[str] = []
    results: list[str] = []
    for side, i in pair_sides(message.content):
        if i is not None:
            (calls if side == "call" else results).append(i)
    return calls, results


# --------------------------------------------------------------------------------------------
# Usage


class Usage(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """Token usage a provider reported for the call that produced an assistant message."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model: str | None = None
    finish_reason: str | None = None

    def __post_init__(self) -> None:
        for field in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            value = getattr(self, field)
            if type(value) is not int:
                raise InvalidMessage(f"expected int, got {_tname(value)}", field)
            if value < 0:
                raise InvalidMessage(f"must not be negative, got {value}", field)
        _check_opt_str(self.model, "model")
        _check_opt_str(self.finish_reason, "finish_reason")


# --------------------------------------------------------------------------------------------
# Message


#: The slot of the counts that counters asked of a provider keep on a message (a dict of
#: ints, one key per counter object; see ``ctxtrim.tokens.AnthropicTokenCounter``).
COUNTS_SLOT = "_ctxtrim_counts"

#: Each provider format's kept rendering of a message: its objects, and their JSON once asked
#: for (``..._json``).
RENDERING_SLOTS = (
    "_ctxtrim_anthropic",
    "_ctxtrim_anthropic_json",
    "_ctxtrim_openai_chat",
    "_ctxtrim_openai_chat_json",
    "_ctxtrim_openai_responses",
    "_ctxtrim_openai_responses_json",
    "_ctxtrim_gemini",
    "_ctxtrim_gemini_json",
)

#: The caches a store's trimming releases once its windows have left a message behind: the
#: facts the core read (``_ctxtrim_facts``; its log keeps its own copy) and the renderings.
#: Each is made again, the same, if something reads the message again. The provider counts
#: stay: they may have cost a request.
RELEASABLE_SLOTS = ("_ctxtrim_facts", *RENDERING_SLOTS)

#: The per-message caches: :data:`RELEASABLE_SLOTS` and the provider counts. Slots, not
#: fields: never encoded, compared, hashed or copied.
CACHE_SLOTS = (*RELEASABLE_SLOTS, COUNTS_SLOT)


class _Caches:
    """The slots a :class:`Message` keeps what is read or rendered from it in (see
    :data:`CACHE_SLOTS`). A slot, rather than an instance ``__dict__``, lets the struct be
    ``gc=False``: a server holding millions of messages gives the cyclic GC nothing to walk.
    An unset slot raises ``AttributeError``; read it with ``getattr(m, name, None)``."""

    __slots__ = CACHE_SLOTS


def drop_caches(message: Message, names: Iterable[str] = CACHE_SLOTS) -> None:
    """Forget what was read or rendered from ``message`` (for benchmarks timing a first read;
    the caches are never stale, a message being immutable): the slots ``names``, by default
    all of :data:`CACHE_SLOTS`. Dropping an unset slot costs a raised ``AttributeError``, so a
    benchmark that re-renders in a loop names the one slot it set."""
    for name in names:
        try:
            _Caches.__dict__[name].__delete__(message)
        except AttributeError:  # not set
            pass


class _MessageOptions(
    _Caches, msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False
):
    """The keyword-only optional fields of :class:`Message` (a base class so that ``role`` and
    ``content`` can stay positional)."""

    id: str | None = None
    turn: str | None = None
    name: str | None = None
    usage: Usage | None = None
    meta: dict[str, Any] | None = None


def _coerce_content(content: object) -> object:
    """For the convenience constructors: a str becomes one TextBlock ('' none), str items of a
    list become TextBlocks; anything else is left for ``Message`` to judge."""
    if type(content) is str and content:  # the common case first
        try:
            return (TextBlock(content),)
        except InvalidMessage as e:
            raise _prefixed(e, "content[0]") from None
    if isinstance(content, str):
        if not content:
            return ()
        try:
            return (TextBlock(content),)
        except InvalidMessage as e:
            raise _prefixed(e, "content[0]") from None
    if isinstance(content, (list, tuple)):
        out = []
        for i, item in enumerate(content):
            if isinstance(item, str):
                try:
                    item = TextBlock(item)
                except InvalidMessage as e:
                    raise _prefixed(e, f"content[{i}]") from None
            out.append(item)
        return tuple(out)
    if type(content) in _BLOCK_TYPES:
        return (content,)
    raise InvalidMessage(
        f"expected a str, a block, or a list of blocks and strs, got {_tname(content)}", "content"
    )


def _tool_use_from_dict(call: dict[str, Any], path: str) -> ToolUseBlock:
    """A tool call given as a dict: ``{"id", "name", "input"}`` (a ``tool_use`` block's
    keys, ``"type"`` optional), or an error that says what a provider's call dict needs."""
    if call.get("type", "tool_use") == "tool_use" and {"id", "name", "input"} <= call.keys():
        try:
            return ToolUseBlock(call["id"], call["name"], call["input"])
        except InvalidMessage as e:
            raise _prefixed(e, path) from None
    kind = "an OpenAI Chat tool call" if "function" in call else "a dict"
    raise InvalidMessage(
        f"expected (id, name, input), a ToolUseBlock or a dict with id, name and input; got "
        f"{kind} with keys {', '.join(map(repr, call))} (ctxtrim.formats.from_openai_chat "
        "reads whole Chat messages)",
        path,
    )


# The Python constructors: every form, every error named (see the core's fast ones).


def _user(
    cls: type[Message],
    content: str | Block | Sequence[Block | str],
    *,
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    usage: Usage | None = None,
    meta: dict[str, Any] | None = None,
) -> Message:
    """:meth:`Message.user` in every form, naming any problem."""
    blocks = _coerce_content(content)
    if id is None and turn is None and name is None and usage is None and meta is None:
        return cls("user", blocks)  # type: ignore[arg-type]
    return cls("user", blocks, id=id, turn=turn, name=name, usage=usage, meta=meta)  # type: ignore[arg-type]


def _system(
    cls: type[Message],
    content: str | Sequence[TextBlock | str],
    *,
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Message:
    """A system message from a string (or a sequence of text blocks/strings)."""
    return cls(
        "system",
        _coerce_content(content),  # type: ignore[arg-type]
        id=id,
        turn=turn,
        name=name,
        meta=meta,
    )


def _assistant(
    cls: type[Message],
    content: str | Block | Sequence[Block | str] | None = "",
    *,
    tool_uses: Iterable[ToolUseBlock | tuple[str, str, dict[str, Any]] | dict[str, Any]] = (),
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    usage: Usage | None = None,
    meta: dict[str, Any] | None = None,
) -> Message:
    """:meth:`Message.assistant` in every form, naming any problem."""
    blocks = _coerce_content("" if content is None else content)
    if not tool_uses or not isinstance(blocks, tuple):
        if id is None and turn is None and name is None and usage is None and meta is None:
            return cls("assistant", blocks)  # type: ignore[arg-type]
        return cls("assistant", blocks, id=id, turn=turn, name=name, usage=usage, meta=meta)  # type: ignore[arg-type]
    calls = []
    for j, call in enumerate(tool_uses, start=len(blocks)):
        if type(call) is tuple:
            if len(call) != 3:
                raise InvalidMessage(
                    f"a tool call tuple must be (id, name, input), got {len(call)} items",
                    f"content[{j}]",
                )
            try:
                call = ToolUseBlock(*call)
            except InvalidMessage as e:
                raise _prefixed(e, f"content[{j}]") from None
        elif isinstance(call, dict):
            call = _tool_use_from_dict(call, f"content[{j}]")
        calls.append(call)
    return cls(
        "assistant",
        blocks + tuple(calls),
        id=id,
        turn=turn,
        name=name,
        usage=usage,
        meta=meta,
    )


def _tool_results(
    cls: type[Message],
    *results: ToolResultBlock
    | tuple[str, str | Sequence[TextBlock | ImageBlock]]
    | tuple[str, str | Sequence[TextBlock | ImageBlock], bool],
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> Message:
    """:meth:`Message.tool_results` in every form, naming any problem."""
    items: Sequence[object] = results
    if len(results) == 1 and isinstance(results[0], list):
        items = results[0]
    blocks: list[Any] = []
    for i, result in enumerate(items):
        if type(result) is tuple:
            if len(result) not in (2, 3):
                raise InvalidMessage(
                    "a tool result tuple must be (tool_use_id, content[, is_error]), "
                    f"got {len(result)} items",
                    f"content[{i}]",
                )
            try:
                result = ToolResultBlock(*result)
            except InvalidMessage as e:
                raise _prefixed(e, f"content[{i}]") from None
        blocks.append(result)
    if id is None and turn is None and name is None and meta is None:
        return cls("user", tuple(blocks))
    return cls("user", tuple(blocks), id=id, turn=turn, name=name, meta=meta)


def _get_tool_results(self: Message) -> tuple[ToolResultBlock, ...]:
    return tuple([b for b in self.content if type(b) is ToolResultBlock])


# A wrong keyword's TypeError names the method the caller called, not the function behind it.
for _function, _name in ((_user, "user"), (_system, "system"), (_assistant, "assistant")):
    _function.__qualname__ = f"Message.{_name}"
_tool_results.__qualname__ = "Message.tool_results"


class _ToolResults:
    """``Message.tool_results``: a constructor on the class, a property on an instance."""

    def __init__(self, make: Callable[..., Message], get: Callable[[Message], Any]) -> None:
        self._make = make
        self._get = get
        self._bound: dict[type[Message] | None, Callable[..., Message]] = {}
        self.__doc__ = make.__doc__

    @overload
    def __get__(self, obj: None, owner: type[Message]) -> Callable[..., Message]: ...
    @overload
    def __get__(
        self, obj: Message, owner: type[Message] | None = None
    ) -> tuple[ToolResultBlock, ...]: ...
    def __get__(
        self, obj: Message | None, owner: type[Message] | None = None
    ) -> Callable[..., Message] | tuple[ToolResultBlock, ...]:
        if obj is None:
            bound = self._bound.get(owner)
            if bound is None:  # made once per class, not on every call
                bound = self._bound[owner] = types.MethodType(self._make, owner)
            return bound
        return self._get(obj)  # type: ignore[no-any-return]


class Message(_MessageOptions, frozen=True):
    """One message of a conversation.

    ``Message(role, content, *, id=None, turn=None, name=None, usage=None, meta=None)``:
    ``content`` is a list or tuple of blocks (stored as a tuple); ``id`` is an optional caller
    id, ``turn`` a turn id such as ``"u3"``, ``name`` an optional speaker name, ``usage`` the
    provider's reported usage, ``meta`` a plain-JSON dict for the caller's own data. Prefer the
    constructors :meth:`user`, :meth:`assistant`, :meth:`system` and :meth:`tool_results`.
    """

    role: Role
    content: tuple[Block, ...]

    # The facts the core read from this message (role, tool ids, tokens) are kept in the
    # ``_ctxtrim_facts`` slot the first time anything asks, so a message is read once however
    # many histories hold it (unset until then; not a field: never encoded or compared).

    # Every check at once in the core, ``meta`` frozen, no Python frame; ``_check`` names the
    # problem (or normalises a rarer form, such as a list of blocks).
    __post_init__ = _core.message_post_init  # type: ignore[misc]  # a function of the core, not a method

    def _check(self) -> None:
        role = self.role
        if not isinstance(role, str) or role not in _ROLES:
            raise InvalidMessage(
                f"unknown role {role!r}; expected 'system', 'user' or 'assistant'", "role"
            )
        content: object = self.content
        if type(content) is not tuple:
            if type(content) is list:
                content = tuple(content)
                force_setattr(self, "content", content)
            else:
                hint = " (use Message.user(text) etc. for a plain string)" * isinstance(
                    content, str
                )
                raise InvalidMessage(
                    f"expected a list or tuple of blocks, got {_tname(content)}{hint}", "content"
                )
        allowed = _ALLOWED[role]
        for i, block in enumerate(content):
            if type(block) not in allowed:
                if type(block) in _BLOCK_TYPES:
                    reason = f"a {_tname(block)} is not allowed in a {role} message"
                else:
                    reason = f"expected a content block, got {_tname(block)}"
                raise InvalidMessage(reason, f"content[{i}]")
            if type(block) is ProviderBlock:
                problem = _provider.misplaced(block, role)
                if problem:
                    raise InvalidMessage(problem, f"content[{i}]")
        if self.id is not None:
            _check_nonempty_str(self.id, "id")
        turn = self.turn
        if turn is not None:
            if not isinstance(turn, str):
                raise InvalidMessage(f"expected str, got {_tname(turn)}", "turn")
            if not _TURN_RE.fullmatch(turn) or int(turn[1:]) > _U32_MAX:
                raise InvalidMessage(
                    f"invalid turn id {turn!r}; expected 'u<number>' or 'a<number>'", "turn"
                )
        if self.name is not None:
            _check_nonempty_str(self.name, "name")
        if self.usage is not None and type(self.usage) is not Usage:
            raise InvalidMessage(f"expected Usage, got {_tname(self.usage)}", "usage")
        if self.meta is not None:
            frozen = _frozen_json_dict(self.meta, "meta")
            if frozen is not self.meta:
                force_setattr(self, "meta", frozen)

    # -- properties ---------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The texts of the ``TextBlock``\\ s, concatenated with no separator (``""`` if none)."""
        return "".join([b.text for b in self.content if type(b) is TextBlock])

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        """The tool calls in this message, in order."""
        return tuple([b for b in self.content if type(b) is ToolUseBlock])

    @property
    def has_tool_uses(self) -> bool:
        """Whether this message issues at least one tool call."""
        return any(type(b) is ToolUseBlock for b in self.content)

    @property
    def is_real_user(self) -> bool:
        """A user message with at least one block that is not a tool result (it starts a turn).

        A provider block counts as its format's table says, as the core reads it: a document
        or audio part opens a turn, a client tool's output (``computer_call_output``...) is
        a result and does not."""
        return self.role == "user" and any(
            type(b) is not ToolResultBlock and (type(b) is not ProviderBlock or b._facts()[2])
            for b in self.content
        )

    def is_user(self) -> bool:
        """Whether the role is ``"user"`` (tool results included: they travel in user
        messages, as in agent-air), for code ported from the seed frameworks that asks
        ``is_user()``; :attr:`is_real_user` leaves results out. ``TurnId.is_user_turn()``
        asks the same of a turn id."""
        return self.role == "user"

    def is_assistant(self) -> bool:
        """Whether the role is ``"assistant"`` (the seeds' ``is_assistant()``)."""
        return self.role == "assistant"

    # -- constructors -------------------------------------------------------------------------

    # The constructors run in the core for their common forms (a ``str``, tuples, the documented
    # keywords) and hand anything else, and any error, to the Python ones below (``_user``...).
    if TYPE_CHECKING:  # their signatures, for type checkers and editors

        @classmethod
        def user(
            cls,
            content: str | Block | Sequence[Block | str],
            *,
            id: str | None = None,
            turn: str | None = None,
            name: str | None = None,
            usage: Usage | None = None,
            meta: dict[str, Any] | None = None,
        ) -> Message:
            """A user message from a string or a sequence of blocks (strings become text
            blocks)."""

        @classmethod
        def assistant(
            cls,
            content: str | Block | Sequence[Block | str] | None = "",
            *,
            tool_uses: Iterable[
                ToolUseBlock | tuple[str, str, dict[str, Any]] | dict[str, Any]
            ] = (),
            id: str | None = None,
            turn: str | None = None,
            name: str | None = None,
            usage: Usage | None = None,
            meta: dict[str, Any] | None = None,
        ) -> Message:
            """An assistant message: its text (or blocks; ``None`` is no text), then the tool
            calls in ``tool_uses``, each a :class:`ToolUseBlock` or an ``(id, name, input)``
            tuple."""

    else:
        user = classmethod(_core.message_user)
        assistant = classmethod(_core.message_assistant)
    system = classmethod(_system)

    #: On the class, the constructor ``Message.tool_results(*results, ...)``; on an instance,
    #: the tuple of its ``ToolResultBlock``\ s (both names are in the contract).
    tool_results = _ToolResults(_core.message_tool_results, _get_tool_results)

    # -- dicts and JSON ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The public dict shape: a fresh JSON-ready dict (lists, bytes as base64, defaults
        omitted)."""
        # Through JSON rather than ``msgspec.to_builtins``, which would keep tuples as tuples.
        return _JSON_DECODE(_ENCODER.encode(self))  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Any) -> Message:
        """Build and validate a message from :meth:`to_dict`'s shape (base64 or raw bytes)."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as e:
            raise _with_format_hint(_from_msgspec(e, ""), data) from None

    def encode(self) -> bytes:
        """This message as JSON bytes."""
        return _ENCODER.encode(self)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Message:
        """Parse and validate one message from JSON."""
        try:
            return _MESSAGE_DECODER.decode(data)
        except msgspec.ValidationError as e:
            raise _with_format_hint(_from_msgspec(e, ""), _JSON_DECODE(data)) from None
        except msgspec.DecodeError as e:
            raise InvalidMessage(f"invalid JSON: {e}", "") from None


#: What a provider's message is called, and the converter that reads it, by format name.
_PROVIDER_READERS = {
    "openai": ("OpenAI Chat Completions", "from_openai_chat"),
    "responses": ("OpenAI Responses", "from_openai_responses"),
    "anthropic": ("Anthropic", "from_anthropic"),
}


def _with_format_hint(err: InvalidMessage, data: object) -> InvalidMessage:
    """``err`` with a pointer to the converter, when ``data`` is a provider's message rather
    than ctxtrim's own dict (only ever run on an error)."""
    from ctxtrim import formats  # formats imports this module

    try:
        fmt = formats.detect([data]) if isinstance(data, dict) else "ctxtrim"
    except Exception:  # no guess: the error as it is
        return err
    if fmt not in _PROVIDER_READERS:
        return err
    title, reader = _PROVIDER_READERS[fmt]
    return InvalidMessage(
        f"{err.reason} (this looks like an {title} message, not ctxtrim's "
        f"own dict: ctxtrim.formats.{reader} reads it, and strategies, validate and repair "
        "take a list of them as it is)",
        err.path,
    )


# --------------------------------------------------------------------------------------------
# Codecs


_ENCODER = msgspec.json.Encoder()
_MESSAGE_DECODER = msgspec.json.Decoder(Message)
_MESSAGES_DECODER = msgspec.json.Decoder(list[Message])


def encode_messages(messages: Iterable[Message]) -> bytes:
    """Messages as one JSON array."""
    items = messages if type(messages) is list else list(messages)
    for i, m in enumerate(items):
        if type(m) is not Message:
            raise InvalidMessage(f"expected a Message, got {_tname(m)}", f"messages[{i}]")
    return _ENCODER.encode(items)


def decode_messages(data: bytes | bytearray | memoryview | str) -> list[Message]:
    """Parse and validate a JSON array of messages (paths are ``messages[i]...``)."""
    try:
        return _MESSAGES_DECODER.decode(data)
    except msgspec.ValidationError as e:
        raise _from_msgspec(e, "messages") from None
    except msgspec.DecodeError as e:
        raise InvalidMessage(f"invalid JSON: {e}", "messages") from None
