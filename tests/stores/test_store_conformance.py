"""Every store backend behaves like a dict of lists, and rejects bad input alike.

A hypothesis state machine drives one backend namespace with appends, atomic batches, bad
batches, clears, forks, snapshots followed by fresh or stale ``replace_prefix`` (with
appends in between), ``get_history(limit)``, token accounting, second handles on the same
session and ``list_sessions``, and checks every store against a plain model after each
step. Messages are arbitrary (any Unicode but lone surrogates, NUL, images, tool blocks).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ctxtrim import (
    ContextStore,
    InvalidMessage,
    InvalidTurnId,
    Message,
    MessageLog,
    StaleGenerationError,
)
from ctxtrim.store import _preview

from store_backends import BACKENDS, Backend
from strategies import messages

_T = TypeVar("_T")
MAX_STORES = 4
batches = st.lists(messages(), max_size=4)


def turn_refusal(history: list[Message], batch: list[Message]) -> str | None:
    """The model of the one turn rule: the ``InvalidTurnId`` message appending ``batch`` to
    ``history`` raises on every store, or ``None``. The history's turn is what a rewrite of
    it from scratch numbers (a caller-given id below the turn before it, which only a
    ``replace_prefix`` can store, counts at that turn); the batch's ids may not go below it,
    nor below an earlier id of the batch."""
    log = MessageLog()
    log.replace_prefix(0, history, log.generation)
    try:
        log.extend(batch)
    except InvalidTurnId as e:
        return str(e)
    return None


class StoreMachine(RuleBasedStateMachine):
    """Stores (the first one plus forks) against ``model[i]`` lists."""

    factory: Callable[[Path], Backend]
    tmp_path: Path

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.backend = type(self).factory(type(self).tmp_path)
        first = self.run(self.backend.open(None))
        self.stores: list[ContextStore] = [first]
        self.model: list[list[Message]] = [[]]
        self.tokens: list[tuple[int, int]] = [(0, 0)]
        self.rewrites: list[int] = [0]  # clears + replace_prefixes since the store appeared
        self.base_generation: list[int] = [self.run(first.generation())]

    def run(self, coro: Awaitable[_T]) -> _T:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        try:
            for store in self.stores:
                self.run(store.close())
            self.run(self.backend.cleanup())
        finally:
            self.loop.close()

    # -- writes -----------------------------------------------------------------------------

    @rule(data=st.data(), message=messages())
    def append(self, data: st.DataObject, message: Message) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        self.append_or_refuse(i, [message], one=True)

    @rule(data=st.data(), batch=batches)
    def append_many(self, data: st.DataObject, batch: list[Message]) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        self.append_or_refuse(i, batch)

    def append_or_refuse(self, i: int, batch: list[Message], one: bool = False) -> None:
        """Append on store ``i``, or (a caller-given turn id going back) see it refused with
        the same error on every backend and nothing stored (the invariants re-read it)."""
        store = self.stores[i]
        refusal = turn_refusal(self.model[i], batch)
        call = store.append(batch[0]) if one else store.append_many(batch)
        if refusal is None:
            self.run(call)
            self.model[i].extend(batch)
            return
        with pytest.raises(InvalidTurnId) as err:
            self.run(call)
        assert type(err.value) is InvalidTurnId and str(err.value) == refusal

    @rule(data=st.data(), batch=batches, junk=st.sampled_from([None, "text", {"role": "user"}]))
    def append_many_with_a_bad_item_changes_nothing(
        self, data: st.DataObject, batch: list[Message], junk: object
    ) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        at = data.draw(st.integers(0, len(batch)))
        bad: list[Any] = [*batch[:at], junk, *batch[at:]]
        with pytest.raises(InvalidMessage) as err:
            self.run(self.stores[i].append_many(bad))
        assert err.value.path == f"messages[{at}]"

    @rule(data=st.data())
    def clear(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        self.run(self.stores[i].clear())
        self.model[i] = []
        self.tokens[i] = (0, 0)
        self.rewrites[i] += 1

    @precondition(lambda self: len(self.stores) < MAX_STORES)
    @rule(data=st.data())
    def fork(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        child = self.run(self.stores[i].fork())
        assert child.session_id not in {s.session_id for s in self.stores}
        self.stores.append(child)
        self.model.append(list(self.model[i]))
        self.tokens.append(self.tokens[i])
        self.rewrites.append(0)
        self.base_generation.append(self.run(child.generation()))

    @rule(
        data=st.data(),
        summary=batches,
        meanwhile=batches,
        rewrite_meanwhile=st.booleans(),
    )
    def compact(
        self,
        data: st.DataObject,
        summary: list[Message],
        meanwhile: list[Message],
        rewrite_meanwhile: bool,
    ) -> None:
        """snapshot → (appends, maybe a clear) → replace_prefix: applied with the appends
        kept, or refused as stale with nothing changed."""
        i = data.draw(st.integers(0, len(self.stores) - 1))
        store = self.stores[i]
        snap_messages, generation = self.run(store.snapshot())
        assert snap_messages == self.model[i]
        upto = data.draw(st.integers(0, len(snap_messages)))
        self.append_or_refuse(i, meanwhile)
        if rewrite_meanwhile:
            self.clear_store(i)
            with pytest.raises(StaleGenerationError):
                self.run(store.replace_prefix(upto, summary, generation))
        else:
            self.run(store.replace_prefix(upto, summary, generation))
            self.model[i] = summary + self.model[i][upto:]
            self.rewrites[i] += 1
            assert self.run(store.generation()) != generation

    def clear_store(self, i: int) -> None:
        self.run(self.stores[i].clear())
        self.model[i] = []
        self.tokens[i] = (0, 0)
        self.rewrites[i] += 1

    @rule(data=st.data(), a=st.integers(0, 10**6), b=st.integers(0, 10**6), add=st.booleans())
    def tokens_(self, data: st.DataObject, a: int, b: int, add: bool) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        if add:
            self.run(self.stores[i].add_context_tokens(a, b))
            self.tokens[i] = (self.tokens[i][0] + a, self.tokens[i][1] + b)
        else:
            self.run(self.stores[i].set_context_tokens(a, b))
            self.tokens[i] = (a, b)

    # -- reads ------------------------------------------------------------------------------

    @rule(data=st.data(), limit=st.integers(0, 12))
    def get_history_limit(self, data: st.DataObject, limit: int) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        want = self.model[i][-limit:] if limit else []
        assert self.run(self.stores[i].get_history(limit=limit)) == want

    @precondition(lambda self: self.backend.persistent)
    @rule(data=st.data())
    def second_handle_sees_the_same_session(self, data: st.DataObject) -> None:
        i = data.draw(st.integers(0, len(self.stores) - 1))
        other = self.run(self.backend.open(self.stores[i].session_id))
        try:
            assert self.run(other.get_history()) == self.model[i]
            assert self.run(other.get_context_tokens()) == self.tokens[i]
            assert self.run(other.generation()) == self.run(self.stores[i].generation())
        finally:
            self.run(other.close())

    @rule()
    def list_sessions(self) -> None:
        infos = self.run(self.stores[0].list_sessions())
        by_id = {info.session_id: info for info in infos}
        assert len(by_id) == len(infos)
        expected = range(len(self.stores)) if self.backend.lists_all_sessions else [0]
        if self.backend.lists_all_sessions:
            assert set(by_id) == {s.session_id for s in self.stores}
        for i in expected:
            info = by_id[self.stores[i].session_id]
            assert info.message_count == len(self.model[i])
            assert (info.input_tokens, info.output_tokens) == self.tokens[i]
            assert info.preview == _preview(self.model[i])

    @invariant()
    def every_store_matches_its_model(self) -> None:
        for i, store in enumerate(self.stores):
            assert self.run(store.get_history()) == self.model[i]
            assert self.run(store.get_context_tokens()) == self.tokens[i]
            # generation moves on every clear/replace_prefix and never on an append
            assert self.run(store.generation()) - self.base_generation[i] == self.rewrites[i]
            log = self.run(store.load_log())
            assert log.read_only and log.to_list() == self.model[i]


@pytest.mark.parametrize("factory", BACKENDS)
def test_store_behaves_like_its_model(factory: Callable[[Path], Backend], tmp_path: Path) -> None:
    machine = type(
        "Machine",
        (StoreMachine,),
        {"factory": staticmethod(factory), "tmp_path": tmp_path},
    )
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]  # a RuleBasedStateMachine made with type()
        max_examples=25,
        stateful_step_count=20,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    machine.TestCase().runTest()  # type: ignore[attr-defined]  # a RuleBasedStateMachine made with type()
