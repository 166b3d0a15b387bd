"""Check a history for what providers reject, and repair it deterministically.

``validate`` lists every violation without changing anything: a tool result whose call is
not before it (orphan, or result before its call), a call never answered (dangling), a tool
use id used twice, a call answered twice, a history whose first non-system message is not
a user message. ``repair`` applies the core's repair plan: it drops what cannot be
answered, renames duplicate ids, answers dangling calls with an error result and puts a
user turn first. The plan depends only on the input, so the same broken history always
repairs to the same messages (byte-identical, so provider prompt caches keep hitting).

Provider blocks (:class:`~ctxtrim.messages.ProviderBlock`) pair by the ids their format's
table names, as tool calls and results do, and are repaired the same way, with one
difference: an unanswered provider call (a ``computer_call``, a ``server_tool_use``...) is
dropped, with the reasoning block right before it, rather than answered, because its answer
has a shape of the provider's (a screenshot, a search result) that ctxtrim cannot make up.
A call and its result in one message (a server tool and its result) pair within it and are
not counted as calls or results of the message (the positions the plan gives).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

import msgspec

from ctxtrim import _core
from ctxtrim.blocks import pair_sides
from ctxtrim.dicts import Payload, ProviderPayload, is_payload
from ctxtrim.messages import (
    Block,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

if TYPE_CHECKING:
    # ``Violation`` is a dataclass defined in ``ctxtrim._records`` (``import ctxtrim`` loads
    # no dataclasses), resolved on first use by the module ``__getattr__``.
    from ctxtrim._records import Violation as Violation

__all__ = [
    "INTERRUPTED_RESULT",
    "MISSING_USER_TURN",
    "Violation",
    "repair",
    "validate",
]

#: Content of the error result ``repair`` gives a call that was never answered.
INTERRUPTED_RESULT = "[no result: the tool call was interrupted]"
#: Text of the user message ``repair`` puts before an assistant-first history.
MISSING_USER_TURN = "[conversation continues]"


@overload
def validate(messages: Sequence[Message]) -> list[Violation]: ...
@overload
def validate(messages: ProviderPayload, *, format: str = "auto") -> list[Violation]: ...
def validate(
    messages: Sequence[Message] | ProviderPayload, *, format: str = "auto"
) -> list[Violation]:
    """Every violation in ``messages``, ordered by message index. Never mutates.

    Provider dicts (a Chat, Responses or Anthropic list or request body) are read as
    ``format`` (detected by default); the violations' indices then count the payload's
    entries (:mod:`ctxtrim.dicts`)."""
    payload = Payload(messages, format) if is_payload(messages) else None
    source = messages if payload is None else payload.messages
    rows = _core.validate(source)  # type: ignore[arg-type]  # a payload was read above
    if not rows:
        return []  # a valid history never makes the Violation class
    from ctxtrim._records import Violation

    if payload is not None:
        return [payload.violation(Violation(*row)) for row in rows]
    return [Violation(*row) for row in rows]


@overload
def repair(messages: Sequence[Message]) -> list[Message]: ...
@overload
def repair(messages: ProviderPayload, *, format: str = "auto") -> Any: ...
def repair(messages: Sequence[Message] | ProviderPayload, *, format: str = "auto") -> Any:
    """A provider-valid version of ``messages``; the same list object if it was valid.
    Provider dicts come back in their own format and shape (the payload itself if valid)."""
    if is_payload(messages):
        payload = Payload(messages, format)
        return payload.write(_repair(payload.messages))
    return _repair(messages)  # type: ignore[arg-type]  # not a payload


def _repair(messages: Sequence[Message]) -> list[Message]:
    plan = _core.repair_plan(messages)
    if not plan:
        return messages if isinstance(messages, list) else list(messages)
    drop_results: dict[int, set[int]] = {}
    rename_uses: dict[int, dict[int, str]] = {}
    rename_results: dict[int, dict[int, str]] = {}
    insert_after: dict[int, list[str]] = {}
    user_before: set[int] = set()
    dropped: set[int] = set()
    for op, index, pos, ids in plan:
        if op == "drop_result":
            drop_results.setdefault(index, set()).add(pos)
        elif op == "rename_tool_use":
            rename_uses.setdefault(index, {})[pos] = ids[0]
        elif op == "rename_result":
            rename_results.setdefault(index, {})[pos] = ids[0]
        elif op == "insert_results":
            insert_after.setdefault(index, []).extend(ids)
        elif op == "insert_user_before":
            user_before.add(index)
        elif op == "drop_message":
            dropped.add(index)

    out: list[Message] = []
    pending: list[ToolResultBlock] = []  # synthetic results waiting for the next user message
    for i, message in enumerate(messages):
        if i in user_before:
            out.append(Message.user(MISSING_USER_TURN))
        if i in dropped:
            continue
        unanswered = insert_after.get(i, [])
        message = _edit_blocks(
            message,
            drop_results.get(i, set()),
            rename_uses.get(i, {}),
            rename_results.get(i, {}),
        )
        message, unanswered = _drop_provider_calls(message, unanswered)
        if pending:
            if message.role == "user":
                message = msgspec.structs.replace(message, content=(*pending, *message.content))
            else:
                out.append(Message("user", tuple(pending)))
            pending = []
        out.append(message)
        pending = [
            ToolResultBlock(tool_use_id=id_, content=INTERRUPTED_RESULT, is_error=True)
            for id_ in unanswered
        ]
    if pending:
        out.append(Message("user", tuple(pending)))
    return out


def _edit_blocks(
    message: Message,
    drop: set[int],
    rename_uses: dict[int, str],
    rename_results: dict[int, str],
) -> Message:
    """Apply the plan's block-level edits; positions count tool uses / tool results only."""
    if not (drop or rename_uses or rename_results):
        return message
    content: list[object] = []
    use_pos = result_pos = 0
    for block, (side, _) in zip(message.content, pair_sides(message.content), strict=True):
        if side == "result":
            pos, result_pos = result_pos, result_pos + 1
            if pos in drop:
                continue
            if pos in rename_results:
                block = _renamed(block, rename_results[pos])
        elif side == "call":
            pos, use_pos = use_pos, use_pos + 1
            if pos in rename_uses:
                block = _renamed(block, rename_uses[pos])
        content.append(block)
    if not content:  # the plan drops emptied messages; keep a valid message regardless
        content.append(TextBlock(text=MISSING_USER_TURN))
    return msgspec.structs.replace(message, content=tuple(content))


def _renamed(block: Block, new_id: str) -> Block:
    if type(block) is ToolUseBlock:
        return msgspec.structs.replace(block, id=new_id)
    if type(block) is ToolResultBlock:
        return msgspec.structs.replace(block, tool_use_id=new_id)
    assert type(block) is ProviderBlock
    return block.with_call_id(new_id)


def _drop_provider_calls(message: Message, unanswered: list[str]) -> tuple[Message, list[str]]:
    """Drop the unanswered provider calls among ``unanswered`` (with the reasoning block right
    before each); the ids left are tool calls, to be answered with an error result."""
    calls = {
        call_id
        for b, (side, call_id) in zip(message.content, pair_sides(message.content), strict=True)
        if side == "call" and type(b) is ProviderBlock
    }
    dropped = calls.intersection(unanswered)
    if not dropped:
        return message, unanswered
    content: list[Block] = []
    for b in message.content:
        if type(b) is ProviderBlock and b.call_id in dropped and b.spec.pair == "call":
            if content and type(content[-1]) is ReasoningBlock:
                content.pop()  # a reasoning item is rejected without the item it preceded
            continue
        content.append(b)
    if not content:
        content.append(TextBlock(text=MISSING_USER_TURN))
    kept = [id_ for id_ in unanswered if id_ not in dropped]
    return msgspec.structs.replace(message, content=tuple(content)), kept


def __getattr__(name: str) -> Any:
    if name == "Violation":
        from ctxtrim._records import Violation

        globals()[name] = Violation  # later lookups find it directly
        return Violation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
