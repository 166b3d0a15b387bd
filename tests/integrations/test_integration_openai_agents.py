"""ctxtrim.integrations.openai_agents against the real openai-agents SDK: the session's
``get_items(limit)`` and the input callback never hand the runner an orphan
``function_call_output`` (openai-agents' own ``SQLiteSession`` does), items round-trip
exactly on any ctxtrim store,
and where SQLiteSession's window is pair-safe both return the same items."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

pytest.importorskip(
    "agents", reason="openai-agents not installed: pip install 'ctxtrim[openai-agents]'"
)

from agents import (
    Agent,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session, SessionSettings
from agents.run_internal.session_persistence import prepare_input_with_session
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ctxtrim import InvalidMessage, MemoryContextStore, Message, NotJSONData, SQLiteContextStore
from ctxtrim._core import message_tokens
from ctxtrim.integrations.openai_agents import (
    CtxtrimSession,
    CtxtrimSQLiteSession,
    item_to_message,
    trim_input,
)


def fc(i: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"}


def fo(i: str, output: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": i, "output": output}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


T = TypeVar("T")

PEER_ITEMS = [user("q1"), fc("c1"), fo("c1"), fc("c2"), fo("c2")]


class Closing(Protocol):
    """The ``closing`` fixture: ``closing(x)`` is x, closed when the test ends."""

    def __call__(self, resource: T, /) -> T: ...


@pytest.fixture
def closing() -> Iterator[Closing]:
    """``closing(x)`` returns x and closes it when the test ends, pass or fail (a session's
    ``close()``, or a store's awaited one): no SQLite connection is left to the GC."""
    opened: list[Any] = []

    def register(resource: T) -> T:
        opened.append(resource)
        return resource

    yield register
    for resource in reversed(opened):
        result = resource.close()
        if inspect.isawaitable(result):

            async def wait(awaitable: Any = result) -> None:
                await awaitable

            asyncio.run(wait())


def pair_problems(items: list[dict[str, Any]], source: list[dict[str, Any]]) -> list[str]:
    answered = {it["call_id"] for it in source if it.get("type") == "function_call_output"}
    calls: set[str] = set()
    outputs: set[str] = set()
    problems = []
    for it in items:
        if it.get("type") == "function_call":
            calls.add(it["call_id"])
        elif it.get("type") == "function_call_output":
            if it["call_id"] not in calls:
                problems.append(f"orphan output {it['call_id']}")
            outputs.add(it["call_id"])
    return problems + [f"call {c} without output" for c in (calls & answered) - outputs]


KINDS = ["ctxtrim-store", "SQLiteSession-tables"]


def make_session(kind: str, session_id: str, closing: Closing) -> Any:
    """A ``CtxtrimSession`` of each kind: on a ctxtrim store (here a memory one), or the
    ``CtxtrimSQLiteSession`` that ``CtxtrimSession(session_id)`` makes."""
    if kind == "ctxtrim-store":
        return CtxtrimSession(MemoryContextStore(session_id=session_id))
    made = closing(CtxtrimSession(session_id))
    assert isinstance(made, CtxtrimSQLiteSession) and isinstance(made, SQLiteSession)
    return made


@pytest.mark.parametrize("kind", KINDS)
def test_is_an_openai_agents_session(kind: str, closing: Closing) -> None:
    session = make_session(kind, "s", closing)
    assert isinstance(session, Session) and isinstance(session, CtxtrimSession)


@pytest.mark.parametrize("kind", KINDS)
def test_get_items_limit_never_returns_an_orphan_output(kind: str, closing: Closing) -> None:
    async def main() -> None:
        theirs = closing(SQLiteSession("s1"))
        ours = make_session(kind, "s1", closing)
        for s in (theirs, ours):
            await s.add_items(PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the items' wire form
        assert pair_problems(await theirs.get_items(limit=3), PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the items' wire form; theirs has the orphan
        for limit in range(1, 7):
            got = await ours.get_items(limit=limit)
            assert pair_problems(got, PEER_ITEMS) == []
            assert len(got) <= limit
            assert got == PEER_ITEMS[len(PEER_ITEMS) - len(got) :]
        assert await ours.get_items(limit=3) == PEER_ITEMS[3:]
        # session_settings.limit is honoured like the SDK's sessions do.
        ours.session_settings = SessionSettings(limit=3)
        assert await ours.get_items() == PEER_ITEMS[3:]

    asyncio.run(main())


#: One call and its output of each client-side pair kind the Responses format has.
PROVIDER_PAIRS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "k1",
            "action": {"type": "wait"},
            "pending_safety_checks": [],
            "status": "completed",
        },
        {
            "type": "computer_call_output",
            "call_id": "k1",
            "output": {"type": "computer_screenshot", "image_url": "https://x/s.png"},
        },
    ),
    (
        {"type": "custom_tool_call", "call_id": "k2", "name": "patch", "input": "diff"},
        {"type": "custom_tool_call_output", "call_id": "k2", "output": "ok"},
    ),
    (
        {
            "type": "mcp_approval_request",
            "id": "k3",
            "name": "rm",
            "arguments": "{}",
            "server_label": "fs",
        },
        {"type": "mcp_approval_response", "approval_request_id": "k3", "approve": False},
    ),
    (
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "k4",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "local_shell_call_output", "id": "k4", "output": "a.py"},
    ),
]


@pytest.mark.parametrize("kind", KINDS)
def test_get_items_limit_never_splits_any_kind_of_call_from_its_output(
    kind: str, closing: Closing
) -> None:
    """Computer, custom-tool, MCP-approval and local-shell calls pair with their outputs as
    function calls do: no ``limit`` returns an output without its call."""

    async def main() -> None:
        ours = make_session(kind, "s-pairs", closing)
        items: list[dict[str, Any]] = [user("q")]
        for call, output in PROVIDER_PAIRS:
            items += [call, output]
        await ours.add_items(items)
        assert await ours.get_items() == items
        for limit in range(1, len(items) + 1):
            got = await ours.get_items(limit=limit)
            start = len(items) - len(got)
            assert got == items[start:]
            # The calls sit at odd indices, their outputs right after: a window starts at
            # the user message or at a call, never at an output.
            assert start == 0 or start % 2 == 1, (limit, got[:1])
            assert len(got) >= limit - 1

    asyncio.run(main())


def test_runner_input_through_the_callback_has_no_orphan(closing: Closing) -> None:
    async def main() -> None:
        theirs = closing(SQLiteSession("s1"))
        await theirs.add_items(PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the items' wire form
        prepared, _ = await prepare_input_with_session(
            "next", theirs, lambda history, new: history[-3:] + new
        )
        assert pair_problems(prepared, PEER_ITEMS) == ["orphan output c1"]  # type: ignore[arg-type]  # plain dicts are the items' wire form; theirs

        big = [user("task"), fc("c1"), fo("c1", "x " * 400), fc("c2"), fo("c2", "y " * 400)]
        ours = closing(CtxtrimSession(session_id="s1"))
        await ours.add_items(big)
        for budget in (50, 300, 600, 5000):
            prepared, _ = await prepare_input_with_session("next", ours, trim_input(budget))  # type: ignore[arg-type]  # CtxtrimSession implements the Session protocol at runtime
            assert pair_problems(prepared, big) == []  # type: ignore[arg-type]  # plain dicts are the items' wire form
            assert prepared[-1] == {"role": "user", "content": "next"}
            assert prepared[0] == user("task")  # the task is pinned
        # A budget that holds the task, the newest call with its output and the new input.
        want = [user("task"), fc("c2"), fo("c2", "y " * 400), user("next")]
        budget = sum(message_tokens(item_to_message(it)) for it in want)
        small, _ = await prepare_input_with_session("next", ours, trim_input(budget))  # type: ignore[arg-type]  # CtxtrimSession implements the Session protocol at runtime
        assert small == want
        # One token less, and the newest pair goes whole, not half.
        smaller, _ = await prepare_input_with_session("next", ours, trim_input(budget - 1))  # type: ignore[arg-type]  # CtxtrimSession implements the Session protocol at runtime
        assert pair_problems(smaller, big) == [] and len(smaller) < len(want)  # type: ignore[arg-type]  # plain dicts are the items' wire form
        everything, _ = await prepare_input_with_session("next", ours, trim_input(5000))  # type: ignore[arg-type]  # CtxtrimSession implements the Session protocol at runtime
        assert everything[:-1] == big

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_items_round_trip_exactly_with_pop_and_clear(kind: str, closing: Closing) -> None:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "be terse"},
        user("find it"),
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hm"}]},
        {**fc("c1"), "id": "fc_1", "status": "completed"},
        fo("c1"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "found", "annotations": []}],
        },
    ]

    async def main() -> None:
        s = make_session(kind, "rt", closing)
        await s.add_items(items)
        assert await s.get_items() == items
        assert await s.pop_item() == items[-1]
        assert await s.get_items() == items[:-1]
        await s.clear_session()
        assert await s.get_items() == [] and await s.pop_item() is None

    asyncio.run(main())


def test_session_on_a_sqlite_store_survives_reopening(tmp_path: Path, closing: Closing) -> None:
    async def main() -> None:
        store = closing(await SQLiteContextStore.open(tmp_path / "s.db", "user-1"))
        await CtxtrimSession(store).add_items(PEER_ITEMS)
        await store.close()
        again = closing(await SQLiteContextStore.open(tmp_path / "s.db", "user-1"))
        session = CtxtrimSession(again)
        assert session.session_id == "user-1"
        assert await session.get_items() == PEER_ITEMS
        assert await session.get_items(limit=3) == PEER_ITEMS[3:]
        await again.close()

    asyncio.run(main())


@st.composite
def item_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [user("task")]
    k = 0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["text", "calls", "user"]))
        if kind == "text":
            out.append({"role": "assistant", "content": [{"type": "output_text", "text": "a"}]})
        elif kind == "user":
            out.append(user("more"))
        else:
            ids = [f"c{k + j}" for j in range(draw(st.integers(1, 3)))]
            k += len(ids)
            out += [fc(i) for i in ids] + [fo(i) for i in ids]
    return out


@given(item_histories(), st.integers(1, 12))
@settings(max_examples=60, deadline=None)
def test_equal_to_sqlite_session_where_its_window_is_pair_safe(
    items: list[dict[str, Any]], limit: int
) -> None:
    async def main() -> list[list[Any]]:
        # Closed here: hypothesis forbids function fixtures.
        theirs, ours = SQLiteSession("p"), CtxtrimSession("p")
        on_store = CtxtrimSession(MemoryContextStore(session_id="p"))
        try:
            for s in (theirs, ours, on_store):
                await s.add_items(items)  # type: ignore[arg-type]  # plain dicts are the items' wire form
            return [await s.get_items(limit=limit) for s in (theirs, ours, on_store)]
        finally:
            theirs.close()
            ours.close()

    theirs, ours, on_store = asyncio.run(main())
    assert pair_problems(ours, items) == [] and ours == on_store
    assume(pair_problems(theirs, items) == [])
    assert ours == theirs


# -- the SDK's own usage pattern: Runner.run with a session over several turns ---------------


class ScriptedModel(Model):
    """An agents ``Model`` (the SDK's interface, offline): calls ``lookup`` once per turn,
    then answers; records the input the runner sends each time."""

    def __init__(self) -> None:
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = [dict(it) for it in input] if isinstance(input, list) else [user(input)]
        self.inputs.append(items)
        n = len(self.inputs)
        if items[-1].get("type") == "function_call_output":
            out: Any = ResponseOutputMessage(
                id=f"msg_{n}",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
            )
        else:
            out = ResponseFunctionToolCall(
                type="function_call", call_id=f"call_{n}", name="lookup", arguments='{"q": "x"}'
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_runner_turns_on_a_ctxtrim_session_stay_pair_safe_and_bounded(closing: Closing) -> None:
    set_tracing_disabled(True)
    model = ScriptedModel()

    @function_tool
    def lookup(q: str) -> str:
        return "result " * 100

    agent = Agent(name="a", instructions="be terse", model=model, tools=[lookup])
    session = closing(CtxtrimSession(session_id="runner"))
    config = RunConfig(session_input_callback=trim_input(600))

    async def main() -> None:
        for turn in range(8):
            result = await Runner.run(agent, f"question {turn}", session=session, run_config=config)  # type: ignore[arg-type]  # CtxtrimSession implements the Session protocol at runtime
            assert result.final_output == "done"

    asyncio.run(main())
    stored = asyncio.run(session.get_items())
    assert len(stored) == 8 * 4  # question, call, output, answer per turn: all persisted
    for sent in model.inputs:
        assert pair_problems(sent, stored) == []
    # What the callback sends at the start of each turn is within the budget (by the same
    # estimate), and the oldest turns are gone from the last one while all are stored.
    for sent in model.inputs:
        if sent[-1].get("role") == "user":
            assert sum(message_tokens(item_to_message(it)) for it in sent) <= 600
    assert {"role": "user", "content": "question 1"} not in model.inputs[-1]
    assert model.inputs[-1][0] == user("question 0")  # the task stays pinned


# -- SQLiteSession compatibility and bounded reads --------------------------------------------


def test_session_settings_are_normalised_like_sqlite_session(closing: Closing) -> None:
    for cls in (SQLiteSession, CtxtrimSession):
        assert closing(cls("s")).session_settings == SessionSettings()
        limited = closing(cls("s", session_settings={"limit": 2}))
        assert limited.session_settings == SessionSettings(limit=2)
        with pytest.raises(TypeError, match="bogus"):
            cls("s", session_settings={"bogus": 1})

    async def main() -> None:
        session = closing(CtxtrimSession("s", session_settings={"limit": 2}))
        await session.add_items(PEER_ITEMS)
        assert await session.get_items() == PEER_ITEMS[3:]

    asyncio.run(main())


def test_closed_session_raises_runtime_error_like_sqlite_session(
    tmp_path: Path, closing: Closing
) -> None:
    async def main() -> None:
        for session in (
            closing(SQLiteSession("s", tmp_path / "theirs.db")),
            closing(CtxtrimSession("s", tmp_path / "ours.db")),
            closing(CtxtrimSession("s")),
            CtxtrimSession(MemoryContextStore()),
        ):
            await session.add_items(PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the items' wire form
            session.close()
            for call in (
                session.add_items([]),
                session.get_items(),
                session.pop_item(),
                session.clear_session(),
            ):
                with pytest.raises(RuntimeError):
                    await call

    asyncio.run(main())


def test_swapping_the_import_keeps_the_conversations_sqlite_session_stored(
    tmp_path: Path, closing: Closing
) -> None:
    """``CtxtrimSession(session_id, db_path)`` is ``SQLiteSession``'s constructor over
    ``SQLiteSession``'s own tables: a database either class wrote, the other reads."""
    db = tmp_path / "chats.db"
    later = [user("q2"), fc("c3"), fo("c3")]

    async def main() -> None:
        theirs = closing(SQLiteSession("user-42", db))
        await theirs.add_items(PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the items' wire form
        theirs.close()
        ours = closing(CtxtrimSession("user-42", str(db)))
        assert isinstance(ours, CtxtrimSQLiteSession) and ours.session_id == "user-42"
        assert await ours.get_items() == PEER_ITEMS
        await ours.add_items(later)
        assert await closing(CtxtrimSession("other", db)).get_items() == []
        ours.close()
        back = closing(SQLiteSession("user-42", db))
        assert await back.get_items() == [*PEER_ITEMS, *later]
        with pytest.raises(AttributeError, match="not a ctxtrim store"):
            _ = ours.store

    asyncio.run(main())
    # A store and db_path, or db_path alone, are no constructor of either kind.
    with pytest.raises(ValueError, match="db_path goes with a session id"):
        CtxtrimSession(MemoryContextStore(), db)
    with pytest.raises(TypeError):
        CtxtrimSession(db_path=db)


def test_bad_items_raise_a_typed_error_naming_them_and_store_nothing(
    tmp_path: Path, closing: Closing
) -> None:
    async def main() -> None:
        for session in (
            closing(CtxtrimSession("s", tmp_path / "bad.db")),
            CtxtrimSession(MemoryContextStore()),
        ):
            await session.add_items(PEER_ITEMS)
            with pytest.raises(NotJSONData, match=r"items\[1\]: not JSON data") as err:
                await session.add_items([user("fine"), {"role": "user", "content": {1, 2}}])
            assert isinstance(err.value, TypeError)  # what SQLiteSession's json.dumps raises
            with pytest.raises(InvalidMessage, match=r"items\[0\]: expected an input item"):
                await session.add_items(["not an item"])
            assert await session.get_items() == PEER_ITEMS

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_negative_limit_reads_everything_like_sqlite_session(kind: str, closing: Closing) -> None:
    # SQLiteSession passes the limit to SQLite's LIMIT, where a negative one means no limit
    # (openai-agents keeps that on purpose); 0 reads nothing.
    async def main() -> None:
        theirs = closing(SQLiteSession("neg"))
        ours = make_session(kind, "neg", closing)
        for s in (theirs, ours):
            await s.add_items(PEER_ITEMS)  # type: ignore[arg-type]  # plain dicts are the wire form
        for limit in (-1, -5):
            assert await ours.get_items(limit) == await theirs.get_items(limit) == PEER_ITEMS
        assert await ours.get_items(0) == await theirs.get_items(0) == []
        ours.session_settings = SessionSettings(limit=-1)
        assert await ours.get_items() == PEER_ITEMS

    asyncio.run(main())


def test_closing_a_session_leaves_the_store_open(tmp_path: Path, closing: Closing) -> None:
    async def main() -> None:
        store = closing(await SQLiteContextStore.open(tmp_path / "c.db", "s"))
        session = CtxtrimSession(store)
        await session.add_items(PEER_ITEMS)
        session.close()
        with pytest.raises(RuntimeError, match="CtxtrimSession is closed"):
            await session.get_items()
        assert await CtxtrimSession(store).get_items() == PEER_ITEMS  # the store is yours

    asyncio.run(main())


class _CountingStore(MemoryContextStore):
    """A memory store that refuses whole-history reads and records bounded ones."""

    def __init__(self) -> None:
        super().__init__(session_id="bounded")
        self.read: list[int | None] = []

    async def get_history(self, limit: int | None = None) -> list[Message]:
        self.read.append(limit)
        return await super().get_history(limit)

    async def load_log(self) -> Any:
        raise AssertionError("get_items(limit) read the whole history")

    async def snapshot(self) -> Any:
        raise AssertionError("get_items(limit) read the whole history")


def test_get_items_limit_reads_only_what_it_returns() -> None:
    async def main() -> None:
        store = _CountingStore()
        session = CtxtrimSession(store)
        items: list[dict[str, Any]] = [user("task")]
        for i in range(2000):
            items += [fc(f"c{i}"), fo(f"c{i}")]
        await session.add_items(items)
        for limit in (1, 2, 3, 100):
            got = await session.get_items(limit)
            assert got == items[len(items) - len(got) :]
            assert pair_problems(got, items) == []
            assert len(got) >= limit - 1  # moved forward by at most the orphan output
        assert store.read == [1, 2, 3, 100]

    asyncio.run(main())


def test_trim_input_converts_each_item_once_and_reads_only_the_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ctxtrim.integrations.openai_agents as oa

    converted: list[int] = []

    def counting(item: Any) -> Message:
        converted.append(id(item))
        return item_to_message(item)

    monkeypatch.setattr(oa, "item_to_message", counting)
    callback = trim_input(2000)
    history: list[dict[str, Any]] = [user("task")]
    for i in range(5000):
        history += [fc(f"c{i}"), fo(f"c{i}", "x" * 50)]
    first = callback(history, [user("next")])
    assert pair_problems(first, history) == []
    assert first[0] is history[0] and first[-1]["content"] == "next"
    assert len(converted) < 2000  # the head and the tail, not 10k items
    # Handed again (the same objects, grown), the history is mirrored in a log: the rest
    # of it is converted once, then each call converts only the new items.
    history += [fc("n"), fo("n")]
    second = callback(history, [user("again")])
    assert pair_problems(second, history) == []
    assert len(set(converted)) == len(converted)  # no item converted twice
    converted.clear()
    for k in range(3):
        history += [fc(f"m{k}"), fo(f"m{k}")]
        new = [user(f"more {k}")]
        got = callback(history, new)
        assert pair_problems(got, history) == [] and got[-1] is new[0]
        assert len(converted) <= 3  # the new items only
        converted.clear()
    # A history of fresh objects (a session that decodes its items) is read from its ends.
    fresh = [dict(it) for it in history]
    third = callback(fresh, [user("fresh")])
    assert pair_problems(third, fresh) == [] and third[0] is fresh[0]
    assert len(converted) < 2000


_TEXT = st.text(max_size=30)
_JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _agent_items(draw: st.DrawFn) -> dict[str, Any]:
    """Items of the shapes item_to_message builds directly, and near misses of them."""
    kind = draw(st.sampled_from(["call", "output", "short", "other"]))
    ident = draw(st.sampled_from(["c1", "", "call_x"]))
    item: dict[str, Any]
    if kind == "call":
        args = draw(st.dictionaries(_TEXT, _JSON_VALUE, max_size=3))
        text = draw(
            st.sampled_from(
                [
                    json.dumps(args, ensure_ascii=False, separators=(",", ":")),
                    json.dumps(args),
                    "[1]",
                    "{bad",
                ]
            )
        )
        item = {"type": "function_call", "call_id": ident, "name": "f", "arguments": text}
    elif kind == "output":
        out = draw(st.one_of(_TEXT, st.just([{"type": "input_text", "text": "t"}])))
        item = {"type": "function_call_output", "call_id": ident, "output": out}
    elif kind == "short":
        role = draw(st.sampled_from(["user", "assistant", "system", "developer"]))
        item = {"role": role, "content": draw(_TEXT)}
    else:
        item = {"type": "message", "role": "user", "content": draw(_TEXT)}
    if draw(st.booleans()):
        item["id"] = "x"  # an extra key: the general converter keeps it
    return item


@settings(max_examples=300, deadline=None)
@given(_agent_items())
def test_common_items_convert_as_the_responses_converter_does(item: dict[str, Any]) -> None:
    from ctxtrim.errors import InvalidMessage
    from ctxtrim.formats import openai_responses
    from ctxtrim.formats.openai_responses import (
        from_openai_responses,
        read_common_item,
        to_openai_responses,
    )

    direct = read_common_item(item)
    if direct is None:
        return
    try:
        general = from_openai_responses([item])
    except InvalidMessage:
        pytest.fail(f"built directly, rejected by the converter: {item!r}")
    assert [direct] == general
    with pytest.MonkeyPatch.context() as m:  # the general renderer, not its common shapes
        m.setattr(openai_responses, "render_common", lambda message: None)
        assert to_openai_responses([Message.decode(direct.encode())]) == [item]
    assert item_to_message(item) == direct


@st.composite
def _agent_messages(draw: st.DrawFn) -> Message:
    """Messages of the shapes message_to_items renders directly, and near misses of them."""
    from ctxtrim.errors import InvalidMessage
    from ctxtrim.messages import TextBlock, ToolResultBlock, ToolUseBlock

    made = item_to_message(draw(_agent_items()))
    role = draw(st.sampled_from([made.role, "user", "assistant", "system"]))
    text = draw(_TEXT)
    block = draw(
        st.sampled_from(
            [
                made.content[0],
                TextBlock(text),
                ToolUseBlock("c", "f", {"a": text}),
                ToolResultBlock("c", text, draw(st.booleans())),
                ToolResultBlock("c", text, compact_summary="s"),
            ]
        )
    )
    meta = draw(st.sampled_from([made.meta, None, {"openai_responses": [{"t": "message"}]}]))
    try:
        return Message(role, (block,), meta=meta)
    except InvalidMessage:  # a block its role may not hold
        assume(False)
        raise


@settings(max_examples=300, deadline=None)
@given(_agent_messages())
def test_common_messages_render_as_the_responses_renderer_does(message: Message) -> None:
    from ctxtrim.errors import InvalidMessage
    from ctxtrim.formats import openai_responses
    from ctxtrim.formats.openai_responses import render_common, to_openai_responses_json
    from ctxtrim.integrations.openai_agents import message_to_items

    direct = render_common(message)
    if direct is None:
        return
    try:  # the general renderer, not its common shapes, on a copy that was never rendered
        with pytest.MonkeyPatch.context() as m:
            m.setattr(openai_responses, "render_common", lambda message: None)
            m.setattr(openai_responses._RENDERINGS, "_fast_json", None)
            general_json = to_openai_responses_json([Message.decode(message.encode())])
    except InvalidMessage:
        pytest.fail(f"rendered directly, rejected by the renderer: {message!r}")
    # The same bytes, key order included: the rendering is kept and sent as it is.
    assert msgspec.json.encode(direct) == general_json
    general = json.loads(general_json)
    assert direct == general
    assert message_to_items(message) == general
