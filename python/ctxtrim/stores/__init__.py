"""Persistent :class:`~ctxtrim.ContextStore` backends.

``SQLiteContextStore`` (stdlib ``sqlite3``) is the embedded default. Backends that need a
third-party client are imported from their own modules (``ctxtrim.stores.redis``,
``ctxtrim.stores.postgres``) so that importing this package never requires them.
"""

from ctxtrim.stores.sqlite import SQLiteContextStore

__all__ = ["SQLiteContextStore"]
