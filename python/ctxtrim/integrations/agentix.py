"""agentix's context strategies and token counters, on ctxtrim's core (``ctxtrim[agentix]``).

Change one import::

    from agentix.context import FitContextWindow, TruncateToolOutputs     # before
    from ctxtrim.integrations.agentix import FitContextWindow, TruncateToolOutputs  # after

Same names, signatures and defaults as ``agentix.context`` (agentix-toolkit 0.5):
``ContextStrategy`` (override ``async compact(messages)``), ``TrimRounds(max_rounds)``,
``TruncateToolOutputs(max_chars, *, marker=...)``, ``FitContextWindow(max_tokens,
counter=approx_token_counter, *, reserve_tokens=0, per_message_overhead=4,
tokens_per_media=600)``, ``HeuristicTokenCounter(chars_per_token=4.0)`` (callable),
``approx_token_counter``, ``count_message_tokens`` and ``count_tokens``. The strategies take
and return agentix's own :class:`agentix.types.Message` objects (never copies, except the
clipped tool messages ``TruncateToolOutputs`` makes), and return the *same list object* when
nothing changed, so the agent loop's ``on_compact`` fires only on a real change. They are
subclasses of agentix's ``ContextStrategy``, so ``Agent(context_strategy=...)`` accepts them.

Rounds are agentix's: the leading system messages and the first user message (the task)
are pinned, and a round starts at every assistant message after them (a later user message
belongs to the round before it, as in agentix). Where agentix's output is valid the drop-in
returns the same messages (``tests/integrations/test_integration_vs_originals.py`` checks
this against agentix on generated histories). Deliberate differences (each a fix):

- Pair safety: a round holding a tool result whose call is in an earlier round (a result
  that arrived after another assistant reply) is joined to that round, so the two are kept
  or dropped together; agentix can keep the result and drop its call. Pairing is by
  tool-call id (``meta["tool_calls"][i].id`` and a tool message's ``meta["call_id"]``);
  calls without an id are paired with the tool messages that follow in order.
- ``TruncateToolOutputs`` clips at a grapheme-cluster boundary (never inside an emoji or a
  combining sequence) and its output, marker included, is at most ``max_chars`` + the
  marker long, as agentix's.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

try:
    from agentix import context as _agentix_context
    from agentix.content import TextPart
    from agentix.types import Message, Role
except ImportError as e:  # pragma: no cover - exercised only without agentix installed
    from ctxtrim.integrations._common import missing_extra

    raise missing_extra("agentix-toolkit", "agentix", e) from None

from ctxtrim import strategies as _ct
from ctxtrim._core import MessageLog
from ctxtrim._text import clip_text
from ctxtrim.messages import Message as _Skeleton
from ctxtrim.messages import ToolResultBlock, ToolUseBlock

__all__ = [
    "ContextStrategy",
    "FitContextWindow",
    "HeuristicTokenCounter",
    "TokenCounter",
    "TrimRounds",
    "TruncateToolOutputs",
    "approx_token_counter",
    "count_message_tokens",
    "count_tokens",
]

#: Any ``str -> int`` callable: a heuristic, a tiktoken encoder, a provider's tokenizer.
TokenCounter = Callable[[str], int]

ContextStrategy = _agentix_context.ContextStrategy


class HeuristicTokenCounter:
    """``ceil(len(text) / chars_per_token)``, agentix's dependency-free estimate."""

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if isinstance(chars_per_token, bool) or not isinstance(chars_per_token, (int, float)):
            raise TypeError(f"chars_per_token must be a number, got {chars_per_token!r}")
        if not chars_per_token > 0 or math.isinf(chars_per_token):
            raise ValueError("chars_per_token must be > 0")
        self.chars_per_token = float(chars_per_token)

    def __call__(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def __repr__(self) -> str:
        return f"HeuristicTokenCounter({self.chars_per_token})"


#: Ready-to-use default counter (4 characters per token).
approx_token_counter: TokenCounter = HeuristicTokenCounter()


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return value


def count_message_tokens(
    message: Message,
    counter: TokenCounter = approx_token_counter,
    *,
    per_message_overhead: int = 4,
    tokens_per_media: int = 600,
) -> int:
    """Tokens one message contributes: ``per_message_overhead`` + its text (a ``str``
    content or its ``TextPart``\\ s) + ``tokens_per_media`` per other part + each tool
    call's name and JSON arguments. Same formula as agentix's."""
    total = per_message_overhead
    content = message.content
    if isinstance(content, str):
        total += counter(content)
    else:
        for part in content:
            total += counter(part.text) if isinstance(part, TextPart) else tokens_per_media
    for call in message.meta.get("tool_calls", []):
        total += counter(call.name) + counter(json.dumps(call.args))
    return total


def count_tokens(
    messages: list[Message],
    counter: TokenCounter = approx_token_counter,
    *,
    per_message_overhead: int = 4,
    tokens_per_media: int = 600,
) -> int:
    """Tokens of a transcript: the sum of :func:`count_message_tokens`."""
    return sum(
        count_message_tokens(
            m, counter, per_message_overhead=per_message_overhead, tokens_per_media=tokens_per_media
        )
        for m in messages
    )


class _Skeletons:
    """Maps agentix messages to ctxtrim skeletons (role + tool ids), in order.

    Tool calls without an id get ``"#<index>.<j>"``; a tool message names its call by
    ``meta["call_id"]``, or (without one) answers the next unanswered call of the latest
    assistant message, as agentix's providers pair them.
    """

    def __init__(self) -> None:
        self._pending: list[str] = []

    def __call__(self, message: Message, index: int) -> _Skeleton:
        if index == 0:  # the mirror (re)starts from the first message
            self._pending = []
        role = message.role
        if role is Role.SYSTEM:
            return _Skeleton.system("s")
        if role is Role.ASSISTANT:
            calls = message.meta.get("tool_calls") or []
            ids = [
                c.id if isinstance(c.id, str) and c.id else f"#{index}.{j}"
                for j, c in enumerate(calls)
            ]
            self._pending = list(ids)
            blocks = [ToolUseBlock(id=i, name="tool", input={}) for i in ids]
            return _Skeleton.assistant(blocks or "a")
        if role is Role.TOOL:
            call_id = message.meta.get("call_id")
            if isinstance(call_id, str) and call_id:
                if call_id in self._pending:
                    self._pending.remove(call_id)
            elif self._pending:
                call_id = self._pending.pop(0)
            else:
                call_id = f"#orphan{index}"
            return _Skeleton.tool_results([ToolResultBlock(tool_use_id=call_id, content="")])
        return _Skeleton.user("u")


T = TypeVar("T")


class _Mirror(Generic[T]):
    """A log of skeletons kept in step with agentix's append-mostly message list.

    ``sync(messages)`` appends skeletons for new messages only (O(new)); if the list was
    replaced or rewritten (an edit in place, a new list), which it detects by the identity of
    its first and last mirrored objects, it rebuilds from scratch. Token counts come from
    ``count`` once per message and stay cached in the log.
    """

    def __init__(
        self,
        skeleton: Callable[[T, int], _Skeleton],
        count: Callable[[T], int] | None = None,
    ) -> None:
        self._skeleton = skeleton
        self._count = count
        self._source: list[T] = []
        self.log = MessageLog()
        #: Indices of the assistant messages (where agentix starts its rounds), in order.
        self.assistants: list[int] = []

    def sync(self, messages: Sequence[T]) -> MessageLog:
        src = self._source
        k = len(src)
        if k and (len(messages) < k or messages[0] is not src[0] or messages[k - 1] is not src[-1]):
            self._source = []
            self.log = MessageLog()
            self.assistants = []
            k = 0
        if len(messages) > k:
            new = messages[k:]
            skeletons = [self._skeleton(m, k + j) for j, m in enumerate(new)]
            tokens = None if self._count is None else [self._count(m) for m in new]
            self.log.extend(skeletons, tokens=tokens)
            self._source.extend(new)
            self.assistants += [k + j for j, s in enumerate(skeletons) if s.role == "assistant"]
        return self.log


def _round_starts(messages: Sequence[Message], assistants: list[int]) -> tuple[int, list[int]]:
    """agentix's ``_split`` as indices: the end of the pinned head (the leading system
    messages, then the task if a user message follows them) and where each round starts
    (the first message after the head, then every assistant message after it)."""
    head = 0
    n = len(messages)
    while head < n and messages[head].role is Role.SYSTEM:
        head += 1
    if head < n and messages[head].role is Role.USER:
        head += 1
    if head >= n:
        return head, []
    later = assistants[bisect.bisect_right(assistants, head) :]
    return head, [head, *later]


class _CoreStrategy(ContextStrategy):
    """An agentix strategy: agentix's rounds and cut, on a skeleton log that tells which
    round starts are pair-safe."""

    def _setup(self, count: Callable[[Message], int] | None) -> None:
        self._mirror: _Mirror[Message] = _Mirror(_Skeletons(), count)

    def _cut(self, log: MessageLog, head: int, starts: list[int]) -> int:
        raise NotImplementedError

    def trim(self, messages: list[Message]) -> list[Message]:
        """The synchronous :meth:`compact`."""
        if not isinstance(messages, list):
            raise TypeError(f"messages must be a list, got {type(messages).__name__}")
        for i, m in enumerate(messages):
            if not isinstance(m, Message):
                raise TypeError(f"messages[{i}] must be an agentix Message, got {type(m).__name__}")
        log = self._mirror.sync(messages)
        head, starts = _round_starts(messages, self._mirror.assistants)
        if not starts:
            return messages
        cut = self._cut(log, head, starts)
        if cut <= head:
            return messages  # unchanged: the same list object
        return [*messages[:head], *messages[cut:]]

    async def compact(self, messages: list[Message]) -> list[Message]:
        return self.trim(messages)


def _safe(log: MessageLog, head: int, start: int) -> bool:
    """Whether a cut at round ``start`` keeps every call with its results (the first
    round's start always does: only the system prompt and the task precede it)."""
    return start <= head or log.is_safe_cut(start)


class TrimRounds(_CoreStrategy):
    """Keep the system prompt, the task and the last ``max_rounds`` rounds."""

    def __init__(self, max_rounds: int) -> None:
        if isinstance(max_rounds, bool) or not isinstance(max_rounds, int):
            raise TypeError(f"max_rounds must be an int, got {type(max_rounds).__name__}")
        if max_rounds < 1:
            raise ValueError("max_rounds must be >= 1")
        self.max_rounds = max_rounds
        self._setup(None)

    def _cut(self, log: MessageLog, head: int, starts: list[int]) -> int:
        if len(starts) <= self.max_rounds:
            return head
        k = len(starts) - self.max_rounds
        while not _safe(log, head, starts[k]):  # joined with the round before
            k -= 1
        return starts[k]

    def __repr__(self) -> str:
        return f"TrimRounds({self.max_rounds})"


class FitContextWindow(_CoreStrategy):
    """Keep the system prompt, the task and the newest rounds that fit
    ``max_tokens - reserve_tokens`` tokens (at least the newest round), counting tokens as
    :func:`count_message_tokens` does with ``counter``."""

    def __init__(
        self,
        max_tokens: int,
        counter: TokenCounter = approx_token_counter,
        *,
        reserve_tokens: int = 0,
        per_message_overhead: int = 4,
        tokens_per_media: int = 600,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise TypeError(f"max_tokens must be an int, got {type(max_tokens).__name__}")
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if isinstance(reserve_tokens, bool) or not isinstance(reserve_tokens, int):
            raise TypeError(f"reserve_tokens must be an int, got {type(reserve_tokens).__name__}")
        if reserve_tokens < 0:
            raise ValueError("reserve_tokens must be >= 0")
        if not callable(counter):
            raise TypeError(f"counter must be a callable str -> int, got {type(counter).__name__}")
        self.max_tokens = max_tokens
        self.counter = counter
        self.reserve_tokens = reserve_tokens
        self.per_message_overhead = _check_count("per_message_overhead", per_message_overhead)
        self.tokens_per_media = _check_count("tokens_per_media", tokens_per_media)
        self._setup(self._count)

    def _cut(self, log: MessageLog, head: int, starts: list[int]) -> int:
        budget = self.max_tokens - self.reserve_tokens
        running = log.tokens(0, head)
        end = len(log)
        cut = end
        for start in reversed(starts):  # newest first, a group of joined rounds at a time
            if not _safe(log, head, start):
                continue
            cost = log.tokens(start, end)
            if cut < len(log) and running + cost > budget:
                break  # the newest group is kept even over budget, as agentix keeps a round
            running += cost
            cut = end = start
        return cut

    def _count(self, message: Message) -> int:
        return count_message_tokens(
            message,
            self.counter,
            per_message_overhead=self.per_message_overhead,
            tokens_per_media=self.tokens_per_media,
        )

    def __repr__(self) -> str:
        return f"FitContextWindow({self.max_tokens}, reserve_tokens={self.reserve_tokens})"


class TruncateToolOutputs(ContextStrategy):
    """Clip every tool message whose ``str`` content is longer than ``max_chars`` to
    ``max_chars`` characters plus ``marker`` (idempotent: text already ending with the
    marker is left alone; list content is never touched)."""

    def __init__(self, max_chars: int, *, marker: str = _ct.TRUNCATION_MARKER) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int):
            raise TypeError(f"max_chars must be an int, got {type(max_chars).__name__}")
        if max_chars < 1:
            raise ValueError("max_chars must be >= 1")
        if not isinstance(marker, str):
            raise TypeError(f"marker must be a str, got {type(marker).__name__}")
        self.max_chars = max_chars
        self.marker = marker

    def trim(self, messages: list[Message]) -> list[Message]:
        """The synchronous :meth:`compact`."""
        out: list[Message] | None = None
        for i, msg in enumerate(messages):
            content: Any = msg.content
            if (
                msg.role is Role.TOOL
                and isinstance(content, str)
                and len(content) > self.max_chars
                and not content.endswith(self.marker)
            ):
                if out is None:
                    out = list(messages[:i])
                kept = clip_text(content, self.max_chars)
                out.append(
                    Message(
                        msg.role,
                        kept + self.marker,
                        trusted=msg.trusted,
                        name=msg.name,
                        meta=msg.meta,
                    )
                )
            elif out is not None:
                out.append(msg)
        return messages if out is None else out

    async def compact(self, messages: list[Message]) -> list[Message]:
        return self.trim(messages)

    def __repr__(self) -> str:
        return f"TruncateToolOutputs({self.max_chars}, marker={self.marker!r})"
