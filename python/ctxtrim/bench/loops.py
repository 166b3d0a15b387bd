"""The agent loop: per-turn cost of keeping a history and fitting an 8k-token window.

An agent server keeps the whole history and, before every model call, asks for the
request view that fits the budget (:data:`~ctxtrim.bench.history.BUDGET`). Each
implementation is a :class:`Loop` holding the history: ``add`` appends one turn's four
messages, ``fit`` produces the view. Two workloads:

- **agent loop, mean per turn** (``LOOP``): T turns from an empty history (the pinned head
  only). Peers whose fit is O(n) are timed on ``plan.loop_samples`` evenly spaced turns of
  the same loop (the untimed turns still append); ctxtrim on every turn, because its
  appends are indexed at the next fit and sampling would charge the timed turns with the
  untimed ones' indexing.
- **per-turn cost at n messages** (``PER_TURN``): the median of ``plan.per_turn_samples``
  turns on a history of n messages; a turn under a millisecond is measured on
  ``plan.repeat`` fresh histories and the best median kept.

Count-based peers (agentix ``TrimRounds``, autogen ``Buffered``) get caps that come out at
about the budget on this history; autogen ``TokenLimited`` recounts the whole list after
every pop (quadratic) and is skipped above :data:`QUADRATIC_LIMIT` messages, saying so.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any

from ctxtrim import MemoryContextStore, Message, MessageLog

from . import peers
from .history import BUDGET, Turn, agent_history, ctxtrim_head, ctxtrim_turn
from .plan import Plan
from .report import LOOP, PER_TURN, Row
from .timing import Progress, drive, spread, time_turns

__all__ = [
    "BUFFER_FOR_BUDGET",
    "QUADRATIC_LIMIT",
    "ROUNDS_FOR_BUDGET",
    "CtxtrimLog",
    "CtxtrimStrategy",
    "Factory",
    "Loop",
    "bench_loops",
    "loop_factories",
]

ROUNDS_FOR_BUDGET = 80
"""agentix ``TrimRounds`` keeps rounds, not tokens; 80 rounds is about the 8k budget here."""
BUFFER_FOR_BUDGET = 160
"""autogen ``Buffered`` keeps messages, not tokens; 160 messages is about the 8k budget here."""
QUADRATIC_LIMIT = 1_200
"""autogen ``TokenLimited`` pops one message from the middle and recounts the whole list after
each pop: quadratic. Past this many messages one fit takes seconds, so it is skipped."""


class Loop:
    """One implementation of the agent loop: holds the full history, appends one turn,
    produces the request view within the budget. ``stateful`` loops must fit every turn
    (the fit changes what they keep); the others may skip the fit on untimed turns."""

    name = ""
    stateful = False

    def add(self, turn: Any) -> None:
        raise NotImplementedError

    def fit(self) -> object:
        raise NotImplementedError


Factory = Callable[[int], tuple[Loop, list[Any]]]
"""``factory(n)``: a loop whose history already holds the first ``n`` turns, and the list of
the later turns' messages, all converted before timing starts."""


class CtxtrimLog(Loop):
    name = "ctxtrim MessageLog.fit_budget"

    def __init__(self, head: list[Message], history: list[Message]) -> None:
        self.log = MessageLog(head + history)
        self.head = head
        self.head_tokens = self.log.tokens(0, len(head))

    def add(self, turn: list[Message]) -> None:
        append = self.log.append
        for m in turn:
            append(m)

    def fit(self) -> object:
        cut, _, _ = self.log.fit_budget(BUDGET - self.head_tokens, floor=len(self.head))
        return self.head + self.log.to_list(cut)


class CtxtrimStrategy(Loop):
    name = "ctxtrim FitContextWindow"

    def __init__(self, head: list[Message], history: list[Message]) -> None:
        strategies = importlib.import_module("ctxtrim.strategies")
        self.store = MemoryContextStore(head + history)
        self.strategy = strategies.FitContextWindow(BUDGET)

    def add(self, turn: list[Message]) -> None:
        append = self.store.append
        for m in turn:
            drive(append(m))

    def fit(self) -> object:
        return self.strategy.apply(self.store.log)


class _ListLoop(Loop):
    """A peer whose history is a plain list and whose fit is a function of that list."""

    def __init__(self, name: str, history: list[Any], fit: Callable[[list[Any]], Any]) -> None:
        self.name = name
        self.history = history
        self._fit = fit

    def add(self, turn: list[Any]) -> None:
        self.history.extend(turn)

    def fit(self) -> object:
        return self._fit(self.history)


class _CarryForward(Loop):
    """agentix's own loop: the compacted list replaces the history (dropped rounds are gone
    for the rest of the run), so each fit only sees about a budget's worth of messages."""

    stateful = True

    def __init__(self, name: str, history: list[Any], strategy: Any) -> None:
        self.name = name
        self.history = history
        self.strategy = strategy

    def add(self, turn: list[Any]) -> None:
        self.history.extend(turn)

    def fit(self) -> object:
        self.history = list(drive(self.strategy.compact(self.history)))
        return self.history


class _AutogenLoop(Loop):
    def __init__(self, name: str, context: Any) -> None:
        self.name = name
        self.context = context

    def add(self, turn: list[Any]) -> None:
        add = self.context.add_message
        for m in turn:
            drive(add(m))

    def fit(self) -> object:
        return drive(self.context.get_messages())


def _flat(chunks: Sequence[list[Any]]) -> list[Any]:
    return [m for c in chunks for m in c]


def loop_factories(turns: Sequence[Turn]) -> list[tuple[str, Factory | None, str]]:
    """``(name, factory, skip reason)`` per implementation; the factory is None (and the
    reason says why) for a peer that is not installed."""
    out: list[tuple[str, Factory | None, str]] = []
    ours = [ctxtrim_turn(t) for t in turns]
    head = ctxtrim_head()
    out.append((CtxtrimLog.name, lambda n: (CtxtrimLog(head, _flat(ours[:n])), ours[n:]), ""))
    out.append(
        (
            CtxtrimStrategy.name,
            lambda n: (CtxtrimStrategy(head, _flat(ours[:n])), ours[n:]),
            "",
        )
    )

    if peers.has("agentix.context"):
        ctx = importlib.import_module("agentix.context")
        ahead, aturns = peers.agentix_messages(turns)
        fit_cw = ctx.FitContextWindow(BUDGET)
        trim = ctx.TrimRounds(ROUNDS_FOR_BUDGET)

        def agentix(name: str, compact: Callable[[list[Any]], Any]) -> Factory:
            return lambda n: (
                _ListLoop(name, ahead + _flat(aturns[:n]), lambda h: drive(compact(h))),
                aturns[n:],
            )

        carried = "agentix FitContextWindow, trimmed list carried"
        out.append(
            ("agentix FitContextWindow", agentix("agentix FitContextWindow", fit_cw.compact), "")
        )
        out.append(("agentix TrimRounds", agentix("agentix TrimRounds", trim.compact), ""))
        out.append(
            (
                carried,
                lambda n: (_CarryForward(carried, ahead + _flat(aturns[:n]), fit_cw), aturns[n:]),
                "",
            )
        )
    else:
        out.append(("agentix FitContextWindow", None, "agentix-toolkit not installed"))

    if peers.has("langchain_core.messages.utils"):
        utils = importlib.import_module("langchain_core.messages.utils")
        lhead, lturns = peers.langchain_messages(turns)
        counter = utils.count_tokens_approximately

        def lc_fit(h: list[Any]) -> Any:
            return utils.trim_messages(
                h,
                max_tokens=BUDGET,
                token_counter=counter,
                strategy="last",
                include_system=True,
                start_on="human",
            )

        out.append(
            (
                "LangChain trim_messages",
                lambda n: (
                    _ListLoop("LangChain trim_messages", lhead + _flat(lturns[:n]), lc_fit),
                    lturns[n:],
                ),
                "",
            )
        )
    else:
        out.append(("LangChain trim_messages", None, "langchain-core not installed"))

    if peers.has("autogen_core.model_context"):
        mc = importlib.import_module("autogen_core.model_context")
        ghead, gturns = peers.autogen_messages(turns)
        client = peers.chars4_client()

        def autogen(name: str, context: Callable[[list[Any]], Any]) -> Factory:
            return lambda n: (
                _AutogenLoop(name, context(ghead + _flat(gturns[:n]))),
                gturns[n:],
            )

        out.append(
            (
                "autogen Buffered",
                autogen(
                    "autogen Buffered",
                    lambda initial: mc.BufferedChatCompletionContext(
                        buffer_size=BUFFER_FOR_BUDGET, initial_messages=initial
                    ),
                ),
                "",
            )
        )
        out.append(
            (
                "autogen TokenLimited",
                autogen(
                    "autogen TokenLimited",
                    lambda initial: mc.TokenLimitedChatCompletionContext(
                        client, token_limit=BUDGET, initial_messages=initial
                    ),
                ),
                "",
            )
        )
    else:
        out.append(("autogen Buffered", None, "autogen-core not installed"))
    return out


def bench_loops(plan: Plan, rows: list[Row], progress: Progress) -> None:
    """Append the ``LOOP`` and ``PER_TURN`` rows of every implementation to ``rows``."""
    max_turns = max(max(plan.loop_turns), max(plan.per_turn_sizes) // 4 + plan.per_turn_samples)
    turns = agent_history(max_turns)
    for name, factory, reason in loop_factories(turns):
        for t in plan.loop_turns:
            size = f"{t:,} turns"
            if factory is None:
                rows.append(Row(LOOP, size, name, None, note=reason))
            elif name == "autogen TokenLimited" and 4 * t > QUADRATIC_LIMIT:
                note = f"quadratic, one fit at {4 * t:,} messages takes seconds"
                rows.append(Row(LOOP, size, name, None, note=note))
            else:
                loop, later = factory(0)
                timed = spread(t, plan.loop_samples if not loop.stateful else t)
                if name in (CtxtrimLog.name, CtxtrimStrategy.name):
                    timed = set(range(t))  # every turn: see the module docs
                rows.append(Row(LOOP, size, name, time_turns(loop, later[:t], timed)))
            progress.step(f"{LOOP} {size} {name}")
        for n in plan.per_turn_sizes:
            size = f"{n:,}"
            if factory is None:
                rows.append(Row(PER_TURN, size, name, None, note=reason))
            elif name == "autogen TokenLimited" and n > QUADRATIC_LIMIT:
                note = "quadratic, one fit takes seconds"
                rows.append(Row(PER_TURN, size, name, None, note=note))
            elif "carried" in name:
                note = "keeps only the trimmed list, so n never grows"
                rows.append(Row(PER_TURN, size, name, None, note=note))
            else:
                k = plan.per_turn_samples if "TokenLimited" not in name else 2
                best = math.inf
                # A turn under a millisecond is at the mercy of a noisy neighbour: keep the
                # best of `repeat` fresh histories (slower turns, measured once, are not).
                for _ in range(plan.repeat):
                    loop, later = factory(n // 4)
                    median = time_turns(loop, later[:k], set(range(k)), median=True)
                    del loop, later
                    best = min(best, median)
                    if median > 1e-3:
                        break
                rows.append(Row(PER_TURN, size, name, best))
            progress.step(f"{PER_TURN} {size} {name}")
