"""pytest-benchmark: what a token counter costs an agent turn, and reading an image's size.

An agent turn appends one round (the user's step, a tool call, its result, an answer; new
message objects, so each is counted once) to a history of 1k or 10k messages and trims it
with ``FitContextWindow(8000, counter=…)``: the heuristic estimate (no counter),
``ExactTokenCounter`` for o200k_base counting with the core's tokenizer (``exact``), and the
same counter on bpe-openai's own tokenizer (``exact-bpe-openai``: what it falls back to where
bpe-openai's vocabulary file cannot be read, and how it counted before the core had a
tokenizer). Run with ``pytest
benches/test_bench_counters.py --benchmark-enable --benchmark-group-by=group``; in the normal
run each case runs once as a smoke test. Speed is reported, never asserted.
"""

from __future__ import annotations

import itertools
import struct
from typing import Any
from unittest import mock

import pytest

from ctxtrim import ExactTokenCounter, FitContextWindow, TokenCounter, bench, tokens
from ctxtrim.tokens import image_size, image_tokens

SIZES = (1_000, 10_000)
IMPLS = ["heuristic", "exact", "exact-bpe-openai"]


def _counter(impl: str) -> TokenCounter | None:
    if impl == "heuristic":
        return None
    pytest.importorskip("bpe_openai")
    if impl == "exact-bpe-openai":
        with mock.patch.object(tokens, "_core_counter", lambda name: None):
            counter = ExactTokenCounter("o200k_base")
        assert counter.backend == "bpe-openai"
        return counter
    counter = ExactTokenCounter("o200k_base")
    assert counter.backend == "ctxtrim"
    return counter


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
def test_agent_turn(benchmark: Any, impl: str, n: int) -> None:
    turns = bench.agent_history(n // 4 + 400)
    fresh = itertools.count(n // 4)
    history = bench.ctxtrim_messages(turns[: n // 4])
    strategy = FitContextWindow(8_000, counter=_counter(impl))
    strategy(history)  # the history so far is counted, as in a running agent

    def setup() -> tuple[tuple[()], dict[str, Any]]:
        history.extend(bench.ctxtrim_turn(turns[next(fresh)]))
        return (), {}

    benchmark.group = f"agent turn, {n} messages"
    benchmark.extra_info["impl"] = impl
    benchmark.pedantic(lambda: strategy(history), setup=setup, rounds=200, warmup_rounds=5)


@pytest.mark.parametrize("impl", IMPLS)
def test_agent_loop_turn(benchmark: Any, impl: str) -> None:
    """The agent-loop workload of docs/performance.md: the round's 4 messages built inside
    the timed call, appended, and the window fitted; 1k messages."""
    turns = bench.agent_history(250 + 400)
    fresh = itertools.count(250)
    history = bench.ctxtrim_messages(turns[:250])
    strategy = FitContextWindow(8_000, counter=_counter(impl))
    strategy(history)

    def turn() -> object:
        history.extend(bench.ctxtrim_turn(turns[next(fresh)]))
        return strategy(history)

    benchmark.group = "agent loop turn (messages built), 1000 messages"
    benchmark.extra_info["impl"] = impl
    benchmark.pedantic(turn, rounds=200, warmup_rounds=5)


def test_image_size_of_a_1mb_png(benchmark: Any) -> None:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", 1280, 800)
    png = header + bytes(1 << 20)
    assert image_size(png) == (1280, 800)
    benchmark.group = "image header"
    benchmark(image_tokens, png)
