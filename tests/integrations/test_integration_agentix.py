"""ctxtrim.integrations.agentix against the real agentix-toolkit package, and ctxtrim's own
FitContextWindow / custom-strategy API that the agentix drop-in relies on."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agentix.context")

from agentix import context as ax
from agentix.content import ImagePart, TextPart
from agentix.types import Message as AxMessage
from agentix.types import Role, ToolCall

import ctxtrim
from ctxtrim import InvalidStrategy, Message, Pipeline, validate
from ctxtrim.integrations import agentix as cx


def sys(text: str = "be brief") -> AxMessage:
    return AxMessage(Role.SYSTEM, text)


def user(text: str) -> AxMessage:
    return AxMessage(Role.USER, text, trusted=True)


def call(cid: str | None, text: str = "") -> AxMessage:
    return AxMessage(Role.ASSISTANT, text, meta={"tool_calls": [ToolCall("ls", {"d": "x"}, cid)]})


def res(cid: str | None, text: str = "out") -> AxMessage:
    meta = {} if cid is None else {"call_id": cid}
    return AxMessage(Role.TOOL, text, name="ls", meta=meta)


def answer(text: str) -> AxMessage:
    return AxMessage(Role.ASSISTANT, text)


def run(strategy: object, messages: list[AxMessage]) -> list[AxMessage]:
    return asyncio.run(strategy.compact(messages))  # type: ignore[attr-defined]


def transcript(rounds: int, size: int = 400) -> list[AxMessage]:
    out = [sys(), user("task")]
    for r in range(rounds):
        out += [call(f"c{r}"), res(f"c{r}", "x" * size)]
    out.append(answer("done"))
    return out


def test_counters_match_agentix() -> None:
    msgs = [
        *transcript(3),
        AxMessage(Role.USER, [TextPart("look"), ImagePart(data="aGk=", media_type="image/png")]),
    ]
    for counter in (ax.approx_token_counter, len, ax.HeuristicTokenCounter(2.5)):
        ours = counter if counter is len else cx.HeuristicTokenCounter(counter.chars_per_token)  # type: ignore[attr-defined]
        for m in msgs:
            assert cx.count_message_tokens(m, ours) == ax.count_message_tokens(m, counter)
        assert cx.count_tokens(msgs, ours, per_message_overhead=9, tokens_per_media=10) == (
            ax.count_tokens(msgs, counter, per_message_overhead=9, tokens_per_media=10)
        )
    assert cx.HeuristicTokenCounter(4.0)("abcde") == 2
    assert cx.HeuristicTokenCounter(chars_per_token=2)("abcde") == 3
    with pytest.raises(ValueError):
        cx.HeuristicTokenCounter(0)


def test_strategies_are_agentix_strategies_and_keep_identity() -> None:
    msgs = transcript(2)
    for s in (cx.FitContextWindow(8000, len), cx.TrimRounds(5), cx.TruncateToolOutputs(10_000)):
        assert isinstance(s, ax.ContextStrategy)
        assert run(s, msgs) is msgs


@pytest.mark.parametrize("budget", [300, 1200, 2500, 5000])
def test_fit_context_window_matches_agentix_on_plain_rounds(budget: int) -> None:
    msgs = transcript(12)
    kwargs = {"reserve_tokens": 100, "per_message_overhead": 7, "tokens_per_media": 600}
    ours = run(cx.FitContextWindow(budget, ax.approx_token_counter, **kwargs), msgs)
    theirs = run(ax.FitContextWindow(budget, ax.approx_token_counter, **kwargs), msgs)
    assert ours == theirs
    assert all(any(m is o for o in msgs) for m in ours)  # agentix's own objects


def test_trim_rounds_counts_agentix_rounds_and_joins_a_late_result_to_its_call() -> None:
    # Rounds are agentix's: a later user question belongs to the round before it, so
    # TrimRounds(1) keeps what agentix keeps.
    msgs = [
        sys(),
        user("task"),
        call("c1"),
        res("c1"),
        answer("a"),
        user("next?"),
        call("c2"),
        res("c2"),
    ]
    ours = run(cx.TrimRounds(1), msgs)
    assert ours == run(ax.TrimRounds(1), msgs)
    assert [m.text or m.role.value for m in ours] == ["be brief", "task", "assistant", "out"]
    # A result that arrives after another reply: agentix keeps it without its call (a
    # provider rejects that); ours keeps the two rounds together.
    late = [sys(), user("task"), call("c1"), answer("working"), res("c1"), answer("done")]
    theirs = run(ax.TrimRounds(2), late)
    assert [m.role for m in theirs[2:]] == [Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert theirs[3] is late[4]  # the result, its call dropped
    assert run(cx.TrimRounds(2), late) is late  # joined: the three rounds are two


def test_positional_pairing_without_ids() -> None:
    msgs = [sys(), user("task")]
    for _ in range(5):
        msgs += [call(None), res(None, "y" * 200)]
    out = run(cx.FitContextWindow(200, len), msgs)
    assert out[0] is msgs[0] and out[1] is msgs[1]
    assert out[2].role is Role.ASSISTANT and out[-1].role is Role.TOOL
    assert len(out) < len(msgs)


def test_truncate_tool_outputs() -> None:
    msgs = [user("t"), call("c"), res("c", "👍🏽" * 10), res("c", "ok")]
    out = run(cx.TruncateToolOutputs(5), msgs)
    assert out is not msgs and out[3] is msgs[3] and out[0] is msgs[0]
    clipped = out[2].content
    assert clipped.endswith("...[truncated]") and len(clipped) <= 5 + len("...[truncated]")  # type: ignore[union-attr]  # a tool result's content is a string
    assert clipped[: -len("...[truncated]")] == "👍🏽👍🏽"  # whole graphemes only
    assert run(cx.TruncateToolOutputs(5), out) is out  # idempotent
    with pytest.raises(ValueError):
        cx.TruncateToolOutputs(0)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        cx.FitContextWindow(0)
    with pytest.raises(ValueError):
        cx.FitContextWindow(10, reserve_tokens=-1)
    with pytest.raises(TypeError):
        cx.FitContextWindow(10, "len")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        cx.TrimRounds(0)
    with pytest.raises(TypeError):
        run(cx.TrimRounds(1), [Message.user("not agentix")])  # type: ignore[list-item]


def test_in_an_agentix_agent_loop() -> None:
    from agentix.agent import Agent

    agent = Agent.__new__(Agent)
    agent.context_strategy = cx.FitContextWindow(300, len)
    emitted: list[tuple[int, int]] = []

    class Events:
        async def emit(self, name: str, before: int, after: int) -> None:
            emitted.append((before, after))

    agent.events = Events()  # type: ignore[assignment]  # a duck-typed event sink: only emit is called
    msgs = transcript(10, size=100)
    out = asyncio.run(agent._compact(msgs))
    assert emitted and emitted[0] == (len(msgs), len(out)) and len(out) < len(msgs)
    emitted.clear()
    assert asyncio.run(agent._compact(out)) is out and not emitted


# ---- ctxtrim's own FitContextWindow and custom strategies --------------------------------


def ct_history() -> list[Message]:
    return [
        Message.system("sys"),
        Message.user("task"),
        *[
            m
            for i in range(6)
            for m in (
                Message.assistant([ctxtrim.ToolUseBlock(id=f"t{i}", name="ls", input={})]),
                Message.tool_results(
                    [ctxtrim.ToolResultBlock(tool_use_id=f"t{i}", content="z" * 80)]
                ),
            )
        ],
    ]


def test_ctxtrim_fit_takes_a_callable_and_prices() -> None:
    h = ct_history()
    fit = ctxtrim.FitContextWindow(300, len)
    out = fit(h)
    assert validate(out) == [] and len(out) < len(h)
    # 80 chars per result + overhead 4 per message: the count is len-based.
    assert fit.counter is not None and fit.counter.count_message(h[3]) == 84
    priced = ctxtrim.FitContextWindow(10_000, per_message_overhead=0, tokens_per_media=600)
    assert priced.counter is not None and priced.counter.count_message(Message.user("")) == 0
    assert ctxtrim.FitContextWindow(10_000, ctxtrim.HeuristicTokenCounter())(h) is h
    with pytest.raises(InvalidStrategy):
        ctxtrim.FitContextWindow(100, "len")  # type: ignore[arg-type]
    with pytest.raises(InvalidStrategy):
        ctxtrim.FitContextWindow(100, per_message_overhead=-1)


class DropImagesNote(ctxtrim.ContextStrategy):
    """A custom strategy: drop user messages that say 'noise'."""

    def compact(self, messages: list[Message]) -> list[Message]:
        kept = [m for m in messages if m.text != "noise"]
        return messages if len(kept) == len(messages) else kept


def test_custom_strategy_is_public_and_composes() -> None:
    h = [Message.user("task"), Message.user("noise"), Message.assistant("ok")]
    s = DropImagesNote()
    assert s(h) == [h[0], h[2]]
    clean = [h[0], h[2]]
    assert s(clean) is clean
    report = s.describe(h)
    assert report.dropped == (1,) and report.messages_after == 2
    long = [*h, Message.user("q2"), Message.assistant("a2"), Message.user("q3")]
    both = Pipeline(DropImagesNote(), ctxtrim.KeepLastTurns(1, pin_task=False))
    assert both(long) == [long[-1]]
    assert both.describe(long).dropped == (0, 1, 2, 3, 4)
    log = ctxtrim.MessageLog(h)
    assert s.apply(log) == [h[0], h[2]]

    class Lazy(ctxtrim.ContextStrategy):
        pass

    with pytest.raises(NotImplementedError, match="compact"):
        Lazy()(h)

    class Bad(ctxtrim.ContextStrategy):
        def compact(self, messages: list[Message]) -> list[Message]:
            return ["x"]  # type: ignore[list-item]

    with pytest.raises(InvalidStrategy):
        Bad()(h)
    # The shipped strategies answer compact() too.
    assert ctxtrim.KeepLastMessages(1).compact(h) == ctxtrim.KeepLastMessages(1)(h)
