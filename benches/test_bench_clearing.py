"""pytest-benchmark: the in-place clearing strategies per turn, at 1k, 10k and 100k messages.

``ClearToolResults`` past its trigger and ``ClearThinking`` are called on a reasoning
model's agent history (each assistant message carries reasoning, each round a tool call and
its result), one round appended before each timed call, as an agent calls them before every
model request. Speed is reported, never asserted; in the normal run each case runs once as a
smoke test. The numbers say how the cost of a call grows with the history (both scan the
whole list each call: see docs/performance.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_bench_dropins import _rounds, _timed

from ctxtrim import ClearThinking, ClearToolResults, Message, ToolResultBlock
from ctxtrim.messages import ReasoningBlock, TextBlock, ToolUseBlock

SIZES = (1_000, 10_000, 100_000)


def _reasoning_round(i: int) -> list[Message]:
    if i == 0:
        return [Message.system("You are an agent."), Message.user("the task")]
    cid = f"call_{i}"
    return [
        Message(
            "assistant",
            (ReasoningBlock(f"think {i} " * 20), ToolUseBlock(cid, "search", {"q": str(i)})),
        ),
        Message.tool_results(ToolResultBlock(cid, f"result {i} " * 20)),
        Message("assistant", (ReasoningBlock(f"think {i} " * 10), TextBlock(f"answer {i} " * 10))),
    ]


STRATEGIES: dict[str, Any] = {
    "ClearToolResults": lambda: ClearToolResults(50_000, keep=3),
    "ClearThinking": lambda: ClearThinking(keep=1),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_clearing_strategy_turn(benchmark: Any, name: str, n: int) -> None:
    strategy = STRATEGIES[name]()
    history, grow = _rounds(_reasoning_round, n)
    _timed(benchmark, f"{name} turn {n}", "ctxtrim", grow, lambda: strategy(history), rounds=5)
