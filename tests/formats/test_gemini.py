"""Gemini ``contents`` ⇄ ctxtrim messages, on hand-written payloads (no SDK needed: these run on
every Python; the generated members of google-genai's own types are in test_sdk_members.py).
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import (
    ClearToolResults,
    FitContextWindow,
    HeuristicTokenCounter,
    ImageBlock,
    InvalidMessage,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    _core,
    repair,
    validate,
)
from ctxtrim.formats import (
    detect,
    dump,
    from_anthropic,
    from_gemini,
    from_openai_chat,
    gemini,
    load,
    to_anthropic,
    to_gemini,
    to_gemini_json,
    to_openai_chat,
)
from ctxtrim.provider import UNKNOWN_DOCUMENT_TOKENS, facts

from strategies import histories, messages

ROOT = Path(__file__).resolve().parents[2]
PNG = base64.b64decode("iVBORw0KGgo=")
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def session() -> dict[str, Any]:
    """A Gemini 3 agent turn as the SDK sends it back (snake_case): a thought, two id-less
    calls of one function (the first with its thought signature), their responses in order,
    code execution, an image and a file."""
    return {
        "system_instruction": "Be terse.",
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Two lookups.", "thought": True, "thought_signature": "c2lnMQ=="},
                    {
                        "function_call": {"name": "weather", "args": {"city": "Paris"}},
                        "thought_signature": "c2lnMg==",
                    },
                    {"function_call": {"name": "weather", "args": {"city": "Rome"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"function_response": {"name": "weather", "response": {"output": "rain"}}},
                    {"function_response": {"name": "weather", "response": {"temp": 20}}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"executable_code": {"language": "PYTHON", "code": "print(20 - 12)"}},
                    {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "8\n"}},
                    {"text": "Rain in Paris; 20 degrees in Rome."},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"file_data": {"file_uri": "gs://b/notes.pdf", "mime_type": "application/pdf"}},
                    {"text": "And this?"},
                ],
            },
        ],
    }


def test_a_session_round_trips_and_maps_as_documented() -> None:
    body = session()
    ms = from_gemini(copy.deepcopy(body))
    assert to_gemini(ms) == body
    assert json.loads(to_gemini_json(ms)) == body
    assert [m.role for m in ms] == ["system", "user", "assistant", "user", "assistant", "user"]
    thought, paris, rome = ms[2].content
    assert thought == ReasoningBlock("Two lookups.", "c2lnMQ==")
    assert type(paris) is ToolUseBlock and paris.input == {"city": "Paris"}
    assert type(rome) is ToolUseBlock and rome.name == "weather"
    rain, temp = ms[3].content
    # id-less responses answer the calls of the model content before them, in order
    assert type(rain) is ToolResultBlock and rain.tool_use_id == paris.id
    assert rain.content == "rain" and not rain.is_error
    assert type(temp) is ToolResultBlock and temp.tool_use_id == rome.id
    assert temp.content == '{"temp":20}'
    code, result, text = ms[4].content
    assert type(code) is ProviderBlock and code.spec.pair == "call"
    assert type(result) is ProviderBlock and result.call_id == code.call_id
    assert text == TextBlock("Rain in Paris; 20 degrees in Rome.")
    assert ms[5].content[0] == ImageBlock("image/png", PNG)
    assert type(ms[5].content[1]) is ProviderBlock and ms[5].content[1].wire_type == "file_data"
    assert validate(ms) == []
    # the ids ctxtrim gave are never written: the output is the input
    assert "gemini_" not in json.dumps(to_gemini(ms))


def test_the_rest_api_camel_case_round_trips_too() -> None:
    body = {
        "systemInstruction": {"parts": [{"text": "Be terse."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"id": "c1", "name": "ls", "args": {}},
                        "thoughtSignature": "c2ln",
                    },
                    {"text": "x", "thought": True, "thoughtSignature": "c2lnMg=="},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "ls", "response": {"error": "no"}}},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                ],
            },
        ],
    }
    ms = from_gemini(copy.deepcopy(body))
    assert to_gemini(ms) == body
    assert json.loads(to_gemini_json(ms)) == body
    assert ms[3].content[0] == ToolResultBlock("c1", "no", is_error=True)
    assert ms[2].content[1] == ReasoningBlock("x", "c2lnMg==")
    assert detect(body) == "gemini" and load(body) == ms


def test_url_safe_base64_from_model_dump_is_kept() -> None:
    """``model_dump(mode="json")`` writes bytes in URL-safe base64: the image is read, and
    written back in the same alphabet."""
    data = base64.urlsafe_b64encode(b"\xfb\xff\xfe" + PNG).decode()
    assert "-" in data or "_" in data
    body = [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": data}}]}]
    ms = from_gemini(copy.deepcopy(body))
    assert ms[0].content[0] == ImageBlock("image/png", b"\xfb\xff\xfe" + PNG)
    assert to_gemini(ms) == {"contents": body}


def test_id_less_responses_pair_by_name_then_order() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"function_call": {"name": "a", "args": {"n": 1}}},
                {"function_call": {"name": "b", "args": {}}},
                {"function_call": {"name": "a", "args": {"n": 2}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "b", "response": {"output": "B"}}},
                {"function_response": {"name": "a", "response": {"output": "A1"}}},
                {"function_response": {"name": "a", "response": {"output": "A2"}}},
            ],
        },
    ]
    ms = from_gemini(copy.deepcopy(contents))
    a1, b, a2 = ms[1].content
    assert [r.tool_use_id for r in ms[2].content] == [b.id, a1.id, a2.id]  # type: ignore[union-attr]
    assert len({a1.id, b.id, a2.id}) == 3  # type: ignore[union-attr]
    assert validate(ms) == []
    assert to_gemini(ms) == {"contents": contents}
    # The same input gives the same ids; the same content twice gives different ones.
    assert from_gemini(copy.deepcopy(contents)) == ms
    twice = from_gemini(contents + contents[1:])
    assert validate(twice) == []
    assert {b.id for b in twice[1].content}.isdisjoint({b.id for b in twice[3].content})  # type: ignore[union-attr]


def test_an_unanswered_or_unexpected_id_less_response_is_reported_and_repaired() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"function_call": {"name": "a", "args": {}}}]},
        {"role": "user", "parts": [{"function_response": {"name": "zzz", "response": {}}}]},
    ]
    ms = from_gemini(contents)
    kinds = sorted(v.kind for v in validate(ms))
    assert kinds == ["dangling_call", "orphan_result"]
    fixed = repair(ms)
    assert validate(fixed) == []
    to_gemini(fixed)  # still renders


def _written_and_read_back(ms: list[Message], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The function responses ``to_gemini(ms)`` writes, after checking that both readers
    (and the JSON bytes path) give ``ms`` back, meta included."""
    payload = to_gemini(ms)
    assert json.loads(to_gemini_json(ms)) == payload
    for fast in (True, False):
        monkeypatch.setattr(gemini, "_FAST", fast)
        assert from_gemini(copy.deepcopy(payload)) == ms
    return [
        p["function_response"]
        for c in payload["contents"]
        for p in c["parts"]
        if "function_response" in p
    ]


def test_a_result_written_before_its_call_is_an_orphan_without_a_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Hypothesis found it: the result took its name from the later call, and the reader,
    # which had not read that call yet, kept the name as the result's own (meta).
    ms = [
        Message("user", (ToolResultBlock("0", ""),)),
        Message("assistant", (ToolUseBlock("0", "0", {}),)),
    ]
    assert _written_and_read_back(ms, monkeypatch) == [{"id": "0", "response": {"output": ""}}]
    assert [v.kind for v in validate(ms)] == ["result_before_call", "dangling_call"]
    # The call several messages later, after a system instruction (the indexes are the
    # history's): still an orphan; the other result, after its call, is named.
    ms = [
        Message.system("Be terse."),
        Message.user("go"),
        Message.assistant("", tool_uses=[("c1", "read", {})]),
        Message.tool_results([("c2", "early"), ("c1", "file")]),
        Message.assistant("more"),
        Message.user("again"),
        Message.assistant("", tool_uses=[("c2", "grep", {"q": "x"})]),
    ]
    assert _written_and_read_back(ms, monkeypatch) == [
        {"id": "c2", "response": {"output": "early"}},
        {"id": "c1", "name": "read", "response": {"output": "file"}},
    ]
    # An orphan's rendering is not kept: with its call before it, the same message is named.
    later = [ms[6], ms[3]]
    assert to_gemini(later)["contents"][1]["parts"][0]["function_response"]["name"] == "grep"


def test_a_result_takes_the_name_of_the_call_before_it_not_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ms = [
        Message.user("go"),
        Message.assistant("", tool_uses=[("c1", "first", {})]),
        Message.tool_results([("c1", "out")]),
        Message.assistant("", tool_uses=[("c1", "second", {})]),
    ]
    assert _written_and_read_back(ms, monkeypatch) == [
        {"id": "c1", "name": "first", "response": {"output": "out"}}
    ]


def test_trimming_keeps_calls_with_responses_and_signatures_with_their_parts() -> None:
    body = session()
    for n in range(30):
        body["contents"] += copy.deepcopy(body["contents"][1:4])
        body["contents"].append({"role": "user", "parts": [{"text": f"again {n}"}]})
    ms = from_gemini(body)
    assert validate(ms) == []
    counter = HeuristicTokenCounter()
    total = sum(counter.count_message(m) for m in ms)
    for budget in (total // 10, total // 3, total // 2):
        window = FitContextWindow(budget)(ms)
        assert validate(window) == []
        out = to_gemini(window)
        signed = [
            p
            for c in out["contents"]
            for p in c["parts"]
            if "function_call" in p and p["function_call"]["args"] == {"city": "Paris"}
        ]
        assert signed and all(p["thought_signature"] == "c2lnMg==" for p in signed)
        again = from_gemini(copy.deepcopy(out))
        assert to_gemini(again) == out and validate(again) == []


def test_a_cleared_json_response_is_written_as_output() -> None:
    ms = from_gemini(session())
    cleared = ClearToolResults(0, keep=0, placeholder="[cleared]")(ms)
    responses = [
        p["function_response"]["response"]
        for c in to_gemini(cleared)["contents"]
        for p in c["parts"]
        if "function_response" in p
    ]
    assert responses == [{"output": "[cleared]"}, {"output": "[cleared]"}]


def test_other_formats_cross_with_names_and_url_images() -> None:
    chat = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "What is in /?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "bin etc"},
    ]
    ms = from_openai_chat(chat)
    out = to_gemini(ms)
    assert out["system_instruction"] == "Be terse."
    response = out["contents"][2]["parts"][0]["function_response"]
    assert response == {"id": "call_1", "name": "ls", "response": {"output": "bin etc"}}
    assert from_gemini(out) == ms
    # A result whose call is not in what is written has no name to give; the next history
    # that holds the call names it (that rendering was not kept).
    fresh = from_openai_chat(chat)
    alone = to_gemini(fresh[3:])["contents"][0]["parts"][0]["function_response"]
    assert "name" not in alone
    assert b'"name"' not in to_gemini_json(fresh[3:])
    assert to_gemini(fresh)["contents"][2]["parts"][0]["function_response"]["name"] == "ls"
    # an image behind a URL crosses both ways; a server tool does not
    url = "https://example.com/cat.png"
    anthropic = {
        "messages": [
            {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": url}}]}
        ]
    }
    part = to_gemini(from_anthropic(anthropic))["contents"][0]["parts"][0]
    assert part == {"file_data": {"file_uri": url, "mime_type": "image/png"}}
    assert to_anthropic(from_gemini([{"role": "user", "parts": [part]}])) == anthropic
    server = {
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
                    {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
                ],
            }
        ]
    }
    with pytest.raises(InvalidMessage) as e:
        to_gemini(from_anthropic(server))
    assert "'server_tool_use'" in e.value.reason and e.value.path == "messages[0].content[0]"
    with pytest.raises(InvalidMessage) as e:
        to_openai_chat(from_gemini(session()))
    assert "Gemini block 'executable_code'" in e.value.reason


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ([{"role": "system", "parts": []}], "contents[0].role"),
        ([{"role": "user", "parts": {}}], "contents[0].parts"),
        ([{"role": "user", "parts": ["hi"]}], "contents[0].parts[0]"),
        ([{"role": "user", "parts": [{"text": 3}]}], "contents[0].parts[0].text"),
        (
            [{"role": "model", "parts": [{"function_call": {"args": {}}}]}],
            "contents[0].parts[0].function_call.name",
        ),
        (
            [{"role": "model", "parts": [{"function_call": {"name": "f", "args": []}}]}],
            "contents[0].parts[0].function_call.args",
        ),
        (
            [{"role": "user", "parts": [{"function_call": {"name": "f"}}]}],
            "contents[0].parts[0].function_call",
        ),
        (
            [{"role": "user", "parts": [{"function_response": {"name": "f", "response": 1}}]}],
            "contents[0].parts[0].function_response.response",
        ),
        ({"contents": [], "system_instruction": None}, "system_instruction"),
        ({"contents": [], "system_instruction": {"parts": [{"text": 1}]}}, ""),
        ({"nothing": []}, "contents"),
        ([{"role": "user", "parts": [{"brand_new": {"id": "x"}}]}], "contents[0].parts[0]"),
    ],
)
def test_malformed_gemini_names_the_path(payload: Any, path: str) -> None:
    with pytest.raises(InvalidMessage) as e:
        from_gemini(payload)
    if path:
        assert e.value.path == path
    else:
        assert e.value.path.startswith("system_instruction.parts[0]")


def test_the_system_instruction_forms_and_mid_conversation_system() -> None:
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    for system in ("Be terse.", {"parts": [{"text": "Be terse."}]}, [{"text": "a"}, {"text": "b"}]):
        body = {"system_instruction": system, "contents": contents}
        ms = from_gemini(copy.deepcopy(body))
        assert ms[0].role == "system" and to_gemini(ms) == body
        assert from_gemini(contents, system=system) == ms
    with pytest.raises(InvalidMessage, match="twice"):
        from_gemini({"system_instruction": "a", "contents": []}, system="b")
    with pytest.raises(InvalidMessage) as e:
        to_gemini([Message.user("hi"), Message.system("late")])
    assert e.value.path == "messages[1]"
    two = [Message.system("a"), Message.system("b"), Message.user("hi")]
    assert to_gemini(two)["system_instruction"] == {"parts": [{"text": "a"}, {"text": "b"}]}


def test_provider_parts_are_priced_by_their_media() -> None:
    pdf = base64.b64encode(b"%PDF-1.4\n/Type /Page\n/Type /Page\n%%EOF").decode()
    parts = [
        {"file_data": {"file_uri": "gs://b/x.pdf", "mime_type": "application/pdf"}},
        {"file_data": {"file_uri": "https://x/y.png", "mime_type": "image/png"}},
        {"inline_data": {"mime_type": "application/pdf", "data": pdf}},
        {"inline_data": {"mime_type": "audio/wav", "data": "UklGRg=="}},
        {"inline_data": {"mime_type": "text/plain", "data": base64.b64encode(b"hello").decode()}},
    ]
    blocks = from_gemini([{"role": "user", "parts": parts}])[0].content
    priced = [facts(b)[4:] for b in blocks]  # type: ignore[arg-type]
    assert priced == [
        ("", UNKNOWN_DOCUMENT_TOKENS, 0),
        ("", 0, 1),
        ("", 4_000, 0),
        ("", UNKNOWN_DOCUMENT_TOKENS, 0),
        ("hello", 0, 0),
    ]
    # a thought signature is opaque: priced as nothing, wherever it rides
    code = {"executable_code": {"code": "x"}, "thought_signature": "A" * 4000}
    block = from_gemini([{"role": "model", "parts": [code]}])[0].content[0]
    assert "AAAA" not in facts(block)[4]  # type: ignore[arg-type]


def test_load_dump_and_detect() -> None:
    body = session()
    assert detect(body) == "gemini" and detect(body["contents"]) == "gemini"
    ms = load(json.dumps(body))
    assert dump(ms, "gemini") == body
    assert load(body["contents"], "gemini") == ms[1:]


def test_strategies_take_gemini_dicts_and_give_them_back() -> None:
    body = {**session(), "tools": [{"code_execution": {}}]}
    out = FitContextWindow(80)(body)
    assert list(out) == ["system_instruction", "contents", "tools"]
    assert out["tools"] == body["tools"] and out["system_instruction"] == "Be terse."
    assert 0 < len(out["contents"]) < len(body["contents"])
    assert all(c in body["contents"] for c in out["contents"])
    assert validate(body) == [] and FitContextWindow(10**6)(body) is body
    contents = body["contents"]
    assert len(FitContextWindow(80)(contents)) == len(out["contents"])


def test_the_cli_detects_and_trims_gemini(tmp_path: Path) -> None:
    body = session()
    for n in range(20):
        body["contents"] += copy.deepcopy(body["contents"][1:4])
        body["contents"].append({"role": "user", "parts": [{"text": f"again {n}"}]})
    body["generation_config"] = {"temperature": 0}
    path = tmp_path / "gemini.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ctxtrim.cli", "trim", path, "--max-tokens", "300", "-o", out],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode in (0, 3), proc.stderr
    assert "gemini format, detected" in proc.stderr
    trimmed = json.loads(out.read_text(encoding="utf-8"))
    assert trimmed["generation_config"] == {"temperature": 0}  # the body's other keys kept
    assert trimmed["system_instruction"] == "Be terse."
    assert len(trimmed["contents"]) < len(body["contents"])
    assert validate(from_gemini(trimmed)) == []
    assert all(c in body["contents"] for c in trimmed["contents"])


# --------------------------------------------------------------------------------------------
# from_gemini(to_gemini(messages)) == messages for what Gemini can express


def expressible_gemini(ms: list[Message]) -> list[Message]:
    """What survives Gemini: leading system messages become one (later ones raise: left
    out), no names/ids/turns/usage, no compact_summary, a tool result's parts become its
    text (images ride in the response's own parts), redacted reasoning is a thought."""
    out: list[Message] = []
    system: list[Any] | None = None
    for m in ms:
        if m.role == "system":
            if not out:
                system = [*(system or []), *m.content]
            continue
        content: list[Any] = []
        for b in m.content:
            if type(b) is ToolResultBlock:
                text = b.content
                if not isinstance(text, str):
                    text = "\n".join(t.text for t in text if type(t) is TextBlock)
                b = ToolResultBlock(b.tool_use_id, text, is_error=b.is_error)
            elif type(b) is ReasoningBlock and b.redacted:
                b = ReasoningBlock(b.text, b.signature)
            content.append(b)
        out.append(Message(m.role, content))  # type: ignore[arg-type]  # a list is stored as a tuple
    return ([Message("system", system)] if system is not None else []) + out  # type: ignore[arg-type]


def _check(ms: list[Message]) -> None:
    ms = [
        m for i, m in enumerate(ms) if m.role != "system" or all(x.role == "system" for x in ms[:i])
    ]
    x = expressible_gemini(ms)
    payload = to_gemini(x)
    assert from_gemini(payload) == x
    assert from_gemini(json.loads(to_gemini_json(x))) == x
    assert [Message(m.role, m.content) for m in from_gemini(to_gemini(ms))] == x
    if not validate(ms):
        assert validate(from_gemini(payload)) == []


@PROPS
@given(data=st.data())
def test_from_to_roundtrip_on_agent_histories(data: st.DataObject) -> None:
    _check(data.draw(histories()))


@PROPS
@given(ms=st.lists(messages(), max_size=6))
def test_from_to_roundtrip_on_any_messages(ms: list[Message]) -> None:
    _check(ms)


def _both_readers(payload: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader of common shapes makes exactly what the general reader makes (or both
    refuse, naming the same path)."""
    results = []
    for fast in (True, False):
        monkeypatch.setattr(gemini, "_FAST", fast)
        try:
            results.append(from_gemini(copy.deepcopy(payload)))
        except InvalidMessage as e:
            results.append((e.path, e.reason))  # type: ignore[arg-type]
    assert results[0] == results[1]


@PROPS
@given(data=st.data())
def test_the_fast_reader_makes_what_the_general_reader_makes(data: st.DataObject) -> None:
    ms = data.draw(histories())
    ms = [
        m for i, m in enumerate(ms) if m.role != "system" or all(x.role == "system" for x in ms[:i])
    ]
    payload = to_gemini(expressible_gemini(ms))
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both_readers(payload, monkeypatch)
        contents = payload["contents"]
        if contents:  # one field of one part replaced by an odd value
            content = data.draw(st.sampled_from(contents))
            if content["parts"]:
                part = data.draw(st.sampled_from(content["parts"]))
                key = next(iter(part))
                part[key] = data.draw(
                    st.sampled_from(["", "\ud800", None, 3, {}, {"id": "x"}, ["x"]])
                )
                _both_readers(payload, monkeypatch)


def test_the_core_reads_common_shapes_and_keeps_the_pairing_state() -> None:
    """Text, calls and string results are read in the core, whole, with the pairing state
    left as the general reader leaves it; the first content in another shape stops it."""
    ms = [
        Message.user("q"),
        Message.assistant("x", tool_uses=[("c1", "f", {"a": 1}), ("c2", "g", {})]),
        Message.tool_results([("c1", "out")]),
        Message.assistant("done"),
    ]
    contents = to_gemini(ms)["contents"]
    pairs = gemini._Pairs()
    read, nxt = _core.gemini_fast_prefix(contents, 0, pairs.names, pairs.waiting)
    assert (read, nxt) == (ms, 4)
    assert pairs.names == {"c1": "f", "c2": "g"}
    assert pairs.waiting == []  # the last model content made no call
    read, nxt = _core.gemini_fast_prefix(contents[:2], 0, pairs.names, pairs.waiting)
    assert pairs.waiting == [("f", "c1"), ("g", "c2")]
    read, nxt = _core.gemini_fast_prefix(contents[2:3], 0, pairs.names, pairs.waiting)
    assert (read, pairs.waiting) == ([ms[2]], [("g", "c2")])
    odd = [*contents[:2], {"role": "model", "parts": [{"text": "t", "thought": True}]}]
    read, nxt = _core.gemini_fast_prefix(odd, 1, pairs.names, pairs.waiting)
    assert (read, nxt) == ([ms[1]], 2)


def test_the_fast_reader_on_the_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    body = session()
    _both_readers(body, monkeypatch)
    _both_readers(to_gemini(from_openai_chat(to_openai_chat(from_gemini(body)[:4]))), monkeypatch)


@PROPS
@given(data=st.data())
def test_the_plain_renderer_renders_what_the_general_renderer_renders(
    data: st.DataObject,
) -> None:
    ms = data.draw(histories())
    ms = [
        m for i, m in enumerate(ms) if m.role != "system" or all(x.role == "system" for x in ms[:i])
    ]
    outs = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        for plain in (True, False):
            if not plain:
                monkeypatch.setattr(gemini, "_render_plain", lambda m, names: None)
            fresh = [Message.decode(m.encode()) for m in ms]  # nothing kept on them yet
            try:
                outs.append(to_gemini(fresh))
            except InvalidMessage as e:
                outs.append((e.path, e.reason))  # type: ignore[arg-type]
    assert outs[0] == outs[1]
