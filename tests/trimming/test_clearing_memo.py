"""The clearing strategies remember what they read of a history (``ctxtrim._memo``): a call
on a history that extends the last one reads only the new messages. Every result must be
what a strategy that remembers nothing returns on the same history: checked here after
every kind of change a caller can make between calls (appends, an edit in the middle, an
equal copy put in, a new or shorter list, changed settings, a log rewritten or forked),
and the lists it hands out must never change under a caller that still holds them."""

from __future__ import annotations

import asyncio
import copy
import pickle
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from ctxtrim import (
    ClearThinking,
    ClearToolResults,
    MemoryContextStore,
    Message,
    MessageLog,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ctxtrim.strategies import ContextStrategy


def _round(rng: random.Random, k: int, pending: list[str]) -> list[Message]:
    """One random step of an agent: a question, a call (with or without reasoning, some
    left unanswered for a while), the results of some pending calls, an answer."""
    kind = rng.randrange(6)
    if kind == 0:
        return [Message.user(f"question {k}")]
    if kind in (1, 2):
        cid = f"c{k}"
        pending.append(cid)
        blocks: list[Any] = [ReasoningBlock(f"think {k} " * 5)] if kind == 1 else []
        blocks.append(ToolUseBlock(cid, rng.choice(["grep", "ls", "keep_me"]), {"q": k}))
        return [Message("assistant", tuple(blocks))]
    if kind in (3, 4) and pending:
        # Answer the oldest or a random pending call (a late answer sorts among old pairs).
        cid = pending.pop(0 if kind == 3 else rng.randrange(len(pending)))
        summary = f"summary {k}" if rng.random() < 0.3 else None
        return [
            Message.tool_results(ToolResultBlock(cid, f"result {k} " * 10, compact_summary=summary))
        ]
    content: list[Any] = [TextBlock(f"answer {k}")]
    if rng.random() < 0.7:
        content.insert(0, ReasoningBlock(f"why {k} " * 5))
    return [Message("assistant", tuple(content))]


def _strategies() -> list[ContextStrategy]:
    return [
        ClearToolResults(0, keep=0),
        ClearToolResults(200, keep=2),
        ClearToolResults(300, keep=1, exclude_tools=("keep_me",), clear_tool_inputs=True),
        ClearToolResults({"messages": 12}, keep=3, clear_at_least=40),
        ClearToolResults([("tokens", 10**9), {"turns": 3}], keep=1),
        ClearThinking(keep=0),
        ClearThinking(keep=2),
        ClearThinking(keep=1, trigger=400),
    ]


def _fresh(strategy: ContextStrategy) -> ContextStrategy:
    """A copy of ``strategy`` that remembers nothing (a copy starts with no memo)."""
    twin = copy.copy(strategy)
    assert not twin._memos  # type: ignore[attr-defined]
    return twin


def _check(strategy: ContextStrategy, source: Any, messages: list[Message]) -> list[Message]:
    """``strategy(source)`` is what a strategy remembering nothing returns on ``messages``
    (the history ``source`` holds): equal, the same objects where nothing changed, and the
    input list itself when nothing changes."""
    out: list[Message] = strategy.apply(source)
    expected, report = _fresh(strategy).apply(list(messages), report=True)
    assert out == expected
    assert len(out) == len(messages)
    for i, m in enumerate(out):
        if i not in report.changed:
            assert m is messages[i], i
    if isinstance(source, list):
        assert (out is source) == report.unchanged
    return out


@pytest.mark.parametrize("seed", range(12))
def test_a_list_changed_in_every_way_gives_what_a_fresh_strategy_gives(seed: int) -> None:
    rng = random.Random(seed)
    pending: list[str] = []
    history = [Message.system("sys"), Message.user("the task")]
    strategies = _strategies()
    k = 0
    for step in range(120):
        op = rng.random()
        if op < 0.7 or len(history) < 6:
            for _ in range(rng.randrange(1, 4)):
                k += 1
                history += _round(rng, k, pending)
        elif op < 0.76:
            # An edit in the middle of the same list object.
            i = rng.randrange(2, len(history))
            if history[i].role == "user" and not history[i].tool_results:
                history[i] = Message.user(f"edited {step}")
        elif op < 0.82:
            # An equal message, another object: the result must hold the new object.
            i = rng.randrange(len(history))
            history[i] = Message.decode(history[i].encode())
        elif op < 0.88:
            history = list(history)  # a new list each turn, as LangGraph's state
        elif op < 0.92:
            cut = rng.randrange(2, len(history))
            history = history[:cut]  # shorter: a rewound history
            pending = []
        else:
            s = rng.choice(strategies)
            s.keep = rng.randrange(4)  # type: ignore[attr-defined]
        for s in strategies:
            _check(s, history, history)


def drive_stores(
    seed: int,
    strategies: Sequence[ContextStrategy],
    round_of: Callable[[random.Random, int, list[str]], list[Message]],
    rewritable: Callable[[Message], bool],
) -> None:
    """Random appends, forks, rewrites (of a ``rewritable`` message) and snapshots of memory
    stores, every strategy checked (:func:`_check`) on every store after each."""
    rng = random.Random(seed)
    pending: list[str] = []
    start = [Message.system("sys"), Message.user("the task")]
    stores = [MemoryContextStore(start)]
    k = 0
    for _ in range(60):
        op = rng.random()
        store = rng.choice(stores)
        if op < 0.75:
            k += 1
            asyncio.run(store.append_many(round_of(rng, k, pending)))
        elif op < 0.85 and len(stores) < 4:
            stores.append(asyncio.run(store.fork()))
        elif op < 0.92 and len(store.log) > 3:
            # A rewrite: the generation moves, the memo must read the log again.
            log = store.log
            i = rng.randrange(2, len(log))
            if rewritable(log[i]):
                log.replace_at(i, Message.user("rewritten"), log.generation)
        else:
            snapshot = store.log.snapshot()  # another log object with the same messages
            for s in strategies:
                _check(s, snapshot, snapshot.to_list())
        for s in strategies:
            for st in stores:
                _check(s, st, st.log.to_list())


@pytest.mark.parametrize("seed", range(6))
def test_a_store_and_its_forks_give_what_a_fresh_strategy_gives(seed: int) -> None:
    drive_stores(seed, _strategies(), _round, lambda m: m.role == "user" and not m.tool_results)


def _pairs(n: int) -> list[Message]:
    out = [Message.system("sys"), Message.user("task")]
    for i in range(n):
        out.append(Message.assistant(tool_uses=[(f"t{i}", "grep", {"q": i})]))
        out.append(Message.tool_results(ToolResultBlock(f"t{i}", f"match {i} " * 30)))
    return out


def cleared(messages: list[Message]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        for b in m.tool_results
        if b.content == "[tool result cleared]"
    ]


def test_a_result_is_cleared_once_newer_pairs_push_it_out_of_keep() -> None:
    strategy = ClearToolResults(0, keep=2)
    history = _pairs(3)
    assert cleared(strategy(history)) == [3]
    history += _pairs(1)[2:]  # a fourth pair (id t0 again: it answers the newest call)
    out = strategy(history)
    assert out == _fresh(strategy)(history)
    history.append(Message.assistant(tool_uses=[("late", "grep", {})]))
    history += _pairs(6)[8:]  # t3..t5: the "late" call still waits
    assert strategy(history) == _fresh(strategy)(history)
    history.append(Message.tool_results(ToolResultBlock("late", "finally")))
    out = strategy(history)  # answered late: its pair sorts before the newest ones
    assert out == _fresh(strategy)(history)
    assert len(history) - 1 in cleared(out)


def test_a_final_answer_then_new_calls_reopens_the_loop_and_gives_back_its_reasoning() -> None:
    def step(i: int, calls: bool) -> Message:
        blocks: list[Any] = [ReasoningBlock(f"thought {i}")]
        if calls:
            blocks.append(ToolUseBlock(f"t{i}", "grep", {}))
        else:
            blocks.append(TextBlock(f"answer {i}"))
        return Message("assistant", tuple(blocks))

    strategy = ClearThinking(keep=1)
    history = [Message.user("task"), step(0, True)]
    history.append(Message.tool_results(ToolResultBlock("t0", "r")))
    history.append(step(1, False))  # the loop closes: step 0 loses its reasoning
    out = strategy(history)
    assert out == _fresh(strategy)(history)
    assert not any(type(b) is ReasoningBlock for b in out[1].content)
    history.append(step(2, True))  # no user message between: the loop is open again
    out = strategy(history)
    assert out == _fresh(strategy)(history)
    assert out[1] is history[1]  # protected again, as the provider requires
    history.append(Message.user("next question"))  # a new turn ends that loop for good
    out = strategy(history)
    assert out == _fresh(strategy)(history)
    assert out[1] is not history[1]


def test_a_list_handed_out_never_changes_under_a_caller_holding_it() -> None:
    strategy = ClearToolResults(0, keep=1)
    history = _pairs(3)
    held = [strategy(history) for _ in range(3)]
    copies = [list(h) for h in held]
    for i in range(4, 12):
        history += _pairs(i)[-2:]
        strategy(history)  # results dropped at once: the memo may reuse them
    assert held == copies and all(
        a is b for h, c in zip(held, copies, strict=True) for a, b in zip(h, c, strict=True)
    )


def test_a_list_the_caller_changed_and_let_go_is_not_handed_back_changed() -> None:
    strategy = ClearToolResults(0, keep=1)
    history = _pairs(3)
    for i in range(4, 20):
        out = strategy(history)
        out[2] = Message.user("scribbled")  # the caller's to change, then let go
        out.append(Message.user("extra"))
        del out
        history += _pairs(i)[-2:]
        assert strategy(history) == _fresh(strategy)(history)


def test_one_strategy_alternating_between_histories() -> None:
    strategy = ClearToolResults(0, keep=1)
    a, b = _pairs(4), _pairs(6)
    for i in range(10):
        for h in (a, b):
            h += _pairs(i + 7)[-2:]
            assert strategy(h) == _fresh(strategy)(h)


def test_threads_sharing_one_strategy_get_correct_results() -> None:
    strategy = ClearThinking(keep=1)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        pending: list[str] = []
        history = [Message.user("task")]
        try:
            for k in range(150):
                history += _round(rng, k, pending)
                assert strategy(history) == _fresh(strategy)(history)
        except BaseException as e:  # pragma: no cover (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_a_strategy_copies_and_pickles_without_its_memo() -> None:
    strategy = ClearToolResults(0, keep=1, placeholder="gone")
    history = _pairs(5)
    out = strategy(history)
    for twin in (copy.deepcopy(strategy), pickle.loads(pickle.dumps(strategy))):
        assert not twin._memos
        assert twin(history) == out and twin.placeholder == "gone"


def test_reports_and_a_log_agree_with_the_memoised_call() -> None:
    strategy = ClearToolResults(0, keep=2, clear_at_least=10)
    history = _pairs(6)
    log = MessageLog(history)
    for i in range(7, 12):
        new = _pairs(i)[-2:]
        history += new
        log.extend(new)
        out = strategy(history)
        assert strategy.apply(log) == out
        report = strategy.describe(history)
        assert report.changed == tuple(
            i for i, (a, b) in enumerate(zip(history, out, strict=True)) if a != b
        )
        assert report.tokens_after < report.tokens_before


def test_differing_names_the_entries_holding_other_objects() -> None:
    from ctxtrim import _core

    a = [Message.user(str(i)) for i in range(2000)]
    b = list(a)
    assert _core.differing(a, b, 0) == []
    b[700] = Message.decode(a[700].encode())  # equal, another object: it differs
    b[1999] = a[0]
    assert _core.differing(a, b, 5) == [700, 1999]
    assert _core.differing(a, b, 1) is None  # more than the limit
    assert _core.differing(a, b[:1000], 5) == [700]  # only below the shorter length
    assert _core.differing([], b, 0) == []
