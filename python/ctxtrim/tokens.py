"""Token counting: the `TokenCounter` protocol, the built-in heuristic counter, an exact
counter for OpenAI's encodings, and the price of tool definitions.

The Rust core estimates every message's tokens once, at append, and caches the count in the
log (prefix sums make any range's total O(1)). An exact counter plugs in by implementing
:class:`TokenCounter`; stores call ``count_message`` once per appended message and hand the
result to the core, so no history is ever recounted.

A *price table* says how texts and images are priced: ``"cl100k_base"`` (the default: GPT-4
and older), ``"o200k_base"`` (GPT-4o, GPT-4.1, GPT-5, the o-series) — both pricing images by
OpenAI's high-detail tiling — or ``"anthropic"`` (Claude: texts at cl100k's prices, images by
Anthropic's formula). Wherever a table is named (``encoding=``), a model name works too:
``"gpt-4o"``, ``"gpt-4.1-mini"``, ``"o3"``, ``"gpt-4"``, ``"claude-sonnet-4-5"``;
:func:`price_table` says which table a name selects.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec
from msgspec.structs import force_setattr

from ctxtrim import _core
from ctxtrim.errors import TokenCountError
from ctxtrim.messages import (
    COUNTS_SLOT,
    ImageBlock,
    Message,
    ProviderBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.provider import price

_json_encode = msgspec.json.encode

__all__ = [
    "AnthropicTokenCounter",
    "ExactTokenCounter",
    "HeuristicTokenCounter",
    "TextTokenCounter",
    "TokenCounter",
    "estimate_tokens",
    "image_size",
    "image_tokens",
    "price_table",
    "tool_tokens",
]

estimate_tokens = _core.estimate_tokens
price_table = _core.price_table
image_size = _core.image_size
image_tokens = _core.image_tokens


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text and of a whole message (content, tool calls, overhead)."""

    def count_text(self, text: str) -> int:
        """Tokens of a plain text."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens a provider bills for this message, per-message overhead included."""
        ...


class HeuristicTokenCounter:
    """The core's script-aware estimate: no model files, no network, about 50 ns per word.

    English words, digits, punctuation, whitespace, CJK and other scripts, and emoji are
    priced separately, so Chinese is not under-counted four times as the ``len(text) / 4``
    rule of thumb does. A message costs its texts plus a fixed overhead
    (``_core.MESSAGE_OVERHEAD``), each image by its size (read from its header, priced by
    the table's provider rule; ``_core.IMAGE_TOKENS`` if the header cannot be read), and its
    tool names and JSON inputs.

    ``encoding`` picks the price table: ``"cl100k_base"`` (the default, GPT-4 and older;
    it prices CJK highest, the safe side when trimming), ``"o200k_base"`` (GPT-4o and
    later, which spends ~30 % fewer tokens on Chinese, Japanese and Korean), ``"anthropic"``,
    or a model name (``"gpt-4o"``, ``"claude-…"``); ``self.encoding`` is the table's name. An
    unknown name raises ``ValueError``.
    """

    __slots__ = ("encoding",)

    def __init__(self, encoding: str = "cl100k_base") -> None:
        if isinstance(encoding, (int, float)) and not isinstance(encoding, bool):
            # agentix's HeuristicTokenCounter(chars_per_token=4.0), called positionally.
            raise TypeError(
                f"HeuristicTokenCounter takes a price table's name (encoding='cl100k_base', "
                f"'o200k_base', 'anthropic' or a model name), not characters per token "
                f"({encoding!r}): for agentix's ceil(len(text) / {encoding!r}) use "
                f"ctxtrim.integrations.agentix.HeuristicTokenCounter({encoding!r}), or "
                f"ctxtrim.tokens.TextTokenCounter(that counter) to price whole messages with it"
            )
        self.encoding = _core.price_table(encoding)  # validates the name now

    def count_text(self, text: str) -> int:
        return _core.estimate_tokens(text, encoding=self.encoding)

    def __call__(self, text: str) -> int:
        """``count_text``: the counter is also a plain ``str -> int`` callable."""
        return _core.estimate_tokens(text, encoding=self.encoding)

    def count_message(self, message: Message) -> int:
        return _core.message_tokens(message, encoding=self.encoding)

    def __repr__(self) -> str:
        return f"HeuristicTokenCounter(encoding={self.encoding!r})"


class TextTokenCounter:
    """A :class:`TokenCounter` built from a text counter (any ``str -> int`` callable, e.g.
    ``len``, ``lambda s: len(enc.encode(s))``, or another counter's ``count_text``).

    A message costs ``per_message_overhead``, plus ``count_text`` of each text (text and
    reasoning blocks, string tool results), ``tokens_per_media`` per image, and
    ``count_text`` of each tool call's name and JSON input. The defaults are the built-in
    estimate's (``_core.MESSAGE_OVERHEAD`` and ``_core.IMAGE_TOKENS``); agentix's are 4 and 600.
    """

    __slots__ = ("per_message_overhead", "text", "tokens_per_media")

    def __init__(
        self,
        text: Callable[[str], int],
        *,
        per_message_overhead: int | None = None,
        tokens_per_media: int | None = None,
    ) -> None:
        if not callable(text):
            raise TypeError(f"text must be a callable str -> int, got {type(text).__name__}")
        for name, value in (
            ("per_message_overhead", per_message_overhead),
            ("tokens_per_media", tokens_per_media),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        self.text = text
        self.per_message_overhead = (
            _core.MESSAGE_OVERHEAD if per_message_overhead is None else per_message_overhead
        )
        self.tokens_per_media = _core.IMAGE_TOKENS if tokens_per_media is None else tokens_per_media

    def count_text(self, text: str) -> int:
        n = self.text(text)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"the text counter must return an int >= 0, got {n!r}")
        return n

    def count_message(self, message: Message) -> int:
        import json  # here, not at the top: only this counter needs it

        from ctxtrim.messages import (
            ImageBlock,
            ReasoningBlock,
            TextBlock,
            ToolResultBlock,
            ToolUseBlock,
        )

        total = self.per_message_overhead
        for block in message.content:
            if type(block) is TextBlock or type(block) is ReasoningBlock:
                total += self.count_text(block.text)
            elif type(block) is ImageBlock:
                total += self.tokens_per_media
            elif type(block) is ToolUseBlock:
                total += self.count_text(block.name)
                total += self.count_text(json.dumps(block.input, ensure_ascii=False))
            elif type(block) is ToolResultBlock:
                if isinstance(block.content, str):
                    total += self.count_text(block.content)
                else:
                    for item in block.content:
                        if type(item) is TextBlock:
                            total += self.count_text(item.text)
                        else:
                            total += self.tokens_per_media
        return total

    def __repr__(self) -> str:
        return (
            f"TextTokenCounter({self.text!r}, per_message_overhead={self.per_message_overhead}, "
            f"tokens_per_media={self.tokens_per_media})"
        )


def as_token_counter(
    counter: object,
    *,
    per_message_overhead: int | None = None,
    tokens_per_media: int | None = None,
) -> TokenCounter | None:
    """``counter`` as a :class:`TokenCounter`: a ``TokenCounter`` as is (unless overhead or
    media prices are given, which wrap its ``count_text``), a plain callable wrapped in a
    :class:`TextTokenCounter`; ``None`` stays ``None`` unless prices are given (then the
    built-in estimate with those prices). Anything else raises ``TypeError``."""
    custom = per_message_overhead is not None or tokens_per_media is not None
    if counter is None:
        if not custom:
            return None
        counter = HeuristicTokenCounter()
    if isinstance(counter, TokenCounter):
        if not custom:
            return counter
        text: Callable[[str], int] = counter.count_text
    elif callable(counter):
        text = counter
    else:
        raise TypeError(
            "counter must be a TokenCounter (count_text and count_message) or a callable "
            f"str -> int, got {type(counter).__name__}"
        )
    return TextTokenCounter(
        text, per_message_overhead=per_message_overhead, tokens_per_media=tokens_per_media
    )


#: Tokens OpenAI adds per chat message (``<|start|>{role}\n{content}<|end|>\n``), and for a
#: message's ``name`` beyond the name itself (OpenAI's cookbook, "How to count tokens with
#: tiktoken").
OPENAI_TOKENS_PER_MESSAGE = 3
OPENAI_TOKENS_PER_NAME = 1
#: Tokens every reply is primed with (``<|start|>assistant<|message|>``): once per request,
#: not per message, so no message carries it; reserve it with ``reserve_tokens``.
OPENAI_REPLY_PRIMING = 3


#: The SHA-256 of each encoding's vocabulary file as OpenAI publishes it (tiktoken's
#: ``expected_hash``): the file bpe-openai ships is read only if it is that one.
_VOCABULARY_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


@functools.cache
def _core_counter(name: str) -> _core.BpeCounter | None:
    """The core's counter for ``name``, on the vocabulary file bpe-openai ships (read once
    per process: ~0.1 s, ~15 MB); None if the file is not there or not OpenAI's."""
    import gzip  # here, not at the top: only an exact counter reads a vocabulary
    import hashlib
    import importlib.resources

    try:
        resource = importlib.resources.files("bpe_openai") / "data" / f"{name}.tiktoken.gz"
        data = gzip.decompress(resource.read_bytes())
    except (OSError, ModuleNotFoundError, gzip.BadGzipFile, EOFError):
        return None
    if hashlib.sha256(data).hexdigest() != _VOCABULARY_SHA256[name]:
        return None
    return _core.BpeCounter(data, name)


def _bpe_counter(name: str) -> tuple[Callable[[str], int], Callable[[str], int], str]:
    """Two functions counting a text's tokens under the encoding ``name``: one for any
    text, and one for valid UTF-8 only (a message's texts: no lone surrogates); and which
    tokenizer counts (``"ctxtrim"`` or ``"bpe-openai"``)."""
    import importlib  # here, not at the top: only an exact counter needs it

    try:
        with warnings.catch_warnings():  # it reads its data with a deprecated importlib API
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module("bpe_openai")
            encoding = module.get_encoding(name)
    except ImportError as e:
        raise ImportError(
            "ExactTokenCounter needs bpe-openai (OpenAI's tokenizers, offline): "
            "pip install 'ctxtrim[exact]'"
        ) from e
    encode_ordinary: Callable[[str], list[int]] = encoding.encode_ordinary

    def public(text: str) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return len(encode_ordinary(text))

    # The core's tokenizer (the same vocabulary and split, 3-4x faster: no regex engine)
    # when bpe-openai's vocabulary file is there; else bpe-openai's compiled counter, which
    # counts without building the list of ids and takes texts of any length
    # (`encode_ordinary` refuses 1M characters and more), but is not public API, so it is
    # used only where present. The public path takes what both refuse: texts with lone
    # surrogates, which it replaces as tiktoken does.
    core = _core_counter(name)
    count = core.count if core is not None else None
    backend = "ctxtrim"
    if count is None:
        count = getattr(getattr(encoding, "_backend", None), "count", None)
        backend = "bpe-openai"
        if not callable(count):
            return public, public, backend
    exact: Callable[[str], int] = count

    def fast(text: str) -> int:
        try:
            return int(exact(text))
        except UnicodeEncodeError:
            return public(text)

    return fast, exact, backend


class ExactTokenCounter:
    """OpenAI's own count, offline: ``o200k_base`` or ``cl100k_base`` from the `bpe-openai
    <https://pypi.org/project/bpe-openai/>`_ wheel, which ships the vocabulary files (tiktoken
    downloads them at first use). Needs the extra: ``pip install 'ctxtrim[exact]'``.

    The core tokenizes, with that vocabulary (read once per process, and only if it is the
    file OpenAI publishes): OpenAI's split and merges, equal to bpe-openai's count and 4-6x
    faster. Where the file cannot be read, bpe-openai's own tokenizer counts; ``backend``
    says which (``"ctxtrim"`` or ``"bpe-openai"``).

    ``encoding_or_model`` is an encoding (``"o200k_base"``, ``"cl100k_base"``) or an OpenAI
    model name (``"gpt-4o"``, ``"gpt-4.1-mini"``, ``"o3"``, ``"gpt-4"``); a Claude model or
    the ``"anthropic"`` table raises ``ValueError`` (Anthropic publishes no tokenizer: use
    ``HeuristicTokenCounter("anthropic")``).

    A message is counted as Chat Completions bills it (OpenAI's cookbook): each chat message
    costs :data:`OPENAI_TOKENS_PER_MESSAGE` plus its role and content, and a ``name`` its
    tokens plus :data:`OPENAI_TOKENS_PER_NAME`. A user message's tool results are separate
    ``tool`` messages there, so each result costs a message's framing, ``"tool"`` and its
    content, and the message's other blocks one user message. A tool call costs its name and
    its arguments (compact JSON); an image its size under OpenAI's high-detail rule (as
    :class:`HeuristicTokenCounter` prices it); reasoning blocks nothing (Chat Completions does
    not send them back). Special-token text such as ``"<|endoftext|>"`` is counted as plain
    text. Texts and tool calls are exact; the framing of tool calls is OpenAI's to choose
    and not published, so it is not added.

    The strategies, logs and stores call ``count_message`` once per message object and keep
    the count with the message.
    """

    __slots__ = ("_core", "_count", "_roles", "_utf8", "backend", "encoding")

    def __init__(self, encoding_or_model: str = "o200k_base") -> None:
        table = _core.price_table(encoding_or_model)
        if table not in ("o200k_base", "cl100k_base"):
            raise ValueError(
                f"ExactTokenCounter counts OpenAI's encodings; {encoding_or_model!r} selects "
                f"the {table!r} price table, which has no public tokenizer "
                f"(use HeuristicTokenCounter({encoding_or_model!r}))"
            )
        self.encoding = table
        #: Which tokenizer counts: ``"ctxtrim"`` (the core's, on bpe-openai's vocabulary
        #: file) or ``"bpe-openai"`` (its own, where that file cannot be read).
        self._count, self._utf8, self.backend = _bpe_counter(table)
        # The core counts whole messages too (no Python per block) when it tokenizes.
        self._core = _core_counter(table) if self.backend == "ctxtrim" else None
        # Framing plus the role's tokens, per role (and "tool" for a tool result).
        self._roles = {
            role: OPENAI_TOKENS_PER_MESSAGE + self._count(role)
            for role in ("system", "user", "assistant", "tool")
        }

    def count_text(self, text: str) -> int:
        return self._count(text) if text else 0

    def _result(self, content: str | tuple[TextBlock | ImageBlock | ProviderBlock, ...]) -> int:
        """A tool result's content: a `tool` message's."""
        if isinstance(content, str):
            return self._roles["tool"] + (self._utf8(content) if content else 0)
        n = self._roles["tool"]
        for item in content:
            if type(item) is TextBlock:
                n += self._utf8(item.text) if item.text else 0
            elif type(item) is ImageBlock:
                n += image_tokens(item.data, encoding=self.encoding)
            elif type(item) is ProviderBlock:
                n += price(item, self._utf8)
        return n

    def count_message(self, message: Message) -> int:
        if self._core is not None:
            return self._core.count_message(message)
        count = self._utf8  # a message's strings are valid UTF-8
        n = 0  # the tool messages its tool results become
        body = 0  # the chat message of its other blocks
        others = False
        for block in message.content:
            kind = type(block)
            if kind is TextBlock:
                text = block.text  # type: ignore[union-attr]
                body += count(text) if text else 0
                others = True
            elif kind is ToolResultBlock:
                n += self._result(block.content)  # type: ignore[union-attr]
            elif kind is ToolUseBlock:
                body += count(block.name)  # type: ignore[union-attr]
                body += count(_json_encode(block.input).decode())  # type: ignore[union-attr]
                others = True
            elif kind is ImageBlock:
                body += image_tokens(block.data, encoding=self.encoding)  # type: ignore[arg-type, union-attr]
                others = True
            elif kind is ProviderBlock:
                body += price(block, count)  # type: ignore[arg-type]
                others = True
            else:  # reasoning: Chat Completions does not send it back
                others = True
        if others or not n:
            results = n
            n += self._roles[message.role] + body
            name = message.name
            if name is not None and not results:  # tool messages carry no name
                n += count(name) + OPENAI_TOKENS_PER_NAME
        return n

    def __repr__(self) -> str:
        return f"ExactTokenCounter({self.encoding!r})"


def tool_tokens(
    tools: Iterable[Mapping[str, Any] | object],
    *,
    counter: TokenCounter | None = None,
    encoding: str = "cl100k_base",
) -> int:
    """Tokens a request's tool definitions take from the window: each definition as compact
    JSON (a dict as the provider's API takes it, or any msgspec-encodable object), counted by
    ``counter`` (``count_text``) or the estimate under ``encoding``.

    OpenAI renders definitions to the model in its own, terser form and Anthropic adds a
    system prompt of its own when tools are given, so this is an estimate on the side of
    JSON's (usually higher) count; reserve more with ``reserve_tokens`` if the provider's
    tool system prompt matters.
    """
    total = 0
    for i, tool in enumerate(tools):
        try:
            text = msgspec.json.encode(tool).decode()
        except (TypeError, msgspec.EncodeError) as e:
            raise TypeError(f"tools[{i}] is not JSON-encodable: {e}") from None
        total += (
            counter.count_text(text)
            if counter is not None
            else estimate_tokens(text, encoding=encoding)
        )
    return total


# ---------------------------------------------------------------------------------------
# Anthropic's count_tokens endpoint

_counter_ids = itertools.count()


class AnthropicTokenCounter:
    """Claude's own count, from Anthropic's ``count_tokens`` endpoint, through the client of
    the official SDK that the caller passes (``anthropic.Anthropic`` or
    ``anthropic.AsyncAnthropic``; ``pip install 'ctxtrim[anthropic]'``).

    The endpoint counts a whole request, not a message, so a message's count is derived by
    differences: ``count(history)`` (or ``await acount(history)``) asks the endpoint once for
    each message it has not counted yet, for the history up to and including that message,
    and the message's count is that total minus the counts of the messages before it. Each
    count is kept on the message, so a message costs one API call, once; a history with
    nothing new costs none. The counts of a history therefore add up to the endpoint's count
    of the whole history (its fixed per-request tokens are carried by the first message).
    A leading system prompt cannot be counted alone (a request needs a message): it counts
    0 and its tokens are part of the first message after it; both are pinned by the
    strategies anyway. A difference below 0 (the provider merging something) counts 0.

    As a :class:`TokenCounter` (``FitContextWindow(200_000, counter=c)``), ``count_message``
    answers from those kept counts: count the history after appending to it and before
    trimming it. A message never counted raises :class:`~ctxtrim.errors.TokenCountError`
    (it cannot be counted alone: a tool result needs its call before it). ``count_text``
    asks the endpoint for one user message holding the text (the message's framing
    included), with a sync client; ``acount_text`` with either.

    Every failure (HTTP error, connection lost, an answer without ``input_tokens``) raises
    :class:`~ctxtrim.errors.TokenCountError` with the HTTP status when there was one and the
    SDK's error as its cause; nothing is kept from a call that failed. ``acount`` sends at
    most ``max_concurrency`` requests at once (a sync client runs in worker threads).
    ``calls`` counts the requests made.
    """

    __slots__ = ("_key", "_lock", "calls", "client", "max_concurrency", "model")

    def __init__(self, client: Any, model: str, *, max_concurrency: int = 4) -> None:
        endpoint = getattr(getattr(client, "messages", None), "count_tokens", None)
        if not callable(endpoint):
            raise TypeError(
                "client must be an anthropic.Anthropic or anthropic.AsyncAnthropic client "
                f"(with messages.count_tokens), got {type(client).__name__}"
            )
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise TypeError(f"max_concurrency must be an int, got {max_concurrency!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.client = client
        self.model = model
        self.max_concurrency = max_concurrency
        self.calls = 0
        import threading  # here: only this counter needs it (its client has loaded it anyway)

        self._lock = threading.Lock()
        # This counter's key in a message's kept counts (one key per counter object).
        self._key = f"anthropic:{next(_counter_ids)}"

    def __repr__(self) -> str:
        return f"AnthropicTokenCounter(model={self.model!r})"

    # -- the TokenCounter protocol

    def counted(self, message: Message) -> int | None:
        """The count kept for ``message``, or None if this counter has not counted it."""
        counts: dict[str, int] | None = getattr(message, COUNTS_SLOT, None)
        return None if counts is None else counts.get(self._key)

    def count_message(self, message: Message) -> int:
        n = self.counted(message)
        if n is None:
            raise TokenCountError(
                f"{message.role} message not counted yet: call counter.count(history) (or "
                "await counter.acount(history)) after appending, before trimming"
            )
        return n

    def count_text(self, text: str) -> int:
        """The endpoint's count of one user message holding ``text`` (0 for ``""``); needs a
        sync client."""
        if not text:
            return 0
        return self._sync(self._text_request(text))

    async def acount_text(self, text: str) -> int:
        """:meth:`count_text`, awaited (any client)."""
        if not text:
            return 0
        return await self._async(self._text_request(text))

    # -- counting a history

    def count(self, history: Sequence[Message]) -> int:
        """Counts the messages of ``history`` not counted yet, one request each (sync
        client), and returns the history's total."""
        plan = self._plan(history)
        totals = {i: self._sync(request) for i, request in plan}
        return self._settle(history, totals)

    async def acount(self, history: Sequence[Message]) -> int:
        """:meth:`count`, awaited: the new messages' requests run concurrently (at most
        ``max_concurrency`` at once)."""
        import asyncio  # here, not at the top: `import ctxtrim` stays free of asyncio

        plan = self._plan(history)
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(request: dict[str, Any]) -> int:
            async with gate:
                return await self._async(request)

        tasks = [asyncio.ensure_future(one(r)) for _, r in plan]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            # One request failed (or the caller was cancelled): stop the others, and return
            # only once none is left running.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        totals = {i: n for (i, _), n in zip(plan, results, strict=True)}
        return self._settle(history, totals)

    def _plan(self, history: Sequence[Message]) -> list[tuple[int, dict[str, Any]]]:
        """The requests to send: for each message not counted, the history through it.
        A prefix that renders no message (leading system messages) needs no request."""
        from ctxtrim.formats import to_anthropic

        if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
            raise TypeError(f"history must be a sequence of Message, got {type(history).__name__}")
        new = []
        for i, message in enumerate(history):
            if type(message) is not Message:
                raise TypeError(f"history[{i}] must be a Message, got {type(message).__name__}")
            if self.counted(message) is None:
                new.append(i)
        if not new:
            return []
        # The history is rendered once: after its leading system messages (the request's
        # `system`), each message is one request message (to_anthropic merges none), so a
        # prefix's request is a slice. The tests check each request against the prefix's own
        # rendering.
        whole = to_anthropic(history)
        rendered = whole["messages"]
        leading = next((i for i, m in enumerate(history) if m.role != "system"), len(history))
        plan = []
        for i in new:
            if i < leading:
                continue  # a prefix of system messages alone: no request can hold it
            plan.append((i, self._request({**whole, "messages": rendered[: i - leading + 1]})))
        return plan

    def _settle(self, history: Sequence[Message], totals: dict[int, int]) -> int:
        """Keeps each new message's count (its total minus the counts before it) and returns
        the history's total."""
        before = 0
        for i, message in enumerate(history):
            n = self.counted(message)
            if n is None:
                n = max(0, totals[i] - before) if i in totals else 0
                counts = getattr(message, COUNTS_SLOT, None)
                if counts is None:
                    counts = {}
                    force_setattr(message, COUNTS_SLOT, counts)
                counts[self._key] = n
            before += n
        return before

    def _request(self, fragment: dict[str, Any]) -> dict[str, Any]:
        request = {"model": self.model, "messages": fragment["messages"]}
        if fragment.get("system"):
            request["system"] = fragment["system"]
        return request

    def _text_request(self, text: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return {"model": self.model, "messages": [{"role": "user", "content": text}]}

    def _called(self) -> None:
        with self._lock:
            self.calls += 1

    def _sync(self, request: dict[str, Any]) -> int:
        import inspect

        self._called()
        try:
            answer = self.client.messages.count_tokens(**request)
        except Exception as e:
            raise self._failure(e) from e
        if inspect.isawaitable(answer):
            if inspect.iscoroutine(answer):
                answer.close()
            raise TypeError(
                "this client is async (AsyncAnthropic): use await counter.acount(history) / "
                "await counter.acount_text(text), or pass anthropic.Anthropic"
            )
        return self._input_tokens(answer)

    async def _async(self, request: dict[str, Any]) -> int:
        import asyncio
        import inspect

        endpoint = self.client.messages.count_tokens
        self._called()
        try:
            if inspect.iscoroutinefunction(endpoint):
                answer = await endpoint(**request)
            else:  # a sync client: off the event loop
                answer = await asyncio.to_thread(endpoint, **request)
                if inspect.isawaitable(answer):
                    answer = await answer
        except Exception as e:
            raise self._failure(e) from e
        return self._input_tokens(answer)

    def _input_tokens(self, answer: object) -> int:
        n = getattr(answer, "input_tokens", None)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TokenCountError(f"count_tokens answered no input_tokens count: {answer!r}")
        return n

    @staticmethod
    def _failure(e: Exception) -> TokenCountError:
        status = getattr(e, "status_code", None)
        status = status if isinstance(status, int) else None
        what = f"HTTP {status}" if status is not None else type(e).__name__
        return TokenCountError(f"count_tokens failed ({what}): {e}", status_code=status)
