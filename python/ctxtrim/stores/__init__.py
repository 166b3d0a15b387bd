"""Persistent :class:`~ctxtrim.ContextStore` backends.

``SQLiteContextStore`` (stdlib ``sqlite3``) is the embedded default. Backends that need a
third-party client live in their own modules (``ctxtrim.stores.redis``,
``ctxtrim.stores.postgres``) and are exported here lazily, so importing this package never
requires them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ctxtrim.stores.sqlite import SQLiteContextStore

if TYPE_CHECKING:
    from ctxtrim.stores.postgres import PostgresContextStore
    from ctxtrim.stores.redis import RedisContextStore

__all__ = ["PostgresContextStore", "RedisContextStore", "SQLiteContextStore"]

# Imported on first access, so `import ctxtrim.stores` works without the extras; accessing
# one without its extra raises ImportError naming the extra to install.
_LAZY = {
    "RedisContextStore": "ctxtrim.stores.redis",
    "PostgresContextStore": "ctxtrim.stores.postgres",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
