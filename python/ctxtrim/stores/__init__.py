"""Persistent :class:`~ctxtrim.ContextStore` backends.

``SQLiteContextStore`` (stdlib ``sqlite3``) is the embedded default and is imported eagerly.
``RedisContextStore`` and ``PostgresContextStore`` need their clients (the ``ctxtrim[redis]``
/ ``ctxtrim[postgres]`` extras), so they are imported on first access
(``from ctxtrim.stores import RedisContextStore``): importing this package never requires
them, and a missing client raises ``ImportError`` naming the extra only when asked for.

``log_caches`` (a :class:`LogCaches`) bounds the logs these stores keep cached for
``load_log``: ``ctxtrim.stores.log_caches.limit_bytes = 128 * 2**20`` caps them at 128 MiB
of stored messages (default :data:`DEFAULT_LOG_CACHE_BYTES`, 512 MiB), the least recently
used sessions' logs released first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ctxtrim.stores._common import DEFAULT_LOG_CACHE_BYTES, LogCaches, log_caches
from ctxtrim.stores.sqlite import SQLiteContextStore

if TYPE_CHECKING:
    from ctxtrim.stores.postgres import PostgresContextStore
    from ctxtrim.stores.redis import RedisContextStore

__all__ = [
    "DEFAULT_LOG_CACHE_BYTES",
    "LogCaches",
    "PostgresContextStore",
    "RedisContextStore",
    "SQLiteContextStore",
    "log_caches",
]

#: The stores imported on first access. Each module says itself which extra its missing
#: client comes with (one ImportError, one hint).
_LAZY = {
    "RedisContextStore": "ctxtrim.stores.redis",
    "PostgresContextStore": "ctxtrim.stores.postgres",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
