"""The provider-tool example sessions (examples/sessions/make_provider_sessions.py): an
Anthropic research agent using server-side web search, code execution, MCP, documents and
citations, and an OpenAI Responses computer-use agent with web search, MCP approvals and a
``compaction`` item. Both files are written natively in the providers' wire shapes (validated
against the SDKs' request types by the script), so these tests check ctxtrim on what a client
really sends back:

* the files are exactly what the script writes (reproducible);
* ``to_X(from_X(payload)) == payload``, also through the ``*_json`` writers;
* the histories validate clean, and so does every ``FitContextWindow`` window from 10% to
  90% of the total, rendered back with its provider pairs whole (a server tool's result with
  its call in the same assistant message, a computer call with its screenshot, a reasoning
  item with the item it precedes) and, for Responses, nothing the compaction summarised kept
  but the pinned head;
* the CLI trims and validates both files.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ctxtrim import FitContextWindow, HeuristicTokenCounter, Message, validate
from ctxtrim.formats import (
    from_anthropic,
    from_openai_responses,
    to_anthropic,
    to_anthropic_json,
    to_openai_responses,
    to_openai_responses_json,
)

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "examples" / "sessions"
SCRIPT = SESSIONS / "make_provider_sessions.py"
ANTHROPIC = SESSIONS / "anthropic_server_tools.json"
RESPONSES = SESSIONS / "openai_responses_tools.json"

#: The CLI's ``--format`` of each file.
CLI_FORMATS = {"anthropic": "anthropic", "responses": "responses"}
PERCENTS = list(range(10, 100, 10))

Item = dict[str, Any]


def load_script() -> ModuleType:
    """The session script, imported from its path (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("make_provider_sessions", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def anthropic_body() -> dict[str, Any]:
    body: dict[str, Any] = read(ANTHROPIC)
    return body


def responses_items() -> list[Item]:
    items: list[Item] = read(RESPONSES)
    return items


def tokens(messages: Sequence[Message]) -> int:
    counter = HeuristicTokenCounter()
    return sum(counter.count_message(m) for m in messages)


def is_subsequence(part: Sequence[Any], whole: Sequence[Any]) -> bool:
    """Whether ``part`` is ``whole`` with some entries left out (order kept)."""
    rest = iter(whole)
    return all(any(x == y for y in rest) for x in part)


# --------------------------------------------------------------------------------------------
# The files


def test_files_are_what_the_script_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = load_script()
    built: dict[str, str] = script.build()
    assert sorted(built) == sorted([ANTHROPIC.name, RESPONSES.name])
    for name, text in built.items():
        assert (SESSIONS / name).read_text(encoding="utf-8") == text, name
    # The builders give the payloads themselves, and the same each time.
    assert script.anthropic_session() == anthropic_body()
    assert script.responses_session() == responses_items()
    assert script.build() == built
    # main() writes byte-identical files.
    monkeypatch.setattr(script, "HERE", tmp_path)
    script.main()
    for name in built:
        assert (tmp_path / name).read_bytes() == (SESSIONS / name).read_bytes(), name


def test_the_script_refuses_a_shape_the_sdk_does_not_know() -> None:
    script = load_script()
    body = anthropic_body()
    search_result = body["messages"][1]["content"][3]["content"][0]
    assert search_result["type"] == "web_search_result"
    search_result["snippet"] = "not a field of the SDK's type"
    with pytest.raises(ValueError, match=r"messages\[1\]\.content\[3\]"):
        script.check_anthropic(body)
    items = responses_items()
    assert items[10]["type"] == "computer_call"
    items[10]["action"] = {"type": "click", "x": 1, "y": 2}  # no button
    with pytest.raises(ValueError, match=r"input\[10\]"):
        script.check_responses(items)


def test_the_sessions_hold_what_they_promise() -> None:
    body = anthropic_body()
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    kinds = {b["type"] for b in blocks}
    assert len(body["messages"]) >= 30
    assert {
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "tool_use",
        "tool_result",
    } <= kinds
    texts = [b for b in blocks if b["type"] == "text"]
    citations = {c["type"] for b in texts for c in b.get("citations") or []}
    assert citations == {"web_search_result_location", "page_location"}
    assert any("cache_control" in b for b in blocks)
    servers = {b["name"] for b in blocks if b["type"] == "server_tool_use"}
    assert servers == {"web_search", "code_execution"}

    items = responses_items()
    types = [i.get("type", "message") for i in items]
    assert len(items) >= 30
    assert {
        "reasoning",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "function_call",
        "function_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "compaction",
    } <= set(types)
    assert types.count("computer_call") >= 4
    assert types.count("compaction") == 1
    assert 2 < types.index("compaction") < len(items) - 10  # in the middle
    assert any(
        a["type"] == "url_citation"
        for i in items
        if i.get("role") == "assistant"
        for part in i["content"]
        for a in part.get("annotations", [])
    )


# --------------------------------------------------------------------------------------------
# Round trips and validation


def test_anthropic_round_trip_is_exact() -> None:
    body = anthropic_body()
    original = copy.deepcopy(body)
    messages = from_anthropic(body)
    assert body == original  # reading did not mutate the caller's data
    assert to_anthropic(messages) == original
    assert json.loads(to_anthropic_json(messages)) == original
    assert validate(messages) == []


def test_responses_round_trip_is_exact() -> None:
    items = responses_items()
    original = copy.deepcopy(items)
    messages = from_openai_responses(items)
    assert items == original
    assert to_openai_responses(messages) == original
    assert json.loads(to_openai_responses_json(messages)) == original
    assert validate(messages) == []


# --------------------------------------------------------------------------------------------
# Trimming: every window validates, renders back and keeps the provider pairs whole


#: Anthropic blocks that answer a call in the same assistant message, and the call's type.
SAME_MESSAGE_RESULTS = {
    "web_search_tool_result": "server_tool_use",
    "code_execution_tool_result": "server_tool_use",
    "mcp_tool_result": "mcp_tool_use",
}


def check_anthropic_window(window: dict[str, Any], original: dict[str, Any]) -> None:
    assert window.get("system") == original["system"]
    assert is_subsequence(window["messages"], original["messages"])
    previous: list[Any] = []
    for m in window["messages"]:
        content = m["content"] if isinstance(m["content"], list) else []
        for k, block in enumerate(content):
            call_type = SAME_MESSAGE_RESULTS.get(block["type"])
            if call_type is not None:
                assert m["role"] == "assistant"
                assert any(
                    b["type"] == call_type and b["id"] == block["tool_use_id"] for b in content[:k]
                ), block["tool_use_id"]
            if block["type"] == "tool_result":  # its tool_use in the assistant message before
                assert any(
                    b["type"] == "tool_use" and b["id"] == block["tool_use_id"] for b in previous
                ), block["tool_use_id"]
        previous = content


#: Responses items the client sends (a user-side item), besides user/developer messages.
USER_SIDE = {"function_call_output", "computer_call_output", "mcp_approval_response"}
#: Responses call/result pairs: (call type, its id key, result type, the result's id key).
PAIRS = [
    ("function_call", "call_id", "function_call_output", "call_id"),
    ("computer_call", "call_id", "computer_call_output", "call_id"),
    ("mcp_approval_request", "id", "mcp_approval_response", "approval_request_id"),
]


def user_side(item: Item | None) -> bool:
    if item is None:
        return False
    if "role" in item:
        return bool(item["role"] != "assistant")
    return item.get("type") in USER_SIDE


def check_responses_window(window: list[Item], original: list[Item]) -> None:
    assert is_subsequence(window, original)
    for k, item in enumerate(window):
        if item.get("type") != "reasoning":
            continue
        after = window[k + 1] if k + 1 < len(window) else None
        j = original.index(item)
        before = original[j + 1] if j + 1 < len(original) else None
        if after is None or user_side(after):  # a reasoning item left without its item
            assert before is None or user_side(before), item["id"]
        # In fact it keeps the very item it preceded.
        assert after == before, item["id"]
    for call_type, call_key, result_type, result_key in PAIRS:
        calls = [i[call_key] for i in window if i.get("type") == call_type]
        results = [i[result_key] for i in window if i.get("type") == result_type]
        answered = {i[result_key] for i in original if i.get("type") == result_type}
        for k, item in enumerate(window):
            if item.get("type") == result_type:  # its call is in the window, before it
                earlier = [i.get(call_key) for i in window[:k] if i.get("type") == call_type]
                assert item[result_key] in earlier, item[result_key]
        assert [c for c in calls if c in answered] == results


def windows(messages: list[Message]) -> list[tuple[int, list[Message], FitContextWindow]]:
    total = tokens(messages)
    out = []
    for pct in PERCENTS:
        strategy = FitContextWindow(total * pct // 100)
        out.append((pct, strategy(messages), strategy))
    return out


def test_anthropic_windows_validate_and_render_back() -> None:
    body = anthropic_body()
    messages = from_anthropic(body)
    trimmed = 0
    for pct, window, _ in windows(messages):
        assert validate(window) == [], pct
        check_anthropic_window(to_anthropic(window), body)
        assert json.loads(to_anthropic_json(window)) == to_anthropic(window)
        trimmed += len(window) < len(messages)
    assert trimmed == len(PERCENTS)  # every budget below the total trims


def test_responses_windows_validate_and_render_back() -> None:
    items = responses_items()
    messages = from_openai_responses(items)
    trimmed = 0
    for pct, window, _ in windows(messages):
        assert validate(window) == [], pct
        check_responses_window(to_openai_responses(window), items)
        assert json.loads(to_openai_responses_json(window)) == to_openai_responses(window)
        trimmed += len(window) < len(messages)
    assert trimmed == len(PERCENTS)


def test_responses_trim_drops_what_the_compaction_summarised() -> None:
    items = responses_items()
    messages = from_openai_responses(items)
    compaction = next(k for k, i in enumerate(items) if i.get("type") == "compaction")
    head = items[:2]  # the developer message and the task
    assert [i["role"] for i in head] == ["developer", "user"]
    kept_compaction = 0
    for pct, window, strategy in windows(messages):
        report = strategy.describe(messages)
        assert report.dropped_messages > 0, pct
        assert report.dropped_compacted > 0, pct
        rendered = to_openai_responses(window)
        assert rendered[: len(head)] == head, pct
        after = items[compaction:]
        assert all(i in after for i in rendered[len(head) :]), pct
        kept_compaction += items[compaction] in rendered
    assert kept_compaction > 0  # some budgets keep the compaction and what follows it


# --------------------------------------------------------------------------------------------
# The CLI


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        cwd=ROOT,
    )


READERS: dict[str, tuple[Path, Callable[[Any], list[Message]]]] = {
    "anthropic": (ANTHROPIC, from_anthropic),
    "responses": (RESPONSES, from_openai_responses),
}


@pytest.mark.parametrize("pct", [5, 30, 60, 90])
@pytest.mark.parametrize("fmt", sorted(READERS))
def test_cli_trim(fmt: str, pct: int, tmp_path: Path) -> None:
    path, reader = READERS[fmt]
    messages = reader(read(path))
    budget = tokens(messages) * pct // 100
    out = tmp_path / "trimmed.json"
    proc = run("trim", path, "--format", CLI_FORMATS[fmt], "--max-tokens", budget, "-o", out)
    assert proc.returncode in (0, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    trimmed = reader(read(out))
    assert validate(trimmed) == []
    assert len(trimmed) < len(messages)
    if fmt == "anthropic":
        check_anthropic_window(read(out), read(path))
    else:
        check_responses_window(read(out), read(path))


@pytest.mark.parametrize("fmt", sorted(READERS))
def test_cli_validate(fmt: str) -> None:
    path, _ = READERS[fmt]
    proc = run("validate", path, "--format", CLI_FORMATS[fmt])
    assert proc.returncode == 0, proc.stdout + proc.stderr
