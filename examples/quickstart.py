"""The main job on the embedded default: an agent loop on a SQLite file, trimmed to 8k
tokens before every model call, compacted by the offline summariser when it grows.

Run: python examples/quickstart.py [DB_PATH]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from ctxtrim import (
    AutoCompactStore,
    CompactionEvent,
    FitContextWindow,
    Message,
    ToolResultBlock,
    validate,
)
from ctxtrim.stores import SQLiteContextStore
from ctxtrim.transports import ExtractiveTransport

STEPS = 300


async def main(path: Path) -> None:
    events: list[CompactionEvent] = []
    sqlite = await SQLiteContextStore.open(path, "nightly-build")
    # Compact (offline, no model) when the history passes 75 % of a 32k window.
    store = AutoCompactStore(
        sqlite, ExtractiveTransport(), max_tokens=32_000, on_event=events.append
    )
    fit = FitContextWindow(8_000)  # the request view: system + task + newest rounds
    await store.append(Message.system("You are a careful coding agent."))
    await store.append(Message.user("Find why the nightly build fails and fix it."))
    worst = 0
    for step in range(STEPS):  # a long one-task agent loop with parallel tool calls
        await store.append(
            Message.assistant(
                f"Step {step}: reading two files.",
                tool_uses=[
                    (f"call_{step}_a", "read_file", {"path": f"src/mod_{step}.rs"}),
                    (f"call_{step}_b", "grep", {"pattern": "unwrap()", "dir": "src"}),
                ],
            )
        )
        await store.append(
            Message.tool_results(
                ToolResultBlock(f"call_{step}_a", "fn main() { … } // 40 lines " * 8),
                ToolResultBlock(f"call_{step}_b", f"src/mod_{step}.rs:12: x.unwrap()"),
            )
        )
        request = fit(await store.get_history())  # what the model would be sent
        worst = max(worst, len(validate(request)))
    await store.append(Message.assistant("The build fails on an unwrap in mod_299; fixed."))

    retry = await sqlite.fork()  # a branch for a retry, in the same file
    history = await store.get_history()
    report = fit.describe(history)
    compactions = [e for e in events if e.kind == "compacted"]
    print(f"appended {2 * STEPS + 3} messages to {path}")
    print(f"stored now: {len(history)} messages after {len(compactions)} offline compactions")
    print(f"request view: {report.messages_after} messages, ~{report.tokens_after} tokens")
    print(f"over budget: {report.over_budget}; violations in any request: {worst}")
    print(f"fork: {len(await retry.get_history())} messages in session {retry.session_id}")
    await retry.close()
    await store.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(Path(tmp) / "ctxtrim.db"))
