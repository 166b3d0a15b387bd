"""When to act: thresholds on tokens, messages, user turns or a fraction of the model's
window, combined with "any" (a list) or "all" (a dict), as LangChain's middleware says them.

A *trigger spec* is:

* a dict of conditions that must **all** hold: ``{"tokens": 80_000}``,
  ``{"fraction": 0.8}``, ``{"messages": 200, "turns": 10}``;
* a ``(kind, value)`` pair, one condition: ``("fraction", 0.8)`` (LangChain's
  ``ContextSize``);
* a list of dicts or pairs of which **any** fires: ``[("tokens", 100_000),
  {"messages": 500}]``.

Kinds: ``"tokens"`` (the history's tokens reach the value), ``"fraction"`` (they reach that
share of the model's context window: a number in (0, 1], turned into tokens once, so the
window must be known), ``"messages"`` (the history holds that many messages), ``"turns"``
(that many user turns: real user messages, not tool results). Each fires when the count is
at least the value. A bad spec is an error naming what is wrong (the caller's class:
``InvalidStrategy`` for a strategy, ``CompactionSettingsError`` for ``AutoCompactStore``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Trigger", "TriggerSpec"]

#: The kinds of condition.
KINDS = ("tokens", "fraction", "messages", "turns")

TriggerSpec = Any  # dict | tuple | list of them: see the module docstring


@dataclass(frozen=True, slots=True)
class Trigger:
    """A parsed trigger: ``any_of`` alternatives, each ``all_of`` its ``(kind, threshold)``
    conditions, ``"fraction"`` already turned into ``"tokens"``."""

    any_of: tuple[tuple[tuple[str, int], ...], ...]
    spec: str

    @classmethod
    def parse(cls, spec: TriggerSpec, *, window: int | None, error: type[Exception]) -> Trigger:
        """The trigger ``spec`` says; ``window`` (tokens) turns fractions into tokens;
        ``error`` is raised, naming the problem, for a bad spec."""
        if isinstance(spec, list):
            if not spec:
                raise error("trigger: an empty list never fires; give at least one condition")
            groups = tuple(_group(item, window, error) for item in spec)
        else:
            groups = (_group(spec, window, error),)
        return cls(groups, repr(spec))

    @property
    def needs_turns(self) -> bool:
        return any(kind == "turns" for group in self.any_of for kind, _ in group)

    @property
    def needs_messages(self) -> bool:
        return any(kind == "messages" for group in self.any_of for kind, _ in group)

    @property
    def min_tokens(self) -> int | None:
        """The smallest token threshold of any alternative (None: none counts tokens)."""
        values = [v for group in self.any_of for kind, v in group if kind == "tokens"]
        return min(values) if values else None

    def fired(self, *, tokens: int, messages: int = 0, turns: int = 0) -> bool:
        """Whether any alternative has all its conditions met by these counts."""
        counts = {"tokens": tokens, "messages": messages, "turns": turns}
        return any(all(counts[kind] >= v for kind, v in group) for group in self.any_of)


def _group(item: object, window: int | None, error: type[Exception]) -> tuple[tuple[str, int], ...]:
    if isinstance(item, tuple):
        if len(item) != 2:
            raise error(f"trigger: a condition pair is (kind, value), got {item!r}")
        pairs: Sequence[tuple[object, object]] = [item]
    elif isinstance(item, Mapping):
        if not item:
            raise error("trigger: an empty dict never fires; give at least one condition")
        pairs = list(item.items())
    else:
        raise error(
            f"trigger must be a dict of conditions (all must hold), a (kind, value) pair or "
            f"a list of them (any may fire), got {item!r}"
        )
    out: list[tuple[str, int]] = []
    for kind, value in pairs:
        if kind not in KINDS:
            raise error(f"trigger: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        if kind == "fraction":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
                raise error(f"trigger: fraction must be a number in (0, 1], got {value!r}")
            if window is None:
                raise error(
                    "trigger: a fraction needs the model's context window: give model= "
                    "(looked up in ctxtrim.models) or context_window="
                )
            out.append(("tokens", max(1, int(window * value))))
        else:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise error(f"trigger: {kind} must be an int >= 0, got {value!r}")
            out.append((str(kind), value))
    return tuple(out)
