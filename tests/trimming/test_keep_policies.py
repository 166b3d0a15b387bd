"""Keep policies (messages, tokens, a fraction of the window) and the cap on the summariser's
input, on compact_context and AutoCompactStore: the kept part is pair-safe and satisfies the
policy; the summariser is sent at most the cap and the summary still counts the whole span."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import (
    AutoCompactStore,
    CompactionSettingsError,
    MemoryContextStore,
    Message,
    MessageLog,
    UnknownModel,
    compact_context,
    validate,
)
from ctxtrim.compaction import is_summary
from ctxtrim.keep import Keep
from ctxtrim.transports import ExtractiveTransport

from helpers import agent_session, safe_cuts
from strategies import histories


class Recording(ExtractiveTransport):
    """The extractive transport, remembering what it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[list[Message]] = []

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        self.sent.append(list(messages))
        return await super().complete(messages, system=system, max_tokens=max_tokens)


def kept_part(history: list[Message], out: list[Message]) -> list[Message]:
    s = next(i for i, m in enumerate(out) if is_summary(m))
    tail = out[s + 1 :]
    assert tail == history[len(history) - len(tail) :]
    return tail


def summarised(out: list[Message]) -> int:
    summary = next(m for m in out if is_summary(m))
    count = (summary.meta or {})["ctxtrim"]["summarised_messages"]
    assert isinstance(count, int)
    return count


# -- the policy on its own -------------------------------------------------------------------


def test_messages_keeps_at_least_n_and_moves_back_to_a_safe_cut() -> None:
    history = agent_session(5)  # system, task, 5 x (call, result), answer
    log = MessageLog(history)
    # The last 2 are [result, answer]: cutting before the result splits t4; moved back.
    assert Keep.parse(("messages", 2), window=None, error=ValueError).cut(log) == len(history) - 3
    assert Keep.parse({"messages": 1}, window=None, error=ValueError).cut(log) == len(history) - 1


def test_tokens_keeps_at_most_n_and_moves_forward_to_a_safe_cut() -> None:
    history = agent_session(5)
    log = MessageLog(history)
    counts = log.token_counts()
    # Budget for [result t4, answer] but not for the call before: the result alone would be
    # an orphan, so only the answer is kept.
    budget = counts[-1] + counts[-2]
    cut = Keep.parse(("tokens", budget), window=None, error=ValueError).cut(log)
    assert cut == len(history) - 1
    assert Keep.parse(("tokens", 0), window=None, error=ValueError).cut(log) == len(history)


def test_fraction_is_tokens_of_the_window() -> None:
    keep = Keep.parse(("fraction", 0.25), window=1000, error=ValueError)
    assert (keep.kind, keep.value) == ("tokens", 250)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        (("fraction", 0.3), "context window"),
        (("fraction", 1.5), r"\(0, 1\]"),
        (("bytes", 3), "unknown kind 'bytes'"),
        (("messages", -1), "messages must be an int >= 0"),
        (("tokens", 2.5), "tokens must be an int"),
        ({"messages": 2, "tokens": 3}, "one condition"),
        ([("messages", 2)], "must be a \\(kind, value\\) pair"),
        (("messages", True), "messages must be an int"),
    ],
)
def test_bad_keep_specs_name_the_problem(spec: Any, match: str) -> None:
    with pytest.raises(CompactionSettingsError, match=match):
        Keep.parse(spec, window=None, error=CompactionSettingsError)


# -- compact_context -------------------------------------------------------------------------


async def test_compact_context_keeps_by_tokens() -> None:
    history = [Message.user("task")]
    for i in range(30):
        history += [Message.user(f"question {i} " + "word " * 40), Message.assistant(f"a{i}")]
    out = await compact_context(
        history, ExtractiveTransport(), max_messages=0, keep=("tokens", 300)
    )
    assert out is not None
    kept = kept_part(history, out)
    assert 0 < MessageLog(kept).total_tokens <= 300
    # the longest suffix that fits: one message more would not
    assert MessageLog(history[len(history) - len(kept) - 1 :]).total_tokens > 300


async def test_compact_context_keeps_a_fraction_of_a_models_window() -> None:
    history = agent_session(40)
    out = await compact_context(
        history, ExtractiveTransport(), max_messages=0, keep=("fraction", 0.001), model="gpt-4.1"
    )
    assert out is not None
    window_share = int(1_047_576 * 0.001)
    assert MessageLog(kept_part(history, out)).total_tokens <= window_share
    with pytest.raises(UnknownModel):
        await compact_context(
            history, ExtractiveTransport(), keep=("fraction", 0.1), model="nope-9"
        )


async def test_keep_and_keep_recent_together_are_refused() -> None:
    with pytest.raises(CompactionSettingsError, match="not both"):
        await compact_context(
            agent_session(9), ExtractiveTransport(), keep_recent=2, keep=("messages", 3)
        )


@settings(max_examples=80, deadline=None)
@given(
    histories(),
    st.sampled_from(["messages", "tokens"]),
    st.integers(0, 400),
    st.one_of(st.none(), st.integers(1, 400)),
)
async def test_kept_part_is_pair_safe_and_satisfies_the_policy(
    history: list[Message], kind: str, value: int, cap: int | None
) -> None:
    if kind == "messages":
        value %= 15
    transport = Recording()
    out = await compact_context(
        history, transport, max_messages=0, keep=(kind, value), summary_input_tokens=cap
    )
    if out is None:
        return
    before = {(v.kind, v.tool_use_id) for v in validate(history)}
    assert {(v.kind, v.tool_use_id) for v in validate(out)} <= before
    kept = kept_part(history, out)
    start = len(history) - len(kept)
    assert safe_cuts(history)[start]
    assert not (kept and kept[0].tool_results)
    if kind == "messages":
        assert len(kept) >= value
    elif not any(m.tool_results and not safe_cuts(history)[i] for i, m in enumerate(history)):
        assert MessageLog(kept).total_tokens <= value
    sent = transport.sent[0]
    # The summariser gets no orphan the history did not have (the task is pinned out of
    # what it is sent, so its first message need not be the user's).
    sent_faults = {
        (v.kind, v.tool_use_id) for v in validate(sent) if v.kind != "non_user_first_turn"
    }
    assert sent_faults <= before | {(v.kind, v.tool_use_id) for v in validate(history[:start])}
    if cap is not None and MessageLog(sent).total_tokens > cap:
        # over the cap only when the earlier summary or the newest pair-safe piece alone is
        conversation = MessageLog([m for m in sent if not is_summary(m)])
        assert conversation.safe_cut_at_or_before(len(conversation) - 1) == 0 or (
            MessageLog([m for m in sent if is_summary(m)]).total_tokens > cap
        )


# -- the cap on the summariser's input -------------------------------------------------------


async def test_summary_input_cap_sends_the_newest_part_and_counts_the_whole_span() -> None:
    history = [Message.user("task")]
    for i in range(40):
        history += [Message.user(f"q{i} " + "word " * 30), Message.assistant(f"answer {i}")]
    transport = Recording()
    out = await compact_context(
        history, transport, max_messages=0, keep_recent=4, summary_input_tokens=200
    )
    assert out is not None
    sent = transport.sent[0]
    assert MessageLog(sent).total_tokens <= 200
    assert sent[-1] == history[-5]  # the newest summarised message is sent
    assert Message.user("q0 " + "word " * 30) not in sent  # the oldest are not
    assert summarised(out) == len(history) - 1 - 4  # the summary still covers all of them


async def test_summary_input_cap_never_sends_an_orphan_and_keeps_the_earlier_summary() -> None:
    history = agent_session(30)
    transport = Recording()
    first = await compact_context(history, transport, max_messages=0, keep_recent=20)
    assert first is not None
    longer = first + agent_session(30, system=False)[1:]
    out = await compact_context(
        longer, transport, max_messages=0, keep_recent=4, summary_input_tokens=150
    )
    assert out is not None
    sent = transport.sent[1]
    assert is_summary(sent[0])  # the memory so far always goes
    assert not [v for v in validate(sent[1:]) if v.kind != "non_user_first_turn"]
    assert not sent[1].tool_results
    replaced = len(longer) - len(kept_part(longer, out))
    assert summarised(out) == summarised(first) + replaced - 3  # less system, task, summary


async def test_auto_compact_store_takes_keep_and_the_cap() -> None:
    transport = Recording()
    inner = await MemoryContextStore.from_history(agent_session(40))
    store = AutoCompactStore(
        inner, transport, max_tokens=100_000, keep=("tokens", 120), summary_input_tokens=300
    )
    event = await store.compact()
    assert event.kind == "compacted"
    history = await store.get_history()
    kept = kept_part(agent_session(40), history)
    assert MessageLog(kept).total_tokens <= 120
    assert MessageLog(transport.sent[0]).total_tokens <= 300
    fork = await store.fork()
    assert fork.keep == ("tokens", 120) and fork.summary_input_tokens == 300
    with pytest.raises(CompactionSettingsError, match="fraction"):
        AutoCompactStore(inner, transport, keep=("fraction", 2))
    with pytest.raises(CompactionSettingsError, match="summary_input_tokens"):
        AutoCompactStore(inner, transport, summary_input_tokens=0)
