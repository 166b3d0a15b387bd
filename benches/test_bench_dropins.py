"""pytest-benchmark: each framework drop-in against the original it replaces, per call, at
1k, 10k and 50k messages (LlamaIndex's Memory: 1k and 10k).

The history is an agent loop built the way each framework's users build it (system, task,
then rounds of a tool call, its result and an answer) and one round is appended before
each timed call, as in an agent loop; the drop-in's caches are warm from the calls before
(the steady state). Run with ``make bench`` or ``pytest benches/test_bench_dropins.py
--benchmark-enable --benchmark-group-by=group``; in the normal run each case runs once as
a smoke test. Speed is reported, never asserted.

PLAIN_WALK: where there is no original (openai-agents' ``session_input_callback``,
pydantic-ai's history processor), the baseline is the token-budget walk a user writes by
hand: over the items as the framework holds them, newest first, each counted with the
usual estimate for that framework (a quarter of an item's JSON length for Responses items;
pydantic-ai's own approximate counter for its messages), until the budget is spent. It is
neither pair-safe nor cached: it is what the drop-in replaces, not a tuned competitor.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest

SIZES = (1_000, 10_000, 50_000)


def _rounds(make: Callable[[int], list[Any]], n: int) -> tuple[list[Any], Callable[[], None]]:
    """``(history of about n messages, append one more round)``."""
    counter = itertools.count()
    history: list[Any] = []
    while len(history) < n:
        history += make(next(counter))

    def grow() -> None:
        history.extend(make(next(counter)))

    return history, grow


def _timed(
    benchmark: Any,
    group: str,
    impl: str,
    grow: Callable[[], None],
    call: Any,
    rounds: int = 15,
) -> None:
    """``call`` timed ``rounds`` times, one round of messages appended (``grow``) before
    each, untimed. The slice-like calls (tens of µs) take 60 rounds: on a 2-core VM a run
    of 15 can land whole in a slow stretch."""
    benchmark.group = group
    benchmark.extra_info["impl"] = impl
    call()  # first call outside the timing (builds caches, like a running agent's)

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        grow()
        return (), {}

    benchmark.pedantic(call, setup=setup, rounds=rounds, iterations=1, warmup_rounds=1)


# -- LangChain ------------------------------------------------------------------------------


def _langchain_round(i: int) -> list[Any]:
    import langchain_core.messages as lc

    if i == 0:
        return [lc.SystemMessage("You are an agent."), lc.HumanMessage("the task")]
    cid = f"call_{i}"
    return [
        lc.AIMessage("", tool_calls=[{"id": cid, "name": "search", "args": {"q": str(i)}}]),
        lc.ToolMessage(f"result {i} " * 20, tool_call_id=cid),
        lc.AIMessage(f"answer {i} " * 10),
    ]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["langchain", "ctxtrim"])
def test_langchain_trim_messages(benchmark: Any, impl: str, n: int) -> None:
    lc = pytest.importorskip("langchain_core.messages")
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxtrim.integrations import langchain as ours

    history, grow = _rounds(_langchain_round, n)
    trim = lc.trim_messages if impl == "langchain" else ours.trim_messages
    kw = {"max_tokens": 8000, "token_counter": count_tokens_approximately, "strategy": "last"}
    _timed(benchmark, f"langchain trim_messages {n}", impl, grow, lambda: trim(history, **kw))


def _chat_round(i: int) -> list[dict[str, Any]]:
    if i == 0:
        return [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "the task"},
        ]
    cid = f"call_{i}"
    call = {"id": cid, "type": "function", "function": {"name": "search", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": f"result {i} " * 20},
        {"role": "assistant", "content": f"answer {i} " * 10},
    ]


@pytest.mark.parametrize("n", (100, 1_000))
@pytest.mark.parametrize("impl", ["langchain", "ctxtrim"])
def test_chat_dicts_trimmed_as_dicts(benchmark: Any, impl: str, n: int) -> None:
    """A server's turn on the data it has: the request's Chat ``messages`` arrive as JSON
    (parsed inside the timed call, as a fresh list of fresh dicts every turn) and leave as
    dicts. LangChain: ``trim_messages`` on the dicts, then ``convert_to_openai_messages``
    to send them; ctxtrim: a strategy called on the dicts."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import convert_to_openai_messages, trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    from ctxtrim import FitContextWindow

    history, grow = _rounds(_chat_round, n)
    if impl == "langchain":
        kw = {"max_tokens": 8000, "token_counter": count_tokens_approximately}
        kw |= {"strategy": "last", "include_system": True, "start_on": "human"}

        def call() -> Any:
            return convert_to_openai_messages(trim_messages(json.loads(body()), **kw))
    else:
        trim = FitContextWindow(8000)

        def call() -> Any:
            return trim(json.loads(body()))

    def body() -> bytes:  # the request as it arrives; not part of either side's cost
        return encoded[0]

    encoded = [json.dumps(history).encode()]

    def grow_and_encode() -> None:
        grow()
        encoded[0] = json.dumps(history).encode()

    _timed(benchmark, f"Chat dicts in, dicts out {n}", impl, grow_and_encode, call)


# -- LangChain v1 middleware ---------------------------------------------------------------

MIDDLEWARE_SIZES = (1_000, 10_000)


def _agent_round(i: int) -> list[Any]:
    """A round of a ``create_agent`` state: no system message (the agent keeps the system
    prompt out of the state), ids as LangGraph's reducer gives them."""
    import langchain_core.messages as lc

    if i == 0:
        return [lc.HumanMessage("the task", id="h0")]
    cid = f"call_{i}"
    return [
        lc.AIMessage(
            "", tool_calls=[{"id": cid, "name": "search", "args": {"q": str(i)}}], id=f"c{i}"
        ),
        lc.ToolMessage(f"result {i} " * 20, tool_call_id=cid, id=f"r{i}"),
        lc.AIMessage(f"answer {i} " * 10, id=f"a{i}"),
    ]


def _middleware_model() -> Any:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return GenericFakeChatModel(messages=iter([]))


def _summarization_turn(original: bool, n: int) -> tuple[Callable[[], None], Callable[[], Any]]:
    """``(grow, call)`` for ``SummarizationMiddleware.before_model`` on the common turn (no
    summary due: a token trigger, LangChain's usual one), LangChain's (``original``) or
    ctxtrim's. The state's message list is new each turn, as LangGraph's reducer makes it
    (built in ``grow``, untimed, with the round appended)."""
    from langchain.agents.middleware import summarization as theirs

    from ctxtrim.integrations import langchain_middleware as ours

    cls = theirs.SummarizationMiddleware if original else ours.SummarizationMiddleware
    middleware = cls(_middleware_model(), trigger=("tokens", 10**9), keep=("messages", 20))
    history, grow_history = _rounds(_agent_round, n)
    state = {"messages": list(history)}

    def grow() -> None:
        grow_history()
        state["messages"] = list(history)

    return grow, lambda: middleware.before_model(state, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("n", MIDDLEWARE_SIZES)
@pytest.mark.parametrize("impl", ["langchain", "ctxtrim"])
def test_langchain_summarization_middleware_turn(benchmark: Any, impl: str, n: int) -> None:
    """The common turn (see ``_summarization_turn``)."""
    pytest.importorskip("langchain.agents.middleware")
    grow, before_model = _summarization_turn(impl == "langchain", n)

    def call() -> None:
        assert before_model() is None

    _timed(benchmark, f"langchain SummarizationMiddleware turn {n}", impl, grow, call)


@pytest.mark.parametrize("n", MIDDLEWARE_SIZES)
@pytest.mark.parametrize("impl", ["langchain", "ctxtrim"])
def test_langchain_context_editing_middleware_turn(benchmark: Any, impl: str, n: int) -> None:
    """A model call through ``wrap_model_call`` with ``ClearToolUsesEdit(trigger=20_000)``:
    past the trigger, as a long agent is on every call (the state is never edited, so the
    old results are cleared again on each request)."""
    pytest.importorskip("langchain.agents.middleware")
    from langchain.agents.middleware import context_editing as theirs
    from langchain.agents.middleware.types import ModelRequest

    from ctxtrim.integrations import langchain_middleware as ours

    mod: Any = theirs if impl == "langchain" else ours
    middleware = mod.ContextEditingMiddleware(edits=[mod.ClearToolUsesEdit(trigger=20_000)])
    model = _middleware_model()
    history, grow_history = _rounds(_agent_round, n)

    def request() -> Any:
        return ModelRequest(
            model=model,
            messages=list(history),
            system_prompt=None,
            tool_choice=None,
            tools=[],
            response_format=None,
            state={"messages": history},  # type: ignore[typeddict-item]
            runtime=None,  # type: ignore[arg-type]
            model_settings={},
        )

    current = [request()]

    def grow() -> None:
        grow_history()
        current[0] = request()

    def call() -> None:
        middleware.wrap_model_call(current[0], lambda r: None)

    _timed(benchmark, f"langchain ContextEditingMiddleware call {n}", impl, grow, call, rounds=5)


# -- autogen --------------------------------------------------------------------------------


def _autogen_round(i: int) -> list[Any]:
    from autogen_core import FunctionCall
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        SystemMessage,
        UserMessage,
    )

    if i == 0:
        return [
            SystemMessage(content="You are an agent."),
            UserMessage(content="the task", source="user"),
        ]
    cid = f"call_{i}"
    return [
        AssistantMessage(
            content=[FunctionCall(id=cid, name="search", arguments='{"q": "x"}')], source="a"
        ),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(call_id=cid, content=f"result {i} " * 20, name="s")]
        ),
        AssistantMessage(content=f"answer {i} " * 10, source="a"),
    ]


class _Client:
    """A duck-typed model client: words / 0.75, plus 3 tokens a request (OpenAI-like)."""

    def count_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return 3 + sum(len(str(m.content).split()) * 4 // 3 + 4 for m in messages)

    def remaining_tokens(self, messages: Any, *, tools: Any = ()) -> int:
        return 8000 - self.count_tokens(messages, tools=tools)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["autogen", "ctxtrim"])
@pytest.mark.parametrize("kind", ["Buffered", "HeadAndTail", "TokenLimited"])
def test_autogen_context(benchmark: Any, kind: str, impl: str, n: int) -> None:
    peer = pytest.importorskip("autogen_core.model_context")
    from ctxtrim.integrations import autogen as ours

    if kind == "TokenLimited" and impl == "autogen" and n > 1_000:
        pytest.skip("autogen's TokenLimited is quadratic: seconds a call past 1k messages")
    mod = peer if impl == "autogen" else ours
    args: dict[str, Any] = {
        "Buffered": {"buffer_size": 200},
        "HeadAndTail": {"head_size": 2, "tail_size": 200},
        "TokenLimited": {"model_client": _Client(), "token_limit": 8000},
    }[kind]
    ctx = getattr(mod, f"{kind}ChatCompletionContext")(**args)
    history, grow_history = _rounds(_autogen_round, n)
    ctx._messages = list(history)
    loop = asyncio.new_event_loop()

    def grow() -> None:
        k = len(history)
        grow_history()
        for m in history[k:]:
            loop.run_until_complete(ctx.add_message(m))

    try:
        _timed(
            benchmark,
            f"autogen {kind} {n}",
            impl,
            grow,
            lambda: loop.run_until_complete(ctx.get_messages()),
            rounds=15 if kind == "TokenLimited" else 60,
        )
    finally:
        loop.close()


# -- openai-agents --------------------------------------------------------------------------


def _item_round(i: int) -> list[dict[str, Any]]:
    if i == 0:
        return [{"role": "user", "content": "the task"}]
    cid = f"call_{i}"
    return [
        {"type": "function_call", "call_id": cid, "name": "search", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": cid, "output": f"result {i} " * 20},
        {"role": "assistant", "content": f"answer {i} " * 10},
    ]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["plain-python", "ctxtrim"])
def test_openai_agents_trim_input(benchmark: Any, impl: str, n: int) -> None:
    pytest.importorskip("agents")
    from ctxtrim.integrations.openai_agents import trim_input

    def plain(history: list[Any], new: list[Any]) -> list[Any]:
        # No original: the callback a user writes (see PLAIN_WALK), with the usual estimate
        # for Responses items, a quarter of their JSON's length (openai-agents' own
        # approximation is 4 bytes a token).
        items = [*history, *new]
        total, k = 0, len(items)
        while k > 0:
            t = len(json.dumps(items[k - 1])) // 4
            if total + t > 8000:
                break
            total += t
            k -= 1
        return items[k:]

    history, grow = _rounds(_item_round, n)
    callback = trim_input(8000) if impl == "ctxtrim" else plain
    new = [{"role": "user", "content": "next"}]
    _timed(benchmark, f"openai-agents trim_input {n}", impl, grow, lambda: callback(history, new))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["SQLiteSession", "ctxtrim-sqlite-tables", "ctxtrim-store"])
def test_openai_agents_get_items(benchmark: Any, impl: str, n: int, tmp_path: Any) -> None:
    """``SQLiteSession`` against the drop-in made by ``CtxtrimSession(session_id, db_path)``
    (the same tables) and against ``CtxtrimSession`` on ctxtrim's SQLite store."""
    agents = pytest.importorskip("agents")
    from ctxtrim import SQLiteContextStore
    from ctxtrim.integrations.openai_agents import CtxtrimSession

    history, grow_history = _rounds(_item_round, n)
    db = tmp_path / "s.db"
    loop = asyncio.new_event_loop()
    store = None
    if impl == "SQLiteSession":
        session: Any = agents.SQLiteSession("bench", db)
    elif impl == "ctxtrim-sqlite-tables":
        session = CtxtrimSession("bench", db)
    else:
        store = loop.run_until_complete(SQLiteContextStore.open(db, "bench"))
        session = CtxtrimSession(store)
    loop.run_until_complete(session.add_items(history))

    def grow() -> None:
        k = len(history)
        grow_history()
        loop.run_until_complete(session.add_items(history[k:]))

    try:
        _timed(
            benchmark,
            f"openai-agents get_items(100) {n}",
            impl,
            grow,
            lambda: loop.run_until_complete(session.get_items(100)),
            rounds=60,
        )
    finally:
        session.close()
        if store is not None:
            loop.run_until_complete(store.close())
        loop.close()


# -- pydantic-ai ----------------------------------------------------------------------------


def _pydantic_round(i: int) -> list[Any]:
    import pydantic_ai.messages as m

    if i == 0:
        return [m.ModelRequest(parts=[m.SystemPromptPart("agent"), m.UserPromptPart("task")])]
    cid = f"call_{i}"
    return [
        m.ModelResponse(parts=[m.ToolCallPart("search", {"q": "x"}, tool_call_id=cid)]),
        m.ModelRequest(parts=[m.ToolReturnPart("search", f"r {i} " * 20, tool_call_id=cid)]),
        m.ModelResponse(parts=[m.TextPart(f"answer {i} " * 10)]),
        m.ModelRequest(parts=[m.UserPromptPart("go on")]),
    ]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["plain-python", "ctxtrim"])
def test_pydantic_ai_trim_history(benchmark: Any, impl: str, n: int) -> None:
    m = pytest.importorskip("pydantic_ai.messages")
    from pydantic_ai._utils import estimate_string_tokens

    from ctxtrim.integrations.pydantic_ai import TrimHistory

    def _part_text(part: Any) -> str:
        if isinstance(part, m.ToolCallPart):
            return part.args_as_json_str()
        if isinstance(part, m.ToolReturnPart):
            return part.model_response_str()
        return str(part.content)

    def plain(history: list[Any]) -> list[Any]:
        # No original: the processor a user writes (see PLAIN_WALK), with pydantic-ai's own
        # approximate counter (the one its test models report usage with) over each part.
        def tokens(message: Any) -> int:
            return sum(estimate_string_tokens(_part_text(p)) for p in message.parts)

        total, k = 0, len(history)
        while k > 1:
            t = tokens(history[k - 1])
            if total + t > 8000:
                break
            total += t
            k -= 1
        return [history[0], *history[k:]]

    history, grow = _rounds(_pydantic_round, n)
    proc = TrimHistory(8000) if impl == "ctxtrim" else plain
    _timed(benchmark, f"pydantic-ai TrimHistory {n}", impl, grow, lambda: proc(history))


# -- LlamaIndex -----------------------------------------------------------------------------


def _llama_round(i: int) -> list[Any]:
    """One agent turn as FunctionAgent stores it: the task, a call, its result, the answer."""
    from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock

    cid = f"call_{i}"
    return [
        ChatMessage(role="user", content=f"question {i} " * 5),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id=cid, tool_name="search", tool_kwargs={"q": "x"})],
        ),
        ChatMessage(
            role="tool", content=f"result {i} " * 20, additional_kwargs={"tool_call_id": cid}
        ),
        ChatMessage(role="assistant", content=f"answer {i} " * 10),
    ]


#: ``token_limit`` of each case: LlamaIndex's default (30k tokens: the active queue stays at
#: a few hundred messages whatever the history, and both sides are flat), and a 1M-token
#: window (a Gemini-size model: the whole history stays active, and what LlamaIndex re-reads
#: from its store and re-counts each turn grows with it).
LLAMA_LIMITS = {"30k": 30_000, "1M": 1_000_000}


@pytest.mark.parametrize("n", SIZES[:2])
@pytest.mark.parametrize("limit", list(LLAMA_LIMITS))
@pytest.mark.parametrize("impl", ["llama-index", "ctxtrim"])
def test_llama_index_memory_turn(benchmark: Any, impl: str, limit: str, n: int) -> None:
    """One agent turn on a ``Memory`` holding ``n`` messages, through each side's async API
    as FunctionAgent calls it: ``aput`` of the task, ``aput_messages`` of the turn's call,
    result and answer (built inside the timed call), ``aget``. The session's store holds
    the history beforehand, as a steady state leaves it: with the 30k limit, the newest 400
    messages (about 16k tokens) active and the others archived; with 1M, all of them
    active. The first turn is untimed."""
    pytest.importorskip("llama_index.core.memory")
    from llama_index.core.memory import Memory as LlamaMemory

    from ctxtrim.integrations.llama_index import Memory

    cls = LlamaMemory if impl == "llama-index" else Memory
    memory = cls.from_defaults(token_limit=LLAMA_LIMITS[limit])
    history, _ = _rounds(_llama_round, n)
    loop = asyncio.new_event_loop()
    # In batch inserts (``aset`` inserts row by row, and a 10k-message active queue over the
    # limit takes LlamaIndex a minute to flush: set-up, not the turn being measured).
    from llama_index.core.storage.chat_store.base_db import MessageStatus

    active = len(history) if limit == "1M" else 400
    store, key = memory.sql_store, memory.session_id
    old, recent = history[:-active], history[-active:]
    if old:
        loop.run_until_complete(store.add_messages(key, old, status=MessageStatus.ARCHIVED))
    loop.run_until_complete(store.add_messages(key, recent, status=MessageStatus.ACTIVE))
    counter = itertools.count(len(history))

    async def turn() -> Any:
        task, *rest = _llama_round(next(counter))
        await memory.aput(task)
        await memory.aput_messages(rest)
        return await memory.aget()

    try:
        rounds = 5 if impl == "llama-index" and limit == "1M" and n > 1_000 else 15
        _timed(
            benchmark,
            f"llama-index Memory turn, {limit} limit, {n}",
            impl,
            lambda: None,
            lambda: loop.run_until_complete(turn()),
            rounds=rounds,
        )
    finally:
        loop.run_until_complete(memory.sql_store._async_engine.dispose())
        loop.close()


# -- first calls ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "langchain trim_messages",
        "autogen Buffered",
        "autogen HeadAndTail",
        "autogen TokenLimited",
        "openai-agents trim_input",
        "pydantic-ai TrimHistory",
    ],
)
def test_first_call_script(name: str) -> None:
    """``benches/first_call.py`` (the first call over a never-seen history, per message:
    a script, run by hand) runs for every drop-in; a smoke test, nothing timed here."""
    import first_call

    module = {
        "langchain": "langchain_core",
        "autogen": "autogen_core",
        "openai-agents": "agents",
        "pydantic-ai": "pydantic_ai",
    }[name.split()[0]]
    pytest.importorskip(module)
    assert first_call.first_call(first_call.DROPINS[name], 300, 1) > 0
