"""retry_on_overflow: the real openai and anthropic SDK clients get the providers' real
context-overflow errors from the fake provider; the history is compacted or trimmed and the
call retried once, with the compaction reported."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from ctxtrim import (
    AutoCompactStore,
    CompactionEvent,
    FitContextWindow,
    InvalidArgument,
    MemoryContextStore,
    Message,
    ToolResultBlock,
    TruncateToolOutputs,
    is_context_overflow,
    observe,
    retry_on_overflow,
    validate,
)
from ctxtrim.transports import ExtractiveTransport

from fake_provider import FakeProvider, fake_count
from helpers import call

WINDOW = 1_000


def long_session(rounds: int = 20, words: int = 60) -> list[Message]:
    """A task and ``rounds`` tool rounds whose results are ``words`` words long."""
    out = [Message.system("You are terse."), Message.user("Find the bug.")]
    for r in range(rounds):
        body = " ".join(f"line{r}x{k}" for k in range(words))
        out += [call(f"step {r}", f"t{r}"), Message.tool_results(ToolResultBlock(f"t{r}", body))]
    out.append(Message.assistant("Found it."))
    return out


def as_chat(history: list[Message]) -> list[dict[str, str]]:
    """Each message as one Chat message of its text (enough for the fake's checks)."""
    out = []
    for m in history:
        text = " ".join(
            b.content if isinstance(b, ToolResultBlock) and isinstance(b.content, str) else ""
            for b in m.content
        )
        out.append({"role": m.role, "content": (m.text + " " + text).strip() or "-"})
    return out


def to_anthropic(history: list[Message]) -> dict[str, Any]:
    """The Messages API's ``system`` and ``messages`` of :func:`as_chat`'s texts."""
    chat = as_chat(history)
    system = " ".join(m["content"] for m in chat if m["role"] == "system")
    return {"system": system, "messages": [m for m in chat if m["role"] != "system"]}


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        server.context_window = WINDOW
        yield server


@pytest.fixture
def events() -> Iterator[list[Any]]:
    seen: list[Any] = []
    remove = observe.add_listener(seen.append)
    yield seen
    remove()


def compacting(history: list[Message], seen: list[CompactionEvent]) -> AutoCompactStore:
    return AutoCompactStore(
        MemoryContextStore(history),
        ExtractiveTransport(),
        keep_recent=4,
        max_tokens=10**9,  # never on its own: only the overflow compacts
        on_event=seen.append,
    )


def chat_requests(fake: FakeProvider) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/chat/completions")]


async def test_openai_overflow_compacts_and_retries_once(
    fake: FakeProvider, events: list[Any]
) -> None:
    client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    history = long_session()
    assert fake_count({"messages": as_chat(history)}) > WINDOW
    seen: list[CompactionEvent] = []
    store = compacting(history, seen)
    fake.reply("the answer")

    async def ask(messages: list[Message]) -> str:
        reply = await client.chat.completions.create(model="gpt-4.1", messages=as_chat(messages))  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    assert await retry_on_overflow(ask, store=store) == "the answer"
    await client.close()
    first, second = chat_requests(fake)
    assert fake_count(first) > WINDOW >= fake_count(second)
    (event,) = seen
    assert (event.kind, event.trigger) == ("compacted", "overflow")
    assert event in events  # observe listeners are told too
    after = await store.get_history()
    assert validate(after) == [] and len(after) < len(history)
    assert second["messages"] == as_chat(after)


async def test_anthropic_overflow_compacts_and_retries(fake: FakeProvider) -> None:
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)
    seen: list[CompactionEvent] = []
    store = compacting(long_session(), seen)
    fake.reply("done")

    async def ask(messages: list[Message]) -> Any:
        payload = to_anthropic(messages)
        return await client.messages.create(model="claude-test", max_tokens=100, **payload)

    reply = await store.retry_on_overflow(ask)
    await client.close()
    assert reply.content[0].text == "done"
    assert [e.trigger for e in seen] == ["overflow"]
    assert len([r for r in fake.requests if r.path.endswith("/v1/messages")]) == 2


async def test_still_over_after_compaction_raises_the_second_error(fake: FakeProvider) -> None:
    client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    fake.context_window = 20  # even the compacted history is over it
    seen: list[CompactionEvent] = []
    store = compacting(long_session(), seen)

    async def ask(messages: list[Message]) -> Any:
        return await client.chat.completions.create(model="gpt-4.1", messages=as_chat(messages))  # type: ignore[arg-type]

    with pytest.raises(openai.BadRequestError) as info:
        await retry_on_overflow(ask, store=store)
    await client.close()
    assert info.value.code == "context_length_exceeded"
    assert len(chat_requests(fake)) == 2  # once, then once more: never a loop
    assert [e.kind for e in seen] == ["compacted"]


async def test_other_errors_are_not_retried(fake: FakeProvider) -> None:
    client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    fake.context_window = None
    fake.fail(400, "messages[0].content is invalid")
    seen: list[CompactionEvent] = []
    store = compacting(long_session(), seen)

    async def ask(messages: list[Message]) -> Any:
        return await client.chat.completions.create(model="gpt-4.1", messages=as_chat(messages))  # type: ignore[arg-type]

    with pytest.raises(openai.BadRequestError, match="is invalid"):
        await retry_on_overflow(ask, store=store)
    await client.close()
    assert len(chat_requests(fake)) == 1 and seen == []


async def test_a_strategy_trims_a_plain_list(fake: FakeProvider) -> None:
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)
    history = long_session()
    fake.reply("ok")
    sent: list[list[Message]] = []

    async def ask(messages: list[Message]) -> Any:
        sent.append(messages)
        return await client.messages.create(
            model="claude-test", max_tokens=100, **to_anthropic(messages)
        )

    reply = await retry_on_overflow(
        ask, messages=history, strategy=TruncateToolOutputs(40, keep_recent_turns=0)
    )
    await client.close()
    assert reply.content[0].text == "ok"
    assert sent[0] == history and len(sent[1]) == len(history)  # clipped, nothing dropped
    assert validate(sent[1]) == []


async def test_compaction_then_strategy_when_the_recent_part_is_huge(
    fake: FakeProvider,
) -> None:
    client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    history = long_session(rounds=6)
    huge = " ".join(f"w{k}" for k in range(3_000))  # the newest tool result alone overflows
    history[-2] = Message.tool_results(ToolResultBlock("t5", huge))
    seen: list[CompactionEvent] = []
    store = compacting(history, seen)

    async def ask(messages: list[Message]) -> Any:
        return await client.chat.completions.create(model="gpt-4.1", messages=as_chat(messages))  # type: ignore[arg-type]

    reply = await retry_on_overflow(ask, store=store, strategy=TruncateToolOutputs(200))
    await client.close()
    assert reply.choices[0].message.content == "summary"
    assert [e.kind for e in seen] == ["compacted"]
    assert huge in str(await store.get_history())  # the strategy never writes to the store


async def test_nothing_to_shrink_raises_the_first_overflow(
    fake: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    store = MemoryContextStore(long_session())  # cannot compact, and no strategy

    async def ask(messages: list[Message]) -> Any:
        return await client.chat.completions.create(model="gpt-4.1", messages=as_chat(messages))  # type: ignore[arg-type]

    with caplog.at_level(logging.WARNING, logger="ctxtrim.overflow"):
        with pytest.raises(openai.BadRequestError, match="maximum context length"):
            await retry_on_overflow(ask, store=store)
    await client.close()
    assert len(chat_requests(fake)) == 1
    assert any("not retrying" in r.getMessage() for r in caplog.records)
    fits = FitContextWindow(200)
    assert fits(long_session()) != long_session()  # a strategy would have shrunk it


async def test_is_context_overflow_on_real_sdk_errors(fake: FakeProvider) -> None:
    oa = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
    an = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)
    big = as_chat(long_session())
    caught: list[Exception] = []
    for request in (
        lambda: oa.chat.completions.create(model="m", messages=big),  # type: ignore[arg-type]
        lambda: an.messages.create(model="m", max_tokens=5, messages=big[1:]),  # type: ignore[arg-type]
    ):
        try:
            await request()
        except Exception as err:
            caught.append(err)
    fake.context_window = None
    fake.fail(429, "rate limited: maximum context length of patience")
    fake.fail(400, "prompt is invalid")
    for request in (
        lambda: oa.chat.completions.create(model="m", messages=big),  # type: ignore[arg-type]
        lambda: an.messages.create(model="m", max_tokens=5, messages=big[1:]),  # type: ignore[arg-type]
    ):
        try:
            await request()
        except Exception as err:
            caught.append(err)
    await oa.close()
    await an.close()
    over_oa, over_an, rate, other = caught
    assert isinstance(over_oa, openai.BadRequestError) and is_context_overflow(over_oa)
    assert isinstance(over_an, anthropic.BadRequestError) and is_context_overflow(over_an)
    assert isinstance(rate, openai.RateLimitError) and not is_context_overflow(rate)
    assert isinstance(other, anthropic.BadRequestError) and not is_context_overflow(other)
    try:
        try:
            raise over_an
        except anthropic.BadRequestError as err:
            raise RuntimeError("the agent framework wrapped it") from err
    except RuntimeError as wrapped:
        assert is_context_overflow(wrapped)
    assert not is_context_overflow(ValueError("prompt is too long"))  # not an SDK's error


async def test_bad_arguments() -> None:
    history = [Message.user("hi")]

    async def ask(messages: list[Message]) -> None:
        return None

    with pytest.raises(InvalidArgument, match="exactly one of store= or messages="):
        await retry_on_overflow(ask)
    with pytest.raises(InvalidArgument, match="exactly one of store= or messages="):
        await retry_on_overflow(ask, store=MemoryContextStore(history), messages=history)
    with pytest.raises(InvalidArgument, match="call must be callable"):
        await retry_on_overflow(42, messages=history)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"messages\[0\] must be a Message"):
        await retry_on_overflow(ask, messages=[{"role": "user"}])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument, match="strategy must be a ContextStrategy"):
        await retry_on_overflow(ask, messages=history, strategy="fit")  # type: ignore[arg-type]
