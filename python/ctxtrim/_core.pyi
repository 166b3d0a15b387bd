"""The compiled core of ctxtrim (``ctxtrim._core``). Hand-written; checked by mypy.stubtest.

Use the ``ctxtrim`` package rather than this module directly.
"""

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Literal, TypeVar, final

from ctxtrim.messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from ctxtrim.tokens import TokenCounter

__all__ = [
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD",
    "BpeCounter",
    "LogJson",
    "MessageFacts",
    "MessageLog",
    "Tail",
    "TurnCounter",
    "TurnId",
    "__version__",
    "anthropic_fast_prefix",
    "anthropic_json_fast",
    "anthropic_render",
    "anthropic_render_json",
    "autogen_skeletons",
    "chat_fast",
    "chat_fast_prefix",
    "chat_json_fast",
    "chat_render",
    "chat_render_json",
    "compact_json",
    "copy_renderings",
    "cut_list",
    "cut_log",
    "cut_window",
    "differing",
    "estimate_tokens",
    "frozen_json",
    "gemini_fast_prefix",
    "grapheme_floor",
    "image_size",
    "image_tokens",
    "join_renderings",
    "json_loads",
    "kept_rendering",
    "message_assistant",
    "message_post_init",
    "message_tokens",
    "message_tool_results",
    "message_user",
    "price_table",
    "repair_plan",
    "responses_fast_prefix",
    "responses_json_fast",
    "responses_render",
    "responses_render_json",
    "text_post_init",
    "tool_result_post_init",
    "tool_use_post_init",
    "validate",
]

_M = TypeVar("_M", bound=Message)

__version__: Final[str]
MESSAGE_OVERHEAD: Final[int]
IMAGE_TOKENS: Final[int]

@final
class BpeCounter:
    """OpenAI's exact token count under ``"cl100k_base"`` or ``"o200k_base"``, from the
    encoding's ``.tiktoken`` vocabulary file (``data``, uncompressed); ``ValueError`` if it
    is not one."""

    encoding: Final[str]
    def __new__(cls, data: bytes, encoding: str) -> BpeCounter: ...
    def count(self, text: str) -> int:
        """Tokens of ``text`` (special-token text counted as plain text)."""
    def count_message(self, message: Message) -> int:
        """Tokens of ``message`` as Chat Completions bills it (``ExactTokenCounter``)."""
    def pieces(self, text: str) -> list[str]:
        """The pieces ``text`` splits into before merging (the encoding's regex split)."""
    def _merge_both(self, piece: bytes) -> tuple[int, int]: ...
    def __len__(self) -> int: ...

def estimate_tokens(text: str, *, encoding: str = "cl100k_base") -> int:
    """Estimated tokens of a text (script-aware: CJK and emoji are not under-counted),
    priced as ``encoding`` (``"cl100k_base"``, ``"o200k_base"``, ``"anthropic"`` or a model
    name such as ``"gpt-4o"``) does."""

def price_table(name: str) -> str:
    """The canonical name of the price table ``name`` selects (``"cl100k_base"``,
    ``"o200k_base"``, ``"anthropic"``): an encoding or table name, or a model name such as
    ``"gpt-4o"``. An unknown name raises ``ValueError``."""

def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` as the image's header (PNG, JPEG, GIF, WebP) states them;
    ``ValueError`` saying why if it cannot be read."""

def image_tokens(data: bytes, *, encoding: str = "cl100k_base", rule: str | None = None) -> int:
    """Tokens of one image under ``rule`` (``"openai-high"``, ``"openai-low"``,
    ``"anthropic"``) or the image rule of the price table ``encoding``; the flat
    ``IMAGE_TOKENS`` if its header cannot be read."""

def grapheme_floor(text: str, max_chars: int) -> int:
    """The largest ``n <= max_chars`` such that ``text[:n]`` ends between two extended
    grapheme clusters (Unicode UAX #29). Pass at most ``max_chars + 1`` characters; a text
    with lone surrogates raises ``UnicodeEncodeError`` (``ctxtrim._text`` handles that)."""

def differing(a: list[Any], b: list[Any], limit: int) -> list[int] | None:
    """The indices below ``min(len(a), len(b))`` at which ``a`` and ``b`` hold different
    objects (by identity), ascending; None when there are more than ``limit`` of them."""

def message_tokens(
    message: Message, *, encoding: str = "cl100k_base", counter: TokenCounter | None = None
) -> int:
    """Estimated tokens of one message (texts, tool names and inputs, images, overhead), or
    ``counter``'s count; either read once per message object (and counter) and cached."""

def cut_window(
    source: Sequence[Any] | MessageLog,
    rule: Literal["budget", "turns", "rounds", "messages"],
    value: int,
    *,
    pin_task: bool = True,
    start_with_user: bool = True,
    counter: TokenCounter | None = None,
    encoding: str | None = None,
    convert: Callable[[Any, int], Message] | None = None,
    tail: Tail | None = None,
) -> tuple[list[tuple[int, int]], bool, bool]:
    """``(ranges, unchanged, over_budget)``: the ``[start, end)`` ranges a cut rule keeps.
    A list is read from its ends only, as far back as the decision needs. With ``convert``,
    ``source`` holds any items and message ``i`` is ``convert(source[i], i)``, called only
    for the items read. With ``tail`` (the caller's own, kept across calls on one list),
    only the items appended since the last call are read (the rest are checked by
    identity)."""

def cut_list(
    messages: list[Message],
    rule: Literal["budget", "turns", "rounds", "messages"],
    value: int,
    pin_task: bool = True,
    start_with_user: bool = True,
    counter: TokenCounter | None = None,
    tail: Tail | None = None,
) -> list[Message]:
    """The window a cut rule keeps of ``messages`` as a new list, or ``messages`` itself
    when it keeps everything (``cut_window`` and the slicing in one call). With ``tail``
    (a strategy's own), only what changed since its last call is read."""

def cut_log(
    log: MessageLog,
    rule: Literal["budget", "turns", "rounds", "messages"],
    value: int,
    pin_task: bool,
    start_with_user: bool,
) -> tuple[list[Message], bool]:
    """The window a cut rule keeps of the log as it is now (its queued appends indexed, the
    cached counts used), as a new list, and whether it is over the budget."""

@final
class LogJson:
    """A format's writer of a log's window as the request's JSON, everything but the log and
    the cut rule given once: ``writer(log, (rule, value, pin_task, start_with_user))`` is
    ``cut_log``'s window as the JSON array in the format kept under ``attr`` (``render``,
    ``fast``, ``kept_attr``, ``encode`` and ``fast_json`` as for ``join_renderings``), the
    messages the log's last written window holds too copied from it. With ``system``, the
    Anthropic body ``{"system": ..., "messages": [...]}``: the window's leading system
    messages left out of the array and written by ``system`` (or copied when the last request
    had the same ones)."""

    def __new__(
        cls,
        attr: str,
        render: Callable[[Any, int], bytes],
        fast: Callable[[Any], Any] | None = None,
        kept_attr: str | None = None,
        encode: Callable[[Any], bytes] | None = None,
        fast_json: Callable[[Any], bytes | None] | None = None,
        system: Callable[[list[Message]], bytes] | None = None,
    ) -> LogJson: ...
    def __call__(
        self,
        log: MessageLog,
        cut: tuple[Literal["budget", "turns", "rounds", "messages"], int, bool, bool],
    ) -> bytes: ...

@final
class Tail:
    """What a cut strategy keeps of the list it was last called on: its head and its end,
    each message with its facts, checked against the list (by identity) on the next call."""

    def __init__(self) -> None: ...
    def __len__(self) -> int:
        """Number of messages kept."""

def join_renderings(
    messages: Sequence[Message],
    attr: str,
    render: Callable[[Message, int], bytes],
    fast: Callable[[Message], list[dict[str, Any]] | None] | None = None,
    kept_attr: str | None = None,
    encode: Callable[[Any], bytes] | None = None,
    fast_json: Callable[[Message], bytes | None] | None = None,
) -> bytes:
    """The JSON array of the renderings kept on ``messages`` under ``attr``, rendering the
    ones that have none with ``render(message, index)``, or, given ``fast``, ``kept_attr`` and
    ``encode``, in the core when ``fast`` renders them (kept under ``kept_attr``), or, given
    ``fast_json`` too and no objects kept, when it writes their bytes."""

def copy_renderings(
    messages: Sequence[Message],
    attr: str,
    fast: Callable[[Message], list[dict[str, Any]] | None],
    render: Callable[[Message, int], tuple[dict[str, Any], ...]],
) -> list[dict[str, Any]]:
    """Fresh copies of the renderings kept on ``messages`` under ``attr`` (new dicts and lists
    all the way down), rendering the ones that have none with ``fast(message)`` (kept here)
    or, where it gives None, ``render(message, index)``."""

def kept_rendering(rendering: object) -> tuple[dict[str, Any], ...] | None:
    """A message's rendering (a list of provider objects) as it is kept: private plain-JSON
    copies, or ``None`` if a JSON round trip would change or refuse it."""

def json_loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the same value or error, at msgspec's speed."""

def compact_json(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``: the same text or
    error, at msgspec's speed."""

def frozen_json(value: object) -> Any:
    """A ``FrozenDict`` copy of a dict of plain JSON (exact types), the value itself if it is
    frozen throughout already, or ``None`` (then the Python checks decide)."""

def gemini_fast_prefix(
    items: list[Any], start: int, names: dict[str, str], waiting: list[tuple[str, str]]
) -> tuple[list[Message], int]:
    """The Gemini ``contents`` from ``start`` on up to the first one not in a common shape,
    as messages, and that one's index: ``(messages, next)``; ``names`` (call id → name) and
    ``waiting`` (``(name, id)`` of the calls not yet answered) are updated in place."""

def anthropic_fast_prefix(system: object, items: list[Any]) -> tuple[list[Message], int]:
    """The longest prefix of Anthropic ``items`` in common shapes, after ``system`` (read
    first if a string; any other non-``None`` system prompt makes it read nothing):
    ``(messages, next)``."""

def anthropic_json_fast(data: bytes) -> list[Message] | None:
    """The messages of Anthropic JSON ``data`` (a message array, or a request body with a
    string ``system`` first) when all are in common shapes, else ``None``."""

def anthropic_render(message: Message) -> list[dict[str, Any]] | None:
    """A message with no recorded fields in a common shape as its Anthropic message dict (in
    a list), or ``None``."""

def anthropic_render_json(message: Message) -> bytes | None:
    """``anthropic_render``'s dict as the request's JSON, written from the message, or
    ``None``."""

def chat_fast(
    raw_key: str,
    msg: object,
) -> Message | ToolResultBlock | None:
    """One Chat Completions message in a common shape, read without the general reader (a
    ``ToolResultBlock`` for a ``tool`` message), or ``None``."""

def autogen_skeletons(
    kinds: tuple[type, type, type, type, type, type],
    items: list[Any],
    start: int,
    base: int,
    *,
    facts: bool = False,
) -> list[Message]:
    """The skeletons of ``items[start:]`` (autogen messages; ``items[0]`` at history index
    ``base``), as ``ctxtrim.integrations.autogen.to_skeleton`` makes them, up to the first
    message not in a common shape. ``kinds``: ``(SystemMessage, UserMessage,
    AssistantMessage, FunctionExecutionResultMessage, FunctionCall, FunctionExecutionResult)``.
    With ``facts``, each skeleton's facts are read (and cached on it) as it is made."""

def chat_fast_prefix(
    raw_key: str,
    items: list[Any],
) -> tuple[list[Message], int, list[Any], int]:
    """The longest prefix of ``items`` in common shapes: ``(messages, next, run, run_start)``."""

def chat_json_fast(raw_key: str, data: bytes, json_attr: str | None = None) -> list[Message] | None:
    """Chat Completions JSON (a message array or a request body) read in the core when every
    message has a common shape, else ``None``; with ``json_attr``, each message keeps its
    rendering's JSON in that slot."""

def chat_render(raw_key: str, message: Message) -> list[dict[str, Any]] | None:
    """A message with no recorded fields in a common shape as Chat Completions dicts, or
    ``None``."""

def chat_render_json(raw_key: str, message: Message) -> bytes | None:
    """``chat_render``'s dicts as the request's JSON (comma-joined, no brackets), written
    from the message, or ``None``."""

def responses_fast_prefix(
    raw_key: str,
    items: list[Any],
) -> tuple[list[Message], int]:
    """The longest prefix of Responses input ``items`` in common shapes, grouped into messages
    as the general reader groups them: ``(messages, next)``, ``next`` the first item of the
    message the first item left to the general reader belongs to."""

def responses_json_fast(raw_key: str, data: bytes) -> list[Message] | None:
    """OpenAI Responses JSON (input items, the string shorthand, or a request body with
    ``"input"``) read in the core when every item has a common shape, grouped into messages
    as the general reader groups them, else ``None``."""

def responses_render(
    raw_key: str,
    short_user: object,
    short_assistant: object,
    message: Message,
) -> list[dict[str, Any]] | None:
    """A message in a common shape (no recorded fields, or only the short form of one text)
    as Responses input items, or ``None``."""

def responses_render_json(
    raw_key: str,
    short_user: object,
    short_assistant: object,
    message: Message,
) -> bytes | None:
    """``responses_render``'s items as their JSON (comma-joined objects), written straight
    from the message, or ``None``."""

def message_post_init(message: Message) -> None:
    """``Message.__post_init__``: every check at once (meta frozen), else ``Message._check``."""

def text_post_init(block: TextBlock) -> None:
    """``TextBlock.__post_init__``."""

def tool_use_post_init(block: ToolUseBlock) -> None:
    """``ToolUseBlock.__post_init__`` (its input frozen)."""

def tool_result_post_init(block: ToolResultBlock) -> None:
    """``ToolResultBlock.__post_init__``."""

def message_user(
    cls: type[_M],
    content: str | Sequence[Block | str],
    *,
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    usage: Usage | None = None,
    meta: dict[str, Any] | None = None,
) -> _M:
    """``Message.user``: a user message from a string or a sequence of blocks."""

def message_assistant(
    cls: type[_M],
    content: str | Sequence[Block | str] | None = "",
    *,
    tool_uses: Iterable[ToolUseBlock | tuple[str, str, dict[str, Any]]] = (),
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    usage: Usage | None = None,
    meta: dict[str, Any] | None = None,
) -> _M:
    """``Message.assistant``: its text (``None`` is no text), then the tool calls."""

def message_tool_results(
    cls: type[_M],
    *results: ToolResultBlock
    | tuple[str, str | Sequence[Block]]
    | tuple[str, str | Sequence[Block], bool]
    | list[Any],
    id: str | None = None,
    turn: str | None = None,
    name: str | None = None,
    meta: dict[str, Any] | None = None,
) -> _M:
    """``Message.tool_results``: a user message carrying tool results."""

@final
class MessageFacts:
    """What the core read from one message, cached on it (``Message._ctxtrim_facts``)."""

def validate(
    messages: Sequence[Message],
) -> list[tuple[str, int, str | None, int | None, str]]:
    """``(kind, index, tool_use_id, related_index, description)`` per violation."""

def repair_plan(messages: Sequence[Message]) -> list[tuple[str, int, int, list[str]]]:
    """The deterministic repair plan as ``(op, index, position, ids)`` tuples."""

@final
class TurnCounter:
    """Hands out turn ids: ``next_user()`` -> ``"u1"``, ``"u2"``...; ``next_assistant()`` ->
    ``"a<n>"`` for the current turn. Thread-safe, only moves forward."""

    def __new__(cls, start: int = 0) -> TurnCounter: ...
    def next_user(self) -> str: ...
    def next_assistant(self) -> str: ...
    def current(self) -> int: ...

@final
class TurnId:
    """A turn id: ``"u3"`` (user turn 3) or ``"a3"`` (the assistant's part of turn 3)."""

    def __new__(cls, owner: str, number: int) -> TurnId: ...
    @staticmethod
    def parse(text: str) -> TurnId:
        """Parse ``"u3"`` / ``"a3"``; anything else raises ``InvalidTurnId``."""

    @property
    def owner(self) -> Literal["u", "a"]: ...
    @property
    def number(self) -> int: ...
    def is_user_turn(self) -> bool: ...
    def is_assistant_turn(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __lt__(self, value: TurnId, /) -> bool: ...
    def __le__(self, value: TurnId, /) -> bool: ...
    def __gt__(self, value: TurnId, /) -> bool: ...
    def __ge__(self, value: TurnId, /) -> bool: ...

@final
class MessageLog:
    """An append-only, copy-on-write log of messages with the facts trimming needs."""

    def __new__(
        cls,
        messages: Iterable[Message] | None = None,
        *,
        tokens: Sequence[int] | None = None,
        encoding: str = "cl100k_base",
    ) -> MessageLog: ...
    def append(self, message: Message, *, tokens: int | None = None) -> None:
        """Append one message; ``tokens`` overrides the estimate."""

    def extend(self, messages: Iterable[Message], *, tokens: Sequence[int] | None = None) -> None:
        """Append several messages atomically: all are checked first, then all are added."""

    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Message: ...
    def to_list(self, start: int = 0, end: int | None = None) -> list[Message]:
        """The messages ``[start, end)`` as a new list (reference copies only)."""

    def tail(self, limit: int | None = None) -> list[Message]:
        """The last ``limit`` messages, or all of them when ``limit`` is None."""

    def snapshot(self) -> MessageLog:
        """An O(1), read-only view of the log as it is now."""

    def fork(self) -> MessageLog:
        """An O(1), independent, writable copy sharing the current entries."""

    @property
    def encoding(self) -> str:
        """The encoding whose prices the token estimates follow."""

    @property
    def read_only(self) -> bool: ...
    @property
    def generation(self) -> int: ...
    def clear(self) -> None:
        """Remove every message and bump the generation."""

    def replace_prefix(
        self,
        upto: int,
        messages: Iterable[Message],
        expected_generation: int,
        *,
        tokens: Sequence[int] | None = None,
        expected_length: int | None = None,
    ) -> None:
        """Replace messages ``[0, upto)`` if the generation is still ``expected_generation``
        (and the log still holds exactly ``expected_length`` messages, when given)."""

    def remove_turn(self, turn: int | str | TurnId) -> int:
        """Drop one turn (``"u3"``/``3``: all of it; ``"a3"``: its assistant side, keeping the
        user's message); returns how many."""
    def turn_range(self, turn: int | str | TurnId) -> tuple[int, int]:
        """``[start, end)`` that ``remove_turn(turn)`` would drop; nothing changes."""
    def replace_at(
        self, index: int, message: Message, expected_generation: int, *, tokens: int | None = None
    ) -> None:
        """Replace message ``index`` (keeping its turn id) if the generation is unchanged."""

    def tokens(self, start: int = 0, end: int | None = None) -> int:
        """Estimated tokens of messages ``[start, end)``."""

    def token_counts(self) -> list[int]:
        """The per-message token counts, in order."""

    @property
    def total_tokens(self) -> int: ...
    @property
    def newest_compaction(self) -> int | None:
        """The index of the newest message holding a provider's compaction, or None."""
    def calibrate(self, reported_input_tokens: int) -> None:
        """Anchor the estimate to the provider's reported input tokens."""

    def estimated_context_tokens(self) -> int:
        """Reported tokens at the last calibration plus the estimate of what came after."""

    def turn_of(self, i: int) -> TurnId:
        """The turn id of message ``i``."""

    @property
    def turn_count(self) -> int: ...
    @property
    def current_turn(self) -> int: ...
    @property
    def round_count(self) -> int: ...
    def is_safe_cut(self, i: int) -> bool:
        """Whether keeping ``messages[i:]`` separates no tool use from its result."""

    def safe_cut_at_or_before(self, i: int) -> int:
        """The safe cut nearest ``i`` at or before it."""

    def safe_cut_at_or_after(self, i: int) -> int:
        """The safe cut nearest ``i`` at or after it."""

    def fit_budget(
        self, budget: int, *, floor: int = 0, end: int | None = None
    ) -> tuple[int, int, bool]:
        """``(index, kept_tokens, fits)`` of the longest pair-safe suffix within ``budget``
        (of ``messages[index:end]`` when ``end`` is given)."""

    def stable_cut(
        self, fixed: int, high: int, low: int, *, floor: int = 0, user_start: bool = False
    ) -> tuple[int, int, int]:
        """``(index, kept_tokens, trims)`` of a cache-stable window: the cut moves only when
        ``fixed`` plus the kept tokens pass ``high``, then down to ``low`` (to a real user
        message with ``user_start``)."""

    def pinned_head(self, pin_task: bool = True) -> tuple[int, int | None, int, bool]:
        """``(system_end, task, floor, contiguous)``: the always-kept head of the history."""

    def user_cut_at_or_before(self, i: int) -> int | None:
        """The largest safe cut at or before ``i`` at a real user message, or None."""

    def user_cut_at_or_after(self, i: int) -> int | None:
        """The smallest safe cut at or after ``i`` at a real user message, or None."""

    def kth_last_turn_start(self, k: int) -> int | None:
        """Index where the k-th last user turn starts, or None."""

    def kth_last_round_start(self, k: int) -> int | None:
        """Index where the k-th last round starts, or None."""

    def __repr__(self) -> str: ...
