"""openai-agents sessions: ``SQLiteSession`` made pair-safe, sessions on ctxtrim stores, and
a pair-safe ``session_input_callback``.

Swap the session, keep the runner call::

    session = CtxtrimSession("user-42", "chats.db")  # SQLiteSession's file and tables
    session = CtxtrimSession(await SQLiteContextStore.open("chats.db", "user-42"))
    await Runner.run(agent, "next question", session=session)

``CtxtrimSession(session_id, db_path)``, ``SQLiteSession``'s constructor, makes a
:class:`CtxtrimSQLiteSession`: ``SQLiteSession`` itself (its file, tables, rows, connections
and locks) with pair-safe reads and compaction and checked items.
:class:`CtxtrimSession` implements the openai-agents ``Session`` protocol (``session_id``,
``session_settings``, ``get_items(limit)``, ``add_items``, ``pop_item``, ``clear_session``)
on any :class:`ctxtrim.ContextStore` — memory, SQLite, Redis, PostgreSQL. Items are
Responses-API input items; each is stored as one ctxtrim message through
:func:`ctxtrim.formats.from_openai_responses` (losslessly: ``to_openai_responses`` gives the
item back; hosted and client-side tool items, MCP and compaction items are kept verbatim as
:class:`ctxtrim.ProviderBlock` blocks and paired by the format's table, so every call and its
output are kept or dropped together). An item the converter refuses (malformed, or of a type
newer than its table) is kept verbatim in ``Message.meta`` under :data:`ITEM_KEY`, with a
skeleton so it counts and cuts like the rest.

Invariants: ``get_items(limit)`` returns at most ``limit`` items, chronological, and never
starts with an output whose call it left out (a ``function_call_output``, a
``computer_call_output``...), nor splits parallel calls from their outputs (the cut moves
forward to the next pair-safe item; openai-agents' ``SQLiteSession.get_items`` returns the
orphan, as
tests/integrations/test_integration_openai_agents.py shows).
``OpenAIResponsesCompactionSession`` (and ``EncryptedSession`` over it) compacts a bounded
suffix atomically through ``_get_compaction_snapshot``, the private hook ``SQLiteSession``
has: on a store the replacement is one ``replace_prefix`` with the generation and length
read, on ``SQLiteSession``'s tables one transaction that checks the suffix is still the
newest rows, so a write by anyone since refuses it; and it never separates a call from its
output
(tests/integrations/test_integration_openai_agents_compaction.py).
:func:`trim_input` builds a ``session_input_callback`` that keeps the history within a
token budget, pair-safely — the runner prunes orphan outputs only when ``limit`` is used
without a callback (the fix of openai/openai-agents-python#4322), so a slicing callback
sends the orphan to the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast, overload

from ctxtrim.errors import InvalidArgument, InvalidMessage, NotJSONData, StaleGenerationError
from ctxtrim.formats.openai_responses import (
    from_openai_responses,
    item_pair,
    read_common_item,
    render_common,
    to_openai_responses,
)
from ctxtrim.integrations._common import (
    Mirror,
    Skeletons,
    closed_from,
    ends_window,
    missing_extra,
    take,
)
from ctxtrim.messages import Message, pair_ids
from ctxtrim.store import ContextStore, MemoryContextStore
from ctxtrim.strategies import FitContextWindow
from ctxtrim.tokens import TokenCounter

try:
    from agents.memory import SessionSettings, SQLiteSession
    from agents.memory.session import _await_mutation, _CompactionSnapshot
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("openai-agents", "openai-agents", _err) from _err

__all__ = [
    "ITEM_KEY",
    "CtxtrimSQLiteSession",
    "CtxtrimSession",
    "item_to_message",
    "message_to_items",
    "trim_input",
]

#: ``Message.meta`` key holding an input item the Responses converter has no model for.
ITEM_KEY = "openai_agents_item"

# Item types produced by the model (assistant side); anything else unknown is user side.
_USER_SIDE = ("output", "_result")


def _plain(item: Any) -> dict[str, Any]:
    """The item as plain JSON data (the runner may hand over pydantic models)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_unset=True))
    raise InvalidMessage(f"expected an input item (a dict), got {type(item).__name__}", "item")


def item_to_message(item: Any) -> Message:
    """One Responses input item as one ctxtrim message (lossless both ways)."""
    data = _plain(item)
    common = read_common_item(data)
    if common is not None:
        return common
    try:
        messages = from_openai_responses([data])
    except InvalidMessage:
        messages = []
    if len(messages) == 1 and to_openai_responses(messages) == [data]:
        return messages[0]
    kind = str(data.get("type", ""))
    # The text only feeds the token estimate; the item itself travels in meta.
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as err:
        raise NotJSONData(f"not JSON data: {err}", "item") from None
    if kind.endswith(_USER_SIDE):
        return Message.user(text, meta={ITEM_KEY: data})
    return Message.assistant(text, meta={ITEM_KEY: data})


def items_to_messages(items: Sequence[Any]) -> list[Message]:
    """Each item as one message; an item that is not one raises :class:`InvalidMessage`
    naming it (``items[3]: ...``), before anything is stored."""
    out = []
    for i, item in enumerate(items):
        try:
            out.append(item_to_message(item))
        except InvalidMessage as err:
            raise type(err)(err.reason, f"items[{i}]") from None
    return out


def message_to_items(message: Message) -> list[dict[str, Any]]:
    """The input items of one stored message (one, unless another writer stored it)."""
    if message.meta and ITEM_KEY in message.meta:
        return [message.meta[ITEM_KEY]]
    common = render_common(message)
    if common is not None:
        return common
    return to_openai_responses([message])


def _safe_tail(messages: Sequence[Message], limit: int) -> tuple[int, list[list[dict[str, Any]]]]:
    """``(cut, items)``: the newest whole messages of ``messages`` whose items fit in
    ``limit``, from the first pair-safe cut among them (``cut``, an index into
    ``messages``), and their items, one list per message. Whether a cut is safe depends only
    on the messages after it: a result whose call lies before the part read makes every
    cut up to it unsafe."""
    n = len(messages)
    tail: list[list[dict[str, Any]]] = []
    size = 0
    start = n
    while start > 0:
        items = message_to_items(messages[start - 1])
        if size + len(items) > limit:
            break
        tail.append(items)
        size += len(items)
        start -= 1
    safe = closed_from(messages, start)
    cut = next((start + j for j, ok in enumerate(safe) if ok), n)
    tail.reverse()
    return cut, tail[cut - start :]


def _answers_before(kept: Sequence[Message], replaced: Sequence[Message]) -> bool:
    """Whether a tool result in ``replaced`` answers a tool call in ``kept``."""
    calls = {call for m in kept for call in pair_ids(m)[0]}
    return any(result in calls for m in replaced for result in pair_ids(m)[1])


def _expired_prefix(messages: Sequence[Message], end: int, expired: Callable[[Any], bool]) -> int:
    """How many of the oldest messages (before ``end``) hold only expired items."""
    for i in range(end):
        if not all(expired(it) for it in message_to_items(messages[i])):
            return i
    return end


def _last_safe_cut(pairs: Iterable[tuple[int, int]], drop: int) -> int:
    """The largest cut ``d <= drop`` that no ``(call, output)`` index pair straddles
    (``call < d <= output``): dropping the ``d`` oldest orphans no kept output."""
    bad = [0] * (drop + 2)  # a difference array over the cuts 0..drop
    for call, output in pairs:
        if call < drop:
            bad[call + 1] += 1
            bad[min(output, drop) + 1] -= 1
    running, last = 0, 0
    for c in range(drop + 1):
        running += bad[c]
        if running == 0:
            last = c
    return last


def _message_pairs(messages: Sequence[Message]) -> Iterator[tuple[int, int]]:
    """``(call, result)`` message indices of each tool result whose call comes before it."""
    where: dict[str, int] = {}
    for i, m in enumerate(messages):
        calls, results = pair_ids(m)
        for result in results:
            if where.get(result, i) < i:
                yield where[result], i
        for call in calls:
            where[call] = i


class CtxtrimSession:
    """An openai-agents ``Session`` on a ctxtrim store.

    ``CtxtrimSession(store)`` keeps the history in a :class:`ctxtrim.ContextStore` you opened
    (memory, SQLite, Redis, PostgreSQL; ``CtxtrimSession()``: a new memory store), and
    leaves it open on :meth:`close`. ``CtxtrimSession(session_id, db_path=":memory:", ...)``
    — ``SQLiteSession``'s constructor — makes a :class:`CtxtrimSQLiteSession`, which keeps
    ``SQLiteSession``'s own file, tables and rows, so swapping the import keeps every
    conversation already stored (and swapping back does too). ``session_settings`` is a
    ``SessionSettings``, a dict of its fields (unknown keys raise ``TypeError``) or None
    (``SessionSettings()``). After :meth:`close` every call raises ``RuntimeError``, as
    ``SQLiteSession``'s do.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> CtxtrimSession:
        # SQLiteSession's constructor shape (a session id, no store) is the SQLite-compatible
        # session; __init__ then runs on that class, with the same arguments.
        if cls is CtxtrimSession:
            first = args[0] if args else kwargs.get("store")
            if isinstance(first, str) or (
                first is None and ("session_id" in kwargs or "db_path" in kwargs)
            ):
                cls = CtxtrimSQLiteSession
        return super().__new__(cls)

    def __init__(
        self,
        store: ContextStore | str | None = None,
        db_path: str | os.PathLike[str] = ":memory:",
        *,
        session_id: str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        # Only the store form gets here (__new__ sends a session id to CtxtrimSQLiteSession);
        # db_path and a str store are in the signature for that form's callers.
        if str(db_path) != ":memory:":
            raise ValueError("db_path goes with a session id: CtxtrimSession(session_id, db_path)")
        if store is None:
            store = MemoryContextStore()
        elif not isinstance(store, ContextStore):
            raise TypeError(f"expected a ContextStore or a session id, got {type(store).__name__}")
        if session_id is not None and session_id != store.session_id:
            raise ValueError(
                f"session_id {session_id!r} differs from the store's {store.session_id!r}"
            )
        self._store = store
        self.session_id: str = store.session_id
        self.session_settings: SessionSettings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._closed = False

    @property
    def store(self) -> ContextStore:
        """The store the history is in."""
        return self._store

    async def _open(self) -> ContextStore:
        if self._closed:
            raise RuntimeError("CtxtrimSession is closed")
        return self._store

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The latest ``limit`` items (all when None or negative, as ``SQLiteSession``'s;
        ``session_settings.limit`` when set), chronological, starting at a pair-safe item.

        A bounded read, on every store: the last ``limit`` messages (each holds at least one
        item), moved forward to the first pair-safe cut among them — whether a cut is safe
        depends only on the messages after it, so the read needs nothing older.
        """
        store = await self._open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is None or limit < 0:
            # A negative limit reads everything, as SQLiteSession's does (SQLite's LIMIT -1).
            return [it for m in await store.get_history() for it in message_to_items(m)]
        if limit == 0:
            return []
        messages = await store.get_history(limit)
        _, tail = _safe_tail(messages, limit)
        return [it for chunk in tail for it in chunk]

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> _CompactionSnapshot | None:
        """openai-agents' hook for compacting a bounded suffix atomically (what
        ``OpenAIResponsesCompactionSession`` and ``EncryptedSession`` call; ``SQLiteSession``
        has the same one): the latest items, at most ``limit``, chosen as ``get_items(limit)``
        chooses them (whole messages, starting at a pair-safe cut); ``complete`` when they
        are the whole history; and ``replace_suffix(start, output)``, which replaces
        ``items[start:]`` by ``output`` — after dropping the expired oldest items
        (``prune_prefix``) — in one ``replace_prefix`` with the generation *and* the length
        read here, so it returns False and changes nothing if the history was appended to,
        popped, cleared or rewritten since (by any writer of the store, other processes
        included). It also returns False rather than separate a tool call from its output
        (a call kept whose output would be replaced), and prunes only up to a cut that keeps
        every kept output's call. None on a store without ``snapshot``.
        """
        if type(limit) is not int or limit < 1:
            raise InvalidArgument(f"limit must be an int >= 1, got {limit!r}")
        store = await self._open()
        try:
            messages, generation = await store.snapshot()
        except NotImplementedError:
            return None
        n = len(messages)
        first, tail = _safe_tail(messages, limit)
        items = [it for chunk in tail for it in chunk]
        # Item k of the snapshot is item owner[k][1] of message owner[k][0].
        owner = [(first + m, j) for m, chunk in enumerate(tail) for j in range(len(chunk))]

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            if type(start) is not int or start < 0:
                raise InvalidArgument(f"start must be an int >= 0, got {start!r}")
            if start >= len(items):
                return False  # nothing to replace (as SQLiteSession's)
            new_tail = items_to_messages(output)  # a bad item changes nothing
            at, within = owner[start]
            kept, replaced = messages[:at], messages[at:]
            if within:
                # Items of message `at` before `start` stay, one message each (as pop_item).
                split = [item_to_message(it) for it in tail[at - first]]
                kept = [*kept, *split[:within]]
                replaced = [*split[within:], *messages[at + 1 :]]
            if _answers_before(kept, replaced):
                return False  # the suffix holds an output of a kept call
            drop = 0
            if prune_prefix is not None:
                drop = _expired_prefix(messages, at, prune_prefix)
                drop = _last_safe_cut(_message_pairs(kept), drop)
            try:
                await (await self._open()).replace_prefix(
                    n, [*kept[drop:], *new_tail], generation, expected_length=n
                )
            except StaleGenerationError:
                return False
            return True

        # Items are the stored Responses input items (plain dicts, the TypedDicts' runtime form).
        return _CompactionSnapshot(cast(Any, items), first == 0, replace_suffix)

    async def add_items(self, items: list[Any]) -> None:
        """Append the items atomically (all are converted first; a bad one changes nothing)."""
        store = await self._open()
        messages = items_to_messages(items)
        if messages:
            await store.append_many(messages)

    async def pop_item(self) -> dict[str, Any] | None:
        """Remove and return the newest item (None when empty)."""
        store = await self._open()
        for _ in range(8):
            snap = await store.snapshot()
            if not snap.messages:
                return None
            last = snap.messages[-1]
            items = message_to_items(last)
            rest = [item_to_message(it) for it in items[:-1]]
            try:
                n = len(snap.messages)
                await store.replace_prefix(n, [*snap.messages[:-1], *rest], snap.generation)
            except StaleGenerationError:
                continue  # rewritten meanwhile (a compaction): read again
            return items[-1]
        raise StaleGenerationError(
            "pop_item: the history was rewritten 8 times in a row; nothing removed"
        )

    async def clear_session(self) -> None:
        await (await self._open()).clear()

    def close(self) -> None:
        """Close the session (synchronous, as ``SQLiteSession.close``); later calls raise
        ``RuntimeError``. The store stays open: it is yours."""
        self._closed = True


def _call_id(item: Any, side: str) -> str | None:
    """The pairing id of ``item`` if it is the ``side`` (``"call"`` or ``"result"``) of a
    call/result pair — a function call or its output, and every other pair the Responses
    format knows (computer, shell, MCP approval...) — else None."""
    pair = item_pair(item)
    return pair[1] if pair is not None and pair[0] == side else None


def _first_pair_safe(items: Sequence[Any]) -> int:
    """The first cut ``c`` (``len(items)`` if none) such that every ``function_call_output``
    in ``items[c:]`` answers a ``function_call`` in ``items[c:]``: on the newest items of a
    history, the first place it can start without an orphaned output or a split call."""
    first = len(items)
    pending: set[Any] = set()
    for c in range(len(items) - 1, -1, -1):
        item = items[c]
        output = _call_id(item, "result")
        if output is not None:
            pending.add(output)
        else:
            pending.discard(_call_id(item, "call"))
        if not pending:
            first = c
    return first


def _item_pairs(items: Sequence[Any]) -> Iterator[tuple[int, int]]:
    """``(call, output)`` indices of each ``function_call_output`` whose call comes before."""
    where: dict[Any, int] = {}
    for i, item in enumerate(items):
        call = _call_id(item, "call")
        if call is not None:
            where[call] = i
        output = _call_id(item, "result")
        if output is not None and where.get(output, i) < i:
            yield where[output], i


class CtxtrimSQLiteSession(SQLiteSession, CtxtrimSession):  # type: ignore[misc]  # both bases declare session_settings and the Session methods; SQLiteSession's come first
    """openai-agents' ``SQLiteSession`` — the same constructor, file, tables and rows, so a
    database either class wrote the other reads — with ctxtrim's guarantees:

    - ``get_items(limit)`` never starts with a ``function_call_output`` whose call it left
      out, nor splits parallel calls from their outputs: the read (``SQLiteSession``'s own,
      the newest ``limit`` rows) starts at its first pair-safe item.
    - ``add_items`` checks every item: one that is not an input item (not a JSON object,
      or holding a value JSON cannot write) raises :class:`ctxtrim.InvalidMessage` naming
      it (:class:`ctxtrim.NotJSONData`, also a ``TypeError``, for the latter), and nothing
      is stored. The check runs inside ``SQLiteSession``'s write transaction, where its own
      ``json.dumps`` fails, so its rollback handling is what recovers.
    - ``_get_compaction_snapshot`` (the hook ``OpenAIResponsesCompactionSession`` compacts
      through) starts the suffix at a pair-safe item too, refuses (returns False, nothing
      changed) a replacement that would drop the output of a call it keeps, and prunes
      expired items only up to a cut that keeps every kept output's call. Otherwise it is
      ``SQLiteSession``'s: one ``BEGIN IMMEDIATE`` transaction that replaces the suffix only
      if it is still the newest rows.

    Connections, locks, ``pop_item``, ``clear_session`` and ``close`` are
    ``SQLiteSession``'s own. Made by ``CtxtrimSession(session_id, db_path)``.
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | Path = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            session_id, db_path, sessions_table, messages_table, session_settings=session_settings
        )

    @property
    def store(self) -> ContextStore:
        """Not a ctxtrim store: this session keeps ``SQLiteSession``'s tables."""
        raise AttributeError(
            "a CtxtrimSQLiteSession keeps SQLiteSession's tables, not a ctxtrim store; "
            "for one, use CtxtrimSession(await SQLiteContextStore.open(path, session_id))"
        )

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """``SQLiteSession.get_items``, started at the first pair-safe item when bounded."""
        items = await super().get_items(limit)
        resolved = resolve_session_limit(limit, self.session_settings)
        if resolved is None or resolved <= 0:
            return items  # everything (or nothing): no cut to move
        return items[_first_pair_safe(items) :]

    async def add_items(self, items: list[Any]) -> None:
        """``SQLiteSession.add_items`` of the items as plain dicts, each checked by
        :meth:`_insert_items` (a bad one stores nothing)."""
        self._check_not_closed()
        plain = []
        for i, item in enumerate(items):
            try:
                plain.append(_plain(item))
            except InvalidMessage as err:
                raise InvalidMessage(err.reason, f"items[{i}]") from None
        await super().add_items(cast(Any, plain))  # plain dicts: the items' runtime form

    def _insert_items(self, conn: sqlite3.Connection, items: list[Any]) -> None:
        """``SQLiteSession._insert_items``, then every item checked, inside its write
        transaction: an error rolls it back (and a connection that cannot roll back is
        replaced), as when ``SQLiteSession``'s own ``json.dumps`` fails there. That failure
        is named too: the item's :class:`ctxtrim.NotJSONData`, a ``TypeError`` as before."""
        try:
            super()._insert_items(conn, items)
        except TypeError:
            items_to_messages(items)
            raise
        items_to_messages(items)

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> _CompactionSnapshot | None:
        """The newest items, at most ``limit``, from the first pair-safe one; ``complete``
        when they are the whole history; and ``replace_suffix(start, output)`` (see the
        class docs). None if a row read is not JSON, as ``SQLiteSession``'s."""
        if type(limit) is not int or limit < 1:
            raise InvalidArgument(f"limit must be an int >= 1, got {limit!r}")
        table, sid = self.messages_table, self.session_id

        def read_rows() -> tuple[list[Any], bool]:
            with self._locked_connection() as conn:
                rows = conn.execute(
                    f"SELECT id, message_data FROM {table} "
                    "WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                    (sid, limit),
                ).fetchall()[::-1]
                older = (
                    bool(rows)
                    and conn.execute(
                        f"SELECT 1 FROM {table} WHERE session_id = ? AND id < ? LIMIT 1",
                        (sid, rows[0][0]),
                    ).fetchone()
                    is not None
                )
                return rows, older

        rows, older = await asyncio.to_thread(read_rows)
        try:
            items = [json.loads(data) for _, data in rows]
        except (json.JSONDecodeError, TypeError):
            return None
        first = _first_pair_safe(items)
        rows, items = rows[first:], items[first:]

        def prune(conn: sqlite3.Connection, before: int) -> None:
            """Delete the expired oldest rows (ids below ``before``), pair-safely."""
            assert prune_prefix is not None
            ids: list[int] = []
            read: list[Any] = []  # the items of the rows read, oldest first (None: not JSON)
            expired = 0  # how many of them are expired: a run from the oldest
            while True:
                chunk = conn.execute(
                    f"SELECT id, message_data FROM {table} "
                    "WHERE session_id = ? AND id > ? AND id < ? ORDER BY id LIMIT ?",
                    (sid, ids[-1] if ids else -1, before, limit),
                ).fetchall()
                for row_id, data in chunk:
                    try:
                        item = json.loads(data)
                    except (json.JSONDecodeError, TypeError):
                        item = None
                    if expired == len(read) and item is not None and prune_prefix(item):
                        expired += 1
                    ids.append(row_id)
                    read.append(item)
                if len(chunk) < limit:
                    break
                # Read on while the expired run goes on, or while a call it would drop may
                # be answered further on (not in the snapshot: that starts pair-safe).
                dropped = {_call_id(it, "call") for it in read[:expired]}
                answered = {_call_id(it, "result") for it in read}
                if expired < len(read) and dropped - {None} <= answered:
                    break
            drop = _last_safe_cut(_item_pairs(read), expired)
            if drop:
                conn.execute(
                    f"DELETE FROM {table} WHERE session_id = ? AND id <= ?", (sid, ids[drop - 1])
                )

        async def replace_suffix(start: int, output: list[Any]) -> bool:
            if type(start) is not int or start < 0:
                raise InvalidArgument(f"start must be an int >= 0, got {start!r}")
            expected = rows[start:]
            if not expected:
                return False  # nothing to replace (as SQLiteSession's)
            items_to_messages(output)  # a bad item changes nothing, not even the prefix
            plain = [_plain(it) for it in output]
            if _last_safe_cut(_item_pairs(items), start) < start:
                return False  # the suffix holds the output of a call that stays

            def replace_sync() -> bool:
                with self._write_connection() as conn:
                    conn.execute("BEGIN IMMEDIATE")
                    current = conn.execute(
                        f"SELECT id, message_data FROM {table} "
                        "WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                        (sid, len(expected)),
                    ).fetchall()[::-1]
                    if current != expected:
                        conn.rollback()
                        return False
                    if prune_prefix is not None:
                        prune(conn, expected[0][0])
                    conn.execute(
                        f"DELETE FROM {table} WHERE session_id = ? AND id >= ?",
                        (sid, expected[0][0]),
                    )
                    self._insert_items(conn, cast(Any, plain))
                    conn.commit()
                    return True

            return await _await_mutation(asyncio.to_thread(replace_sync))

        return _CompactionSnapshot(items, first == 0 and not older, replace_suffix)


def trim_input(
    max_tokens: int,
    *,
    reserve_tokens: int = 0,
    counter: TokenCounter | None = None,
    pin_task: bool = True,
) -> Callable[[list[Any], list[Any]], list[Any]]:
    """A ``session_input_callback`` keeping history plus new input within ``max_tokens``.

    The longest pair-safe suffix of the history that fits together with the new items is
    kept, with the first user message (the task) pinned unless ``pin_task=False``; items
    are returned as the same objects the runner passed in (it tracks them by identity).
    """
    strategy = FitContextWindow(
        max_tokens, reserve_tokens=reserve_tokens, counter=counter, pin_task=pin_task
    )
    # One message per item object, made when it is first read. A history the runner hands
    # over again (the same item objects, grown: the session keeps them) is mirrored in a
    # MessageLog, so a call converts only the new items and the core decides in O(log n);
    # a history of fresh objects is read by the core from its ends (O(window) conversions).
    skeletons: Skeletons[Any] = Skeletons(lambda item, _i: item_to_message(item))
    mirror: Mirror[Any] = Mirror(skeletons, with_log=True, eager=False, counter=counter)

    def callback(history: list[Any], new_items: list[Any]) -> list[Any]:
        combined = _Joined(history, new_items)
        if not len(combined):
            return []
        window = None
        if history and type(history) is list:
            window = mirror.window(
                history,
                "budget",
                strategy.budget,
                pin_task=pin_task,
                start_with_user=strategy.start_with_user,
                extra=new_items,
                convert_extra=skeletons.one,
            )
        if window is None:
            window = ends_window(
                combined,
                skeletons,
                "budget",
                strategy.budget,
                pin_task=pin_task,
                start_with_user=strategy.start_with_user,
                counter=counter,
            )
        ranges, unchanged, _ = window
        return [*history, *new_items] if unchanged else take(combined, ranges)

    return callback


class _Joined(Sequence[Any]):
    """``history + new_items`` without copying the history (slices only copy the slice)."""

    def __init__(self, first: list[Any], second: list[Any]) -> None:
        self._a = first
        self._b = second

    def __len__(self) -> int:
        return len(self._a) + len(self._b)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        a, b = self._a, self._b
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("only contiguous slices")
            k = len(a)
            return a[start : min(stop, k)] + b[max(start - k, 0) : max(stop - k, 0)]
        if i < 0:
            i += len(self)
        return a[i] if i < len(a) else b[i - len(a)]
