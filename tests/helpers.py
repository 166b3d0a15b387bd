"""Small builders and brute-force oracles shared by the tests."""

from __future__ import annotations

from collections.abc import Sequence

from ctxtrim import Message, ToolResultBlock


def call(text: str, *ids: str) -> Message:
    """An assistant message issuing tool calls ``ids`` (in parallel)."""
    return Message.assistant(text, tool_uses=[(i, "search", {"q": i}) for i in ids])


def results(*ids: str) -> Message:
    """A user message answering ``ids``."""
    return Message.tool_results(*[ToolResultBlock(i, f"result of {i}") for i in ids])


def agent_session(rounds: int, *, system: bool = True) -> list[Message]:
    """A task followed by ``rounds`` tool rounds and a final answer."""
    out = [Message.system("You are terse.")] if system else []
    out.append(Message.user("Find the bug."))
    for r in range(rounds):
        out += [call(f"step {r}", f"t{r}"), results(f"t{r}")]
    out.append(Message.assistant("Found it."))
    return out


def brute_safe(messages: Sequence[Message], i: int) -> bool:
    """Keeping ``messages[i:]`` separates no call from a result that answers it.

    A result answers the latest call with its id that comes before it.
    """
    latest: dict[str, int] = {}
    for j, m in enumerate(messages):
        for r in m.tool_results:
            u = latest.get(r.tool_use_id)
            if u is not None and u < i <= j:
                return False
        for use in m.tool_uses:
            latest[use.id] = j
    return True
