"""A pair-safe ``trim_messages`` for langchain-core: same arguments, same messages back.

Change the import, keep the call::

    from ctxtrim.integrations.langchain import trim_messages

It takes langchain-core's keyword arguments (``max_tokens``, ``token_counter`` as a function
over a list, a per-message function or lambda, a chat model or ``"approximate"``,
``strategy="first"|"last"``, ``allow_partial``, ``start_on``, ``end_on``,
``include_system``, ``text_splitter``) and returns langchain's own message objects.

Invariants: the result never holds a ``ToolMessage`` whose ``AIMessage`` tool call was cut,
nor an ``AIMessage`` whose ``tool_calls`` lost their results to the cut (langchain's
``strategy="last"`` leads with an orphan ``ToolMessage``: langchain-ai/langchain#33245); it
is within ``max_tokens`` by the caller's counter whenever langchain's would be; the counter
sees the history once, in order, in pair-closed pieces (a call with its results), then the
chosen window — never reversed input, never a lone ``ToolMessage`` (#29637).

Deliberate differences from langchain-core (docs/design.md, "Integrations"):

* cuts fall only on pair-safe indices, so where langchain keeps an orphan (or ends
  ``"first"`` on a call whose results are cut) this keeps a little less;
* a counter with no annotation is tried on a one-message list and, if that raises
  ``AttributeError``/``TypeError``, used per message — so ``lambda m: len(m.content)``
  works (langchain calls it with a list and fails, #35629);
* with ``start_on`` and ``strategy="last"``, when no message matching ``start_on`` starts a
  window that fits (an agent loop with one human task message, older than the window),
  langchain returns only the system message; this keeps the first matching message (the
  task) plus the newest pair-safe suffix that fits after it, if that fits at all;
* a partial message (``allow_partial``) is made only of a message with no tool calls and
  no tool results; tool pairs stay whole.
"""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, overload

from ctxtrim._core import MessageLog
from ctxtrim.integrations._common import Counts, Skeletons, ends_window, missing_extra
from ctxtrim.messages import Message, ToolResultBlock, ToolUseBlock

try:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        SystemMessage,
        ToolMessage,
        convert_to_messages,
    )
    from langchain_core.messages import trim_messages as _lc_trim
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import Runnable, RunnableLambda
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("langchain-core", "langchain", _err) from _err

__all__ = ["to_skeleton", "trim_messages"]

_MessageType = str | type[BaseMessage] | Sequence[str | type[BaseMessage]]


# Skeletons without tool ids carry nothing per message: one shared object each.
_USER = Message.user("")
_AI = Message.assistant("")
_SYSTEM = Message.system("")


def to_skeleton(message: BaseMessage, i: int = 0) -> Message:
    """The ctxtrim skeleton of one langchain message: its role and tool-call ids."""
    role = message.type
    if isinstance(message, ChatMessage):
        role = {"user": "human", "assistant": "ai"}.get(message.role, message.role)
    if isinstance(message, ToolMessage) or role in ("tool", "function"):
        cid = getattr(message, "tool_call_id", None) or f"\x00lc-{i}"
        return Message("user", (ToolResultBlock(cid, ""),))
    if isinstance(message, AIMessage) and message.tool_calls:
        return Message(
            "assistant",
            tuple(
                ToolUseBlock(tc.get("id") or f"\x00lc-{i}-{j}", tc.get("name") or "?", {})
                for j, tc in enumerate(message.tool_calls)
            ),
        )
    if role == "ai":
        return _AI
    if role in ("system", "developer"):
        return _SYSTEM
    return _USER


def _is_type(message: BaseMessage, type_: _MessageType) -> bool:
    types = [type_] if isinstance(type_, (str, type)) else list(type_)
    names = [t for t in types if isinstance(t, str)]
    classes = tuple(t for t in types if isinstance(t, type))
    return message.type in names or isinstance(message, classes)


def _plain(message: BaseMessage) -> bool:
    """Whether a message can be cut in two: no tool calls, not a tool result."""
    if isinstance(message, ToolMessage) or message.type in ("tool", "function"):
        return False
    return not (isinstance(message, AIMessage) and message.tool_calls)


def _counters(
    token_counter: Any, sample: BaseMessage | None
) -> tuple[Callable[[list[BaseMessage]], int], Callable[[BaseMessage], int]]:
    """``(count a list, count one message)`` for langchain's kinds of ``token_counter``."""
    if isinstance(token_counter, str):
        if token_counter != "approximate":
            raise ValueError(
                f"Invalid token_counter shortcut {token_counter!r}. "
                "Available shortcuts: 'approximate'."
            )
        token_counter = count_tokens_approximately
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        model_count = token_counter.get_num_tokens_from_messages
        return model_count, lambda m: int(model_count([m]))
    if not callable(token_counter):
        raise ValueError(
            "'token_counter' expected to be a model that implements "
            "'get_num_tokens_from_messages()' or a function. Received object of type "
            f"{type(token_counter)}."
        )
    fn = token_counter
    per_message: bool
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins such as len
        params = []
    annotation = params[0].annotation if params else inspect.Parameter.empty
    if annotation is BaseMessage or annotation == "BaseMessage":
        per_message = True
    elif annotation is not inspect.Parameter.empty or sample is None:
        per_message = False
    else:
        # Unannotated (a lambda): langchain would call it with a list; see which it takes.
        try:
            fn([sample])
            per_message = False
        except (AttributeError, TypeError):
            per_message = True
    if per_message:
        return (lambda ms: sum(int(fn(m)) for m in ms)), (lambda m: int(fn(m)))
    return (lambda ms: int(fn(ms))), (lambda m: int(fn([m])))


def _partial(
    message: BaseMessage,
    budget: int,
    count: Callable[[list[BaseMessage]], int],
    strategy: Literal["first", "last"],
    text_splitter: Any,
) -> BaseMessage | None:
    """langchain's own partial-message logic, on one plain message."""
    if budget <= 0 or not _plain(message):
        return None
    part = _lc_trim(
        [message],
        max_tokens=budget,
        token_counter=count,
        strategy=strategy,
        allow_partial=True,
        text_splitter=text_splitter,
    )
    return part[0] if part else None


def _segment_counts(
    msgs: list[BaseMessage],
    log: MessageLog,
    count: Callable[[list[BaseMessage]], int],
    *,
    from_end: bool,
    limit: int,
) -> list[int]:
    """Token counts for the log, one counter call per pair-closed segment.

    Cuts only ever fall on safe indices, so the history is counted in the pieces between
    consecutive safe cuts (a call together with its results), in order: a counter never
    sees a ``ToolMessage`` without its ``AIMessage`` (providers' counting endpoints reject
    that), and the whole count is attributed to the segment's first message.

    Only what can be kept is counted: segments are counted from the end (``"last"``) or the
    start (``"first"``) until ``limit`` is passed; every segment beyond is priced
    ``limit + 1``, so no window within the limit can hold it. The first segment (a system
    message, the head ``include_system`` keeps) is always counted.
    """
    n = len(msgs)
    cuts = [0, *(i for i in range(1, n) if log.is_safe_cut(i)), n]
    segments = list(itertools.pairwise(cuts))
    tokens = [0] * n
    if not segments:
        return tokens
    order = segments[::-1] if from_end else segments
    total = 0
    for a, b in order:
        if total > limit:
            tokens[a] = limit + 1
            continue
        tokens[a] = int(count(msgs[a:b]))
        total += tokens[a]
    a0, b0 = segments[0]
    if tokens[a0] == limit + 1:
        tokens[a0] = int(count(msgs[a0:b0]))
    return tokens


@overload
def trim_messages(messages: None = None, **kwargs: Any) -> Runnable[Any, list[BaseMessage]]: ...
@overload
def trim_messages(messages: Iterable[Any] | Any, **kwargs: Any) -> list[BaseMessage]: ...
def trim_messages(
    messages: Iterable[Any] | Any = None, **kwargs: Any
) -> list[BaseMessage] | Runnable[Any, list[BaseMessage]]:
    """langchain-core's ``trim_messages``, with every cut on a pair-safe index.

    Called without messages (``trim_messages(max_tokens=..., ...)``) it returns a
    ``Runnable`` doing the trim, as langchain's does, for ``trimmer | llm`` chains.
    """
    if messages is None:
        return RunnableLambda(functools.partial(_trim, **kwargs), name="trim_messages")
    return _trim(messages, **kwargs)


def _trim(
    messages: Iterable[Any] | Any,
    *,
    max_tokens: int,
    token_counter: Any,
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: _MessageType | None = None,
    start_on: _MessageType | None = None,
    include_system: bool = False,
    text_splitter: Any = None,
) -> list[BaseMessage]:
    if start_on and strategy == "first":
        raise ValueError("start_on parameter is only valid with strategy='last'")
    if include_system and strategy == "first":
        raise ValueError("include_system parameter is only valid with strategy='last'")
    if strategy not in ("first", "last"):
        raise ValueError(
            f"Unrecognized strategy={strategy!r}. Supported strategies are 'last' and 'first'."
        )
    if strategy == "last" and isinstance(messages, (list, tuple)):
        fast = _fast_last(
            messages,
            max_tokens,
            token_counter,
            allow_partial,
            end_on,
            start_on,
            include_system,
            text_splitter,
        )
        if fast is not None:
            return fast
    msgs: list[BaseMessage] = convert_to_messages(messages)
    count_list, _ = _counters(token_counter, msgs[0] if msgs else None)
    if not msgs:
        return []
    skeletons = [to_skeleton(m, i) for i, m in enumerate(msgs)]
    bare = MessageLog(skeletons)
    counts = _segment_counts(
        msgs, bare, count_list, from_end=strategy == "last", limit=max(max_tokens, 0)
    )
    log = MessageLog(skeletons, tokens=counts)
    if strategy == "first":
        return _first(msgs, log, max_tokens, count_list, allow_partial, end_on, text_splitter)
    return _last(
        msgs,
        skeletons,
        log,
        max_tokens,
        count_list,
        allow_partial,
        end_on,
        start_on,
        include_system,
        text_splitter,
    )


def _first(
    msgs: list[BaseMessage],
    log: MessageLog,
    max_tokens: int,
    count: Callable[[list[BaseMessage]], int],
    allow_partial: bool,
    end_on: _MessageType | None,
    text_splitter: Any,
) -> list[BaseMessage]:
    n = len(msgs)
    # The longest prefix within the budget (prefix sums: O(1) each), then a safe end.
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if log.tokens(0, mid) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    k = log.safe_cut_at_or_before(lo)

    def ok(k: int) -> bool:
        return log.is_safe_cut(k) and (end_on is None or k == 0 or _is_type(msgs[k - 1], end_on))

    while k > 0 and not (ok(k) and count(msgs[:k]) <= max_tokens):
        k -= 1
    out = msgs[:k]
    if allow_partial and k < n and (lo == k or k == lo):
        part = _partial(msgs[k], max_tokens - count(out), count, "first", text_splitter)
        if part is not None and (end_on is None or _is_type(part, end_on)):
            if count([*out, part]) <= max_tokens:
                out = [*out, part]
    return out


def _fit(log: MessageLog, budget: int, floor: int, end: int) -> int:
    """The smallest safe cut in ``[floor, end]`` whose ``[cut, end)`` is within ``budget``
    (``end`` when none is). The core's ``fit_budget`` answers the budget question in
    O(log n) but, over budget, keeps the newest round whole; langchain keeps any fitting
    suffix, so from there the search walks forward over safe cuts."""
    c = max(log.fit_budget(budget, floor=floor, end=end)[0], floor)
    while c < end and (not log.is_safe_cut(c) or log.tokens(c, end) > budget):
        c = log.safe_cut_at_or_after(c + 1)
    return min(c, end)


def _last_answers(msgs: list[BaseMessage]) -> list[int]:
    """``out[i]``: the index of the last message answering a call of message ``i`` (-1)."""
    latest: dict[str, int] = {}
    out = [-1] * len(msgs)
    for j, m in enumerate(msgs):
        if isinstance(m, ToolMessage):
            i = latest.get(m.tool_call_id)
            if i is not None:
                out[i] = j
        elif isinstance(m, AIMessage):
            for tc in m.tool_calls:
                cid = tc.get("id")
                if cid:
                    latest[cid] = j
    return out


def _start_floor(last_answers: list[int], e: int) -> int:
    """1 + the last call before ``e`` answered at or after ``e`` (0 if none): a window
    ending at ``e`` starting earlier would keep a call whose result it drops."""
    return max((i + 1 for i in range(e) if last_answers[i] >= e), default=0)


def _last(
    msgs: list[BaseMessage],
    skeletons: list[Message],
    log: MessageLog,
    max_tokens: int,
    count: Callable[[list[BaseMessage]], int],
    allow_partial: bool,
    end_on: _MessageType | None,
    start_on: _MessageType | None,
    include_system: bool,
    text_splitter: Any,
) -> list[BaseMessage]:
    n = len(msgs)
    head: list[BaseMessage] = []
    floor = 0
    if include_system and isinstance(msgs[0], SystemMessage):
        head, floor = [msgs[0]], 1
    budget = max_tokens - (log.tokens(0, floor) if floor else 0)
    # end_on drops trailing messages (langchain: up to the last match). A window ending
    # there must not keep a call whose result is dropped; if no window can, the previous
    # match is tried rather than returning nothing.
    ends = (
        [n] if end_on is None else [e for e in range(n, floor, -1) if _is_type(msgs[e - 1], end_on)]
    )
    if not ends:
        return []  # langchain applies end_on first: nothing matches, nothing is left
    if budget < 0:
        return list(head)  # langchain keeps the system message even when it alone is over
    answers = _last_answers(msgs) if end_on is not None else None
    out = list(head)
    for e in ends:
        sub = (
            log
            if e == n
            else MessageLog(
                skeletons[:e],
                tokens=_segment_counts(
                    msgs[:e], MessageLog(skeletons[:e]), count, from_end=True, limit=max_tokens
                ),
            )
        )
        lo = max(floor, _start_floor(answers, e) if answers is not None else 0)
        found = _window(msgs, sub, head, lo, e, budget, max_tokens, count, start_on)
        if found is None and start_on is not None:
            found = _pinned_task(msgs, sub, head, lo, e, budget, max_tokens, count, start_on)
        if found is None:
            if allow_partial and start_on is None and e > lo:
                # langchain: when no whole message fits, part of the newest one does.
                part = _partial(msgs[e - 1], budget, count, "last", text_splitter)
                if part is not None and count([*head, part]) <= max_tokens:
                    return [*head, part]
            continue
        c, out = found
        if allow_partial and c > lo:
            part = _partial(msgs[c - 1], max_tokens - count(out), count, "last", text_splitter)
            if part is not None and (start_on is None or _is_type(part, start_on)):
                trial = [*head, part, *out[len(head) :]]
                if count(trial) <= max_tokens:
                    out = trial
        return out
    return out


def _window(
    msgs: list[BaseMessage],
    log: MessageLog,
    head: list[BaseMessage],
    lo: int,
    e: int,
    budget: int,
    max_tokens: int,
    count: Callable[[list[BaseMessage]], int],
    start_on: _MessageType | None,
) -> tuple[int, list[BaseMessage]] | None:
    """The longest fitting pair-safe window ``[c, e)`` with ``c >= lo`` (None if empty)."""
    c = _fit(log, max(budget, 0), lo, e)
    while c < e:
        if start_on is None or _is_type(msgs[c], start_on):
            out = [*head, *msgs[c:e]]
            if count(out) <= max_tokens:
                return c, out
        c = log.safe_cut_at_or_after(c + 1)
    return None


def _pinned_task(
    msgs: list[BaseMessage],
    log: MessageLog,
    head: list[BaseMessage],
    lo: int,
    e: int,
    budget: int,
    max_tokens: int,
    count: Callable[[list[BaseMessage]], int],
    start_on: _MessageType,
) -> tuple[int, list[BaseMessage]] | None:
    """The first ``start_on`` message (the task) plus the newest safe suffix after it that
    fits, instead of langchain's collapse to the system message alone."""
    task = next(
        (i for i in range(lo, e) if _is_type(msgs[i], start_on) and log.is_safe_cut(i)), None
    )
    if task is None:
        return None
    if not log.is_safe_cut(task + 1):
        return None
    # The task is a segment of its own; counted here, as the log prices far-away segments
    # only as "too big".
    rest = budget - int(count([msgs[task]]))
    if rest < 0:
        return None
    c = _fit(log, rest, task + 1, e)
    while True:
        out = [*head, msgs[task], *msgs[c:e]]
        if count(out) <= max_tokens:
            return lo, out  # (no partial message before a pinned task)
        if c >= e:
            return None
        c = log.safe_cut_at_or_after(c + 1)


# ---------------------------------------------------------------------------------------------
# The fast path: strategy="last" with a counter that is a sum over messages.


def _fast_skeleton(message: Any, i: int) -> Message:
    """A skeleton of its own per message (the counts are bound to it). System messages get
    a plain user skeleton: the core would pin them, langchain pins only with
    ``include_system``, which this path handles itself."""
    if not isinstance(message, BaseMessage):
        # Caught by _fast_last: the general path converts it (or raises langchain's error).
        raise TypeError("not a BaseMessage")
    sk = to_skeleton(message, i)
    if sk is _USER or sk is _SYSTEM:
        return Message.user("")
    if sk is _AI:
        return Message.assistant("")
    return sk


#: Per counter function, the skeletons of the messages it has priced (each counted once).
#: A few counters at most; each cache is bounded by the histories it serves.
_FAST: dict[int, tuple[Any, Skeletons[BaseMessage]]] = {}


def _per_message(token_counter: Any) -> Callable[[BaseMessage], int] | None:
    """The per-message count, when the counter is a sum of per-message counts (langchain's
    approximate counter; a function annotated to take one ``BaseMessage``)."""
    if token_counter == "approximate" or token_counter is count_tokens_approximately:
        return lambda m: count_tokens_approximately([m])
    if isinstance(token_counter, str) or not callable(token_counter):
        return None
    if hasattr(token_counter, "get_num_tokens_from_messages"):
        return None
    try:
        params = list(inspect.signature(token_counter).parameters.values())
    except (TypeError, ValueError):
        return None
    if params and params[0].annotation in (BaseMessage, "BaseMessage"):
        return lambda m: int(token_counter(m))
    return None


def _skeletons_for(token_counter: Any, one: Callable[[BaseMessage], int]) -> Skeletons[BaseMessage]:
    key = id(count_tokens_approximately) if token_counter == "approximate" else id(token_counter)
    hit = _FAST.get(key)
    if hit is None or (hit[0] is not token_counter and token_counter != "approximate"):
        if len(_FAST) >= 8:
            _FAST.pop(next(iter(_FAST)))
        hit = (token_counter, Skeletons(_fast_skeleton, Counts(one)))
        _FAST[key] = hit
    return hit[1]


def _fast_last(
    msgs: Sequence[Any],
    max_tokens: int,
    token_counter: Any,
    allow_partial: bool,
    end_on: _MessageType | None,
    start_on: _MessageType | None,
    include_system: bool,
    text_splitter: Any,
) -> list[BaseMessage] | None:
    """``strategy="last"`` reading only the window: None when the general path must decide
    (a counter that is not a sum over messages, an item that is not a message, ``end_on``
    dropping trailing messages, nothing fitting, no ``start_on`` match in the window)."""
    one = _per_message(token_counter)
    n = len(msgs)
    if one is None or n == 0:
        return None
    try:
        last = msgs[-1]
        if not isinstance(last, BaseMessage) or (end_on is not None and not _is_type(last, end_on)):
            return None
        skeletons = _skeletons_for(token_counter, one)
        first = msgs[0]
        head: list[BaseMessage] = []
        budget = max_tokens
        if include_system and isinstance(first, SystemMessage):
            head = [first]
            budget -= one(first)
            if budget < 0:
                return None
        ranges, unchanged, over = ends_window(msgs, skeletons, "budget", budget, pin_task=False)
    except TypeError:
        return None
    if unchanged:
        return list(msgs)
    if over or not ranges:
        return None
    s, e = ranges[-1]
    lo = len(head)
    c = max(s, lo)
    if start_on is not None:
        c0 = c
        suffix = MessageLog(skeletons.of(msgs[c0:e], c0))
        while c < e and not (_is_type(msgs[c], start_on) and suffix.is_safe_cut(c - c0)):
            c += 1
        if c >= e:
            return None
    out = [*head, *msgs[c:e]]
    if allow_partial and c > lo:
        used = sum(one(m) for m in out)
        part = _partial(msgs[c - 1], max_tokens - used, _sum(one), "last", text_splitter)
        if part is not None and (start_on is None or _is_type(part, start_on)):
            if used + one(part) <= max_tokens:
                out = [*head, part, *out[lo:]]
    return out


def _sum(one: Callable[[BaseMessage], int]) -> Callable[[list[BaseMessage]], int]:
    return lambda ms: sum(one(m) for m in ms)
