"""pytest-benchmark suites: ctxtrim against the peer libraries, on the same histories.

Run with ``make bench`` (``pytest benches --benchmark-enable``); in the normal run the
benchmarks are disabled and every case runs once as a smoke test (CI does that). Peers
come from the ``bench`` extra (``pip install '.[bench]'``); a missing one is a skip that
names the package. axio needs Python >= 3.12, so it is measured only by ``ctxtrim bench``
(``python -m ctxtrim.bench``), which runs it in a 3.12 subprocess.

Each case reports ``benchmark.group`` (the workload and size) and
``benchmark.extra_info["impl"]``, so ``--benchmark-group-by=group`` prints the side-by-side
table. The histories come from :func:`ctxtrim.bench.agent_history` and are converted to
each library's types once, before timing.
"""

from __future__ import annotations

import asyncio
import importlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ctxtrim import MemoryContextStore, Message, MessageLog, estimate_tokens, validate
from ctxtrim import bench as b
from ctxtrim.bench import loops, peers

SIZES = (1_000, 10_000)
ROUNDS = 30  # turns measured per case when benchmarking; each needs a fresh turn
TURNS = b.agent_history(max(SIZES) // 4 + ROUNDS + 2)
IMPLS = [
    "ctxtrim MessageLog.fit_budget",
    "ctxtrim FitContextWindow",
    "agentix FitContextWindow",
    "agentix TrimRounds",
    "LangChain trim_messages",
    "autogen Buffered",
    "autogen TokenLimited",
]


@pytest.fixture(scope="module")
def factories() -> dict[str, Any]:
    return {name: (factory, reason) for name, factory, reason in loops.loop_factories(TURNS)}


@pytest.fixture(scope="module")
def messages() -> list[Message]:
    return b.ctxtrim_messages(b.agent_history(max(SIZES) // 4))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", IMPLS)
def test_agent_turn(benchmark: Any, factories: dict[str, Any], impl: str, n: int) -> None:
    """One agent turn at n messages: append user, tool call, tool result, answer; then the
    request view within 8k tokens."""
    factory, reason = factories.get(impl, (None, f"{impl}: its package is not installed"))
    if factory is None:
        pytest.skip(reason)
    if impl == "autogen TokenLimited" and n > loops.QUADRATIC_LIMIT:
        pytest.skip("autogen TokenLimited recounts after every pop: one fit takes seconds here")
    loop, later = factory(n // 4)
    turns = iter(later)

    def step() -> object:
        loop.add(next(turns))
        return loop.fit()

    benchmark.group = f"agent turn at {n:,} messages"
    benchmark.extra_info["impl"] = impl
    view = benchmark.pedantic(step, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    assert len(view) > 0
    if impl.startswith("ctxtrim"):
        view = list(view)
        assert validate(view) == []
        assert view[0].role == "system" and view[1].role == "user"  # the pinned head
        assert sum(MessageLog(view).token_counts()) <= b.BUDGET


def test_append_log(benchmark: Any, messages: list[Message]) -> None:
    log = MessageLog()
    it = iter(messages * 50)
    benchmark.group = "append one message"
    benchmark.extra_info["impl"] = "ctxtrim MessageLog.append"
    benchmark(lambda: log.append(next(it)))
    assert len(log) >= 1


def test_append_log_fork_alive(benchmark: Any, messages: list[Message]) -> None:
    log = MessageLog(messages[:1_000])
    fork = log.fork()  # appends must not copy what the fork shares
    it = iter(messages * 50)
    benchmark.group = "append one message"
    benchmark.extra_info["impl"] = "ctxtrim MessageLog.append, fork alive"
    benchmark(lambda: log.append(next(it)))
    assert len(fork) == 1_000 < len(log)


def test_append_list(benchmark: Any, messages: list[Message]) -> None:
    plain: list[Message] = []
    it = iter(messages * 50)
    benchmark.group = "append one message"
    benchmark.extra_info["impl"] = "Python list.append"
    benchmark(lambda: plain.append(next(it)))


@pytest.mark.parametrize("impl", ["ctxtrim get_history", "ctxtrim to_list", "list copy"])
def test_get_history_10k(benchmark: Any, messages: list[Message], impl: str) -> None:
    n = 10_000
    benchmark.group = f"get_history() at {n:,}"
    benchmark.extra_info["impl"] = impl
    if impl == "ctxtrim get_history":
        store = MemoryContextStore(messages[:n])
        out = benchmark(lambda: b.drive(store.get_history()))
    elif impl == "ctxtrim to_list":
        log = MessageLog(messages[:n])
        out = benchmark(log.to_list)
    else:
        plain = list(messages[:n])
        out = benchmark(plain.copy)
    assert out == messages[:n]


@pytest.mark.parametrize("n", [5_000])
def test_fork(benchmark: Any, messages: list[Message], n: int) -> None:
    store = MemoryContextStore(messages[:n])
    benchmark.group = f"fork at {n:,}"
    benchmark.extra_info["impl"] = "ctxtrim MemoryContextStore.fork"
    child = benchmark(lambda: b.drive(store.fork()))
    assert len(child) == n


def test_fork_axio() -> None:
    pytest.skip(
        "axio needs Python >= 3.12; `python -m ctxtrim.bench` measures its deep-copy fork "
        "in a 3.12 subprocess"
    )


@pytest.fixture(scope="module")
def corpus_texts() -> list[str]:
    return [t for items in b.corpora(samples=20).values() for t in items]


def test_estimate_ctxtrim(benchmark: Any, corpus_texts: list[str]) -> None:
    benchmark.group = "token estimate, four corpora"
    benchmark.extra_info["impl"] = "ctxtrim estimate_tokens"
    total = benchmark(lambda: sum(estimate_tokens(t) for t in corpus_texts))
    assert total > sum(len(t) for t in corpus_texts) / 8


@pytest.mark.parametrize("threads", [1, 2])
def test_estimate_large_texts_in_threads(
    benchmark: Any, corpus_texts: list[str], threads: int
) -> None:
    """estimate_tokens releases the GIL above 64 KiB, so two threads should take about half
    the time of one on a machine with two free cores."""
    text = "\n".join(corpus_texts)
    big = (text * (256 * 1024 // len(text) + 1))[: 256 * 1024]
    texts = [big] * 4
    with ThreadPoolExecutor(threads) as pool:
        benchmark.group = "estimate 4 texts of 256 KiB"
        benchmark.extra_info["impl"] = f"ctxtrim, {threads} thread(s)"
        total = benchmark(lambda: sum(pool.map(estimate_tokens, texts)))
    assert total == 4 * estimate_tokens(big)


def test_estimate_langchain(benchmark: Any, corpus_texts: list[str]) -> None:
    utils = pytest.importorskip("langchain_core.messages.utils", reason="langchain-core")
    human = importlib.import_module("langchain_core.messages").HumanMessage
    msgs = [[human(t)] for t in corpus_texts]
    benchmark.group = "token estimate, four corpora"
    benchmark.extra_info["impl"] = "LangChain count_tokens_approximately"
    benchmark(lambda: sum(utils.count_tokens_approximately(m) for m in msgs))


@pytest.mark.parametrize("n", [100, 10_000])
@pytest.mark.parametrize("impl", ["ctxtrim SQLiteContextStore", "openai-agents SQLiteSession"])
def test_sqlite_append(benchmark: Any, tmp_path: Any, impl: str, n: int) -> None:
    """Append latency with n messages already stored (flat is the goal)."""
    turns = b.agent_history(n // 4 + 40)
    benchmark.group = f"SQLite append at {n:,}"
    benchmark.extra_info["impl"] = impl
    loop = asyncio.new_event_loop()
    try:
        if impl.startswith("ctxtrim"):
            mod = pytest.importorskip("ctxtrim.stores.sqlite", reason="ctxtrim SQLite store")
            store = loop.run_until_complete(mod.SQLiteContextStore.open(tmp_path / "c.db", "s"))
            msgs = b.ctxtrim_messages(turns)
            loop.run_until_complete(store.append_many(msgs[:n]))
            it = iter(msgs[n:])
            benchmark.pedantic(
                lambda: loop.run_until_complete(store.append(next(it))), rounds=20, iterations=1
            )
            assert len(loop.run_until_complete(store.get_history())) > n
            loop.run_until_complete(store.close())
        else:
            memory = pytest.importorskip("agents.memory", reason="openai-agents")
            session = memory.SQLiteSession("s", tmp_path / "oa.db")
            items = peers.openai_items(turns)
            loop.run_until_complete(session.add_items(items[:n]))
            it = iter(items[n:])
            benchmark.pedantic(
                lambda: loop.run_until_complete(session.add_items([next(it)])),
                rounds=20,
                iterations=1,
            )
            assert len(loop.run_until_complete(session.get_items())) > n
            session.close()
    finally:
        loop.close()
