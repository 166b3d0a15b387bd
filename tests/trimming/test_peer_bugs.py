"""Each pair-safety bug found in a peer, rebuilt in ctxtrim's API, showing ctxtrim gets it right.

The histories mirror the peers' own reproductions (same shapes, same parameters where they
translate); each section names the peer and, where there is one, its upstream issue.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from ctxtrim import (
    ClearToolResults,
    ContextStrategy,
    FitContextWindow,
    HeadAndTail,
    HeuristicTokenCounter,
    KeepLastMessages,
    KeepLastTurns,
    Message,
    TrimRounds,
    TruncateToolOutputs,
    validate,
)

from helpers import agent_session, call, results

_COUNT = HeuristicTokenCounter().count_message


class PerMessage:
    """A counter charging a flat price per message (autogen's and LangChain's repro)."""

    def __init__(self, price: int) -> None:
        self.price = price
        self.seen: list[Message] = []

    def count_text(self, text: str) -> int:
        return self.price

    def count_message(self, message: Message) -> int:
        self.seen.append(message)
        return self.price


def show(messages: Sequence[Message]) -> str:
    """``S U C1 R1 A`` notation: system, user, call 1, result 1, assistant."""
    out = []
    for m in messages:
        if m.tool_uses:
            out.append("C" + m.tool_uses[0].id[1:])
        elif m.tool_results:
            out.append("R" + m.tool_results[0].tool_use_id[1:])
        else:
            out.append({"system": "S", "user": "U", "assistant": "A"}[m.role])
    return " ".join(out)


def new_violations(before: Sequence[Message], after: Sequence[Message]) -> list[str]:
    """Violations in ``after`` that ``before`` did not already have (kind, tool id)."""
    old = {(v.kind, v.tool_use_id) for v in validate(before)}
    return [str(v) for v in validate(after) if (v.kind, v.tool_use_id) not in old]


CUTTERS = [
    *[KeepLastTurns(n) for n in (1, 2)],
    *[TrimRounds(n) for n in (1, 2, 3)],
    *[KeepLastMessages(n) for n in range(1, 9)],
    *[HeadAndTail(h, t) for h in (0, 1, 2, 3) for t in (1, 2, 3)],
    *[FitContextWindow(b) for b in (1, 30, 60, 90)],
]


# -- agentflow SummaryContextManager keeps tool results whose call it summarised ---------------


@pytest.mark.parametrize("strategy", CUTTERS, ids=repr)
def test_4_1_agentflow_recent_split_never_orphans_tool_results(
    strategy: ContextStrategy,
) -> None:
    # hist = S q1 C1 R1 a1 q2 C2 R2 R3 a2 (R3 answers no call: an orphan already in the input)
    hist = [
        Message.system("S"),
        Message.user("q1"),
        call("", "c1"),
        results("c1"),
        Message.assistant("a1"),
        Message.user("q2"),
        call("", "c2"),
        results("c2"),
        results("c3"),
        Message.assistant("a2"),
    ]
    out = strategy(hist)
    assert new_violations(hist, out) == []
    # agentflow kept ['system', 'tool', 'tool', 'assistant']: ours never opens with results
    first = next(m for m in out if m.role != "system")
    assert first.is_real_user


# -- autogen TokenLimited orphans results and calls (microsoft/autogen#7955) -------------------


def _autogen_hist() -> list[Message]:
    hist = [Message.system("sys"), Message.user("task")]
    for i in (1, 2, 3):
        hist += [call("", f"c{i}"), results(f"c{i}")]
    return [*hist, Message.assistant("done")]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(80, "S U C2 R2 C3 R3 A"), (60, "S U C3 R3 A"), (50, "S U C3 R3 A")],
)
def test_4_2_autogen_token_limit_keeps_calls_and_results_together(
    limit: int, expected: str
) -> None:
    # autogen: 80 -> "S U C1 R1 R2 C3 R3 A", 60 -> "S U C1 C3 R3 A", 50 -> "S U C1 R3 A"
    hist = _autogen_hist()
    strategy = FitContextWindow(limit, counter=PerMessage(10))
    out = strategy(hist)
    assert show(out) == expected
    assert validate(out) == []
    assert strategy.describe(hist).tokens_after <= limit


def test_4_2_and_4_10_token_counter_runs_once_per_message() -> None:
    # autogen recounts the whole list after every pop (quadratic); ctxtrim counts each message
    # at most once, ever: the count is cached on the message, so a second call (or another
    # strategy with the same counter) counts nothing again.
    counter = PerMessage(10)
    hist = _autogen_hist()
    fit = FitContextWindow(50, counter=counter)
    first = fit(hist)
    assert len({id(m) for m in counter.seen}) == len(counter.seen) <= len(hist)
    seen = len(counter.seen)
    assert fit(hist) == first
    assert FitContextWindow(50, counter=counter).describe(hist).messages_after == len(first)
    assert len(counter.seen) == len(hist) and seen <= len(hist)


# -- autogen HeadAndTail's placeholder under-counts (microsoft/autogen#8070) -------------------


def test_4_4_autogen_head_and_tail_placeholder_states_the_true_count() -> None:
    hist = [Message.user("task")]
    for i in (1, 2):
        hist += [call("", f"c{i}"), results(f"c{i}")]
    hist.append(Message.assistant("done"))
    out = HeadAndTail(2, 2)(hist)
    placeholder = next(m for m in out if m.meta)
    skipped = int(re.findall(r"\d+", placeholder.text)[0])
    # autogen returned 3 of 6 messages and said "Skipped 2 messages."
    assert skipped == len(hist) - (len(out) - 1)
    assert validate(out) == []


@pytest.mark.parametrize("head", range(6))
@pytest.mark.parametrize("tail", range(1, 6))
def test_4_4_placeholder_count_is_true_for_every_head_and_tail(head: int, tail: int) -> None:
    hist = agent_session(6)
    out = HeadAndTail(head, tail)(hist)
    if out is hist:
        return
    (placeholder,) = [m for m in out if m.meta]
    assert placeholder.meta is not None
    assert placeholder.meta["ctxtrim_skipped"] == len(hist) - (len(out) - 1)
    assert validate(out) == []


# -- langchain-core trim_messages orphans (langchain-ai/langchain#33245) -----------------------


def _langchain_hist() -> list[Message]:
    return _autogen_hist()  # S H C1 T1 C2 T2 C3 T3 A in LangChain's notation


def test_4_5_langchain_last_strategy_never_leads_with_a_tool_message() -> None:
    # trim_messages(max_tokens=4, token_counter=len, strategy="last") -> "T A* T A"
    out = FitContextWindow(4, counter=PerMessage(1))(_langchain_hist())
    assert show(out) == "S U A"
    assert validate(out) == []


def test_4_5_langchain_start_on_human_collapse_keeps_the_task() -> None:
    # include_system=True, start_on="human" returned only the system message: a one-task
    # agent loop cannot be trimmed that way. ctxtrim pins the task and keeps the newest round.
    out = FitContextWindow(4, counter=PerMessage(1))(_langchain_hist())
    assert out[1].text == "task" and len(out) > 2


@pytest.mark.parametrize("head", range(1, 8))
def test_4_5_langchain_first_strategy_head_never_ends_on_a_call(head: int) -> None:
    # strategy="first", max=3 -> "S H A*": ends on a call with no result
    hist = _langchain_hist()
    out = HeadAndTail(head, 1)(hist)
    assert validate(out) == []


def test_4_5_langchain_counter_sees_each_message_once_in_order() -> None:
    # LangChain handed its counter ToolMessages before their AIMessage (reversed input) and
    # failed on a per-message counter ('list' object has no attribute 'content').
    # ctxtrim hands it one Message at a time, each at most once (the head, then back from the
    # end as far as the budget needs).
    counter = PerMessage(1)
    hist = _langchain_hist()
    out = FitContextWindow(4, counter=counter)(hist)
    assert all(type(m) is Message for m in counter.seen)
    assert len({id(m) for m in counter.seen}) == len(counter.seen) <= len(hist)
    assert validate(out) == []


# -- openai-agents get_items(limit) returns an orphan output -----------------------------------


@pytest.mark.parametrize("n", range(1, 6))
def test_4_6_openai_agents_history_limit_never_starts_with_a_function_output(n: int) -> None:
    # get_items(limit=3) -> [function_call_output c1, function_call c2, function_call_output c2]
    items = [Message.user("q1"), call("", "c1"), results("c1"), call("", "c2"), results("c2")]
    for strategy in (KeepLastMessages(n), KeepLastMessages(n, pin_task=False)):
        out = strategy(items)
        assert validate(out) == []
        assert out[0].is_real_user


# -- axio keep_recent=0 raises IndexError ------------------------------------------------------


@pytest.mark.parametrize(
    "strategy",
    [
        ClearToolResults(0, keep=0),
        TruncateToolOutputs(1, keep_recent_turns=0),
        HeadAndTail(0, 1),
        FitContextWindow(1),
        KeepLastMessages(1),
        TrimRounds(1),
    ],
    ids=repr,
)
def test_4_7_keep_zero_style_edge_cases(strategy: ContextStrategy) -> None:
    # axio's _find_safe_boundary(keep_recent=0) raised IndexError
    for hist in ([], [Message.user("hi")], agent_session(0), agent_session(5)):
        out = strategy(hist)
        assert validate(out) == validate(hist) or new_violations(hist, out) == []
        assert strategy(out) == out


# -- agentix TrimRounds drops the question that caused a call ----------------------------------


@pytest.mark.parametrize("k", range(1, 7))
def test_4_8_agentix_user_question_stays_with_the_call_it_caused(k: int) -> None:
    chat = [
        Message.system("sys"),
        Message.user("u1"),
        Message.assistant("a1"),
        Message.user("u2"),
        call("", "c2"),
        results("c2"),
        Message.assistant("a2"),
        Message.user("u3"),
    ]
    # agentix TrimRounds(2): "system:sys user:u1 assistant:* tool:r assistant:a2 user:u3"
    out = TrimRounds(k)(chat)
    if chat[4] in out:
        assert chat[3] in out  # u2 is kept whenever c2 is
    assert validate(out) == []


@pytest.mark.parametrize("pin_task", [True, False])
def test_4_8_agentix_assistant_first_transcript_keeps_a_user_turn(pin_task: bool) -> None:
    greet = [
        Message.system("sys"),
        Message.assistant("hello"),
        Message.user("u1"),
        call("", "c1"),
        results("c1"),
        Message.assistant("done"),
    ]
    # agentix TrimRounds(1): "system:sys assistant:done" (no user message at all)
    out = TrimRounds(1, pin_task=pin_task)(greet)
    assert any(m.is_real_user for m in out)
    assert [v.kind for v in validate(out)] == []


# -- agentflow never trims a one-task loop; hoisted system messages ----------------------------


def test_4_12_single_task_agent_loop_with_hundreds_of_rounds_still_trims() -> None:
    # agentflow kept all 102 messages of a one-task loop; LangChain's start_on="human"
    # collapsed it; agentix kept everything over budget. ctxtrim cuts between rounds.
    hist = agent_session(400)
    strategy = FitContextWindow(2_000)
    out = strategy(hist)
    report = strategy.describe(hist)
    assert not report.over_budget and report.tokens_after <= 2_000
    assert len(out) < len(hist) / 5
    assert out[:2] == hist[:2] and out[-1] is hist[-1]
    assert validate(out) == []
    assert TrimRounds(10)(hist)[2:] == hist[-19:]


def test_4_12_mid_conversation_system_message_is_never_hoisted() -> None:
    # agentflow moved mid-conversation system messages to the front only when it trimmed
    hist = [Message.system("S0"), *agent_session(8, system=False)]
    hist.insert(10, Message.system("S-mid"))
    for strategy in (KeepLastMessages(12), FitContextWindow(150), TrimRounds(6)):
        out = strategy(hist)
        assert out[0].text == "S0"
        if hist[10] in out:
            mid = out.index(hist[10])
            assert out[mid - 1] is hist[9] and out[mid + 1] is hist[11]


@pytest.mark.parametrize(
    "strategy",
    [
        FitContextWindow(40),
        FitContextWindow(40, pin_task=False),
        KeepLastMessages(2),
        TrimRounds(1),
        KeepLastTurns(1),
    ],
    ids=repr,
)
def test_an_empty_first_user_message_never_yields_an_assistant_first_window(
    strategy: ContextStrategy,
) -> None:
    """``[Message("user", ()), call, result, call, result]`` is valid (it starts with a user
    message); a window of it that starts with an assistant message is not. With no real user
    message to start on, the window keeps the history from its first message."""
    history = [
        Message("user", ()),
        Message.assistant(tool_uses=[("t1", "ls", {})]),
        Message.tool_results(("t1", "a.txt " * 20)),
        Message.assistant(tool_uses=[("t2", "cat", {"path": "a.txt"})]),
        Message.tool_results(("t2", "x" * 200)),
    ]
    assert validate(history) == []
    window = strategy(history)
    assert validate(window) == [], (window, validate(window))


def _plain_run(n: int, words: int = 60) -> list[Message]:
    return [Message.assistant(f"reply {i} " + "word " * words) for i in range(n)]


def test_a_run_of_plain_assistant_messages_is_trimmed_like_any_rounds() -> None:
    """A system prompt, a question and ten assistant replies (a chat UI posting several, a
    model thinking out loud): each plain reply is a round of its own, so every strategy can
    cut inside the run; before, the run was one round no strategy cut into (all 12 kept,
    over budget)."""
    history = [Message.system("s"), Message.user("q"), *_plain_run(10)]
    total = sum(_COUNT(m) for m in history)
    fit = FitContextWindow(total // 2)
    window = fit(history)
    report = fit.describe(history)
    assert not report.over_budget and report.tokens_after <= total // 2
    assert window[:2] == history[:2] and window[2:] == history[len(history) - len(window) + 2 :]
    assert len(KeepLastMessages(3)(history)) == 2 + 3
    assert TrimRounds(2)(history) == [*history[:2], *history[-2:]]
    for w in (window, KeepLastMessages(3)(history), TrimRounds(2)(history)):
        assert validate(w) == []


def test_a_plain_run_after_tool_rounds_is_trimmed_within_budget() -> None:
    history = [Message.system("s"), Message.user("task")]
    for i in range(3):
        history += [
            Message.assistant(tool_uses=[(f"t{i}", "ls", {})]),
            Message.tool_results((f"t{i}", "a.txt " * 30)),
            Message.assistant(f"round {i} done"),
        ]
    history += _plain_run(8)
    total = sum(_COUNT(m) for m in history)
    for budget in (total // 3, total // 2, total - 10):
        window = FitContextWindow(budget)(history)
        assert not FitContextWindow(budget).describe(history).over_budget
        assert sum(_COUNT(m) for m in window) <= budget
        assert validate(window) == []
