"""A pair-safe, budgeted trim of what a Google ADK agent sends its model.

One plugin on the app (or one callback on an agent)::

    from google.adk.apps import App
    from ctxtrim.integrations.google_adk import TrimContents

    app = App(name="app", root_agent=agent, plugins=[TrimContents(max_tokens=100_000)])

:class:`TrimContents` is an ADK ``BasePlugin`` whose ``before_model_callback`` replaces
``llm_request.contents`` by the longest pair-safe suffix that fits the budget, after the
pinned task (the first user content); called as a function it is an agent's
``before_model_callback`` too (``LlmAgent(..., before_model_callback=TrimContents(...))``).
It works after ADK's own events compaction (a compaction's summary is a content like any
other). :class:`ContextFilterPlugin` is ADK's plugin of that name (the last *n*
invocations, whatever their size), same arguments, with a pair-safe cut: change the import.

Invariants:

* The contents kept are ADK's own ``types.Content`` objects, in order (never copies): a
  content is kept or dropped whole, so a thought signature stays on its part and the parts
  of one model turn stay together.
* No function response is kept without its call, and no call without its response
  (``validate`` would call either an orphan; Gemini refuses them). Pairs are matched by id
  where the request carries ids; ADK strips its own ``adk-`` ids before it calls a Gemini
  model, so a response without an id answers the calls of the model content before it
  (over the user contents between them), in order and by name — as the Gemini API pairs
  them.
* A static instruction ADK placed at the front of the contents (non-text parts, a stable
  prefix for context caching) stays there, as it is; the contents after it are trimmed.
* ``max_tokens`` is the request's: the system instruction's tokens are taken off it, and
  with no ``max_tokens`` the budget is the model's context window from
  :mod:`ctxtrim.models` (``llm_request.model``), less the ``max_output_tokens`` of the
  request's config. A model the table does not know raises
  :class:`~ctxtrim.errors.UnknownModel` naming it: register it, or pass ``max_tokens``.
* A call reads the contents from their two ends as far back as the budget reaches
  (O(window), not O(history)). ADK hands the plugin fresh copies of every content on every
  request, but the copies share their payloads (texts, arguments, responses) with the
  session: a content's skeleton is kept by those, so a turn converts only its new contents.

Contents are priced as ctxtrim prices messages: texts, function calls' names and JSON
arguments, function responses' JSON, images by their size; audio, files and other parts as
:mod:`ctxtrim.formats.gemini` reads them; code execution and server tool parts as their
JSON text (never paired: nothing on the wire pairs them across contents). Or by a
:class:`ctxtrim.TokenCounter` of yours.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from ctxtrim import _core
from ctxtrim.errors import InvalidMessage, InvalidStrategy
from ctxtrim.integrations._common import missing_extra, take
from ctxtrim.messages import (
    IMAGE_MEDIA_TYPES,
    Block,
    ImageBlock,
    Message,
    ProviderBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    pair_ids,
)
from ctxtrim.strategies import (
    FitContextWindow,
    KeepLastMessages,
    KeepLastTurns,
    TrimRounds,
)
from ctxtrim.tokens import TokenCounter

try:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("google-adk", "adk", _err) from _err

__all__ = ["ContextFilterPlugin", "TrimContents", "to_skeleton"]

logger = logging.getLogger(__name__)

#: The cut strategies the core decides in one call: what ``strategy=`` takes.
_CUTS = (FitContextWindow, KeepLastTurns, TrimRounds, KeepLastMessages)
#: How far back a response without an id looks for the model content of its call (ADK
#: merges the responses of one model turn into one content: one step back, normally).
_LOOK_BACK = 16


def _json(value: Any) -> str:
    """The compact JSON of a call's arguments or a response, for its token count."""
    try:
        return _core.compact_json(value)
    except (TypeError, ValueError):  # a tool returned something JSON cannot hold
        return str(value)


def _other(part: types.Part, role: str) -> Block:
    """A part that is neither text nor a function call or response, as
    :mod:`ctxtrim.formats.gemini` reads it (images by size, the rest by its row)."""
    blob = part.inline_data
    if blob is not None and blob.mime_type in IMAGE_MEDIA_TYPES and blob.data:
        return ImageBlock(blob.mime_type, blob.data)
    from ctxtrim.formats.gemini import from_gemini

    raw = part.model_dump(mode="json", exclude_none=True)
    try:
        block = from_gemini([{"role": role, "parts": [raw]}])[0].content[0]
    except (InvalidMessage, IndexError):
        return TextBlock(_json(raw))
    if type(block) in (ToolUseBlock, ToolResultBlock):  # pragma: no cover - handled before
        return TextBlock(_json(raw))
    if type(block) is ProviderBlock and block.call_id is not None:
        # Code execution and server tool parts: the Gemini format pairs them within one
        # content only, and a content is kept whole here; across contents (ADK's code
        # executors answer in a content of their own) nothing on the wire pairs them.
        return TextBlock(_json(raw))
    return block


def _calls(content: types.Content, i: int) -> list[tuple[str, str]]:
    """``(name, id)`` of the function calls of the model content at index ``i`` (a call
    without an id is named by its position: ``adk_<i>_<k>``)."""
    out = []
    for k, part in enumerate(content.parts or ()):
        fc = part.function_call
        if fc is not None:
            out.append((fc.name or "", fc.id or f"adk_{i}_{k}"))
    return out


def _answers(contents: Sequence[types.Content], i: int) -> list[tuple[str, str]]:
    """The calls the id-less responses of content ``i`` may answer, in order: those of the
    latest model content before it not answered by the user contents in between."""
    j = i - 1
    while j >= 0 and i - j <= _LOOK_BACK and contents[j].role != "model":
        j -= 1
    if j < 0 or i - j > _LOOK_BACK:
        return []
    waiting = _calls(contents[j], j)
    for c in contents[j + 1 : i]:
        for part in c.parts or ():
            fr = part.function_response
            if fr is not None:
                _answer(waiting, fr)
    return waiting


def _answer(waiting: list[tuple[str, str]], fr: types.FunctionResponse) -> str | None:
    """The id of the waiting call ``fr`` answers (removed from ``waiting``), or None."""
    for k, (name, call_id) in enumerate(waiting):
        if (fr.id is not None and call_id == fr.id) or (fr.id is None and name == fr.name):
            del waiting[k]
            return call_id
    return None


def to_skeleton(contents: Sequence[types.Content], i: int) -> Message:
    """The ctxtrim skeleton of ``contents[i]``: its role, the ids of its calls and of the
    calls its responses answer, and what it costs in tokens."""
    content = contents[i]
    parts = content.parts or ()
    if content.role == "model":
        blocks: list[Block] = []
        for k, part in enumerate(parts):
            fc = part.function_call
            if fc is not None:
                args = fc.args or {}
                name = fc.name or "?"
                blocks.append(ToolUseBlock(fc.id or f"adk_{i}_{k}", name, args))
            elif part.text is not None:
                blocks.append(TextBlock(part.text))
            else:
                blocks.append(_other(part, "model"))
        return Message("assistant", tuple(blocks) or (TextBlock(""),))
    results: list[Block] = []
    rest: list[Block] = []
    waiting: list[tuple[str, str]] | None = None
    for k, part in enumerate(parts):
        fr = part.function_response
        if fr is not None:
            call_id = fr.id
            if call_id is None:
                if waiting is None:
                    waiting = _answers(contents, i)
                call_id = _answer(waiting, fr) or f"adk_orphan_{i}_{k}"
            results.append(ToolResultBlock(call_id, _json(fr.response or {})))
        elif part.text is not None:
            rest.append(TextBlock(part.text))
        else:
            rest.append(_other(part, "user"))
    # Results first: a content answering calls and adding text is still one message.
    return Message("user", (*results, *rest) or (TextBlock(""),))


#: The entries of a content of text parts alone, for a caller after its pairs (none).
_TEXT_HUMAN: list[Any] = [None, None, (frozenset(), frozenset()), True]
_TEXT_OTHER: list[Any] = [None, None, (frozenset(), frozenset()), False]


class _Kept:
    """Skeletons kept across requests, by what ADK's copies share with the session.

    ADK copies every content and part for every request, but not their payloads: a part's
    ``text`` string, a call's ``args`` dict (also when ADK strips the call's id: a shallow
    copy) and a response's ``response`` dict are the session event's own objects. A
    content's key is its index, its role and the identity of each part's payload; an entry
    holds the payloads, so no id is reused while it lives. The index is in the key because
    a skeleton's id-less calls are named by their index; a content whose parts are not all
    text, calls with arguments and responses is not kept (converted each time). Two
    contents with the same key hold the same payload objects in the same roles: the same
    skeleton. Bounded: past 4096 entries and four times the contents the last call read, it
    starts again (a window is converted once more); a hit allocates nothing that outlives
    it, so a warm call leaves the garbage collector's counts where they were.
    """

    __slots__ = ("_entries", "_reads")

    def __init__(self) -> None:
        # key -> [the payloads (held), the skeleton, its pair ids once asked for]
        self._entries: dict[tuple[Any, ...], list[Any]] = {}
        self._reads = 0

    def one(self, contents: Sequence[types.Content], i: int) -> Message:
        skeleton: Message = self.entry(contents, i)[1]
        return skeleton

    @staticmethod
    def pairs(entry: list[Any]) -> tuple[Any, Any]:
        """``pair_ids`` of an entry's skeleton, kept with it."""
        if entry[2] is None:
            calls, results = pair_ids(entry[1])
            entry[2] = (frozenset(calls), frozenset(results))
        found: tuple[Any, Any] = entry[2]
        return found

    def entry(self, contents: Sequence[types.Content], i: int, skeleton: bool = True) -> list[Any]:
        """``[the payloads (held), the skeleton, its pair ids once asked for, whether the
        content starts an invocation (a user content with no function response)]``. With
        ``skeleton=False`` (a caller after the pairs only), a content of text parts alone
        is a shared entry with no pairs and no skeleton."""
        content = contents[i]
        role = content.role
        payloads: list[Any] = [i, role]
        human = role == "user"
        cacheable = True
        text_only = True
        for part in content.parts or ():
            payload: Any
            fc, fr = part.function_call, part.function_response
            if fr is not None:
                human = False
                text_only = False
            if fc is not None:
                payload = fc.args
                text_only = False
            else:
                payload = fr.response if fr is not None else part.text
            if payload is None:
                cacheable = False
            payloads.append(payload)
        if not skeleton and text_only and cacheable:
            return _TEXT_HUMAN if human else _TEXT_OTHER
        if not cacheable or len(payloads) == 2:
            return [None, to_skeleton(contents, i), None, human]
        key = (i, role, *map(id, payloads[2:]))
        self._reads += 1
        hit = self._entries.get(key)
        if hit is None:
            hit = [payloads, to_skeleton(contents, i), None, human]
            self._entries[key] = hit
        return hit

    def done(self) -> None:
        """After a call: bound the entries by what it read."""
        if len(self._entries) > max(4096, 4 * self._reads):
            self._entries = {}
        self._reads = 0


def _instruction_tokens(config: types.GenerateContentConfig | None) -> int:
    """The estimated tokens of the request's system instruction."""
    si = None if config is None else config.system_instruction
    if si is None:
        return 0
    if isinstance(si, str):
        return int(_core.estimate_tokens(si))
    if isinstance(si, types.Content):
        texts = [p.text for p in si.parts or () if p.text]
    elif isinstance(si, types.Part):
        texts = [si.text or ""]
    elif isinstance(si, list):
        texts = [x if isinstance(x, str) else getattr(x, "text", "") or "" for x in si]
    else:
        texts = [str(si)]
    return int(_core.estimate_tokens("\n".join(texts)))


class TrimContents(BasePlugin):
    """Fit an ADK agent's model request in a token budget, pair-safely.

    ``TrimContents(max_tokens=None, *, reserve_tokens=0, counter=None, pin_task=True,
    strategy=None, name="ctxtrim_trim_contents")``:

    * ``max_tokens``: the request's budget (the system instruction comes off it); None: the
      model's context window (:mod:`ctxtrim.models`), less the request's
      ``max_output_tokens``, less ``reserve_tokens``;
    * ``strategy``: one of ctxtrim's cut strategies instead of a budget
      (``KeepLastTurns(10)`` keeps the last ten user turns, as ``ContextFilterPlugin``'s
      ``num_invocations_to_keep`` does, but never splits a pair); ``FitContextWindow`` too;
    * ``counter``: a :class:`ctxtrim.TokenCounter` pricing the contents' skeletons.

    Pass it in ``App(plugins=[...])``, or as ``LlmAgent(before_model_callback=...)``.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        reserve_tokens: int = 0,
        counter: TokenCounter | Callable[[str], int] | None = None,
        pin_task: bool = True,
        strategy: FitContextWindow | KeepLastTurns | TrimRounds | KeepLastMessages | None = None,
        name: str = "ctxtrim_trim_contents",
    ) -> None:
        super().__init__(name)
        if strategy is not None:
            if max_tokens is not None:
                raise InvalidStrategy("give max_tokens or strategy, not both")
            if reserve_tokens or counter is not None or not pin_task:
                raise InvalidStrategy(
                    "reserve_tokens, counter and pin_task are the strategy's own options: "
                    "give them to it"
                )
            if type(strategy) not in _CUTS:
                raise InvalidStrategy(
                    "strategy must be one of FitContextWindow, KeepLastTurns, TrimRounds, "
                    f"KeepLastMessages (a cut of whole contents), got {type(strategy).__name__}"
                )
        elif max_tokens is not None:
            strategy = FitContextWindow(
                max_tokens, counter, reserve_tokens=reserve_tokens, pin_task=pin_task
            )
        else:
            # The budget is the model's: checked here, known only per request.
            FitContextWindow(max(reserve_tokens, 0) + 1, counter, reserve_tokens=reserve_tokens)
        self._strategy = strategy
        self._reserve = reserve_tokens
        self._counter = counter
        self._pin_task = pin_task
        self._by_model: dict[tuple[str, int], FitContextWindow] = {}
        self._tail = _core.Tail()
        self._kept = _Kept()

    def __repr__(self) -> str:
        what = repr(self._strategy) if self._strategy is not None else "model window"
        return f"TrimContents({what})"

    def _for(
        self, request: LlmRequest
    ) -> FitContextWindow | KeepLastTurns | TrimRounds | KeepLastMessages:
        """The strategy of a request: the one given, or the model's window."""
        if self._strategy is not None:
            return self._strategy
        from ctxtrim.models import budget

        config = request.config
        out = (config.max_output_tokens if config is not None else None) or 0
        key = (request.model or "", out)
        found = self._by_model.get(key)
        if found is None:
            window = budget(key[0], reserve_output=out or False)
            found = FitContextWindow(
                window, self._counter, reserve_tokens=self._reserve, pin_task=self._pin_task
            )
            self._by_model[key] = found
        return found

    def trim(self, llm_request: LlmRequest) -> None:
        """Replace ``llm_request.contents`` by its pair-safe window (in place)."""
        contents = llm_request.contents
        if not contents:
            return
        self._trim(llm_request, self._for(llm_request))

    def _trim(
        self,
        llm_request: LlmRequest,
        strategy: FitContextWindow | KeepLastTurns | TrimRounds | KeepLastMessages,
    ) -> bool:
        """Trim the request with ``strategy``; whether anything was dropped."""
        contents = llm_request.contents
        # ADK puts a non-text static instruction at the front of the contents, a stable
        # prefix for the provider's context cache, and inserts later instructions after it
        # by its index: it is kept as it is, and the rest trimmed.
        k = getattr(llm_request, "_static_instruction_prefix_end_index", None)
        k = k if type(k) is int and 0 < k < len(contents) else 0
        prefix, contents = (contents[:k], contents[k:]) if k else ([], contents)
        if type(strategy) is FitContextWindow:
            value = strategy.budget - _instruction_tokens(llm_request.config)
            for i in range(k):
                value -= _core.message_tokens(to_skeleton(prefix, i), counter=strategy.counter)
            value = max(value, 1)
        else:
            value = getattr(strategy, strategy._value)

        kept = self._kept

        def convert(_content: types.Content, i: int) -> Message:
            return kept.one(contents, i)

        ranges, unchanged, _ = _core.cut_window(
            contents,
            strategy._rule,
            value,
            pin_task=strategy.pin_task,
            start_with_user=strategy.start_with_user,
            counter=strategy.counter,
            convert=convert,
            tail=self._tail,
        )
        kept.done()
        if unchanged:
            return False
        llm_request.contents = prefix + take(contents, ranges) if k else take(contents, ranges)
        return True

    def __call__(
        self, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """An agent's ``before_model_callback``: trims the request, lets the call go on."""
        self.trim(llm_request)
        return None

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        """The plugin's hook: trims the request, lets the call go on."""
        self.trim(llm_request)
        return None


class ContextFilterPlugin(TrimContents):
    """ADK's ``ContextFilterPlugin``, same arguments and behaviour, with a pair-safe cut.

    ``ContextFilterPlugin(num_invocations_to_keep=None, custom_filter=None,
    name="context_filter_plugin", remove_amount=1)``: once the request holds
    ``num_invocations_to_keep + remove_amount`` invocations (an invocation starts at the
    first of consecutive user contents that are not function responses), keep the last
    ``num_invocations_to_keep``, the cut moved back until no function response is kept
    without its call and a user content comes first; then apply ``custom_filter`` to the
    contents. As ADK's, an exception is logged and the request left as it was. Unlike
    ADK's, the move back pairs calls and responses without ids too (by name and order, as
    :func:`to_skeleton` does): ADK strips its ids before calling Gemini, and its plugin
    pairs by id only. Reads the contents from the end, as far back as the invocations kept
    (and ``remove_amount`` more).
    """

    def __init__(
        self,
        num_invocations_to_keep: int | None = None,
        custom_filter: Callable[[list[types.Content]], list[types.Content]] | None = None,
        name: str = "context_filter_plugin",
        remove_amount: int = 1,
    ) -> None:
        if remove_amount < 1:
            raise InvalidStrategy("remove_amount must be at least 1")
        super().__init__(strategy=KeepLastTurns(1), name=name)  # (unused: the cut is below)
        self._keep = num_invocations_to_keep or 0
        self._remove = remove_amount
        self._custom_filter = custom_filter

    def __repr__(self) -> str:
        return f"ContextFilterPlugin(num_invocations_to_keep={self._keep or None})"

    def trim(self, llm_request: LlmRequest) -> None:
        try:
            contents = llm_request.contents
            if self._keep > 0 and contents:
                cut = self._cut(contents)
                if cut:
                    contents = contents[cut:]
            if self._custom_filter is not None:
                contents = self._custom_filter(contents)
            llm_request.contents = contents  # only now: a failure leaves the request as it was
        except Exception:  # ADK's plugin: a filter's failure must not fail the model call
            logger.exception("Failed to reduce context for request")

    def _cut(self, contents: list[types.Content]) -> int:
        """Where the kept contents start (0: nothing dropped)."""
        keep, need = self._keep, self._keep + self._remove
        kept = self._kept
        entries: list[list[Any]] = []  # contents[-1], contents[-2]...: each read once
        count, cut = 0, 0
        human_after = False  # whether contents[i + 1] starts or continues a user run
        for i in range(len(contents) - 1, -1, -1):
            entry = kept.entry(contents, i, skeleton=False)
            entries.append(entry)
            human = entry[3]
            if human_after and not human:
                count += 1  # contents[i + 1] starts an invocation
                if count == keep:
                    cut = i + 1
                if count == need:
                    break
            human_after = human
        else:
            if human_after:
                count += 1  # contents[0] starts one
        if count < need:
            return 0
        # Back from the cut until every response kept has its call (the core's pairing of
        # the skeletons: by id, else by name and order) and the first content kept is a
        # user's (Gemini refuses a function call that follows no user content).
        pending: set[str] = set()
        last = len(contents) - 1
        for i in range(last, -1, -1):
            if last - i < len(entries):
                entry = entries[last - i]
            else:
                entry = kept.entry(contents, i, skeleton=False)
            calls, results = kept.pairs(entry)
            if results:
                pending.update(results)
            if calls and pending:
                pending.difference_update(calls)
            if i <= cut and not pending and entry[3]:
                kept.done()
                return i
        kept.done()
        return 0
