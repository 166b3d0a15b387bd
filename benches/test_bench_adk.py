"""pytest-benchmark: ctxtrim's Google ADK plugin against ADK's ``ContextFilterPlugin``, per
model request, at 1k and 10k contents.

The history is a chat of invocations (a question, a function call without an id as ADK
sends a Gemini model, its response, an answer); before each timed call one invocation is
appended and the request's contents are copied fresh (untimed), as ADK copies every
session content into every request; the copies a plugin drops are freed outside the timing
(that cost is ADK's, whichever plugin runs). Timed: the plugin's ``before_model_callback`` on that
request, each side through its documented API:

* ``ContextFilterPlugin(num_invocations_to_keep=50)`` (the original: a scan of every
  content for invocation starts, then a slice);
* ctxtrim's ``ContextFilterPlugin(num_invocations_to_keep=50)`` (the drop-in: the same
  window, pair-safe, read from the end);
* ``TrimContents(strategy=KeepLastTurns(50))``: the last 50 user turns, the task pinned;
* ``TrimContents(max_tokens=8000)``: a token budget (what ADK's plugin cannot express).

Run ``pytest benches/test_bench_adk.py --benchmark-enable --benchmark-group-by=group``
in a venv with ``ctxtrim[adk]`` (google-adk needs google-genai < 3, which the test extra
does not allow); without google-adk the file skips by name. ``python
benches/test_bench_adk.py [--sizes 1000,10000] [--rounds 100]`` times the pairs in
alternating rounds in one process instead (``paired_dropins.paired``: the median of the
per-round ratios, so a slow stretch of the VM slows both sides). Speed is reported, never
asserted.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from test_bench_dropins import _rounds, _timed

if os.environ.get("CTXTRIM_REQUIRE_ADK") != "1":
    pytest.importorskip("google.adk", reason="peer google-adk not installed")

from google.adk.models.llm_request import LlmRequest
from google.adk.plugins.context_filter_plugin import ContextFilterPlugin
from google.genai import types

from ctxtrim import KeepLastTurns
from ctxtrim.integrations import google_adk as ours
from ctxtrim.integrations.google_adk import TrimContents

SIZES = (1_000, 10_000)


def _round(i: int) -> list[types.Content]:
    fc = types.FunctionCall(name="search", args={"q": str(i)})
    fr = types.FunctionResponse(name="search", response={"result": f"result {i} " * 20})
    return [
        types.Content(role="user", parts=[types.Part(text=f"question {i}")]),
        types.Content(role="model", parts=[types.Part(function_call=fc)]),
        types.Content(role="user", parts=[types.Part(function_response=fr)]),
        types.Content(role="model", parts=[types.Part(text=f"answer {i} " * 10)]),
    ]


def _fresh(history: list[types.Content]) -> list[types.Content]:
    """The request's contents as ADK builds them: a shallow copy of each content and part."""
    out = []
    for c in history:
        copy = c.model_copy()
        copy.parts = [p.model_copy() for p in c.parts or ()]
        out.append(copy)
    return out


IMPLS = (
    "ContextFilterPlugin(50)",
    "ctxtrim ContextFilterPlugin(50)",
    "ctxtrim KeepLastTurns(50)",
    "ctxtrim 8000 tokens",
)


def _plugin(impl: str) -> Any:
    if impl == "ContextFilterPlugin(50)":
        return ContextFilterPlugin(num_invocations_to_keep=50)
    if impl == "ctxtrim ContextFilterPlugin(50)":
        return ours.ContextFilterPlugin(num_invocations_to_keep=50)
    if impl == "ctxtrim KeepLastTurns(50)":
        return TrimContents(strategy=KeepLastTurns(50))
    return TrimContents(max_tokens=8000)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
def test_adk_before_model(benchmark: Any, impl: str, n: int) -> None:
    loop = asyncio.new_event_loop()
    try:
        grow, call, _ = _side(impl, n, loop)
        _timed(benchmark, f"ADK before_model {n}", impl, grow, call)
    finally:
        loop.close()


def _side(impl: str, n: int, loop: asyncio.AbstractEventLoop) -> Any:
    """``(grow, call, close)``: append an invocation and copy the request (untimed), run
    the plugin on it (timed)."""
    history, grow = _rounds(_round, n)
    plugin = _plugin(impl)
    # The request, and its full contents held here: the copies a plugin drops are freed in
    # the next setup, not in the timed call (ADK frees them after the request either way).
    request = [LlmRequest(model="gemini-2.5-flash", contents=_fresh(history))]
    held = [request[0].contents]

    def grow_and_copy() -> None:
        grow()
        request[0] = LlmRequest(model="gemini-2.5-flash", contents=_fresh(history))
        held[0] = request[0].contents

    def call() -> Any:
        req = request[0]
        loop.run_until_complete(
            plugin.before_model_callback(callback_context=None, llm_request=req)
        )
        return req.contents

    return grow_and_copy, call, lambda: None


def main() -> None:
    import argparse

    from paired_dropins import paired

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    print(
        f"{'ctxtrim side':32} {'contents':>8} {'original µs':>12} {'ctxtrim µs':>11} {'ratio':>6}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        for impl in IMPLS[1:]:
            loop = asyncio.new_event_loop()
            try:
                a, b, ratio = paired(_side(IMPLS[0], n, loop), _side(impl, n, loop), args.rounds)
            finally:
                loop.close()
            print(f"{impl:32} {n:>8} {a * 1e6:>12.1f} {b * 1e6:>11.1f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
