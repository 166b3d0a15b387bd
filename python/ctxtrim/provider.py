"""What ctxtrim knows of each provider block and item it keeps verbatim: one table per format.

A :class:`~ctxtrim.messages.ProviderBlock` holds a provider's dict exactly as it arrived (a
server-side tool call, an MCP result, a document, an image behind a URL, a compaction item...).
Its row in :data:`SPECS`, keyed by ``(format, wire type)``, says everything ctxtrim needs of it:

* ``side``: which message role carries it (``"assistant"`` for what the model produced,
  ``"user"`` for what the client sends, ``"system"`` for developer directives, ``"any"``);
* ``pair`` and ``id_key``: whether it is one half of a call/result pair (``"call"`` /
  ``"result"``) and where the pairing id is. The pair-safe index pairs these ids exactly as it
  pairs ``ToolUseBlock.id`` with ``ToolResultBlock.tool_use_id``, so no cut, strategy or
  drop-in ever separates a ``computer_call`` from its ``computer_call_output`` or a
  ``mcp_approval_request`` from its response. A call and its result inside the same message
  (Anthropic's ``server_tool_use`` and its ``*_tool_result``) pair within that message;
* ``level``: for the formats whose content is nested, whether the block is a content part of a
  message (``"part"``), a conversation item of its own (``"item"``, Responses), an entry of an
  assistant message's ``tool_calls`` (``"tool_call"``, Chat), a field of that message
  (``"field"``, Chat's legacy ``function_call``) or a whole message (``"message"``, Chat's
  legacy ``function`` role);
* ``price``: how it counts toward a budget. ``"json"``: its JSON less the ``opaque`` keys
  (encrypted or base64 payloads no model reads as text) is estimated as text; ``"image"``: one
  image at the flat image price (an image behind a URL or a file id, whose size is unknown);
  ``"document"``: a PDF by its pages (:data:`PDF_PAGE_TOKENS` each), a text document by its text;
  ``"media"``: Gemini's ``inline_data`` / ``file_data`` by their MIME type: an image at the
  flat image price, a PDF by its pages, text by its text, anything else (audio, video, a
  file behind a URI) :data:`UNKNOWN_DOCUMENT_TOKENS`; ``"none"``: nothing (a marker the
  model never reads);
* ``compaction``: the block is a provider's summary of everything before it;
* ``partner``: the wire type of the other half of a pair, where there is one.

Invariant: every wire type of the official SDKs' unions (anthropic ``BetaContentBlockParam``
and ``BetaContentBlock``, openai ``ResponseInputItem`` with its content parts, Chat
Completions' message, part and tool-call unions, every field of google-genai's ``Part``) is
modelled or has a row; ``tests/formats/test_sdk_members.py``
generates every member from the installed SDKs and fails on one without a row. A type with no
row (newer than the table) is kept verbatim when it has no id field (``id``, ``call_id``,
``tool_use_id``...), as content of the message it arrived in; one with an id field may be half
of a pair the table does not know, so the readers refuse it, naming the type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from . import _core

if TYPE_CHECKING:
    # ``Spec`` is a dataclass defined in ``ctxtrim._records`` (``import ctxtrim`` loads no
    # dataclasses); it and the tables of its rows are made on first use (``_specs``).
    from ._records import Spec as Spec
    from .messages import ProviderBlock

    #: The tables, by format and wire type.
    SPECS: Mapping[str, Mapping[str, Spec]]
    #: A type with no row, and no id field: content of the message it arrived in.
    UNKNOWN: Spec

__all__ = [
    "FORMATS",
    "PDF_PAGE_TOKENS",
    "SPECS",
    "UNKNOWN_DOCUMENT_TOKENS",
    "Spec",
    "facts",
    "misplaced",
    "price",
    "spec_of",
    "wire_type",
]

#: The formats a provider block can come from (the ``Message.meta`` keys of their records).
FORMATS = frozenset({"anthropic", "openai_chat", "openai_responses", "gemini"})

#: The price of one PDF page, text and page image together: Anthropic documents 1,500 to
#: 3,000 tokens a page for text plus the page's image; the middle is taken.
PDF_PAGE_TOKENS = 2_000

Side = Literal["user", "assistant", "system", "any"]
Pair = Literal["call", "result", ""]
Level = Literal["part", "item", "tool_call", "field", "message"]
Price = Literal["json", "image", "document", "media", "none"]


#: The fields of a Gemini part that hold its data, first found first: its wire type.
GEMINI_DATA_FIELDS = (
    "function_call",
    "function_response",
    "executable_code",
    "code_execution_result",
    "tool_call",
    "tool_response",
    "inline_data",
    "file_data",
    "text",
)

#: The keys that may hold a pairing id, for a type with no row (see the module docstring).
ID_KEYS = ("id", "call_id", "tool_use_id", "tool_call_id", "approval_request_id")

#: ``SPECS``, filled on first use (by ``_specs``): the rows are dataclasses, and a process
#: that reads no provider block never makes them.
_SPECS: dict[str, Mapping[str, Spec]] = {}


def _specs() -> dict[str, Mapping[str, Spec]]:
    """:data:`SPECS`, made on the first call; ``SPECS``, ``UNKNOWN`` and ``Spec`` are plain
    module attributes from then on."""
    if _SPECS:
        return _SPECS
    from ._records import Spec

    tables = _rows(Spec)
    # The attributes first, the table last: a thread that finds ``_SPECS`` filled finds them.
    globals().update(Spec=Spec, UNKNOWN=Spec("any"), SPECS=_SPECS)
    _SPECS.update(tables)
    return _SPECS


def __getattr__(name: str) -> Any:
    if name in ("SPECS", "UNKNOWN", "Spec"):
        _specs()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rows(_S: type[Spec]) -> dict[str, dict[str, Spec]]:
    """The tables' rows, by format and wire type."""
    # Anthropic: every block is a content block of a message. Server-side tools and MCP answer in
    # the same assistant message as their call.
    _ANTHROPIC: dict[str, Spec] = {
        "image": _S("user", price="image"),  # kept verbatim for url and file sources
        "document": _S("user", price="document"),
        "search_result": _S("user"),
        # in a tool_result's content: a tool the result makes available, a browser's state
        "tool_reference": _S("user"),
        "browser_state": _S("user"),
        "container_upload": _S("user"),
        "tool_addition": _S("any"),
        "tool_removal": _S("any"),
        # server_tool_use's result type depends on the tool (its ``name``): no one partner.
        "server_tool_use": _S("assistant", "call", "id"),
        "mcp_tool_use": _S("assistant", "call", "id", partner="mcp_tool_result"),
        **{
            result: _S("assistant", "result", "tool_use_id", partner="server_tool_use")
            for result in (
                "web_fetch_tool_result",
                "advisor_tool_result",
                "code_execution_tool_result",
                "bash_code_execution_tool_result",
                "text_editor_code_execution_tool_result",
                "tool_search_tool_result",
            )
        },
        # Its results carry encrypted page content the model reads only through citations.
        "web_search_tool_result": _S(
            "assistant", "result", "tool_use_id", opaque=("content",), partner="server_tool_use"
        ),
        "mcp_tool_result": _S("assistant", "result", "tool_use_id", partner="mcp_tool_use"),
        "mcp_tool_listing": _S("assistant"),
        "fallback": _S("assistant", price="none"),
        "compaction": _S("assistant", opaque=("encrypted_content", "signature"), compaction=True),
    }

    # OpenAI Responses: conversation items (``level="item"``) and message content parts. Hosted
    # tools whose item holds its own result (web search, file search, code interpreter, image
    # generation, MCP calls and listings) pair with nothing.
    _ITEM: Level = "item"
    _RESPONSES: dict[str, Spec] = {
        # content parts of a message or a function_call_output
        "input_image": _S("user", price="image"),  # kept verbatim for URLs and file ids
        "input_file": _S("user", price="document"),
        "input_audio": _S("user", opaque=("data",)),
        "refusal": _S("assistant"),
        # items the model produced
        "web_search_call": _S("assistant", level=_ITEM),
        "file_search_call": _S("assistant", level=_ITEM),
        "code_interpreter_call": _S("assistant", level=_ITEM),
        "image_generation_call": _S("assistant", level=_ITEM, price="image", opaque=("result",)),
        "mcp_call": _S("assistant", level=_ITEM),
        "mcp_list_tools": _S("assistant", level=_ITEM),
        "item_reference": _S("assistant", level=_ITEM, price="none"),
        "compaction": _S("assistant", level=_ITEM, opaque=("encrypted_content",), compaction=True),
        # client-side tool calls and what the client sends back, both by their ``call_id``
        **{
            row_type: row
            for call, output in (
                ("computer_call", "computer_call_output"),
                ("local_shell_call", "local_shell_call_output"),
                ("shell_call", "shell_call_output"),
                ("apply_patch_call", "apply_patch_call_output"),
                ("custom_tool_call", "custom_tool_call_output"),
                ("program", "program_output"),
                ("tool_search_call", "tool_search_output"),
            )
            for row_type, row in (
                (call, _S("assistant", "call", "call_id", _ITEM, partner=output)),
                (output, _S("user", "result", "call_id", _ITEM, partner=call)),
            )
        },
        # ... but for these: a screenshot is an image; local_shell_call_output's ``id`` is the
        # call's ``call_id`` (the SDK says so).
        "computer_call_output": _S(
            "user", "result", "call_id", _ITEM, "image", opaque=("output",), partner="computer_call"
        ),
        "local_shell_call_output": _S("user", "result", "id", _ITEM, partner="local_shell_call"),
        "mcp_approval_request": _S(
            "assistant", "call", "id", _ITEM, partner="mcp_approval_response"
        ),
        "mcp_approval_response": _S(
            "user", "result", "approval_request_id", _ITEM, partner="mcp_approval_request"
        ),
        "compaction_trigger": _S("user", level=_ITEM, price="none"),
        # developer directives
        "additional_tools": _S("system", level=_ITEM),
        "configuration_update": _S("system", level=_ITEM, price="none"),
    }

    # OpenAI Chat Completions: content parts, custom tool calls, and the legacy function calling
    # (no ids on the wire: the reader gives each call and its answer one ``pair_id``).
    _CHAT: dict[str, Spec] = {
        "image_url": _S("user", price="image"),  # kept verbatim for http(s) URLs
        "input_audio": _S("user", opaque=("input_audio",)),
        "file": _S("user", price="document"),
        "refusal": _S("assistant"),
        "custom": _S("assistant", "call", "id", "tool_call"),
        "function_call": _S("assistant", "call", level="field", partner="function"),
        "function": _S("user", "result", level="message", partner="function_call"),
    }

    # Gemini: a part has no ``type``; its wire type is the field that holds its data
    # (``file_data``, ``executable_code``...), in snake_case whichever spelling it came in (see
    # ``wire_type``). ``text``, ``function_call``, ``function_response``, ``thought`` text and
    # inline images are modelled; a row covers the rest, and every field of the SDK's ``Part``
    # standing alone. Code execution and server-side tools answer in the same model content as
    # their call, by their nested ``id`` or, without one, by position (the reader's ``pair_id``).
    # Thought signatures are opaque wherever they ride.
    _SIG = ("thought_signature", "thoughtSignature")
    _GEMINI: dict[str, Spec] = {
        "inline_data": _S("any", price="media"),  # audio, video, PDF...; images not in base64
        "file_data": _S("any", price="media"),
        "executable_code": _S("assistant", "call", opaque=_SIG, partner="code_execution_result"),
        "code_execution_result": _S("assistant", "result", opaque=_SIG, partner="executable_code"),
        "tool_call": _S("assistant", "call", opaque=_SIG, partner="tool_response"),
        "tool_response": _S("assistant", "result", opaque=_SIG, partner="tool_call"),
        # a thought in a user content (not a ReasoningBlock there), metadata standing alone
        **{
            field: _S("any", opaque=_SIG)
            for field in (
                "text",
                "thought",
                "video_metadata",
                "media_resolution",
                "part_metadata",
                "audio_transcription",
                "media_processing",
                "speech_metadata",
                "document_metadata",
                "spreadsheet_metadata",
                "audio_metadata",
            )
        },
        "thought_signature": _S("any", price="none"),
    }
    return {
        "anthropic": _ANTHROPIC,
        "openai_responses": _RESPONSES,
        "openai_chat": _CHAT,
        "gemini": _GEMINI,
    }


def wire_type(format: str, data: Mapping[str, Any]) -> str:
    """The wire type of a provider dict: its ``"type"``, or for the dicts that have none, what
    stands for it (Responses' ``item_reference`` may omit it; Chat's legacy ``function_call``
    field and ``function`` message never had one)."""
    if format == "gemini":
        return _gemini_wire_type(data)
    kind = data.get("type")
    if isinstance(kind, str):
        return kind
    if format == "openai_responses" and "role" not in data and "id" in data:
        return "item_reference"
    if format == "openai_chat":
        if "function_call" in data:
            return "function_call"
        if data.get("role") == "function":
            return "function"
    return ""


def _gemini_wire_type(data: Mapping[str, Any]) -> str:
    """A Gemini part's data field (:data:`GEMINI_DATA_FIELDS`), else its first field, in
    snake_case."""
    keys = [k if "_" in k or k.islower() else _snake_case(k) for k in data]
    for field in GEMINI_DATA_FIELDS:
        if field in keys:
            return field
    return keys[0] if keys else ""


def _snake_case(key: str) -> str:
    """``inlineData`` -> ``inline_data``: an underscore before each ASCII capital but a
    leading one, then lower case."""
    import re  # here: only a camelCase Gemini part needs it

    return re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()


def misplaced(block: ProviderBlock, role: str) -> str | None:
    """Why a ``role`` message cannot carry ``block`` (its row names another role), or None."""
    side = block.spec.side
    if side == "any" or side == role:
        return None
    return f"a {block.wire_type} block belongs in a {side} message, not a {role} message"


def spec_of(format: str, data: Mapping[str, Any]) -> Spec | None:
    """The row of ``data``; :data:`UNKNOWN` for a type with no row and no id field; None for
    a type with no row that has one (it may pair: refused)."""
    spec = (_SPECS or _specs())[format].get(wire_type(format, data))
    if spec is not None:
        return spec
    if any(key in data for key in ID_KEYS):
        return None
    if format == "gemini" and any(  # a Gemini part keeps its ids one level down
        isinstance(v, Mapping) and any(key in v for key in ID_KEYS) for v in data.values()
    ):
        return None
    return UNKNOWN  # noqa: F821 (a module attribute since `_specs` ran, above)


#: The price of a document whose size cannot be read (behind a URL or a file id): five PDF
#: pages. Too high trims a little early; too low sends a request the provider refuses.
UNKNOWN_DOCUMENT_TOKENS = 5 * PDF_PAGE_TOKENS


def _pdf_tokens(raw: bytes) -> int:
    """A PDF's price: its pages (``/Type /Page`` objects, not the ``/Pages`` tree), at least
    one, at :data:`PDF_PAGE_TOKENS` each."""
    import re  # here: only an inline PDF needs it

    return max(1, len(re.findall(rb"/Type\s*/Page(?!s)", raw))) * PDF_PAGE_TOKENS


def facts(block: ProviderBlock) -> tuple[str | None, str | None, bool, bool, str, int, int]:
    """What the core reads of a provider block (once per message): ``(call id, answered id,
    opens a user turn, is a compaction, text to price, extra tokens, flat-priced images)``."""
    spec = block.spec
    call_id = block.call_id
    uses = call_id if spec.pair == "call" else None
    answers = call_id if spec.pair == "result" else None
    opens_turn = spec.side == "user" and not spec.pair and spec.price != "none"
    pairing = (uses, answers, opens_turn, spec.compaction)
    if spec.price == "none":
        return (*pairing, "", 0, 0)
    if spec.price == "document":
        text, tokens = _document(block.format, block.data)
        return (*pairing, text, tokens, 0)
    if spec.price == "media":
        text, tokens, images = _media(block.data)
        return (*pairing, text, tokens, images)
    data = block.data
    if spec.opaque:
        data = {k: v for k, v in data.items() if k not in spec.opaque}
    text = _core.compact_json(data)
    return (*pairing, text, 0, int(spec.price == "image"))


def _document(format: str, data: Mapping[str, Any]) -> tuple[str, int]:
    """A document's ``(text to price, extra tokens)``: a PDF by its pages, text by its text,
    :data:`UNKNOWN_DOCUMENT_TOKENS` for one behind a URL or a file id."""
    payload: object = None
    if format == "anthropic":
        source = data.get("source")
        if isinstance(source, Mapping):
            kind = source.get("type")
            if kind == "text":
                return str(source.get("data", "")), 0
            if kind == "content":
                return _core.compact_json({"content": source.get("content")}), 0
            if kind == "base64":
                payload = source.get("data")
    elif format == "openai_responses":
        payload = data.get("file_data")
    else:
        file = data.get("file")
        if isinstance(file, Mapping):
            payload = file.get("file_data")
    if not isinstance(payload, str):
        return "", UNKNOWN_DOCUMENT_TOKENS
    import base64  # here: only an inline document needs it, and ``import ctxtrim`` stays light

    _, comma, encoded = payload.rpartition(",")  # a data URL, or bare base64
    try:
        raw = base64.b64decode(encoded if comma else payload, validate=False)
    except ValueError:  # binascii.Error is one
        return "", UNKNOWN_DOCUMENT_TOKENS
    if raw.startswith(b"%PDF"):
        return "", _pdf_tokens(raw)
    try:
        return raw.decode("utf-8"), 0  # a text file sent inline
    except UnicodeDecodeError:
        return "", UNKNOWN_DOCUMENT_TOKENS


def _media(data: Mapping[str, Any]) -> tuple[str, int, int]:
    """A Gemini ``inline_data`` / ``file_data`` part's ``(text to price, extra tokens,
    flat-priced images)`` by its MIME type (see ``"media"`` in the module docstring)."""
    blob = data.get("inline_data", data.get("inlineData"))
    inline = isinstance(blob, Mapping)
    if not inline:
        blob = data.get("file_data", data.get("fileData"))
    if not isinstance(blob, Mapping):
        return "", UNKNOWN_DOCUMENT_TOKENS, 0
    mime = blob.get("mime_type", blob.get("mimeType"))
    mime = mime if isinstance(mime, str) else ""
    if mime.startswith("image/"):
        return "", 0, 1
    payload = blob.get("data") if inline else None
    if isinstance(payload, str) and (mime == "application/pdf" or mime.startswith("text/")):
        import base64

        try:
            raw = base64.b64decode(payload.replace("-", "+").replace("_", "/"), validate=False)
        except ValueError:  # binascii.Error is one
            return "", UNKNOWN_DOCUMENT_TOKENS, 0
        if raw.startswith(b"%PDF"):
            return "", _pdf_tokens(raw), 0
        try:
            return raw.decode("utf-8"), 0, 0
        except UnicodeDecodeError:
            pass
    return "", UNKNOWN_DOCUMENT_TOKENS, 0


def price(block: ProviderBlock, count: Callable[[str], int]) -> int:
    """The tokens of a provider block with ``count`` counting its text (an exact counter's
    tokenizer): its text, its fixed tokens and its flat-priced images."""
    *_, text, extra, images = facts(block)
    return count(text) + extra + images * _core.IMAGE_TOKENS
