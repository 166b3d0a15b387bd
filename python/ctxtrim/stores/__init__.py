"""Persistent :class:`~ctxtrim.ContextStore` backends.

``SQLiteContextStore`` (stdlib ``sqlite3``) is the embedded default and is imported eagerly.
``RedisContextStore`` and ``PostgresContextStore`` need their clients (the ``ctxtrim[redis]``
/ ``ctxtrim[postgres]`` extras), so they are imported on first access
(``from ctxtrim.stores import RedisContextStore``): importing this package never requires
them, and a missing client raises ``ImportError`` naming the extra only when asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ctxtrim.stores.sqlite import SQLiteContextStore

if TYPE_CHECKING:
    from ctxtrim.stores.postgres import PostgresContextStore
    from ctxtrim.stores.redis import RedisContextStore

__all__ = ["PostgresContextStore", "RedisContextStore", "SQLiteContextStore"]

_LAZY = {
    "RedisContextStore": ("ctxtrim.stores.redis", "redis"),
    "PostgresContextStore": ("ctxtrim.stores.postgres", "postgres"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _LAZY[name]
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as e:
        raise ImportError(
            f"{name} needs its client library: pip install 'ctxtrim[{extra}]' ({e})"
        ) from e
