"""Clients and pools shared by the stores of one event loop, opened from the same address.

A server holding thousands of sessions opens one store per conversation; each open must not
make its own Redis client or PostgreSQL pool. :class:`LoopShared` hands every open with the
same key (address and connection options) on the same event loop the same resource, made
once, and the resource counts its users so the last store to close closes it. Per event
loop because an asyncio client belongs to the loop that made it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

__all__ = ["LoopShared", "Users"]


class Users(Protocol):
    users: int


_R = TypeVar("_R", bound=Users)


class LoopShared(Generic[_R]):
    """Resources by ``(event loop, key)``; see the module docstring."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[Hashable, asyncio.Future[_R]]
        ] = weakref.WeakKeyDictionary()

    async def get(self, key: Hashable, make: Callable[[], Awaitable[_R]]) -> _R:
        """The loop's resource for ``key`` with one more user, made by ``make()`` (whose
        result starts with one user: the caller) if there is none yet. Opens racing for a
        key wait for the first one's ``make``; if it fails, they fail with its error."""
        loop = asyncio.get_running_loop()
        table = self._by_loop.setdefault(loop, {})
        while True:
            pending = table.get(key)
            if pending is None:
                break
            try:
                value = await asyncio.shield(pending)
            except asyncio.CancelledError:
                if not pending.cancelled():  # this caller was cancelled
                    raise
                if table.get(key) is pending:  # the first opener was: make it here
                    del table[key]
                continue
            if value.users > 0:  # not closed meanwhile by the last of its users
                value.users += 1
                return value
            if table.get(key) is pending:
                del table[key]
        pending = loop.create_future()
        table[key] = pending
        try:
            value = await make()
        except BaseException as e:
            if table.get(key) is pending:
                del table[key]
            if isinstance(e, Exception):
                pending.set_exception(e)
                pending.exception()  # retrieved: waiters (if any) re-raise it
            else:
                pending.cancel()
            raise
        pending.set_result(value)
        return value

    def forget(self, key: Hashable, value: _R) -> None:
        """Stop handing out ``value`` (its last user is closing it)."""
        try:
            table = self._by_loop[asyncio.get_running_loop()]
        except (KeyError, RuntimeError):
            return
        pending = table.get(key)
        if pending is not None and pending.done() and not pending.cancelled():
            if pending.exception() is None and pending.result() is value:
                del table[key]

    def count(self) -> int:
        """Resources held for the running loop (for tests)."""
        return len(self._by_loop.get(asyncio.get_running_loop(), {}))
