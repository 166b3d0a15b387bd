"""A short agent session on ctxtrim's foundation: append, fork, fit a token budget, validate.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import asyncio

from ctxtrim import MemoryContextStore, Message, ToolResultBlock, validate


async def main() -> None:
    store = MemoryContextStore()
    await store.append(Message.system("You are a careful coding agent."))
    await store.append(Message.user("Find why the nightly build fails and fix it."))
    for step in range(300):  # a long one-task agent loop with parallel tool calls
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
    await store.append(Message.assistant("The build fails on an unwrap in mod_299; fixed."))

    retry = await store.fork()  # O(1): shares every message, diverges on write
    await retry.append(Message.user("Try a different fix."))

    log = store.log
    head = 2  # system prompt + task stay pinned
    budget = 8_000 - log.tokens(0, head)
    cut, kept_tokens, fits = log.fit_budget(budget, floor=head)
    history = await store.get_history()
    trimmed = history[:head] + history[cut:]

    print(f"history: {len(history)} messages, ~{log.total_tokens} tokens, {log.turn_count} turn")
    print(f"trimmed: {len(trimmed)} messages, ~{log.tokens(0, head) + kept_tokens} tokens")
    print(f"fits 8k: {fits}; cut at message {cut} (pair-safe: {log.is_safe_cut(cut)})")
    print(f"violations after trimming: {validate(trimmed)}")
    print(f"fork: {len(await retry.get_history())} messages, parent: {len(history)}")


if __name__ == "__main__":
    asyncio.run(main())
