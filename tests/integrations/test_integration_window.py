"""The drop-ins decide the same window as a ctxtrim strategy on the same history.

A drop-in converts each framework message to a skeleton (a ctxtrim message), and the core
decides on them: read from the list's ends (a history handed over once), or on a
MessageLog mirror kept in step with the list (a history handed over again, grown). Both
must keep exactly what the strategy keeps on the list of skeletons.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxtrim import FitContextWindow, Message, _core
from ctxtrim.integrations._common import take


def _fc(i: str, args: str = "{}") -> dict[str, Any]:
    return {"type": "function_call", "call_id": i, "name": "f", "arguments": args}


def _fo(i: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": i, "output": output}


@st.composite
def _rounds(draw: st.DrawFn) -> list[list[tuple[str, Any]]]:
    """Rounds of an agent loop, framework-neutral: ("user", text), ("calls", ids),
    ("results", [(id, text)]) in any order, ("answer", text)."""
    rounds: list[list[tuple[str, Any]]] = []
    for r in range(draw(st.integers(0, 25))):
        steps: list[tuple[str, Any]] = []
        if draw(st.booleans()):
            steps.append(("user", "u " * draw(st.integers(1, 40))))
        ids = [f"c{r}_{j}" for j in range(draw(st.integers(0, 3)))]
        if ids:
            steps.append(("calls", ids))
            order = draw(st.permutations(ids))
            steps.append(("results", [(i, "x " * draw(st.integers(0, 150))) for i in order]))
        if draw(st.booleans()):
            steps.append(("answer", "a " * draw(st.integers(1, 60))))
        rounds.append(steps)
    return rounds


def _list_window(skeletons: list[Message], strategy: FitContextWindow) -> list[int]:
    """Indices the strategy keeps of the skeleton list (read from its ends by the core)."""
    ranges, _, _ = _core.cut_window(
        skeletons,
        "budget",
        strategy.budget,
        pin_task=strategy.pin_task,
        start_with_user=strategy.start_with_user,
    )
    return [i for a, b in ranges for i in range(a, b)]


def _positions(kept: list[Any], history: list[Any]) -> list[int]:
    where = {id(x): i for i, x in enumerate(history)}
    return [where[id(x)] for x in kept]


@settings(max_examples=60, deadline=None)
@given(_rounds(), _rounds(), st.integers(20, 3000), st.booleans())
def test_trim_input_window_is_the_strategy_window(
    first: list[list[tuple[str, Any]]],
    later: list[list[tuple[str, Any]]],
    budget: int,
    pin_task: bool,
) -> None:
    pytest.importorskip("agents")
    from ctxtrim.integrations.openai_agents import item_to_message, trim_input

    def items(rounds: list[list[tuple[str, Any]]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for steps in rounds:
            for kind, v in steps:
                if kind == "user":
                    out.append({"role": "user", "content": v})
                elif kind == "calls":
                    out += [_fc(i, '{"q":"' + i + '"}') for i in v]
                elif kind == "results":
                    out += [_fo(i, text) for i, text in v]
                else:
                    out.append({"role": "assistant", "content": v})
        return out

    strategy = FitContextWindow(budget, pin_task=pin_task)
    callback = trim_input(budget, pin_task=pin_task)
    history = [{"role": "user", "content": "the task"}, *items(first)]
    # Three calls on one history object: read from its ends, mirrored, mirror extended.
    for step in range(3):
        if step == 2:
            history += items(later)
        new = [{"role": "user", "content": f"next {step}"}]
        got = callback(history, new)
        whole = [*history, *new]
        want = _list_window([item_to_message(it) for it in whole], strategy)
        assert _positions(got, whole) == want


@settings(max_examples=60, deadline=None)
@given(_rounds(), _rounds(), st.integers(20, 3000), st.booleans())
def test_trim_history_window_is_the_strategy_window(
    first: list[list[tuple[str, Any]]],
    later: list[list[tuple[str, Any]]],
    budget: int,
    pin_task: bool,
) -> None:
    m = pytest.importorskip("pydantic_ai.messages")
    from ctxtrim.integrations.pydantic_ai import TrimHistory, to_skeleton

    def messages(rounds: list[list[tuple[str, Any]]]) -> list[Any]:
        out: list[Any] = []
        for steps in rounds:
            for kind, v in steps:
                if kind == "user":
                    out.append(m.ModelRequest(parts=[m.UserPromptPart(v)]))
                elif kind == "calls":
                    calls = [m.ToolCallPart("f", {"q": i}, tool_call_id=i) for i in v]
                    out.append(m.ModelResponse(parts=calls))
                elif kind == "results":
                    parts = [m.ToolReturnPart("f", t, tool_call_id=i) for i, t in v]
                    out.append(m.ModelRequest(parts=parts))
                else:
                    out.append(m.ModelResponse(parts=[m.TextPart(v)]))
        return out

    strategy = FitContextWindow(budget, pin_task=pin_task)
    proc = TrimHistory(budget, pin_task=pin_task)
    head = m.ModelRequest(parts=[m.SystemPromptPart("agent"), m.UserPromptPart("task")])
    history = [head, *messages(first)]
    for step in range(3):
        if step == 2:
            history += messages(later)
        history.append(m.ModelRequest(parts=[m.UserPromptPart(f"next {step}")]))
        got = proc(history)
        want = _list_window([to_skeleton(x) for x in history], strategy)
        assert _positions(got, history) == want


@settings(max_examples=40, deadline=None)
@given(_rounds(), _rounds(), st.integers(1, 40), st.integers(1, 3), st.integers(1, 40))
def test_autogen_views_are_the_strategy_windows(
    first: list[list[tuple[str, Any]]],
    later: list[list[tuple[str, Any]]],
    buffer_size: int,
    head_size: int,
    tail_size: int,
) -> None:
    pytest.importorskip("autogen_core")
    from autogen_core import FunctionCall
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        SystemMessage,
        UserMessage,
    )

    from ctxtrim._core import MessageLog
    from ctxtrim.integrations.autogen import (
        BufferedChatCompletionContext,
        HeadAndTailChatCompletionContext,
        _drop_leading_orphans,
        buffered_view,
        head_tail_cuts,
        to_skeleton,
    )

    def messages(rounds: list[list[tuple[str, Any]]]) -> list[Any]:
        out: list[Any] = []
        for steps in rounds:
            for kind, v in steps:
                if kind == "user":
                    out.append(UserMessage(content=v, source="user"))
                elif kind == "calls":
                    calls = [FunctionCall(id=i, name="f", arguments="{}") for i in v]
                    out.append(AssistantMessage(content=calls, source="a"))
                elif kind == "results":
                    results = [
                        FunctionExecutionResult(call_id=i, content=t, name="f") for i, t in v
                    ]
                    out.append(FunctionExecutionResultMessage(content=results))
                else:
                    out.append(AssistantMessage(content=v, source="a"))
        return out

    history: list[Any] = [SystemMessage(content="agent"), UserMessage(content="task", source="u")]
    history += messages(first)
    buffered = BufferedChatCompletionContext(buffer_size, initial_messages=list(history))
    head_tail = HeadAndTailChatCompletionContext(head_size, tail_size, list(history))

    async def run() -> None:
        for step in range(2):
            if step == 1:
                extra = messages(later)
                history.extend(extra)
                for x in extra:
                    await buffered.add_message(x)
                    await head_tail.add_message(x)
            skeletons = [to_skeleton(x, i) for i, x in enumerate(history)]
            ranges, unchanged, _ = _core.cut_window(
                skeletons, "messages", buffer_size, pin_task=False, start_with_user=False
            )
            core = _drop_leading_orphans(list(history) if unchanged else take(history, ranges))
            want = buffered_view(history, buffer_size, core)
            assert await buffered.get_messages() == want
            # HeadAndTail: the head and the tail cut as on the whole list.
            got = await head_tail.get_messages()
            n = len(history)
            if n <= head_size + tail_size:
                assert got == _drop_leading_orphans(list(history))
                continue
            h, t = head_tail_cuts(history, head_size, tail_size, MessageLog(skeletons))
            if t <= h:
                assert got == _drop_leading_orphans(list(history))
            else:
                assert got[:h] == history[:h] and got[h + 1 :] == history[t:]
                assert got[h].content == f"Skipped {t - h} messages."

    asyncio.run(run())
