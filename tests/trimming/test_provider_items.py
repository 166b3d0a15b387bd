"""Provider blocks in the message model, in trimming and in pricing: the guarantees a user of
server-side tools, MCP, documents and provider compaction relies on (each SDK member is covered
one by one in tests/formats/test_sdk_members.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

import ctxtrim
from ctxtrim import (
    FitContextWindow,
    HeuristicTokenCounter,
    InvalidMessage,
    KeepLastMessages,
    KeepLastTurns,
    MemoryContextStore,
    Message,
    ProviderBlock,
    _core,
    validate,
)
from ctxtrim.formats import (
    from_anthropic,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_openai_chat,
    to_openai_responses,
)
from ctxtrim.provider import PDF_PAGE_TOKENS, UNKNOWN_DOCUMENT_TOKENS

from store_backends import BACKENDS, Backend, opened

COUNT = HeuristicTokenCounter().count_message


def _pdf(pages: int) -> str:
    body = b"%PDF-1.4\n" + b"".join(
        b"%d 0 obj << /Type /Page /Parent 1 0 R >> endobj\n" % (i + 2) for i in range(pages)
    )
    body += b"1 0 obj << /Type /Pages /Count %d >> endobj\n%%%%EOF" % pages
    return base64.b64encode(body).decode()


def _chatter(n: int, prefix: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out += [
            {"role": "assistant", "content": f"{prefix} answer {i} " + "words " * 60},
            {"role": "user", "content": f"{prefix} question {i}"},
        ]
    return out


def anthropic_with_compaction() -> list[Message]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "The task."}]
    messages += _chatter(10, "old")
    messages.append(
        {
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "Summary of the old part.", "signature": "s"},
                {"type": "text", "text": "Continuing."},
            ],
        }
    )
    messages.append({"role": "user", "content": "Go on."})
    messages += _chatter(3, "new")
    return from_anthropic(messages)


def responses_with_compaction() -> list[Message]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "The task."}]
    for i in range(10):
        items += [
            {"type": "function_call", "call_id": f"old_{i}", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"old_{i}", "output": "x " * 80},
        ]
    items.append({"type": "compaction", "id": "cmp_1", "encrypted_content": "e" * 4000})
    items.append({"role": "user", "content": "Go on."})
    for i in range(3):
        items += [
            {"type": "function_call", "call_id": f"new_{i}", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"new_{i}", "output": "y"},
        ]
    return from_openai_responses(items)


def _compaction_index(history: list[Message]) -> int:
    return max(
        i
        for i, m in enumerate(history)
        for b in m.content
        if type(b) is ProviderBlock and b.spec.compaction
    )


@pytest.mark.parametrize("make", [anthropic_with_compaction, responses_with_compaction])
def test_a_trimming_window_drops_what_the_providers_compaction_summarised_first(
    make: Any,
) -> None:
    """Whenever a strategy trims, everything between the pinned task and the newest provider
    compaction goes first, and the report says how much of the drop the compaction covers;
    a history within budget is returned as it is."""
    history = make()
    k = _compaction_index(history)
    total = sum(COUNT(m) for m in history)
    after = sum(COUNT(m) for m in history[k:]) + COUNT(history[0])
    assert FitContextWindow(total)(history) is history
    strategies: list[Any] = [
        FitContextWindow(total - 1),
        FitContextWindow(after + 10),
        KeepLastMessages(len(history) - 4),
    ]
    turns_after = sum(m.is_real_user for m in history[k:])
    if turns_after + 1 < sum(m.is_real_user for m in history):  # one turn from before it
        strategies.append(KeepLastTurns(turns_after + 1))
    for strategy in strategies:
        window = strategy(history)
        assert window[0] is history[0]  # the task stays pinned
        assert window[1:] == history[k:], strategy
        assert validate(window) == []
        report = strategy.describe(history)
        assert report.dropped == tuple(range(1, k))
        assert report.dropped_compacted == k - 1
        assert report.tokens_after <= after


@pytest.mark.parametrize("make", [anthropic_with_compaction, responses_with_compaction])
def test_a_budget_below_the_compacted_part_trims_past_the_compaction(make: Any) -> None:
    history = make()
    k = _compaction_index(history)
    window = FitContextWindow(60)(history)
    assert len(window) < len(history) - k
    assert validate(window) == []
    assert FitContextWindow(60).describe(history).dropped_compacted == k - 1


@pytest.mark.parametrize("make", [anthropic_with_compaction, responses_with_compaction])
def test_a_store_and_a_plain_list_cut_at_the_same_compaction(make: Any) -> None:
    """The log's decision (a store) and the kept tail's (a plain list) agree, also after more
    messages arrive."""
    history = make()
    store = asyncio.run(MemoryContextStore.from_history(history))
    strategy = FitContextWindow(sum(COUNT(m) for m in history) // 2)
    assert strategy.apply(store) == strategy(history)
    more = [Message.assistant("later " * 40), Message.user("and?")]
    asyncio.run(store.append_many(more))
    assert strategy.apply(store) == strategy(history + more)


def test_a_compaction_after_a_pending_call_keeps_the_call() -> None:
    """A cut moved up to a compaction still lands on a safe cut: a call whose result comes
    after the compaction is kept with it."""
    history = from_anthropic(
        [
            {"role": "user", "content": "The task."},
            *_chatter(5, "old"),
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
            {"role": "assistant", "content": [{"type": "compaction", "content": "S"}]},
            {"role": "user", "content": [{"type": "text", "text": "next"}]},
            *_chatter(2, "new"),
        ]
    )
    window = KeepLastMessages(4)(history)
    assert validate(window) == []


# --------------------------------------------------------------------------------------------
# Pricing


def _priced(block: dict[str, Any], role: Literal["user", "assistant"] = "user") -> int:
    message = from_anthropic([{"role": role, "content": [block]}])[0]
    return COUNT(message) - COUNT(Message(role, ()))


def test_documents_are_priced_by_their_pages_or_their_text() -> None:
    pdf = {"type": "base64", "media_type": "application/pdf"}
    three = _priced({"type": "document", "source": {**pdf, "data": _pdf(3)}})
    one = _priced({"type": "document", "source": {**pdf, "data": _pdf(1)}})
    assert three == 3 * PDF_PAGE_TOKENS and one == PDF_PAGE_TOKENS
    text = "The quick brown fox jumps over the lazy dog. " * 40
    source = {"type": "text", "media_type": "text/plain", "data": text}
    assert _priced({"type": "document", "source": source}) == ctxtrim.estimate_tokens(text)
    by_url = {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}}
    assert _priced(by_url) == UNKNOWN_DOCUMENT_TOKENS


def test_an_image_behind_a_url_costs_the_flat_image_price() -> None:
    block = {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}}
    priced = _priced(block)
    assert _core.IMAGE_TOKENS <= priced < _core.IMAGE_TOKENS + 30


def test_opaque_payloads_are_not_priced_as_text() -> None:
    """Encrypted and base64 payloads no model reads as text cost nothing beyond their block:
    a compaction's ``encrypted_content``, a web search result's encrypted page content."""
    small = _priced({"type": "compaction", "content": "S", "encrypted_content": "e"}, "assistant")
    large = _priced(
        {"type": "compaction", "content": "S", "encrypted_content": "e" * 50_000}, "assistant"
    )
    assert small == large
    call = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}}
    result = {
        "type": "web_search_tool_result",
        "tool_use_id": "s1",
        "content": [{"type": "web_search_result", "url": "u", "encrypted_content": "e" * 9000}],
    }
    message = from_anthropic([{"role": "assistant", "content": [call, result]}])[0]
    assert COUNT(message) < 100


def test_other_provider_blocks_are_priced_by_their_json() -> None:
    small = {"type": "mcp_tool_use", "id": "m1", "name": "q", "server_name": "s", "input": {}}
    big = {**small, "input": {"sql": "select * from t where x = 1 " * 50}}
    assert _priced(big, "assistant") > _priced(small, "assistant") + 100


# --------------------------------------------------------------------------------------------
# The message model


def test_provider_blocks_are_immutable_and_validated() -> None:
    raw = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}}
    block = ProviderBlock("anthropic", raw)
    raw["id"] = "changed"
    assert block.data["id"] == "s1"  # a frozen copy
    with pytest.raises(TypeError):
        block.data["id"] = "x"
    with pytest.raises(TypeError):
        block.data["input"]["q"] = "y"
    assert block.call_id == "s1" and block.wire_type == "server_tool_use"
    with pytest.raises(InvalidMessage) as e:
        ProviderBlock("mistral", raw)
    assert e.value.path == "format"
    with pytest.raises(InvalidMessage) as e:
        ProviderBlock("anthropic", {"type": "server_tool_use", "name": "x", "input": {}})
    assert e.value.path == "data.id"
    with pytest.raises(InvalidMessage) as e:
        ProviderBlock("openai_responses", {"type": "computer_call", "call_id": ""})
    assert e.value.path == "data.call_id"
    with pytest.raises(InvalidMessage) as e:
        ProviderBlock("anthropic", {"type": "brand_new_call", "id": "x"})
    assert "brand_new_call" in e.value.reason
    # A new type with no id pairs with nothing: kept as content.
    assert ProviderBlock("anthropic", {"type": "brand_new_note", "text": "x"}).call_id is None


def test_a_provider_block_must_travel_in_the_role_its_provider_gives_it() -> None:
    call = ProviderBlock("openai_responses", {"type": "computer_call", "call_id": "c1"})
    with pytest.raises(InvalidMessage) as e:
        Message("user", (call,))
    assert e.value.path == "content[0]" and "assistant" in e.value.reason
    output = ProviderBlock("openai_responses", {"type": "computer_call_output", "call_id": "c1"})
    assert (
        validate([Message.user("go"), Message("assistant", (call,)), Message("user", (output,))])
        == []
    )
    assert [v.kind for v in validate([Message.user("go"), Message("user", (output,))])] == [
        "orphan_result"
    ]


def test_a_server_tool_result_without_its_call_is_an_orphan() -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": "srv_9", "content": []}
    history = from_anthropic(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": [result]}]
    )
    found = validate(history)
    assert [(v.kind, v.tool_use_id) for v in found] == [("orphan_result", "srv_9")]
    fixed = ctxtrim.repair(history)
    assert validate(fixed) == []
    assert "srv_9" not in str(to_anthropic(fixed))


# --------------------------------------------------------------------------------------------
# Across formats


def test_an_image_behind_a_url_crosses_every_format() -> None:
    url = "https://example.com/cat.png"
    anthropic = [
        {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": url}}]}
    ]
    messages = from_anthropic(anthropic)
    assert to_openai_chat(messages) == [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    ]
    responses = to_openai_responses(messages)
    assert responses[0]["content"] == [{"type": "input_image", "image_url": url, "detail": "auto"}]
    back = from_openai_responses(responses)
    assert to_anthropic(back)["messages"] == anthropic
    chat = from_openai_chat(to_openai_chat(messages))
    assert to_anthropic(chat)["messages"] == anthropic


@pytest.mark.parametrize(
    ("messages", "to_x", "needles"),
    [
        (
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}
                    ],
                },
            ],
            to_openai_chat,
            ("server_tool_use", "Anthropic", "OpenAI Chat Completions"),
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "document", "source": {"type": "file", "file_id": "f"}}],
                }
            ],
            to_openai_responses,
            ("document", "Anthropic", "OpenAI Responses"),
        ),
    ],
)
def test_a_block_another_format_cannot_express_raises_naming_it_and_the_target(
    messages: list[dict[str, Any]], to_x: Any, needles: tuple[str, ...]
) -> None:
    with pytest.raises(InvalidMessage) as e:
        to_x(from_anthropic(messages))
    assert all(n in e.value.reason for n in needles), e.value.reason
    assert e.value.path.startswith("messages[")


# --------------------------------------------------------------------------------------------
# Stores


@pytest.mark.parametrize("factory", BACKENDS)
async def test_every_store_keeps_provider_blocks_and_trims_them_pair_safely(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    """The example sessions' provider blocks are stored, read back equal (a fresh handle
    decodes them), and a budget trim of the stored history validates and renders back."""
    sessions = Path(__file__).resolve().parents[2] / "examples" / "sessions"
    histories = [
        (
            from_anthropic(json.loads((sessions / "anthropic_server_tools.json").read_text())),
            to_anthropic,
        ),
        (
            from_openai_responses(
                json.loads((sessions / "openai_responses_tools.json").read_text())
            ),
            to_openai_responses,
        ),
    ]
    backend = factory(tmp_path)
    try:
        for k, (history, to_x) in enumerate(histories):
            async with opened(backend, f"provider-{k}") as writer:
                await store_and_check(writer, history, to_x)
            if backend.persistent:  # a fresh handle decodes what was stored
                async with opened(backend, f"provider-{k}") as reader:
                    await store_and_check(reader, history, to_x, append=False)
    finally:
        await backend.cleanup()


async def store_and_check(
    store: ctxtrim.ContextStore, history: list[Message], to_x: Any, *, append: bool = True
) -> None:
    if append:
        await store.append_many(history)
    stored = await store.get_history()
    assert stored == history
    assert to_x(stored) == to_x(history)
    strategy = FitContextWindow(sum(COUNT(m) for m in history) // 3)
    window = strategy.apply(await store.load_log())
    assert window == strategy(history)
    assert validate(window) == []
    to_x(window)
