"""kill -9 of the server mid-append loses no acknowledged append and leaves no torn message
(and a batch is all-or-nothing), for Redis (AOF on, ``appendfsync always``) and PostgreSQL.

Each test runs its own private server on 127.0.0.1 (a free port, a temp data dir), so
killing it disturbs nothing else. A writer process appends batches of 1-5 messages of
0-20 KB, printing a batch's tag only after ``append_many`` returned; the server is killed
with SIGKILL at a random moment, restarted (crash recovery), and the stored history is
checked: every acknowledged batch is there, every stored batch is whole and in order, no
message is duplicated, and every payload passes its CRC and decodes.
"""

from __future__ import annotations

import asyncio
import random
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from ctxtrim import ContextStore, Message
from ctxtrim.errors import OutcomeUnknownError, StoreError

from servers import Server, report
from store_backends import SERVER_KINDS, open_server_store, private_server

StoreFactory = Callable[[], Awaitable[ContextStore]]

WRITER = r"""
import asyncio, random, sys
kind, url, sid, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
namespace = sys.argv[5]  # the Redis prefix or the PostgreSQL schema
sys.path.insert(0, sys.argv[6])  # tests/
from ctxtrim import Message
from store_backends import open_server_store

async def main():
    store = await open_server_store(kind, url, sid, namespace, connect_timeout=2)
    print("ready", flush=True)
    i = start
    while True:
        n = random.randint(1, 5)
        await store.append_many([
            Message.user(f"b{i} {k}/{n} " + "x" * random.randint(0, 20_000), id=f"b{i}-{k}")
            for k in range(n)
        ])
        print(f"b{i}", flush=True)  # acknowledged: append_many returned
        i += 1

asyncio.run(main())
"""


def start_writer(kind: str, url: str, start: int, namespace: str = "kill") -> subprocess.Popen[str]:
    tests_dir = str(Path(__file__).parents[1])  # the shared helpers (store_backends...)
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, kind, url, "victim", str(start), namespace, tests_dir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def run_rounds(
    server: Server, kind: str, url: str, rounds: int, check: Callable[[set[str]], dict[str, int]]
) -> dict[str, int]:
    """``rounds`` times (writer appends, server SIGKILLed at a random moment, restart,
    check); returns the last check's counts."""
    rng = random.Random(1234)
    acked: set[str] = set()
    counts: dict[str, int] = {}
    for r in range(rounds):
        writer = start_writer(kind, url, start=r * 100_000)
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.1, 0.5))
        server.kill9()
        # Nothing can be acknowledged once the server is dead; what the writer printed
        # before is in the pipe. (A commit whose reply was not yet printed is "stored but
        # unacknowledged", which the check allows.)
        writer.kill()
        out, _ = writer.communicate()
        new = set(out.split())
        assert new, "the writer acknowledged nothing before the kill; widen the window"
        acked |= new
        server.start()
        counts = check(acked)
    return counts


def check_typed_error_when_the_server_dies(
    server: Server, store_factory: StoreFactory, driver_error: type[BaseException]
) -> None:
    """A store whose server is SIGKILLed under it raises a typed error (the driver's error
    as the cause) on its next calls, instead of a driver exception or a hang: a read
    ``StoreError``; a write ``StoreError`` when it is known not to have been sent, else
    ``OutcomeUnknownError`` (the client cannot tell whether the dying server ran it)."""

    async def go() -> None:
        store = await store_factory()
        await store.get_history()
        server.kill9()
        with pytest.raises((StoreError, OutcomeUnknownError)) as err:
            await store.append(Message.user("after the crash"))
        assert isinstance(err.value.__cause__, driver_error)
        with pytest.raises(StoreError) as read_err:
            await store.get_history()
        assert isinstance(read_err.value.__cause__, driver_error)
        await store.close()

    asyncio.run(go())
    server.start()


def check_history(store_factory: StoreFactory, acked: set[str]) -> dict[str, int]:
    """Check the stored history against the acknowledged batches; return the counts."""

    async def go() -> dict[str, int]:
        store = await store_factory()
        try:
            history = await store.get_history()  # every payload's CRC is checked here
        finally:
            await store.close()
        ids = [m.id or "" for m in history]
        assert len(ids) == len(set(ids)), "a message was stored twice"
        batches: dict[str, list[tuple[int, int]]] = {}
        order: list[str] = []
        for m in history:
            tag, pos = re.match(r"(b\d+) (\d+/\d+) ", m.text).groups()  # type: ignore[union-attr]
            k, n = map(int, pos.split("/"))
            if tag not in batches:
                order.append(tag)
            batches.setdefault(tag, []).append((k, n))
        for tag, parts in batches.items():
            n = parts[0][1]
            assert parts == [(k, n) for k in range(n)], f"batch {tag} is torn: {parts}"
        assert order == sorted(order, key=lambda t: int(t[1:])), "batches out of order"
        assert acked <= set(batches), f"acknowledged but lost: {sorted(acked - set(batches))}"
        return {
            "acknowledged": len(acked),
            "lost": len(acked - set(batches)),
            "duplicated": len(ids) - len(set(ids)),
            "unknown": len(set(batches) - acked),  # stored, but the reply never arrived
        }

    return asyncio.run(go())


def connection_error(kind: str) -> type[BaseException]:
    """The error the driver of ``kind`` raises when its server is gone."""
    if kind == "redis":
        import redis.exceptions

        return redis.exceptions.ConnectionError
    import psycopg

    return psycopg.OperationalError


#: Kill rounds per kind (a PostgreSQL restart, with crash recovery, takes longer).
ROUNDS = {"redis": 5, "postgres": 3}


@pytest.mark.parametrize("kind", SERVER_KINDS)
def test_kill9_of_the_server_loses_no_acknowledged_append(
    kind: str, request: pytest.FixtureRequest
) -> None:
    with private_server(kind) as server:
        url = server.url

        def open_store() -> Awaitable[ContextStore]:
            return open_server_store(kind, url, "victim", "kill", timeout=3)

        counts = run_rounds(
            server,
            kind,
            url,
            rounds=ROUNDS[kind],
            check=lambda acked: check_history(open_store, acked),
        )
        report(request, f"server kill -9 x{ROUNDS[kind]} (batches)", kind, **counts)
        check_typed_error_when_the_server_dies(server, open_store, connection_error(kind))
