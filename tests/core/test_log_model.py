"""`MessageLog` against a plain-list model: appends are queued and indexed lazily, reads of a
log of 64 messages or more go through a mirror list shared by snapshots and forks, shorter
logs' reads are built from their entries — none of which may ever show. `grow` moves logs
across that length both ways (rewrites and `clear` bring them back under it), and far enough
past it that a mirror starts after the first message (a short `tail` of a long log copies
only the newer part, which a read from further back then rebuilds)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from ctxtrim import Message, MessageLog, _core

MESSAGES = st.builds(Message.user, st.text(max_size=20)) | st.builds(
    Message.assistant, st.text(max_size=20)
)


class LogModel(RuleBasedStateMachine):
    """Each log is paired with the list it must equal; snapshots must never change."""

    logs = Bundle("logs")

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[MessageLog, list[Message]]] = []

    @rule(target=logs, messages=st.lists(MESSAGES, max_size=5))
    def new_log(self, messages: list[Message]) -> int:
        self.pairs.append((MessageLog(messages), list(messages)))
        return len(self.pairs) - 1

    @rule(i=logs, message=MESSAGES)
    def append(self, i: int, message: Message) -> None:
        log, model = self.pairs[i]
        if not log.read_only:
            log.append(message)
            model.append(message)

    @rule(i=logs, messages=st.lists(MESSAGES, min_size=1, max_size=3))
    def append_and_read(self, i: int, messages: list[Message]) -> None:
        # No query indexes the appends in between (the invariant does, after each rule), so
        # the mirror catches up from the queue, and from both the log and the queue at first.
        log, model = self.pairs[i]
        if not log.read_only:
            for message in messages:
                log.append(message)
                model.append(message)
                assert log.tail(2) == model[-2:]
            assert log.to_list() == model

    @rule(i=logs, messages=st.lists(MESSAGES, max_size=4))
    def extend(self, i: int, messages: list[Message]) -> None:
        log, model = self.pairs[i]
        if not log.read_only:
            log.extend(messages)
            model.extend(messages)

    @rule(i=logs, message=MESSAGES, n=st.integers(1, 200))
    def grow(self, i: int, message: Message, n: int) -> None:
        log, model = self.pairs[i]
        if not log.read_only:
            log.extend([message] * n)
            model.extend([message] * n)

    @rule(target=logs, i=logs, read_only=st.booleans())
    def copy(self, i: int, read_only: bool) -> int:
        log, model = self.pairs[i]
        self.pairs.append((log.snapshot() if read_only else log.fork(), list(model)))
        return len(self.pairs) - 1

    @rule(i=logs, start=st.integers(0, 150), end=st.none() | st.integers(0, 150))
    def read(self, i: int, start: int, end: int | None) -> None:
        log, model = self.pairs[i]
        assert log.to_list(start, end) == model[start:end]

    @rule(i=logs, limit=st.none() | st.integers(0, 100))
    def tail(self, i: int, limit: int | None) -> None:
        log, model = self.pairs[i]
        expected = model if limit is None else model[max(0, len(model) - limit) :]
        assert log.tail(limit) == expected

    @rule(i=logs)
    def index(self, i: int) -> None:
        log, model = self.pairs[i]
        for j in (0, -1, len(model) // 2):
            if model:
                assert log[j] is model[j]

    @rule(i=logs, upto=st.integers(0, 100))
    def compact(self, i: int, upto: int) -> None:
        log, model = self.pairs[i]
        if not log.read_only and upto <= len(model):
            summary = Message.user("summary")
            log.replace_prefix(upto, [summary], log.generation)
            model[:upto] = [summary]

    @rule(i=consumes(logs))
    def clear(self, i: int) -> None:
        log, model = self.pairs[i]
        if not log.read_only:
            log.clear()
            model.clear()

    @invariant()
    def every_log_matches_its_model(self) -> None:
        for log, model in self.pairs:
            assert len(log) == len(model)
            assert log.token_counts() == [_core.message_tokens(m) for m in model]
            assert log.total_tokens == sum(log.token_counts())


TestLogModel = LogModel.TestCase
TestLogModel.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
