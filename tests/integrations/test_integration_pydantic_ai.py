"""ctxtrim.integrations.pydantic_ai.TrimHistory against the real pydantic-ai: a real Agent
run through ``capabilities=[...]`` sends the model a trimmed, pair-safe history in which
nothing had to be repaired; a naive slice processor (pydantic-ai's docs' pattern) needs
pydantic-ai's repair and then starts with a ModelResponse."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "pydantic_ai", reason="pydantic-ai-slim not installed: pip install 'ctxtrim[pydantic-ai]'"
)

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ctxtrim.integrations.pydantic_ai import TrimHistory, to_skeleton


def pair_problems(messages: list[ModelMessage]) -> list[str]:
    """Orphan tool returns and tool calls without their return (the obvious way)."""
    calls: set[str] = set()
    returns: set[str] = set()
    problems = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                calls.add(p.tool_call_id)
            elif isinstance(p, ToolReturnPart):
                if p.tool_call_id not in calls:
                    problems.append(f"orphan return {p.tool_call_id}")
                returns.add(p.tool_call_id)
    return problems + [f"call {c} without return" for c in calls - returns]


def synthesized(messages: list[ModelMessage]) -> int:
    return sum(
        1
        for m in messages
        for p in m.parts
        if isinstance(p, ToolReturnPart)
        and (p.metadata or {}).get("pydantic_ai_synthesized_tool_return")
    )


def run_agent(processor: Any, steps: int = 12) -> list[list[ModelMessage]]:
    """A real Agent calling a tool ``steps`` times; returns what the model saw each time."""
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) <= steps:
            return ModelResponse(
                parts=[ToolCallPart("lookup", {"q": "x" * 200}, tool_call_id=f"t{len(seen)}")]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(
        FunctionModel(model),
        system_prompt="You are terse.",
        capabilities=[ProcessHistory(processor)],
    )

    @agent.tool_plain
    def lookup(q: str) -> str:
        return "result " * 60

    result = agent.run_sync("Find the bug.")
    assert result.output == "done"
    return seen


def test_agent_sees_a_trimmed_pair_safe_history_with_the_task() -> None:
    trim = TrimHistory(max_tokens=900)
    seen = run_agent(trim)
    assert len(seen[-1]) < len(seen[len(seen) // 2]) + 20  # bounded, not growing
    for messages in seen:
        assert pair_problems(messages) == []
        assert synthesized(messages) == 0  # nothing needed pydantic-ai's repair
        first = messages[0]
        assert isinstance(first, ModelRequest)
        kinds = {type(p) for p in first.parts}
        assert SystemPromptPart in kinds and UserPromptPart in kinds
        assert isinstance(messages[-1], ModelRequest)
    assert max(len(m) for m in seen) < len(run_agent(lambda ms: ms)[-1])


def test_capability_helper_is_process_history() -> None:
    trim = TrimHistory(max_tokens=900)
    cap = trim.capability()
    assert isinstance(cap, ProcessHistory) and cap.processor is trim


def test_naive_slice_needs_repair_ours_does_not() -> None:
    # The documented "keep the last N" processor leaves an orphan that pydantic-ai then
    # drops, so the model's history starts with a ModelResponse.
    seen = run_agent(lambda ms: ms[-3:] if len(ms) > 3 else ms, steps=4)
    assert any(isinstance(m[0], ModelResponse) for m in seen)
    for messages in run_agent(TrimHistory(max_tokens=400), steps=4):
        assert isinstance(messages[0], ModelRequest)


def history(rounds: int) -> list[ModelMessage]:
    out: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("sys"), UserPromptPart("task")])
    ]
    for r in range(rounds):
        calls = [ToolCallPart("f", {"i": r}, tool_call_id=f"c{r}-{j}") for j in range(r % 3 + 1)]
        out.append(ModelResponse(parts=[TextPart("step " * 20), *calls]))
        out.append(
            ModelRequest(
                parts=[ToolReturnPart("f", "out " * 40, tool_call_id=c.tool_call_id) for c in calls]
            )
        )
    return out


@given(st.integers(0, 25), st.integers(20, 3000))
@settings(max_examples=60, deadline=None)
def test_processor_output_is_a_pinned_head_plus_a_safe_suffix(rounds: int, budget: int) -> None:
    messages = history(rounds)
    out = TrimHistory(budget)(messages)
    assert pair_problems(out) == []
    assert out[0] is messages[0] and out[-1] is messages[-1]
    if out is not messages:
        k = len(out) - 1
        assert out[1:] == messages[len(messages) - k :]
        assert isinstance(out[1], ModelResponse)  # a round starts with the model's calls
    assert TrimHistory(budget)(out) is out  # idempotent: nothing more to trim


def test_skeleton_maps_parts_to_tool_ids() -> None:
    req = ModelRequest(parts=[ToolReturnPart("f", "x", tool_call_id="c1"), UserPromptPart("hi")])
    sk = to_skeleton(req)
    assert sk.role == "user" and [r.tool_use_id for r in sk.tool_results] == ["c1"]
    resp = ModelResponse(parts=[TextPart("t"), ToolCallPart("f", {}, tool_call_id="c2")])
    assert [u.id for u in to_skeleton(resp).tool_uses] == ["c2"]


@pytest.mark.parametrize("budget", [300, 3000, 30_000])
def test_long_history_reads_the_window_and_equals_the_whole_list_decision(budget: int) -> None:
    from ctxtrim import _core

    messages = history(3000)
    out = TrimHistory(budget)(messages)
    # The decision on the whole list (every message converted), for comparison.
    ranges, unchanged, _ = _core.cut_window(
        [to_skeleton(m) for m in messages], "budget", budget, pin_task=True
    )
    whole = messages if unchanged else [m for a, b in ranges for m in messages[a:b]]
    assert out == whole
    assert pair_problems(out) == []


def test_each_message_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctxtrim.integrations.pydantic_ai as mod

    seen: list[int] = []

    def counting(m: ModelMessage, i: int = 0) -> Any:
        seen.append(id(m))
        return to_skeleton(m, i)

    monkeypatch.setattr(mod, "to_skeleton", counting)
    trim = TrimHistory(2000)
    messages = history(3000)
    trim(messages)
    assert len(seen) < 1000  # the head and the tail of 6001 messages
    # Handed again (the same objects, grown), the history is mirrored in a log: the rest
    # of it is converted once, then each call converts only the new round.
    messages += [
        ModelResponse(parts=[ToolCallPart("f", {}, tool_call_id="new")]),
        ModelRequest(parts=[ToolReturnPart("f", "ok", tool_call_id="new")]),
    ]
    trim(messages)
    assert len(set(seen)) == len(seen)  # no message converted twice
    for k in range(3):
        seen.clear()
        messages += [
            ModelResponse(parts=[ToolCallPart("f", {}, tool_call_id=f"new{k}")]),
            ModelRequest(parts=[ToolReturnPart("f", "ok", tool_call_id=f"new{k}")]),
        ]
        trim(messages)
        assert len(seen) == 2  # only the new round
