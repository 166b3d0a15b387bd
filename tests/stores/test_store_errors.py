"""One error contract for every store: the same bad input raises the same ``CtxtrimError``
subclass with the same message, on memory, SQLite, Redis and PostgreSQL, and changes
nothing (history, generation and token totals are read back after each case).

The table is the contract; ``ERROR_TABLE`` below is what the README's error table says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import (
    ContextStore,
    CtxtrimError,
    InvalidArgument,
    InvalidMessage,
    InvalidTurnId,
    Message,
    OutcomeUnknownError,
    StaleGenerationError,
    StoreError,
)

from store_backends import BACKENDS, PERSISTENT_BACKENDS, Backend, opened

MAX = 2**63 - 1
MIN = -(2**63)
Call = Callable[[ContextStore, int], Awaitable[Any]]


def _bad_upto(value: object) -> tuple[Call, type[CtxtrimError], str]:
    return (
        lambda s, g: s.replace_prefix(value, [], g),
        InvalidArgument,
        f"upto must be an int >= 0, got {value!r}",
    )


def _bad_generation(value: object) -> tuple[Call, type[CtxtrimError], str]:
    return (
        lambda s, g: s.replace_prefix(0, [], value),
        InvalidArgument,
        f"expected_generation must be a signed 64-bit int, got {value!r}",
    )


def _bad_length(value: object) -> tuple[Call, type[CtxtrimError], str]:
    return (
        lambda s, g: s.replace_prefix(0, [], g, expected_length=value),
        InvalidArgument,
        f"expected_length must be None or an int >= 0, got {value!r}",
    )


def _bad_limit(value: object) -> tuple[Call, type[CtxtrimError], str]:
    return (
        lambda s, g: s.get_history(limit=value),
        InvalidArgument,
        f"limit must be None or an int >= 0, got {value!r}",
    )


def _bad_tokens(method: str, a: object, b: object) -> tuple[Call, type[CtxtrimError], str]:
    name, value = ("input_tokens", a) if not _ok_int64(a) else ("output_tokens", b)
    return (
        lambda s, g: getattr(s, method)(a, b),
        InvalidArgument,
        f"{name} must be a signed 64-bit int, got {value!r}",
    )


def _ok_int64(value: object) -> bool:
    return type(value) is int and MIN <= value <= MAX


def _not_a_batch(value: object, method: str = "append_many") -> tuple[Call, type, str]:
    call: Call
    if method == "append_many":
        call = lambda s, g: s.append_many(value)  # type: ignore[arg-type]  # noqa: E731
    else:
        call = lambda s, g: s.replace_prefix(0, value, g)  # type: ignore[arg-type]  # noqa: E731
    kind = type(value).__name__
    return call, InvalidMessage, f"messages: must be a sequence of Message, got {kind}"


def _turn_back(given: str, current: int) -> str:
    return (
        f"turn id {given} is out of order: the log is already at turn {current},"
        " and turn numbers never go back"
    )


#: case id -> (call(store, generation), error class, exact message; "{g}" = generation)
ERROR_TABLE: dict[str, tuple[Call, type[CtxtrimError], str]] = {
    "replace_prefix(upto > len)": (
        lambda s, g: s.replace_prefix(3, [], g),
        InvalidArgument,
        "upto must be at most the history length 2, got 3",
    ),
    "replace_prefix(upto=-1)": _bad_upto(-1),
    "replace_prefix(upto=1.0)": _bad_upto(1.0),
    "replace_prefix(upto=True)": _bad_upto(True),
    "replace_prefix(upto='1')": _bad_upto("1"),
    "replace_prefix(upto=None)": _bad_upto(None),
    "expected_generation=None": _bad_generation(None),
    "expected_generation='1'": _bad_generation("1"),
    "expected_generation=2.9": _bad_generation(2.9),
    "expected_generation=True": _bad_generation(True),
    "expected_generation=2**63": _bad_generation(2**63),
    "expected_generation stale": (
        lambda s, g: s.replace_prefix(1, [], g + 7),
        StaleGenerationError,
        "stale generation: expected {g7}, the history is at generation {g}",
    ),
    "stale wins over upto > len": (
        lambda s, g: s.replace_prefix(99, [], g + 7),
        StaleGenerationError,
        "stale generation: expected {g7}, the history is at generation {g}",
    ),
    # expected_length: the history ("first", "second") must still hold exactly that many.
    "expected_length=-1": _bad_length(-1),
    "expected_length=2.0": _bad_length(2.0),
    "expected_length=True": _bad_length(True),
    "expected_length='2'": _bad_length("2"),
    "upto > expected_length": (
        lambda s, g: s.replace_prefix(2, [], g, expected_length=1),
        InvalidArgument,
        "upto must be at most expected_length 1, got 2",
    ),
    "expected_length stale (appended to)": (
        lambda s, g: s.replace_prefix(1, [], g, expected_length=1),
        StaleGenerationError,
        "stale length: expected 1 messages, but the history holds 2 (it was appended to meanwhile)",
    ),
    "stale generation wins over stale length": (
        lambda s, g: s.replace_prefix(1, [], g + 7, expected_length=1),
        StaleGenerationError,
        "stale generation: expected {g7}, the history is at generation {g}",
    ),
    "replace_prefix(messages='str')": _not_a_batch("str", "replace_prefix"),
    "replace_prefix(messages=[42])": (
        lambda s, g: s.replace_prefix(0, [42], g),  # type: ignore[list-item]
        InvalidMessage,
        "messages[0]: expected a ctxtrim.Message, got int",
    ),
    "append_many('str')": _not_a_batch("str"),
    "append_many(b'bytes')": _not_a_batch(b"bytes"),
    "append_many(Message)": _not_a_batch(Message.user("one, not a list")),
    "append_many(None)": _not_a_batch(None),
    "append_many(42)": _not_a_batch(42),
    "append_many([ok, 42])": (
        lambda s, g: s.append_many([Message.user("ok"), 42]),  # type: ignore[list-item]
        InvalidMessage,
        "messages[1]: expected a ctxtrim.Message, got int",
    ),
    "append_many([ok, dict])": (
        lambda s, g: s.append_many([Message.user("ok"), {"role": "user", "content": "hi"}]),  # type: ignore[list-item]
        InvalidMessage,
        "messages[1]: expected a ctxtrim.Message, got dict",
    ),
    "append(42)": (
        lambda s, g: s.append(42),  # type: ignore[arg-type]
        InvalidMessage,
        "message: expected a ctxtrim.Message, got int",
    ),
    "append('text')": (
        lambda s, g: s.append("text"),  # type: ignore[arg-type]
        InvalidMessage,
        "message: expected a ctxtrim.Message, got str",
    ),
    # The history is "first" (turn u1) and "second" (a1): the session is at turn 1.
    "append(turn id below the current turn)": (
        lambda s, g: s.append(Message.user("late", turn="u0")),
        InvalidTurnId,
        _turn_back("u0", 1),
    ),
    "append(assistant turn id below the current turn)": (
        lambda s, g: s.append(Message.assistant("late", turn="a0")),
        InvalidTurnId,
        _turn_back("a0", 1),
    ),
    "append_many(ok, then a turn id going back in the batch)": (
        lambda s, g: s.append_many(
            [Message.user("ok", turn="u5"), Message.assistant("back", turn="a4")]
        ),
        InvalidTurnId,
        _turn_back("a4", 5),
    ),
    "get_history(limit=-1)": _bad_limit(-1),
    "get_history(limit=1.0)": _bad_limit(1.0),
    "get_history(limit='2')": _bad_limit("2"),
    "get_history(limit=True)": _bad_limit(True),
    "set_context_tokens(2**63, 0)": _bad_tokens("set_context_tokens", 2**63, 0),
    "set_context_tokens(0, -2**63-1)": _bad_tokens("set_context_tokens", 0, MIN - 1),
    "set_context_tokens(1.9, 0)": _bad_tokens("set_context_tokens", 1.9, 0),
    "set_context_tokens('5', 0)": _bad_tokens("set_context_tokens", "5", 0),
    "set_context_tokens(True, 0)": _bad_tokens("set_context_tokens", True, 0),
    "set_context_tokens(0, None)": _bad_tokens("set_context_tokens", 0, None),
    "add_context_tokens(1.9, 0)": _bad_tokens("add_context_tokens", 1.9, 0),
    "add_context_tokens(2**63, 0)": _bad_tokens("add_context_tokens", 2**63, 0),
    "add_context_tokens(0, 2.0)": _bad_tokens("add_context_tokens", 0, 2.0),
    "add_context_tokens overflows input": (
        lambda s, g: s.add_context_tokens(MAX, 0),
        InvalidArgument,
        f"input_tokens total must stay a signed 64-bit int, adding {MAX} would overflow it",
    ),
    "add_context_tokens underflows output (input undone)": (
        lambda s, g: s.add_context_tokens(1, MIN),
        InvalidArgument,
        f"output_tokens total must stay a signed 64-bit int, adding {MIN} would overflow it",
    ),
}


async def _state(store: ContextStore) -> tuple[list[Message], int, tuple[int, int]]:
    return await store.get_history(), await store.generation(), await store.get_context_tokens()


@pytest.mark.parametrize("factory", BACKENDS)
async def test_error_table(factory: Callable[[Path], Backend], tmp_path: Path) -> None:
    """Every case of the table on one backend (one namespace, one session per run)."""
    backend = factory(tmp_path)
    try:
        async with opened(backend, "contract") as store:
            await store.append_many([Message.user("first"), Message.assistant("second")])
            await store.set_context_tokens(5, -7)
            before = await _state(store)
            g = before[1]
            failures = []
            for case, (call, cls, message) in ERROR_TABLE.items():
                expected = message.format(g=g, g7=g + 7)
                try:
                    await call(store, g)
                except CtxtrimError as e:
                    if type(e) is not cls or str(e) != expected:
                        failures.append(f"{case}: {type(e).__name__}({str(e)!r})")
                except Exception as e:  # a non-ctxtrim error breaks the contract
                    failures.append(f"{case}: {type(e).__name__}({str(e)!r}) is no CtxtrimError")
                else:
                    failures.append(f"{case}: no error")
                after = await _state(store)
                if after != before:
                    failures.append(f"{case}: changed the store: {before} -> {after}")
            assert not failures, "\n".join(failures)
    finally:
        await backend.cleanup()


@pytest.mark.parametrize("factory", BACKENDS)
async def test_token_counters_hold_the_whole_int64_range(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    backend = factory(tmp_path)
    try:
        async with opened(backend) as store:
            await store.set_context_tokens(MAX, MIN)
            assert await store.get_context_tokens() == (MAX, MIN)
            await store.add_context_tokens(-MAX, -MIN - 1)
            assert await store.get_context_tokens() == (0, -1)
            await store.add_context_tokens(MAX, 1)  # up to the edge, not past it
            assert await store.get_context_tokens() == (MAX, 0)
            with pytest.raises(InvalidArgument):
                await store.add_context_tokens(1, 0)
            assert await store.get_context_tokens() == (MAX, 0)  # not stuck: still adds
            await store.add_context_tokens(-1, 2)
            assert await store.get_context_tokens() == (MAX - 1, 2)
    finally:
        await backend.cleanup()


def test_the_error_classes_say_what_changed() -> None:
    # StoreError promises nothing changed; an unknown outcome must not be caught as one.
    assert not issubclass(OutcomeUnknownError, StoreError)
    assert issubclass(OutcomeUnknownError, CtxtrimError)
    assert issubclass(InvalidArgument, ValueError) and issubclass(InvalidArgument, CtxtrimError)
    err = OutcomeUnknownError("append: no reply", "append")
    assert err.operation == "append"


class _BadCounter:
    """A token counter whose count is not a count (a provider's counting endpoint that
    answered garbage, a counter with a bug)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def count_message(self, message: Message) -> object:
        return self.value


@pytest.mark.parametrize("factory", BACKENDS)
async def test_a_count_that_is_not_a_count_is_refused_before_anything_is_stored(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    """-1, 2**31, 1.5 and True from a counter are an InvalidArgument naming the message, the
    same on every backend, and nothing is stored: the session stays readable (a stored bad
    count used to make every later read raise OverflowError)."""
    backend = factory(tmp_path)
    try:
        async with opened(backend, "counts") as store:
            await store.append(Message.user("kept"))
            before = await _state(store)
            for bad in (-1, 2**31, 2**32, 1.5, True, None):
                store._counter = _BadCounter(bad)  # type: ignore[attr-defined]  # every backend keeps it there
                calls: list[tuple[Callable[[], Awaitable[None]], str]] = [
                    (lambda: store.append(Message.user("x")), "message"),
                    (lambda: store.append_many([Message.user("x")]), "messages[0]"),
                ]
                for call, where in calls:
                    with pytest.raises(InvalidArgument) as e:
                        await call()
                    assert str(e.value) == (
                        f"the token counter's count_message returned {bad!r} for {where}; "
                        "a token count is an int from 0 to 2147483647"
                    )
                assert await _state(store) == before
            store._counter = _BadCounter(2**31 - 1)  # type: ignore[attr-defined]
            await store.append(Message.user("the largest count"))
            assert (await store.load_log()).token_counts()[-1] == 2**31 - 1
    finally:
        await backend.cleanup()


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_an_id_stored_with_other_content_is_named_as_append_or_append_many_named_it(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    """With idempotent ids, an id already stored with other content is refused at
    ``message.id`` for ``append`` and ``messages[i].id`` for a batch, on every persistent
    backend (Redis and PostgreSQL named ``messages[0].id`` for a lone ``append``), and
    nothing is stored."""
    backend = factory(tmp_path)
    try:
        async with opened(backend, "ids") as store:
            store._idempotent = True  # type: ignore[attr-defined]  # every persistent backend keeps it there
            await store.append(Message.user("first", id="m1"))
            before = await _state(store)
            with pytest.raises(InvalidMessage) as e:
                await store.append(Message.user("other", id="m1"))
            assert e.value.path == "message.id"
            with pytest.raises(InvalidMessage) as e:
                await store.append_many([Message.user("new", id="m2"), Message.user("o", id="m1")])
            assert e.value.path == "messages[1].id"
            assert await _state(store) == before
    finally:
        await backend.cleanup()


@pytest.mark.parametrize("factory", BACKENDS)
async def test_every_call_after_close_is_a_store_error(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    """Closed is closed on every backend, the memory store included (it used to go on)."""
    backend = factory(tmp_path)
    try:
        store = await backend.open("closing")
        await store.append(Message.user("x"))
        await store.close()
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: store.append(Message.user("y")),
            lambda: store.append_many([Message.user("y")]),
            store.get_history,
            store.generation,
            store.snapshot,
            store.get_context_tokens,
            lambda: store.add_context_tokens(1, 1),
            store.clear,
            store.fork,
        ]
        for call in calls:
            with pytest.raises(StoreError, match="closed"):
                await call()
    finally:
        await backend.cleanup()
