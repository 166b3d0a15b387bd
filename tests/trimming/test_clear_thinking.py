"""ClearThinking: only the last ``keep`` assistant messages keep their reasoning; the current
tool-use loop's always does (Anthropic requires it back with the tool results)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import (
    ClearThinking,
    ClearToolResults,
    InvalidStrategy,
    Message,
    MessageLog,
    Pipeline,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    validate,
)
from ctxtrim.formats import from_anthropic, to_anthropic


def thinking(i: int) -> ReasoningBlock:
    return ReasoningBlock(f"let me think about step {i} " * 20, signature=f"sig{i}")


def reasoning_session(turns: int, rounds: int = 2, *, open_loop: bool = False) -> list[Message]:
    """``turns`` user turns, each ``rounds`` thinking tool rounds and a thinking answer; with
    ``open_loop`` the last turn stops at a tool result (the model is still working)."""
    out = [Message.system("You are terse.")]
    k = 0
    for t in range(turns):
        out.append(Message.user(f"question {t}"))
        for _ in range(rounds):
            k += 1
            out.append(Message.assistant([thinking(k)], tool_uses=[(f"t{k}", "search", {})]))
            out.append(Message.tool_results(ToolResultBlock(f"t{k}", f"result {k}")))
        if not (open_loop and t == turns - 1):
            k += 1
            out.append(Message.assistant([thinking(k), TextBlock(f"answer {t}")]))
    return out


def with_reasoning(messages: list[Message]) -> list[int]:
    return [
        i for i, m in enumerate(messages) if any(isinstance(b, ReasoningBlock) for b in m.content)
    ]


def test_keeps_the_last_n_messages_reasoning_and_clears_the_rest() -> None:
    history = reasoning_session(4)
    before = with_reasoning(history)
    out = ClearThinking(keep=2)(history)
    assert with_reasoning(out) == before[-2:]
    assert len(out) == len(history) and validate(out) == []
    for i, (a, b) in enumerate(zip(history, out, strict=True)):
        if i in before[:-2]:
            assert [x for x in a.content if not isinstance(x, ReasoningBlock)] == list(b.content)
        else:
            assert a is b  # untouched messages are the same objects


def test_the_current_tool_loop_keeps_its_reasoning_even_with_keep_0() -> None:
    history = reasoning_session(3, rounds=3, open_loop=True)
    last_user = max(i for i, m in enumerate(history) if m.is_real_user)
    loop = [i for i in with_reasoning(history) if i > last_user]
    assert len(loop) == 3
    out = ClearThinking(keep=0)(history)
    assert with_reasoning(out) == loop  # required by the provider: never dropped
    # keep counts the protected messages: keep=4 keeps one more, from the turn before
    out4 = ClearThinking(keep=4)(history)
    assert with_reasoning(out4) == [with_reasoning(history)[-4], *loop]


def test_a_closed_turn_is_not_protected() -> None:
    history = reasoning_session(2)  # ends with a final answer: the loop is closed
    out = ClearThinking(keep=1)(history)
    assert with_reasoning(out) == [len(history) - 1]


def test_idempotent_and_same_list_when_nothing_changes() -> None:
    strategy = ClearThinking(keep=2)
    history = reasoning_session(5, open_loop=True)
    once = strategy(history)
    assert once is not history
    assert strategy(once) is once
    assert strategy.describe(once).unchanged
    plain = [Message.user("hi"), Message.assistant("hello")]
    assert strategy(plain) is plain


def test_reasoning_only_message_gets_a_placeholder_never_empty() -> None:
    history = [
        Message.user("q"),
        Message.assistant([ReasoningBlock("hmm", signature="s")]),
        Message.user("again"),
        Message.assistant([thinking(2), TextBlock("done")]),
    ]
    out = ClearThinking(keep=1, placeholder="[no thoughts]")(history)
    assert out[1].content == (TextBlock("[no thoughts]"),)
    assert out[3] is history[3]


def test_redacted_thinking_from_anthropic_is_cleared_and_round_trips() -> None:
    wire = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "a"},
            ],
        },
        {"role": "user", "content": "q2"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "x", "signature": "s"},
                {"type": "text", "text": "b"},
            ],
        },
    ]
    out = to_anthropic(ClearThinking(keep=1)(from_anthropic(wire)))["messages"]
    assert out[1]["content"] == [{"type": "text", "text": "a"}]
    assert out[3]["content"][0]["type"] == "thinking"


def test_report_prices_the_change_like_clear_tool_results() -> None:
    history = reasoning_session(6)
    report = ClearThinking(keep=1).describe(history)
    cleared = with_reasoning(history)[:-1]
    assert report.changed == tuple(cleared) and report.changed_messages == len(cleared)
    assert report.dropped == () and report.messages_after == len(history)
    assert report.tokens_after < report.tokens_before
    out = ClearThinking(keep=1)(history)
    assert report.tokens_after == MessageLog(out).total_tokens


def test_trigger_in_tokens() -> None:
    history = reasoning_session(3)
    total = MessageLog(history).total_tokens
    assert ClearThinking(keep=1, trigger=total)(history) is history
    assert ClearThinking(keep=1, trigger=total - 1)(history) is not history


def test_log_input_and_pipeline_with_tool_result_clearing() -> None:
    history = reasoning_session(4)
    log = MessageLog(history)
    assert ClearThinking(keep=1).apply(log) == ClearThinking(keep=1)(history)
    out = Pipeline(ClearThinking(keep=1), ClearToolResults(0, keep=1))(history)
    assert with_reasoning(out) == [len(history) - 1] and validate(out) == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"keep": -1}, "keep"),
        ({"keep": "2"}, "keep"),
        ({"trigger": -5}, "trigger"),
        ({"placeholder": ""}, "placeholder must be a non-empty str"),
    ],
)
def test_bad_settings(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidStrategy, match=match):
        ClearThinking(**kwargs)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    turns=st.integers(1, 6),
    rounds=st.integers(0, 3),
    keep=st.integers(0, 8),
    open_loop=st.booleans(),
)
def test_properties(turns: int, rounds: int, keep: int, open_loop: bool) -> None:
    history = reasoning_session(turns, rounds, open_loop=open_loop)
    out = ClearThinking(keep=keep)(history)
    assert len(out) == len(history) and validate(out) == []
    assert [m.role for m in out] == [m.role for m in history]
    assert all(m.content for m in out)
    had = with_reasoning(history)
    has = with_reasoning(out)
    last_user = max(i for i, m in enumerate(history) if m.is_real_user)
    open_ = history[-1].role == "user" and not history[-1].is_real_user
    protected = [i for i in had if open_ and i > last_user and history[i].has_tool_uses]
    assert set(protected) <= set(has)
    assert has == had[max(0, len(had) - max(keep, len(protected))) :]
    assert ClearThinking(keep=keep)(out) is out
