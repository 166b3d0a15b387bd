"""The in-place strategies: keep every message, shrink what old ones carry.

:class:`TruncateToolOutputs` clips long tool results, :class:`ClearToolResults` replaces old
ones by a short stand-in once the history passes a trigger, :class:`KeepRecentImages` drops
all but the newest images. None of them removes a message, so none can separate a tool call
from its result: the history keeps every message at the same index, and only the content of
some changes. Like the cut strategies (``ctxtrim.strategies``) they are pure (a new list, the
input untouched), idempotent, and return the same list object when nothing changes; a
result cleared or clipped once is recognised and skipped by the next call. Each remembers
its pass over a history (``ctxtrim._memo``): what it decided of a message holds as messages
are appended, so a call on a history that extends its last one reads only the new messages.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Callable, Hashable, Sequence

import msgspec

from ctxtrim import _core
from ctxtrim._memo import Memoised
from ctxtrim._text import clip_text
from ctxtrim.errors import InvalidStrategy
from ctxtrim.messages import (
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.strategies import (
    ContextStrategy,
    Source,
    _check_bool,
    _check_int,
    _Input,
    _Outcome,
    _unchanged,
)
from ctxtrim.triggers import Trigger, TriggerSpec

__all__ = [
    "TRUNCATION_MARKER",
    "ClearThinking",
    "ClearToolResults",
    "KeepRecentImages",
    "TruncateToolOutputs",
]

#: What :class:`TruncateToolOutputs` appends to a clipped tool result (agentix's marker).
TRUNCATION_MARKER = "...[truncated]"


def _parse_trigger(
    trigger: TriggerSpec, model: str | None, context_window: int | None
) -> int | Trigger:
    """An int (tokens: act when the history is over it) or a parsed trigger spec
    (:mod:`ctxtrim.triggers`: tokens, messages, turns, fraction of the window; any/all)."""
    if isinstance(trigger, int) and not isinstance(trigger, bool):
        return _check_int("trigger", trigger, 0)
    if context_window is not None:
        window: int | None = _check_int("context_window", context_window, 1)
    elif model is not None:
        from ctxtrim import models

        window = models.context_window(model)
    else:
        window = None
    return Trigger.parse(trigger, window=window, error=InvalidStrategy)


def _fired(trigger: int | Trigger, log: _core.MessageLog, n: int) -> bool:
    """Whether ``trigger`` fires on a history of ``n`` messages whose totals ``log`` holds."""
    if isinstance(trigger, int):
        return log.total_tokens > trigger
    return trigger.fired(
        tokens=log.total_tokens,
        messages=n,
        turns=log.turn_count if trigger.needs_turns else 0,
    )


def _estimate(message: Message) -> int:
    """The built-in estimate of a message (what a plain list is priced with)."""
    return _core.message_tokens(message, counter=None)


class _Clipped:
    """:class:`TruncateToolOutputs`' pass over a history: the messages before ``end`` are
    decided (their long results clipped in ``out``), ``out`` is the history with them, and
    ``changed`` whether any was clipped. The boundary only moves forward as messages are
    appended (the whole history with ``keep_recent_turns=0``; else the start of the
    ``keep_recent_turns``-th last turn, and the core's turn starts, its real user messages,
    only grow in number), and a message's clipping reads only the message and the settings,
    so no decision is ever taken again."""

    __slots__ = ("changed", "end", "out")

    def __init__(self) -> None:
        self.end = 0
        self.out: list[Message] = []
        self.changed = False


class TruncateToolOutputs(Memoised[_Clipped]):
    """Clip long tool results, in place (agentix, openai-agents): every result by default,
    all but those of the last ``keep_recent_turns`` user turns otherwise.

    A string result is cut to ``max_chars`` characters (never inside a grapheme) and
    ``marker`` appended; in a list result each text block is clipped the same way and images
    are left alone. A text is clipped only when that makes it shorter, so a result never
    grows: texts of up to ``max_chars + len(marker)`` characters are left as they are, and a
    clipped text is at most that long. Applying it again therefore changes nothing; a result
    that shows its own ``compact_summary`` (a stand-in :class:`ClearToolResults` put there)
    is skipped too.

    Like :class:`ClearToolResults`, a call on a history that extends its last one (a list, a
    log or a store) reads only the messages appended since (``ctxtrim._memo``): the results
    it clipped stay clipped, and the boundary of the recent turns only moves forward.
    """

    def __init__(
        self, max_chars: int, *, marker: str = TRUNCATION_MARKER, keep_recent_turns: int = 0
    ) -> None:
        self.max_chars = _check_int("max_chars", max_chars, 1)
        if not isinstance(marker, str):
            raise InvalidStrategy(f"marker must be a str, got {type(marker).__name__}")
        self.marker = marker
        self.keep_recent_turns = _check_int("keep_recent_turns", keep_recent_turns, 0)
        self._init_memo()

    def __repr__(self) -> str:
        recent = f", keep_recent_turns={self.keep_recent_turns}" if self.keep_recent_turns else ""
        return f"TruncateToolOutputs({self.max_chars}{recent})"

    def _clip(self, text: str) -> str | None:
        limit = self.max_chars
        if len(text) <= limit:
            return None
        if text.endswith(self.marker) and len(text) <= limit + len(self.marker):
            return None
        clipped = clip_text(text, limit) + self.marker
        return clipped if len(clipped) < len(text) else None

    def _result(self, block: ToolResultBlock) -> ToolResultBlock | None:
        content = block.content
        if content == block.compact_summary:
            return None  # already replaced by its short stand-in (ClearToolResults)
        if isinstance(content, str):
            clipped = self._clip(content)
            if clipped is None:
                return None
            return msgspec.structs.replace(block, content=clipped)
        new_items: list[object] = []
        changed = False
        for item in content:
            if isinstance(item, TextBlock):
                clipped = self._clip(item.text)
                if clipped is not None:
                    item = TextBlock(clipped)
                    changed = True
            new_items.append(item)
        return msgspec.structs.replace(block, content=tuple(new_items)) if changed else None

    def _clipped(self, message: Message) -> Message | None:
        """``message`` with its long tool results clipped, or None when none is."""
        if message.role != "user":
            return None
        blocks = message.content
        new_blocks: list[object] | None = None
        for j, block in enumerate(blocks):
            if type(block) is ToolResultBlock:
                clipped = self._result(block)
                if clipped is not None:
                    if new_blocks is None:
                        new_blocks = list(blocks)
                    new_blocks[j] = clipped
        if new_blocks is None:
            return None
        return msgspec.structs.replace(message, content=tuple(new_blocks))

    def _end(self, log: _core.MessageLog | None, n: int) -> int:
        """Where the results left as they are start: the ``keep_recent_turns``-th last turn
        (none of them: the whole history is clipped when there are fewer turns than that)."""
        if not self.keep_recent_turns:
            return n
        assert log is not None
        start = log.kth_last_turn_start(self.keep_recent_turns)
        return 0 if start is None else start

    # -- the memoised pass (``ctxtrim._memo``) --------------------------------------------------

    def _settings(self) -> Hashable:
        return (self.max_chars, self.marker, self.keep_recent_turns)

    def _needs_log(self) -> bool:
        return self.keep_recent_turns > 0  # the turn starts, for the boundary

    def _new_state(self) -> _Clipped:
        return _Clipped()

    def _advance(
        self, state: _Clipped, seen: list[Message], start: int, count: Callable[[int], int]
    ) -> bool:
        for message in seen[start:]:
            if not isinstance(message, Message):
                raise TypeError  # not a history: the plain path raises its typed error
        state.out += seen[start:]
        return False

    def _output(
        self, state: _Clipped, log: _core.MessageLog | None, n: int
    ) -> list[Message] | None:
        end = self._end(log, n)
        if end < state.end:
            # Never under appends (turn starts only grow): the plain path, not a guess.
            raise RuntimeError("the recent turns' boundary moved back")
        out = state.out
        for i in range(state.end, end):
            clipped = self._clipped(out[i])
            if clipped is not None:
                out[i] = clipped
                state.changed = True
        state.end = end
        return out if state.changed else None

    def _run(self, inp: _Input) -> _Outcome:
        messages = inp.messages
        changed: dict[int, Message] = {}
        for i in range(self._end(inp.log, len(messages))):
            clipped = self._clipped(messages[i])
            if clipped is not None:
                changed[i] = clipped
        if not changed:
            return _unchanged(inp)
        out = [changed.get(i, m) for i, m in enumerate(messages)]
        return _Outcome(out, list(range(len(messages))), set(changed))


class _Results:
    """:class:`ClearToolResults`' pass over a history, oldest first: the calls awaiting their
    results, the pairs found (by call position), which of the oldest are decided, and the
    history with their results (and inputs) cleared. The pairs outside the newest ``keep``
    only ever grow in number as messages are appended (a pair answered late may sort among
    the decided ones: it is then decided at once), and a pair's decision reads only its two
    blocks and the settings, so no decision is ever taken again."""

    __slots__ = ("decided", "edits", "freed", "gains", "latest", "out", "pairs")

    def __init__(self) -> None:
        self.latest: dict[str, tuple[int, int, str]] = {}  # call id -> (message, block, tool)
        self.pairs: list[tuple[int, int, str, int, int]] = []  # sorted by the call
        self.decided = 0  # pairs[:decided] are decided (all of them old)
        self.edits: dict[int, dict[int, object]] = {}  # message -> block -> its stand-in
        self.out: list[Message] = []  # the history with the edited messages
        self.gains: dict[int, int] = {}  # an edited message's tokens freed (clear_at_least)
        self.freed = 0


class ClearToolResults(Memoised[_Results]):
    """Replace old tool results by their ``compact_summary`` or ``placeholder`` (Anthropic
    context editing, LangChain ``ClearToolUsesEdit``, agent-air).

    Acts only when the history is over ``trigger`` tokens, or, given a trigger spec
    (:mod:`ctxtrim.triggers`), when it fires: ``{"fraction": 0.8}`` with ``model=`` (looked
    up in :mod:`ctxtrim.models`) or ``context_window=``, ``{"messages": 200}``,
    ``[("tokens", 100_000), {"turns": 20}]``... Then every tool result is
    cleared, oldest first, except the results of the last ``keep`` answered tool calls and
    of tools named in ``exclude_tools``; with ``clear_tool_inputs`` the cleared calls'
    inputs become ``{}`` too. If that frees fewer than ``clear_at_least`` tokens, nothing is
    cleared (a cleared prefix costs a prompt-cache write, worth it only for a real saving).
    A result already showing its replacement is left alone, so a second run changes nothing.

    Called on a history that extends the one of its last call (a list, a log or a store),
    it reads only the messages appended since (``ctxtrim._memo``): a turn costs what its new
    messages cost, plus a pass of the core over the list's pointers (checking by identity
    that the rest is what it read before).
    """

    def __init__(
        self,
        trigger: TriggerSpec,
        *,
        keep: int = 3,
        clear_at_least: int = 0,
        exclude_tools: Sequence[str] = (),
        placeholder: str = "[tool result cleared]",
        clear_tool_inputs: bool = False,
        model: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self._trigger = _parse_trigger(trigger, model, context_window)
        self.trigger = trigger
        self.keep = _check_int("keep", keep, 0)
        self.clear_at_least = _check_int("clear_at_least", clear_at_least, 0)
        if isinstance(exclude_tools, str) or not all(isinstance(t, str) for t in exclude_tools):
            raise InvalidStrategy("exclude_tools must be a sequence of tool names (str)")
        self.exclude_tools = frozenset(exclude_tools)
        if not isinstance(placeholder, str):
            raise InvalidStrategy(f"placeholder must be a str, got {type(placeholder).__name__}")
        self.placeholder = placeholder
        self.clear_tool_inputs = _check_bool("clear_tool_inputs", clear_tool_inputs)
        self._init_memo()

    def __repr__(self) -> str:
        return f"ClearToolResults({self.trigger}, keep={self.keep})"

    def _settings(self) -> Hashable:
        return (
            self.keep,
            self.clear_at_least > 0,
            self.exclude_tools,
            self.placeholder,
            self.clear_tool_inputs,
        )

    def _needs_log(self) -> bool:
        return True

    def _new_state(self) -> _Results:
        return _Results()

    def _advance(
        self,
        state: _Results,
        seen: list[Message],
        start: int,
        count: Callable[[int], int],
        price: Callable[[Message], int] = _estimate,
    ) -> bool:
        # Pair results with calls as the core does: a result answers the latest earlier
        # message issuing its id. Pairs are ordered by their call.
        latest, pairs = state.latest, state.pairs
        state.out += seen[start:]
        decided = state.decided
        for i in range(start, len(seen)):
            content = seen[i].content
            for j, block in enumerate(content):
                if type(block) is ToolResultBlock:
                    call = latest.pop(block.tool_use_id, None)
                    if call is not None:
                        pair = (*call, i, j)
                        at = bisect.bisect(pairs, pair)
                        pairs.insert(at, pair)
                        if at < decided:  # answered late: old already
                            self._decide(state, seen, pair, count, price)
                            decided += 1
            for j, block in enumerate(content):
                if type(block) is ToolUseBlock:
                    latest[block.id] = (i, j, block.name)
        while decided < len(pairs) - self.keep:
            self._decide(state, seen, pairs[decided], count, price)
            decided += 1
        state.decided = decided
        return self.clear_at_least > 0

    def _decide(
        self,
        state: _Results,
        seen: list[Message],
        pair: tuple[int, int, str, int, int],
        count: Callable[[int], int],
        price: Callable[[Message], int],
    ) -> None:
        """Clear one old pair's result (and its call's input), rewriting their messages."""
        call_i, call_j, name, res_i, res_j = pair
        if name in self.exclude_tools:
            return
        result = seen[res_i].content[res_j]
        assert type(result) is ToolResultBlock
        touched: list[int] = []
        stand_in = result.compact_summary or self.placeholder
        if result.content != stand_in:
            # The stand-in also becomes the compact summary: it marks the result as
            # cleared, so TruncateToolOutputs leaves it alone and a re-run skips it.
            state.edits.setdefault(res_i, {})[res_j] = msgspec.structs.replace(
                result, content=stand_in, compact_summary=stand_in
            )
            touched.append(res_i)
        if self.clear_tool_inputs:
            use = seen[call_i].content[call_j]
            assert type(use) is ToolUseBlock
            if use.input:
                state.edits.setdefault(call_i, {})[call_j] = msgspec.structs.replace(use, input={})
                touched.append(call_i)
        for i in touched:
            blocks = state.edits[i]
            content = tuple(blocks.get(j, b) for j, b in enumerate(seen[i].content))
            edited = msgspec.structs.replace(seen[i], content=content)
            state.out[i] = edited
            if self.clear_at_least:
                gain = count(i) - price(edited)
                state.freed += gain - state.gains.get(i, 0)
                state.gains[i] = gain

    def _replaceable(self, state: _Results, i: int, old: Message, new: Message) -> bool:
        # The decisions read only the calls and results (found by the same objects, the
        # results at the same places) and, with `clear_at_least`, the source's counts.
        if self.clear_at_least:
            return False
        was, now = _paired_blocks(old), _paired_blocks(new)
        return len(was) == len(now) and all(
            a is b and (j == k or type(a) is ToolUseBlock)
            for (j, a), (k, b) in zip(was, now, strict=True)
        )

    def _replace(self, state: _Results, i: int, old: Message, new: Message) -> None:
        # A call may have moved within its message (a block before it dropped, say reasoning):
        # its place is remembered by the pending calls, the pairs (ordered by call) and the
        # edits of its input.
        moved = {
            j: k
            for (j, _), (k, _) in zip(_paired_blocks(old), _paired_blocks(new), strict=True)
            if j != k
        }
        if moved:
            for cid, (m, j, name) in list(state.latest.items()):
                if m == i:
                    state.latest[cid] = (m, moved.get(j, j), name)
            pairs = state.pairs
            for p in range(bisect.bisect_left(pairs, (i,)), bisect.bisect_left(pairs, (i + 1,))):
                call_i, call_j, name, res_i, res_j = pairs[p]
                pairs[p] = (call_i, moved.get(call_j, call_j), name, res_i, res_j)
            if i in state.edits:
                state.edits[i] = {moved.get(j, j): b for j, b in state.edits[i].items()}
        blocks = state.edits.get(i)
        if blocks is None:
            state.out[i] = new
        else:
            content = tuple(blocks.get(j, b) for j, b in enumerate(new.content))
            state.out[i] = msgspec.structs.replace(new, content=content)

    def _output(
        self, state: _Results, log: _core.MessageLog | None, n: int
    ) -> list[Message] | None:
        assert log is not None
        if not _fired(self._trigger, log, n) or not state.edits:
            return None
        if self.clear_at_least and state.freed < self.clear_at_least:
            return None
        return state.out

    def _run(self, inp: _Input) -> _Outcome:
        if not _fired(self._trigger, inp.log, inp.n):
            return _unchanged(inp)
        # A copy: the pairs index into it, so another thread editing the caller's list
        # meanwhile cannot move a block out from under them.
        messages = list(inp.messages)
        state = _Results()
        counts = inp.counts() if self.clear_at_least else []
        self._advance(state, messages, 0, counts.__getitem__, inp.count)
        out = self._output(state, inp.log, inp.n)
        if out is None:
            return _unchanged(inp)
        return _Outcome(out, list(range(len(messages))), set(state.edits))


class _EditStrategy(ContextStrategy):
    """An in-place strategy whose work is a map of the messages it replaces (``_edits``: index
    → new message), applied alike to a plain list (scanned as it is, no log built, when there
    is no trigger) and to any source; with a ``_trigger``, only once it fires."""

    _trigger: int | Trigger = 0  # none: the strategy always runs

    def _edits(self, messages: Sequence[Message]) -> dict[int, Message]:
        raise NotImplementedError

    def _apply_fast(self, source: Source) -> list[Message] | None:
        if type(source) is list and self._trigger == 0:
            edits = self._edits(source)
            return [edits.get(i, m) for i, m in enumerate(source)] if edits else source
        return None

    def _run(self, inp: _Input) -> _Outcome:
        if self._trigger != 0 and not _fired(self._trigger, inp.log, inp.n):
            return _unchanged(inp)
        messages = inp.messages
        edits = self._edits(messages)
        if not edits:
            return _unchanged(inp)
        out = [edits.get(i, m) for i, m in enumerate(messages)]
        return _Outcome(out, list(range(len(messages))), set(edits))


def _image_count(message: Message) -> int:
    """The images of a message: in its content and in its tool results' lists."""
    count = 0
    for block in message.content:
        if type(block) is ImageBlock:
            count += 1
        elif type(block) is ToolResultBlock and not isinstance(block.content, str):
            count += sum(type(item) is ImageBlock for item in block.content)
    return count


class _Images:
    """:class:`KeepRecentImages`' pass over a history: the messages with images (index,
    image count, the message as read), ``total`` images, and the oldest ``removed`` of
    them replaced in ``out``. How many are old (``total - n``, rounded down to ``chunk``)
    only grows as messages are appended, and a message's edit reads only the message and
    how many of its images are old, so only the message where the old ones end is edited
    again (when more of its images become old)."""

    __slots__ = ("at", "before", "images", "out", "removed", "total")

    def __init__(self) -> None:
        self.images: list[tuple[int, int, Message]] = []
        self.total = 0
        self.removed = 0
        self.at = 0  # images[at] holds the oldest image not removed yet
        self.before = 0  # the images of images[:at]
        self.out: list[Message] = []


class KeepRecentImages(Memoised[_Images], _EditStrategy):
    """Keep only the newest ``n`` images; older ones become a short text ``placeholder``
    (Anthropic's computer-use reference agent does this: a screenshot per step is what
    overflows first).

    Images are counted over the whole history, newest first, in message content and in tool
    results alike. With ``chunk`` > 1, images are removed only in multiples of ``chunk``
    (between ``n`` and ``n + chunk - 1`` are kept), so the history's prefix — and the
    provider's prompt cache — changes once every ``chunk`` images rather than every turn.
    Nothing is dropped and no tool id changes, so it is pair-safe; a second run finds at
    most ``n + chunk - 1`` images and changes nothing. Like :class:`ClearToolResults`, a
    call on a history that extends its last one reads only the messages appended since.
    """

    def __init__(self, n: int, *, placeholder: str = "[image removed]", chunk: int = 1) -> None:
        self.n = _check_int("n", n, 0)
        if not isinstance(placeholder, str) or not placeholder:
            raise InvalidStrategy(f"placeholder must be a non-empty str, got {placeholder!r}")
        self.placeholder = placeholder
        self.chunk = _check_int("chunk", chunk, 1)
        self._init_memo()

    def __repr__(self) -> str:
        chunk = f", chunk={self.chunk}" if self.chunk > 1 else ""
        return f"KeepRecentImages({self.n}{chunk})"

    def _removed(self, total: int) -> int:
        """How many of ``total`` images, the oldest, are replaced."""
        extra = total - self.n
        return extra - extra % self.chunk if extra > 0 else 0

    def _without(self, message: Message, left: int) -> Message:
        """``message`` with its oldest ``left`` images replaced by the placeholder."""
        text = TextBlock(self.placeholder)
        blocks: list[object] = []
        for block in message.content:
            if type(block) is ImageBlock and left:
                blocks.append(text)
                left -= 1
            elif type(block) is ToolResultBlock and not isinstance(block.content, str):
                items: list[object] = []
                for item in block.content:
                    if type(item) is ImageBlock and left:
                        items.append(text)
                        left -= 1
                    else:
                        items.append(item)
                if items != list(block.content):
                    block = msgspec.structs.replace(block, content=tuple(items))
                blocks.append(block)
            else:
                blocks.append(block)
        assert left == 0
        return msgspec.structs.replace(message, content=tuple(blocks))

    def _edits(self, messages: Sequence[Message]) -> dict[int, Message]:
        """The messages that lose images, by index (empty when nothing changes)."""
        where: list[int] = []  # the index of each image's message, oldest first
        for i, m in enumerate(messages):
            where.extend([i] * _image_count(m))
        remove = self._removed(len(where))
        if remove <= 0:
            return {}
        # Images of messages before the last one's all go; of it, the oldest.
        old = collections.Counter(where[:remove])
        return {i: self._without(messages[i], gone) for i, gone in old.items()}

    # -- the memoised pass (``ctxtrim._memo``) --------------------------------------------------

    def _settings(self) -> Hashable:
        return (self.n, self.placeholder, self.chunk)

    def _needs_log(self) -> bool:
        return False

    def _new_state(self) -> _Images:
        return _Images()

    def _advance(
        self, state: _Images, seen: list[Message], start: int, count: Callable[[int], int]
    ) -> bool:
        state.out += seen[start:]
        for i in range(start, len(seen)):
            if not isinstance(seen[i], Message):
                raise TypeError  # not a history: the plain path raises its typed error
            images = _image_count(seen[i])
            if images:
                state.images.append((i, images, seen[i]))
                state.total += images
        return False

    def _output(self, state: _Images, log: _core.MessageLog | None, n: int) -> list[Message] | None:
        remove = self._removed(state.total)
        if remove < state.removed:
            raise RuntimeError("fewer old images")  # never under appends: the plain path
        images = state.images
        while state.removed < remove:
            i, count, message = images[state.at]
            gone = min(count, remove - state.before)
            state.out[i] = self._without(message, gone)
            state.removed = state.before + gone
            if gone == count:
                state.at += 1
                state.before += count
        return state.out if state.removed else None


def _paired_blocks(message: Message) -> list[tuple[int, object]]:
    """The tool calls and results of a message, with their places in its content."""
    return [
        (j, b) for j, b in enumerate(message.content) if type(b) in (ToolUseBlock, ToolResultBlock)
    ]


def _has_reasoning(message: Message) -> bool:
    return any(type(b) is ReasoningBlock for b in message.content)


def _issues_calls(message: Message) -> bool:
    """Whether an assistant message issues a tool call (a client or a provider one)."""
    for block in message.content:
        if type(block) is ToolUseBlock:
            return True
        if type(block) is ProviderBlock and block.spec.pair == "call":
            return True
    return False


class ClearThinking(Memoised["_Thinking"], _EditStrategy):
    """Drop the reasoning ("thinking") of all but the last ``keep`` assistant messages that
    carry any (Anthropic context editing's ``clear_thinking_20251015`` with
    ``keep={"type": "thinking_turns", "value": keep}``).

    Reasoning is a :class:`~ctxtrim.ReasoningBlock`: Anthropic ``thinking`` and
    ``redacted_thinking`` blocks, Responses ``reasoning`` items and Gemini thoughts all
    convert to one. A stale one costs its tokens on every request and is seldom worth them;
    old turns' thinking is what a reasoning model's history is mostly made of.

    **Never drops what the provider requires.** Anthropic requires the thinking of the
    assistant messages of the current tool-use loop to come back unchanged with their tool
    results: while the history's newest assistant message issues tool calls (the loop is
    open), the reasoning of every assistant message issuing calls since the last real user
    message is kept, whatever ``keep`` says (``keep=0`` clears all the rest). Such messages
    count towards ``keep``. A final answer closes the loop, and with it the protection.

    Acts only when the history is over ``trigger`` tokens (0: always), or when a trigger
    spec fires (as :class:`ClearToolResults` takes it). A message whose only
    content was reasoning gets ``placeholder`` as its text, so no message is left empty; no
    message is removed and no tool id changes, so it is pair-safe. A second run finds at
    most ``keep`` (plus the protected) messages with reasoning and changes nothing; with
    nothing to clear the input list itself comes back. Cleared messages are in the report's
    ``changed``, priced as :class:`ClearToolResults`' are. Like it, a call on a history that
    extends its last one reads only the messages appended since.
    """

    def __init__(
        self,
        keep: int = 1,
        *,
        trigger: TriggerSpec = 0,
        placeholder: str = "[thinking cleared]",
        model: str | None = None,
        context_window: int | None = None,
    ) -> None:
        self.keep = _check_int("keep", keep, 0)
        self._trigger = _parse_trigger(trigger, model, context_window)
        self.trigger = trigger
        if not isinstance(placeholder, str) or not placeholder:
            raise InvalidStrategy(f"placeholder must be a non-empty str, got {placeholder!r}")
        self.placeholder = placeholder
        self._init_memo()

    def __repr__(self) -> str:
        trigger = f", trigger={self.trigger}" if self.trigger else ""
        return f"ClearThinking(keep={self.keep}{trigger})"

    def _settings(self) -> Hashable:
        return (self.keep, self.placeholder, self._trigger != 0)

    def _needs_log(self) -> bool:
        return self._trigger != 0

    def _new_state(self) -> _Thinking:
        return _Thinking()

    def _advance(
        self, state: _Thinking, seen: list[Message], start: int, count: Callable[[int], int]
    ) -> bool:
        keep = self.keep
        reasoning = state.reasoning
        state.closed += seen[start:]
        state.open += seen[start:]
        for i in range(start, len(seen)):
            message = seen[i]
            if message.role != "assistant":
                if message.is_real_user:
                    # A new turn: the loop before it is over, its messages lose protection.
                    state.last_user = i
                    for j in state.kept_open:
                        state.open[j] = state.closed[j]
                    state.kept_open.clear()
                continue
            calls = _issues_calls(message)
            state.newest_calls = calls
            state.newest = i
            for block in message.content:
                if type(block) is ReasoningBlock:
                    break
            else:
                continue
            reasoning.append((i, calls))
            while len(reasoning) - keep > state.old:
                j, j_calls = reasoning[state.old]
                state.old += 1
                state.closed[j] = self._cleared(seen[j])
                if j_calls and j > state.last_user:
                    state.kept_open.append(j)  # kept while the loop it belongs to is open
                else:
                    state.open[j] = state.closed[j]
        return False

    def _replaceable(self, state: _Thinking, i: int, old: Message, new: Message) -> bool:
        # The decisions read whether a message issues calls and whether it has reasoning.
        return _issues_calls(old) == _issues_calls(new) and _has_reasoning(old) == _has_reasoning(
            new
        )

    def _replace(self, state: _Thinking, i: int, old: Message, new: Message) -> None:
        at = bisect.bisect_left(state.reasoning, (i,))
        if at < state.old and state.reasoning[at][0] == i:  # old: cleared (or kept open)
            state.closed[i] = self._cleared(new)
            state.open[i] = new if i in state.kept_open else state.closed[i]
        else:
            state.closed[i] = state.open[i] = new

    def _cleared(self, message: Message) -> Message:
        content = tuple(b for b in message.content if type(b) is not ReasoningBlock)
        if not content:
            content = (TextBlock(self.placeholder),)
        return msgspec.structs.replace(message, content=content)

    def _output(
        self, state: _Thinking, log: _core.MessageLog | None, n: int
    ) -> list[Message] | None:
        if self._trigger != 0 and log is not None and not _fired(self._trigger, log, n):
            return None
        if state.loop_open():
            return state.open if state.old > len(state.kept_open) else None
        return state.closed if state.old else None

    def _edits(self, messages: Sequence[Message]) -> dict[int, Message]:
        """The messages that lose reasoning, by index (empty when nothing changes)."""
        state = _Thinking()
        self._advance(state, list(messages), 0, _no_counts)
        out = state.open if state.loop_open() else state.closed
        return {j: out[j] for j, _ in state.reasoning[: state.old] if out[j] is not messages[j]}


class _Thinking:
    """:class:`ClearThinking`' pass over a history, oldest first. Of the assistant messages
    with reasoning (``reasoning``: index, whether it issues calls), all but the newest
    ``keep`` are old (``reasoning[:old]``), and only ever more are as messages are appended.
    An old one is cleared unless the tool-use loop is open (the newest assistant message,
    after the last real user message, issues calls) and it issues calls after that user
    message. So two outputs are kept: ``closed``, every old one cleared, and ``open``, those
    protected while the loop is open (``kept_open``) left as they are; a real user message
    ends the protection of those before it for good."""

    __slots__ = (
        "closed",
        "kept_open",
        "last_user",
        "newest",
        "newest_calls",
        "old",
        "open",
        "reasoning",
    )

    def __init__(self) -> None:
        self.reasoning: list[tuple[int, bool]] = []
        self.old = 0
        self.closed: list[Message] = []
        self.open: list[Message] = []
        self.kept_open: list[int] = []
        self.last_user = -1
        self.newest = -1  # the newest assistant message
        self.newest_calls = False

    def loop_open(self) -> bool:
        return self.newest > self.last_user and self.newest_calls


def _no_counts(i: int) -> int:
    raise AssertionError("ClearThinking sums no counts")  # pragma: no cover
