"""ctxtrim.integrations.google_adk.TrimContents against the real Google ADK: a real
``LlmAgent`` run through a ``Runner`` (in-memory sessions, a fake ``BaseLlm`` answering
with parallel function calls) sends the model contents that are pair-safe, within the
budget and begin with the task; side by side with ADK's ``ContextFilterPlugin`` on the
same requests.

google-adk needs google-genai < 3 while the test extra pins google-genai 3.x (the Gemini
format's tests), so ADK is not in the test extra: these tests skip, saying so, where it is
not installed; CI runs them in a venv of their own (``pip install 'ctxtrim[adk]'``), with
``CTXTRIM_REQUIRE_ADK=1`` turning a missing google-adk into a failure.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest

if os.environ.get("CTXTRIM_REQUIRE_ADK") != "1":  # CI's ADK venv sets it: no silent skip
    pytest.importorskip(
        "google.adk",
        reason="google-adk not installed (it needs google-genai < 3, the test extra pins "
        "3.x): pip install 'ctxtrim[adk]' in a venv of its own, as CI does",
    )

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.context_filter_plugin import ContextFilterPlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types
from pydantic import Field

from ctxtrim import HeuristicTokenCounter, KeepLastTurns, Message, estimate_tokens, validate
from ctxtrim.errors import InvalidStrategy, UnknownModel
from ctxtrim.formats.gemini import from_gemini, to_gemini
from ctxtrim.integrations import google_adk as ours
from ctxtrim.integrations.google_adk import TrimContents, to_skeleton


def as_messages(contents: list[types.Content]) -> list[Message]:
    """The contents read by ctxtrim's Gemini format (its own pairing: an oracle)."""
    return from_gemini([c.model_dump(mode="json", exclude_none=True) for c in contents])


def tokens(contents: list[types.Content]) -> int:
    """The contents' tokens as ctxtrim estimates the messages the Gemini format reads."""
    return sum(HeuristicTokenCounter().count_message(m) for m in as_messages(contents))


def call(name: str, q: str, call_id: str | None = None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args={"q": q}, id=call_id))


def response(name: str, out: str, call_id: str | None = None) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(name=name, response={"out": out}, id=call_id)
    )


#: A real 1x1 PNG (priced by its size).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def chat(rounds: int, *, ids: bool = False, width: int = 30) -> list[types.Content]:
    """A user turn, a model turn of two parallel calls, their responses and an answer, per
    round (ids or none, as ADK sends a Gemini model)."""
    out = []
    for r in range(rounds):
        a, b = (f"c{r}a", f"c{r}b") if ids else (None, None)
        out += [
            user(f"question {r}"),
            types.Content(role="model", parts=[call("search", f"q{r}", a), call("fetch", "u", b)]),
            types.Content(
                role="user",
                parts=[response("search", "word " * width, a), response("fetch", "x " * width, b)],
            ),
            types.Content(role="model", parts=[types.Part(text=f"answer {r} " * 10)]),
        ]
    return out


def request(contents: list[types.Content], model: str = "gemini-2.5-flash") -> LlmRequest:
    return LlmRequest(model=model, contents=list(contents))


# -- a real agent through a Runner --------------------------------------------------------


class FakeModel(BaseLlm):  # type: ignore[misc, unused-ignore]  # Any without google-adk
    """Answers a user text with two parallel calls (no ids, as Gemini often sends them) and
    a function response with text; records every request's contents as sent."""

    seen: list[list[types.Content]] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(list(llm_request.contents))
        last = llm_request.contents[-1]
        parts = last.parts or []
        if any(p.function_response is not None for p in parts):
            text = "found it, here it is " * 5
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
            return
        calls = [call("lookup", "first"), call("lookup", "second")]
        yield LlmResponse(content=types.Content(role="model", parts=calls))


def lookup(q: str) -> dict[str, Any]:
    """Looks a query up."""
    return {"result": f"{q}: " + "lorem ipsum " * 40}


def run_agent(plugin: Any, turns: int, *, as_callback: bool = False) -> list[list[types.Content]]:
    model = FakeModel(model="fake-model")
    agent = LlmAgent(
        name="agent",
        model=model,
        instruction="You look things up.",
        tools=[lookup],
        before_model_callback=plugin if as_callback else None,
    )
    sessions = InMemorySessionService()
    plugins = [] if as_callback or plugin is None else [plugin]
    app = App(name="app", root_agent=agent, plugins=plugins)
    runner = Runner(app=app, session_service=sessions)

    async def go() -> None:
        await sessions.create_session(app_name="app", user_id="u", session_id="s")
        for t in range(turns):
            async for _ in runner.run_async(
                user_id="u", session_id="s", new_message=user(f"task {t}: look it up")
            ):
                pass

    asyncio.run(go())
    return model.seen


@pytest.mark.parametrize("as_callback", [False, True], ids=["plugin", "agent-callback"])
def test_runner_sends_pair_safe_contents_within_budget(as_callback: bool) -> None:
    budget = 600
    untrimmed = run_agent(None, 8)
    seen = run_agent(TrimContents(max_tokens=budget), 8, as_callback=as_callback)
    assert len(seen) == len(untrimmed) == 16  # two model calls a turn: calls, then answer
    assert tokens(untrimmed[-1]) > 3 * budget  # the history outgrew the budget...
    trimmed = 0
    for before, sent in zip(untrimmed, seen, strict=True):
        assert validate(as_messages(sent)) == []  # ...yet every request is pair-safe
        assert (sent[0].parts or [])[0].text == "task 0: look it up"  # the task is pinned
        assert sent[-1] == before[-1]  # the newest content always goes
        if sent != before:
            trimmed += 1
            assert tokens(sent) <= budget
            # What went is a prefix after the task: the rest is the history's own suffix.
            assert sent[1:] == before[len(before) - len(sent) + 1 :]
    assert trimmed >= 8


def test_the_request_is_trimmed_in_place_and_keeps_adk_objects() -> None:
    contents = chat(40)
    req = request(contents)
    TrimContents(max_tokens=800).trim(req)
    assert 4 < len(req.contents) < len(contents)
    ours = {id(c) for c in contents}
    assert all(id(c) in ours for c in req.contents)  # ADK's own objects, not copies
    assert validate(as_messages(req.contents)) == []


def copies(contents: list[types.Content]) -> list[types.Content]:
    """The contents as ADK puts them in each request: each content and part a shallow copy
    (the texts, arguments and responses shared with the session)."""
    out = []
    for c in contents:
        copy = c.model_copy()
        copy.parts = [p.model_copy() for p in c.parts or ()]
        out.append(copy)
    return out


def test_one_plugin_over_many_requests_stays_pair_safe() -> None:
    """Skeletons kept from request to request (by the payloads the copies share): a history
    that grows, then loses its start (as after a compaction: every content at a new index),
    then has its responses rebuilt, with no-argument calls in it, is cut at every budget on
    every request as a new plugin cuts it, pair-safely."""
    session = chat(30)
    no_args = types.Part(function_call=types.FunctionCall(name="now"))
    session[5] = types.Content(role="model", parts=[no_args, call("now", "")])
    session[6] = types.Content(role="user", parts=[response("now", "12:00")] * 2)
    assert validate(as_messages(session)) == []
    # The start dropped and the responses rebuilt (new payloads): the calls' contents are
    # known from before, at other indices, their responses are not.
    rebuilt = [
        c.model_copy(deep=True) if any(p.function_response for p in c.parts or ()) else c
        for c in session[9:]
    ]
    requests = [session[:60], session[:80], session, session[9:], session[9:], rebuilt]
    for budget in (150, 400, 900, 2500):
        plugin = TrimContents(max_tokens=budget)
        for contents in requests:
            req = request(copies(contents))
            plugin.trim(req)
            assert validate(as_messages(req.contents)) == [], budget
            fresh = request(copies(contents))
            TrimContents(max_tokens=budget).trim(fresh)
            assert req.contents == fresh.contents  # the same cut as a new plugin's


def test_a_history_within_the_budget_is_left_alone() -> None:
    contents = chat(3)
    req = request(contents)
    before = req.contents
    TrimContents(max_tokens=100_000).trim(req)
    assert req.contents is before


# -- pairing ----------------------------------------------------------------------------


@pytest.mark.parametrize("ids", [False, True], ids=["no-ids", "ids"])
def test_every_cut_keeps_calls_with_their_responses(ids: bool) -> None:
    """For every budget, the kept contents are pair-safe by the Gemini format's own reading,
    and the task is kept ahead of them."""
    contents = chat(12, ids=ids)
    full = tokens(contents)
    for budget in range(60, full + 200, 37):
        req = request(contents)
        TrimContents(max_tokens=budget).trim(req)
        kept = req.contents
        assert validate(as_messages(kept)) == [], budget
        assert kept[0] is contents[0]
        assert kept[-1] is contents[-1]


def test_responses_without_ids_pair_by_name_in_order() -> None:
    """Two calls of the same function and one of another, answered in another order and
    split over two contents (as ADK can send them): the skeleton names each call."""
    model = types.Content(role="model", parts=[call("f", "1"), call("g", "2"), call("f", "3")])
    first = types.Content(role="user", parts=[response("g", "two"), response("f", "one")])
    second = types.Content(role="user", parts=[response("f", "three")])
    contents = [user("go"), model, first, second]
    sk = [to_skeleton(contents, i) for i in range(len(contents))]
    uses = [b.id for b in sk[1].content]  # type: ignore[union-attr]
    assert uses == ["adk_1_0", "adk_1_1", "adk_1_2"]
    assert [b.tool_use_id for b in sk[2].content] == ["adk_1_1", "adk_1_0"]  # type: ignore[union-attr]
    assert [b.tool_use_id for b in sk[3].content] == ["adk_1_2"]  # type: ignore[union-attr]
    assert validate(sk) == []


def test_a_response_with_no_call_before_it_is_an_orphan() -> None:
    contents = [user("go"), types.Content(role="user", parts=[response("f", "?")])]
    sk = to_skeleton(contents, 1)
    assert [v.kind for v in validate([to_skeleton(contents, 0), sk])] == ["orphan_result"]


def test_thought_signatures_stay_with_their_parts() -> None:
    """A content is kept or dropped whole: the signed parts go to the model as they came."""
    signed = types.Content(
        role="model",
        parts=[
            types.Part(text="thinking", thought=True, thought_signature=b"sig-1"),
            types.Part(
                function_call=types.FunctionCall(name="search", args={}),
                thought_signature=b"sig-2",
            ),
        ],
    )
    answer = types.Content(role="user", parts=[response("search", "found")])
    done = types.Content(role="model", parts=[types.Part(text="found it")])
    contents = [*chat(10), user("again"), signed, answer, done, user("and now?")]
    req = request(contents)
    TrimContents(max_tokens=300).trim(req)
    assert req.contents[-5:] == [contents[-5], signed, answer, done, contents[-1]]
    assert req.contents[-4] is signed
    assert (signed.parts or [])[1].thought_signature == b"sig-2"


def test_code_execution_and_files_are_priced_not_paired() -> None:
    """ADK's code executors answer in a content of their own: those parts are priced as
    text and not paired, so the history still trims; a file is priced by its row of the
    Gemini format (a PDF behind a URI, pages unknown: 10,000 tokens)."""
    code = types.Part(
        executable_code=types.ExecutableCode(code="print(1)", language=types.Language.PYTHON)
    )
    result = types.Part(
        code_execution_result=types.CodeExecutionResult(
            outcome=types.Outcome.OUTCOME_OK, output="1"
        )
    )
    pdf = types.Part(file_data=types.FileData(file_uri="gs://b/a.pdf", mime_type="application/pdf"))
    contents = [user("task"), types.Content(role="user", parts=[types.Part(text="read"), pdf])]
    for r in range(20):
        contents += [
            user(f"q{r} " * 20),
            types.Content(role="model", parts=[code]),
            types.Content(role="model", parts=[result]),
            types.Content(role="model", parts=[types.Part(text="ans " * 30)]),
        ]
    skeletons = [to_skeleton(contents, i) for i in range(len(contents))]
    assert validate(skeletons) == []
    assert skeletons[1].content[1].format == "gemini"  # type: ignore[union-attr]
    assert HeuristicTokenCounter().count_message(skeletons[1]) > 10_000
    req = request(contents)
    TrimContents(max_tokens=400).trim(req)
    assert 4 < len(req.contents) < 20
    assert req.contents[1:] == contents[len(contents) - len(req.contents) + 1 :]
    req = request(contents)
    TrimContents(max_tokens=20_000).trim(req)
    assert req.contents == contents


def test_the_gemini_format_round_trips_what_adk_sends() -> None:
    """ADK's contents (google-genai 2.x types here) through ctxtrim's Gemini format."""
    thought = types.Part(text="t", thought=True, thought_signature=b"\x00\xff")
    contents = [*chat(3, ids=True), types.Content(role="model", parts=[thought])]
    dumped = [c.model_dump(mode="json", exclude_none=True) for c in contents]
    assert to_gemini(from_gemini(dumped))["contents"] == dumped
    back = [types.Content.model_validate(c) for c in to_gemini(from_gemini(dumped))["contents"]]
    assert back == contents


# -- budgets and strategies -----------------------------------------------------------------


def test_the_system_instruction_comes_off_the_budget() -> None:
    contents = chat(20)
    plain = request(contents)
    TrimContents(max_tokens=1500).trim(plain)
    long = request(contents)
    long.config.system_instruction = "Be helpful. " * 300
    TrimContents(max_tokens=1500).trim(long)
    assert len(long.contents) < len(plain.contents)
    assert tokens(long.contents) + estimate_tokens("Be helpful. " * 300) <= 1500


def test_a_static_instruction_prefix_stays_in_front() -> None:
    """ADK's non-text static instruction: contents at the front, their end index on the
    request (later instructions go in after it); kept there and taken off the budget."""
    image = types.Part(inline_data=types.Blob(mime_type="image/png", data=PNG))
    prefix = [
        types.Content(role="user", parts=[types.Part(text="look at this"), image]),
        types.Content(role="user", parts=[types.Part(text="and remember it")]),
    ]
    contents = chat(20)
    req = request(prefix + contents)
    req._static_instruction_prefix_end_index = 2
    TrimContents(max_tokens=900).trim(req)
    assert req.contents[:2] == prefix
    rest = req.contents[2:]
    assert rest[0] is contents[0]  # the task, pinned after the prefix
    assert rest[1:] == contents[len(contents) - len(rest) + 1 :]
    assert validate(as_messages(rest)) == []
    assert tokens(req.contents) <= 900
    alone = request(contents)
    TrimContents(max_tokens=900).trim(alone)
    assert len(rest) < len(alone.contents)  # the prefix came off the budget


def test_without_max_tokens_the_model_window_is_the_budget() -> None:
    contents = chat(5)
    req = request(contents, model="gemini-2.5-flash")
    TrimContents().trim(req)
    assert req.contents == contents  # a million tokens: all of it
    with pytest.raises(UnknownModel, match="no-such-model"):
        TrimContents().trim(request(contents, model="no-such-model"))


def test_keep_last_turns_keeps_what_context_filter_plugin_keeps() -> None:
    """ContextFilterPlugin(num_invocations_to_keep=n) and TrimContents(KeepLastTurns(n)) on
    the same requests: the same last n invocations (ours with the task pinned ahead)."""
    for n in (1, 2, 5):
        contents = chat(9)
        theirs = request(contents)
        asyncio.run(
            ContextFilterPlugin(num_invocations_to_keep=n).before_model_callback(
                callback_context=cast(Any, None),  # unused by the plugin
                llm_request=theirs,
            )
        )
        ours = request(contents)
        TrimContents(strategy=KeepLastTurns(n)).trim(ours)
        assert ours.contents == [contents[0], *theirs.contents]


def test_context_filter_plugin_splits_a_turn_that_ctxtrim_keeps_whole() -> None:
    """A user text between a call and its response (a long-running tool answered after the
    user spoke): ContextFilterPlugin cuts at that user content, keeping a response whose
    call it dropped (it pairs by id, and ADK strips its ids before calling Gemini)."""
    contents = [
        user("task"),
        types.Content(role="model", parts=[call("slow", "1")]),
        user("any news?"),
        types.Content(role="user", parts=[response("slow", "done")]),
        types.Content(role="model", parts=[types.Part(text="it is done")]),
    ]
    theirs = request(contents)
    asyncio.run(
        ContextFilterPlugin(num_invocations_to_keep=1).before_model_callback(
            callback_context=cast(Any, None),
            llm_request=theirs,
        )
    )
    assert [v.kind for v in validate(as_messages(theirs.contents))] == ["orphan_result"]
    ours = request(contents)
    TrimContents(strategy=KeepLastTurns(1)).trim(ours)
    assert validate(as_messages(ours.contents)) == []


def filtered(plugin: Any, contents: list[types.Content]) -> list[types.Content]:
    req = request(contents)
    asyncio.run(plugin.before_model_callback(callback_context=cast(Any, None), llm_request=req))
    return list(req.contents)


@pytest.mark.parametrize("remove", [1, 3])
@pytest.mark.parametrize("keep", [None, 0, 1, 2, 5])
def test_the_context_filter_plugin_drop_in_keeps_what_adks_keeps(
    keep: int | None, remove: int
) -> None:
    """Same arguments, same contents kept on histories ADK's plugin cuts pair-safely
    (invocations of several user contents, function calls, remove_amount's slack)."""
    for rounds in range(0, 9):
        contents = chat(rounds)
        for r in range(0, rounds, 3):  # some invocations start with two user contents
            contents.insert(4 * r + r // 3, user(f"and also {r}"))
        theirs = ContextFilterPlugin(num_invocations_to_keep=keep, remove_amount=remove)
        mine = ours.ContextFilterPlugin(num_invocations_to_keep=keep, remove_amount=remove)
        assert filtered(mine, contents) == filtered(theirs, contents), rounds


def test_the_context_filter_plugin_drop_in_leaves_no_orphan() -> None:
    """A user message between a call and its response: ADK's plugin cuts there (its ids
    are gone), ours moves back to the call and to the user content before it."""
    contents = [
        user("hi"),
        types.Content(role="model", parts=[types.Part(text="hello")]),
        user("task"),
        types.Content(role="model", parts=[call("slow", "1")]),
        user("any news?"),
        types.Content(role="user", parts=[response("slow", "done")]),
        types.Content(role="model", parts=[types.Part(text="it is done")]),
    ]
    theirs = filtered(ContextFilterPlugin(num_invocations_to_keep=1), contents)
    assert theirs == contents[4:]
    assert [v.kind for v in validate(as_messages(theirs))] == ["orphan_result"]
    mine = filtered(ours.ContextFilterPlugin(num_invocations_to_keep=1), contents)
    assert mine == contents[2:]
    assert validate(as_messages(mine)) == []


def test_the_context_filter_plugin_drop_in_logs_a_failing_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(contents: list[types.Content]) -> list[types.Content]:
        raise RuntimeError("broken filter")

    contents = chat(3)
    assert filtered(ours.ContextFilterPlugin(2, custom_filter=broken), contents) == contents
    assert "Failed to reduce context" in caplog.text
    with pytest.raises(InvalidStrategy, match="remove_amount"):
        ours.ContextFilterPlugin(remove_amount=0)


def test_bad_arguments_raise_typed_errors() -> None:
    with pytest.raises(InvalidStrategy, match="max_tokens must be >= 1"):
        TrimContents(max_tokens=0)
    with pytest.raises(InvalidStrategy, match="not both"):
        TrimContents(max_tokens=10, strategy=KeepLastTurns(2))
    with pytest.raises(InvalidStrategy, match="HeadAndTail"):
        from ctxtrim import HeadAndTail

        TrimContents(strategy=HeadAndTail(2, 10))  # type: ignore[arg-type]
    with pytest.raises(InvalidStrategy, match="reserve_tokens"):
        TrimContents(reserve_tokens=-1)
    with pytest.raises(InvalidStrategy, match="the strategy's own options"):
        TrimContents(strategy=KeepLastTurns(2), pin_task=False)
