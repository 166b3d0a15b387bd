"""RedisContextStore specifics, against a real redis-server (``CTXTRIM_REDIS_URL``).

The shared conformance and reliability suites cover the ``ContextStore`` contract; this file
covers what only Redis has: the key layout (hashed ids in a hash tag, nothing outside the
prefix, never ``KEYS``), isolation of ids peers let collide (``"a"``, ``"a:messages"``), idempotent
retries, TTL, and typed errors for a server that is down or misused.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from ctxtrim import (
    CorruptRecordError,
    InvalidArgument,
    InvalidMessage,
    Message,
    StaleGenerationError,
)
from ctxtrim.errors import StoreError

if TYPE_CHECKING:
    from redis.asyncio import Redis

redis_asyncio = pytest.importorskip("redis.asyncio", reason="the redis extra is not installed")
from ctxtrim.stores.redis import RedisContextStore  # noqa: E402

URL = os.environ.get("CTXTRIM_REDIS_URL", "")
NO_SERVER = "CTXTRIM_REDIS_URL is not set (start one with scripts/services.sh)"

TRICKY_IDS = ["a", "a:messages", "*", "a}", "{a}", "a\x00", "a\x00b", "ä" * 400, "x" * 1024]


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    if not URL:
        pytest.skip(NO_SERVER)
    c = redis_asyncio.Redis.from_url(URL)
    yield c
    await c.aclose()


@pytest.fixture
def prefix() -> str:
    if not URL:
        pytest.skip(NO_SERVER)
    return f"test:{uuid.uuid4().hex[:12]}"


async def keys_under(client: Redis, prefix: str) -> set[bytes]:
    # The test inspects with SCAN; the store itself never lists keys.
    return {k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)}


async def command_calls(client: Redis, command: str) -> int:
    stats = await client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def sha(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


async def test_key_layout_is_hashed_ids_in_a_hash_tag_under_the_prefix(
    client: Redis, prefix: str
) -> None:
    store = await RedisContextStore.open(URL, "tenant:a", prefix=prefix)
    await store.append_many([Message.user("hi"), Message.assistant("hello")])
    await store.set_context_tokens(5, 7)
    await store.close()
    h = sha("tenant:a")
    assert await keys_under(client, prefix) == {
        f"{prefix}:{{{h}}}:meta".encode(),
        f"{prefix}:{{{h}}}:log".encode(),
        f"{prefix}:sessions".encode(),
    }
    # every key of the session shares one hash tag, so a cluster keeps it on one slot;
    # the raw id lives only inside the meta hash and the sessions index
    meta = await client.hgetall(f"{prefix}:{{{h}}}:meta")
    assert meta[b"sid"] == b"tenant:a" and meta[b"in"] == b"5"
    # A session instance's generations start at the server's clock in microseconds.
    assert (
        int(meta[b"gen"]) > 10**15 and int(meta[b"created"]) // 1000 <= int(meta[b"gen"]) // 10**6
    )
    assert await client.llen(f"{prefix}:{{{h}}}:log") == 2
    assert await client.zrange(f"{prefix}:sessions", 0, -1) == [b"tenant:a"]


async def test_list_sessions_never_uses_keys_or_scan_and_ignores_foreign_keys(
    client: Redis, prefix: str
) -> None:
    await client.set(f"{prefix}-other:secret", "x")  # a neighbour with a similar name
    await client.set(f"{prefix}:{{x}}:meta", "not a hash")  # junk inside our prefix
    stores = [await RedisContextStore.open(URL, f"s{i}", prefix=prefix) for i in range(3)]
    for i, s in enumerate(stores):
        await s.append(Message.user(f"task {i}"))
    keys_before = await command_calls(client, "keys")
    scan_before = await command_calls(client, "scan")
    infos = await stores[0].list_sessions()
    assert await command_calls(client, "keys") == keys_before
    assert await command_calls(client, "scan") == scan_before
    assert sorted((i.session_id, i.message_count, i.preview) for i in infos) == [
        ("s0", 1, "task 0"),
        ("s1", 1, "task 1"),
        ("s2", 1, "task 2"),
    ]
    for s in stores:
        await s.close()
    await client.delete(f"{prefix}-other:secret")


async def test_tricky_session_ids_never_touch_each_other(client: Redis, prefix: str) -> None:
    stores = {sid: await RedisContextStore.open(URL, sid, prefix=prefix) for sid in TRICKY_IDS}
    for sid, store in stores.items():
        await store.append_many([Message.user(f"task of {sid!r}"), Message.assistant("ok")])
    # rewrite some sessions in every way; the others must not notice
    await stores["a"].clear()
    snap = await stores["a:messages"].snapshot()
    await stores["a:messages"].replace_prefix(1, [Message.user("summary")], snap.generation)
    await stores["*"].add_context_tokens(10, 20)
    await stores["a}"].append(Message.user("more"))
    expected = {
        sid: [Message.user(f"task of {sid!r}"), Message.assistant("ok")] for sid in TRICKY_IDS
    }
    expected["a"] = []
    expected["a:messages"] = [Message.user("summary"), Message.assistant("ok")]
    expected["a}"].append(Message.user("more"))
    for sid, store in stores.items():
        assert await store.get_history() == expected[sid], sid
        reopened = await RedisContextStore.open(URL, sid, prefix=prefix)
        assert await reopened.get_history() == expected[sid], sid
        await reopened.close()
    infos = {i.session_id: i for i in await stores["a"].list_sessions()}
    assert set(infos) == set(TRICKY_IDS)
    assert infos["*"].input_tokens == 10 and infos["a"].message_count == 0
    # one hash tag per id: 9 ids -> 9 distinct tags, each the sha256 of its id
    tags = {k.split(b"{")[1].split(b"}")[0] for k in await keys_under(client, prefix) if b"{" in k}
    assert tags == {sha(sid).encode() for sid in TRICKY_IDS}
    for store in stores.values():
        await store.close()


async def test_the_same_session_under_two_prefixes_is_two_sessions(prefix: str) -> None:
    a = await RedisContextStore.open(URL, "s", prefix=prefix)
    b = await RedisContextStore.open(URL, "s", prefix=prefix + ":b")
    await a.append(Message.user("in a"))
    assert await b.get_history() == []
    # b's prefix holds only its own (opened, empty) session
    assert [(i.session_id, i.message_count) for i in await b.list_sessions()] == [("s", 0)]
    await a.close()
    await b.close()


async def test_retried_append_with_the_same_id_is_stored_once(prefix: str) -> None:
    store = await RedisContextStore.open(URL, "s", prefix=prefix, idempotent_ids=True)
    first = Message.user("do it", id="m1")
    await store.append(first)
    await store.append(first)  # the acknowledgement was lost; the caller retries
    # a retried batch whose first half was stored stores only the rest
    batch = [Message.assistant("a", id="m2"), Message.user("b", id="m3")]
    await store.append_many(batch[:1])
    await store.append_many(batch)
    await store.append(Message.user("no id"))
    await store.append(Message.user("no id"))  # no id: two messages, as the caller asked
    assert [m.text for m in await store.get_history()] == ["do it", "a", "b", "no id", "no id"]
    # the same id with other content is refused, and nothing of that batch is stored
    with pytest.raises(InvalidMessage) as err:
        await store.append_many([Message.user("new", id="m4"), Message.user("changed", id="m1")])
    assert err.value.path == "messages[1].id"
    with pytest.raises(InvalidMessage):
        await store.append_many([Message.user("x", id="m9"), Message.user("y", id="m9")])
    assert len(await store.get_history()) == 5
    # a second handle (another process) shares the ids
    other = await RedisContextStore.open(URL, "s", prefix=prefix, idempotent_ids=True)
    await other.append(first)
    assert len(await other.get_history()) == 5
    # a retry of a message that compaction already replaced is still recognised
    snap = await store.snapshot()
    await store.replace_prefix(2, [Message.user("summary")], snap.generation)
    await store.append(first)
    assert [m.text for m in await store.get_history()] == ["summary", "b", "no id", "no id"]
    # a fork carries them too; clear forgets them
    child = await store.fork()
    await child.append(first)
    assert len(await child.get_history()) == 4
    await store.clear()
    await store.append(first)
    assert await store.get_history() == [first]
    for s in (store, other, child):
        await s.close()


async def test_concurrent_retries_of_one_message_store_one_copy(prefix: str) -> None:
    stores = [
        await RedisContextStore.open(URL, "s", prefix=prefix, idempotent_ids=True) for _ in range(4)
    ]
    msgs = [Message.user(f"m{i}", id=f"id{i}") for i in range(50)]
    await asyncio.gather(*(s.append_many(msgs) for s in stores))
    assert await stores[0].get_history() == msgs
    for s in stores:
        await s.close()


async def test_without_idempotent_ids_a_repeated_message_is_appended_again(prefix: str) -> None:
    store = await RedisContextStore.open(URL, "s", prefix=prefix)
    m = Message.user("again", id="m1")
    await store.append(m)
    await store.append(Message.user("other", id="m1"))
    assert [x.text for x in await store.get_history()] == ["again", "other"]
    await store.close()


async def test_ttl_expires_an_idle_session_and_every_write_renews_it(
    client: Redis, prefix: str
) -> None:
    store = await RedisContextStore.open(URL, "s", prefix=prefix, ttl=0.6)
    await store.append(Message.user("short-lived"))
    base = f"{prefix}:{{{sha('s')}}}"
    for suffix in ("meta", "log"):
        assert 0 < await client.pttl(f"{base}:{suffix}") <= 600
    await asyncio.sleep(0.4)
    await store.add_context_tokens(1, 1)  # a write renews the whole session
    assert await client.pttl(f"{base}:log") > 400
    await asyncio.sleep(0.8)
    assert await store.get_history() == []
    assert await store.list_sessions() == []
    assert await client.zscore(f"{prefix}:sessions", "s") is None  # index cleaned lazily
    await store.append(Message.user("back"))  # a new session under the same id, listed again
    assert [i.session_id for i in await store.list_sessions()] == ["s"]
    await store.close()


async def test_bad_input_is_refused_before_any_io(client: Redis, prefix: str) -> None:
    store = await RedisContextStore.open(URL, "s", prefix=prefix)
    before = {k: await client.dump(k) for k in await keys_under(client, prefix)}
    with pytest.raises(InvalidMessage) as err:
        await store.append_many([Message.user("ok"), {"role": "user", "content": "hi"}])  # type: ignore[list-item]
    assert err.value.path == "messages[1]"
    with pytest.raises(ValueError):
        await store.get_history(limit=-1)
    with pytest.raises(ValueError):
        await store.replace_prefix(-1, [], 0)
    after = {k: await client.dump(k) for k in await keys_under(client, prefix)}
    assert after == before  # no key written, not even a TTL renewal
    g = await store.generation()  # opening created the session
    with pytest.raises(InvalidArgument, match="history length 0, got 1"):
        await store.replace_prefix(1, [], g)
    with pytest.raises(StaleGenerationError):
        await store.replace_prefix(0, [], 5)
    assert await store.get_history() == [] and await store.generation() == g
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get_history()


@pytest.mark.parametrize("bad", ["", "a{b}", "a b", "a*", "x" * 65, None])
async def test_prefix_is_required_and_checked(bad: object) -> None:
    with pytest.raises(ValueError, match="prefix"):
        await RedisContextStore.open(URL, "s", prefix=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", 3, "a\ud800", "x" * 5000])
async def test_bad_session_ids_are_refused(prefix: str, bad: object) -> None:
    with pytest.raises(ValueError):
        await RedisContextStore.open(URL, bad, prefix=prefix)  # type: ignore[arg-type]


async def test_load_log_uses_the_stored_token_counts(prefix: str) -> None:
    class Counter:
        calls = 0

        def count_text(self, text: str) -> int:
            return len(text)

        def count_message(self, message: Message) -> int:
            Counter.calls += 1
            return 1000 + len(message.text)

    store = await RedisContextStore.open(URL, "s", prefix=prefix, counter=Counter())
    await store.append_many([Message.user("abc"), Message.assistant("de")])
    calls = Counter.calls
    other = await RedisContextStore.open(URL, "s", prefix=prefix)  # no counter here
    log = await other.load_log()
    assert log.token_counts() == [1003, 1002] and Counter.calls == calls
    await store.close()
    await other.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_down_server_is_a_store_error_with_the_cause(prefix: str) -> None:
    with pytest.raises(StoreError, match="unreachable") as err:
        await RedisContextStore.open(
            f"redis://127.0.0.1:{_closed_port()}/0", "s", prefix=prefix, connect_timeout=1
        )
    assert isinstance(err.value.__cause__, redis_asyncio.ConnectionError)


async def test_a_wrong_type_key_is_a_store_error_and_changes_nothing(
    client: Redis, prefix: str
) -> None:
    # someone else wrote a string where the session's log list lives
    await client.set(f"{prefix}:{{{sha('s')}}}:log", "garbage")
    with pytest.raises(StoreError, match="WRONGTYPE"):
        await RedisContextStore.open(URL, "s", prefix=prefix)
    assert await client.get(f"{prefix}:{{{sha('s')}}}:log") == b"garbage"
    assert not await client.exists(f"{prefix}:{{{sha('s')}}}:meta")
    # a store opened before the key went bad refuses writes the same way
    other = await RedisContextStore.open(URL, "t", prefix=prefix)
    await client.delete(f"{prefix}:{{{sha('t')}}}:meta")
    await client.set(f"{prefix}:{{{sha('t')}}}:meta", "garbage")
    with pytest.raises(StoreError, match="WRONGTYPE"):
        await other.append(Message.user("x"))
    assert not await client.exists(f"{prefix}:{{{sha('t')}}}:log")
    await other.close()


def test_the_stores_package_imports_without_the_server_extras() -> None:
    # A fresh interpreter where neither client library can be imported.
    code = (
        "import sys; sys.modules['redis'] = None; sys.modules['psycopg'] = None\n"
        "import ctxtrim.stores as s\n"
        "assert s.SQLiteContextStore\n"
        "pairs = [('RedisContextStore', 'redis'), ('PostgresContextStore', 'postgres')]\n"
        "for name, extra in pairs:\n"
        "    try:\n"
        "        getattr(s, name)\n"
        "    except ImportError as e:\n"
        '        assert f"ctxtrim[{extra}]" in str(e), e\n'
        "    else:\n"
        "        raise AssertionError(name)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    import ctxtrim.stores

    assert ctxtrim.stores.RedisContextStore is RedisContextStore


async def test_a_handle_never_splices_a_session_that_expired_and_was_created_again(
    client: Redis, prefix: str
) -> None:
    """The documented ``ttl`` expiry: a long-lived handle that read the old session, then
    another process creates the session anew. The handle reads the new session as itself
    (never its tail pasted onto the cached old head), and a compaction computed from the old
    view is refused, not applied over the other writer's messages."""
    a = await RedisContextStore.open(URL, "chat-1", prefix=prefix, ttl=0.3)
    old = [Message.user("old-0"), Message.assistant("old-1"), Message.user("old-2")]
    await a.append_many(old)
    assert [m.text for m in await a.get_history()] == ["old-0", "old-1", "old-2"]
    _, old_generation = await a.snapshot()
    await asyncio.sleep(0.6)  # the session expires
    b = await RedisContextStore.open(URL, "chat-1", prefix=prefix)
    new = [Message.user(f"new-{i}") for i in range(5)]
    for m in new:
        await b.append(m)
    assert await a.get_history() == new
    assert (await a.snapshot())[0] == new
    assert [m.text for m in (await a.load_log()).to_list()] == [m.text for m in new]
    with pytest.raises(StaleGenerationError):
        await a.replace_prefix(2, [Message.user("summary of old")], old_generation)
    assert await b.get_history() == new
    # The same after the keys vanish at once (a restart without persistence).
    await a.get_history()
    for key in await keys_under(client, prefix):
        await client.delete(key)
    assert await a.get_history() == [] and await a.generation() == 0
    await b.append(Message.user("again"))
    assert [m.text for m in await a.get_history()] == ["again"]
    for store in (a, b):
        await store.close()


async def test_a_session_created_by_a_replace_from_generation_0_is_accepted(prefix: str) -> None:
    """A session that does not exist (here: expired) reads as generation 0, and a
    compare-and-swap from that view creates it."""
    store = await RedisContextStore.open(URL, "fresh", prefix=prefix, ttl=0.2)
    await asyncio.sleep(0.4)
    assert await store.generation() == 0
    await store.replace_prefix(0, [Message.user("first")], 0)
    assert [m.text for m in await store.get_history()] == ["first"]
    assert await store.generation() != 0
    await store.close()


async def test_a_stored_count_edited_by_hand_is_a_corrupt_record(
    client: Redis, prefix: str
) -> None:
    """The count sits beside the CRC-checked payload: altered, it is a CorruptRecordError
    naming the entry, not an OverflowError on every later read."""
    store = await RedisContextStore.open(URL, "victim", prefix=prefix)
    await store.append_many([Message.user("1"), Message.assistant("2")])
    await store.close()
    log_key = f"{prefix}:{{{sha('victim')}}}:log"
    entry = await client.lindex(log_key, 1)
    assert isinstance(entry, bytes)
    crc, _, payload = entry.split(b" ", 2)
    await client.lset(log_key, 1, crc + b" -5 " + payload)  # type: ignore[arg-type]  # bytes are what it stores
    store = await RedisContextStore.open(URL, "victim", prefix=prefix)
    with pytest.raises(CorruptRecordError, match="stored token count") as err:
        await store.load_log()
    assert (err.value.session_id, err.value.seq) == ("victim", 1)
    await store.close()


@pytest.mark.parametrize("field", ["gen", "in", "out"])
async def test_meta_edited_by_hand_is_a_corrupt_record(
    client: Redis, prefix: str, field: str
) -> None:
    store = await RedisContextStore.open(URL, "victim", prefix=prefix)
    await store.append(Message.user("1"))
    await client.hset(f"{prefix}:{{{sha('victim')}}}:meta", field, "not a number")
    other = await RedisContextStore.open(URL, "victim", prefix=prefix)
    read = other.generation if field == "gen" else other.get_context_tokens
    with pytest.raises(CorruptRecordError, match=f"meta field '{field}'") as err:
        await read()
    assert err.value.session_id == "victim"
    for s in (store, other):
        await s.close()
