"""``Pipeline`` on a list or a memory store runs each step's shortcut on the previous step's
output: a clearing step's memo reads only the messages appended since its last call, and a
cut reads a list from its ends. Every result must be what the plain path (each step's full
pass, counts carried over between steps) returns on the same history, after every kind of
change a caller makes between calls; a memo's own list must never reach the caller."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
from typing import Any

import pytest
from test_clearing_memo import _round

import ctxtrim.strategies as strategies_module
from ctxtrim import (
    ClearThinking,
    ClearToolResults,
    FitContextWindow,
    HeadAndTail,
    KeepLastMessages,
    KeepLastTurns,
    KeepRecentImages,
    MemoryContextStore,
    Message,
    Pipeline,
    TrimRounds,
    TruncateToolOutputs,
)
from ctxtrim.tokens import HeuristicTokenCounter


def _pipelines() -> list[Pipeline]:
    return [
        Pipeline(ClearToolResults(200, keep=2), FitContextWindow(600)),
        Pipeline(ClearThinking(keep=1), ClearToolResults(0, keep=1), KeepLastTurns(3)),
        Pipeline(FitContextWindow(800), ClearToolResults(0, keep=1)),
        Pipeline(
            ClearToolResults({"messages": 12}, keep=1, clear_at_least=30), KeepLastMessages(9)
        ),
        Pipeline(ClearThinking(keep=0)),
        # A token trigger read after the first step dropped reasoning (its totals change).
        Pipeline(ClearThinking(keep=0), ClearToolResults(900, keep=1), FitContextWindow(900)),
        Pipeline(
            ClearToolResults(300, keep=1, clear_tool_inputs=True),
            ClearThinking(keep=1, trigger=500),
        ),
        Pipeline(TruncateToolOutputs(20, keep_recent_turns=1), FitContextWindow(700)),
        Pipeline(KeepRecentImages(1), ClearToolResults(0, keep=2), FitContextWindow(500)),
        Pipeline(Pipeline(ClearToolResults(0, keep=0), ClearThinking(keep=2)), TrimRounds(4)),
    ]


def _plain(pipeline: Pipeline, source: Any) -> list[Message]:
    """The plain path's result (a report runs every step's full pass, no memo, no tail)."""
    out: list[Message] = pipeline.apply(source, report=True)[0]
    return out


def _check(pipeline: Pipeline, source: Any, messages: list[Message]) -> list[Message]:
    out: list[Message] = pipeline(source) if isinstance(source, list) else pipeline.apply(source)
    expected = _plain(pipeline, list(messages))
    assert out == expected
    assert all(a is b for a, b in zip(out, expected, strict=True) if a in messages)
    if isinstance(source, list) and expected == messages:
        assert out is source or out == source
    return out


@pytest.fixture
def no_plain_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails a call that builds the plain path's input (a log of the whole history)."""

    def refuse(*args: object) -> None:
        raise AssertionError("the plain path ran")

    monkeypatch.setattr(strategies_module._Input, "of", classmethod(refuse))


@pytest.mark.parametrize("seed", range(8))
def test_a_list_changed_in_every_way_gives_the_plain_paths_result(seed: int) -> None:
    rng = random.Random(seed)
    pending: list[str] = []
    history = [Message.system("sys"), Message.user("the task")]
    pipelines = _pipelines()
    k = 0
    for step in range(100):
        op = rng.random()
        if op < 0.72 or len(history) < 6:
            for _ in range(rng.randrange(1, 4)):
                k += 1
                history += _round(rng, k, pending)
        elif op < 0.78:
            i = rng.randrange(2, len(history))
            if history[i].role == "user" and not history[i].tool_results:
                history[i] = Message.user(f"edited {step}")  # in the middle, in place
        elif op < 0.84:
            i = rng.randrange(len(history))
            history[i] = Message.decode(history[i].encode())  # an equal copy
        elif op < 0.9:
            history = list(history)  # a new list each turn, as LangGraph's state
        else:
            history = history[: rng.randrange(2, len(history))]  # rewound
            pending = []
        for p in pipelines:
            out = _check(p, history, history)
            if out is not history:
                out.append(Message.user("the caller's to change"))  # then let go


@pytest.mark.parametrize("seed", range(4))
def test_a_store_and_its_forks_give_the_plain_paths_result(seed: int) -> None:
    rng = random.Random(seed)
    pending: list[str] = []
    stores = [MemoryContextStore([Message.system("sys"), Message.user("the task")])]
    pipelines = _pipelines()
    k = 0
    for _ in range(50):
        op = rng.random()
        store = rng.choice(stores)
        if op < 0.8:
            k += 1
            asyncio.run(store.append_many(_round(rng, k, pending)))
        elif op < 0.9 and len(stores) < 3:
            stores.append(asyncio.run(store.fork()))
        elif len(store.log) > 3:
            log = store.log
            i = rng.randrange(2, len(log))
            if log[i].role == "user" and not log[i].tool_results:
                log.replace_at(i, Message.user("rewritten"), log.generation)
        for p in pipelines:
            for st in stores:
                _check(p, st, st.log.to_list())


def test_a_turn_on_a_list_or_a_memory_store_takes_no_plain_path(no_plain_path: None) -> None:
    rng = random.Random(7)
    pending: list[str] = []
    history = [Message.system("sys"), Message.user("the task")]
    store = MemoryContextStore(history)
    pipeline = Pipeline(ClearToolResults(100, keep=1), ClearThinking(keep=1), FitContextWindow(500))
    for k in range(40):
        new = _round(rng, k, pending)
        history += new
        asyncio.run(store.append_many(new))
        assert pipeline(history) == pipeline.apply(store)


def test_what_goes_through_the_plain_path() -> None:
    """A step without a shortcut (or with a counter of its own), a store with a counter, and
    any other log (a persistent store's ``load_log()``, whose counts a counter may have
    made): the plain path, where counts carry over between steps."""
    history = [Message.system("sys"), Message.user("the task")]
    rng = random.Random(3)
    pending: list[str] = []
    for k in range(60):
        history += _round(rng, k, pending)
    counter = HeuristicTokenCounter("o200k_base")  # prices unlike the default
    cases: list[tuple[Pipeline, Any]] = [
        (Pipeline(ClearToolResults(0, keep=1), HeadAndTail(2, 20)), history),
        (Pipeline(ClearToolResults(0, keep=1), FitContextWindow(500, counter=counter)), history),
        (
            Pipeline(ClearToolResults(0, keep=1), FitContextWindow(500)),
            MemoryContextStore(history, counter=counter),
        ),
        (
            Pipeline(ClearToolResults(0, keep=1), FitContextWindow(500)),
            MemoryContextStore(history).log,
        ),
    ]
    for pipeline, source in cases:
        assert pipeline._private(source) is None
        assert pipeline.apply(source) == _plain(pipeline, source)


def test_a_result_held_by_the_caller_never_changes() -> None:
    pipeline = Pipeline(ClearToolResults(0, keep=1))
    history = [Message.system("sys"), Message.user("the task")]
    rng = random.Random(5)
    pending: list[str] = []
    held = []
    for k in range(30):
        history += _round(rng, k, pending)
        out = pipeline(history)
        if out is not history:  # (unchanged: the caller's own list)
            held.append((out, list(out)))
        pipeline(history)  # results dropped at once: the memo may reuse them
    assert len(held) > 20
    assert all(h == c and all(a is b for a, b in zip(h, c, strict=True)) for h, c in held)


def test_threads_sharing_one_pipeline_and_its_steps_get_correct_results() -> None:
    """One clearing step shared by a pipeline and direct calls in other threads."""
    clear = ClearToolResults(0, keep=1)
    pipeline = Pipeline(clear, ClearThinking(keep=1), FitContextWindow(400))
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        pending: list[str] = []
        history = [Message.system("sys"), Message.user("the task")]
        try:
            for k in range(120):
                history += _round(rng, k, pending)
                if seed % 2:
                    assert pipeline(history) == _plain(pipeline, history)
                else:
                    assert clear(history) == clear.apply(history, report=True)[0]
        except BaseException as e:  # pragma: no cover (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []


def test_a_pipeline_holds_its_memos_for_the_call_and_lets_go_after() -> None:
    """While another call holds a step's memo, a pipeline takes the plain path (a memo's own
    list passed between steps must not change under it); every memo is free after a call,
    whatever its outcome."""
    clear, thinking = ClearToolResults(0, keep=1), ClearThinking(keep=1)
    pipeline = Pipeline(clear, Pipeline(thinking, FitContextWindow(400)))
    assert pipeline._locks() == (clear._memo_lock, thinking._memo_lock)
    rng = random.Random(11)
    pending: list[str] = []
    history = [Message.system("sys"), Message.user("the task")]
    for k in range(30):
        history += _round(rng, k, pending)
    with thinking._memo_lock:
        assert pipeline._apply_fast(history) is None
        assert pipeline(history) == _plain(pipeline, history)
    for _ in range(2):
        assert pipeline._apply_fast(history) == _plain(pipeline, history)
        assert all(lock.acquire(blocking=False) for lock in pipeline._locks())
        for lock in pipeline._locks():
            lock.release()
    twice = Pipeline(clear, clear)  # one memo twice: its lock cannot be taken twice
    assert twice._apply_fast(history) is None
    assert twice(history) == _plain(twice, history)
    assert clear._memo_lock.acquire(blocking=False)
    clear._memo_lock.release()


def test_a_step_after_an_in_place_step_reads_only_what_was_appended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second step's input is the first step's list, edited in place every turn (a
    reasoning block dropped, a result cleared): its memo takes those edits in rather than
    reading the history again."""
    starts: list[tuple[str, int, int]] = []
    for cls in (ClearToolResults, ClearThinking):
        advance = cls._advance

        def spy(self: Any, state: Any, seen: Any, start: int, *rest: Any, _a: Any = advance) -> Any:
            starts.append((type(self).__name__, start, len(seen)))
            return _a(self, state, seen, start, *rest)

        monkeypatch.setattr(cls, "_advance", spy)
    for first, second in [
        (ClearThinking(keep=1), ClearToolResults(0, keep=1, clear_tool_inputs=True)),
        (ClearToolResults(200, keep=1), ClearThinking(keep=1, trigger=300)),
    ]:
        pipeline = Pipeline(first, second, FitContextWindow(2_000))
        rng = random.Random(2)
        pending: list[str] = []
        history = [Message.system("sys"), Message.user("the task")]
        for k in range(60):
            history += _round(rng, k, pending)
        starts.clear()
        pipeline(history)
        for k in range(60, 90):
            before = len(history)
            history += _round(rng, k, pending)
            starts.clear()
            assert pipeline(history) == _plain(pipeline, history)
            assert [start for _, start, _ in starts[:2]] == [before, before], starts
