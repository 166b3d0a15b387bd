"""ctxtrim.integrations.langchain.trim_messages against langchain-core's: langchain's pair
bugs (langchain-ai/langchain#33245, #29637, #35629) pass through it fixed, and on
histories where langchain's result is pair-safe both return the same messages."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "langchain_core", reason="langchain-core not installed: pip install 'ctxtrim[langchain]'"
)

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages import trim_messages as lc_trim
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import Runnable, RunnableLambda

from ctxtrim import Message
from ctxtrim.integrations.langchain import trim_messages

from strategies import histories


def call(i: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"id": f"c{i}", "name": "f", "args": {}}])


def res(i: int) -> ToolMessage:
    return ToolMessage("ok", tool_call_id=f"c{i}")


HIST: list[BaseMessage] = [
    SystemMessage("sys"),
    HumanMessage("task"),
    call(1),
    res(1),
    call(2),
    res(2),
    call(3),
    res(3),
    AIMessage("done"),
]


def pair_problems(out: Sequence[BaseMessage], source: Sequence[BaseMessage]) -> list[str]:
    """Orphan ToolMessages and AIMessage tool calls whose results were cut."""
    answered = {m.tool_call_id for m in source if isinstance(m, ToolMessage)}
    seen: set[str] = set()
    kept: set[str] = set()
    problems = []
    for m in out:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in seen:
                problems.append(f"orphan {m.tool_call_id}")
            kept.add(m.tool_call_id)
        elif isinstance(m, AIMessage):
            seen |= {tc["id"] for tc in m.tool_calls if tc["id"]}
    return problems + [f"dangling {c}" for c in (seen & answered) - kept]


def shape(ms: Sequence[BaseMessage]) -> str:
    return " ".join(
        type(m).__name__[0] + ("*" if isinstance(m, AIMessage) and m.tool_calls else "") for m in ms
    )


# -- langchain's own pair bugs, fixed ------------------------------------------------------------


def test_last_never_starts_with_an_orphan_tool_message() -> None:
    assert shape(lc_trim(HIST, max_tokens=4, token_counter=len, strategy="last")) == "T A* T A"
    out = trim_messages(HIST, max_tokens=4, token_counter=len, strategy="last")
    assert pair_problems(out, HIST) == []
    assert shape(out) == "A* T A"
    assert all(any(m is h for h in HIST) for m in out)  # langchain's own objects


def test_start_on_human_keeps_the_task_instead_of_collapsing() -> None:
    kwargs = dict(
        max_tokens=4, token_counter=len, strategy="last", include_system=True, start_on="human"
    )
    assert shape(lc_trim(HIST, **kwargs)) == "S"  # type: ignore[call-overload]
    out = trim_messages(HIST, **kwargs)
    assert shape(out) == "S H A"
    assert len(out) <= 4 and pair_problems(out, HIST) == []


def test_first_never_ends_on_a_call_without_its_result() -> None:
    assert shape(lc_trim(HIST, max_tokens=3, token_counter=len, strategy="first")) == "S H A*"
    out = trim_messages(HIST, max_tokens=3, token_counter=len, strategy="first")
    assert shape(out) == "S H"
    assert shape(trim_messages(HIST, max_tokens=4, token_counter=len, strategy="first")) == (
        "S H A* T"
    )


def test_counter_never_sees_a_tool_message_before_its_call() -> None:
    def flags(calls: list[int]) -> object:
        def counter(ms: list[BaseMessage]) -> int:
            ids: set[str] = set()
            for m in ms:
                if isinstance(m, AIMessage):
                    ids |= {t["id"] for t in m.tool_calls if t["id"]}
                if isinstance(m, ToolMessage) and m.tool_call_id not in ids:
                    calls.append(1)
                    break
            return len(ms)

        return counter

    theirs: list[int] = []
    lc_trim(HIST, max_tokens=4, token_counter=flags(theirs), strategy="last")  # type: ignore[call-overload]  # a plain callable counter; langchain's overloads want its Callable types
    assert theirs  # langchain feeds it reversed lists (#29637)
    mine: list[int] = []
    for strategy in ("last", "first"):
        for budget in range(1, 10):
            trim_messages(HIST, max_tokens=budget, token_counter=flags(mine), strategy=strategy)
    assert mine == []


def test_per_message_lambda_counter() -> None:
    with pytest.raises(AttributeError):
        lc_trim(HIST, max_tokens=12, token_counter=lambda m: len(m.content))
    out = trim_messages(HIST, max_tokens=12, token_counter=lambda m: len(m.content))
    assert sum(len(m.content) for m in out) <= 12
    assert shape(out) == "A* T A* T A* T A"


def test_annotated_per_message_counter_is_used_per_message() -> None:
    def count(m: BaseMessage) -> int:
        return 1

    assert trim_messages(HIST, max_tokens=4, token_counter=count) == lc_trim(
        HIST[-3:], max_tokens=4, token_counter=count
    )


def test_model_counter_non_additive_stays_within_budget() -> None:
    model = GenericFakeChatModel(messages=iter([]), custom_get_token_ids=lambda t: t.split())  # type: ignore[arg-type, return-value]  # words as ids: the fake model only counts them
    hist = [HumanMessage("one two three"), AIMessage("four five"), HumanMessage("six seven")]
    for budget in range(1, 14):
        out = trim_messages(hist, max_tokens=budget, token_counter=model)
        assert model.get_num_tokens_from_messages(out) <= budget or out == []
        assert out == lc_trim(hist, max_tokens=budget, token_counter=model)


def test_approximate_counter_and_include_system() -> None:
    out = trim_messages(HIST, max_tokens=40, token_counter="approximate", include_system=True)
    assert out[0] is HIST[0] and pair_problems(out, HIST) == []
    assert out == lc_trim(HIST, max_tokens=40, token_counter="approximate", include_system=True)


def test_bad_arguments_are_rejected_like_langchain() -> None:
    with pytest.raises(ValueError, match="start_on"):
        trim_messages(HIST, max_tokens=4, token_counter=len, strategy="first", start_on="human")
    with pytest.raises(ValueError, match="include_system"):
        trim_messages(HIST, max_tokens=4, token_counter=len, strategy="first", include_system=True)
    with pytest.raises(ValueError, match="shortcut"):
        trim_messages(HIST, max_tokens=4, token_counter="exact")


def test_allow_partial_splits_only_plain_messages() -> None:
    hist = [HumanMessage("a\nb\nc\nd"), call(1), res(1), AIMessage("x")]

    def words(ms: list[BaseMessage]) -> int:
        return sum(len(str(m.content).split()) + 1 for m in ms)

    out = trim_messages(hist, max_tokens=6, token_counter=words, allow_partial=True)
    assert pair_problems(out, hist) == [] and words(out) <= 6
    assert out[-3:] == hist[1:]


# -- generated histories ------------------------------------------------------------------------


def to_langchain(history: Sequence[Message]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for m in history:
        if m.role == "system":
            out.append(SystemMessage(m.text))
        elif m.role == "assistant":
            calls = [{"id": u.id, "name": u.name, "args": dict(u.input)} for u in m.tool_uses]
            out.append(AIMessage(m.text, tool_calls=calls))
        else:
            out += [ToolMessage("r", tool_call_id=r.tool_use_id) for r in m.tool_results]
            if m.is_real_user:
                out.append(HumanMessage(m.text))
    return out


OPTIONS = st.fixed_dictionaries(
    {
        "strategy": st.sampled_from(["last", "first"]),
        "max_tokens": st.integers(0, 25),
        "include_system": st.booleans(),
        "start_on": st.sampled_from([None, "human", ("human", "ai")]),
        "end_on": st.sampled_from([None, "ai", "tool"]),
    }
)


@given(histories(), OPTIONS)
@settings(max_examples=150, deadline=None)
def test_pair_safe_and_equal_to_langchain_when_langchain_is_pair_safe(
    history: list[Message], options: dict[str, object]
) -> None:
    hist = to_langchain(history)
    if options["strategy"] == "first":
        options = {**options, "start_on": None, "include_system": False}
    out = trim_messages(hist, token_counter=len, **options)
    assert pair_problems(out, hist) == []
    # Within budget, except langchain's own rule: include_system keeps the system message
    # even when it alone is over.
    assert len(out) <= options["max_tokens"] or out == hist[:1]  # type: ignore[operator]
    pos = {id(m): i for i, m in enumerate(hist)}
    where = [pos[id(m)] for m in out]
    assert where == sorted(set(where))
    theirs = lc_trim(hist, token_counter=len, **options)  # type: ignore[call-overload]
    collapsed = options["start_on"] and not any(not isinstance(m, SystemMessage) for m in theirs)
    assume(pair_problems(theirs, hist) == [] and not collapsed)
    assert out == theirs


# -- the fast path (strategy="last", a counter summed over messages) ---------------------------


def _general(ms: list[BaseMessage]) -> int:
    # Unannotated and taking a list: langchain's general kind of counter, so this counter
    # takes the general path, which reads the whole history.
    return count_tokens_approximately(ms)


def long_history(seed: int, rounds: int) -> list[BaseMessage]:
    """An agent loop as langchain users build it: system, task, then rounds of an AIMessage
    with 1-3 tool calls, their ToolMessages, sometimes an answer or a new human message."""
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage("You are a helpful agent."), HumanMessage("task")]
    for r in range(rounds):
        k = rng.randint(1, 3)
        ids = [f"r{r}c{j}" for j in range(k)]
        out.append(AIMessage("", tool_calls=[{"id": i, "name": "f", "args": {}} for i in ids]))
        out += [ToolMessage("x" * rng.randint(1, 400), tool_call_id=i) for i in ids]
        if rng.random() < 0.3:
            out.append(AIMessage("answer " * rng.randint(1, 30)))
        if rng.random() < 0.1:
            out.append(HumanMessage("next " * rng.randint(1, 10)))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"include_system": True},
        {"start_on": "human"},
        {"include_system": True, "start_on": "human", "end_on": ("human", "tool")},
        {"allow_partial": True},
    ],
)
def test_fast_path_equals_the_general_path_on_long_histories(
    seed: int, options: dict[str, object]
) -> None:
    hist = long_history(seed, 700)  # ~2000 messages: the window is read from the tail
    for max_tokens in (5, 300, 4000, 60_000):
        fast = trim_messages(
            hist, max_tokens=max_tokens, token_counter=count_tokens_approximately, **options
        )
        slow = trim_messages(hist, max_tokens=max_tokens, token_counter=_general, **options)
        assert fast == slow, (seed, options, max_tokens)
        assert pair_problems(fast, hist) == []


def test_fast_path_rereads_a_message_replaced_in_the_list() -> None:
    hist = long_history(1, 400)
    trim_messages(hist, max_tokens=2000, token_counter=count_tokens_approximately)
    # An edit in place: a message in the window becomes a much longer one.
    i = len(hist) - 3
    old = hist[i]
    hist[i] = old.model_copy(update={"content": "long " * 3000} if old.type != "ai" else {})
    fast = trim_messages(hist, max_tokens=2000, token_counter=count_tokens_approximately)
    slow = trim_messages(hist, max_tokens=2000, token_counter=_general)
    assert fast == slow


def test_fast_path_on_a_history_that_grows_and_is_edited_between_calls() -> None:
    # The fast path keeps what it read of the list for the next call (its head and its
    # end, checked by identity): a history grown by a round, or edited in the window or in
    # the middle, between calls gives what the general path gives on it.
    rng = random.Random(7)
    pool = long_history(2, 600)
    hist = pool[:800]
    for step in range(60):
        hist += pool[800 + 4 * step : 804 + 4 * step]
        if step % 7 == 3:  # a message in the window replaced by a longer one
            i = len(hist) - rng.randint(1, 30)
            if hist[i].type == "human":
                hist[i] = HumanMessage("long " * rng.randint(50, 500))
        if step % 11 == 5:  # the middle shortened: the window's positions all move
            del hist[100:104]
        fast = trim_messages(hist, max_tokens=2000, token_counter=count_tokens_approximately)
        slow = trim_messages(hist, max_tokens=2000, token_counter=_general)
        assert fast == slow, step
        assert pair_problems(fast, hist) == []


def test_without_messages_returns_a_runnable() -> None:
    trimmer = trim_messages(max_tokens=10, token_counter=len, strategy="last")
    assert isinstance(trimmer, Runnable)
    assert trimmer.invoke(HIST) == trim_messages(HIST, max_tokens=10, token_counter=len)
    chain = trimmer | RunnableLambda(lambda ms: len(ms))
    assert chain.invoke(HIST) == len(trim_messages(HIST, max_tokens=10, token_counter=len))


@pytest.mark.parametrize("counter", [count_tokens_approximately, _general])
def test_allow_partial_keeps_part_of_the_newest_message_when_no_whole_one_fits(
    counter: object,
) -> None:
    hist = [SystemMessage("sys"), HumanMessage("task"), HumanMessage("a few words\n" * 200)]
    kwargs = {"max_tokens": 60, "token_counter": counter, "allow_partial": True}
    ours = trim_messages(hist, **kwargs)
    theirs = lc_trim(hist, **kwargs)  # type: ignore[call-overload]
    assert ours == theirs
    assert len(ours) == 1 and 0 < len(ours[0].content) < len(hist[-1].content)
