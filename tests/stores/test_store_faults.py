"""Faults on the server stores, with their counts printed in the run.

* A stopped server (SIGSTOP of a private Redis / PostgreSQL): every call comes back within
  the store's ``timeout`` plus a small margin with a typed error — a write
  ``OutcomeUnknownError`` (it may have been applied: here it is, once the server resumes),
  a read ``StoreError`` — and a retry with ``idempotent_ids=True`` stores each message once.
* ``kill -9`` of a writer process mid-append (Redis and PostgreSQL; SQLite has its own in
  ``test_store_reliability.py``): no acknowledged append lost, none duplicated, no batch torn.
* Compare-and-swap compaction racing an appender process: every acknowledged append is
  either in the history or inside a prefix the compactor replaced; stale swaps are refused.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import ContextStore, Message, OutcomeUnknownError, StaleGenerationError, StoreError

from servers import Server, report
from store_backends import (
    PERSISTENT_BACKENDS,
    SERVER_KINDS,
    Backend,
    open_server_store,
    opened,
    private_server,
)
from test_server_kill import check_history, start_writer

TIMEOUT = 1.5  # the store's bound in these tests
MARGIN = 1.0  # what a loaded 2-core machine may add to it

Opener = Callable[..., Awaitable[ContextStore]]


async def _timed(call: Awaitable[Any]) -> tuple[BaseException | None, float]:
    start = time.monotonic()
    try:
        await call
    except Exception as e:
        return e, time.monotonic() - start
    return None, time.monotonic() - start


async def _stopped_server_round(server: Server, open_store: Opener) -> dict[str, int]:
    store = await open_store(timeout=TIMEOUT, idempotent_ids=True)
    try:
        await store.append(Message.user("acknowledged", id="m0"))
        unsure = [Message.user("sent to a stopped server", id="m1")]
        server.pause()
        try:
            unknown = 0
            err, took = await _timed(store.append(unsure[0]))
            assert isinstance(err, OutcomeUnknownError), repr(err)
            unknown += 1
            assert err.operation == "append" and err.__cause__ is not None
            assert took < TIMEOUT + MARGIN, f"append took {took:.2f}s"
            err, took = await _timed(store.get_history())
            assert isinstance(err, StoreError), repr(err)
            assert took < TIMEOUT + MARGIN, f"get_history took {took:.2f}s"
            unsure.append(Message.user("another one", id="m2"))
            err, took = await _timed(store.append_many(unsure[1:]))
            assert isinstance(err, (OutcomeUnknownError, StoreError)), repr(err)
            unknown += isinstance(err, OutcomeUnknownError)
            assert took < TIMEOUT + MARGIN, f"append_many took {took:.2f}s"
            err, took = await _timed(store.set_context_tokens(1, 2))
            assert isinstance(err, (OutcomeUnknownError, StoreError)), repr(err)
            assert took < TIMEOUT + MARGIN, f"set_context_tokens took {took:.2f}s"
            unknown += isinstance(err, OutcomeUnknownError)
        finally:
            server.resume()
        history: list[Message] = []
        for _ in range(40):  # the server takes a moment to catch up after SIGCONT
            try:
                history = await store.get_history()
                break
            except StoreError:
                await asyncio.sleep(0.1)
        applied = sum(1 for m in history if m.id in {"m1", "m2"})
        # What the docs say to do after OutcomeUnknownError: retry with idempotent ids.
        await store.append_many(unsure)
        await asyncio.sleep(0.2)  # let a late copy of the first attempt land, if any
        ids = [m.id for m in await store.get_history()]
        assert ids == ["m0", "m1", "m2"], ids  # each once, in order
        return {
            "acknowledged": 1,
            "lost": 0,
            "duplicated": len(ids) - len(set(ids)),
            "unknown": unknown,
            "applied_while_unknown": applied,
        }
    finally:
        await store.close()


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_a_stopped_server_gives_typed_errors_within_the_timeout(
    kind: str, request: pytest.FixtureRequest
) -> None:
    with private_server(kind) as server:
        counts = asyncio.run(
            _stopped_server_round(
                server, lambda **kw: open_server_store(kind, server.url, "paused", "stop", **kw)
            )
        )
    report(request, "server SIGSTOP", kind, **counts)


# --------------------------------------------------------------------------------------------
# kill -9 of a writer process, on the shared servers (only the writer dies)


@pytest.mark.parametrize("factory", [p for p in PERSISTENT_BACKENDS if p.id != "sqlite"])
def test_kill9_of_a_writer_loses_no_acknowledged_append(
    factory: Callable[[Path], Backend], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    backend: Any = factory(tmp_path)
    kind, url, namespace = backend.name, backend.url, backend.namespace

    def open_store() -> Awaitable[ContextStore]:
        return open_server_store(kind, url, "victim", namespace)

    rng = random.Random(7)
    acked: set[str] = set()
    counts: dict[str, int] = {}
    try:
        for r in range(5):
            writer = start_writer(kind, url, r * 100_000, namespace)
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.1, 0.4))
            writer.kill()
            out, _ = writer.communicate()
            acked |= set(out.split("\n")[:-1])  # complete lines only
            counts = check_history(open_store, acked)
        assert counts["acknowledged"] > 5
    finally:
        asyncio.run(backend.cleanup())
    report(request, "writer kill -9 x5 (batches)", backend.name, **counts)


# --------------------------------------------------------------------------------------------
# CAS compaction racing an appender process

_APPENDER = r"""
import asyncio, pickle, sys
from ctxtrim import Message
sys.path.insert(0, sys.argv[2])
backend = pickle.loads(bytes.fromhex(sys.argv[1]))

async def main():
    from store_backends import opened
    async with opened(backend, "race") as store:
        print("ready", flush=True)
        i = 0
        while True:
            await store.append(Message.user(f"a{i}", id=f"a{i}"))
            print(f"a{i}", flush=True)
            i += 1

asyncio.run(main())
"""


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
def test_cas_compaction_racing_an_appender_loses_nothing(
    factory: Callable[[Path], Backend], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import pickle

    backend = factory(tmp_path)
    tests_dir = str(Path(__file__).parents[1])  # the shared helpers (store_backends...)
    proc = subprocess.Popen(
        [sys.executable, "-c", _APPENDER, pickle.dumps(backend).hex(), tests_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )

    async def compact() -> tuple[set[str], int, int]:
        summarised: set[str] = set()
        applied = stale = 0
        async with opened(backend, "race") as store:
            for k in range(25):
                messages, generation = await store.snapshot()
                upto = len(messages) // 2
                await asyncio.sleep(0.01)  # a slow summariser: the appender keeps going
                summary = Message.user(f"summary {k}", id=f"s{k}")
                if k % 5 == 4:  # now and then another client rewrites first: must be stale
                    async with opened(backend, "race") as other:
                        _, g = await other.snapshot()
                        await other.replace_prefix(0, [], g)
                try:
                    await store.replace_prefix(upto, [summary], generation)
                except StaleGenerationError:
                    stale += 1
                    continue
                applied += 1
                summarised |= {m.id or "" for m in messages[:upto]}
        return summarised, applied, stale

    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        summarised, applied, stale = asyncio.run(compact())
        proc.kill()
        out, _ = proc.communicate()
        acked = {line for line in out.split("\n")[:-1] if line.startswith("a")}

        async def final() -> list[str]:
            async with opened(backend, "race") as store:
                return [m.id or "" for m in await store.get_history()]

        ids = asyncio.run(final())
        appended = [i for i in ids if i.startswith("a")]
        lost = acked - summarised - set(appended)
        assert not lost, f"lost: {sorted(lost)[:5]}"
        assert len(ids) == len(set(ids))
        assert stale >= 5 and applied >= 10
        assert appended == sorted(appended, key=lambda i: int(i[1:]))  # order kept
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        asyncio.run(backend.cleanup())
    report(
        request,
        "CAS compaction vs appender",
        backend.name,
        acknowledged=len(acked),
        lost=len(lost),
        duplicated=len(ids) - len(set(ids)),
        unknown=len(set(appended) - acked),
        swaps_applied=applied,
        swaps_stale=stale,
    )


# --------------------------------------------------------------------------------------------
# PostgreSQL: a pool whose connections the server closed heals on checkout


class _Warnings(logging.Handler):
    """Counts the warnings psycopg_pool logs (it printed hundreds during one outage)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def _client_backends(admin: Any) -> list[int]:
    cur = await admin.execute(
        "SELECT pid FROM pg_stat_activity"
        " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    )
    return [int(row[0]) for row in await cur.fetchall()]


async def _healing_round(server: Server, how: str) -> dict[str, int]:
    """Fill the store's pool, close every pooled connection from the server's side (``how``:
    ``terminate`` = ``pg_terminate_backend`` on each, ``restart`` = a fast shutdown and a
    start), then make 12 appends and 12 reads, one at a time, once the server answers."""
    import psycopg

    from ctxtrim.stores.postgres import PostgresContextStore

    warnings = _Warnings()
    logger = logging.getLogger("psycopg.pool")
    logger.addHandler(warnings)
    store = await PostgresContextStore.open(
        server.url, "healing", schema="heal", timeout=TIMEOUT, max_connections=4
    )
    try:
        # Four at once: the pool grows to its four connections.
        await asyncio.gather(*[store.append(Message.user(f"before {i}")) for i in range(8)])
        async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as admin:
            pooled = await _client_backends(admin)
        assert len(pooled) >= 2, pooled  # the store's pool holds several connections
        if how == "terminate":
            async with await psycopg.AsyncConnection.connect(server.url, autocommit=True) as admin:
                for pid in pooled:
                    await admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                for _ in range(100):  # gone server-side: the server has closed each one
                    if not set(pooled) & set(await _client_backends(admin)):
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError("the terminated backends did not exit")
        else:
            server.stop()
            server.start()
        failed: list[str] = []
        start = time.monotonic()
        for i in range(12):
            calls: list[Callable[[], Awaitable[object]]] = [
                functools.partial(store.append, Message.user(f"after {i}")),
                store.get_history,
            ]
            for call in calls:
                try:
                    await call()
                except Exception as e:  # counted: the test asserts there are none
                    failed.append(f"{type(e).__name__}: {e}")
        took = time.monotonic() - start
        assert failed == [], failed
        texts = [m.text for m in await store.get_history()]
        assert texts[8:] == [f"after {i}" for i in range(12)], texts
        assert took < 12 * TIMEOUT / 2, f"24 calls took {took:.2f}s"
        # One "discarding closed connection" per connection the server closed, no more.
        assert len(warnings.messages) <= len(pooled), warnings.messages
        return {
            "acknowledged": 20,
            "lost": 0,
            "duplicated": 0,
            "unknown": 0,
            "closed_by_server": len(pooled),
            "failed_calls": len(failed),
            "pool_warnings": len(warnings.messages),
            "calls_ms": int(took * 1000),
        }
    finally:
        logger.removeHandler(warnings)
        await store.close()


@pytest.mark.parametrize("how", ["terminate", "restart"])
def test_a_postgres_pool_heals_with_no_failed_call_once_the_server_answers(
    how: str, request: pytest.FixtureRequest
) -> None:
    """``pg_terminate_backend`` on every pooled connection, or a server restart: the next
    calls all succeed (they used to fail, one per dead pooled connection), and psycopg_pool
    logs one warning per closed connection at most."""
    with private_server("postgres") as server:
        counts = asyncio.run(_healing_round(server, how))
    report(request, f"pooled connections closed by the server ({how})", "postgres", **counts)
