"""A pair-safe history processor for pydantic-ai (v2 ``capabilities`` API).

Add one capability, keep the agent::

    from pydantic_ai import Agent
    from ctxtrim.integrations.pydantic_ai import TrimHistory

    agent = Agent(model, capabilities=[TrimHistory(max_tokens=100_000).capability()])

:class:`TrimHistory` is a history processor — ``(messages) -> messages`` — usable wherever
pydantic-ai takes one (``ProcessHistory(processor)``, the replacement of v1's
``history_processors=``). It keeps the pinned head (the first request: system prompt and
task) and the longest pair-safe suffix of ``ModelRequest``/``ModelResponse`` messages
within ``max_tokens - reserve_tokens``, cut only where no ``ToolCallPart`` before the cut
has its ``ToolReturnPart`` (or tool ``RetryPromptPart``) after it. The messages returned
are pydantic-ai's own objects; the result always ends with the newest ``ModelRequest``
(pydantic-ai rejects anything else) and, after the head, starts with a request.

pydantic-ai repairs an orphan after the fact (``repair_messages`` drops it, so a naive
``messages[k:]`` slice then starts with a ``ModelResponse``, as
tests/integrations/test_integration_pydantic_ai.py shows); this never
makes one, so nothing is silently dropped or synthesised. Tokens are ctxtrim's script-aware
estimate of each part's text, or a :class:`ctxtrim.TokenCounter` of yours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxtrim.integrations._common import Mirror, Skeletons, ends_window, missing_extra, take
from ctxtrim.messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from ctxtrim.strategies import FitContextWindow
from ctxtrim.tokens import TokenCounter

try:
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise missing_extra("pydantic-ai-slim", "pydantic-ai", _err) from _err

__all__ = ["TrimHistory", "to_skeleton"]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return " ".join(v if isinstance(v, str) else "[file]" for v in value)
    return str(value)


def to_skeleton(message: ModelMessage, i: int = 0) -> Message:
    """The ctxtrim skeleton of one pydantic-ai message: role, tool ids and texts."""
    blocks: list[Block] = []
    if isinstance(message, ModelRequest):
        system = True
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                blocks.append(TextBlock(part.content))
                continue
            system = False
            if isinstance(part, ToolReturnPart):
                blocks.append(ToolResultBlock(part.tool_call_id, part.model_response_str()))
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                blocks.append(ToolResultBlock(part.tool_call_id, part.model_response(), True))
            elif isinstance(part, UserPromptPart):
                blocks.append(TextBlock(_text(part.content)))
            else:  # output retries, instructions and other request parts: text only
                blocks.append(TextBlock(_text(getattr(part, "content", ""))))
        if system and blocks:
            return Message("system", tuple(blocks))
        # Results first: a request answering calls and adding text is still one message.
        blocks.sort(key=lambda b: not isinstance(b, ToolResultBlock))
        return Message("user", tuple(blocks) or (TextBlock(""),))
    text: list[str] = []
    calls: list[ToolUseBlock] = []
    for rpart in message.parts:
        if isinstance(rpart, ToolCallPart):
            calls.append(ToolUseBlock(rpart.tool_call_id, rpart.tool_name or "?", {}))
            text.append(rpart.args_as_json_str())
        elif isinstance(rpart, (TextPart, ThinkingPart)):
            text.append(rpart.content)
        else:  # native (provider-run) tool parts, files: self-contained, counted as text
            text.append(_text(getattr(rpart, "content", "")))
    return Message.assistant(" ".join(t for t in text if t), tool_uses=calls)


class TrimHistory:
    """A pydantic-ai history processor fitting the history in a token budget, pair-safely.

    ``TrimHistory(max_tokens, *, reserve_tokens=0, counter=None, pin_task=True)``; call it
    with a list of messages, or pass ``.capability()`` in ``Agent(capabilities=[...])``.
    """

    def __init__(
        self,
        max_tokens: int,
        *,
        reserve_tokens: int = 0,
        counter: TokenCounter | None = None,
        pin_task: bool = True,
    ) -> None:
        self._strategy = FitContextWindow(
            max_tokens, reserve_tokens=reserve_tokens, counter=counter, pin_task=pin_task
        )
        self._counter = counter
        # One skeleton per message object, made when it is first read. A history handed
        # over again (the same message objects, grown: an agent run's) is mirrored in a
        # MessageLog, so a call converts only the new messages and the core decides in
        # O(log n); a history of fresh objects is read by the core from its ends.
        self._skeletons: Skeletons[ModelMessage] = Skeletons(to_skeleton)
        self._mirror: Mirror[ModelMessage] = Mirror(
            self._skeletons, with_log=True, eager=False, counter=counter
        )

    def __repr__(self) -> str:
        return f"TrimHistory({self._strategy!r})"

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        if not messages:
            return messages
        strategy = self._strategy
        window = None
        if type(messages) is list:
            window = self._mirror.window(
                messages,
                "budget",
                strategy.budget,
                pin_task=strategy.pin_task,
                start_with_user=strategy.start_with_user,
            )
        if window is None:
            window = ends_window(
                messages,
                self._skeletons,
                "budget",
                strategy.budget,
                pin_task=strategy.pin_task,
                start_with_user=strategy.start_with_user,
                counter=self._counter,
            )
        ranges, unchanged, _ = window
        return messages if unchanged else take(messages, ranges)

    def capability(self) -> ProcessHistory[Any]:
        """This processor as a pydantic-ai capability: ``Agent(capabilities=[...])``."""
        return ProcessHistory(self)
