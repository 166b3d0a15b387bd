"""Every block and item the official SDKs define is read, written back unchanged, paired, trimmed
pair-safely and priced: instances of every member of the SDKs' own unions are generated from
their type definitions (``sdk_members.py``), so a new SDK release with a new type fails here
until ctxtrim handles it.

Unions: anthropic ``BetaContentBlockParam`` and ``BetaContentBlock``; openai
``ResponseInputItem`` and ``ResponseInputItemParam`` with their content parts; Chat
Completions' message, content part and tool call unions; google-genai's ``Part`` and
``PartDict`` (every field alone, two by two and all at once) in a ``Content`` (the versions
the test extra pins). google-genai needs Python >= 3.11: its cases skip on 3.10.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ctxtrim
from ctxtrim import (
    FitContextWindow,
    KeepLastMessages,
    KeepLastTurns,
    Message,
    ProviderBlock,
    TrimRounds,
    repair,
    validate,
)
from ctxtrim.formats import (
    from_anthropic,
    from_gemini,
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_anthropic_json,
    to_gemini,
    to_gemini_json,
    to_openai_chat,
    to_openai_chat_json,
    to_openai_responses,
    to_openai_responses_json,
)
from ctxtrim.provider import SPECS, UNKNOWN, wire_type

import sdk_members
from sdk_members import Member

ROOT = Path(__file__).resolve().parents[2]


#: google-genai 3.6.1 (the pinned version) requires Python >= 3.11.
GENAI_REASON = (
    f"google-genai 3.6.1 needs Python >= 3.11; this is {sys.version_info[0]}.{sys.version_info[1]}"
)


def members(generator: str) -> list[Member]:
    if generator.startswith("gemini") and sys.version_info < (3, 11):
        pytest.skip(GENAI_REASON)
    return _members(generator)


@functools.cache
def _members(generator: str) -> list[Member]:
    return sdk_members.GENERATORS[generator]()


#: The wire types each format models with a block of its own (all others are rows of SPECS).
MODELLED = {
    "anthropic": {"text", "image", "tool_use", "tool_result", "thinking", "redacted_thinking"},
    "openai_responses": {"message", "function_call", "function_call_output", "reasoning"},
    "openai_chat": {"", "text", "image_url", "function"},
    "gemini": {"text", "inline_data", "function_call", "function_response"},
}

#: generator → (format, from, to dicts, to JSON)
FORMATS: dict[str, tuple[str, Callable[..., Any], Callable[..., Any], Callable[..., bytes]]] = {
    "anthropic_request_blocks": ("anthropic", from_anthropic, to_anthropic, to_anthropic_json),
    "anthropic_response_blocks": ("anthropic", from_anthropic, to_anthropic, to_anthropic_json),
    "responses_input_items": (
        "openai_responses",
        from_openai_responses,
        to_openai_responses,
        to_openai_responses_json,
    ),
    "responses_input_item_params": (
        "openai_responses",
        from_openai_responses,
        to_openai_responses,
        to_openai_responses_json,
    ),
    "chat_message_params": ("openai_chat", from_openai_chat, to_openai_chat, to_openai_chat_json),
    "gemini_parts": ("gemini", from_gemini, to_gemini, to_gemini_json),
    "gemini_part_dicts": ("gemini", from_gemini, to_gemini, to_gemini_json),
}

_ANTHROPIC_ASSISTANT = {"tool_use", "thinking", "redacted_thinking"}


def anthropic_role(block: dict[str, Any]) -> str:
    """The role of the message an Anthropic block travels in."""
    kind = block["type"]
    if kind in _ANTHROPIC_ASSISTANT:
        return "assistant"
    spec = SPECS["anthropic"].get(kind)
    return "assistant" if spec is not None and spec.side == "assistant" else "user"


def snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def gemini_roles(part: dict[str, Any]) -> list[str]:
    """The roles of the contents a Gemini part may travel in: a function call in the
    model's, a function response in the user's, what its row puts on the assistant side in
    the model's, anything else in either."""
    keys = {snake(k) for k in part}
    if "function_call" in keys:
        return ["model"]
    if "function_response" in keys:
        return ["user"]
    spec = SPECS["gemini"].get(wire_type("gemini", part))
    return ["model"] if spec is not None and spec.side == "assistant" else ["user", "model"]


def payload_of(generator: str, member: Member) -> Any:
    """The member as a whole provider payload (one message, or one item; a Gemini part in a
    content of each role it may travel in)."""
    if FORMATS[generator][0] == "anthropic":
        block = member.payload
        return {"messages": [{"role": anthropic_role(block), "content": [block]}]}
    if FORMATS[generator][0] == "gemini":
        part = member.payload
        contents = [{"role": role, "parts": [part]} for role in gemini_roles(part)]
        for content in contents:
            sdk_members.validate_gemini_content(content, dicts=generator == "gemini_part_dicts")
        return {"contents": contents}
    return [member.payload]


def provider_blocks(messages: list[Message]) -> list[ProviderBlock]:
    out: list[ProviderBlock] = []
    for m in messages:
        for b in m.content:
            if type(b) is ProviderBlock:
                out.append(b)
            elif type(b) is ctxtrim.ToolResultBlock and not isinstance(b.content, str):
                out += [p for p in b.content if type(p) is ProviderBlock]
    return out


# --------------------------------------------------------------------------------------------
# One member at a time


@pytest.mark.parametrize("generator", sorted(FORMATS))
def test_every_member_round_trips_unchanged(generator: str) -> None:
    """``to_X(from_X(payload)) == payload`` for every member, through the dict and the JSON
    writers, and through ctxtrim's own shape (what the stores keep)."""
    _, from_x, to_x, to_json = FORMATS[generator]
    failures = []
    for member in members(generator):
        payload = payload_of(generator, member)
        try:
            messages = from_x(copy.deepcopy(payload))
            assert to_x(messages) == payload
            assert json.loads(to_json(messages)) == payload
            assert [Message.from_dict(m.to_dict()) for m in messages] == messages
            assert [Message.decode(m.encode()) for m in messages] == messages
        except Exception as e:  # collected, so one run names every member that fails
            failures.append(f"{member.name}: {type(e).__name__}: {e}")
    assert not failures, "\n".join(failures)
    assert len(members(generator)) > 5


@pytest.mark.parametrize("generator", sorted(FORMATS))
def test_every_sdk_type_is_modelled_or_has_a_row(generator: str) -> None:
    """Each member's wire type is one ctxtrim models or a row of its format's table, and so is
    every content part inside it: none is kept as an unknown type."""
    fmt, from_x, _, _ = FORMATS[generator]
    missing = set()
    for member in members(generator):
        if member.wire_type not in MODELLED[fmt] and member.wire_type not in SPECS[fmt]:
            missing.add(member.wire_type)
        for b in provider_blocks(from_x(copy.deepcopy(payload_of(generator, member)))):
            if b.spec is UNKNOWN:
                missing.add(b.wire_type)
    assert not missing, f"{fmt} types with no row in ctxtrim.provider.SPECS: {sorted(missing)}"


def test_the_generated_members_cover_the_types_users_meet() -> None:
    """The generator reaches the types the SDKs' unions hold today (a guard on the generator
    itself: an SDK release that renames a union should not make the tests above vacuous)."""
    anthropic = {m.wire_type for m in members("anthropic_request_blocks")}
    assert {
        "server_tool_use",
        "web_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "document",
        "search_result",
        "container_upload",
        "compaction",
    } <= anthropic
    responses = {m.wire_type for m in members("responses_input_items")}
    assert {
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "mcp_approval_request",
        "mcp_approval_response",
        "compaction",
        "item_reference",
        "shell_call_output",
    } <= responses
    assert {"custom", "function_call", "input_audio", "file"} <= {
        m.wire_type for m in members("chat_message_params")
    }


@pytest.mark.parametrize("generator", ["gemini_parts", "gemini_part_dicts"])
def test_the_gemini_members_reach_every_block_and_every_content_field(generator: str) -> None:
    """Gemini's generated parts become every block ctxtrim models (text, an inline image, a
    function call and response, a thought with its signature) and paired provider blocks;
    and ``Content`` has no field the reader does not know (a new one fails here)."""
    kinds = set()
    paired = set()
    for member in members(generator):
        for m in from_gemini(payload_of(generator, member)):
            for b in m.content:
                kinds.add(type(b).__name__)
                if type(b) is ProviderBlock and b.spec.pair:
                    paired.add(b.wire_type)
                if type(b) is ctxtrim.ReasoningBlock and b.signature:
                    kinds.add("signed ReasoningBlock")  # a thought with its signature on it
    assert kinds == {
        "TextBlock",
        "ImageBlock",
        "ToolUseBlock",
        "ToolResultBlock",
        "ReasoningBlock",
        "signed ReasoningBlock",
        "ProviderBlock",
    }
    assert paired == {"executable_code", "code_execution_result", "tool_call", "tool_response"}
    dicts = generator == "gemini_part_dicts"
    assert set(sdk_members.gemini_content_fields(dicts)) == {"parts", "role"}


# --------------------------------------------------------------------------------------------
# A long history made of every member, each call with its result


def _relabel(d: dict[str, Any], keys: tuple[str, ...], value: str) -> dict[str, Any]:
    out = copy.deepcopy(d)
    for key in keys:
        if key in out:
            out[key] = value
    return out


def _first(generator: str, wire_type: str) -> dict[str, Any]:
    return next(m.payload for m in members(generator) if m.wire_type == wire_type)


def anthropic_history(rounds: int) -> dict[str, Any]:
    gen = "anthropic_request_blocks"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "The task."}]
    for r in range(rounds):
        for k, member in enumerate(members(gen)):
            pid = f"toolu_{r}_{k}"
            block = _relabel(member.payload, ("id", "tool_use_id"), pid)
            kind = block["type"]
            spec = SPECS["anthropic"].get(kind)
            if kind == "tool_use":
                call = {"type": "tool_result", "tool_use_id": pid, "content": "done"}
                messages += [
                    {"role": "assistant", "content": [block]},
                    {"role": "user", "content": [call]},
                ]
            elif kind == "tool_result":
                use = {"type": "tool_use", "id": pid, "name": "ls", "input": {}}
                messages += [
                    {"role": "assistant", "content": [use]},
                    {"role": "user", "content": [block]},
                ]
            elif spec is not None and spec.pair == "call":
                partner = spec.partner or "web_search_tool_result"
                result = _relabel(_first(gen, partner), ("tool_use_id",), pid)
                messages.append({"role": "assistant", "content": [block, result]})
            elif spec is not None and spec.pair == "result":
                call = _relabel(_first(gen, spec.partner), ("id",), pid)
                messages.append({"role": "assistant", "content": [call, block]})
            else:
                messages.append({"role": anthropic_role(block), "content": [block]})
            messages.append({"role": "user", "content": f"Go on ({r}, {k})."})
    return {"system": "You are careful.", "messages": messages}


def responses_history(rounds: int) -> list[dict[str, Any]]:
    gen = "responses_input_items"
    items: list[dict[str, Any]] = [{"role": "user", "content": "The task."}]

    def with_id(item: dict[str, Any], pid: str) -> dict[str, Any]:
        spec = SPECS["openai_responses"].get(item.get("type", ""))
        key = spec.id_key if spec is not None and spec.pair else "call_id"
        return _relabel(item, (key,), pid)

    for r in range(rounds):
        for k, member in enumerate(members(gen)):
            pid = f"call_{r}_{k}"
            item = with_id(member.payload, pid)
            kind = member.wire_type
            spec = SPECS["openai_responses"].get(kind)
            if kind == "function_call":
                items += [item, {"type": "function_call_output", "call_id": pid, "output": "ok"}]
            elif kind == "function_call_output":
                call = {"type": "function_call", "call_id": pid, "name": "ls", "arguments": "{}"}
                items += [call, item]
            elif spec is not None and spec.pair == "call":
                items += [item, with_id(_first(gen, spec.partner), pid)]
            elif spec is not None and spec.pair == "result":
                items += [with_id(_first(gen, spec.partner), pid), item]
            elif kind == "compaction_trigger":
                continue  # "must be the final input item": added last
            else:
                items.append(item)
            items.append({"role": "user", "content": f"Go on ({r}, {k})."})
    items.append({"type": "compaction_trigger"})
    return items


def chat_history(rounds: int) -> list[dict[str, Any]]:
    gen = "chat_message_params"
    out: list[dict[str, Any]] = [{"role": "user", "content": "The task."}]
    for r in range(rounds):
        for k, member in enumerate(members(gen)):
            msg = copy.deepcopy(member.payload)
            pid = f"call_{r}_{k}"
            if msg["role"] == "tool":
                call = {
                    "id": pid,
                    "type": "function",
                    "function": {"name": "ls", "arguments": "{}"},
                }
                out += [{"role": "assistant", "tool_calls": [call]}, {**msg, "tool_call_id": pid}]
            elif msg["role"] == "function":
                legacy = {"name": msg["name"], "arguments": "{}"}
                out += [{"role": "assistant", "content": None, "function_call": legacy}, msg]
            else:
                calls = msg.get("tool_calls") or []
                for j, call in enumerate(calls):
                    call["id"] = f"{pid}_{j}"
                out.append(msg)
                out += [
                    {"role": "tool", "tool_call_id": call["id"], "content": "ok"} for call in calls
                ]
                if msg["role"] == "assistant" and msg.get("function_call"):
                    out.append({"role": "function", "name": "f", "content": "ok"})
            out.append({"role": "user", "content": f"Go on ({r}, {k})."})
    return out


def _renest(part: dict[str, Any], pid: str, keep_id: bool = True) -> dict[str, Any]:
    """``part`` with the id inside each of its fields set to ``pid`` (or removed)."""
    out = copy.deepcopy(part)
    for value in out.values():
        if isinstance(value, dict) and "id" in value:
            if keep_id:
                value["id"] = pid
            else:
                del value["id"]
    return out


def gemini_history(rounds: int) -> dict[str, Any]:
    """Every Gemini part in a conversation: calls answered by responses (with ids, and
    without: two parallel calls of one function answered in order), code execution and
    server tools with their results in the same model content."""
    if sys.version_info < (3, 11):
        pytest.skip(GENAI_REASON)
    gen = "gemini_part_dicts"
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "The task."}]}]

    def first(kind: str) -> dict[str, Any]:
        return next(m.payload for m in members(gen) if list(m.payload) == [kind])

    for r in range(rounds):
        for k, member in enumerate(members(gen)):
            pid = f"call_{r}_{k}"
            part = _renest(member.payload, pid)
            keys = set(part)
            spec = SPECS["gemini"].get(wire_type("gemini", part))
            if "function_call" in keys:
                answer = {"function_response": {"id": pid, "name": "name_1", "response": {}}}
                contents += [
                    {"role": "model", "parts": [part]},
                    {"role": "user", "parts": [answer]},
                ]
            elif "function_response" in keys:
                call = {"function_call": {"id": pid, "name": "name_1", "args": {}}}
                contents += [
                    {"role": "model", "parts": [call]},
                    {"role": "user", "parts": [part]},
                ]
            elif spec is not None and spec.pair == "call":
                result = _renest(first(spec.partner), pid)
                contents.append({"role": "model", "parts": [part, result]})
            elif spec is not None and spec.pair == "result":
                call = _renest(first(spec.partner), pid)
                contents.append({"role": "model", "parts": [call, part]})
            else:
                contents.append({"role": gemini_roles(part)[-1], "parts": [part]})
            contents.append({"role": "user", "parts": [{"text": f"Go on ({r}, {k})."}]})
        # id-less: two calls of one function and one of another, answered in order
        calls = [
            {"function_call": {"name": name, "args": {"n": n}}}
            for n, name in enumerate(("ls", "ls", "pwd"))
        ]
        answers = [
            {"function_response": {"name": name, "response": {"output": f"{r}-{n}"}}}
            for n, name in enumerate(("ls", "pwd", "ls"))
        ]
        code = [
            _renest(first("executable_code"), "", keep_id=False),
            _renest(first("code_execution_result"), "", keep_id=False),
        ]
        contents += [
            {"role": "model", "parts": calls + code},
            {"role": "user", "parts": answers},
        ]
    return {"system_instruction": {"parts": [{"text": "You are careful."}]}, "contents": contents}


HISTORIES: dict[str, tuple[Callable[[int], Any], Callable[..., Any], Callable[..., Any], str]] = {
    "anthropic": (anthropic_history, from_anthropic, to_anthropic, "anthropic"),
    "responses": (responses_history, from_openai_responses, to_openai_responses, "responses"),
    "openai": (chat_history, from_openai_chat, to_openai_chat, "openai"),
    "gemini": (gemini_history, from_gemini, to_gemini, "gemini"),
}


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_a_long_history_of_every_member_validates_and_trims_pair_safely(fmt: str) -> None:
    """Every member, each call with its result, three times over: the history validates
    clean, and every strategy at every budget keeps a window that validates clean and renders
    back to the format, made of the history's own messages."""
    make, from_x, to_x, _ = HISTORIES[fmt]
    payload = make(3)
    history = from_x(copy.deepcopy(payload))
    assert to_x(history) == payload
    assert validate(history) == []
    assert repair(history) is history
    counter = ctxtrim.HeuristicTokenCounter()
    total = sum(counter.count_message(m) for m in history)
    strategies: list[Any] = [FitContextWindow(total * f // 10) for f in range(1, 10)]
    strategies += [KeepLastMessages(n) for n in (3, 10, 40)]
    strategies += [KeepLastTurns(1), KeepLastTurns(5), TrimRounds(2)]
    kept_ids = {id(m) for m in history}
    for strategy in strategies:
        window = strategy(history)
        assert validate(window) == [], (strategy, validate(window)[:3])
        assert all(id(m) in kept_ids for m in window)
        to_x(window)  # renders


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_every_dangling_or_orphaned_provider_pair_is_found_and_repaired(fmt: str) -> None:
    """Drop each result (or each call) of the history in turn: ``validate`` names the broken
    pair and ``repair`` gives a history it accepts, which still renders to the format."""
    make, from_x, to_x, _ = HISTORIES[fmt]
    history = from_x(make(1))
    paired = [
        (i, j)
        for i, m in enumerate(history)
        for j, b in enumerate(m.content)
        if type(b) is ProviderBlock and b.spec.pair
    ]
    assert paired
    for i, j in paired:
        m = history[i]
        rest = m.content[:j] + m.content[j + 1 :] or (ctxtrim.TextBlock("x"),)
        broken = [*history[:i], Message(m.role, rest), *history[i + 1 :]]
        found = validate(broken)
        assert found, (fmt, i, j, m.content[j])
        assert {v.kind for v in found} <= {"orphan_result", "dangling_call"}
        fixed = repair(broken)
        assert validate(fixed) == []
        to_x(fixed)


@pytest.mark.parametrize("fmt", sorted(HISTORIES))
def test_the_cli_trims_a_history_of_every_member(fmt: str, tmp_path: Path) -> None:
    """``ctxtrim trim`` on the same history: a window the format's reader takes back, which
    validates clean; ``ctxtrim validate`` accepts the history."""
    make, from_x, _, name = HISTORIES[fmt]
    path = tmp_path / "history.json"
    path.write_text(json.dumps(make(2)), encoding="utf-8")
    out = tmp_path / "trimmed.json"

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxtrim.cli", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )

    proc = run("validate", path)  # the format detected
    assert proc.returncode == 0, proc.stderr
    proc = run("stats", path, "--json")
    assert proc.returncode == 0, proc.stderr
    kinds: dict[str, int] = {}
    for b in provider_blocks(from_x(make(2))):
        kinds[f"{b.format}:{b.wire_type}"] = kinds.get(f"{b.format}:{b.wire_type}", 0) + 1
    listed = json.loads(proc.stdout)["provider_items"]
    assert {k: v["count"] for k, v in listed.items()} == kinds
    assert all(v["tokens"] >= 0 for v in listed.values())
    counter = ctxtrim.HeuristicTokenCounter()
    total = sum(counter.count_message(m) for m in from_x(make(2)))
    proc = run("trim", path, "--format", name, "--max-tokens", total // 3, "-o", out)
    assert proc.returncode in (0, 3), proc.stderr
    trimmed = json.loads(out.read_text(encoding="utf-8"))
    window = from_x(trimmed)
    assert validate(window) == []
    assert len(window) < len(from_x(make(2)))
    # Every entry written is one of the input's, unchanged, in order.
    root = {"anthropic": "messages", "gemini": "contents"}.get(fmt)
    entries = make(2)[root] if root else make(2)
    written = trimmed[root] if root else trimmed
    at = 0
    for entry in written:
        at = entries.index(entry, at) + 1
