"""Session set-up of the test suite: throw-away Redis and PostgreSQL servers.

``python -m pytest`` starts a Redis (>= 7) and a PostgreSQL (>= 14) on 127.0.0.1 for the
session (free ports, data in a temp dir removed at the end; see ``servers.py``) and exports
their URLs as ``CTXTRIM_REDIS_URL`` / ``CTXTRIM_POSTGRES_DSN``. They start in
``pytest_configure``, before collection, because the store test modules and the spawn
children of the reliability tests read the URLs from the environment when they are
imported. Variables that are already set point at existing servers and win.

Where a binary is missing the store tests skip with the reason, and the run ends with a
line saying so above the summary. ``CTXTRIM_REQUIRE_SERVERS=1`` (CI sets it) turns a
missing or failed server into an error that stops the run before any test.
``CTXTRIM_TEST_SERVERS=0`` starts nothing (for a quick run of unrelated tests).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ctxtrim

from servers import POSTGRES_VAR, REDIS_VAR, Services

_services: Services | None = None
_KIND = {REDIS_VAR: "Redis", POSTGRES_VAR: "PostgreSQL"}


def pytest_configure(config: pytest.Config) -> None:
    global _services
    if config.option.help or os.environ.get("CTXTRIM_TEST_SERVERS") == "0":
        return
    _services = Services.start()
    for var, url in _services.urls.items():
        os.environ[var] = url
    if _services.missing and os.environ.get("CTXTRIM_REQUIRE_SERVERS") == "1":
        why = "; ".join(f"{_KIND[v]}: {w}" for v, w in _services.missing.items())
        _services.stop()
        raise pytest.UsageError(f"CTXTRIM_REQUIRE_SERVERS=1 but {why}")


def pytest_unconfigure(config: pytest.Config) -> None:
    global _services
    if _services is not None:
        for var, origin in _services.origin.items():
            if origin == "started":
                os.environ.pop(var, None)
        _services.stop()
        _services = None


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"ctxtrim {ctxtrim.__version__} from {Path(ctxtrim.__file__).parent}"]
    if _services is None:
        return [*lines, "store servers: not started (CTXTRIM_TEST_SERVERS=0)"]
    for var, kind in _KIND.items():
        if var in _services.urls:
            lines.append(f"{kind}: {_services.urls[var]} ({_services.origin[var]})")
        else:
            lines.append(f"{kind}: none, its tests skip: {_services.missing[var]}")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say, just above the summary line, which servers were missing and what it cost."""
    if _services is None:
        why = {v: "CTXTRIM_TEST_SERVERS=0" for v in _KIND}
    else:
        why = _services.missing
    skipped = terminalreporter.stats.get("skipped", [])
    for var, reason in why.items():
        words = (var, _KIND[var].lower(), "redis-server" if var == REDIS_VAR else "postgres")
        count = sum(
            1 for r in skipped if any(w in str(getattr(r, "longrepr", "")).lower() for w in words)
        )
        terminalreporter.write_sep(
            "!",
            f"NO {_KIND[var].upper()} SERVER: {count} test(s) skipped - {reason}",
            yellow=True,
            bold=True,
        )
