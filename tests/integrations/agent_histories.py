"""Generated agent histories for comparing ctxtrim's drop-ins with the frameworks they
replace (tests/integrations/test_integration_vs_originals.py).

:func:`agent_histories` draws provider-valid ctxtrim histories made of what agent loops
produce: an optional system prompt, a task (possibly empty), then steps — plain assistant
replies (runs of them: a chat UI posting several replies, a model thinking out loud), new
user questions, tool rounds with one to three parallel calls whose results come in one or
several messages, a person interjecting while a tool runs (a user message between a call
and its result), a result that arrives after another assistant reply, and empty messages.
Every history validates clean (``ctxtrim.validate``); no call is left pending.

:class:`Converted` holds one history in a framework's own message types together with the
ctxtrim message each framework object stands for, so a framework's output can be judged by
``ctxtrim.validate`` on what it kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from ctxtrim import Message, ToolResultBlock, ToolUseBlock, validate

__all__ = ["PAIR_KINDS", "Converted", "agent_histories", "problems"]

#: What pair safety alone forbids (a window starting on an assistant message is left out).
PAIR_KINDS = frozenset({"orphan_result", "result_before_call", "dangling_call", "duplicate_result"})

_TEXTS = st.sampled_from(
    [
        "",
        "ok",
        "Let me look at the file first.",
        "Done: the bug was an off-by-one in the parser's loop bounds.",
        "What about the 中文 input? " * 3,
        "x" * 160,
    ]
)


@st.composite
def agent_histories(draw: st.DrawFn, max_steps: int = 7) -> list[Message]:
    """A provider-valid agent history (see the module docstring)."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system(draw(_TEXTS) or "sys"))
    out.append(Message.user(draw(_TEXTS)) if draw(st.integers(0, 5)) else Message("user", ()))
    calls = 0
    for _ in range(draw(st.integers(0, max_steps))):
        kind = draw(st.sampled_from(["text", "text", "run", "user", "tools", "tools", "late"]))
        if kind == "text":
            out.append(Message.assistant(draw(_TEXTS)))
        elif kind == "run":  # several plain replies in a row, one possibly empty
            for _ in range(draw(st.integers(2, 3))):
                empty = draw(st.integers(0, 4)) == 0
                out.append(Message("assistant", ()) if empty else Message.assistant(draw(_TEXTS)))
        elif kind == "user":
            empty = draw(st.integers(0, 4)) == 0
            out.append(Message("user", ()) if empty else Message.user(draw(_TEXTS)))
        else:
            k = draw(st.integers(1, 3))
            ids = [f"c{calls + j}" for j in range(k)]
            calls += k
            uses = [(i, "read_file", {"path": f"{i}.py"}) for i in ids]
            out.append(Message.assistant(draw(_TEXTS), tool_uses=uses))
            if kind == "late":  # another reply before the result arrives
                out.append(Message.assistant(draw(_TEXTS)))
            # Results in one message or spread over several, in order.
            split = sorted(draw(st.sets(st.integers(1, k - 1), max_size=k - 1))) if k > 1 else []
            bounds = [0, *split, k]
            for a, b in itertools.pairwise(bounds):
                if draw(st.integers(0, 4)) == 0:  # a person writes while the tool runs
                    out.append(Message.user(draw(_TEXTS) or "wait"))
                out.append(Message.tool_results(*[(i, draw(_TEXTS) or "out") for i in ids[a:b]]))
            if draw(st.booleans()):
                out.append(Message.assistant(draw(_TEXTS)))
    assert validate(out) == [], out
    return out


@dataclass
class Converted:
    """A history in a framework's types: ``items`` (the framework's objects, in order) and,
    per object (by identity), the ctxtrim message it stands for and its index in ``items``."""

    items: list[Any] = field(default_factory=list)
    meaning: dict[int, Message] = field(default_factory=dict)
    index: dict[int, int] = field(default_factory=dict)

    def add(self, item: Any, meaning: Message) -> None:
        self.index[id(item)] = len(self.items)
        self.items.append(item)
        self.meaning[id(item)] = meaning

    def ctxtrim(
        self, out: Sequence[Any], other: Callable[[Any], Message] | None = None
    ) -> list[Message]:
        """What ``out`` (objects of :attr:`items`, plus new ones ``other`` reads) means."""
        res = []
        for item in out:
            m = self.meaning.get(id(item))
            if m is None:
                assert other is not None, f"not from the input: {item!r}"
                m = other(item)
            res.append(m)
        return res

    def positions(self, out: Sequence[Any]) -> list[int]:
        """Input positions of the objects of ``out`` that came from the input."""
        return [self.index[id(x)] for x in out if id(x) in self.index]


def problems(messages: Sequence[Message], kinds: frozenset[str] | None = None) -> list[str]:
    """``ctxtrim.validate``'s violation kinds in ``messages`` (only ``kinds`` if given)."""
    return [v.kind for v in validate(list(messages)) if kinds is None or v.kind in kinds]


def tool_uses(m: Message) -> list[ToolUseBlock]:
    return list(m.tool_uses)


def tool_results(m: Message) -> list[ToolResultBlock]:
    return [r for r in m.tool_results if isinstance(r, ToolResultBlock)]
