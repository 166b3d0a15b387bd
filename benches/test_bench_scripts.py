"""The standalone benchmark scripts, each run once at a tiny size as a smoke test: they start,
measure every row they promise and print their table. The numbers mean nothing at these
sizes and are not asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_server_turn_bytes_measures_every_format_and_path() -> None:
    pytest.importorskip("orjson", reason="orjson is a contender of the bench extra")
    out = _run("server_turn_bytes.py", "--sizes", "200", "--repeat", "1", "--number", "2")
    for fmt in ("OpenAI chat", "Anthropic", "OpenAI Responses"):
        assert f"| {fmt} | 200 | json.loads + from_*, store |" in out
        assert f"| {fmt} | 200 | dicts out, the SDK's serialisation, store |" in out
        assert f"| {fmt} | 200 | orjson floor (loads new + dumps window) |" in out
    for fmt in ("OpenAI chat", "Anthropic", "OpenAI Responses"):  # with a bytes reader
        assert f"| {fmt} | 200 | from_*_json, a new fork of the store |" in out
        assert f"| {fmt} | 200 | from_*_json, store, apply_json |" in out


def test_server_memory_measures_the_store_and_the_dicts() -> None:
    pytest.importorskip("orjson", reason="orjson is a contender of the bench extra")
    out = _run("server_memory.py", "--turns", "50")
    for case in ("ctxtrim store", "json.loads dicts", "orjson.loads dicts"):
        assert f"| {case} |" in out


def test_http_server_serves_every_handler() -> None:
    for module in ("starlette", "uvicorn", "aiohttp"):
        pytest.importorskip(module, reason="the HTTP row needs the bench extra")
    out = _run(
        "http_server.py",
        *("--sessions", "2", "--messages", "100", "--clients", "4"),
        *("--requests", "40", "--rounds", "1"),
    )
    assert "| no-op (read the body, return a prebuilt window) |" in out
    assert "| ctxtrim turn: read, append, `apply`, `to_openai_chat_json` |" in out
    assert "| ctxtrim turn: read, append, `apply_json` |" in out
