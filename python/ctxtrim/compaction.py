"""LLM-backed compaction: :func:`compact_context`, :class:`AutoCompactStore` and the
:class:`CompletionTransport` protocol the summarisers implement.

Compaction replaces the old part of a history by one summary message. Invariants:

* **Pair-safe.** The cut is a safe cut of the core's index
  (``MessageLog.safe_cut_at_or_before``): no tool use before it has its result after it, and
  the kept part never starts with a tool result. ``keep_recent=0`` is valid (summarise
  everything after the pinned head). ``keep=`` takes a keep policy instead
  (:mod:`ctxtrim.keep`: at least N messages, at most N tokens or a fraction of the window).
* **Capped summariser input.** With ``summary_input_tokens`` the summariser is sent only
  the newest pair-safe part of the summarised span that fits (earlier summaries always go);
  the oldest messages beyond the cap are left out of the request, not out of the count:
  ``summarised_messages`` still covers the whole span.
* **Pinned head.** Leading system messages and the task — the first real user message that
  carries no tool result and is not itself a summary — are kept verbatim, before the summary.
* **Shape.** ``[*system, task, summary, *recent]``. The summary is a *user* message whose
  ``meta`` holds ``{"ctxtrim": {"summary": true, "summarised_messages": n}}``; no
  acknowledgement is inserted, so compaction never creates two consecutive assistant
  messages (axio's ``[summary, "Understood", *recent]`` does when ``recent`` starts with an
  assistant). A user message (task or summary) always precedes the kept part.
* **Summaries fold.** An earlier summary in the summarised span is handed to the transport
  as a message still tagged as a summary; the transports render it as "Previous summary"
  and merge it rather than summarising it as conversation. ``summarised_messages`` adds up.
* **Failure changes nothing.** A transport error or timeout raises (``compact_context``) or
  is reported (``AutoCompactStore``) as :class:`~ctxtrim.errors.CompactionError`, and no
  history is modified.
* **No lost writes.** ``AutoCompactStore`` reads ``store.snapshot()``, calls the summariser
  with no lock held, and writes with ``store.replace_prefix(upto, new, generation)``:
  messages appended meanwhile are kept, in order; a rewrite meanwhile (another compaction, a
  ``clear``) makes the write stale, and it retries once on a fresh snapshot. It never forks
  the inner store, so a persistent store gets no extra session.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ctxtrim import _core
from ctxtrim import observe as _observe
from ctxtrim.errors import (
    CompactionError,
    CompactionSettingsError,
    InvalidMessage,
    StaleGenerationError,
)
from ctxtrim.keep import Keep, KeepSpec
from ctxtrim.messages import Message
from ctxtrim.store import ContextStore, HistorySnapshot, SessionInfo
from ctxtrim.transports._render import DEFAULT_SYSTEM_PROMPT, SUMMARY_HEADER, is_summary
from ctxtrim.triggers import Trigger as _TriggerSpec
from ctxtrim.triggers import TriggerSpec

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AutoCompactStore",
    "CompactionEvent",
    "CompletionTransport",
    "compact_context",
    "is_summary",
]

logger = logging.getLogger("ctxtrim.compaction")

#: ``max_tokens`` of :class:`AutoCompactStore` when neither it nor the transport's
#: ``context_window`` is given (axio's fallback).
DEFAULT_CONTEXT_WINDOW = 128_000


@runtime_checkable
class CompletionTransport(Protocol):
    """Something that writes a summary of ``messages``.

    ``system`` is the summariser's instructions and ``max_tokens`` bounds the answer. A
    transport raises :class:`~ctxtrim.errors.CompactionError` when it cannot answer;
    anything else it raises is wrapped into one by the callers here. Messages tagged as
    earlier summaries (:func:`is_summary`) are context to merge, not conversation.
    """

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        """The summary text."""
        ...


def _check_int(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CompactionSettingsError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise CompactionSettingsError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    return float(timeout)


def _window(model: str | None, context_window: int | None) -> int | None:
    """The model's context window: ``context_window``, else ``model``'s from the table."""
    if context_window is not None:
        return _check_int("context_window", context_window, 1)
    if model is None:
        return None
    if not isinstance(model, str):
        raise CompactionSettingsError(f"model must be a model name (str), got {model!r}")
    from ctxtrim import models

    return models.context_window(model)


def _check_transport(transport: Any) -> CompletionTransport:
    """``transport``, or an axio transport (streaming, no ``complete``) wrapped in
    :class:`ctxtrim.integrations.axio.AxioTransport`."""
    if callable(getattr(transport, "complete", None)):
        return transport  # type: ignore[no-any-return]
    if callable(getattr(transport, "stream", None)):
        try:
            from ctxtrim.integrations.axio import AxioTransport
        except ImportError as err:
            raise CompactionSettingsError(
                f"transport {type(transport).__name__} streams like an axio transport, but "
                f"axio is not importable ({err}); install ctxtrim[axio] (Python >= 3.12)"
            ) from err
        return AxioTransport(transport)
    raise CompactionSettingsError(
        f"transport must have an async complete(messages, *, system, max_tokens) method "
        f"or be an axio transport (stream()), got {type(transport).__name__}"
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a compaction of one history replaces."""

    upto: int  # messages[:upto] are replaced by head + summary
    head: list[Message]  # pinned: leading system messages and the task
    old: list[Message]  # what the summariser gets (earlier summaries included, tagged)
    summarised: int  # messages the new summary stands for (earlier summaries' counts added)


def _summarised_count(message: Message) -> int:
    tag = (message.meta or {}).get("ctxtrim")
    count = tag.get("summarised_messages") if isinstance(tag, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else 0


def _plan(history: Sequence[Message], keep: Keep, input_tokens: int | None = None) -> _Plan | None:
    """The compaction of ``history`` keeping what ``keep`` says, or ``None`` when there is
    nothing to summarise; with ``input_tokens``, the summariser's share is capped."""
    n = len(history)
    sys_end = 0
    while sys_end < n and history[sys_end].role == "system":
        sys_end += 1
    log = _core.MessageLog(history)
    cut = keep.cut(log)
    # A safe cut never separates a pair; an orphan result (a broken input) would still be
    # first, so step back past it too: the kept part never starts with a tool result.
    while cut > sys_end and cut < n and history[cut].tool_results:
        cut = log.safe_cut_at_or_before(cut - 1)
    if cut <= sys_end:
        return None
    task = next(
        (
            i
            for i in range(sys_end, cut)
            if history[i].is_real_user
            and not history[i].tool_results
            and not is_summary(history[i])
        ),
        None,
    )
    old = [history[i] for i in range(sys_end, cut) if i != task]
    conversation = [m for m in old if not is_summary(m)]
    if not conversation:
        return None  # only earlier summaries: re-summarising them gains nothing
    head = list(history[:sys_end]) + ([history[task]] if task is not None else [])
    summarised = len(conversation) + sum(_summarised_count(m) for m in old if is_summary(m))
    if input_tokens is not None:
        old = _capped(old, input_tokens)
    return _Plan(cut, head, old, summarised)


def _capped(old: list[Message], budget: int) -> list[Message]:
    """What the summariser is sent of ``old`` under a ``budget`` of tokens: the earlier
    summaries (the memory so far), then the newest pair-safe suffix of the rest that fits;
    at least the newest pair-safe piece, so a summary is never written from nothing."""
    summaries = [m for m in old if is_summary(m)]
    rest = [m for m in old if not is_summary(m)]
    log = _core.MessageLog(rest)
    if log.total_tokens + sum(_core.message_tokens(m) for m in summaries) <= budget:
        return old
    left = budget - sum(_core.message_tokens(m) for m in summaries)
    start = Keep("tokens", max(0, left), "").cut(log)
    if start >= len(rest):
        start = log.safe_cut_at_or_before(len(rest) - 1)
    # A tool result answering a call left out is not sent either (a broken input's orphan).
    while start < len(rest) and rest[start].tool_results:
        start += 1
    return [*summaries, *rest[start:]]


def _keep_policy(
    keep: KeepSpec | None, keep_recent: int, window: int | None, *, default_recent: int = 6
) -> Keep:
    """The keep policy of the ``keep``/``keep_recent`` arguments (one of them)."""
    if keep is None:
        return Keep.messages(keep_recent)
    if keep_recent != default_recent:
        raise CompactionSettingsError(
            f"give keep= or keep_recent=, not both (keep={keep!r}, keep_recent={keep_recent})"
        )
    return Keep.parse(keep, window=window, error=CompactionSettingsError)


def _check_cap(value: object) -> int | None:
    if value is None:
        return None
    return _check_int("summary_input_tokens", value, 1)


async def _summarise(
    transport: CompletionTransport,
    old: Sequence[Message],
    *,
    system_prompt: str | None,
    max_summary_tokens: int,
    timeout: float | None,
) -> str:
    """The transport's summary of ``old``; every failure becomes a ``CompactionError``."""
    name = type(transport).__name__
    try:
        call = transport.complete(
            old, system=system_prompt or DEFAULT_SYSTEM_PROMPT, max_tokens=max_summary_tokens
        )
        text = await (asyncio.wait_for(call, timeout) if timeout is not None else call)
    except CompactionError:
        raise
    except asyncio.TimeoutError as err:
        raise CompactionError(
            f"{name} did not answer within {timeout:g} s", kind="timeout"
        ) from err
    except Exception as err:
        raise CompactionError(f"{name} failed: {err!r}", kind="transport_error") from err
    if not isinstance(text, str) or not text.strip():
        raise CompactionError(f"{name} returned an empty summary", kind="empty_summary")
    return text.strip()


def _summary_message(text: str, summarised: int) -> Message:
    try:
        return Message.user(
            f"{SUMMARY_HEADER}\n\n{text}",
            meta={"ctxtrim": {"summary": True, "summarised_messages": summarised}},
        )
    except InvalidMessage as err:  # e.g. a custom transport returned a lone surrogate
        raise CompactionError(f"the summary is not valid text: {err}") from err


async def compact_context(
    context: ContextStore | Sequence[Message],
    transport: CompletionTransport,
    *,
    max_messages: int = 20,
    keep_recent: int = 6,
    system_prompt: str | None = None,
    max_summary_tokens: int = 1024,
    timeout: float | None = 60.0,
    keep: KeepSpec | None = None,
    summary_input_tokens: int | None = None,
    model: str | None = None,
    context_window: int | None = None,
) -> list[Message] | None:
    """The history of ``context`` (a store, read but never modified, or a list of messages)
    with everything before the last ~``keep_recent`` messages replaced by one summary.

    Returns ``None`` when the history has at most ``max_messages`` messages, or when
    nothing lies between the pinned head and the kept part (see the module docstring for
    the shape and guarantees). ``keep_recent`` is moved back to the nearest pair-safe cut,
    so slightly more may be kept. ``keep`` replaces it with a keep policy
    (:mod:`ctxtrim.keep`): ``("messages", 20)``, ``("tokens", 3000)`` or
    ``("fraction", 0.3)`` of ``context_window`` (or of ``model``'s, from
    :mod:`ctxtrim.models`). ``summary_input_tokens`` caps what the summariser is sent (the
    newest pair-safe part of the span that fits; the summary still covers the whole span).
    Raises :class:`~ctxtrim.errors.CompactionError` when the transport fails, times out
    (``timeout`` seconds; ``None`` waits forever) or returns nothing, and
    :class:`~ctxtrim.errors.CompactionSettingsError` for bad settings.
    """
    _check_int("max_messages", max_messages, 0)
    _check_int("keep_recent", keep_recent, 0)
    window = _window(model, context_window)
    policy = _keep_policy(keep, keep_recent, window)
    cap = _check_cap(summary_input_tokens)
    _check_int("max_summary_tokens", max_summary_tokens, 1)
    timeout = _check_timeout(timeout)
    transport = _check_transport(transport)
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise CompactionSettingsError(f"system_prompt must be a str, got {system_prompt!r}")
    if isinstance(context, ContextStore):
        history = await context.get_history()
    elif callable(getattr(context, "get_history", None)):  # another framework's store
        name = type(context).__name__
        raise TypeError(
            f"compact_context takes a ctxtrim ContextStore or a list of ctxtrim Messages, "
            f"got {name}: for axio's result on an axio store call "
            f"ctxtrim.integrations.axio.compact_context(context, transport); to compact the "
            f"ctxtrim store an AxioContextStore wraps, pass its .store"
        )
    else:
        history = list(context)
        for i, m in enumerate(history):
            if not isinstance(m, Message):
                raise InvalidMessage(f"expected a Message, got {type(m).__name__}", f"[{i}]")
    if len(history) <= max_messages:
        return None
    plan = _plan(history, policy, cap)
    if plan is None:
        return None
    text = await _summarise(
        transport,
        plan.old,
        system_prompt=system_prompt,
        max_summary_tokens=max_summary_tokens,
        timeout=timeout,
    )
    return [*plan.head, _summary_message(text, plan.summarised), *history[plan.upto :]]


EventKind = Literal["compacted", "failed", "stale", "skipped"]
Trigger = Literal["reported", "estimate", "manual", "overflow"]
#: ``AutoCompactStore(after_compaction=...)``: given the compacted history about to be
#: written, the messages to put right after the summary (or None).
AfterCompaction = Callable[
    [list[Message]], "Sequence[Message] | Awaitable[Sequence[Message] | None] | None"
]


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """What one compaction attempt of an :class:`AutoCompactStore` did.

    ``kind``: ``"compacted"`` (history rewritten), ``"failed"`` (the transport failed or
    timed out; ``error`` is the :class:`~ctxtrim.errors.CompactionError`, history
    untouched), ``"stale"`` (the history was rewritten by someone else twice during the
    attempt; gave up, history untouched by this attempt) or ``"skipped"`` (nothing to
    summarise, or a compaction was already running). ``reason`` says why in words.
    ``messages_*`` and ``tokens_*`` (context tokens) are read before the attempt and after
    it; after a ``compacted`` or ``stale`` attempt they include messages appended
    meanwhile, after a ``failed`` or ``skipped`` one they are the snapshot's. ``injected``
    counts the messages ``after_compaction`` put after the summary. ``trigger`` is
    ``"overflow"`` for a compaction :func:`ctxtrim.overflow.retry_on_overflow` asked for.
    """

    kind: EventKind
    reason: str
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    trigger: Trigger
    session_id: str
    summarised: int = 0
    attempts: int = 0
    error: CompactionError | None = None
    injected: int = 0


def _injected(value: object) -> list[Message]:
    """The messages an ``after_compaction`` hook returned, checked to be pair-complete."""
    from ctxtrim.validate import validate

    if value is None:
        return []
    if isinstance(value, (str, bytes, Message)) or not isinstance(value, Sequence):
        raise CompactionError(
            f"after_compaction must return a list of Messages or None, got {type(value).__name__}",
            kind="hook_error",
        )
    out = list(value)
    for i, m in enumerate(out):
        if not isinstance(m, Message):
            raise CompactionError(
                f"after_compaction returned a {type(m).__name__} at [{i}], not a Message",
                kind="hook_error",
            )
    broken = [v for v in validate(out) if v.kind != "non_user_first_turn"]
    if broken:
        raise CompactionError(
            f"after_compaction returned messages that are not pair-complete: {broken[0]}",
            kind="hook_error",
        )
    return out


class AutoCompactStore(ContextStore):
    """A :class:`ContextStore` that compacts its history with an LLM summary when the
    context grows past ``threshold`` * ``max_tokens``.

    Wraps any store implementing ``snapshot`` and ``replace_prefix`` (every ctxtrim
    store) and delegates the whole ``ContextStore`` API to it. ``max_tokens`` is the
    model's context window: by default the transport's ``context_window`` attribute, else
    128,000. The context size is the provider-reported ``input_tokens`` of the last
    ``add_context_tokens`` call plus the estimate of what was appended since, or, before
    any report, the store's estimate (``load_log().estimated_context_tokens()``).

    A compaction runs inside the ``append``/``add_context_tokens`` call that crossed the
    threshold (so the caller's next model call sees the short history) without blocking
    other writers: appends made meanwhile go straight to the store and survive the rewrite.
    Every attempt is logged on ``ctxtrim.compaction`` and handed to ``on_event`` as a
    :class:`CompactionEvent`; a failed summary never raises out of ``append``. After an
    automatic attempt that did not compact, the next one waits until the context has grown
    by a tenth of ``trigger_tokens`` (a rate-limited provider is not called on every
    append); :meth:`compact` always tries.

    ``after_compaction(history)`` re-injects what a summary must not lose (the plan, the
    files last read): it is called with the compacted history about to be written
    (``[*system, task, summary, *recent]``) and returns messages to insert right after the
    summary, or None. They are written in the same atomic ``replace_prefix`` as the summary,
    so no reader sees the history without them; they must be pair-complete (every tool call
    with its result), and the event counts them (``injected``). A hook that raises, or
    returns anything else, fails the compaction (``kind="hook_error"``): the history is left
    as it was rather than written without the state the hook keeps.

    ``trigger`` replaces ``threshold`` with a trigger spec (:mod:`ctxtrim.triggers`):
    tokens, messages, user turns or a fraction of ``max_tokens``, combined with any (a
    list) or all (a dict): ``trigger={"fraction": 0.8}``, ``trigger=[("tokens", 150_000),
    {"messages": 400}]``. Counting messages or turns reads the store's cached log.

    ``keep`` replaces ``keep_recent`` with a keep policy (:mod:`ctxtrim.keep`):
    ``("messages", 20)`` (at least), ``("tokens", 3000)`` (at most) or ``("fraction", 0.3)``
    of ``max_tokens``. ``summary_input_tokens`` caps what the summariser is sent per
    compaction (LangChain's ``trim_tokens_to_summarize``): the newest pair-safe part of the
    summarised span that fits, with the earlier summary.
    """

    def __init__(
        self,
        store: ContextStore,
        transport: CompletionTransport,
        *,
        keep_recent: int = 6,
        max_tokens: int | None = None,
        threshold: float = 0.75,
        on_event: Callable[[CompactionEvent], Any] | None = None,
        timeout: float | None = 60.0,
        system_prompt: str | None = None,
        max_summary_tokens: int = 1024,
        after_compaction: AfterCompaction | None = None,
        trigger: TriggerSpec | None = None,
        keep: KeepSpec | None = None,
        summary_input_tokens: int | None = None,
    ) -> None:
        if not isinstance(store, ContextStore):
            raise CompactionSettingsError(
                f"store must be a ContextStore, got {type(store).__name__}"
            )
        for method in ("snapshot", "replace_prefix"):
            if getattr(type(store), method) is getattr(ContextStore, method):
                raise CompactionSettingsError(
                    f"{type(store).__name__} does not implement {method}(), which "
                    "AutoCompactStore needs to rewrite the history without losing appends"
                )
        transport = _check_transport(transport)
        _check_int("keep_recent", keep_recent, 0)
        if max_tokens is not None:
            _check_int("max_tokens", max_tokens, 1)
        if (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not 0 < threshold <= 1
        ):
            raise CompactionSettingsError(f"threshold must be in (0, 1], got {threshold!r}")
        if on_event is not None and not callable(on_event):
            raise CompactionSettingsError(f"on_event must be callable, got {on_event!r}")
        if after_compaction is not None and not callable(after_compaction):
            raise CompactionSettingsError(
                f"after_compaction must be callable, got {after_compaction!r}"
            )
        self.after_compaction = after_compaction
        _check_int("max_summary_tokens", max_summary_tokens, 1)
        self._store = store
        self.transport = transport
        self.keep_recent = keep_recent
        self.max_tokens = max_tokens
        self.threshold = float(threshold)
        self.on_event = on_event
        self.timeout = _check_timeout(timeout)
        self.system_prompt = system_prompt
        self.max_summary_tokens = max_summary_tokens
        window = max_tokens or getattr(transport, "context_window", None) or DEFAULT_CONTEXT_WINDOW
        self.keep = keep
        self._keep = _keep_policy(keep, keep_recent, window)
        self.summary_input_tokens = _check_cap(summary_input_tokens)
        self.trigger = trigger
        self._trigger = (
            None
            if trigger is None
            else _TriggerSpec.parse(trigger, window=window, error=CompactionSettingsError)
        )
        #: Compaction starts when the context reaches this many tokens (with a ``trigger``
        #: spec: its smallest token threshold, else ``threshold`` of the window).
        self.trigger_tokens = max(1, int(window * self.threshold))
        if self._trigger is not None and self._trigger.min_tokens is not None:
            self.trigger_tokens = max(1, self._trigger.min_tokens)
        #: The summary's budget: ``max_summary_tokens``, but at most a fifth of the trigger
        #: (and at least 64), so a compacted history lands well under the trigger instead of
        #: re-triggering.
        self.summary_tokens = min(max_summary_tokens, max(64, self.trigger_tokens // 5))
        self._context: int | None = None  # current context tokens, None = ask the store
        self._running = False
        # After an automatic attempt that did not compact (provider down, nothing to
        # summarise), wait until the context has grown by a tenth of the trigger before
        # trying again: a 429 must not turn every append into a summary call.
        self._hold_until: int | None = None

    # -- settings and delegation ---------------------------------------------------------

    @property
    def inner(self) -> ContextStore:
        """The wrapped store."""
        return self._store

    @property
    def session_id(self) -> str:
        return self._store.session_id

    def __getattr__(self, name: str) -> Any:
        # Backend extras (``log``...) pass through. Only called for names
        # not found normally; ``_store`` itself must exist to avoid recursion in copies.
        if name.startswith("__") or "_store" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._store, name)

    def __repr__(self) -> str:
        return (
            f"AutoCompactStore({self._store!r}, {self.transport!r}, "
            f"trigger_tokens={self.trigger_tokens}, keep_recent={self.keep_recent})"
        )

    async def get_history(self, limit: int | None = None) -> list[Message]:
        return await self._store.get_history(limit)

    async def append(self, message: Message) -> None:
        await self._store.append(message)
        if self._context is not None:
            self._context += _core.message_tokens(message)
        await self._maybe_compact("estimate")

    async def append_many(self, messages: Sequence[Message]) -> None:
        await self._store.append_many(messages)
        if self._context is not None:
            self._context += sum(_core.message_tokens(m) for m in messages)
        await self._maybe_compact("estimate")

    async def clear(self) -> None:
        await self._store.clear()
        self._context = self._hold_until = None

    async def generation(self) -> int:
        return await self._store.generation()

    async def snapshot(self) -> HistorySnapshot:
        return await self._store.snapshot()

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        if expected_length is None:  # an inner store written before expected_length
            await self._store.replace_prefix(upto, messages, expected_generation)
        else:
            await self._store.replace_prefix(
                upto, messages, expected_generation, expected_length=expected_length
            )
        self._context = self._hold_until = None

    async def remove_turn(self, turn: int | str | _core.TurnId) -> int:
        removed = await self._store.remove_turn(turn)
        self._context = self._hold_until = None
        return removed

    async def attach_compact_summary(self, tool_use_id: str, summary: str) -> bool:
        return await self._store.attach_compact_summary(tool_use_id, summary)

    async def load_log(self) -> _core.MessageLog:
        return await self._store.load_log()

    async def fork(self) -> AutoCompactStore:
        """A wrapper with the same settings around ``inner.fork()``."""
        return AutoCompactStore(
            await self._store.fork(),
            self.transport,
            keep_recent=self.keep_recent,
            max_tokens=self.max_tokens,
            threshold=self.threshold,
            on_event=self.on_event,
            timeout=self.timeout,
            system_prompt=self.system_prompt,
            max_summary_tokens=self.max_summary_tokens,
            after_compaction=self.after_compaction,
            trigger=self.trigger,
            keep=self.keep,
            summary_input_tokens=self.summary_input_tokens,
        )

    async def retry_on_overflow(
        self,
        call: Callable[[list[Message]], Any],
        *,
        strategy: Any = None,
    ) -> Any:
        """``await ctxtrim.overflow.retry_on_overflow(call, store=self, strategy=strategy)``:
        call with the history; on a context-overflow refusal compact and call once more."""
        from ctxtrim.overflow import retry_on_overflow

        return await retry_on_overflow(call, store=self, strategy=strategy)

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        await self._store.set_context_tokens(input_tokens, output_tokens)

    async def get_context_tokens(self) -> tuple[int, int]:
        return await self._store.get_context_tokens()

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the session's totals; ``input_tokens`` (the prompt size the provider
        reported for the last call) is also the current context size."""
        await self._store.add_context_tokens(input_tokens, output_tokens)
        self._context = input_tokens
        await self._maybe_compact("reported")

    async def close(self) -> None:
        await self._store.close()

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._store.list_sessions()

    @classmethod
    async def from_history(cls, history: Sequence[Message]) -> AutoCompactStore:
        raise TypeError(
            "AutoCompactStore wraps a store: build it with e.g. "
            "AutoCompactStore(await MemoryContextStore.from_history(history), transport)"
        )

    # -- compaction ----------------------------------------------------------------------

    async def context_tokens(self) -> int:
        """The current context size in tokens: the last reported input tokens plus the
        estimate of what was appended since, or the store's estimate before any report."""
        if self._context is None:
            self._context = (await self._store.load_log()).estimated_context_tokens()
        return self._context

    async def _maybe_compact(self, trigger: Trigger) -> None:
        if self._running:
            return
        tokens = await self.context_tokens()
        if self._trigger is None:
            if tokens < max(self.trigger_tokens, self._hold_until or 0):
                return
        elif not await self._spec_fired(tokens):
            return
        event = await self.compact(trigger=trigger)
        if event.kind != "compacted" or event.tokens_after >= self.trigger_tokens:
            # Not compacted, or compacted but still over (the kept part alone is that big):
            # compacting again at once would only re-summarise the summary.
            after = max(tokens, event.tokens_after)
            self._hold_until = after + max(1, self.trigger_tokens // 10)

    async def _spec_fired(self, tokens: int) -> bool:
        """Whether the ``trigger`` spec fires at ``tokens`` (and the hold has passed)."""
        spec = self._trigger
        assert spec is not None
        if self._hold_until is not None and tokens < self._hold_until:
            return False
        messages = turns = 0
        if spec.needs_messages or spec.needs_turns:
            log = await self._store.load_log()
            messages, turns = len(log), log.turn_count
        return spec.fired(tokens=tokens, messages=messages, turns=turns)

    async def compact(self, *, trigger: Trigger = "manual") -> CompactionEvent:
        """Compact now, whatever the context size; returns (and emits) what happened."""
        if self._running:
            return self._emit("skipped", "a compaction is already running", trigger, 0, 0, 0, 0)
        self._running = True
        try:
            event = await self._compact(trigger)
        finally:
            self._running = False
        if event.kind == "compacted":
            self._hold_until = None
        return event

    async def _compact(self, trigger: Trigger) -> CompactionEvent:
        tokens_before = await self.context_tokens()
        messages_before = 0
        for attempt in (1, 2):
            snap = await self._store.snapshot()
            if attempt == 1:
                messages_before = len(snap.messages)
            plan = _plan(snap.messages, self._keep, self.summary_input_tokens)
            if plan is None:
                return self._emit(
                    "skipped",
                    f"nothing to summarise before what keep={self._keep.spec} keeps",
                    trigger,
                    messages_before,
                    len(snap.messages),
                    tokens_before,
                    tokens_before,
                    attempts=attempt,
                )
            try:
                text = await _summarise(
                    self.transport,
                    plan.old,
                    system_prompt=self.system_prompt,
                    max_summary_tokens=self.summary_tokens,
                    timeout=self.timeout,
                )
                new = [*plan.head, _summary_message(text, plan.summarised)]
                injected = await self._inject(new, snap.messages[plan.upto :])
                new += injected
            except CompactionError as err:
                return self._emit(
                    "failed",
                    f"summary failed ({err.kind}): {err}; history left unchanged",
                    trigger,
                    messages_before,
                    len(snap.messages),
                    tokens_before,
                    tokens_before,
                    attempts=attempt,
                    error=err,
                )
            try:
                await self._store.replace_prefix(plan.upto, new, snap.generation)
            except StaleGenerationError as err:
                if attempt == 1:
                    logger.info(
                        "session %s: history rewritten during the summary (%s); retrying "
                        "on a fresh snapshot",
                        self.session_id,
                        err,
                    )
                    continue
                self._context = None
                after = len(await self._store.load_log())
                return self._emit(
                    "stale",
                    "the history was rewritten during both attempts; gave up, this "
                    "compaction changed nothing",
                    trigger,
                    messages_before,
                    after,
                    tokens_before,
                    await self.context_tokens(),
                    attempts=attempt,
                )
            self._context = None
            log = await self._store.load_log()
            self._context = log.estimated_context_tokens()
            return self._emit(
                "compacted",
                f"replaced {plan.upto} messages by {len(new)} (summary of {plan.summarised})",
                trigger,
                messages_before,
                len(log),
                tokens_before,
                self._context,
                summarised=plan.summarised,
                attempts=attempt,
                injected=len(injected),
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _inject(self, new: list[Message], recent: Sequence[Message]) -> list[Message]:
        """What ``after_compaction`` puts after the summary (checked), or []."""
        hook = self.after_compaction
        if hook is None:
            return []
        try:
            value = hook([*new, *recent])
            if inspect.isawaitable(value):
                value = await value
        except Exception as err:
            raise CompactionError(f"after_compaction failed: {err!r}", kind="hook_error") from err
        return _injected(value)

    def _emit(
        self,
        kind: EventKind,
        reason: str,
        trigger: Trigger,
        messages_before: int,
        messages_after: int,
        tokens_before: int,
        tokens_after: int,
        *,
        summarised: int = 0,
        attempts: int = 0,
        error: CompactionError | None = None,
        injected: int = 0,
    ) -> CompactionEvent:
        event = CompactionEvent(
            kind=kind,
            reason=reason,
            messages_before=messages_before,
            messages_after=messages_after,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            trigger=trigger,
            session_id=self.session_id,
            summarised=summarised,
            attempts=attempts,
            error=error,
            injected=injected,
        )
        level = logging.INFO if kind in ("compacted", "skipped") else logging.WARNING
        logger.log(level, "session %s: compaction %s: %s", self.session_id, kind, reason)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:
                # A broken callback must not turn a history write into an error.
                logger.exception("on_event callback failed for %r", event)
        _observe.compacted(event)
        return event
