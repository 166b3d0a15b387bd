"""pytest-benchmark: the in-place clearing strategies per turn, at 1k, 10k and 100k messages.

``ClearToolResults`` past its trigger, ``ClearThinking`` and ``TruncateToolOutputs`` are
called on a reasoning model's agent history (each assistant message carries reasoning, each
round a tool call and its result, longer than the clip), ``KeepRecentImages`` on the same
with a screenshot in each result (a computer-use agent's), one round appended before each
timed call, as an agent calls them before every model request: on the agent's own list
(``strategy(history)``) and on a memory store (``strategy.apply(store)``). Speed is
reported, never asserted; in the normal run each case runs once as a smoke test. The
numbers say how the cost of a call grows with the history: a strategy remembers its pass
over the history (``ctxtrim._memo``), so a turn reads the round appended since, and what is
left growing is two pointer passes over the list (see docs/performance.md). In a
``Pipeline`` ending in a cut, the clearing step's output is read in place and only the
window is handed out: on a store nothing grows with the history, on a list one pointer pass.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from test_bench_dropins import _rounds, _timed

from ctxtrim import (
    ClearThinking,
    ClearToolResults,
    FitContextWindow,
    KeepRecentImages,
    MemoryContextStore,
    Message,
    Pipeline,
    ToolResultBlock,
    TruncateToolOutputs,
)
from ctxtrim.messages import ImageBlock, ReasoningBlock, TextBlock, ToolUseBlock

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


def _screenshot_round(i: int) -> list[Message]:
    """A reasoning round whose tool result carries a screenshot."""
    out = _reasoning_round(i)
    if i:
        result = out[1].tool_results[0]
        shot = ImageBlock("image/png", b"\x89PNG" + str(i).encode())
        out[1] = Message.tool_results(
            ToolResultBlock(result.tool_use_id, (TextBlock(str(result.content)), shot))
        )
    return out


STRATEGIES: dict[str, Any] = {
    "ClearToolResults": lambda: ClearToolResults(50_000, keep=3),
    "ClearThinking": lambda: ClearThinking(keep=1),
    "TruncateToolOutputs": lambda: TruncateToolOutputs(100),
    "KeepRecentImages": lambda: KeepRecentImages(3),
    # The turn as an agent runs it: clear, then fit the request's window.
    "Pipeline(ClearToolResults, FitContextWindow)": lambda: Pipeline(
        ClearToolResults(50_000, keep=3), FitContextWindow(100_000)
    ),
}
#: The history a strategy is called on, when not the reasoning agent's.
ROUNDS: dict[str, Callable[[int], list[Message]]] = {"KeepRecentImages": _screenshot_round}


def _store_rounds(
    make: Callable[[int], list[Message]], n: int
) -> tuple[MemoryContextStore, Callable[[], None]]:
    """``(a memory store of about n messages, append one more round to it)``."""
    counter = itertools.count()
    history: list[Message] = []
    while len(history) < n:
        history += make(next(counter))
    store = MemoryContextStore(history)

    def grow() -> None:
        asyncio.run(store.append_many(make(next(counter))))

    return store, grow


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("path", ["list", "store"])
@pytest.mark.parametrize("name", list(STRATEGIES))
def test_clearing_strategy_turn(benchmark: Any, name: str, path: str, n: int) -> None:
    strategy = STRATEGIES[name]()
    make = ROUNDS.get(name, _reasoning_round)
    if path == "list":
        history, grow = _rounds(make, n)
        call: Callable[[], object] = lambda: strategy(history)  # noqa: E731
    else:
        store, grow = _store_rounds(make, n)
        call = lambda: strategy.apply(store)  # noqa: E731
    _timed(benchmark, f"{name} {path} turn {n}", "ctxtrim", grow, call, rounds=15)
