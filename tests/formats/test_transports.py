"""The summarisation transports: the real ``openai`` / ``anthropic`` SDK clients against a
local server playing the provider (tests/fake_provider.py), and the offline extractive one.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import (
    CompactionError,
    CompactionSettingsError,
    Message,
    ToolResultBlock,
    compact_context,
    estimate_tokens,
    validate,
)
from ctxtrim.compaction import DEFAULT_SYSTEM_PROMPT
from ctxtrim.transports import AnthropicTransport, ExtractiveTransport, OpenAITransport
from ctxtrim.transports._render import render_transcript

from fake_provider import FakeProvider
from helpers import agent_session, call, results
from strategies import histories


@dataclass
class Provider:
    name: str
    fake: FakeProvider
    make: Callable[..., Any]  # (**transport kwargs) -> transport
    sdk: Any

    def user_text(self, i: int = -1) -> str:
        """The rendered history the transport sent in request ``i``."""
        return str(self.fake.requests[i].body["messages"][-1]["content"])


@pytest.fixture(params=["openai", "anthropic"])
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    with FakeProvider() as fake:
        if request.param == "openai":
            oa = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="test", max_retries=0)

            def make_oa(**kw: Any) -> OpenAITransport:
                return OpenAITransport(oa, kw.pop("model", "gpt-test"), **kw)

            yield Provider("openai", fake, make_oa, openai)
            await oa.close()
        else:
            an = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="test", max_retries=0)

            def make_an(**kw: Any) -> AnthropicTransport:
                return AnthropicTransport(an, kw.pop("model", "claude-test"), **kw)

            yield Provider("anthropic", fake, make_an, anthropic)
            await an.close()


def _history() -> list[Message]:
    return [
        Message.system("You are terse."),
        Message.user("Fix the failing test in src/app.py."),
        call("Reading.", "t1"),
        results("t1"),
        Message.assistant("The import is wrong."),
    ]


# -- requests in the provider's shape ----------------------------------------------------------


async def test_request_carries_model_system_rendered_history_and_limit(provider: Provider) -> None:
    provider.fake.reply("They fixed the import in src/app.py.")
    transport = provider.make(model="summariser-1")
    text = await transport.complete(_history(), system="Summarise.", max_tokens=321)
    assert text == "They fixed the import in src/app.py."
    (req,) = provider.fake.requests
    body = req.body
    assert body["model"] == "summariser-1"
    if provider.name == "openai":
        assert req.path == "/v1/chat/completions"
        assert body["max_completion_tokens"] == 321 and "max_tokens" not in body
        assert body["messages"][0] == {"role": "system", "content": "Summarise."}
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
    else:
        assert req.path == "/v1/messages"
        assert body["max_tokens"] == 321 and body["system"] == "Summarise."
        assert [m["role"] for m in body["messages"]] == ["user"]
    sent = provider.user_text()
    assert "User: Fix the failing test in src/app.py." in sent
    assert "called tool search (id t1)" in sent and "result of t1" in sent
    assert "Assistant: The import is wrong." in sent


async def test_openai_token_param_max_tokens_for_older_servers() -> None:
    with FakeProvider() as fake:
        client = openai.AsyncOpenAI(base_url=f"{fake.base_url}/v1", api_key="k", max_retries=0)
        transport = OpenAITransport(client, "local", token_param="max_tokens")
        assert await transport.complete(_history(), system="s", max_tokens=50) == "summary"
        body = fake.requests[0].body
        assert body["max_tokens"] == 50 and "max_completion_tokens" not in body
        await client.close()


async def test_previous_summary_is_sent_as_previous_summary_not_as_conversation(
    provider: Provider,
) -> None:
    transport = provider.make()
    first = await compact_context(agent_session(12), transport, max_messages=0, keep_recent=2)
    assert first is not None
    assert first[2].meta == {"ctxtrim": {"summary": True, "summarised_messages": 22}}
    provider.fake.reply("second summary")
    second = await compact_context(
        [*first, Message.user("next"), Message.assistant("ok")],
        transport,
        max_messages=0,
        keep_recent=1,
    )
    assert second is not None
    sent = provider.user_text()
    assert sent.startswith("Previous summary:\nsummary\n\nConversation to summarise:")
    assert "User: [Summary of the earlier conversation]" not in sent
    assert second[2].meta == {"ctxtrim": {"summary": True, "summarised_messages": 22 + 4}}


async def test_compact_summary_stands_in_for_the_tool_result(provider: Provider) -> None:
    history = [
        Message.user("task"),
        call("", "t1"),
        Message.tool_results(ToolResultBlock("t1", "x" * 5000, compact_summary="200 rows, 3 bad")),
    ]
    await provider.make().complete(history, system="s", max_tokens=10)
    sent = provider.user_text()
    assert "200 rows, 3 bad" in sent and "xxxx" not in sent


# -- SDK errors become CompactionError with the cause chained -----------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "sdk_error"),
    [
        (429, "rate_limit", "RateLimitError"),
        (500, "server_error", "InternalServerError"),
        (503, "server_error", "APIStatusError"),
        (400, "api_error", "BadRequestError"),
    ],
)
async def test_http_errors_map_to_compaction_error(
    provider: Provider, status: int, kind: str, sdk_error: str
) -> None:
    provider.fake.fail(status, "scripted")
    with pytest.raises(CompactionError) as info:
        await provider.make().complete(_history(), system="s", max_tokens=10)
    assert info.value.kind == kind and info.value.status_code == status
    assert isinstance(info.value.__cause__, getattr(provider.sdk, sdk_error))
    assert str(status) in str(info.value)


async def test_anthropic_overloaded_529_is_a_server_error() -> None:
    with FakeProvider() as fake:
        client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0)
        fake.fail(529, "Overloaded")
        with pytest.raises(CompactionError) as info:
            await AnthropicTransport(client, "c").complete(_history(), system="s", max_tokens=9)
        assert info.value.kind == "server_error" and info.value.status_code == 529
        await client.close()


async def test_stalled_provider_times_out(provider: Provider) -> None:
    provider.fake.stall(30)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(CompactionError) as info:
        await provider.make(timeout=0.3).complete(_history(), system="s", max_tokens=10)
    assert info.value.kind == "timeout"
    assert isinstance(info.value.__cause__, provider.sdk.APITimeoutError)
    assert loop.time() - start < 20  # gave up on its own timeout, not the server's stall


async def test_unreachable_provider_is_a_connection_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    with pytest.raises(CompactionError) as info:
        await OpenAITransport(client, "m").complete(_history(), system="s", max_tokens=9)
    assert info.value.kind == "connection"
    assert isinstance(info.value.__cause__, openai.APIConnectionError)
    await client.close()


async def test_empty_completion_is_an_error(provider: Provider) -> None:
    provider.fake.reply("")
    with pytest.raises(CompactionError) as info:
        await provider.make().complete(_history(), system="s", max_tokens=10)
    assert info.value.kind == "empty_summary"


@pytest.mark.parametrize(
    "kwargs",
    [{"model": ""}, {"timeout": 0}, {"timeout": -1.0}, {"max_result_chars": 0}],
)
def test_bad_transport_settings_are_rejected(kwargs: dict[str, Any]) -> None:
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    args = {"model": "m", **kwargs}
    with pytest.raises(CompactionSettingsError):
        OpenAITransport(client, **args)
    with pytest.raises(ValueError):
        AnthropicTransport(anthropic.AsyncAnthropic(api_key="k"), **args)


# -- agent-air's byte-slicing panic (truncate_content slices a &str at a byte index) ---------

_NON_ASCII = [
    "é" * 600,  # agent-air's input: byte 997 falls inside an "é" (it panics); 600 chars fit
    "é" * 1500,  # 2-byte chars, clipped
    "e\u0301" * 700,  # combining accents
    "日本語のテキスト" * 200,  # 3-byte chars
    "😀" * 400,  # 4-byte chars (a surrogate pair in UTF-16)
    "👨‍👩‍👧‍👦" * 300,  # ZWJ sequences
    "a" * 997 + "é" * 10,
]


@pytest.mark.parametrize("output", _NON_ASCII, ids=range(len(_NON_ASCII)))
async def test_agent_air_byte_slicing_panic_non_ascii_tool_output(
    provider: Provider, output: str
) -> None:
    history = [Message.user("run it"), call("", "t1"), Message.tool_results(("t1", output))]
    transport = provider.make(max_result_chars=1000)
    assert await transport.complete(history, system="s", max_tokens=10) == "summary"
    sent = provider.user_text()
    sent.encode("utf-8")  # the server decoded it; nothing lone or split
    line = next(x for x in sent.splitlines() if x.startswith("[search result (id t1)]: "))
    clipped = line.removeprefix("[search result (id t1)]: ")
    if len(output) <= 1000:  # the limit counts characters, not bytes: nothing to cut
        assert clipped == output
        return
    assert clipped.endswith("…") and len(clipped) <= 1000
    body = clipped.removesuffix("…")
    assert output.startswith(body) and len(body) > 900
    rest = output[len(body) :]
    assert not rest.startswith(("\u0301", "\u200d"))  # no accent or joiner cut off its base


# -- the extractive transport ------------------------------------------------------------------


async def test_extractive_summary_keeps_task_tools_outcomes_files_and_conclusions() -> None:
    history = [
        Message.user("Migrate the users table; see ISSUE-42 and docs/migrate.md"),
        Message.assistant(
            "Checking.",
            tool_uses=[
                ("t1", "read_file", {"path": "db/schema.sql"}),
                ("t2", "run_sql", {"query": "ALTER TABLE users"}),
            ],
        ),
        Message.tool_results(
            ToolResultBlock("t1", "CREATE TABLE users (id int)"),
            ToolResultBlock("t2", "ERROR: permission denied", is_error=True),
        ),
        Message.assistant("Need the admin role; the migration is blocked."),
    ]
    text = await ExtractiveTransport().complete(history, system="ignored", max_tokens=400)
    assert "Migrate the users table" in text
    assert "read_file x1, run_sql x1 (1 failed)" in text
    assert 'read_file({"path": "db/schema.sql"}) -> ok: CREATE TABLE users' in text
    assert "run_sql" in text and "-> error: ERROR: permission denied" in text
    for mention in ("db/schema.sql", "ISSUE-42", "docs/migrate.md"):
        assert mention in text
    assert "Need the admin role; the migration is blocked." in text
    # Same input, same text (prompt caches stay warm).
    assert text == await ExtractiveTransport().complete(history, system="x", max_tokens=400)


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(1, 300))
def test_extractive_summary_fits_its_token_budget(history: list[Message], budget: int) -> None:
    text = ExtractiveTransport().summarise(history, max_tokens=budget)
    assert estimate_tokens(text) <= budget
    assert text.strip()  # never empty: an empty summary is a failed compaction
    text.encode("utf-8")


def test_extractive_long_session_keeps_newest_calls_and_counts_all() -> None:
    history = agent_session(400)
    text = ExtractiveTransport().summarise(history, max_tokens=300)
    assert estimate_tokens(text) <= 300
    assert "search x400" in text  # the per-tool count survives clipping
    assert "t399" in text and "earlier lines omitted" in text


def test_render_transcript_shows_images_and_skips_reasoning() -> None:
    from ctxtrim import ImageBlock, ReasoningBlock, TextBlock

    history = [
        Message("user", [TextBlock("look"), ImageBlock("image/png", b"\x89PNG")]),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
        Message("assistant", [ReasoningBlock("secret chain"), TextBlock("a cat")]),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    ]
    text = render_transcript(history)
    assert "[User sent an image: image/png]" in text and "Assistant: a cat" in text
    assert "secret chain" not in text


async def test_sdk_summary_end_to_end_is_a_valid_history(provider: Provider) -> None:
    provider.fake.reply("Read 14 files; the bug is in t13.")
    out = await compact_context(agent_session(14), provider.make(), keep_recent=4)
    assert out is not None and validate(out) == []
    assert out[2].text.endswith("Read 14 files; the bug is in t13.")
    body = provider.fake.requests[0].body
    system = body["messages"][0]["content"] if provider.name == "openai" else body["system"]
    assert system == DEFAULT_SYSTEM_PROMPT
    json.dumps(body)


@pytest.mark.parametrize("output", _NON_ASCII, ids=range(len(_NON_ASCII)))
def test_agent_air_byte_slicing_panic_non_ascii_in_extractive_summary(output: str) -> None:
    history = [Message.user("run it"), call("", "t1"), Message.tool_results(("t1", output))]
    for budget in (7, 40, 333, 2000):
        text = ExtractiveTransport(max_result_chars=997).summarise(history, max_tokens=budget)
        text.encode("utf-8")
        assert estimate_tokens(text) <= budget
        line = next((x for x in text.splitlines() if x.startswith("- search(")), None)
        assert line is not None or budget < 2000  # room for it: the call is listed
        if line is not None and "-> ok: " in line:
            preview = line.split("-> ok: ", 1)[1].removesuffix("…")
            assert output.startswith(preview)
            assert not output[len(preview) :].startswith(("\u0301", "\u200d"))
