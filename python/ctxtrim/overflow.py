"""Compact-and-retry: when the provider says the prompt is over the window, shrink the
history and call once more.

A token estimate can be off, and one huge tool result can overflow a history that fitted a
turn ago. The providers then refuse the request; :func:`retry_on_overflow` recognises that
refusal (:func:`is_context_overflow`), compacts the store (an
:class:`~ctxtrim.AutoCompactStore`: an LLM summary, reported as a
:class:`~ctxtrim.CompactionEvent` with ``trigger="overflow"``) and/or trims with a strategy
(reported to :mod:`ctxtrim.observe` listeners as a ``TrimEvent``), and calls again with the
smaller history. It retries once: a second overflow, or any other error, reaches the
caller unchanged, and so does the first overflow when nothing could be made smaller.

Recognised errors (their class is matched by name and module, so this module imports no
SDK; a wrapped error is found through its ``__cause__`` / ``__context__`` chain):

* ``openai`` SDK: ``BadRequestError`` with ``code == "context_length_exceeded"`` (Chat
  Completions and Responses), or a 400 whose message says "maximum context length" (the
  OpenAI-compatible servers: Azure, vLLM);
* ``anthropic`` SDK: ``BadRequestError`` whose message says "prompt is too long";
* ``google-genai`` SDK: a 400 ``ClientError`` saying the input token count "exceeds the
  maximum number of tokens".
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from ctxtrim.errors import InvalidArgument
from ctxtrim.messages import Message

if TYPE_CHECKING:
    from ctxtrim.compaction import CompactionEvent
    from ctxtrim.store import ContextStore
    from ctxtrim.strategies import ContextStrategy

__all__ = ["is_context_overflow", "retry_on_overflow"]

logger = logging.getLogger("ctxtrim.overflow")

T = TypeVar("T")

#: Lower-cased phrases of the providers' overflow messages, by SDK (top-level module).
_PHRASES: dict[str, tuple[str, ...]] = {
    "openai": ("maximum context length", "context_length_exceeded"),
    "anthropic": ("prompt is too long",),
    "google": ("exceeds the maximum number of tokens",),
}


def _status(error: BaseException) -> int | None:
    for name in ("status_code", "code", "status"):
        value = getattr(error, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _one(error: BaseException) -> bool:
    sdk = (type(error).__module__ or "").split(".", 1)[0]
    phrases = _PHRASES.get(sdk)
    if phrases is None:
        return False
    if sdk == "openai" and getattr(error, "code", None) == "context_length_exceeded":
        return True
    status = _status(error)
    if status is not None and status not in (400, 413):
        return False
    text = str(error).lower()
    return any(p in text for p in phrases)


def is_context_overflow(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is a provider's "the prompt is
    over the context window" refusal (see the module docstring for which)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if _one(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


async def _result(value: Awaitable[T]) -> T:
    # A plain function's result is taken as it is (typed for the usual coroutine function).
    if inspect.isawaitable(value):
        return await value
    return value


async def retry_on_overflow(
    call: Callable[[list[Message]], Awaitable[T]],
    *,
    store: ContextStore | None = None,
    messages: Sequence[Message] | None = None,
    strategy: ContextStrategy | None = None,
) -> T:
    """``await call(history)``; if the provider refuses it as over the window, shrink the
    history and ``await call(smaller)`` once more.

    Give the history as ``store`` (read with ``get_history``; an
    :class:`~ctxtrim.AutoCompactStore` is compacted on overflow, and its later reads see the
    summary) or as ``messages``. ``strategy`` is applied to what is sent on the retry (after
    the compaction, if any): ``FitContextWindow`` for the window's real size, or
    ``TruncateToolOutputs`` for the huge tool result a summary keeps when it is among the
    recent messages. It never writes to the store. ``call`` converts the history to its
    provider's format and makes the request (a coroutine function; a plain function works too).

    Without a way to shrink (a store that cannot compact and no ``strategy``), or when
    neither shrank the history, the overflow error is raised as it came. Each retry is
    logged on ``ctxtrim.overflow`` (WARNING).
    """
    if (store is None) == (messages is None):
        raise InvalidArgument("give the history as exactly one of store= or messages=")
    if not callable(call):
        raise InvalidArgument(f"call must be callable, got {type(call).__name__}")
    compact = getattr(store, "compact", None)
    if strategy is not None and not callable(getattr(strategy, "apply", None)):
        raise InvalidArgument(f"strategy must be a ContextStrategy, got {strategy!r}")
    if store is not None:
        history = await store.get_history()
    else:
        history = list(messages or ())
        for i, m in enumerate(history):
            if not isinstance(m, Message):
                raise InvalidArgument(f"messages[{i}] must be a Message, got {type(m).__name__}")
    try:
        return await _result(call(history))
    except Exception as error:
        if not is_context_overflow(error):
            raise
        overflow = error
    smaller = history
    event: CompactionEvent | None = None
    if store is not None and callable(compact):
        event = await compact(trigger="overflow")
        if event.kind == "compacted":
            smaller = await store.get_history()
    if strategy is not None:
        smaller = strategy(smaller)
    if smaller is history or smaller == history:
        what = f"compaction {event.kind}: {event.reason}" if event is not None else ""
        logger.warning(
            "context overflow, and nothing made the history smaller%s; not retrying",
            f" ({what})" if what else "",
        )
        raise overflow
    logger.warning(
        "context overflow (%s); retrying once with %d messages instead of %d%s",
        type(overflow).__name__,
        len(smaller),
        len(history),
        f" after a compaction ({event.reason})" if event and event.kind == "compacted" else "",
    )
    return await _result(call(smaller))
