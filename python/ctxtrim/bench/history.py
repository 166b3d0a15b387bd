"""The agent history every side of a comparison gets: deterministic turns in neutral form.

:func:`agent_history` makes ``turns`` agent-loop turns from a fixed seed (a user request,
one tool call, its ~400-character result, the assistant's answer), the same text on every
machine. Each library converts them to its own message types (:mod:`ctxtrim.bench.peers`
for the peers, :func:`ctxtrim_turn` here for ctxtrim) once, before any clock starts.
Nothing here is timed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ctxtrim import Message

__all__ = [
    "BUDGET",
    "SYSTEM_PROMPT",
    "TASK",
    "TOOLS",
    "WORDS",
    "Turn",
    "agent_history",
    "ctxtrim_head",
    "ctxtrim_messages",
    "ctxtrim_turn",
    "sentence",
]

BUDGET = 8_000
"""The token budget of the agent-loop workloads (an 8k-token context window)."""

WORDS = (
    "the build fails because the linker cannot find the symbol that the new module exports "
    "so we should check which version of the crate is pinned in the lock file and whether "
    "the feature flag is enabled for release builds before we change anything else in the "
    "configuration test suite passes locally but the server returns an error when the "
    "request body is larger than the limit set by the proxy which drops the connection "
    "after thirty seconds while the worker is still reading the upload from disk cache "
    "index query returns stale rows after a migration because the schema version was not "
    "bumped and the old plan is reused by the pool for every new session"
).split()
"""The vocabulary of the generated sentences."""

TOOLS = ("read_file", "grep", "run_tests", "http_get", "list_dir")
SYSTEM_PROMPT = (
    "You are a careful coding agent. Use the tools to inspect the repository, explain what "
    "you found, and keep answers short."
)
TASK = "The nightly build is red since yesterday. Find out why and propose a fix."


@dataclass(frozen=True, slots=True)
class Turn:
    """One agent-loop turn in library-neutral form: a user request, one tool call, its
    result (~400 characters) and the assistant's answer."""

    user: str
    call_id: str
    tool: str
    args: dict[str, Any]
    result: str
    answer: str


def sentence(rng: random.Random, words: int) -> str:
    """A capitalised sentence of ``words`` words from :data:`WORDS`."""
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _tool_result(rng: random.Random, tool: str, turn: int) -> str:
    """About 400 characters of realistic tool output (code, grep hits, JSON, test logs)."""
    if tool == "read_file":
        body = "\n".join(
            f'    let v{k} = config.get("{rng.choice(WORDS)}").unwrap_or({rng.randint(0, 99)});'
            for k in range(5)
        )
        out = f"fn load_{turn}(config: &Config) -> Result<()> {{\n{body}\n    Ok(())\n}}\n"
    elif tool == "grep":
        out = "\n".join(
            f"src/{rng.choice(WORDS)}.rs:{rng.randint(1, 900)}: {sentence(rng, 6)}"
            for _ in range(5)
        )
    elif tool == "http_get":
        out = json.dumps(
            {
                "status": 200,
                "items": [
                    {"id": rng.randint(1000, 9999), "name": rng.choice(WORDS), "ok": k % 2 == 0}
                    for k in range(6)
                ],
                "next": None,
            }
        )
    elif tool == "run_tests":
        out = "\n".join(
            f"test {rng.choice(WORDS)}::{rng.choice(WORDS)} ... {rng.choice(('ok', 'FAILED'))}"
            for _ in range(8)
        )
    else:
        out = "\n".join(
            f"{rng.choice(WORDS)}_{k}.py  {rng.randint(100, 9000)} bytes" for k in range(12)
        )
    return (out + "\n" + sentence(rng, 40))[:400]


def agent_history(turns: int, *, seed: int = 7) -> list[Turn]:
    """``turns`` deterministic agent-loop turns (same seed, same text, on every machine)."""
    rng = random.Random(seed)
    out: list[Turn] = []
    for t in range(turns):
        tool = TOOLS[t % len(TOOLS)]
        out.append(
            Turn(
                user=f"Step {t}: {sentence(rng, 10)}",
                call_id=f"call_{t}",
                tool=tool,
                args={"path": f"src/{rng.choice(WORDS)}.rs", "line": rng.randint(1, 500)},
                result=_tool_result(rng, tool, t),
                answer=sentence(rng, 25),
            )
        )
    return out


def ctxtrim_turn(t: Turn) -> list[Message]:
    """``t`` as ctxtrim messages (user, tool call, tool result, answer)."""
    return [
        Message.user(t.user),
        Message.assistant("", tool_uses=[(t.call_id, t.tool, t.args)]),
        Message.tool_results((t.call_id, t.result)),
        Message.assistant(t.answer),
    ]


def ctxtrim_head() -> list[Message]:
    """The pinned head of every history: the system prompt and the task."""
    return [Message.system(SYSTEM_PROMPT), Message.user(TASK)]


def ctxtrim_messages(turns: Sequence[Turn]) -> list[Message]:
    """The head and ``turns`` as one list of ctxtrim messages."""
    out = ctxtrim_head()
    for t in turns:
        out.extend(ctxtrim_turn(t))
    return out
