"""`RedisContextStore`: a conversation history in Redis ≥ 7 (``pip install 'ctxtrim[redis]'``).

Layout, for a session id ``sid`` under the required prefix ``P`` (``h`` = sha256 hex of the
UTF-8 id, so no id can be spelled to reach another session's keys, and the ``{h}`` hash tag
keeps one session's keys in one cluster slot)::

    P:{h}:meta   hash   sid, gen (from the creation's microsecond), created (ms), in, out
    P:{h}:log    list   one entry per message: b"<crc32> <tokens> <json>"
    P:{h}:ids    hash   client message id -> sha256 of its payload (idempotent retries)
    P:sessions   zset   raw session id -> created ms (``list_sessions``; never ``KEYS``/``SCAN``)

Invariants:

* Every write is one Lua script on one session's keys, so it is atomic (Redis runs a script
  with no other command in between, and AOF logs it as one unit): a batch is stored whole or
  not at all, appends are ordered by the server, and a replay after a lost acknowledgement
  stores nothing twice (a message ``id`` already stored with the same payload is skipped; with
  a different payload the batch is refused).
* The history is the list, in order; ``gen`` is bumped by ``clear`` and ``replace_prefix``
  (a compare-and-swap on ``gen`` that keeps the entries after ``upto``), never by appends.
* **Session identity.** A session instance starts at the generation of the server's clock in
  microseconds when it is created, not at 0, so generations are never reused across
  instances: a session that vanished (its TTL expired, a restart without persistence) and is
  created again is never read as a continuation of what a long-lived handle cached, and a
  ``replace_prefix`` computed from the old instance is refused as stale. A session that does
  not exist reads as empty, at generation 0.
* Messages are validated and encoded before any I/O; every entry carries its CRC-32 and token
  count, so a read proves each message whole and ``load_log()`` never recounts.
* Durability is the server's: with ``appendonly yes`` + ``appendfsync always`` an
  acknowledged write survives ``kill -9`` of the server; ``everysec`` may lose the last second.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from collections.abc import Awaitable, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

from ctxtrim import _core
from ctxtrim.errors import (
    CorruptRecordError,
    InvalidArgument,
    InvalidMessage,
    OutcomeUnknownError,
    StoreError,
    stale_generation_error,
    stale_length_error,
)
from ctxtrim.messages import Message
from ctxtrim.store import ContextStore, HistorySnapshot, SessionInfo
from ctxtrim.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT,
    TURN_ATTEMPTS,
    LogCache,
    LogRead,
    check_limit,
    check_max_message_bytes,
    check_messages,
    check_replace_args,
    check_session_id,
    check_timeout,
    check_tokens,
    decode_payload,
    encode_payload,
    history_through,
    load_cached,
    payload_checksum,
    preview,
    stored_count,
    token_counts,
    tokens_overflow,
    turn_guard,
    turns_kept_moving,
    upto_past_end,
)
from ctxtrim.stores._sharing import LoopShared
from ctxtrim.tokens import TokenCounter

try:
    import redis.asyncio as aioredis
    import redis.exceptions as redis_errors
    from redis.asyncio.cluster import ClusterNode, RedisCluster
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "RedisContextStore needs the redis client: pip install 'ctxtrim[redis]'"
    ) from e

__all__ = ["RedisContextStore"]

_T = TypeVar("_T")
_PREFIX_RE = re.compile(r"[A-Za-z0-9_.:/-]{1,64}")
_CHUNK = 1000  # Lua's unpack() has a stack limit; push in chunks this size
_PREVIEW_SCAN = 32

# Shared prologue: refuse keys of the wrong type before writing anything (a script is not
# rolled back when a command fails half-way), create the meta hash on first write, refresh
# the TTL on every write.
# KEYS: meta, log, ids.  ARGV[1] sid, ARGV[2] now ms, ARGV[3] ttl ms (0 = none).
_PROLOGUE = """
local meta, log, ids = KEYS[1], KEYS[2], KEYS[3]
for k, key in ipairs(KEYS) do
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= ((k == 2) and 'list' or 'hash') then return {-5, k} end
end
local created = 0
if redis.call('EXISTS', meta) == 0 then
  -- A new session instance starts at the server's clock in microseconds, not at 0: a
  -- session that vanished (TTL, a restart without persistence) and is created again never
  -- takes up an old instance's generations, so no handle reads it as a continuation.
  local now = redis.call('TIME')
  local first = now[1] .. string.format('%06d', tonumber(now[2]))
  redis.call('HSET', meta, 'sid', ARGV[1], 'gen', first, 'created', ARGV[2], 'in', 0, 'out', 0)
  created = 1
end
-- The generation a caller saw matches: the same, or 0 (no session) for one just created.
local function same_gen(gen, want)
  return gen == want or (created == 1 and want == 0)
end
local function ttl()
  local ms = tonumber(ARGV[3])
  if ms > 0 then
    redis.call('PEXPIRE', meta, ms); redis.call('PEXPIRE', log, ms)
    redis.call('PEXPIRE', ids, ms)
  end
end
local function push(entries, first, last)
  local i = first
  while i <= last do
    local j = math.min(i + 999, last)
    redis.call('RPUSH', log, unpack(entries, i, j))
    i = j + 1
  end
end
"""

# ARGV[4] = n, then (id or "", payload sha256, entry) per message, then the generation and
# length the turn check saw ("" when the batch carries no caller-given turn id).
# Returns {created, stored, length, generation}, {-1, index} when an id is stored with
# another payload, or {-7} when the session moved since the turn check (nothing written).
_APPEND = (
    _PROLOGUE
    + """
local n = tonumber(ARGV[4])
local want_gen, want_len = ARGV[5 + 3 * n], ARGV[6 + 3 * n]
if want_gen ~= '' then
  local gen = tonumber(redis.call('HGET', meta, 'gen') or '0')
  if not same_gen(gen, tonumber(want_gen)) or redis.call('LLEN', log) ~= tonumber(want_len) then
    if created == 1 then redis.call('DEL', meta) end
    return {-7}
  end
end
local entries, fresh = {}, {}
for i = 0, n - 1 do
  local mid, digest = ARGV[5 + 3 * i], ARGV[6 + 3 * i]
  local keep = true
  if mid ~= '' then
    local old = fresh[mid] or redis.call('HGET', ids, mid)
    if old then
      if old ~= digest then
        if created == 1 then redis.call('DEL', meta) end
        return {-1, i}
      end
      keep = false
    else
      fresh[mid] = digest
    end
  end
  if keep then entries[#entries + 1] = ARGV[7 + 3 * i] end
end
for mid, digest in pairs(fresh) do redis.call('HSET', ids, mid, digest) end
push(entries, 1, #entries)
ttl()
return {created, #entries, redis.call('LLEN', log), tonumber(redis.call('HGET', meta, 'gen'))}
"""
)

_CLEAR = (
    _PROLOGUE
    + """
redis.call('DEL', log, ids)
redis.call('HSET', meta, 'in', 0, 'out', 0)
local gen = redis.call('HINCRBY', meta, 'gen', 1)
ttl()
return {created, gen}
"""
)

# ARGV[4] upto, ARGV[5] expected gen, ARGV[6] expected length (-1: any), ARGV[7..] entries.
# Returns {created, new gen} or {-2, gen} (stale) or {-4, gen, length} (appended to since)
# or {-3, length} (upto out of range).
_REPLACE = (
    _PROLOGUE
    + """
local upto, expected = tonumber(ARGV[4]), tonumber(ARGV[5])
local expected_len = tonumber(ARGV[6])
local gen = tonumber(redis.call('HGET', meta, 'gen'))
if not same_gen(gen, expected) then
  if created == 1 then redis.call('DEL', meta) end
  return {-2, (created == 1) and 0 or gen}
end
local len = redis.call('LLEN', log)
if expected_len >= 0 and len ~= expected_len then
  if created == 1 then redis.call('DEL', meta) end
  return {-4, gen, len}
end
if upto > len then
  if created == 1 then redis.call('DEL', meta) end
  return {-3, len}
end
if upto > 0 then redis.call('LTRIM', log, upto, -1) end
local last = #ARGV
while last >= 7 do
  local first = math.max(7, last - 999)
  local chunk = {}
  for k = last, first, -1 do chunk[#chunk + 1] = ARGV[k] end
  redis.call('LPUSH', log, unpack(chunk))
  last = first - 1
end
gen = redis.call('HINCRBY', meta, 'gen', 1)
ttl()
return {created, gen}
"""
)

# ARGV[4] 'set' | 'add', ARGV[5] in, ARGV[6] out. Returns {created} or {-6, field, error}
# when an increment fails (the 64-bit overflow HINCRBY refuses); the first increment is then
# undone, so a failed add changes nothing.
_TOKENS = (
    _PROLOGUE
    + """
if ARGV[4] == 'set' then
  redis.call('HSET', meta, 'in', ARGV[5], 'out', ARGV[6])
else
  local old = redis.call('HGET', meta, 'in')
  local r = redis.pcall('HINCRBY', meta, 'in', ARGV[5])
  if type(r) == 'table' and r.err then return {-6, 1, r.err} end
  r = redis.pcall('HINCRBY', meta, 'out', ARGV[6])
  if type(r) == 'table' and r.err then
    redis.call('HSET', meta, 'in', old)
    return {-6, 2, r.err}
  end
end
ttl()
return {created}
"""
)

# A new session holding a copy: ARGV[4] gen, [5] in, [6] out, [7] number of id pairs,
# then the id/digest pairs, then the entries. Refuses ({-4}) if the session already exists.
_FORK = (
    """
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return {-4}
end
"""
    + _PROLOGUE
    + """
redis.call('HSET', meta, 'gen', ARGV[4], 'in', ARGV[5], 'out', ARGV[6])
local pairs_n = tonumber(ARGV[7])
local i = 8
while i < 8 + 2 * pairs_n do
  redis.call('HSET', ids, ARGV[i], ARGV[i + 1]); i = i + 2
end
push(ARGV, i, #ARGV)
ttl()
return {created}
"""
)


def _key_base(prefix: str, session_id: str) -> str:
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()
    return f"{prefix}:{{{digest}}}"


def _entry(payload: bytes, tokens: int) -> bytes:
    return b"%d %d %s" % (payload_checksum(payload), tokens, payload)


def _split_entry(raw: bytes | str, session_id: str, index: int) -> tuple[Message, int]:
    if isinstance(raw, str):  # only if a caller's client decodes responses
        raw = raw.encode("utf-8")
    try:
        crc, tokens, payload = raw.split(b" ", 2)
        checksum, count = int(crc), int(tokens)
    except ValueError:
        return decode_payload(raw, session_id=session_id, seq=index, checksum=-1), 0
    message = decode_payload(payload, session_id=session_id, seq=index, checksum=checksum)
    return message, stored_count(count, session_id, index)


def _iso(ms: bytes | int | None) -> str:
    return datetime.fromtimestamp(int(ms or 0) / 1000, timezone.utc).isoformat()


def _meta_int(value: bytes | str | int | None, field: str, session_id: str) -> int:
    """An integer field of a session's meta hash (absent: 0); anything else was written by
    hand: :class:`CorruptRecordError` naming the field, not a bare ``ValueError``."""
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        raise CorruptRecordError(
            f"session {session_id!r}: meta field {field!r} is {value!r}, not an integer",
            session_id,
        ) from None


class _Shared:
    """One client shared by the stores of an event loop opened from the same URL and
    options (and by their forks and sessions); closed when the last of them closes."""

    def __init__(self, client: aioredis.Redis, owned: bool, key: Any = None) -> None:
        self.client = client
        self.owned = owned
        self.key = key
        self.users = 1
        self.append = client.register_script(_APPEND)
        self.clear = client.register_script(_CLEAR)
        self.replace = client.register_script(_REPLACE)
        self.tokens = client.register_script(_TOKENS)
        self.fork = client.register_script(_FORK)

    async def release(self) -> None:
        self.users -= 1
        if self.users == 0 and self.owned:
            if self.key is not None:
                _CLIENTS.forget(self.key, self)
            await self.client.aclose()


#: The clients the stores of each event loop share, by URL(s) and connection options.
_CLIENTS: LoopShared[_Shared] = LoopShared()


class RedisContextStore(ContextStore):
    """A session's history in Redis. Create with :meth:`open`; several processes and hosts
    may open the same session and append concurrently (the server orders the appends).

    ``prefix`` (required, ``[A-Za-z0-9_.:/-]{1,64}``) namespaces every key; ``ttl`` (seconds)
    makes a session expire that long after its last write; ``counter`` is an exact token
    counter (called once per appended message; the count is stored with it).
    """

    _shared: _Shared
    _prefix: str
    _counter: TokenCounter | None
    _ttl_ms: int
    _max_bytes: int
    _keys: list[str]
    _sessions_key: str
    _registered: bool
    _closed: bool
    _idempotent: bool
    _log_cache: LogCache

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "RedisContextStore is opened, not constructed: "
            "`await RedisContextStore.open(url, session_id, prefix=...)`"
        )

    @classmethod
    async def open(
        cls,
        url: str | Sequence[str],
        session_id: str | None = None,
        *,
        prefix: str,
        counter: TokenCounter | None = None,
        ttl: float | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        client: aioredis.Redis | None = None,
        connect_timeout: float = 5.0,
        idempotent_ids: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        max_connections: int = 50,
    ) -> RedisContextStore:
        """Connect (or use ``client``, which the store then does not close) and check the
        server answers and is Redis ≥ 7. Raises :class:`~ctxtrim.errors.StoreError` with the
        driver's error as the cause when it cannot.

        Stores opened on one event loop with the same ``url``, ``connect_timeout``,
        ``timeout`` and ``max_connections`` share one client, closed when the last of them
        closes: opening one store per conversation costs no connection. Its pool holds at
        most ``max_connections`` connections (default 50); more concurrent calls wait for
        one (within ``timeout``).

        ``timeout`` (seconds, default 10) bounds every round trip: a server that does not
        answer in time (stopped, partitioned) makes the call raise
        :class:`~ctxtrim.errors.OutcomeUnknownError` (a write) or ``StoreError`` (a read).
        The store's own client never retries a command (a resent script could apply twice);
        a ``client=`` you pass keeps its own timeouts and retry policy.

        Redis Cluster: pass the URL of any node (the store sees ``cluster_enabled:1`` and
        switches to a cluster client) or a list of node URLs (used as startup nodes). Every
        script touches one session's keys, which share a hash slot.

        ``idempotent_ids=True`` makes a message's ``id`` an idempotency key: appending a
        message whose id is already stored with the same content stores nothing (a retry
        after a lost acknowledgement); with different content the batch is refused."""
        if not isinstance(prefix, str) or not _PREFIX_RE.fullmatch(prefix):
            raise ValueError(f"prefix must match [A-Za-z0-9_.:/-]{{1,64}}, got {prefix!r}")
        sid = uuid.uuid4().hex if session_id is None else check_session_id(session_id)
        if ttl is not None and (isinstance(ttl, bool) or not ttl > 0):
            raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        check_max_message_bytes(max_message_bytes)
        timeout = check_timeout(timeout)
        if (
            isinstance(max_connections, bool)
            or not isinstance(max_connections, int)
            or max_connections < 1
        ):
            raise InvalidArgument(f"max_connections must be an int >= 1, got {max_connections!r}")
        urls = [url] if isinstance(url, str) else list(url)
        if not urls or not all(isinstance(u, str) for u in urls):
            raise ValueError(f"url must be a URL or a non-empty list of URLs, got {url!r}")
        options: dict[str, Any] = {
            "socket_connect_timeout": min(connect_timeout, timeout),
            "socket_timeout": timeout,
            "retry": Retry(NoBackoff(), 0),
            "decode_responses": False,
        }
        if client is None:
            key = (tuple(urls), connect_timeout, timeout, max_connections)
            shared = await _CLIENTS.get(
                key, lambda: _connect(urls, options, None, key, max_connections)
            )
        else:
            shared = await _connect(urls, options, client, None)
        self = cls._make(shared, prefix, sid, counter, ttl, max_message_bytes)
        self._idempotent = bool(idempotent_ids)
        try:
            # Opening a session creates it (listed, generation 0) and renews its TTL.
            await self._run(self._shared.tokens, ["add", 0, 0], "open")
        except BaseException:
            await self.close()
            raise
        return self

    @classmethod
    def _make(
        cls,
        shared: _Shared,
        prefix: str,
        session_id: str,
        counter: TokenCounter | None,
        ttl: float | None,
        max_bytes: int,
    ) -> RedisContextStore:
        self = cls.__new__(cls)
        self.__dict__["_session_id"] = session_id
        self._shared = shared
        self._prefix = prefix
        self._counter = counter
        self._ttl_ms = 0 if ttl is None else max(1, int(ttl * 1000))
        self._max_bytes = max_bytes
        base = _key_base(prefix, session_id)
        self._keys = [f"{base}:meta", f"{base}:log", f"{base}:ids"]
        self._sessions_key = f"{prefix}:sessions"
        self._registered = False
        self._closed = False
        self._idempotent = False
        self._log_cache = LogCache()
        return self

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def _r(self) -> aioredis.Redis:
        if self._closed:
            raise StoreError("the store is closed")
        return self._shared.client

    async def _register(self) -> None:
        """Add the session to the prefix's index before its first write (so a crash after
        the write cannot leave it unlisted)."""
        if not self._registered:
            await _call(self._r.zadd(self._sessions_key, {self.session_id: _now_ms()}, nx=True))
            self._registered = True

    async def _run(
        self, script: Any, extra: Sequence[bytes | str | int], operation: str
    ) -> list[Any]:
        """Run one write script; a lost connection or a missing reply after it was sent is
        :class:`OutcomeUnknownError` (the script may have run)."""
        if self._closed:  # the scripts are the shared client's: check here, as `_r` does
            raise StoreError("the store is closed")
        await self._register()
        args: list[bytes | str | int] = [self.session_id, _now_ms(), self._ttl_ms, *extra]
        result: list[Any] = await _call(script(keys=self._keys, args=args), operation)
        if result[0] == -5:
            raise StoreError(
                f"WRONGTYPE: key {self._keys[result[1] - 1]!r} of session {self.session_id!r}"
                " holds a value of another type (written by something other than ctxtrim);"
                " nothing was changed"
            )
        if result[0] == 1:  # (re)created, e.g. after the TTL expired it: list it again
            try:
                await _call(self._r.zadd(self._sessions_key, {self.session_id: _now_ms()}, nx=True))
            except StoreError:
                pass  # the write is applied; the next open of the session lists it again
        return result

    def _encode(
        self, messages: list[Message], payloads: list[bytes], path: str
    ) -> tuple[list[bytes | str | int], list[int]]:
        """The script's arguments for a checked batch, before any I/O: (id, digest, entry)
        per message, and the messages' token counts. Errors name ``path.format(i)``."""
        counts = token_counts(messages, self._counter, path)
        args: list[bytes | str | int] = []
        seen: dict[str, str] = {}
        for i, (m, payload, count) in enumerate(zip(messages, payloads, counts, strict=True)):
            mid = m.id if self._idempotent else None
            digest = hashlib.sha256(payload).hexdigest() if mid is not None else ""
            if mid is not None and seen.setdefault(mid, digest) != digest:
                raise InvalidMessage(
                    f"id {mid!r} appears twice in the batch with different content",
                    path.format(i) + ".id",
                )
            args += [mid or "", digest, _entry(payload, count)]
        return args, counts

    # -- writes -----------------------------------------------------------------------------

    async def append(self, message: Message) -> None:
        payload = encode_payload(message, self._max_bytes, "message")
        await self._append_many([message], [payload], "message")

    async def append_many(self, messages: Sequence[Message]) -> None:
        """Append atomically (one script). With ``idempotent_ids``, a message whose ``id``
        is already stored with the same content is skipped (a retried append); with
        different content the whole batch is refused with
        :class:`~ctxtrim.errors.InvalidMessage` and nothing is stored."""
        payloads = check_messages(messages, self._max_bytes)
        await self._append_many(list(messages), payloads, "messages[{}]")

    async def _append_many(self, messages: list[Message], payloads: list[bytes], path: str) -> None:
        """Store checked, encoded ``messages``; errors name ``path.format(i)`` (``"message"``
        for ``append``, ``"messages[i]"`` for a batch)."""
        args, counts = self._encode(messages, payloads, path)
        if not messages:
            return
        # Caller-given turn ids: checked against the session's turn, and the script stores
        # the batch only if the session is still where the check saw it.
        for _ in range(TURN_ATTEMPTS):
            guard = await turn_guard(self.load_log, self._log_cache, messages)
            at: list[bytes | str | int] = ["", ""] if guard is None else [*guard]
            result = await self._run(self._shared.append, [len(messages), *args, *at], "append")
            if result[0] != -7:
                break
        else:
            raise turns_kept_moving(self.session_id)
        if result[0] == -1:
            i = result[1]
            raise InvalidMessage(
                f"id {messages[i].id!r} is already stored with different content",
                path.format(i) + ".id",
            )
        _, stored, length, generation = result
        if stored == len(messages):  # (a retried idempotent append stores fewer)
            entries = args[2::3]
            size = sum([len(e) for e in entries if isinstance(e, bytes)])
            self._log_cache.wrote(generation, length - stored, messages, counts, size)

    async def clear(self) -> None:
        await self._run(self._shared.clear, [], "clear")

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        check_replace_args(upto, expected_generation, messages, expected_length)
        messages = list(messages)
        payloads = check_messages(messages, self._max_bytes)
        counts = token_counts(messages, self._counter)
        entries = [_entry(p, c) for p, c in zip(payloads, counts, strict=True)]
        length = -1 if expected_length is None else expected_length
        result = await self._run(
            self._shared.replace,
            [upto, expected_generation, length, *entries],
            "replace_prefix",
        )
        if result[0] == -2:
            raise stale_generation_error(expected_generation, result[1])
        if result[0] == -4:
            raise stale_length_error(result[1], length, result[2])
        if result[0] == -3:
            raise upto_past_end(upto, result[1])

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        await self._run(self._shared.tokens, ["set", *values], "set_context_tokens")

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        result = await self._run(self._shared.tokens, ["add", *values], "add_context_tokens")
        if result[0] == -6:
            name = ("input_tokens", "output_tokens")[result[1] - 1]
            error = result[2].decode() if isinstance(result[2], bytes) else str(result[2])
            if "overflow" in error:
                raise tokens_overflow(name, values[result[1] - 1])
            raise StoreError(f"Redis refused to add to {name}: {error}; nothing was changed")

    # -- reads ------------------------------------------------------------------------------

    def _decode(
        self, raw: Sequence[bytes | str], first: int = 0
    ) -> tuple[list[Message], list[int]]:
        messages, counts = [], []
        for i, entry in enumerate(raw):
            m, c = _split_entry(entry, self.session_id, first + i)
            messages.append(m)
            counts.append(c)
        return messages, counts

    async def get_history(self, limit: int | None = None) -> list[Message]:
        limit = check_limit(limit)
        if limit == 0:
            return []
        cached = await history_through(self._log_cache, limit, self.load_log)
        if cached is not None:
            return cached
        assert limit is not None  # whole histories are read through the cache
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.lrange(self._keys[1], -limit, -1)
            pipe.llen(self._keys[1])
            raw, length = await _call(pipe.execute())
        return self._decode(raw, length - len(raw))[0]

    async def _read_all(self) -> tuple[dict[bytes, bytes], list[bytes]]:
        """The meta hash and the whole log, read in one transaction (a consistent pair)."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.hgetall(self._keys[0])
            pipe.lrange(self._keys[1], 0, -1)
            meta, raw = await _call(pipe.execute())
        return meta, raw

    async def snapshot(self) -> HistorySnapshot:
        meta, raw = await self._read_all()
        gen = _meta_int(meta.get(b"gen"), "gen", self.session_id)
        return HistorySnapshot(self._decode(raw)[0], gen)

    async def generation(self) -> int:
        return _meta_int(await _call(self._r.hget(self._keys[0], "gen")), "gen", self.session_id)

    async def load_log(self) -> _core.MessageLog:
        """The history with the token counts stored beside each message (no recount). The
        store keeps the log it last read and reads only the entries appended since."""
        return await load_cached(self._log_cache, self._read_since)

    async def _read_since(self, generation: int | None, mark: int | None) -> LogRead:
        # One transaction: the generation, the length and the entries from `mark` on. If the
        # session moved to another generation (or shrank) they are not a continuation, and
        # the whole list is what was asked for next.
        since = mark if (generation is not None and mark is not None) else None
        start = since or 0
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.hget(self._keys[0], "gen")
            pipe.llen(self._keys[1])
            pipe.lrange(self._keys[1], start, -1)
            gen, length, raw = await _call(pipe.execute())
        current = _meta_int(gen, "gen", self.session_id)
        if since is not None and (current != generation or length < since):
            return await self._read_since(None, None)
        messages, counts = self._decode(raw, start)
        return current, since, messages, counts, start + len(raw), sum([len(e) for e in raw])

    async def get_context_tokens(self) -> tuple[int, int]:
        got = await _call(self._r.hmget(self._keys[0], ["in", "out"]))
        sid = self.session_id
        return _meta_int(got[0], "in", sid), _meta_int(got[1], "out", sid)

    async def fork(self) -> RedisContextStore:
        """A new session (uuid4 hex id) holding a copy of this history, generation, token
        totals and stored ids. Copied through the client, so it also works on a cluster
        (the child's keys live in another slot)."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.hgetall(self._keys[0])
            pipe.lrange(self._keys[1], 0, -1)
            pipe.hgetall(self._keys[2])
            meta, raw, ids = await _call(pipe.execute())
        self._shared.users += 1
        child = self._make(
            self._shared,
            self._prefix,
            uuid.uuid4().hex,
            self._counter,
            None,
            self._max_bytes,
        )
        child._ttl_ms = self._ttl_ms
        child._idempotent = self._idempotent
        pairs = [x for kv in ids.items() for x in kv]
        extra = [
            _meta_int(meta.get(b"gen"), "gen", self.session_id),
            _meta_int(meta.get(b"in"), "in", self.session_id),
            _meta_int(meta.get(b"out"), "out", self.session_id),
            len(ids),
            *pairs,
            *raw,
        ]
        try:
            if (await child._run(self._shared.fork, extra, "fork"))[0] == -4:
                raise StoreError(f"fork target session {child.session_id!r} already exists")
        except BaseException:
            await child.close()
            raise
        return child

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session under this store's prefix (from the prefix's index, never ``KEYS``).
        Sessions whose keys expired are dropped from the index on the way."""
        members = await _call(self._r.zrange(self._sessions_key, 0, -1))
        if not members:
            return []
        sids = [m.decode("utf-8") if isinstance(m, bytes) else str(m) for m in members]
        keys = [_key_base(self._prefix, s) for s in sids]
        async with self._r.pipeline(transaction=False) as pipe:
            for k in keys:
                pipe.hgetall(f"{k}:meta")
                pipe.llen(f"{k}:log")
            replies = await _call(pipe.execute())
        out, gone = [], []
        for i, (sid, base) in enumerate(zip(sids, keys, strict=True)):
            meta, length = replies[2 * i], replies[2 * i + 1]
            if not meta:
                gone.append(sid)
                continue
            out.append(
                SessionInfo(
                    session_id=sid,
                    message_count=int(length),
                    preview=await self._preview(f"{base}:log", sid),
                    created_at=_iso(meta.get(b"created")),
                    input_tokens=_meta_int(meta.get(b"in"), "in", sid),
                    output_tokens=_meta_int(meta.get(b"out"), "out", sid),
                )
            )
        if gone:
            # Only expired/never-written sessions; re-checked so a concurrent creation that
            # registered before writing is not unlisted (its script re-adds it anyway).
            for sid, base in zip(sids, keys, strict=True):
                if sid in gone and not await _call(self._r.exists(f"{base}:meta")):
                    await _call(self._r.zrem(self._sessions_key, sid))
        return out

    async def _preview(self, log_key: str, sid: str) -> str:
        """The first user text, read a few entries at a time (usually the first chunk)."""
        start = 0
        while True:
            raw = await _call(self._r.lrange(log_key, start, start + _PREVIEW_SCAN - 1))
            if not raw:
                return ""
            found = preview(_split_entry(e, sid, start + i)[0] for i, e in enumerate(raw))
            if found:
                return found
            start += len(raw)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._log_cache.release()
            await self._shared.release()

    @classmethod
    async def from_history(cls, history: Sequence[Message]) -> RedisContextStore:
        """Not available: a server store needs its address. Use
        ``await RedisContextStore.open(url, session_id, prefix=...)`` and then
        ``append_many(history)``."""
        raise TypeError(
            "RedisContextStore.from_history() has no server to connect to; use "
            "`await RedisContextStore.open(url, session_id, prefix=...)` and `append_many(history)`"
        )

    def __repr__(self) -> str:
        return f"RedisContextStore(prefix={self._prefix!r}, session_id={self.session_id!r})"


async def _connect(
    urls: list[str],
    options: dict[str, Any],
    client: aioredis.Redis | None,
    key: Any,
    max_connections: int = 50,
) -> _Shared:
    """Connect (or use the caller's ``client``, never closed here) and check the server
    answers and is Redis >= 7."""
    owned = client is None
    if client is None and len(urls) == 1:
        # A blocking pool: past max_connections calls wait (up to the timeout) for a free
        # connection instead of failing, as a server with many sessions needs.
        pool = aioredis.BlockingConnectionPool.from_url(
            urls[0],
            max_connections=max_connections,
            timeout=options["socket_timeout"],
            **options,
        )
        client = aioredis.Redis.from_pool(pool)
    elif client is None:
        client = _cluster_client(urls, options)
    try:
        info = await _call(client.info())
        if "redis_version" not in info and info:  # a cluster client: one dict per node
            info = next(iter(info.values()))
        if owned and int(info.get("cluster_enabled", 0)) and len(urls) == 1:
            await client.aclose()
            client = _cluster_client(urls, options)
            await _call(client.initialize())
    except BaseException:
        if owned:
            await client.aclose()
        raise
    version = str(info.get("redis_version", "0"))
    if int(version.split(".")[0]) < 7:
        if owned:
            await client.aclose()
        raise StoreError(f"RedisContextStore needs Redis >= 7, the server is {version}")
    return _Shared(client, owned, key)


def _cluster_client(urls: Sequence[str], options: dict[str, Any]) -> Any:
    """A cluster client on ``urls`` (startup nodes; the rest of the cluster is discovered).
    Only host, port and the URL's credentials are taken from the URLs."""
    from urllib.parse import urlsplit

    parts = [urlsplit(u) for u in urls]
    nodes = [ClusterNode(p.hostname or "127.0.0.1", p.port or 6379) for p in parts]
    first = parts[0]
    return RedisCluster(
        startup_nodes=nodes,
        username=first.username,
        password=first.password,
        ssl=first.scheme == "rediss",
        **options,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _call(awaitable: Awaitable[_T], write: str = "") -> _T:
    """Await a client call, turning driver errors into typed ones (the driver's error is the
    cause). ``write`` names the operation when the call changes data: a connection lost or
    a reply missing after the command may have been sent is then
    :class:`OutcomeUnknownError`; failing to connect at all, a server that is still loading
    its data, or an error reply is :class:`StoreError` (the command did not run)."""
    try:
        return await awaitable
    except redis_errors.BusyLoadingError as e:  # a ConnectionError subclass: check it first
        raise StoreError(f"Redis is loading its dataset, retry shortly: {e}") from e
    except (redis_errors.ConnectionError, redis_errors.TimeoutError) as e:
        if write and "connecting to" not in str(e):  # "Error 111 connecting to h:p", ...
            raise OutcomeUnknownError(
                f"{write}: no reply from Redis ({e}); the write may or may not have been applied",
                write,
            ) from e
        raise StoreError(f"Redis is unreachable: {e}") from e
    except redis_errors.RedisError as e:
        raise StoreError(f"Redis error: {e}") from e
