"""AnthropicTokenCounter: the real ``anthropic`` SDK clients (sync and async) against the local
server that plays Anthropic's API (tests/fake_provider.py), including its
``/v1/messages/count_tokens`` route."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from ctxtrim import (
    AnthropicTokenCounter,
    FitContextWindow,
    Message,
    TokenCounter,
    TokenCountError,
    bench,
)
from ctxtrim.formats import to_anthropic

anthropic = pytest.importorskip("anthropic")

from fake_provider import FakeProvider, fake_count  # noqa: E402

MODEL = "claude-sonnet-4-5"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def sync_client(fake: FakeProvider) -> Any:
    return anthropic.Anthropic(base_url=fake.base_url, api_key="test", max_retries=0)


def async_client(fake: FakeProvider) -> Any:
    return anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)


def history(rounds: int) -> list[Message]:
    return bench.ctxtrim_messages(bench.agent_history(rounds))


def request_count(messages: list[Message]) -> int:
    """The fake provider's count of ``messages`` as one request."""
    fragment = to_anthropic(messages)
    body: dict[str, Any] = {"model": MODEL, "messages": fragment["messages"]}
    if fragment.get("system"):
        body["system"] = fragment["system"]
    return fake_count(body)


def counts_requests(fake: FakeProvider) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.path.endswith("/v1/messages/count_tokens")]


def test_counts_by_differences_one_request_per_new_message(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    assert isinstance(counter, TokenCounter)
    h = history(3)  # system, task, 3 rounds of 4
    total = counter.count(h)
    # The system prompt renders no message of its own: every other message is one request,
    # for the history through it.
    sent = counts_requests(fake)
    assert len(sent) == counter.calls == len(h) - 1
    assert all(body["model"] == MODEL and "max_tokens" not in body for body in sent)
    assert [len(body["messages"]) for body in sent] == list(range(1, len(h)))
    assert all(body["system"] == h[0].text for body in sent)
    # Each request is the rendering of the history through the message it counts.
    for k, body in enumerate(sent, start=2):
        assert body["messages"] == to_anthropic(h[:k])["messages"]
    # The counts add up to the endpoint's count of the history, and of every prefix of it.
    assert total == request_count(h) == sum(counter.count_message(m) for m in h)
    for k in range(2, len(h) + 1):
        assert sum(counter.count_message(m) for m in h[:k]) == request_count(h[:k])
    assert counter.count_message(h[0]) == 0  # carried by the task, which the request needs
    # Counted once: nothing new, no request; one appended round, four.
    assert counter.count(h) == total and counter.calls == len(h) - 1
    h += bench.ctxtrim_turn(bench.agent_history(5)[4])
    assert counter.count(h) == request_count(h)
    assert counter.calls == len(h) - 1 == len(counts_requests(fake))


def test_a_strategy_trims_on_the_counts(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    h = history(30)
    total = counter.count(h)
    budget = total // 3
    window = FitContextWindow(budget, counter=counter)(h)
    assert window[:2] == h[:2] and window[-1] is h[-1] and len(window) < len(h)
    kept = sum(counter.count_message(m) for m in window)
    assert kept <= budget
    # The next older round would not have fit.
    start = h.index(window[2])
    assert kept + sum(counter.count_message(m) for m in h[start - 4 : start]) > budget
    # The strategy asked no request of its own.
    assert counter.calls == len(h) - 1


def test_a_message_never_counted_is_a_typed_error(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    h = history(2)
    counter.count(h)
    late = Message.user("one more thing")
    with pytest.raises(TokenCountError, match="not counted yet"):
        counter.count_message(late)
    with pytest.raises(TokenCountError, match="not counted yet"):
        FitContextWindow(100_000, counter=counter)([*h, late])
    # Another counter keeps its own counts.
    other = AnthropicTokenCounter(sync_client(fake), MODEL)
    with pytest.raises(TokenCountError):
        other.count_message(h[1])


def test_async_client_counts_concurrently_and_equally(fake: FakeProvider) -> None:
    h = history(6)
    sync = AnthropicTokenCounter(sync_client(fake), MODEL)
    expected = sync.count(h)

    async def main() -> tuple[int, list[int]]:
        counter = AnthropicTokenCounter(async_client(fake), MODEL, max_concurrency=3)
        total = await counter.acount(h)
        assert counter.calls == len(h) - 1
        assert await counter.acount(h) == total and counter.calls == len(h) - 1
        return total, [counter.count_message(m) for m in h]

    total, counts = asyncio.run(main())
    assert total == expected == request_count(h)
    assert counts == [sync.count_message(m) for m in h]


def test_async_counting_with_a_sync_client_runs_off_the_loop(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    h = history(2)
    assert asyncio.run(counter.acount(h)) == request_count(h)
    assert asyncio.run(counter.acount_text("hello there")) == fake_count(
        {"messages": [{"role": "user", "content": "hello there"}]}
    )


def test_count_text(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    assert counter.count_text("") == 0 and counter.calls == 0
    assert counter.count_text("a b, c") == fake_count(
        {"messages": [{"role": "user", "content": "a b, c"}]}
    )
    # FitContextWindow prices tool definitions with the counter's count_text.
    tool = {"name": "ls", "description": "List files.", "input_schema": {"type": "object"}}
    strategy = FitContextWindow(10_000, counter=counter, tools=[tool])
    assert strategy.tools_tokens > 0 and counter.calls == 2


def test_an_async_client_in_a_sync_call_is_a_clear_error(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(async_client(fake), MODEL)
    with pytest.raises(TypeError, match="acount"):
        counter.count(history(1))
    with pytest.raises(TypeError, match="acount_text"):
        counter.count_text("hi")


@pytest.mark.parametrize("status", [400, 429, 500, 529])
def test_http_errors_are_typed_and_keep_nothing(fake: FakeProvider, status: int) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    h = history(1)
    fake.fail(status, "nope")
    with pytest.raises(TokenCountError, match=f"HTTP {status}") as err:
        counter.count(h)
    assert err.value.status_code == status
    assert isinstance(err.value.__cause__, anthropic.APIStatusError)
    assert all(counter.counted(m) is None for m in h)
    # The next try counts everything (the failed request was not kept).
    assert counter.count(h) == request_count(h)


def test_async_errors_are_typed_and_stop_the_other_requests(fake: FakeProvider) -> None:
    async def main() -> None:
        counter = AnthropicTokenCounter(async_client(fake), MODEL, max_concurrency=1)
        h = history(2)
        fake.fail(429)
        with pytest.raises(TokenCountError) as err:
            await counter.acount(h)
        assert err.value.status_code == 429
        # Nothing is left running once acount has raised: no request is sent afterwards.
        sent = len(fake.requests)
        assert sent < len(h) - 1
        await asyncio.sleep(0.2)
        assert len(fake.requests) == sent
        assert all(counter.counted(m) is None for m in h)

    asyncio.run(main())


def test_the_provider_refusing_a_request_is_typed(fake: FakeProvider) -> None:
    # A history whose first message is a tool result: the endpoint refuses it (400).
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    orphan = [Message.tool_results(("call_1", "output"))]
    with pytest.raises(TokenCountError) as err:
        counter.count(orphan)
    assert err.value.status_code == 400


def test_an_answer_without_a_count_is_typed(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    fake.respond({"input_tokens": -3})
    with pytest.raises(TokenCountError, match="input_tokens"):
        counter.count_text("hi")


def test_connection_errors_are_typed() -> None:
    with FakeProvider() as server:
        url = server.base_url
    client = anthropic.Anthropic(base_url=url, api_key="test", max_retries=0, timeout=2)
    counter = AnthropicTokenCounter(client, MODEL)
    with pytest.raises(TokenCountError, match="APIConnectionError") as err:
        counter.count_text("hi")
    assert err.value.status_code is None


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((object(), MODEL), {}, TypeError),
        ((None, MODEL), {}, TypeError),
        (("client", ""), {}, ValueError),
        (("client", 3), {}, ValueError),
        (("client", MODEL), {"max_concurrency": 0}, ValueError),
        (("client", MODEL), {"max_concurrency": 1.5}, TypeError),
    ],
)
def test_bad_arguments(fake: FakeProvider, args: tuple[Any, ...], kwargs: Any, error: Any) -> None:
    if args[0] == "client":
        args = (sync_client(fake), *args[1:])
    with pytest.raises(error):
        AnthropicTokenCounter(*args, **kwargs)


def test_bad_histories(fake: FakeProvider) -> None:
    counter = AnthropicTokenCounter(sync_client(fake), MODEL)
    with pytest.raises(TypeError, match="sequence of Message"):
        counter.count("hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"history\[1\]"):
        counter.count([Message.user("a"), {"role": "user"}])  # type: ignore[list-item]
    assert counter.calls == 0
