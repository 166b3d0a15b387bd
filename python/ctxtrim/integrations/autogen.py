"""Pair-safe drop-ins for autogen-core's chat completion contexts.

Change the import, keep the constructor call::

    from ctxtrim.integrations.autogen import BufferedChatCompletionContext

Each class has the signature of its autogen namesake, is a real
``autogen_core.model_context.ChatCompletionContext`` (and an autogen ``Component``), and
keeps every message in storage, computing a *view* in ``get_messages()`` as autogen does.
Invariants of every view: no ``FunctionExecutionResultMessage`` whose call is missing, no
``AssistantMessage`` function call whose results were cut (the cut is a pair-safe index
from the Rust log, not a slice followed by a one-message patch as in autogen's
TokenLimited, https://github.com/microsoft/autogen/issues/7955); leading
``SystemMessage``\\ s are always kept; the messages are autogen's own objects.

Deliberate differences from autogen (docs/design.md, "Integrations"):

* ``Buffered``: the cut goes to the safe cut nearest ``len - buffer_size``, so a view can
  hold a few more or fewer messages than ``buffer_size`` rather than split a call from
  its results; leading system messages are kept (autogen drops them).
* ``HeadAndTail``: the head ends and the tail starts on safe cuts; the placeholder
  ``"Skipped N messages."`` states the true number left out (autogen under-counts:
  https://github.com/microsoft/autogen/pull/8070).
* ``TokenLimited``: keeps the pinned head (system messages and, with ``pin_task=True``, the
  first user message) plus the longest pair-safe suffix within the limit, where autogen
  pops from the middle one message at a time (and calls the token counter after each pop:
  quadratic). Each message is counted once with the model client (cached); one more call
  checks the whole view, and only if the client's per-call overhead pushes it over is the
  cut moved further.
* ``Unbounded``: returns a copy of the list, not the internal list itself.
* ``dump_component``/``load_component`` keep real message objects (autogen's Buffered turns
  them into dicts: https://github.com/microsoft/autogen/pull/8207); ``save_state``/
  ``load_state`` are autogen's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ctxtrim import _core
from ctxtrim._core import MessageLog
from ctxtrim.integrations._common import (
    Counts,
    Mirror,
    Skeletons,
    ends_window,
    missing_extra,
    take,
)
from ctxtrim.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ctxtrim.validate import validate

try:
    from autogen_core import Component, ComponentModel, FunctionCall
    from autogen_core.model_context import ChatCompletionContext
    from autogen_core.models import (
        AssistantMessage,
        ChatCompletionClient,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        LLMMessage,
        SystemMessage,
        UserMessage,
    )
    from autogen_core.tools import ToolSchema
    from pydantic import BaseModel
    from typing_extensions import Self
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("autogen-core", "autogen", _err) from _err

__all__ = [
    "BufferedChatCompletionContext",
    "HeadAndTailChatCompletionContext",
    "TokenLimitedChatCompletionContext",
    "UnboundedChatCompletionContext",
    "to_skeleton",
    "to_skeletons",
]


def _call_id(raw: str, i: int, j: int) -> str:
    # ctxtrim ids are non-empty; a client that sends none gets one no real id can equal.
    return raw or f"\x00autogen-{i}-{j}"


def to_skeleton(message: LLMMessage, i: int = 0) -> Message:
    """The ctxtrim skeleton of one autogen message (role, tool ids; text for estimates).

    ``i`` (the message's index) only names calls that arrive without an id.
    """
    if isinstance(message, SystemMessage):
        return Message.system(message.content)
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return Message.user(message.content)
        texts = [p if isinstance(p, str) else "[image]" for p in message.content]
        return Message.user([TextBlock(t) for t in texts] or [TextBlock("")])
    if isinstance(message, AssistantMessage):
        if isinstance(message.content, str):
            return Message.assistant(message.content)
        return Message.assistant(
            message.thought or "",
            tool_uses=[
                ToolUseBlock(_call_id(c.id, i, j), c.name or "?", {"arguments": c.arguments})
                for j, c in enumerate(message.content)
            ],
        )
    if isinstance(message, FunctionExecutionResultMessage):
        return Message.tool_results(
            [
                ToolResultBlock(_call_id(r.call_id, -1, j), r.content, bool(r.is_error))
                for j, r in enumerate(message.content)
            ]
        )
    raise TypeError(f"not an autogen LLMMessage: {type(message).__name__}")


#: The classes the core reads (exactly these, no subclass): see ``_core.autogen_skeletons``.
_KINDS = (
    SystemMessage,
    UserMessage,
    AssistantMessage,
    FunctionExecutionResultMessage,
    FunctionCall,
    FunctionExecutionResult,
)


def to_skeletons(
    messages: Sequence[LLMMessage], start: int = 0, *, facts: bool = False
) -> list[Message]:
    """``[to_skeleton(m, start + j) for j, m in enumerate(messages)]``, made by the core for
    the shapes autogen builds (exact autogen classes, fields of their declared types) and
    by :func:`to_skeleton` for any other message, which also raises every error.

    ``start`` is the index of ``messages[0]`` in the history. With ``facts``, the core
    reads each skeleton's facts (what a :class:`MessageLog` indexes) as it makes it.
    """
    items = messages if type(messages) is list else list(messages)
    n = len(items)
    out = _core.autogen_skeletons(_KINDS, items, 0, start, facts=facts)
    while len(out) < n:
        k = len(out)
        out.append(to_skeleton(items[k], start + k))
        out += _core.autogen_skeletons(_KINDS, items, k + 1, start, facts=facts)
    return out


def _to_indexed_skeletons(messages: Sequence[LLMMessage], start: int) -> list[Message]:
    return to_skeletons(messages, start, facts=True)


#: What pair safety forbids (autogen's notion of a valid view: its guards drop only
#: function results; a view may start on an assistant message, as autogen's do).
_PAIR_KINDS = frozenset(
    {"orphan_result", "result_before_call", "dangling_call", "duplicate_result"}
)


def _pair_problems(skeletons: list[Message]) -> bool:
    return any(v.kind in _PAIR_KINDS for v in validate(skeletons))


def _is_function_call_message(m: object) -> bool:
    return (
        isinstance(m, AssistantMessage)
        and isinstance(m.content, list)
        and all(isinstance(c, FunctionCall) for c in m.content)
    )


def _drop_leading_orphans(view: list[LLMMessage]) -> list[LLMMessage]:
    """The view without leading ``FunctionExecutionResultMessage``\\ s whose calls it does
    not hold (after its system messages). Cuts are pair-safe, so these can only be results
    stored without their call (autogen drops them too)."""
    i = 0
    while i < len(view) and isinstance(view[i], SystemMessage):
        i += 1
    j = i
    while j < len(view) and isinstance(view[j], FunctionExecutionResultMessage):
        j += 1  # nothing before them but system messages: none of their calls is in view
    return view if j == i else [*view[:i], *view[j:]]


def buffered_view(
    msgs: Sequence[LLMMessage], buffer_size: int, view: list[LLMMessage]
) -> list[LLMMessage]:
    """Buffered's view: autogen's own window (the last ``buffer_size`` messages, a leading
    function result dropped, the leading system messages kept) wherever it is pair-safe
    and not empty; else ``view``, the core's pair-safe cut (the leading system messages and
    a suffix: where autogen's would orphan a result, split a call from its results or
    hold nothing)."""
    n = len(msgs)
    a = max(0, n - buffer_size)
    if a < n and isinstance(msgs[a], FunctionExecutionResultMessage):
        a += 1
    pinned = 0
    while pinned < a and isinstance(msgs[pinned], SystemMessage):
        pinned += 1
    kept = n - a
    if len(view) == pinned + kept and (kept == 0 or view[pinned] is msgs[a]):
        return view  # the same window
    theirs = [*msgs[:pinned], *msgs[a:]]
    if kept and not _pair_problems(to_skeletons(theirs)):
        return theirs
    return view


def head_tail_cuts(
    msgs: Sequence[LLMMessage], head_size: int, tail_size: int, log: MessageLog
) -> tuple[int, int]:
    """HeadAndTail's cuts on ``msgs`` (longer than ``head_size + tail_size``; ``log`` its
    skeletons): autogen's (a trailing call message left out of the head, a leading result
    out of the tail) wherever they are pair-safe, else the nearest pair-safe cuts before
    them; the head keeps the leading system messages."""
    n = len(msgs)
    system_end = log.pinned_head(False)[0]
    h = head_size
    if _is_function_call_message(msgs[h - 1]):
        h -= 1
    if h < system_end or not log.is_safe_cut(h):
        h = max(log.safe_cut_at_or_before(head_size), system_end)
    t = n - tail_size
    if isinstance(msgs[t], FunctionExecutionResultMessage):
        t += 1
    if not log.is_safe_cut(t):
        t = log.safe_cut_at_or_before(n - tail_size)
    return h, t


class _PairSafeContext(ChatCompletionContext):
    """Storage as autogen's (``self._messages``), plus a mirror list of skeletons.

    The mirror follows ``self._messages`` by appending the new messages' skeletons (each
    message is converted once); the view a call returns is checked object by object against
    the mirror, so a list changed behind the context's back is re-read rather than trusted.
    """

    #: The autogen class this one replaces: its dumped configs load as this class.
    _autogen_name: ClassVar[str] = ""

    #: Whether the view is decided on a MessageLog of the skeletons (O(log n) a view).
    _with_log: ClassVar[bool] = True
    #: Whether the context mirrors its list (Unbounded's views read no skeletons, and
    #: Buffered's read the list from its ends: neither uses the mirror).
    _mirrors: ClassVar[bool] = True

    def __init__(self, initial_messages: list[LLMMessage] | None = None) -> None:
        super().__init__(initial_messages)
        # The mirror keeps the skeletons of the context's own list, so they are not also
        # cached by message object: a rebuild (the list replaced or changed behind the
        # context's back) converts again, natively, and TokenLimited's client counts again
        # only what its next view reads.
        many = _to_indexed_skeletons if self._with_log else to_skeletons
        skeletons = Skeletons(to_skeleton, self._counts(), convert_many=many, cached=False)
        self._mirror: Mirror[LLMMessage] = Mirror(skeletons, with_log=self._with_log)

    async def add_message(self, message: LLMMessage) -> None:
        """autogen's ``add_message``; the message is converted to its skeleton now (once),
        so a view costs O(log n) whatever was added since the last one."""
        await super().add_message(message)
        if self._mirrors:
            self._sync()

    def _counts(self) -> Counts | None:
        return None

    async def clear(self) -> None:
        await super().clear()
        self._mirror.reset()

    async def load_state(self, state: Any) -> None:
        await super().load_state(state)
        self._mirror.reset()

    def _sync(self) -> list[Message]:
        skeletons = self._mirror.sync(self._messages)
        assert skeletons is not None  # an eager mirror always mirrors
        return skeletons

    def _checked(self, a: int, b: int) -> bool:
        """Whether the mirror still stands for ``self._messages[a:b]`` item by item; when
        not, it is rebuilt (unchanged objects keep their skeletons)."""
        same = self._mirror.same(self._messages, a, b)
        if not same:
            self._mirror.reset()
        return same

    @classmethod
    def load_component(cls, model: ComponentModel | dict[str, Any], expected: Any = None) -> Any:
        """autogen's ``load_component``; a config dumped by the autogen class this one
        replaces (its provider names it) loads as this class."""
        if isinstance(model, dict):
            model = ComponentModel(**model)
        provider = model.provider.replace("autogen_core.model_context.", "", 1)
        if (
            cls._autogen_name
            and provider.rsplit(".", 1)[-1] == cls._autogen_name
            and (model.provider.startswith("autogen_core.") or "." not in model.provider)
        ):
            model = model.model_copy(update={"provider": cls.component_provider_override})
        return super().load_component(model, expected)


class UnboundedChatCompletionContextConfig(BaseModel):
    initial_messages: list[LLMMessage] | None = None


class UnboundedChatCompletionContext(
    _PairSafeContext, Component[UnboundedChatCompletionContextConfig]
):
    """Every message (a copy of the list: clearing it does not empty the context)."""

    component_config_schema = UnboundedChatCompletionContextConfig
    _autogen_name = "UnboundedChatCompletionContext"
    _with_log = False
    _mirrors = False
    component_provider_override = "ctxtrim.integrations.autogen.UnboundedChatCompletionContext"

    async def get_messages(self) -> list[LLMMessage]:
        return list(self._messages)

    def _to_config(self) -> UnboundedChatCompletionContextConfig:
        return UnboundedChatCompletionContextConfig(initial_messages=self._initial_messages)

    @classmethod
    def _from_config(cls, config: UnboundedChatCompletionContextConfig) -> Self:
        return cls(initial_messages=config.initial_messages)


class BufferedChatCompletionContextConfig(BaseModel):
    buffer_size: int
    initial_messages: list[LLMMessage] | None = None


class BufferedChatCompletionContext(
    _PairSafeContext, Component[BufferedChatCompletionContextConfig]
):
    """About the last ``buffer_size`` messages, cut at the nearest pair-safe point.

    Whether a cut is pair-safe depends only on the messages after it, so a view reads the
    list from its two ends (the leading system messages, and the last ``buffer_size`` and
    a margin): the core keeps what it read (a :class:`ctxtrim._core.Tail`) and the next view
    reads only the messages added since, checking the others by identity. Nothing is
    mirrored: a first view over a long history reads its window alone.
    """

    component_config_schema = BufferedChatCompletionContextConfig
    _autogen_name = "BufferedChatCompletionContext"
    _mirrors = False
    component_provider_override = "ctxtrim.integrations.autogen.BufferedChatCompletionContext"

    def __init__(self, buffer_size: int, initial_messages: list[LLMMessage] | None = None) -> None:
        super().__init__(initial_messages)
        if buffer_size <= 0:
            raise ValueError("buffer_size must be greater than 0.")
        self._buffer_size = buffer_size
        self._skeletons = self._new_skeletons()

    @staticmethod
    def _new_skeletons() -> Skeletons[LLMMessage]:
        # Cached by message object (bounded to what the views read), so a view finds the
        # messages add_message converted, and converts the others when it reads them.
        return Skeletons(to_skeleton, convert_many=_to_indexed_skeletons)

    async def add_message(self, message: LLMMessage) -> None:
        """autogen's ``add_message``; the message is converted now (once), so a view only
        looks it up."""
        await super().add_message(message)
        self._skeletons.remember([message], len(self._messages) - 1)

    async def clear(self) -> None:
        await super().clear()
        self._skeletons = self._new_skeletons()

    async def load_state(self, state: Any) -> None:
        await super().load_state(state)
        self._skeletons = self._new_skeletons()

    async def get_messages(self) -> list[LLMMessage]:
        msgs = self._messages
        ranges, unchanged, _ = ends_window(
            msgs, self._skeletons, "messages", self._buffer_size, pin_task=False
        )
        view = _drop_leading_orphans(list(msgs) if unchanged else take(msgs, ranges))
        return buffered_view(msgs, self._buffer_size, view)

    def _to_config(self) -> BufferedChatCompletionContextConfig:
        return BufferedChatCompletionContextConfig(
            buffer_size=self._buffer_size, initial_messages=self._initial_messages
        )

    @classmethod
    def _from_config(cls, config: BufferedChatCompletionContextConfig) -> Self:
        # Not cls(**config.model_dump()): that turns the messages into dicts (autogen PR #8207).
        return cls(buffer_size=config.buffer_size, initial_messages=config.initial_messages)


class HeadAndTailChatCompletionContextConfig(BaseModel):
    head_size: int
    tail_size: int
    initial_messages: list[LLMMessage] | None = None


class HeadAndTailChatCompletionContext(
    _PairSafeContext, Component[HeadAndTailChatCompletionContextConfig]
):
    """The first ``head_size`` and last ``tail_size`` messages (ends moved to pair-safe
    cuts) with a ``"Skipped N messages."`` placeholder that counts every message left out."""

    component_config_schema = HeadAndTailChatCompletionContextConfig
    _autogen_name = "HeadAndTailChatCompletionContext"
    component_provider_override = "ctxtrim.integrations.autogen.HeadAndTailChatCompletionContext"

    def __init__(
        self, head_size: int, tail_size: int, initial_messages: list[LLMMessage] | None = None
    ) -> None:
        super().__init__(initial_messages)
        if head_size <= 0:
            raise ValueError("head_size must be greater than 0.")
        if tail_size <= 0:
            raise ValueError("tail_size must be greater than 0.")
        self._head_size = head_size
        self._tail_size = tail_size

    async def get_messages(self) -> list[LLMMessage]:
        msgs = self._messages
        n = len(msgs)
        if n <= self._head_size + self._tail_size:
            return _drop_leading_orphans(list(msgs))
        while True:
            self._sync()
            log = self._mirror.log
            h, t = head_tail_cuts(msgs, self._head_size, self._tail_size, log)
            if t <= h:
                return _drop_leading_orphans(list(msgs))
            if self._checked(0, h) and self._checked(max(t - 1, 0), n):
                break
        placeholder = UserMessage(content=f"Skipped {t - h} messages.", source="System")
        return _drop_leading_orphans([*msgs[:h], placeholder, *msgs[t:]])

    def _to_config(self) -> HeadAndTailChatCompletionContextConfig:
        return HeadAndTailChatCompletionContextConfig(
            head_size=self._head_size,
            tail_size=self._tail_size,
            initial_messages=self._initial_messages,
        )

    @classmethod
    def _from_config(cls, config: HeadAndTailChatCompletionContextConfig) -> Self:
        return cls(
            head_size=config.head_size,
            tail_size=config.tail_size,
            initial_messages=config.initial_messages,
        )


class TokenLimitedChatCompletionContextConfig(BaseModel):
    model_client: ComponentModel
    token_limit: int | None = None
    tool_schema: list[ToolSchema] | None = None
    initial_messages: list[LLMMessage] | None = None
    pin_task: bool = True


class TokenLimitedChatCompletionContext(
    _PairSafeContext, Component[TokenLimitedChatCompletionContextConfig]
):
    """The pinned head plus the longest pair-safe suffix within ``token_limit`` tokens (or
    the model's remaining tokens when ``token_limit`` is None), counted by ``model_client``.

    ``pin_task`` (ctxtrim's, default True) keeps the first user message, the agent's task.
    """

    component_config_schema = TokenLimitedChatCompletionContextConfig
    _autogen_name = "TokenLimitedChatCompletionContext"
    # Counted by the model client: a log would count every message on the first view; the
    # core reads the skeleton list from its ends and counts only what it reads.
    _with_log = False
    component_provider_override = "ctxtrim.integrations.autogen.TokenLimitedChatCompletionContext"

    def __init__(
        self,
        model_client: ChatCompletionClient,
        *,
        token_limit: int | None = None,
        tool_schema: list[ToolSchema] | None = None,
        initial_messages: list[LLMMessage] | None = None,
        pin_task: bool = True,
    ) -> None:
        if token_limit is not None and token_limit <= 0:
            raise ValueError("token_limit must be greater than 0.")
        self._token_limit = token_limit
        self._model_client = model_client
        self._tool_schema = tool_schema or []
        self._pin_task = pin_task
        super().__init__(initial_messages)

    def _counts(self) -> Counts:
        client = self._model_client
        overhead: list[int] = []

        def one(m: LLMMessage) -> int:
            # A message alone, without tools, less what the client adds to every request
            # (priming, 3 tokens for OpenAI, 15 for Ollama): the per-message counts sum to
            # the view's count less that overhead, so views are not over-trimmed.
            if not overhead:
                overhead.append(int(client.count_tokens([], tools=[])))
            return int(client.count_tokens([m], tools=[])) - overhead[0]

        return Counts(one)

    def _tokens(self, messages: list[LLMMessage]) -> int:
        return int(self._model_client.count_tokens(messages, tools=self._tool_schema))

    def _window(self) -> int:
        """The limit on ``count_tokens(view, tools)``: ``token_limit``, or the model's whole
        window (``remaining_tokens`` of nothing plus what the tools alone use)."""
        if self._token_limit is not None:
            return self._token_limit
        client = self._model_client
        return int(client.remaining_tokens([], tools=self._tool_schema)) + self._tokens([])

    async def get_messages(self) -> list[LLMMessage]:
        msgs = self._messages
        if not msgs:
            return []
        window = self._window()
        fixed = self._tokens([])  # the tools' share and the request overhead
        budget = max(window - fixed, 1)
        counts = self._mirror.skeletons.counts
        while True:
            skeletons = self._sync()
            ranges, unchanged, _ = _core.cut_window(
                skeletons,
                "budget",
                budget,
                pin_task=self._pin_task,
                start_with_user=False,
                counter=counts,
            )
            s = ranges[-1][0]
            checks = [(max(s - 1, 0), len(msgs)), *ranges[:-1]]
            if unchanged or all(self._checked(a, b) for a, b in checks):
                break
        if unchanged:
            view = _drop_leading_orphans(list(msgs))
            if self._tokens(view) <= window:
                return view
            system_end, task, floor, contiguous = MessageLog(skeletons).pinned_head(self._pin_task)
            if task is None or contiguous:
                pinned = [(0, floor if task is not None else system_end)]
            else:
                pinned = [(0, system_end), (task, task + 1)]
            ranges = [*pinned, (pinned[-1][1], len(msgs))]
        # The per-message counts decided; the client checks only what is kept (one call,
        # bounded by the limit) and, if its own count is over, the suffix's start moves on
        # to the next pair-safe cut until it fits: O(kept) client work per view.
        head = take(msgs, ranges[:-1])
        s, n = ranges[-1]
        suffix = MessageLog(skeletons[s:n])  # pair-safety of a suffix depends on it alone
        c = 0
        while c < n - s:
            view = _drop_leading_orphans([*head, *msgs[s + c : n]])
            if self._tokens(view) <= window:
                return view
            c = suffix.safe_cut_at_or_after(c + 1)
        return _drop_leading_orphans(head)

    def _to_config(self) -> TokenLimitedChatCompletionContextConfig:
        return TokenLimitedChatCompletionContextConfig(
            model_client=self._model_client.dump_component(),
            token_limit=self._token_limit,
            tool_schema=self._tool_schema,
            initial_messages=self._initial_messages,
            pin_task=self._pin_task,
        )

    @classmethod
    def _from_config(cls, config: TokenLimitedChatCompletionContextConfig) -> Self:
        return cls(
            model_client=ChatCompletionClient.load_component(config.model_client),
            token_limit=config.token_limit,
            tool_schema=config.tool_schema,
            initial_messages=config.initial_messages,
            pin_task=config.pin_task,
        )
