"""The trimming strategies: each peer's documented behaviour on plain chats, the shared
guarantees (pinned head, user first, same object when unchanged, reports), bad options, and a
property test over random agent histories: valid output, a sub-sequence of the input,
idempotent."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import (
    CacheStable,
    ClearToolResults,
    ContextStrategy,
    CtxtrimError,
    FitContextWindow,
    HeadAndTail,
    ImageBlock,
    InvalidMessage,
    InvalidStrategy,
    KeepLastMessages,
    KeepLastTurns,
    KeepRecentImages,
    MemoryContextStore,
    Message,
    MessageLog,
    Pipeline,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    TrimReport,
    TrimRounds,
    TruncateToolOutputs,
    validate,
)
from ctxtrim.strategies import SKIPPED_META_KEY, clip_text

from helpers import agent_session, call, results
from strategies import broken_histories, histories


def chat(turns: int, *, system: bool = True) -> list[Message]:
    """A plain chat: ``u0 a0 u1 a1 ...`` after an optional system prompt."""
    out = [Message.system("sys")] if system else []
    for i in range(turns):
        out += [Message.user(f"u{i}"), Message.assistant(f"a{i}")]
    return out


def session(turns: int, rounds: int) -> list[Message]:
    """A system prompt, then ``turns`` user turns of ``rounds`` tool rounds and an answer."""
    out = [Message.system("You are terse.")]
    for t in range(turns):
        out.append(Message.user(f"question {t}"))
        for r in range(rounds):
            out += [call(f"step {t}.{r}", f"t{t}_{r}"), results(f"t{t}_{r}")]
        out.append(Message.assistant(f"answer {t}"))
    return out


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text or m.role[0] for m in messages]


# --------------------------------------------------------------------------------------------
# Shared guarantees


ALL = [
    KeepLastTurns(2),
    TrimRounds(2),
    KeepLastMessages(3),
    HeadAndTail(2, 2),
    FitContextWindow(60),
    TruncateToolOutputs(3, marker="~"),  # a short marker: the results here are short
    ClearToolResults(10, keep=1),
    Pipeline(TruncateToolOutputs(3), FitContextWindow(60)),
    CacheStable(TruncateToolOutputs(3), high=80, low=40),
]


@pytest.mark.parametrize("strategy", ALL, ids=repr)
def test_nothing_to_do_returns_the_same_list_object(strategy: ContextStrategy) -> None:
    short = [Message.user("hi"), Message.assistant("hello")]
    assert strategy(short) is short
    assert strategy.describe(short).unchanged


@pytest.mark.parametrize("strategy", ALL, ids=repr)
def test_output_is_valid_and_idempotent_on_an_agent_session(strategy: ContextStrategy) -> None:
    history = session(6, 4)
    out = strategy(history)
    assert out is not history  # every strategy above has something to do here
    assert validate(out) == []
    assert strategy(out) is out
    report = strategy.describe(history)
    assert report.messages_after == len(out)
    assert report.dropped_messages == len(history) - len(out) + report.inserted


@pytest.mark.parametrize("strategy", ALL, ids=repr)
def test_input_is_never_mutated(strategy: ContextStrategy) -> None:
    history = session(5, 3)
    before = list(history)
    strategy(history)
    strategy.describe(history)
    assert history == before and all(a is b for a, b in zip(history, before, strict=True))


@pytest.mark.parametrize("strategy", ALL, ids=repr)
def test_log_and_store_inputs_give_the_same_result_as_the_list(
    strategy: ContextStrategy,
) -> None:
    history = session(5, 4)
    store = MemoryContextStore(history)
    log = asyncio.run(store.load_log())
    assert strategy.apply(log) == strategy(history)
    assert strategy.apply(store) == strategy(history)
    assert strategy.describe(log) == strategy.describe(history)


def test_cached_counts_of_a_store_are_used_not_recounted() -> None:
    class Counter:
        calls = 0

        def count_text(self, text: str) -> int:
            return len(text)

        def count_message(self, message: Message) -> int:
            Counter.calls += 1
            return 100

    history = agent_session(10)
    store = MemoryContextStore(history, counter=Counter())
    appended = Counter.calls
    report = FitContextWindow(450).describe(store)
    assert Counter.calls == appended  # the store counted each message once, at append
    assert report.tokens_before == 100 * len(history)
    assert report.tokens_after <= 450


def test_pinned_head_keeps_system_and_task() -> None:
    history = agent_session(40)
    out = FitContextWindow(120)(history)
    assert out[:2] == history[:2]  # the system prompt and "Find the bug."
    assert out[-1] is history[-1]


def test_assistant_greeting_before_the_task_is_dropped_not_the_task() -> None:
    history = [
        Message.system("sys"),
        Message.assistant("Hello! How can I help?"),
        Message.user("Fix the build."),
        *agent_session(20, system=False)[1:],
    ]
    out = TrimRounds(1)(history)
    assert texts(out[:2]) == ["sys", "Fix the build."]
    assert validate(out) == []


def test_pin_task_false_still_opens_with_a_user_turn() -> None:
    out = KeepLastMessages(3, pin_task=False)(chat(6))
    assert out[0].role == "system" and out[1].role == "user"
    assert validate(out) == []


def test_start_with_user_false_allows_an_assistant_first_suffix() -> None:
    out = KeepLastMessages(3, pin_task=False, start_with_user=False)(chat(6))
    assert texts(out) == ["sys", "a4", "u5", "a5"]


def test_report_fields() -> None:
    history = chat(10)
    report = KeepLastTurns(3).describe(history)
    assert isinstance(report, TrimReport)
    assert report.dropped == tuple(range(2, 15))  # a0 .. a6; u0 is the pinned task
    assert report.dropped_messages == 13
    assert report.dropped_turns == 6  # u1 .. u6
    assert report.messages_before == 21 and report.messages_after == 8
    assert report.tokens_after < report.tokens_before
    assert not report.over_budget and report.budget is None
    assert report.strategy == "KeepLastTurns(3)"


def test_plain_sequences_and_bad_inputs() -> None:
    history = tuple(chat(5))
    out = KeepLastTurns(1)(history)
    assert isinstance(out, list) and texts(out) == ["sys", "u0", "u4", "a4"]
    with pytest.raises(TypeError, match="load_log"):
        KeepLastTurns(1).apply(42)  # type: ignore[call-overload]
    with pytest.raises(InvalidMessage, match=r"messages\[1\]"):
        KeepLastTurns(1)([Message.user("x"), {"role": "user"}])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: KeepLastTurns(0), "n must be >= 1"),
        (lambda: KeepLastTurns(True), "n must be an int"),
        (lambda: TrimRounds(-1), "max_rounds"),
        (lambda: KeepLastMessages(0), "n must be"),
        (lambda: HeadAndTail(1, 0), "tail"),
        (lambda: HeadAndTail(1, 1, placeholder="skipped"), "placeholder"),
        (lambda: FitContextWindow(0), "max_tokens"),
        (lambda: FitContextWindow(2**63), r"max_tokens must be <= 9223372036854775807"),
        (lambda: KeepLastMessages(10**30), r"n must be <= 9223372036854775807"),
        (lambda: FitContextWindow(100, reserve_tokens=100), "reserve_tokens"),
        (lambda: FitContextWindow(100, counter=3), "TokenCounter"),  # type: ignore[arg-type]
        (lambda: TruncateToolOutputs(0), "max_chars"),
        (lambda: TruncateToolOutputs(5, marker=None), "marker"),  # type: ignore[arg-type]
        (lambda: ClearToolResults(10, keep=-1), "keep"),
        (lambda: ClearToolResults(10, exclude_tools="grep"), "exclude_tools"),
        (lambda: Pipeline(KeepLastTurns(1), len), "step 1"),  # type: ignore[arg-type]
        (lambda: CacheStable(KeepLastTurns(1), high=10, low=10), "low"),
        (lambda: CacheStable(len, high=10, low=5), "ContextStrategy"),  # type: ignore[arg-type]
        (lambda: KeepLastTurns(1, pin_task=1), "pin_task"),  # type: ignore[arg-type]
    ],
)
def test_bad_options_raise_a_typed_error(make: object, match: str) -> None:
    with pytest.raises(InvalidStrategy, match=match) as info:
        make()  # type: ignore[operator]
    assert isinstance(info.value, CtxtrimError) and isinstance(info.value, ValueError)


# --------------------------------------------------------------------------------------------
# Each strategy's peer behaviour on plain chats


def test_keep_last_turns_keeps_n_user_turns_like_agentflow() -> None:
    assert texts(KeepLastTurns(2)(chat(5))) == ["sys", "u0", "u3", "a3", "u4", "a4"]
    history = chat(2)
    assert KeepLastTurns(2)(history) is history


def test_keep_last_turns_keeps_a_turns_tool_rounds_whole() -> None:
    history = [
        Message.user("task"),
        Message.assistant("a"),
        Message.user("q2"),
        call("c", "t1"),
        results("t1"),
        Message.assistant("done"),
    ]
    out = KeepLastTurns(1)(history)
    assert texts(out) == ["task", "q2", "c", "u", "done"]


def test_trim_rounds_keeps_the_last_rounds_like_agentix() -> None:
    out = TrimRounds(3)(agent_session(10))
    # system, task, then the last three rounds: step 8, step 9 (call + result), "Found it."
    assert texts(out) == [
        "You are terse.",
        "Find the bug.",
        "step 8",
        "u",
        "step 9",
        "u",
        "Found it.",
    ]


def test_keep_last_messages_like_autogen_buffered_with_the_system_prompt_pinned() -> None:
    assert texts(KeepLastMessages(2)(chat(4))) == ["sys", "u0", "u3", "a3"]
    # At most 2 besides the head, never between a call and its result: the last two are a
    # result and the reply after it, so the window keeps only the reply.
    out, report = KeepLastMessages(2).apply(agent_session(5), report=True)
    assert texts(out) == ["You are terse.", "Find the bug.", "Found it."]
    assert report.over_count == 0
    # Unless the newest round alone is longer: then it is kept whole, and the report says by
    # how many messages it is past the count.
    out, report = KeepLastMessages(1).apply(agent_session(5)[:-1], report=True)
    assert texts(out) == ["You are terse.", "Find the bug.", "step 4", "u"]
    assert report.over_count == 1


def test_head_and_tail_states_the_true_number_skipped() -> None:
    history = chat(6, system=False)  # 12 messages
    out = HeadAndTail(2, 4)(history)
    assert texts(out[:2]) == ["u0", "a0"]
    assert out[2].text == "[6 earlier messages skipped]" and out[2].role == "user"
    assert out[3:] == history[8:]


def test_head_and_tail_again_on_a_longer_history_adds_to_the_count() -> None:
    strategy = HeadAndTail(2, 4)
    history = chat(6, system=False)
    out = strategy(history)
    grown = out + chat(3, system=False)  # six more messages arrive
    again = strategy(grown)
    assert again[2].text == "[12 earlier messages skipped]"
    assert again[2].meta == {SKIPPED_META_KEY: 12}
    assert strategy(again) is again


def test_fit_context_window_keeps_the_longest_suffix_that_fits() -> None:
    history = chat(30)
    out = FitContextWindow(100)(history)
    report = FitContextWindow(100).describe(history)
    assert report.tokens_after <= 100 and not report.over_budget
    # One more message would not fit: the cut is the earliest that does.
    log = MessageLog(history)
    kept_from = history.index(out[2])
    assert log.tokens(0, 2) + log.tokens(kept_from - 1) > 100


def test_fit_context_window_reserve_tokens_and_counter() -> None:
    class Chars:
        def count_text(self, text: str) -> int:
            return len(text)

        def count_message(self, message: Message) -> int:
            return 10

    history = chat(20)
    out = FitContextWindow(100, reserve_tokens=40, counter=Chars())(history)
    assert len(out) == 6  # 60 tokens: sys, u0, then the last four messages
    assert texts(out) == ["sys", "u0", "u18", "a18", "u19", "a19"]


def test_fit_context_window_over_budget_keeps_the_minimum_and_says_so() -> None:
    huge = "word " * 5000
    history = [Message.system("sys"), Message.user("task"), call(huge, "t"), results("t")]
    history += [Message.assistant(huge)]
    strategy = FitContextWindow(500)
    out = strategy(history)
    report = strategy.describe(history)
    assert report.over_budget and report.budget == 500
    assert texts(out) == ["sys", "task", huge]  # the newest round alone
    assert validate(out) == []
    assert strategy(out) is out


def test_truncate_tool_outputs_clips_old_results_like_agentix() -> None:
    history = [
        Message.user("task"),
        call("", "t1"),
        Message.tool_results(ToolResultBlock("t1", "x" * 100)),
        Message.user("next"),
        call("", "t2"),
        Message.tool_results(ToolResultBlock("t2", "y" * 100)),
    ]
    strategy = TruncateToolOutputs(10, keep_recent_turns=1)
    out = strategy(history)
    assert out[2].tool_results[0].content == "x" * 10 + "...[truncated]"
    assert out[5] is history[5]  # the newest turn is left alone
    assert strategy(out) is out
    assert strategy.describe(history).changed == (2,)
    all_old = TruncateToolOutputs(10)(history)
    assert all_old[5].tool_results[0].content == "y" * 10 + "...[truncated]"


def test_truncate_tool_outputs_list_content_clips_text_keeps_images() -> None:
    from ctxtrim import ImageBlock

    image = ImageBlock("image/png", b"\x89PNG")
    history = [
        Message.user("task"),
        call("", "t1"),
        Message.tool_results(ToolResultBlock("t1", [TextBlock("z" * 50), image])),  # type: ignore[arg-type]  # a list is accepted and stored as a tuple
    ]
    out = TruncateToolOutputs(5, marker="…")(history)
    assert out[2].tool_results[0].content == (TextBlock("zzzzz…"), image)


@pytest.mark.parametrize(
    ("text", "n", "expected"),
    [
        ("héllo", 2, "hé"),
        ("e\u0301e\u0301e\u0301", 3, "e\u0301"),  # never strip an accent from its letter
        ("ab👍🏽cd", 3, "ab"),  # nor a skin tone from its emoji
        ("a👨‍👩‍👧b", 4, "a"),  # nor a ZWJ family in half
        ("🇫🇷🇩🇪", 3, "🇫🇷"),  # nor a flag pair
        ("中文字符", 2, "中文"),
        ("short", 10, "short"),
    ],
)
def test_clip_text_never_splits_a_grapheme(text: str, n: int, expected: str) -> None:
    assert clip_text(text, n) == expected
    expected.encode("utf-8")  # always encodable: no lone surrogate


def _tool_history(n: int, *, summaries: bool = False) -> list[Message]:
    out = [Message.user("task")]
    for i in range(n):
        name = "read_file" if i % 2 == 0 else "grep"
        out.append(Message.assistant("", tool_uses=[(f"t{i}", name, {"path": f"f{i}"})]))
        summary = f"summary {i}" if summaries else None
        out.append(
            Message.tool_results(ToolResultBlock(f"t{i}", "data " * 200, compact_summary=summary))
        )
    out.append(Message.assistant("done"))
    return out


def test_clear_tool_results_like_anthropic_context_editing() -> None:
    history = _tool_history(6)
    strategy = ClearToolResults(100, keep=2)
    out = strategy(history)
    contents = [m.tool_results[0].content for m in out if m.tool_results]
    assert contents[:4] == ["[tool result cleared]"] * 4
    assert contents[4:] == ["data " * 200] * 2  # the last two tool uses keep their results
    assert strategy(out) is out
    assert validate(out) == []
    assert ClearToolResults(10**9)(history) is history  # under the trigger: nothing


def test_clear_tool_results_uses_compact_summary_and_options() -> None:
    history = _tool_history(4, summaries=True)
    out = ClearToolResults(100, keep=0, exclude_tools=("grep",), clear_tool_inputs=True)(history)
    results_ = [m.tool_results[0] for m in out if m.tool_results]
    assert [r.content for r in results_[::2]] == ["summary 0", "summary 2"]
    assert all(r.content == "data " * 200 for r in results_[1::2])  # grep is excluded
    calls = [m.tool_uses[0] for m in out if m.tool_uses]
    assert [c.input for c in calls] == [{}, {"path": "f1"}, {}, {"path": "f3"}]


def test_clear_tool_results_clear_at_least_skips_a_small_saving() -> None:
    history = _tool_history(4)
    assert ClearToolResults(100, keep=3, clear_at_least=10_000)(history) is history
    assert ClearToolResults(100, keep=3, clear_at_least=100)(history) is not history


def test_pipeline_runs_in_order_and_reports_against_the_input() -> None:
    history = agent_session(40)
    pipeline = Pipeline(TruncateToolOutputs(4), FitContextWindow(200))
    out = pipeline(history)
    report = pipeline.describe(history)
    assert report.messages_after == len(out)
    assert all(history[i].tool_results for i in report.changed)
    assert set(report.changed).isdisjoint(report.dropped)
    assert report.tokens_after <= 200
    assert pipeline(out) is out
    assert Pipeline()(history) is history


def test_cache_stable_prefix_changes_only_at_trims() -> None:
    """500 turns of an agent loop, trimmed before every model call: the kept prefix (what a
    provider caches) changes only at trims, and trims are at least (high - low) / turn size
    turns apart."""
    high, low = 3_000, 1_500
    strategy = CacheStable(FitContextWindow(10_000), high=high, low=low)
    store = MemoryContextStore([Message.system("You are terse."), Message.user("Find the bug.")])
    turn_tokens = 0
    previous: list[Message] | None = None
    trims: list[int] = []
    loop = asyncio.new_event_loop()
    try:
        for turn in range(500):
            step = [call(f"step {turn}", f"t{turn}"), results(f"t{turn}")]
            loop.run_until_complete(store.append_many(step))
            log = loop.run_until_complete(store.load_log())
            turn_tokens = max(turn_tokens, log.tokens(len(log) - 2))
            window = strategy.apply(log)
            assert validate(window) == []
            report = strategy.describe(log)
            assert report.tokens_after <= high
            if previous is not None and window[: len(previous)] != previous:
                trims.append(turn)
                assert window[:2] == previous[:2]  # the pinned head survives every trim
            elif previous is not None:
                assert window[: len(previous)] == previous  # byte-identical prefix
            previous = window
    finally:
        loop.close()
    assert len(trims) >= 10
    gaps = [b - a for a, b in itertools.pairwise(trims)]
    assert min(gaps) >= (high - low) / turn_tokens


# --------------------------------------------------------------------------------------------
# Property: every strategy, random histories and parameters


_PIN = st.booleans()


@st.composite
def any_strategy(draw: st.DrawFn) -> tuple[ContextStrategy, bool]:
    """A random strategy, and whether its output may open with an assistant message."""
    pin, first = draw(_PIN), draw(_PIN)
    kinds: list[ContextStrategy] = [
        KeepLastTurns(draw(st.integers(1, 5)), pin_task=pin, start_with_user=first),
        TrimRounds(draw(st.integers(1, 6)), pin_task=pin, start_with_user=first),
        KeepLastMessages(draw(st.integers(1, 15)), pin_task=pin, start_with_user=first),
        HeadAndTail(draw(st.integers(0, 5)), draw(st.integers(1, 8)), pin_task=pin),
        FitContextWindow(draw(st.integers(1, 3_000)), pin_task=pin, start_with_user=first),
        TruncateToolOutputs(draw(st.integers(1, 50)), keep_recent_turns=draw(st.integers(0, 2))),
        ClearToolResults(
            draw(st.integers(0, 2_000)),
            keep=draw(st.integers(0, 4)),
            clear_at_least=draw(st.sampled_from([0, 0, 50, 500])),
            exclude_tools=draw(st.sampled_from([(), ("grep",), ("read_file", "run_tests")])),
            clear_tool_inputs=draw(st.booleans()),
        ),
        KeepRecentImages(draw(st.integers(0, 3)), chunk=draw(st.integers(1, 3))),
    ]
    base = draw(st.sampled_from(kinds))
    wrap = draw(st.integers(0, 3))
    if wrap == 1:
        return Pipeline(TruncateToolOutputs(draw(st.integers(1, 30))), base), not first
    if wrap == 2:
        low = draw(st.integers(0, 2_000))
        wrapped = CacheStable(
            base,
            high=low + draw(st.integers(1, 2_000)),
            low=low,
            pin_task=pin,
            start_with_user=first,
        )
        return wrapped, not first
    return base, not first


def _same_message(a: Message, b: Message) -> bool:
    """``a`` is ``b``, or ``b`` with tool results / tool inputs rewritten in place."""
    if a is b:
        return True
    if a.role != b.role or len(a.content) != len(b.content):
        return False
    for x, y in zip(a.content, b.content, strict=True):
        if x == y:
            continue
        if type(x) is ToolResultBlock and type(y) is ToolResultBlock:
            if x.tool_use_id == y.tool_use_id and x.is_error == y.is_error:
                continue
        if type(x) is ToolUseBlock and type(y) is ToolUseBlock:
            if (x.id, x.name) == (y.id, y.name):
                continue
        if type(x) is TextBlock and type(y) is ImageBlock:
            continue  # an image replaced by its placeholder (KeepRecentImages)
        return False
    return True


def _is_subsequence(out: Sequence[Message], history: Sequence[Message]) -> bool:
    i = 0
    for m in out:
        if m.meta and SKIPPED_META_KEY in m.meta:
            continue
        while i < len(history) and not _same_message(m, history[i]):
            i += 1
        if i == len(history):
            return False
        i += 1
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), drawn=any_strategy())
def test_every_strategy_keeps_histories_valid_and_is_idempotent(
    history: list[Message], drawn: tuple[ContextStrategy, bool]
) -> None:
    strategy, allowed_first = drawn
    pending = {v.tool_use_id for v in validate(history) if v.kind == "dangling_call"}
    out = strategy(history)
    for v in validate(out):
        if v.kind == "dangling_call" and v.tool_use_id in pending:
            continue
        if v.kind == "non_user_first_turn" and allowed_first:
            continue
        raise AssertionError(f"{strategy!r}: {v}\n{json.dumps([m.to_dict() for m in out])[:2000]}")
    assert _is_subsequence(out, history)
    assert strategy(out) == out, repr(strategy)
    assert strategy(out) is out, repr(strategy)
    report = strategy.describe(history)
    assert report.messages_after == len(out)
    assert report.unchanged == (out is history)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=broken_histories(), drawn=any_strategy())
def test_broken_histories_get_no_new_violations(
    history: list[Message], drawn: tuple[ContextStrategy, bool]
) -> None:
    """A strategy never breaks a pair the input had intact (a fault the input already had,
    such as a result before its call, may stay or change kind), and stays idempotent."""
    strategy, _ = drawn
    out = strategy(history)
    faulty = {v.tool_use_id for v in validate(history)}
    for v in validate(out):
        assert v.kind == "non_user_first_turn" or v.tool_use_id in faulty, f"{strategy!r}: {v}"
    assert strategy(out) == out, repr(strategy)


# --------------------------------------------------------------------------------------------
# Plain lists: calls on a list that grows or is edited in place


_CUTS = st.sampled_from(
    [
        lambda: FitContextWindow(300),
        lambda: FitContextWindow(60, pin_task=False),
        lambda: KeepLastTurns(2),
        lambda: TrimRounds(2, pin_task=False),
        lambda: KeepLastMessages(5),
    ]
)


@given(
    history=st.one_of(histories(max_rounds=20), broken_histories()),
    make=_CUTS,
    edits=st.lists(
        st.tuples(
            st.sampled_from(["append", "replace", "insert", "delete", "swap"]), st.integers()
        ),
        max_size=6,
    ),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_calls_on_an_edited_list_match_a_fresh_list(
    history: list[Message], make: Any, edits: list[tuple[str, int]]
) -> None:
    # A strategy reads a list from its ends and keeps its head and end for the next call,
    # checked against the messages there then: whatever happened to the list between calls,
    # the answer is what a new strategy gives on a fresh list, and the same as on a
    # MessageLog of the same messages.
    strategy = make()
    spare = [Message.user("late question"), Message.assistant("late answer")]
    items = list(history)
    strategy(items)
    for op, k in edits:
        at = k % (len(items) + 1)
        if op == "append":
            items.append(spare[k % 2])
        elif op == "insert":
            items.insert(at, spare[k % 2])
        elif items and op == "replace":
            items[at % len(items)] = spare[k % 2]
        elif items and op == "delete":
            del items[at % len(items)]
        elif len(items) > 1 and op == "swap":
            i, j = at % len(items), k // 7 % len(items)
            items[i], items[j] = items[j], items[i]
        out = strategy(items)
        assert out == make()(list(items))
        assert out == strategy.apply(MessageLog(items))
        assert (out is items) == strategy.describe(items).unchanged


def test_a_strategy_s_tail_holds_its_last_window_and_lets_go_of_the_rest() -> None:
    # The strategy keeps the head and end of the list its last call read (a reference to
    # each message, so a key is never a reused address): about the window, or the last 64
    # messages, whichever is more, however long the list grows; a message no longer needed
    # is released by a later call.
    fit = FitContextWindow(300)
    history = session(2, 1)
    first = history[-1]
    before = sys.getrefcount(first)
    fit(history)
    assert sys.getrefcount(first) == before + 1
    window_sizes = []
    for i in range(200):
        history += [Message.user(f"question {i}"), Message.assistant(f"answer {i} " * 20)]
        window_sizes.append(len(fit(history)))
    tail = fit._tail
    assert tail is not None
    assert len(tail) <= max(*window_sizes, 64) + 8
    assert sys.getrefcount(first) == before


def test_cache_stable_around_head_and_tail_is_idempotent() -> None:
    # Found by the property test: without a pinned task, the window opened at the placeholder
    # HeadAndTail had inserted, so a second call trimmed what the first had kept.
    history = [
        Message.user("Fix the failing test in parser.py."),
        Message.tool_results(("orphan_0", "?")),
        Message.assistant(tool_uses=[("toolu_0000", "read_file", {})]),
    ]
    strategy = CacheStable(
        HeadAndTail(1, 1, pin_task=False), high=1, low=0, pin_task=False, start_with_user=True
    )
    once = strategy(history)
    assert strategy(once) == once


@pytest.mark.parametrize(
    "strategy",
    [
        FitContextWindow(200),
        KeepLastTurns(1),
        HeadAndTail(1, 2),
        Pipeline(TruncateToolOutputs(10), FitContextWindow(200)),
        CacheStable(FitContextWindow(300), high=250, low=100),
    ],
    ids=repr,
)
def test_apply_with_report_runs_once_and_matches_describe(
    strategy: ContextStrategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = session(3, 2)
    runs: list[int] = []
    real = type(strategy)._run

    def counted(self: ContextStrategy, inp: Any) -> Any:
        runs.append(1)
        return real(self, inp)

    monkeypatch.setattr(type(strategy), "_run", counted)
    out, report = strategy.apply(history, report=True)
    assert len(runs) == 1
    assert out == strategy(history)
    assert report == strategy.describe(history)
