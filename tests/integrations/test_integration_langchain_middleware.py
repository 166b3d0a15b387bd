"""ctxtrim.integrations.langchain_middleware against LangChain v1's SummarizationMiddleware and
ContextEditingMiddleware: in a real ``create_agent`` loop the model only ever sees pair-safe
histories, summarised and cleared; side by side with LangChain's classes on generated valid
histories both give the same state update and model request, where LangChain's is pair-safe;
the once-per-message count is LangChain's count to the token."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

if sys.version_info < (3, 11):  # pragma: no cover - the 3.10 CI job
    pytest.skip("langchain 1.5 needs Python >= 3.11", allow_module_level=True)
pytest.importorskip("langchain.agents", reason="langchain not installed: pip install '.[test]'")

from langchain.agents import create_agent
from langchain.agents.middleware import context_editing as lc_editing
from langchain.agents.middleware import summarization as lc_summarization
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from ctxtrim import Message
from ctxtrim.integrations.langchain_middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
    _ApproximateCounter,
)

from strategies import histories


def pair_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Orphaned ToolMessages and AIMessage tool calls whose results are missing."""
    out: list[str] = []
    issued: set[str] = set()
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    for m in messages:
        if isinstance(m, AIMessage):
            for tc in m.tool_calls:
                issued.add(tc["id"] or "")
                if tc["id"] not in answered:
                    out.append(f"call {tc['id']} without its result")
        elif isinstance(m, ToolMessage) and m.tool_call_id not in issued:
            out.append(f"result {m.tool_call_id} without its call")
    return out


# -- a real create_agent loop ------------------------------------------------------------------


class ScriptedModel(BaseChatModel):
    """A chat model that calls ``lookup`` ``calls_per_task`` times per user message, then
    answers; it records every message list it is sent (and answers summary prompts)."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    calls_per_task: int = 3

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        if len(messages) == 1 and "Messages to summarize" in str(messages[0].content):
            text = "SUMMARY of the lookups so far"
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
        self.seen.append(list(messages))
        since_user = 0
        for m in reversed(messages):
            if isinstance(m, HumanMessage):
                break
            since_user += isinstance(m, ToolMessage)
        n = sum(isinstance(m, AIMessage) for m in messages)
        if since_user < self.calls_per_task:
            call = {"id": f"call-{n}-{since_user}", "name": "lookup", "args": {"q": f"q{n}"}}
            message = AIMessage("", tool_calls=[call])
        else:
            message = AIMessage(f"answer {n}")
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q}: " + "data " * 200


def run_agent(middleware: list[Any], turns: int) -> tuple[ScriptedModel, list[AnyMessage]]:
    model = ScriptedModel(seen=[])
    agent = create_agent(model, [lookup], middleware=middleware, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    state: dict[str, Any] = {}
    for i in range(turns):
        state = agent.invoke({"messages": [HumanMessage(f"task {i}")]}, config)
    return model, state["messages"]


def test_create_agent_summarises_pair_safely_over_many_turns() -> None:
    summariser = SummarizationMiddleware(
        ScriptedModel(seen=[]), trigger=("messages", 12), keep=("messages", 5)
    )
    model, final = run_agent([summariser], turns=6)
    assert model.seen, "the model was never called"
    summarised = [seen for seen in model.seen if "summary of the conversation" in seen[0].text]
    assert summarised, "no summary reached the model"
    for seen in model.seen:
        assert pair_problems(seen) == []
        assert len(seen) <= 12 + 2  # a summary is due at 12; one step adds at most 2
    assert "SUMMARY of the lookups" in final[0].text
    assert pair_problems(final) == []


def test_create_agent_clears_old_tool_results_before_each_model_call() -> None:
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=500, keep=2)])
    model, final = run_agent([editing], turns=3)
    late = model.seen[-1]
    results = [m for m in late if isinstance(m, ToolMessage)]
    assert len(results) >= 6
    assert [m.text for m in results[:-2]] == ["[cleared]"] * (len(results) - 2)
    assert all("data data" in m.text for m in results[-2:])
    for seen in model.seen:
        assert pair_problems(seen) == []
    # The state is not edited: only the requests are.
    assert all("data data" in m.text for m in final if isinstance(m, ToolMessage))


def test_both_middlewares_together_and_async() -> None:
    middleware = [
        SummarizationMiddleware(
            ScriptedModel(seen=[]), trigger=("tokens", 2500), keep=("tokens", 900)
        ),
        ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=800, keep=1)]),
    ]
    model = ScriptedModel(seen=[])
    agent = create_agent(model, [lookup], middleware=middleware, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "a"}}

    async def turns() -> None:
        for i in range(4):
            await agent.ainvoke({"messages": [HumanMessage(f"task {i}")]}, config)

    asyncio.run(turns())
    assert any("summary of the conversation" in seen[0].text for seen in model.seen)
    for seen in model.seen:
        assert pair_problems(seen) == []


# -- side by side with LangChain's classes -----------------------------------------------------


def to_langchain(history: Sequence[Message]) -> list[AnyMessage]:
    out: list[AnyMessage] = []
    for i, m in enumerate(history):
        if m.role == "system":
            continue  # create_agent keeps the system prompt out of the state
        if m.role == "assistant":
            calls = [{"id": u.id, "name": u.name, "args": {"q": str(u.input)}} for u in m.tool_uses]
            out.append(AIMessage(m.text or f"a{i}", tool_calls=calls, id=f"m{i}"))
        else:
            out += [
                ToolMessage("r" * (5 + j), tool_call_id=r.tool_use_id, id=f"m{i}-{j}")
                for j, r in enumerate(m.tool_results)
            ]
            if m.is_real_user:
                out.append(HumanMessage(m.text or f"u{i}", id=f"m{i}"))
    return out


def summary_of(messages: list[AnyMessage]) -> str:
    return f"summary of {len(messages)}: " + ",".join(str(m.id) for m in messages)


def state_update(update: dict[str, Any] | None) -> list[tuple[str, str, str | None]] | None:
    if update is None:
        return None
    return [
        (type(m).__name__, m.text, m.id)
        for m in update["messages"]
        if not isinstance(m, RemoveMessage)
    ] + [("remove", "", m.id) for m in update["messages"] if isinstance(m, RemoveMessage)]


KEEPS = st.sampled_from(
    [("messages", 1), ("messages", 4), ("messages", 9), ("tokens", 40), ("tokens", 150)]
)
TRIGGERS = st.sampled_from(
    [
        ("messages", 3),
        ("tokens", 60),
        {"messages": 5, "tokens": 30},
        [("tokens", 500), ("messages", 8)],
    ]
)


@given(histories(), KEEPS, TRIGGERS, st.sampled_from([None, 30, 4000]))
@settings(max_examples=60, deadline=None)
def test_summarisation_equals_langchain_where_langchain_is_pair_safe(
    history: list[Message], keep: Any, trigger: Any, trim: int | None
) -> None:
    messages = to_langchain(history)
    assume(messages and pair_problems(messages) == [])
    sent: dict[str, list[AnyMessage]] = {}

    def summariser(name: str) -> Any:
        def summarise(messages: list[AnyMessage]) -> str:
            sent[name] = messages
            return summary_of(messages)

        return summarise

    args: dict[str, Any] = {"trigger": trigger, "keep": keep, "trim_tokens_to_summarize": trim}
    ours = SummarizationMiddleware(ScriptedModel(seen=[]), summarizer=summariser("ours"), **args)
    theirs = lc_summarization.SummarizationMiddleware(
        ScriptedModel(seen=[]), summarizer=summariser("theirs"), **args
    )
    mine = ours.before_model({"messages": list(messages)}, None)
    if mine is not None:
        assert pair_problems(mine["messages"][2:]) == []
        assert pair_problems(sent.get("ours", [])) == []
    other = theirs.before_model({"messages": list(messages)}, None)
    if other is not None:
        # LangChain's kept part or summariser input may hold an orphan: the fixed case.
        assume(pair_problems(other["messages"][2:]) == [])
        assume(pair_problems(sent.get("theirs", [])) == [])
    ours_update, their_update = state_update(mine), state_update(other)
    if their_update and "too long to summarize" in their_update[0][1]:
        # LangChain's trim_messages found no human message starting a window within
        # trim_tokens_to_summarize and sent the summariser nothing; ctxtrim's sends the
        # task and the newest pair-safe part that fits (README, "LangChain middleware").
        assert ours_update is not None and "summary of" in ours_update[0][1]
        ours_update, their_update = ours_update[1:], their_update[1:]
    assert ours_update == their_update


def test_a_result_after_an_interjection_is_not_orphaned() -> None:
    """A human message between a call and its result (a human-in-the-loop pause): LangChain
    cuts between them, keeping the result without its call; the drop-in keeps both."""
    messages: list[AnyMessage] = [
        HumanMessage("task", id="h0"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "lookup", "args": {}}], id="a1"),
        HumanMessage("go on", id="h1"),
        ToolMessage("found", tool_call_id="c1", id="t1"),
        AIMessage("done", id="a2"),
    ]
    args: dict[str, Any] = {
        "trigger": ("messages", 4),
        "keep": ("messages", 3),
        "summarizer": summary_of,
    }
    theirs = lc_summarization.SummarizationMiddleware(ScriptedModel(seen=[]), **args)
    other = theirs.before_model({"messages": list(messages)}, None)
    assert other is not None and pair_problems(other["messages"][2:]) != []
    mine = SummarizationMiddleware(ScriptedModel(seen=[]), **args).before_model(
        {"messages": list(messages)},
        None,
    )
    assert mine is not None
    assert [m.id for m in mine["messages"][2:]] == ["a1", "h1", "t1", "a2"]


def answers_nearest(messages: Sequence[BaseMessage], i: int) -> bool:
    ai = next((m for m in reversed(messages[:i]) if isinstance(m, AIMessage)), None)
    return ai is not None and any(tc["id"] == messages[i].tool_call_id for tc in ai.tool_calls)


def test_a_result_after_another_answer_is_still_cleared() -> None:
    messages: list[AnyMessage] = [
        HumanMessage("task", id="h0"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "lookup", "args": {}}], id="a1"),
        AIMessage("still looking", id="a2"),
        ToolMessage("found " * 50, tool_call_id="c1", id="t1"),
        AIMessage("done", id="a3"),
    ]
    edit = ClearToolUsesEdit(trigger=0, keep=0)
    ours = list(messages)
    edit.apply(ours, count_tokens=count_tokens_approximately)
    assert ours[3].text == "[cleared]"
    theirs = list(messages)
    lc_editing.ClearToolUsesEdit(trigger=0, keep=0).apply(
        theirs, count_tokens=count_tokens_approximately
    )
    assert theirs[3] is messages[3]


@given(
    histories(),
    st.integers(0, 300),
    st.integers(0, 4),
    st.integers(0, 60),
    st.booleans(),
    st.sampled_from([(), ("search",), ("read_file",)]),
)
@settings(max_examples=60, deadline=None)
def test_context_editing_equals_langchain(
    history: list[Message],
    trigger: int,
    keep: int,
    at_least: int,
    inputs: bool,
    exclude: tuple[str, ...],
) -> None:
    messages = to_langchain(history)
    assume(messages and pair_problems(messages) == [])
    # LangChain looks for a result's call only in the nearest AIMessage before it and leaves
    # a result answering an earlier one uncleared; the drop-in pairs it (and clears it).
    assume(
        all(
            answers_nearest(messages, i)
            for i, m in enumerate(messages)
            if isinstance(m, ToolMessage)
        )
    )
    fields = {
        "trigger": trigger,
        "keep": keep,
        "clear_at_least": at_least,
        "clear_tool_inputs": inputs,
        "exclude_tools": exclude,
    }
    seen: dict[str, list[BaseMessage]] = {}

    def handler(name: str) -> Any:
        def call(request: Any) -> Any:
            seen[name] = list(request.messages)
            return AIMessage("ok")

        return call

    for name, middleware in (
        ("ours", ContextEditingMiddleware(edits=[ClearToolUsesEdit(**fields)])),
        (
            "theirs",
            lc_editing.ContextEditingMiddleware(edits=[lc_editing.ClearToolUsesEdit(**fields)]),
        ),
    ):
        request = lc_editing.ModelRequest(
            model=ScriptedModel(seen=[]),
            messages=list(messages),
            system_prompt=None,
            tool_choice=None,
            tools=[],
            response_format=None,
            state={"messages": messages},
            runtime=None,
            model_settings={},
        )
        before = [m.model_dump() for m in messages]
        middleware.wrap_model_call(request, handler(name))
        assert [m.model_dump() for m in messages] == before  # the state is never edited
    assert [m.model_dump() for m in seen["ours"]] == [m.model_dump() for m in seen["theirs"]]
    assert pair_problems(seen["ours"]) == []


# -- the once-per-message count ----------------------------------------------------------------


def usage_history(draw: st.DrawFn) -> list[AnyMessage]:
    history = to_langchain(draw(histories()))
    out: list[AnyMessage] = []
    for m in history:
        if isinstance(m, AIMessage) and draw(st.booleans()):
            total = draw(st.integers(0, 5000))
            m = m.model_copy(
                update={
                    "usage_metadata": {
                        "input_tokens": total,
                        "output_tokens": 0,
                        "total_tokens": total,
                    },
                    "response_metadata": {
                        "model_provider": draw(st.sampled_from(["openai", "openai", None]))
                    },
                }
            )
        out.append(m)
    return out


@given(
    st.composite(usage_history)(),
    st.data(),
    st.sampled_from(
        [
            {},
            {"use_usage_metadata_scaling": True},
            {"use_usage_metadata_scaling": True, "chars_per_token": 3.3},
        ]
    ),
)
@settings(max_examples=60, deadline=None)
def test_incremental_count_is_langchains_count(
    messages: list[AnyMessage], data: Any, keywords: dict[str, Any]
) -> None:
    counter = _ApproximateCounter(keywords)
    reference = functools.partial(count_tokens_approximately, **keywords)
    # Turn by turn, each list extending the last (a new list, as LangGraph's reducer makes).
    ends = sorted(data.draw(st.lists(st.integers(0, len(messages)), max_size=5)))
    for end in [*ends, len(messages)]:
        assert counter.count(list(messages[:end])) == reference(messages[:end])
    # A message replaced in the middle (a LangGraph update by id): the count follows.
    if len(messages) > 2:
        i = data.draw(st.integers(1, len(messages) - 1))
        changed = list(messages)
        changed[i] = messages[i].model_copy(update={"content": "x" * 400})
        assert counter.count(changed) == reference(changed)


def test_summarisation_gives_ids_only_to_new_messages_and_counts_once() -> None:
    calls: list[int] = []
    middleware = SummarizationMiddleware(ScriptedModel(seen=[]), trigger=("tokens", 10**9))
    counter = middleware._fast_counter()
    assert counter is not None
    one = counter.one

    def counting(ms: list[BaseMessage]) -> float:
        calls.append(len(ms))
        return one(ms)

    counter.one = counting
    messages: list[AnyMessage] = [HumanMessage("task"), AIMessage("a")]
    assert middleware.before_model({"messages": messages}, None) is None
    assert all(m.id for m in messages) and len(calls) == 2
    messages = [*messages, HumanMessage("more"), AIMessage("b")]
    assert middleware.before_model({"messages": messages}, None) is None
    assert len(calls) == 4 and all(m.id for m in messages)
    # A counter set on the instance later is used as given, on the whole list.
    middleware.token_counter = lambda ms: 10**10
    middleware.keep = ("messages", 1)
    update = middleware.before_model({"messages": messages}, None)
    assert update is not None and len(calls) == 4


def test_system_messages_are_kept_out_of_the_pair_check() -> None:
    messages: list[AnyMessage] = [SystemMessage("s", id="s"), HumanMessage("t", id="t")]
    assert SummarizationMiddleware._find_safe_cutoff_point(messages, 1) == 1


@given(
    histories(),
    st.data(),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([(), ("search",), ("read_file",)]),
)
@settings(max_examples=60, deadline=None)
def test_turn_after_turn_the_edit_equals_a_fresh_one(
    history: list[Message], data: Any, keep: int, inputs: bool, exclude: tuple[str, ...]
) -> None:
    """The edit remembers the history it saw (the pairing, what it cleared): a turn's list
    extending the last one, a message replaced in the middle, or settings changed between
    calls give what a fresh edit gives."""
    messages = to_langchain(history)
    assume(len(messages) > 2)
    fields: dict[str, Any] = {"keep": keep, "clear_tool_inputs": inputs, "exclude_tools": exclude}
    remembering = ClearToolUsesEdit(trigger=0, **fields)
    counter = _ApproximateCounter({})

    def check(ms: list[AnyMessage], edit: ClearToolUsesEdit) -> None:
        ours, fresh = list(ms), list(ms)
        edit.apply(ours, count_tokens=counter)
        ClearToolUsesEdit(trigger=0, **fields).apply(fresh, count_tokens=counter)
        assert [m.model_dump() for m in ours] == [m.model_dump() for m in fresh]

    for end in sorted(data.draw(st.lists(st.integers(1, len(messages)), max_size=4))):
        check(messages[:end], remembering)
    check(messages, remembering)
    i = data.draw(st.integers(1, len(messages) - 1))
    changed = list(messages)
    changed[i] = messages[i].model_copy(update={"content": "changed"})
    check(changed, remembering)
    remembering.keep = fields["keep"] = keep + 1
    check(changed, remembering)
