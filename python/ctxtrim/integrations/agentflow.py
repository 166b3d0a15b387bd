"""10xScale Agentflow's ``MessageContextManager`` (continued as 10xGraph), and the strategy
behind its ``remove_tool_msgs``.

Change one import::

    from agentflow.core.state import MessageContextManager       # before
    from ctxtrim.integrations.agentflow import MessageContextManager  # after

``MessageContextManager(max_messages=10, remove_tool_msgs=False)`` with ``trim_context(state)``
and ``atrim_context(state)`` works on Agentflow's state as Agentflow's does: it reads and
assigns ``state.context`` (a list of Agentflow ``Message`` objects, read by duck typing:
``role`` ``"system"``/``"user"``/``"assistant"``/``"tool"`` and ``tools_calls``) and returns
the state. It imports nothing from Agentflow. Semantics, as Agentflow's:

- ``max_messages`` counts **user** messages; within the limit the context is left as it is
  (the same list object). Over it, the context becomes every system message (wherever it
  was, in order) followed by the messages from the ``max_messages``-th most recent user
  message on, system messages excepted. Unlike Agentflow's, the cut never separates a tool
  call from its results: when a user message stands between them (a person writing while
  the tool runs), the cut moves back to the previous user message.
- ``remove_tool_msgs=True`` first removes complete tool sequences
  (:func:`remove_tool_messages`), and that filtered list is kept even when no trimming is
  needed.

:class:`RemoveToolSequences` is the same removal as a ctxtrim strategy, composable in
:class:`ctxtrim.Pipeline`.

Mid-conversation system messages: ctxtrim's own strategies treat a system message that is
not at the start like any other message (kept where it is when it falls in the kept window,
dropped with the prefix otherwise; only *leading* system messages are pinned); this drop-in
keeps every one, moved to the front when trimming happens, as Agentflow does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ctxtrim.messages import Message
from ctxtrim.strategies import ContextStrategy

__all__ = ["MessageContextManager", "RemoveToolSequences", "remove_tool_messages"]

T = TypeVar("T")
S = TypeVar("S")


def _complete_sequences(
    messages: Sequence[T],
    is_call: Callable[[T], bool],
    is_result: Callable[[T], bool],
    is_answer: Callable[[T], bool],
) -> set[int]:
    """Indices of complete tool sequences' calls and results: a call message, one or more
    result messages right after it, then a final answer (kept, not in the set)."""
    drop: set[int] = set()
    i, n = 0, len(messages)
    while i < n:
        if is_call(messages[i]):
            j = i + 1
            while j < n and is_result(messages[j]):
                j += 1
            if j > i + 1 and j < n and is_answer(messages[j]):
                drop.update(range(i, j))
            i = j
        else:
            i += 1
    return drop


def _af_role(m: Any) -> str:
    role: Any = getattr(m, "role", None)
    value = getattr(role, "value", role)
    return str(value)


def _result_before_call(messages: Sequence[Any], cut: int) -> bool:
    """Whether ``messages[cut:]`` meets a tool result before any tool call: its call lies
    before ``cut``. (Agentflow's messages are read by role, as its manager reads them: a
    result answers the calls before it.)"""
    for m in messages[cut:]:
        role = _af_role(m)
        if role == "tool":
            return True
        if role == "assistant" and getattr(m, "tools_calls", None):
            return False
    return False


def remove_tool_messages(messages: list[Any]) -> list[Any]:
    """Agentflow's reducer on Agentflow messages: drop each complete tool sequence's call
    message and results (the final answer stays); incomplete sequences stay. Returns the
    same list when nothing is removed."""
    drop = _complete_sequences(
        messages,
        lambda m: _af_role(m) == "assistant" and bool(getattr(m, "tools_calls", None)),
        lambda m: _af_role(m) == "tool",
        lambda m: _af_role(m) == "assistant" and not getattr(m, "tools_calls", None),
    )
    return messages if not drop else [m for i, m in enumerate(messages) if i not in drop]


class RemoveToolSequences(ContextStrategy):
    """Remove complete tool sequences from a ctxtrim history: an assistant message with tool
    calls, the tool-result messages right after it that answer exactly those calls, and then
    an assistant answer without calls (the answer is kept). A call whose results are not yet
    followed by a final answer is left alone, so the output stays pair-safe."""

    def compact(self, messages: list[Message]) -> list[Message]:
        drop = _complete_sequences(
            messages,
            lambda m: m.role == "assistant" and m.has_tool_uses,
            lambda m: m.role == "user" and not m.is_real_user and bool(m.content),
            lambda m: m.role == "assistant" and not m.has_tool_uses,
        )
        if not drop:
            return messages
        # Keep any sequence whose results do not answer exactly its calls.
        keep: set[int] = set()
        i = 0
        ordered = sorted(drop)
        while i < len(ordered):
            start = ordered[i]
            j = i + 1
            while (
                j < len(ordered)
                and ordered[j] == ordered[j - 1] + 1
                and not messages[ordered[j]].has_tool_uses
            ):
                j += 1
            seq = ordered[i:j]
            calls = {b.id for b in messages[start].tool_uses}
            results = {r.tool_use_id for k in seq[1:] for r in messages[k].tool_results}
            if calls != results:
                keep.update(seq)
            i = j
        drop -= keep
        if not drop:
            return messages
        return [m for i, m in enumerate(messages) if i not in drop]

    def __repr__(self) -> str:
        return "RemoveToolSequences()"


class MessageContextManager:
    """Agentflow's ``MessageContextManager``: keep the last ``max_messages`` user messages
    (and what follows each), every system message first."""

    def __init__(self, max_messages: int = 10, remove_tool_msgs: bool = False) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int):
            raise TypeError(f"max_messages must be an int, got {type(max_messages).__name__}")
        if max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, got {max_messages}")
        if not isinstance(remove_tool_msgs, bool):
            raise TypeError("remove_tool_msgs must be a bool")
        self.max_messages = max_messages
        self.remove_tool_msgs = remove_tool_msgs

    def trim_messages(self, messages: list[Any]) -> list[Any]:
        """The trimmed list; ``messages`` itself when nothing changed."""
        if self.remove_tool_msgs:
            messages = remove_tool_messages(messages)
        users = [i for i, m in enumerate(messages) if _af_role(m) == "user"]
        if len(users) <= self.max_messages:
            return messages
        k = len(users) - self.max_messages
        # A user message can stand between a tool call and its result (a person writing
        # while the tool runs): a cut there would orphan the result, so it moves back to
        # the previous user message until none is cut off from its call.
        while k >= 0 and _result_before_call(messages, users[k]):
            k -= 1
        if k < 0:  # every user message stands after an unanswered call: keep them all
            return messages
        cut = users[k]
        system = [m for m in messages if _af_role(m) == "system"]
        return system + [m for m in messages[cut:] if _af_role(m) != "system"]

    def trim_context(self, state: S) -> S:
        """Trim ``state.context`` in place and return the state."""
        context = getattr(state, "context", None)
        if context is None:
            return state
        trimmed = self.trim_messages(list(context) if not isinstance(context, list) else context)
        if trimmed is not context:
            state.context = trimmed  # type: ignore[attr-defined]
        return state

    async def atrim_context(self, state: S) -> S:
        """:meth:`trim_context` for async callers (Agentflow's graph calls this one)."""
        return self.trim_context(state)

    def __repr__(self) -> str:
        return (
            f"MessageContextManager(max_messages={self.max_messages}, "
            f"remove_tool_msgs={self.remove_tool_msgs})"
        )
