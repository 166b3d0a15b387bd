"""A brute-force oracle for every cut strategy: for random histories (system heads, plain
assistant runs, interjections between a call and its result, empty messages, parallel calls
answered over several messages, late results, pending calls, mid-conversation system
messages, reasoning blocks, provider calls and results, server tools answered in their own
message, provider compaction), every cut is enumerated, each window is checked with the
public validator, and each strategy must give the best valid window its rule names:

- ``FitContextWindow``: the longest valid window within the budget; ``over_budget`` only
  when none is, and then the smallest window the rule allows (the newest round).
- ``KeepLastMessages(n)``: the longest valid window with at most ``n`` messages besides the
  pinned head; when none has, the shortest valid one, and ``TrimReport.over_count`` says how
  many messages it keeps past ``n``.
- ``KeepLastTurns(n)`` / ``TrimRounds(n)``: from the start of the n-th last turn / round, or
  the nearest valid cut before it (``over_count``: the messages kept before that start),
  after it only when there is none before.

A window is valid when ``validate`` finds nothing in it that it does not find in the input
(a pending call at the end dangles in both), it keeps the pinned head, it does not cut into
the newest round (the question or tool step being answered), and, when it drops anything, it
drops what the newest provider compaction summarised. And for every strategy (those, plus
``HeadAndTail``, ``Pipeline``, ``CacheStable``, the command line and a log or store as
input): a clean input gives a clean output.

``CTXTRIM_ORACLE_EXAMPLES`` sets the examples per test (the default runs several thousand in
all); ``-m slow`` with ``CTXTRIM_SLOW=1`` runs the nightly-size run of 20 times as many.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import (
    CacheStable,
    ContextStrategy,
    FitContextWindow,
    HeadAndTail,
    InvalidMessage,
    KeepLastMessages,
    KeepLastTurns,
    MemoryContextStore,
    Message,
    Pipeline,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    TrimRounds,
    TruncateToolOutputs,
    _core,
    repair,
    validate,
)
from ctxtrim.blocks import pair_sides

EXAMPLES = int(os.environ.get("CTXTRIM_ORACLE_EXAMPLES", "1200"))
SLOW = os.environ.get("CTXTRIM_SLOW") == "1"
#: pytest-timeout's 5 minutes fit the default run; a larger one gets a second per example.
LONG = pytest.mark.timeout(max(300, 20 * EXAMPLES if SLOW else EXAMPLES))


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------------------------
# Histories


def _words(n: int, tag: str) -> str:
    return (tag + " ") + "word " * n


class _Bytes:
    """Reads choices from hypothesis's bytes: one cheap draw per history (a composite
    strategy drawing each choice spent most of the test's time generating), and a shorter or
    smaller byte string shrinks to a simpler history."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def __call__(self, n: int) -> int:
        """A choice in ``range(n)``; 0 once the bytes run out."""
        if self.at >= len(self.data):
            return 0
        self.at += 1
        return self.data[self.at - 1] % n

    def more(self) -> bool:
        return self.at < len(self.data)


KINDS = [
    "user",
    "empty_user",
    "plain",
    "empty_assistant",
    "calls",
    "results",
    "results",
    "results_text",
    "system",
    "provider_call",
    "server_tool",
    "compaction",
]


def _history(data: bytes, max_messages: int = 14) -> list[Message]:
    """A conversation of up to ``max_messages`` messages built step by step, so that every
    result answers an earlier call (ids are unique); calls may stay pending at the end."""
    pick = _Bytes(data)
    out: list[Message] = []
    open_calls: list[tuple[str, str]] = []  # (id, kind): "tool" or "computer"
    counter = [0]

    def new_id(prefix: str) -> str:
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def size() -> int:
        return pick(41)

    for _ in range(pick(3)):
        out.append(Message.system(_words(size(), "sys")))
    if pick(6) == 1:
        out.append(Message.assistant(_words(size(), "greeting")))
    opening = pick(8)
    if opening < 5:
        out.append(Message.user(_words(size(), "task")))
    elif opening == 5:
        out.append(Message("user", ()))
    while len(out) < max_messages and pick.more():
        kind = KINDS[pick(len(KINDS))]
        if kind == "user":
            out.append(Message.user(_words(size(), "q")))
        elif kind == "empty_user":
            out.append(Message("user", ()))
        elif kind == "plain":
            blocks: list[object] = []
            if pick(4) == 1:
                blocks.append(ReasoningBlock("thinking " * size(), signature="sig"))
            blocks.append(TextBlock(_words(size(), "reply")))
            out.append(Message("assistant", tuple(blocks)))  # type: ignore[arg-type]
        elif kind == "empty_assistant":
            out.append(Message("assistant", ()))
        elif kind == "calls":
            blocks = []
            if pick(2):
                blocks.append(ReasoningBlock("plan " * size(), signature="sig"))
            if pick(2):
                blocks.append(TextBlock(_words(size(), "calling")))
            for _ in range(1 + pick(3)):
                cid = new_id("t")
                blocks.append(ToolUseBlock(cid, "grep", {"q": "x" * size()}))
                open_calls.append((cid, "tool"))
            out.append(Message("assistant", tuple(blocks)))  # type: ignore[arg-type]
        elif kind in ("results", "results_text") and open_calls:
            # Some of the open calls, in any order: parallel results spread over several
            # messages, results arriving after interjections.
            blocks = []
            for _ in range(1 + pick(3)):
                if not open_calls:
                    break
                cid, ckind = open_calls.pop(pick(len(open_calls)))
                if ckind == "tool":
                    blocks.append(ToolResultBlock(cid, "out " * size()))
                else:
                    blocks.append(
                        ProviderBlock(
                            "openai_responses",
                            {
                                "type": "computer_call_output",
                                "call_id": cid,
                                "output": {"type": "computer_screenshot", "file_id": "f"},
                            },
                        )
                    )
            if kind == "results_text":
                blocks.append(TextBlock(_words(size(), "and")))
            out.append(Message("user", tuple(blocks)))  # type: ignore[arg-type]
        elif kind == "system":
            out.append(Message.system(_words(size(), "note")))
        elif kind == "provider_call":
            cid = new_id("c")
            call = ProviderBlock(
                "openai_responses",
                {"type": "computer_call", "call_id": cid, "action": {"type": "click"}},
            )
            out.append(Message("assistant", (call,)))
            open_calls.append((cid, "computer"))
        elif kind == "server_tool":
            sid = new_id("srv")
            use = ProviderBlock(
                "anthropic",
                {"type": "server_tool_use", "id": sid, "name": "web_search", "input": {}},
            )
            result = ProviderBlock(
                "anthropic",
                {"type": "web_search_tool_result", "tool_use_id": sid, "content": []},
            )
            text = TextBlock(_words(size(), "found"))
            out.append(Message("assistant", (use, result, text)))
        elif kind == "compaction":
            block = ProviderBlock("anthropic", {"type": "compaction", "content": "summary"})
            out.append(Message("assistant", (block, TextBlock(_words(size(), "cont")))))
    return out


def histories(max_messages: int = 14) -> st.SearchStrategy[list[Message]]:
    """Random histories (see :func:`_history`), from one draw of bytes each."""
    return st.binary(min_size=max_messages, max_size=6 * max_messages).map(
        lambda b: _history(b, max_messages)
    )


# --------------------------------------------------------------------------------------------
# The oracle: every window, brute force


def _calls(m: Message) -> list[str]:
    return [i for side, i in pair_sides(m.content) if side == "call" and i is not None]


def _results(m: Message) -> list[str]:
    return [i for side, i in pair_sides(m.content) if side == "result" and i is not None]


def _is_compaction(m: Message) -> bool:
    return any(type(b) is ProviderBlock and b.spec.compaction for b in m.content)


@dataclass
class Oracle:
    """Every fact a rule needs, read brute force from the messages."""

    history: list[Message]
    pin_task: bool
    start_with_user: bool

    def __post_init__(self) -> None:
        h = self.history
        n = len(h)
        self.n = n
        self.tokens = [_core.message_tokens(m) for m in h]
        # A result answers the latest earlier message issuing its id.
        self.pairs: list[tuple[int, int]] = []
        for r, m in enumerate(h):
            for rid in _results(m):
                u = next((u for u in range(r - 1, -1, -1) if rid in _calls(h[u])), None)
                if u is not None:
                    self.pairs.append((u, r))
        self.safe = [not any(u < k <= r for u, r in self.pairs) for k in range(n + 1)]
        self.system_end = next((i for i, m in enumerate(h) if m.role != "system"), n)
        self.turns = [i for i, m in enumerate(h) if m.is_real_user]
        self.rounds = [i for i in range(n) if self._round_start(i)]
        task = self.turns[0] if (self.pin_task and self.turns) else None
        after = self.system_end if task is None else task + 1
        self.floor = next(k for k in range(after, n + 1) if self.safe[k])
        if task is None:
            self.head = list(range(self.system_end))
        elif any(r == task and u >= self.system_end for u, r in self.pairs):
            self.head = list(range(self.floor))  # the task answers calls before it
        else:
            self.head = [*range(self.system_end), task]
        # With no round at all, the newest message is the minimum a window keeps.
        newest = self.rounds[-1] if self.rounds else max(n - 1, 0)
        self.limit = max(self._safe_at_or_before(newest), self.floor)
        compactions = [i for i, m in enumerate(h) if _is_compaction(m)]
        self.compaction = compactions[-1] if compactions else None
        self.input_faults = self._faults(h) - {("non_user_first_turn", None)}
        self.valid = self._valid_cuts()

    def _round_start(self, i: int) -> bool:
        h = self.history
        m = h[i]
        if m.is_real_user:
            return True
        if m.role != "assistant":
            return False
        if i == 0:
            return True
        prev = h[i - 1]
        if prev.role != "assistant" and not prev.is_real_user:
            return True
        return prev.role == "assistant" and not _calls(prev)

    def _safe_at_or_before(self, k: int) -> int:
        return max(c for c in range(k + 1) if self.safe[c])

    def _faults(self, messages: Sequence[Message]) -> set[tuple[str, str | None]]:
        return {(v.kind, v.tool_use_id) for v in validate(messages)}

    def kept(self, k: int) -> list[int]:
        """Input indices of the window that keeps the head and ``messages[k:]``."""
        return [*self.head, *range(max(k, self.floor), self.n)]

    def window(self, k: int) -> list[Message]:
        return [self.history[i] for i in self.kept(k)]

    def window_tokens(self, k: int) -> int:
        return sum(self.tokens[i] for i in self.kept(k))

    def drops(self, k: int) -> bool:
        return len(self.kept(k)) < self.n

    def _valid_cuts(self) -> dict[int, bool]:
        """Which cuts give a valid window (cut ``floor`` or later; a cut that keeps every
        message is the input itself)."""
        h = self.history
        self.whole_ok = True
        cuts = range(self.floor, self.n + 1)
        # What a provider would reject, beyond what the input already has.
        lax = {k: self._faults(self.window(k)) - {("non_user_first_turn", None)} for k in cuts}
        base = {k: self.drops(k) and lax[k] <= self.input_faults for k in cuts}
        if self.start_with_user and not (self.pin_task and self.turns):
            # The suffix opens on a user turn (a real user message: not an empty one, nor a
            # system message before one); when there is none to open on, on the history's own
            # first message after its head if that is a user message (an empty one); else (an
            # autonomous loop) where the rule says.
            real = {k: base[k] and k < self.n and h[k].is_real_user for k in cuts}
            reach = max(self.limit, -1 if self.compaction is None else self.compaction)
            if any(ok for k, ok in real.items() if k <= reach):
                base = real
                # Keeping everything is the input as it is: valid if that opens on a user
                # message (an assistant-first input is trimmed to a user-first window).
                self.whole_ok = ("non_user_first_turn", None) not in self._faults(h)
            elif self.floor < self.n and self.history[self.floor].role == "user":
                base = {k: base[k] and k == self.floor for k in cuts}
        bound = self.limit
        lowest = self.floor
        c = self.compaction
        if c is not None and c >= self.floor:
            # What the newest compaction summarised goes first: the window starts at the
            # latest cut at or before it that is valid by the other rules.
            summarised = [k for k in cuts if k <= c and base[k]]
            if summarised:
                lowest = max(summarised)
                bound = max(bound, lowest)
        self.lowest = lowest
        whole = self.whole_ok
        self.base = {
            k: (whole and not self.drops(k)) or (base[k] and k <= self.limit) for k in cuts
        }
        return {
            k: (whole and not self.drops(k)) or (base[k] and lowest <= k <= bound) for k in cuts
        }

    def past_compaction(self, k: int) -> int:
        """A window that drops anything drops what the newest compaction summarised."""
        return max(k, self.lowest) if self.drops(k) else k

    def cuts(self) -> list[int]:
        return [k for k, ok in self.valid.items() if ok]

    # The rules ------------------------------------------------------------------------

    def budget(self, budget: int) -> tuple[list[int], bool]:
        """(kept input indices, over_budget)."""
        if sum(self.tokens) <= budget:
            return list(range(self.n)), False
        cuts = self.cuts()
        fitting = [k for k in cuts if self.window_tokens(k) <= budget]
        if fitting:
            return self.kept(min(fitting)), False
        return self.kept(max(cuts)), True

    def messages(self, count: int) -> tuple[list[int], int]:
        """(kept input indices, messages kept past ``count`` besides the head)."""
        if self.n - len(self.head) <= count:
            return list(range(self.n)), 0
        cuts = [k for k, ok in self.base.items() if ok]
        within = [k for k in cuts if len(self.kept(k)) - len(self.head) <= count]
        k = self.past_compaction(min(within) if within else max(cuts))
        return self.kept(k), max(0, len(self.kept(k)) - len(self.head) - count)

    def from_start(self, starts: list[int], count: int) -> tuple[list[int], int]:
        """KeepLastTurns / TrimRounds: (kept input indices, messages kept before the n-th
        last start besides the head)."""
        if len(starts) < count:
            return list(range(self.n)), 0
        target = max(starts[-count], self.floor)
        cuts = [k for k, ok in self.base.items() if ok]
        before = [k for k in cuts if k <= target]
        k = max(before) if before else min(k for k in cuts if k > target)
        k = self.past_compaction(k)
        kept = self.kept(k)
        return kept, sum(1 for i in kept if i not in self.head and i < target)


def _kept_indices(source: list[Message], out: list[Message]) -> list[int]:
    where = {id(m): i for i, m in enumerate(source)}
    assert all(id(m) in where for m in out), "a cut strategy made a message"
    return [where[id(m)] for m in out]


def _show(history: list[Message]) -> str:
    rows = []
    for i, m in enumerate(history):
        kinds = [
            type(b).__name__.replace("Block", "")
            + (f"({getattr(b, 'id', '') or getattr(b, 'tool_use_id', '')})" if b else "")
            for b in m.content
        ]
        rows.append(f"{i}: {m.role} {kinds} {_core.message_tokens(m)}t")
    return "\n".join(rows)


OPTIONS = [(True, True), (False, True)]


def _check_budget(
    history: list[Message], pin_task: bool, start_with_user: bool, fractions: list[float]
) -> None:
    oracle = Oracle(history, pin_task, start_with_user)
    total = sum(oracle.tokens)
    head = sum(oracle.tokens[i] for i in oracle.head)
    # Budgets around the head's tokens and fractions of the whole (one past it too).
    budgets = {max(1, head), head + 1, total + 1, *(max(1, int(total * f)) for f in fractions)}
    for budget in sorted(budgets):
        strategy = FitContextWindow(budget, pin_task=pin_task, start_with_user=start_with_user)
        out, report = strategy.apply(history, report=True)
        want, over = oracle.budget(budget)
        got = _kept_indices(history, out)
        assert (got, report.over_budget) == (want, over), (
            f"{strategy!r}\n{_show(history)}\ngot {got} over={report.over_budget}, "
            f"want {want} over={over}"
        )
        assert strategy(history) == out  # the plain-list path (the kept tail)
        assert strategy.apply(_core.MessageLog(history)) == out  # the log's index


def _check_counts(
    history: list[Message], pin_task: bool, start_with_user: bool, counts: list[int]
) -> None:
    oracle = Oracle(history, pin_task, start_with_user)
    for count in counts:
        cases: list[tuple[ContextStrategy, tuple[list[int], int]]] = [
            (
                KeepLastMessages(count, pin_task=pin_task, start_with_user=start_with_user),
                oracle.messages(count),
            ),
            (
                KeepLastTurns(count, pin_task=pin_task, start_with_user=start_with_user),
                oracle.from_start(oracle.turns, count),
            ),
            (
                TrimRounds(count, pin_task=pin_task, start_with_user=start_with_user),
                oracle.from_start(oracle.rounds, count),
            ),
        ]
        for strategy, (want, extra) in cases:
            out, report = strategy.apply(history, report=True)
            got = _kept_indices(history, out)
            assert (got, report.over_count) == (want, extra), (
                f"{strategy!r}\n{_show(history)}\ngot {got} over_count={report.over_count}, "
                f"want {want} over_count={extra}"
            )
            assert strategy(history) == out
            assert strategy.apply(_core.MessageLog(history)) == out


_FRACTIONS = st.lists(st.floats(0.05, 1.0), min_size=1, max_size=3)
_COUNTS = st.lists(st.integers(1, 9), min_size=1, max_size=3, unique=True)


def _budget_test(examples: int) -> Callable[..., None]:
    @_settings(examples)
    @given(histories(), st.sampled_from(OPTIONS), _FRACTIONS)
    def check(history: list[Message], options: tuple[bool, bool], fractions: list[float]) -> None:
        _check_budget(history, *options, fractions)

    return check


def _count_test(examples: int) -> Callable[..., None]:
    @_settings(examples)
    @given(histories(), st.sampled_from(OPTIONS), _COUNTS)
    def check(history: list[Message], options: tuple[bool, bool], counts: list[int]) -> None:
        _check_counts(history, *options, counts)

    return check


test_fit_context_window_keeps_the_longest_valid_window_within_budget = LONG(_budget_test(EXAMPLES))
test_count_strategies_keep_at_most_their_count_unless_pairs_force_more = LONG(_count_test(EXAMPLES))


@pytest.mark.slow
@LONG
@pytest.mark.skipif(not SLOW, reason="the nightly-size oracle run: set CTXTRIM_SLOW=1")
def test_every_cut_strategy_keeps_the_best_valid_window_nightly() -> None:
    _budget_test(EXAMPLES * 20)()
    _count_test(EXAMPLES * 20)()


# --------------------------------------------------------------------------------------------
# Never invalid from valid


def _every_strategy(history: list[Message]) -> list[ContextStrategy]:
    total = sum(_core.message_tokens(m) for m in history)
    out: list[ContextStrategy] = []
    for budget in {max(1, total // 4), max(1, total // 2), total + 1}:
        out.append(FitContextWindow(budget))
        out.append(FitContextWindow(budget, pin_task=False))
        out.append(Pipeline(TruncateToolOutputs(20), FitContextWindow(budget)))
        out.append(CacheStable(TruncateToolOutputs(20), high=budget + 1, low=budget // 2))
        out.append(CacheStable(FitContextWindow(budget + 1), high=budget + 1, low=budget // 3))
    for count in (1, 2, 4):
        out.append(KeepLastMessages(count))
        out.append(KeepLastMessages(count, pin_task=False))
        out.append(KeepLastTurns(count))
        out.append(KeepLastTurns(count, pin_task=False))
        out.append(TrimRounds(count))
        out.append(TrimRounds(count, pin_task=False))
        out.append(HeadAndTail(count - 1, count))
        out.append(HeadAndTail(count, 2 * count, pin_task=False))
    return out


def _check_clean(history: list[Message]) -> None:
    # Most random histories end on a pending call (or open with an assistant): ``repair``
    # makes each a clean one (the calls answered, a user turn first), so every example counts.
    history = repair(history)
    assert validate(history) == []
    for strategy in _every_strategy(history):
        out = strategy(history)
        assert validate(out) == [], f"{strategy!r}\n{_show(history)}\n{validate(out)}"
        assert strategy(out) == out, f"{strategy!r} is not idempotent\n{_show(history)}"
        store = MemoryContextStore(history)
        assert strategy.apply(store) == out


@LONG
@_settings(max(1, EXAMPLES // 4))
@given(histories())
def test_a_clean_history_always_trims_to_a_clean_one(history: list[Message]) -> None:
    _check_clean(history)


@pytest.mark.slow
@LONG
@pytest.mark.skipif(not SLOW, reason="the nightly-size oracle run: set CTXTRIM_SLOW=1")
def test_a_clean_history_always_trims_to_a_clean_one_nightly() -> None:
    @_settings(EXAMPLES * 5)
    @given(histories())
    def check(history: list[Message]) -> None:
        _check_clean(history)

    check()


@_settings(5)
@given(history=histories().map(repair).filter(lambda h: len(h) >= 4))
def test_the_command_line_trims_a_clean_history_to_a_clean_one(
    history: list[Message], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path: Path = tmp_path_factory.mktemp("oracle") / "history.json"
    path.write_text(json.dumps([m.to_dict() for m in history]))
    total = sum(_core.message_tokens(m) for m in history)
    for max_tokens in (max(1, total // 3), total + 1):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "ctxtrim", "trim", str(path), "--format", "ctxtrim"),
                *("--max-tokens", str(max_tokens), "-o", str(path.with_suffix(".out.json"))),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode in (0, 3), done.stderr
        out = [Message.from_dict(d) for d in json.loads(path.with_suffix(".out.json").read_text())]
        assert validate(out) == [], f"{_show(history)}\n{done.stderr}"
        expected = FitContextWindow(max_tokens)(history)
        assert [m.to_dict() for m in out] == [m.to_dict() for m in expected]


# --------------------------------------------------------------------------------------------
# What the oracle found: each minimal history, fixed


def _compaction(text: str = "cont") -> Message:
    block = ProviderBlock("anthropic", {"type": "compaction", "content": "summary"})
    return Message("assistant", (block, TextBlock(text)))


def _computer(side: str) -> ProviderBlock:
    if side == "call":
        return ProviderBlock(
            "openai_responses",
            {"type": "computer_call", "call_id": "c1", "action": {"type": "click"}},
        )
    return ProviderBlock(
        "openai_responses",
        {
            "type": "computer_call_output",
            "call_id": "c1",
            "output": {"type": "computer_screenshot", "file_id": "f"},
        },
    )


def test_over_budget_a_window_still_drops_what_the_compaction_summarised() -> None:
    """The rule's minimum (the newest round, from ``q``) kept every message, so the window
    kept what the compaction summarised too (all 3 kept); over budget it goes."""
    history = [Message.user("task"), Message.user("q"), _compaction()]
    out, report = FitContextWindow(1).apply(history, report=True)
    assert out == [history[0], history[2]]
    assert report.over_budget and report.dropped_compacted == 1


def test_a_window_never_opens_on_a_system_message_before_an_assistant_reply() -> None:
    """Without a pinned task the cut may not rest on a mid-conversation system message: the
    window's first non-system message would be the assistant's (``non_user_first_turn``)."""
    history = [
        Message.user("q1"),
        Message.assistant("a1 " * 30),
        Message.system("note"),
        Message.assistant("a2"),
    ]
    budget = sum(_core.message_tokens(m) for m in history[2:])
    strategy = FitContextWindow(budget, pin_task=False)
    out, report = strategy.apply(history, report=True)
    assert validate(out) == []
    assert out == history and report.over_budget  # no window that opens on q1 fits


def test_a_history_with_no_round_keeps_its_newest_message() -> None:
    """``[Message("user", ())]`` has no round (no real user message, no assistant): the
    window was empty (``[]``, "within budget"), a request no provider takes."""
    history = [Message("user", ())]
    out, report = FitContextWindow(1).apply(history, report=True)
    assert out == history and report.over_budget


def test_a_client_tools_output_does_not_open_a_turn() -> None:
    """``Message.is_real_user`` said yes to a message holding only a ``computer_call_output``
    (the core, the report's ``dropped_turns`` and ``ctxtrim stats`` disagreed with it)."""
    assert not Message("user", (_computer("output"),)).is_real_user
    document = ProviderBlock(
        "anthropic",
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
    )
    assert Message("user", (document,)).is_real_user


def test_keep_last_messages_keeps_at_most_its_count_besides_the_head() -> None:
    """An assistant greeting before the task is not in the head: with ``n=1`` the window kept
    all 3 messages (the greeting too) because ``len - n`` fell on the head's floor."""
    history = [Message.assistant("greeting"), Message.user("task"), Message("user", ())]
    out, report = KeepLastMessages(1).apply(history, report=True)
    assert out == history[1:] and report.over_count == 0


def test_keep_last_turns_keeps_the_turn_asked_for_when_a_pair_reaches_back() -> None:
    """The 2nd last turn (``q4``) stands between a call and its result and no user turn
    before it is a safe cut: the window was ``[q5]``, one turn; now the nearest valid window
    that holds both turns, the whole history, and ``over_count`` says it keeps 4 more."""
    history = [
        Message("user", ()),
        Message("assistant", (_computer("call"),)),
        Message.user("q2"),
        Message.user("q3"),
        Message.user("q4"),
        Message("user", (_computer("output"),)),
        Message.user("q5"),
    ]
    out, report = KeepLastTurns(2, pin_task=False).apply(history, report=True)
    assert out == history and report.over_count == 4


def test_a_window_moved_to_a_compaction_still_opens_on_a_user_turn() -> None:
    """Without a pinned task, moving the cut up to a compaction opened the window on the
    compaction's assistant message; it now stops at the user turn before it."""
    history = [
        Message.user("q1"),
        Message.assistant("a1 " * 30),
        Message.user("q2"),
        _compaction(),
        Message.user("q3"),
        Message.assistant("a3"),
    ]
    budget = sum(_core.message_tokens(m) for m in history[2:])
    out = FitContextWindow(budget, pin_task=False)(history)
    assert out == history[2:] and validate(out) == []


@_settings(max(1, EXAMPLES // 6))
@given(histories())
def test_a_clean_provider_payload_trims_to_a_clean_one(history: list[Message]) -> None:
    """The same property on what an agent holds as provider JSON (an Anthropic request body,
    Responses input items): every cut strategy takes it and gives the same format back."""
    from ctxtrim.formats import (
        from_anthropic,
        from_openai_responses,
        to_anthropic,
        to_openai_responses,
    )

    history = repair(history)
    total = sum(_core.message_tokens(m) for m in history)
    strategies: list[ContextStrategy] = [
        FitContextWindow(max(1, total // 2)),
        FitContextWindow(max(1, total // 3), pin_task=False),
        KeepLastMessages(2),
        KeepLastTurns(1, pin_task=False),
        TrimRounds(2),
    ]
    # The format is named: `{"messages": [...]}` without a system prompt is also a Chat body,
    # and detection reads it as one.
    formats = (
        ("anthropic", to_anthropic, from_anthropic),
        ("responses", to_openai_responses, from_openai_responses),
    )
    for name, write, read in formats:
        try:
            payload = write(history)
        except InvalidMessage:
            continue  # a block the format cannot carry (another provider's, a system note)
        for strategy in strategies:
            out = read(strategy(payload, format=name))
            assert validate(out) == [], f"{strategy!r} {name}\n{_show(history)}"
