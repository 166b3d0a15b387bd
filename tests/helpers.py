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


def safe_cuts(messages: Sequence[Message]) -> list[bool]:
    """``out[i]``: keeping ``messages[i:]`` separates no call from a result that answers it.

    The oracle the Rust index is checked against, written the obvious way: a result answers
    the latest call with its id that comes before it, and every cut in ``(call, result]``
    would separate them.
    """
    safe = [True] * (len(messages) + 1)
    latest: dict[str, int] = {}
    for j, m in enumerate(messages):
        for r in m.tool_results:
            u = latest.get(r.tool_use_id)
            if u is not None:
                for i in range(u + 1, j + 1):
                    safe[i] = False
        for use in m.tool_uses:
            latest[use.id] = j
    return safe
