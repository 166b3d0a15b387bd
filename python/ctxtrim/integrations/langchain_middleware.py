"""Pair-safe, fast drop-ins for LangChain v1's ``SummarizationMiddleware`` and
``ContextEditingMiddleware`` (with ``ClearToolUsesEdit``): same constructor arguments, same
state updates and model requests on valid histories.

Change the import, keep the call::

    from ctxtrim.integrations.langchain_middleware import (
        ClearToolUsesEdit, ContextEditingMiddleware, SummarizationMiddleware,
    )
    agent = create_agent(model, tools, middleware=[SummarizationMiddleware(model, trigger=...)])

Both subclass LangChain's classes, so every argument, attribute and hook is LangChain's;
what changes is how the decision is made on every model call (the common turn, with nothing
to summarise or clear), and where a cut may fall:

* **Counted once per message.** With the default ``count_tokens_approximately`` counter the
  count is kept per history: when a turn's list extends the list of the previous turn (the
  same message objects, or equal ones, in front; one C-level list comparison), only the new
  messages are counted and given ids. The total is the one LangChain computes, to the token,
  including the scaling by the last AI message's reported usage. Any other ``token_counter``
  (or one set on the instance later) is called on the whole list, as LangChain does.
* **Pair-safe cuts.** The summarised span ends on a safe cut of ctxtrim's core
  (:class:`ctxtrim.MessageLog` on a skeleton of each message: role and tool-call ids): never
  a ``ToolMessage`` kept without its ``AIMessage``, never an ``AIMessage`` kept whose
  ``tool_calls`` lost a result to the summary. LangChain moves back only when the cut lands
  on a ``ToolMessage``; on histories where results follow their call at once the two agree.
  The messages sent to the summariser are trimmed by ctxtrim's pair-safe ``trim_messages``
  (langchain-core's leads with an orphan ``ToolMessage``: langchain-ai/langchain#33245).
* **No deep copy per call.** ``ContextEditingMiddleware`` deep-copies the whole history on
  every model call so that edits cannot touch the state; this one's ``ClearToolUsesEdit``
  never mutates a message (it puts edited copies in the list), so a shallow copy is
  enough. A LangChain edit (or any other ``ContextEdit``) in ``edits`` still gets a deep
  copy. ``clear_at_least`` is checked on per-message counts, not a recount of the whole
  list after each cleared result. The pairing of calls and results and the replacements
  made are remembered per history too: a turn pairs only its new messages and decides only
  the results that left the ``keep`` window (the earlier decisions depend on nothing the
  turn adds), unless ``clear_at_least`` (an early stop on counts) or the settings changed.
"""

from __future__ import annotations

import functools
import math
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ctxtrim._core import MessageLog
from ctxtrim.integrations._common import missing_extra
from ctxtrim.integrations.langchain import to_skeleton
from ctxtrim.integrations.langchain import trim_messages as _pair_safe_trim

try:
    from langchain.agents.middleware import context_editing as _lc_editing
    from langchain.agents.middleware import summarization as _lc_summarization
    from langchain.agents.middleware.types import ModelRequest, ModelResponse
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        RemoveMessage,
        ToolMessage,
    )
    from langchain_core.messages.utils import count_tokens_approximately
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("langchain", "langchain", _err) from _err

__all__ = ["ClearToolUsesEdit", "ContextEditingMiddleware", "SummarizationMiddleware"]

DEFAULT_TOOL_PLACEHOLDER = _lc_editing.DEFAULT_TOOL_PLACEHOLDER
TokenCounter = Callable[[Sequence[BaseMessage]], int]

# -- counting once per message -----------------------------------------------------------------

_SCALING = "use_usage_metadata_scaling"
_MEMOS = 64  # histories remembered per counter (one middleware serves many threads)
_CACHED = 200_000  # per-message results remembered (by object) before the cache restarts
# Guards the memos' prefixes, extended in place (one lock for the module, so that a
# middleware stays deep-copyable; the work under it is the new messages of one turn).
_SCAN_LOCK = threading.Lock()


def _remember(cache: dict[Any, tuple[Any, Any]], key: Any, source: Any, value: Any) -> Any:
    """``value``, cached under ``key`` with the object it was made from (kept alive, so an
    ``id()`` in the key is never reused while the entry lives)."""
    if len(cache) >= _CACHED:
        cache.clear()
    cache[key] = (source, value)
    return value


def _approximate_keywords(counter: object) -> dict[str, Any] | None:
    """The keywords of ``counter`` when it is langchain-core's ``count_tokens_approximately``
    (plain or a ``functools.partial`` of it with keyword arguments only), else None."""
    if counter is count_tokens_approximately:
        return {}
    if (
        isinstance(counter, functools.partial)
        and counter.func is count_tokens_approximately
        and not counter.args
        # Not extra_tokens_per_message: a fractional one is rounded once for the whole list,
        # so per-message counts would not add up to LangChain's total.
        and set(counter.keywords) <= {_SCALING, "chars_per_token"}
    ):
        return dict(counter.keywords)
    return None


@dataclass
class _Scan:
    """What ``count_tokens_approximately`` accumulates over a list, after its first
    ``len(prefix)`` messages (``prefix`` keeps them, to recognise the next list)."""

    prefix: list[BaseMessage]
    tokens: int = 0  # the unscaled sum of the per-message counts
    provider: Any = None
    mixed: bool = False
    last_total: int | None = None
    at_last: int = 0


class _ApproximateCounter:
    """``count_tokens_approximately(messages, **keywords)``, the same number, computed on
    the messages a list adds to the list of an earlier call (per history, by the first
    message's id) instead of on the whole list.

    A message's count is ``count_tokens_approximately([message])`` (integral: LangChain
    rounds up per message "so that individual message token counts add up to the total");
    the usage scaling is replayed from the running state LangChain's loop keeps.
    """

    def __init__(self, keywords: dict[str, Any]) -> None:
        self.keywords = dict(keywords)
        self.scaling = bool(keywords.get(_SCALING, False))
        one = {k: v for k, v in keywords.items() if k != _SCALING}
        self.one: Callable[[list[BaseMessage]], float] = functools.partial(
            count_tokens_approximately, **one
        )
        self._memos: dict[str, _Scan] = {}
        self._counts: dict[int, tuple[BaseMessage, int]] = {}

    def _whole(self, messages: Sequence[Any], ensure_ids: bool) -> int:
        """LangChain's count of the whole list (ids given first, as LangChain does)."""
        if ensure_ids:
            for m in messages:
                if is_base(m) and m.id is None:
                    m.id = str(uuid.uuid4())
        return int(count_tokens_approximately(messages, **self.keywords))

    def message(self, message: BaseMessage) -> int:
        """``count_tokens_approximately([message])``, once per message object."""
        hit = self._counts.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        return int(_remember(self._counts, id(message), message, int(self.one([message]))))

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        return self.count(messages)

    def count(self, messages: Sequence[Any], *, ensure_ids: bool = False) -> int:
        """The count of ``messages``; with ``ensure_ids`` the messages it has not seen get
        an id first, as ``SummarizationMiddleware._ensure_message_ids`` gives them."""
        if not isinstance(messages, list) or not messages or not is_base(messages[0]):
            return self._whole(messages, ensure_ids)
        if ensure_ids and messages[0].id is None:
            messages[0].id = str(uuid.uuid4())
        key = messages[0].id
        if not isinstance(key, str):  # nothing to know the history by: count it whole
            return self._whole(messages, ensure_ids)
        with _SCAN_LOCK:  # the memo's prefix is extended in place
            scan = self._memos.get(key)
            if scan is None:
                scan = self._memos[key] = _Scan([])
                if len(self._memos) > _MEMOS:
                    self._memos.pop(next(iter(self._memos)))
            k = len(scan.prefix)
            new = messages[k:]
            if not all(map(is_base, new)):  # a dict or tuple to convert: LangChain's way
                return self._whole(messages, ensure_ids)
            # The prefix extended by the new messages must equal the list: one C-level
            # comparison (identical objects are not compared further), without copying
            # the list (a copy costs a reference count per message: 4x the comparison).
            scan.prefix += new
            if scan.prefix != messages:  # an earlier message replaced, or removed
                if not all(map(is_base, messages)):
                    del self._memos[key]
                    return self._whole(messages, ensure_ids)
                scan = self._memos[key] = _Scan(list(messages))
                new = messages
            self._add(scan, new, ensure_ids)
            tokens: float = scan.tokens
            last_total, at_last, counted = scan.last_total, scan.at_last, not scan.mixed
            provider = scan.provider
        if (
            self.scaling
            and len(messages) > 1
            and counted
            and provider is not None
            and last_total is not None
            and at_last > 0
        ):
            tokens *= min(1.25, max(1.0, last_total / at_last))
        return math.ceil(tokens)

    def _add(self, scan: _Scan, new: Sequence[BaseMessage], ensure_ids: bool) -> None:
        """Run LangChain's loop over ``new``, from the state ``scan`` holds."""
        for m in new:
            if ensure_ids and m.id is None:
                m.id = str(uuid.uuid4())
            scan.tokens += self.message(m)
            if self.scaling and isinstance(m, AIMessage):
                provider = m.response_metadata.get("model_provider")
                if scan.provider is None:
                    scan.provider = provider
                elif provider != scan.provider:
                    scan.mixed = True
                usage = m.usage_metadata
                total = usage.get("total_tokens") if usage else None
                if isinstance(total, int):
                    scan.last_total, scan.at_last = total, scan.tokens


def is_base(message: object) -> bool:
    """Whether it is a message object (not a dict or tuple to convert)."""
    return isinstance(message, BaseMessage)


def _safe_cut(messages: Sequence[BaseMessage], cutoff: int) -> int:
    """The pair-safe cut for a summary ending before ``cutoff``: the nearest safe cut of the
    core at or before it, then past any ``ToolMessage`` whose call is nowhere (an orphan is
    summarised, as LangChain's fallback does, rather than kept first)."""
    n = len(messages)
    if cutoff >= n:
        return cutoff
    log = MessageLog([to_skeleton(m, i) for i, m in enumerate(messages)])
    cut = log.safe_cut_at_or_before(max(0, cutoff))
    while cut < n and isinstance(messages[cut], ToolMessage) and log.is_safe_cut(cut + 1):
        cut += 1
    return cut


# -- SummarizationMiddleware -------------------------------------------------------------------


class SummarizationMiddleware(_lc_summarization.SummarizationMiddleware):
    """LangChain's ``SummarizationMiddleware``, deciding in O(new messages) a turn with the
    default counter and cutting only at pair-safe indices (see the module docstring)."""

    def __init__(
        self,
        model: Any,
        *,
        trigger: Any = None,
        keep: Any = ("messages", _lc_summarization._DEFAULT_MESSAGES_TO_KEEP),
        token_counter: _lc_summarization.TokenCounter = count_tokens_approximately,
        summary_prompt: str = _lc_summarization.DEFAULT_SUMMARY_PROMPT,
        trim_tokens_to_summarize: int | None = _lc_summarization._DEFAULT_TRIM_TOKEN_LIMIT,
        summarizer: Any = None,
        **deprecated_kwargs: Any,
    ) -> None:
        super().__init__(
            model,
            trigger=trigger,
            keep=keep,
            token_counter=token_counter,
            summary_prompt=summary_prompt,
            trim_tokens_to_summarize=trim_tokens_to_summarize,
            summarizer=summarizer,
            **deprecated_kwargs,
        )
        self._counted_for: object = None
        self._counter: _ApproximateCounter | None = None

    def _fast_counter(self) -> _ApproximateCounter | None:
        """The per-message counter standing for ``self.token_counter``, when it is the
        approximate one (looked at each call: tests and users may swap it)."""
        counter = self.token_counter
        if counter is not self._counted_for:
            keywords = _approximate_keywords(counter)
            self._counter = None if keywords is None else _ApproximateCounter(keywords)
            self._counted_for = counter
        return self._counter

    def _decide(self, state: Any) -> tuple[list[AnyMessage], int] | None:
        """The messages and the cutoff when a summary is due, else None."""
        messages = state["messages"]
        fast = self._fast_counter()
        if fast is not None and isinstance(messages, list):
            total = fast.count(messages, ensure_ids=True)
        else:
            self._ensure_message_ids(messages)
            total = self.token_counter(messages)
        if not self._should_summarize(messages, total):
            return None
        cutoff = self._determine_cutoff_index(messages)
        if cutoff <= 0:
            return None
        return messages, cutoff

    def _update(self, preserved: list[AnyMessage], summary: str) -> dict[str, Any]:
        return {
            "messages": [
                RemoveMessage(id=REMOVE_ALL_MESSAGES),
                *self._build_new_messages(summary),
                *preserved,
            ]
        }

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """LangChain's hook: the state update replacing the history by a summary and the
        kept part, or None (the common turn)."""
        due = self._decide(state)
        if due is None:
            return None
        old, preserved = self._partition_messages(*due)
        return self._update(preserved, self._create_summary(old))

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """The async hook, as :meth:`before_model`."""
        due = self._decide(state)
        if due is None:
            return None
        old, preserved = self._partition_messages(*due)
        return self._update(preserved, await self._acreate_summary(old))

    @staticmethod
    def _find_safe_cutoff_point(messages: list[AnyMessage], cutoff_index: int) -> int:
        """The pair-safe cut at or before ``cutoff_index`` (past orphan results)."""
        return _safe_cut(messages, cutoff_index)

    def _trim_messages_for_summary(self, messages: list[AnyMessage]) -> list[AnyMessage]:
        """What the summariser is sent: the newest part within ``trim_tokens_to_summarize``,
        trimmed by ctxtrim's pair-safe ``trim_messages`` (same arguments as LangChain's)."""
        if self.trim_tokens_to_summarize is None:
            return messages
        try:
            out = _pair_safe_trim(
                messages,
                max_tokens=self.trim_tokens_to_summarize,
                token_counter=self.token_counter,
                start_on="human",
                strategy="last",
                allow_partial=True,
                include_system=True,
            )
        except Exception:
            return messages[-_lc_summarization._DEFAULT_FALLBACK_MESSAGE_COUNT :]
        return list(out)  # type: ignore[arg-type]


# -- ContextEditingMiddleware ------------------------------------------------------------------


@dataclass(slots=True)
class ClearToolUsesEdit(_lc_editing.ClearToolUsesEdit):
    """LangChain's ``ClearToolUsesEdit`` (same fields, same result on valid histories),
    pairing results with calls in one pass and never mutating a message: a cleared result
    or input is a copy put in the list.

    A ``ToolMessage`` is paired with the latest earlier ``AIMessage`` issuing its id (the
    core's rule); an orphan is left alone, as LangChain leaves it.
    """

    #: Edits only by replacing list entries: the middleware need not deep-copy for it.
    _never_mutates: ClassVar[bool] = True
    # The edited copy of a message, by (the original's id, what was cleared): the state is
    # never edited, so every model call clears the same old results again; a copy is made
    # once per result, not once per call.
    _copies: dict[Any, tuple[Any, Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    _scans: dict[str, _PairScan] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _cleared(self, message: ToolMessage) -> ToolMessage:
        key = (id(message), self.placeholder)
        hit = self._copies.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]  # type: ignore[no-any-return]
        cleared = message.model_copy(
            update={
                "artifact": None,
                "content": self.placeholder,
                "response_metadata": {
                    **message.response_metadata,
                    "context_editing": {"cleared": True, "strategy": "clear_tool_uses"},
                },
            }
        )
        return _remember(self._copies, key, message, cleared)  # type: ignore[no-any-return]

    def _cleared_input(self, message: AIMessage, tool_call_id: str) -> AIMessage:
        key = (id(message), tool_call_id)
        hit = self._copies.get(key)
        if hit is not None and hit[0] is message:
            return hit[1]  # type: ignore[no-any-return]
        edited = self._build_cleared_tool_input_message(message, tool_call_id)
        return _remember(self._copies, key, message, edited)  # type: ignore[no-any-return]

    def _settings(self) -> tuple[Any, ...]:
        return (self.keep, self.placeholder, tuple(self.exclude_tools), self.clear_tool_inputs)

    def _scan(self, messages: list[AnyMessage]) -> _PairScan:
        """The pairing of ``messages``: from the scan of the list it extends (per history,
        by the first message's id), scanning only the new part, or from scratch."""
        key = messages[0].id if messages and is_base(messages[0]) else None
        scan = self._scans.get(key) if isinstance(key, str) else None
        if scan is not None:
            k = len(scan.prefix)
            scan.prefix += messages[k:]
            if scan.prefix != messages:  # not an extension: start again
                scan = None
        if scan is None:
            scan = _PairScan([], {}, [], [], 0, self._settings())
            scan.prefix += messages
            k = 0
            if isinstance(key, str):
                if len(self._scans) >= _MEMOS:
                    self._scans.pop(next(iter(self._scans)))
                self._scans[key] = scan
        calls, candidates = scan.calls, scan.candidates
        for i in range(k, len(messages)):
            m = messages[i]
            if isinstance(m, ToolMessage):
                call = calls.get(m.tool_call_id)
                candidates.append((i, *call) if call else (i, None, None))
            elif isinstance(m, AIMessage):
                for tc in m.tool_calls:
                    call_id = tc.get("id")
                    if call_id:
                        calls[call_id] = (i, tc["name"])
        return scan

    def apply(self, messages: list[AnyMessage], *, count_tokens: TokenCounter) -> None:
        """Clear the old tool results of ``messages`` in place (entries replaced) when
        ``count_tokens(messages)`` is over ``trigger``."""
        tokens = count_tokens(messages)
        if tokens <= self.trigger:
            return
        per_message = (
            count_tokens.message if isinstance(count_tokens, _ApproximateCounter) else None
        )
        with _SCAN_LOCK:
            scan = self._scan(messages)
            end = len(scan.candidates) - self.keep
            if end <= 0:
                return
            # What earlier calls decided for the oldest results holds as long as the list
            # extends theirs and the settings are the same: a decision reads only the
            # result, its call and the settings. With clear_at_least it also reads the
            # counts (an early stop), so it is taken afresh each call.
            settings = self._settings()
            if self.clear_at_least or scan.settings != settings:
                scan.applied, scan.done, scan.settings = [], 0, settings
            for idx, replacement in scan.applied:
                messages[idx] = replacement
            excluded = set(self.exclude_tools)
            freed = 0
            for idx, ai_idx, name in scan.candidates[scan.done : end]:
                tool_message = messages[idx]
                assert isinstance(tool_message, ToolMessage)
                if tool_message.response_metadata.get("context_editing", {}).get("cleared"):
                    continue
                if ai_idx is None:
                    continue  # an orphan: no call to pair it with
                if (tool_message.name or name) in excluded:
                    continue
                cleared = self._cleared(tool_message)
                messages[idx] = cleared
                scan.applied.append((idx, cleared))
                if per_message is not None:
                    freed += per_message(tool_message) - per_message(cleared)
                if self.clear_tool_inputs:
                    ai_message = messages[ai_idx]
                    assert isinstance(ai_message, AIMessage)
                    edited = self._cleared_input(ai_message, tool_message.tool_call_id)
                    messages[ai_idx] = edited
                    scan.applied.append((ai_idx, edited))
                    if per_message is not None:
                        freed += per_message(ai_message) - per_message(edited)
                if self.clear_at_least > 0:
                    if per_message is None:
                        freed = max(0, tokens - count_tokens(messages))
                    if freed >= self.clear_at_least:
                        break
            if not self.clear_at_least:
                scan.done = end


@dataclass
class _PairScan:
    """A list's tool calls and results, paired, and what clearing its oldest results gave
    (``applied``: the entries replaced, in order, for ``candidates[:done]``)."""

    prefix: list[Any]
    calls: dict[str, tuple[int, str]]  # tool-call id -> (AIMessage index, tool name)
    candidates: list[tuple[int, int | None, str | None]]  # (ToolMessage index, its call)
    applied: list[tuple[int, Any]]
    done: int
    settings: tuple[Any, ...]


class ContextEditingMiddleware(_lc_editing.ContextEditingMiddleware):
    """LangChain's ``ContextEditingMiddleware`` with ctxtrim's :class:`ClearToolUsesEdit`
    by default, counting once per message and copying the list, not the messages, when
    every edit is one that never mutates (see the module docstring)."""

    def __init__(
        self,
        *,
        edits: Iterable[Any] | None = None,
        token_count_method: Any = "approximate",
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(
            edits=list(edits) if edits is not None else [ClearToolUsesEdit()],
            token_count_method=token_count_method,
            token_counter=token_counter,
        )
        self._approximate = _ApproximateCounter({})

    def _resolve_token_counter(self, request: ModelRequest[Any]) -> TokenCounter:
        if self.token_counter is None and self.token_count_method == "approximate":
            return self._approximate
        return super()._resolve_token_counter(request)

    def _edited(self, request: ModelRequest[Any]) -> list[AnyMessage]:
        count_tokens = self._resolve_token_counter(request)
        if all(getattr(edit, "_never_mutates", False) for edit in self.edits):
            edited = list(request.messages)
        else:
            edited = deepcopy(list(request.messages))
        for edit in self.edits:
            edit.apply(edited, count_tokens=count_tokens)
        return edited

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> Any:
        """Apply the edits, then call the model with the edited messages."""
        if not request.messages:
            return handler(request)
        return handler(request.override(messages=self._edited(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> Any:
        """The async hook, as :meth:`wrap_model_call`."""
        if not request.messages:
            return await handler(request)
        return await handler(request.override(messages=self._edited(request)))
