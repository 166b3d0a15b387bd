"""``TruncateToolOutputs`` and ``KeepRecentImages`` remember their pass over a history
(``ctxtrim._memo``): a call on a history that extends the last one reads only the new
messages. With ``keep_recent_turns`` the boundary of the recent turns only moves forward as
turns are appended; the images older than the newest ``n`` only grow in number. Every
result must be what a strategy that remembers nothing returns on the same history: checked
after every kind of change a caller can make between calls (appends, an edit in the
middle, an equal copy put in, a new or shorter list, changed settings, a log rewritten or
forked, a snapshot), on random histories and on a Hypothesis-drawn sequence of changes."""

from __future__ import annotations

import copy
import pickle
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_clearing_memo import _check, _fresh, drive_stores

from ctxtrim import (
    FitContextWindow,
    ImageBlock,
    KeepRecentImages,
    Message,
    MessageLog,
    Pipeline,
    TextBlock,
    ToolResultBlock,
    TruncateToolOutputs,
)
from ctxtrim.clearing import TRUNCATION_MARKER
from ctxtrim.errors import InvalidMessage
from ctxtrim.strategies import ContextStrategy


def _result(rng: random.Random, cid: str, k: int) -> ToolResultBlock:
    """A tool result of any shape the strategy reads: long or short text, already clipped,
    a list with texts and an image, or one showing its compact summary."""
    kind = rng.randrange(6)
    if kind == 0:
        return ToolResultBlock(cid, f"ok {k}")
    if kind == 1:
        return ToolResultBlock(cid, f"row {k} " * 5 + TRUNCATION_MARKER)  # clipped before
    if kind == 2:
        items = (TextBlock(f"page {k} " * 12), ImageBlock("image/png", b"png"), TextBlock("x"))
        return ToolResultBlock(cid, items)
    if kind == 3:
        return ToolResultBlock(cid, "[cleared]", compact_summary="[cleared]")
    return ToolResultBlock(cid, f"match {k} " * rng.randrange(3, 15))


def _round(rng: random.Random, k: int, pending: list[str]) -> list[Message]:
    """One random step of an agent: a question (a real user message, that starts a turn;
    some with one or two screenshots), a call, the results of some pending calls (alone, or
    with the user's text: that message starts a turn too), an answer."""
    kind = rng.randrange(6)
    if kind == 0:
        shots = [ImageBlock("image/png", b"shot")] * rng.choice([0, 0, 1, 2])
        return [Message("user", (TextBlock(f"question {k}"), *shots))]
    if kind in (1, 2):
        cid = f"c{k}"
        pending.append(cid)
        return [Message.assistant(tool_uses=[(cid, "grep", {"q": k})])]
    if kind in (3, 4) and pending:
        cid = pending.pop(0 if kind == 3 else rng.randrange(len(pending)))
        result = _result(rng, cid, k)
        if rng.random() < 0.25:
            return [Message("user", (result, TextBlock(f"and now {k}")))]
        return [Message.tool_results(result)]
    return [Message.assistant(f"answer {k} " * 3)]


def _strategies() -> list[TruncateToolOutputs | KeepRecentImages]:
    return [
        TruncateToolOutputs(20),
        TruncateToolOutputs(40, keep_recent_turns=1),
        TruncateToolOutputs(30, keep_recent_turns=2, marker="…"),
        TruncateToolOutputs(10, keep_recent_turns=4),
        TruncateToolOutputs(10_000),  # clips nothing: the input list itself comes back
        KeepRecentImages(0),
        KeepRecentImages(2),
        KeepRecentImages(3, chunk=2),
        KeepRecentImages(1, chunk=5, placeholder="[gone]"),
    ]


def _change_settings(rng: random.Random, s: TruncateToolOutputs | KeepRecentImages) -> None:
    if isinstance(s, KeepRecentImages):
        if rng.random() < 0.5:
            s.n = rng.randrange(4)
        else:
            s.chunk = rng.randrange(1, 4)
    elif rng.random() < 0.5:
        s.keep_recent_turns = rng.randrange(4)
    else:
        s.max_chars = rng.choice([10, 20, 40])


@pytest.mark.parametrize("seed", range(10))
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
            # An edit in the middle of the same list object (a turn start may appear).
            i = rng.randrange(2, len(history))
            if not history[i].tool_results:
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
            _change_settings(rng, rng.choice(strategies))
        for s in strategies:
            _check(s, history, history)


@pytest.mark.parametrize("seed", range(6))
def test_a_store_and_its_forks_give_what_a_fresh_strategy_gives(seed: int) -> None:
    drive_stores(seed, _strategies(), _round, lambda m: not m.tool_results)


# A change between two calls, as Hypothesis draws it: append a round (drawn by a seed),
# replace a message by an equal copy, by a user question, or by a long tool result, take a
# new list, or rewind to a shorter one.
_CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "append", "copy", "question", "result", "new"]),
        st.integers(0, 10**6),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    changes=_CHANGES,
    max_chars=st.integers(1, 60),
    keep_recent_turns=st.integers(0, 3),
    images=st.tuples(st.integers(0, 4), st.integers(1, 3)),
    rewind=st.booleans(),
)
def test_any_sequence_of_changes_gives_what_a_fresh_strategy_gives(
    changes: list[tuple[str, int]],
    max_chars: int,
    keep_recent_turns: int,
    images: tuple[int, int],
    rewind: bool,
) -> None:
    strategies = [
        TruncateToolOutputs(max_chars, keep_recent_turns=keep_recent_turns),
        KeepRecentImages(images[0], chunk=images[1]),
    ]
    pending: list[str] = []
    history = [Message.user("the task")]
    for k, (change, seed) in enumerate(changes):
        rng = random.Random(seed)
        i = seed % len(history)
        if change == "append":
            history += _round(rng, k, pending)
        elif change == "copy":
            history[i] = Message.decode(history[i].encode())
        elif change == "question" and not history[i].tool_results:
            history[i] = Message.user(f"question {seed}")
        elif change == "result" and history[i].tool_results:
            cid = history[i].tool_results[0].tool_use_id
            history[i] = Message.tool_results(ToolResultBlock(cid, "long " * 30))
        elif change == "new":
            history = list(history)
        if rewind and seed % 7 == 0 and len(history) > 2:
            history = history[: len(history) // 2]
            pending = []
        for strategy in strategies:
            _check(strategy, history, history)


def _turns(n: int) -> list[Message]:
    """``n`` user turns, each one call whose result is long."""
    out: list[Message] = []
    for t in range(n):
        out.append(Message.user(f"question {t}"))
        out.append(Message.assistant(tool_uses=[(f"t{t}", "grep", {"q": t})]))
        out.append(Message.tool_results(ToolResultBlock(f"t{t}", f"match {t} " * 30)))
    return out


def _clipped(messages: list[Message]) -> list[int]:
    return [
        i
        for i, m in enumerate(messages)
        for b in m.tool_results
        if isinstance(b.content, str) and b.content.endswith(TRUNCATION_MARKER)
    ]


def test_the_recent_turns_boundary_moves_forward_with_each_new_turn() -> None:
    strategy = TruncateToolOutputs(20, keep_recent_turns=2)
    history = _turns(3)
    assert _clipped(strategy(history)) == [2]  # turns 1 and 2 are the recent ones
    # A message of results alone is no turn: the boundary stays where it was.
    history.append(Message.assistant(tool_uses=[("x", "grep", {})]))
    history.append(Message.tool_results(ToolResultBlock("x", "long " * 30)))
    assert _clipped(strategy(history)) == [2]
    # Results with the user's words start a turn: turn 1 falls out of the recent ones.
    history.append(Message.assistant(tool_uses=[("y", "grep", {})]))
    history.append(Message("user", (ToolResultBlock("y", "long " * 30), TextBlock("now this"))))
    out = strategy(history)
    assert _clipped(out) == [2, 5] and out == _fresh(strategy)(history)
    history += _turns(5)[9:]  # two more turns: all falls out but them (from 13)
    out = strategy(history)
    assert _clipped(out) == [2, 5, 8, 10, 12] and out == _fresh(strategy)(history)


def test_a_call_reads_only_the_messages_appended_since_the_last() -> None:
    strategy = TruncateToolOutputs(20)
    read: list[Message] = []
    clip = strategy._clipped

    def counted(message: Message) -> Message | None:
        read.append(message)
        return clip(message)

    strategy._clipped = counted  # type: ignore[method-assign]
    history = _turns(50)
    strategy(history)
    assert len(read) == len(history)
    read.clear()
    new = _turns(52)[-6:]
    history += new
    out = strategy(history)
    assert read == new and _clipped(out) == [3 * t + 2 for t in range(52)]


def test_the_readme_pipeline_gives_what_a_fresh_one_gives_turn_after_turn() -> None:
    pipeline = Pipeline(TruncateToolOutputs(200), FitContextWindow(4_000))
    history: list[Message] = []
    for t in range(40):
        history += _turns(t + 1)[-3:]
        fresh = Pipeline(TruncateToolOutputs(200), FitContextWindow(4_000))
        assert pipeline(history) == fresh(list(history))


def test_idempotent_and_the_input_itself_when_nothing_changes() -> None:
    strategy = TruncateToolOutputs(20, keep_recent_turns=1)
    history = _turns(4)
    once = strategy(history)
    assert once is not history and _clipped(once) == [2, 5, 8]
    assert strategy(once) is once  # a second run changes nothing
    short = [Message.user("hi"), Message.assistant("hello")]
    assert strategy(short) is short


def test_a_list_handed_out_never_changes_under_a_caller_holding_it() -> None:
    strategy = TruncateToolOutputs(20)
    history = _turns(3)
    held = [strategy(history) for _ in range(3)]
    copies = [list(h) for h in held]
    for t in range(4, 12):
        history += _turns(t)[-3:]
        strategy(history)  # results dropped at once: the memo may reuse them
    assert held == copies and all(
        a is b for h, c in zip(held, copies, strict=True) for a, b in zip(h, c, strict=True)
    )


def test_a_strategy_copies_and_pickles_without_its_memo_and_keeps_its_repr() -> None:
    strategy = TruncateToolOutputs(20, marker="[cut]", keep_recent_turns=1)
    history = _turns(5)
    out = strategy(history)
    assert repr(strategy) == "TruncateToolOutputs(20, keep_recent_turns=1)"
    for twin in (copy.deepcopy(strategy), pickle.loads(pickle.dumps(strategy))):
        assert not twin._memos
        assert twin(history) == out and twin.marker == "[cut]"


def test_reports_and_a_log_agree_with_the_memoised_call() -> None:
    strategy = TruncateToolOutputs(20, keep_recent_turns=1)
    history = _turns(3)
    log = MessageLog(history)
    for t in range(4, 9):
        new = _turns(t)[-3:]
        history += new
        log.extend(new)
        out = strategy(history)
        assert strategy.apply(log) == out
        report = strategy.describe(history)
        assert report.changed == tuple(
            i for i, (a, b) in enumerate(zip(history, out, strict=True)) if a != b
        )
        assert report.tokens_after < report.tokens_before


@pytest.mark.parametrize("strategy", [TruncateToolOutputs(20), KeepRecentImages(1)])
def test_a_list_of_other_things_raises_the_plain_paths_error(strategy: ContextStrategy) -> None:
    history: list[Any] = [*_turns(2), {"role": "user", "content": "a dict"}]
    for s in (_fresh(strategy), strategy):
        with pytest.raises(InvalidMessage, match=r"messages\[6\]: expected a ctxtrim.Message"):
            s(history)


def _shots(k: int, first: int) -> Message:
    """A user message with ``k`` screenshots, numbered from ``first``."""
    shots = (ImageBlock("image/png", str(first + j).encode()) for j in range(k))
    return Message("user", (TextBlock(f"look {first}"), *shots))


def _kept(messages: list[Message]) -> list[bytes]:
    return [b.data for m in messages for b in m.content if type(b) is ImageBlock]


def test_the_old_images_end_inside_a_message_then_past_it() -> None:
    strategy = KeepRecentImages(2)
    read: list[tuple[Message, int]] = []
    without = strategy._without

    def counted(message: Message, left: int) -> Message:
        read.append((message, left))
        return without(message, left)

    strategy._without = counted  # type: ignore[method-assign]
    history = [_shots(3, 0), Message.assistant("ok")]
    out = strategy(history)
    assert _kept(out) == [b"1", b"2"] and read == [(history[0], 1)]
    history.append(_shots(1, 3))  # one more old image, in the same message
    read.clear()
    out = strategy(history)
    assert _kept(out) == [b"2", b"3"] and read == [(history[0], 2)]
    history.append(_shots(2, 4))  # the old ones now end past it: it is not read again
    read.clear()
    out = strategy(history)
    assert _kept(out) == [b"4", b"5"] and read == [(history[0], 3), (history[2], 1)]
    assert out == _fresh(strategy)(history)
    assert strategy(out) is out  # a second run changes nothing


def test_images_go_in_chunks_and_the_input_comes_back_until_a_chunk_is_old() -> None:
    strategy = KeepRecentImages(1, chunk=3)
    history = [_shots(1, 0)]
    for first in range(1, 9):
        history.append(_shots(1, first))
        out = strategy(history)
        assert out == _fresh(strategy)(history)
        if len(history) < 4:
            assert out is history
    assert _kept(out) == [b"6", b"7", b"8"]
