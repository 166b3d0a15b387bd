"""The peer libraries' side: each one's message types, built from the same turns.

Every peer is imported when used (:func:`has` says whether it is installed), so the bench
package imports with only the standard library and ctxtrim. The conversions here run
before any clock starts; what is timed is the peers' own documented API, called in
:mod:`ctxtrim.bench.loops`, :mod:`ctxtrim.bench.paths` and :mod:`ctxtrim.bench.stores`.

- agentix (``agentix-toolkit``): ``agentix.types.Message`` with ``Role``; tool calls in
  ``meta["tool_calls"]``, results as ``Role.TOOL`` messages with ``meta["call_id"]``.
- autogen (``autogen-core``): ``UserMessage`` / ``AssistantMessage`` with a
  ``FunctionCall`` / ``FunctionExecutionResultMessage``; its ``TokenLimited`` context
  needs a model client only to count tokens, so :func:`chars4_client` gives it the
  chars/4 heuristic (a real client needs a network).
- LangChain (``langchain-core``): ``HumanMessage`` / ``AIMessage(tool_calls=...)`` /
  ``ToolMessage``.
- openai-agents: Responses-API input items (:func:`openai_items`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from .history import SYSTEM_PROMPT, TASK, Turn

__all__ = [
    "agentix_messages",
    "agentix_turn_builder",
    "autogen_messages",
    "chars4_client",
    "has",
    "langchain_messages",
    "openai_items",
]


def has(module: str) -> bool:
    """Whether ``module`` can be imported (a peer is installed)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def agentix_messages(turns: Sequence[Turn]) -> tuple[list[Any], list[list[Any]]]:
    """The head and each turn as agentix messages."""
    types = importlib.import_module("agentix.types")
    role, msg, call = types.Role, types.Message, types.ToolCall
    head = [msg(role.SYSTEM, SYSTEM_PROMPT), msg(role.USER, TASK, trusted=True)]
    out = [
        [
            msg(role.USER, t.user, trusted=True),
            msg(role.ASSISTANT, "", meta={"tool_calls": [call(t.tool, t.args, t.call_id)]}),
            msg(role.TOOL, t.result, name=t.tool, meta={"call_id": t.call_id}),
            msg(role.ASSISTANT, t.answer),
        ]
        for t in turns
    ]
    return head, out


def agentix_turn_builder(types: Any) -> Callable[[int], list[Any]]:
    """Turn ``i`` of the user-path workloads (:func:`ctxtrim.bench.paths.turn_messages`) as
    agentix builds it, for the workloads that build their messages inside the timed call."""
    role, msg, call = types.Role, types.Message, types.ToolCall

    def build(i: int) -> list[Any]:
        return [
            msg(role.USER, f"Please look at file number {i} and say what it does.", trusted=True),
            msg(
                role.ASSISTANT,
                "",
                meta={"tool_calls": [call("read_file", {"path": f"/src/m{i}.py"}, f"call_{i}")]},
            ),
            msg(
                role.TOOL,
                "def f(x):\n    return 2 * x\n" * 6,
                name="read_file",
                meta={"call_id": f"call_{i}"},
            ),
            msg(role.ASSISTANT, f"File {i} defines f, which doubles its input. " * 3),
        ]

    return build


def autogen_messages(turns: Sequence[Turn]) -> tuple[list[Any], list[list[Any]]]:
    """The head and each turn as autogen-core messages."""
    models = importlib.import_module("autogen_core.models")
    call_cls = importlib.import_module("autogen_core").FunctionCall
    head = [
        models.SystemMessage(content=SYSTEM_PROMPT),
        models.UserMessage(content=TASK, source="user"),
    ]
    out = [
        [
            models.UserMessage(content=t.user, source="user"),
            models.AssistantMessage(
                content=[call_cls(id=t.call_id, arguments=json.dumps(t.args), name=t.tool)],
                source="assistant",
            ),
            models.FunctionExecutionResultMessage(
                content=[
                    models.FunctionExecutionResult(
                        content=t.result, name=t.tool, call_id=t.call_id, is_error=False
                    )
                ]
            ),
            models.AssistantMessage(content=t.answer, source="assistant"),
        ]
        for t in turns
    ]
    return head, out


def chars4_client() -> Any:
    """A ChatCompletionClient for autogen's TokenLimited context whose token count is the
    chars/4 heuristic over the message text (the real clients need a network; counting is
    the only method TokenLimited calls)."""
    models = importlib.import_module("autogen_core.models")

    def text_len(m: Any) -> int:
        c = m.content
        if isinstance(c, str):
            return len(c)
        total = 0
        for part in c:
            total += len(getattr(part, "content", "") or "") + len(getattr(part, "arguments", ""))
        return total

    class Chars4(models.ChatCompletionClient):  # type: ignore[misc, name-defined]
        def count_tokens(self, messages: Sequence[Any], *, tools: Any = ()) -> int:
            return sum(text_len(m) for m in messages) // 4 + 4 * len(messages)

        def remaining_tokens(self, messages: Sequence[Any], *, tools: Any = ()) -> int:
            return 128_000 - self.count_tokens(messages)

        async def create(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        def create_stream(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        async def close(self) -> None:
            return None

        def actual_usage(self) -> Any:
            return models.RequestUsage(prompt_tokens=0, completion_tokens=0)

        def total_usage(self) -> Any:
            return models.RequestUsage(prompt_tokens=0, completion_tokens=0)

        @property
        def capabilities(self) -> Any:
            return self.model_info

        @property
        def model_info(self) -> Any:
            return {
                "vision": False,
                "function_calling": True,
                "json_output": False,
                "family": "unknown",
                "structured_output": False,
            }

    return Chars4()


def langchain_messages(turns: Sequence[Turn]) -> tuple[list[Any], list[list[Any]]]:
    """The head and each turn as langchain-core messages."""
    lc = importlib.import_module("langchain_core.messages")
    head = [lc.SystemMessage(SYSTEM_PROMPT), lc.HumanMessage(TASK)]
    out = [
        [
            lc.HumanMessage(t.user),
            lc.AIMessage("", tool_calls=[{"name": t.tool, "args": t.args, "id": t.call_id}]),
            lc.ToolMessage(t.result, tool_call_id=t.call_id),
            lc.AIMessage(t.answer),
        ]
        for t in turns
    ]
    return head, out


def openai_items(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """The head and ``turns`` as openai-agents session items (Responses API input)."""
    out: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": TASK},
    ]
    for t in turns:
        out += [
            {"role": "user", "content": t.user},
            {
                "type": "function_call",
                "call_id": t.call_id,
                "name": t.tool,
                "arguments": json.dumps(t.args),
            },
            {"type": "function_call_output", "call_id": t.call_id, "output": t.result},
            {"role": "assistant", "content": t.answer},
        ]
    return out
