"""The Rust `MessageLog` through its Python face: order, snapshots, forks, generations,
tokens, turns, pair-safe cuts, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import (
    InvalidMessage,
    InvalidTurnId,
    Message,
    MessageLog,
    StaleGenerationError,
    TurnId,
)

from helpers import agent_session, call, results, safe_cuts
from strategies import histories


def test_append_keeps_order() -> None:
    log = MessageLog()
    msgs = [Message.user(f"m{i}") for i in range(5)]
    for m in msgs:
        log.append(m)
    assert len(log) == 5
    assert log.to_list() == msgs
    assert log[0] is msgs[0] and log[-1] is msgs[-1]
    assert log.tail(2) == msgs[3:]
    assert log.tail(0) == []
    assert log.to_list(1, 3) == msgs[1:3]
    with pytest.raises(IndexError):
        log[5]


def test_snapshot_never_changes_after_later_writes() -> None:
    log = MessageLog(agent_session(3))
    before = log.to_list()
    snap = log.snapshot()
    log.append(Message.user("later"))
    assert snap.to_list() == before and len(snap) == len(before)
    log.replace_prefix(2, [Message.user("summary")], log.generation)
    assert snap.to_list() == before
    log.clear()
    assert snap.to_list() == before and snap.generation == 0
    with pytest.raises(TypeError, match="read-only"):
        snap.append(Message.user("x"))
    assert snap.read_only and not log.read_only


def test_fork_is_independent_both_ways() -> None:
    parent = MessageLog(agent_session(2))
    child = parent.fork()
    parent.append(Message.user("parent only"))
    child.append(Message.user("child only"))
    assert parent[-1].text == "parent only" and child[-1].text == "child only"
    assert len(parent) == len(child)
    child.clear()
    assert len(parent) > 0


@pytest.mark.parametrize("n", [64, 200, 1_000, 5_000])
def test_a_fork_of_a_long_log_reads_what_it_holds(n: int) -> None:
    """A long log's reads go through a list mirroring its newer part; a fork shares it, and
    its first own write copies only what its reads reach. Every read, near or far, of the
    fork, its parent and a snapshot still gives exactly their messages."""
    history = [Message.user(str(i)) for i in range(n)]
    log = MessageLog(history)
    assert log.tail(10) == history[-10:]  # the mirror starts near the end
    fork, snap = log.fork(), log.snapshot()
    extra = [Message.assistant(f"fork {i}") for i in range(3)]
    fork.extend(extra)
    log.append(Message.user("parent"))
    ours = history + extra
    for limit in (1, 5, 60, 300):
        assert fork.tail(limit) == ours[-limit:]
        assert snap.tail(limit) == history[-limit:]
    assert fork.to_list(n - 1, n + 2) == ours[n - 1 : n + 2]
    assert fork.to_list() == ours  # from the first message: the mirror is rebuilt from there
    assert fork.tail(4) == ours[-4:]
    assert log.to_list() == [*history, log[-1]] and log[-1].text == "parent"
    assert snap.to_list() == history
    again = fork.fork()
    again.append(Message.user("again"))
    assert again.tail(5) == [*ours[-4:], again[-1]]
    assert fork.tail(5) == ours[-5:]


def test_extend_is_atomic_and_names_the_bad_message() -> None:
    log = MessageLog([Message.user("keep")])
    with pytest.raises(InvalidMessage) as err:
        log.extend([Message.user("a"), Message.user("b"), "not a message"])  # type: ignore[list-item]
    assert err.value.path == "messages[2]"
    assert isinstance(err.value, ValueError)
    assert [m.text for m in log.to_list()] == ["keep"]


def test_append_rejects_non_messages() -> None:
    log = MessageLog()
    with pytest.raises(InvalidMessage, match=r"expected a ctxtrim\.Message"):
        log.append({"role": "user", "content": []})  # type: ignore[arg-type]
    assert len(log) == 0


def test_replace_prefix_keeps_appends_and_refuses_stale_generation() -> None:
    log = MessageLog(agent_session(4))
    snap = log.snapshot()
    upto = len(snap)
    log.append(Message.user("written while summarising"))  # a concurrent writer
    log.replace_prefix(upto, [Message.user("summary")], snap.generation)
    assert [m.text for m in log.to_list()] == ["summary", "written while summarising"]
    assert log.generation == snap.generation + 1
    # The same stale snapshot again: refused, nothing changes.
    kept = log.to_list()
    with pytest.raises(StaleGenerationError) as err:
        log.replace_prefix(1, [Message.user("other")], snap.generation)
    assert (err.value.expected, err.value.actual) == (snap.generation, log.generation)
    assert log.to_list() == kept


def test_clear_bumps_generation() -> None:
    log = MessageLog([Message.user("a")])
    g = log.generation
    log.append(Message.user("b"))
    assert log.generation == g  # appends never bump it
    log.clear()
    assert len(log) == 0 and log.generation == g + 1


def test_tokens_are_cached_and_summed() -> None:
    msgs = agent_session(5)
    log = MessageLog(msgs)
    counts = log.token_counts()
    assert len(counts) == len(msgs) and all(c > 0 for c in counts)
    assert log.total_tokens == sum(counts) == log.tokens()
    assert log.tokens(2, 5) == sum(counts[2:5])
    log.append(Message.user("exact"), tokens=1234)
    assert log.token_counts()[-1] == 1234


def test_calibrate_anchors_to_reported_usage() -> None:
    log = MessageLog(agent_session(2))
    assert log.estimated_context_tokens() == log.total_tokens
    log.calibrate(10_000)
    assert log.estimated_context_tokens() == 10_000
    log.append(Message.user("and one more thing"))
    assert log.estimated_context_tokens() == 10_000 + log.token_counts()[-1]


def test_turns_follow_real_user_messages() -> None:
    log = MessageLog(
        [
            Message.system("sys"),
            Message.user("task"),
            call("", "t1"),
            results("t1"),
            Message.assistant("done"),
            Message.user("next"),
            Message.assistant("ok"),
        ]
    )
    assert [str(log.turn_of(i)) for i in range(len(log))] == [
        "u0",
        "u1",
        "a1",
        "u1",
        "a1",
        "u2",
        "a2",
    ]
    assert log.turn_count == 2 and log.current_turn == 2
    assert log.kth_last_turn_start(1) == 5 and log.kth_last_turn_start(2) == 1
    assert log.kth_last_turn_start(3) is None


def test_remove_turn_drops_an_interrupted_turn() -> None:
    log = MessageLog(
        [Message.user("task"), Message.assistant("a"), Message.user("oops"), call("", "t9")]
    )
    g = log.generation
    assert log.remove_turn("u2") == 2
    assert [m.text for m in log.to_list()] == ["task", "a"]
    assert log.generation == g + 1
    with pytest.raises(InvalidTurnId):
        log.remove_turn("x2")


def test_turn_id_parse_and_display() -> None:
    assert str(TurnId.parse("u3")) == "u3"
    t = TurnId("a", 7)
    assert (t.owner, t.number, str(t)) == ("a", 7, "a7")
    assert t == TurnId.parse("a7") and hash(t) == hash(TurnId.parse("a7"))
    assert t.is_assistant_turn() and not t.is_user_turn()
    for bad in ["", "u", "x3", "u-1", "u3x", "u 3", "U3", "u99999999999"]:
        with pytest.raises(InvalidTurnId):
            TurnId.parse(bad)


def test_parallel_calls_answered_over_several_messages() -> None:
    msgs = [
        Message.user("task"),
        call("both", "a", "b"),
        results("a"),
        Message.assistant("thinking"),
        results("b"),  # late
        Message.assistant("done"),
    ]
    log = MessageLog(msgs)
    assert [log.is_safe_cut(i) for i in range(len(msgs) + 1)] == [
        True,
        True,
        False,
        False,
        False,
        True,
        True,
    ]
    assert log.safe_cut_at_or_before(4) == 1
    assert log.safe_cut_at_or_after(2) == 5


def test_pending_call_does_not_block_cuts() -> None:
    log = MessageLog([Message.user("task"), call("", "p"), Message.user("still waiting")])
    assert all(log.is_safe_cut(i) for i in range(4))


def test_fit_budget_reports_over_budget_minimum() -> None:
    log = MessageLog(agent_session(50))
    index, kept, fits = log.fit_budget(log.total_tokens)
    assert (index, kept, fits) == (0, log.total_tokens, True)
    index, kept, fits = log.fit_budget(0)
    assert not fits and log.is_safe_cut(index) and kept == log.tokens(index)


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_safe_cuts_match_brute_force(msgs: list[Message], data: st.DataObject) -> None:
    log = MessageLog(msgs)
    n = len(msgs)
    safe = safe_cuts(msgs)
    assert [log.is_safe_cut(i) for i in range(n + 1)] == safe
    i = data.draw(st.integers(0, n))
    assert log.safe_cut_at_or_before(i) == max(j for j in range(i + 1) if safe[j])
    assert log.safe_cut_at_or_after(i) == min(j for j in range(i, n + 1) if safe[j])
    budget = data.draw(st.integers(0, log.total_tokens + 10))
    index, kept, fits = log.fit_budget(budget)
    fitting = [j for j in range(n + 1) if safe[j] and log.tokens(j) <= budget]
    assert safe[index] and kept == log.tokens(index)
    if fitting and fits:
        assert index == min(fitting)
    assert fits == (log.tokens(index) <= budget)


def test_logs_sharing_a_message_keep_their_own_counts_and_release_it() -> None:
    # Every log holding a message shares one core record of it (kept through the message's
    # facts); each log still counts it its own way, and dropping the logs releases it.
    import gc
    import sys

    message = Message.user("the same message in every session")
    others = [Message.assistant("reply"), Message.user("next")]
    baseline = sys.getrefcount(message)
    exact = MessageLog([message, *others], tokens=[5, 1, 1])
    default = MessageLog([message, *others])
    wider = MessageLog([message, *others], encoding="o200k_base")
    rewritten = exact.fork()
    rewritten.replace_prefix(1, [Message.user("summary")], rewritten.generation, tokens=[2])
    assert exact.token_counts()[0] == 5
    assert default.token_counts()[0] == MessageLog([message]).token_counts()[0] != 5
    assert wider.token_counts()[0] == MessageLog([message], encoding="o200k_base").total_tokens
    assert rewritten.token_counts() == [2, 1, 1]
    assert exact.turn_of(0) == default.turn_of(0) == TurnId.parse("u1")
    assert exact.snapshot().to_list() == default.to_list() == [message, *others]
    del exact, default, wider, rewritten
    gc.collect()
    assert sys.getrefcount(message) == baseline
