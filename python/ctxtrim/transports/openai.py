"""`OpenAITransport`: summaries from an OpenAI (or OpenAI-compatible) chat model.

Uses the official ``openai`` SDK's ``AsyncOpenAI`` client (install ``ctxtrim[openai]``),
chat completions endpoint. The history is rendered as text (tool inputs and results clipped
character-safe, earlier summaries under "Previous summary") and sent as one user message
after the system prompt, so any history — whatever its tool pairs or images — makes a valid
request. SDK errors become :class:`~ctxtrim.errors.CompactionError` (``kind`` =
``rate_limit``, ``server_error``, ``timeout``, ``connection``, ``api_error``), the SDK error
chained as the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ctxtrim.errors import CompactionError, CompactionSettingsError
from ctxtrim.messages import Message
from ctxtrim.transports._sdk import map_sdk_error, request_text, validate_settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAITransport"]


class OpenAITransport:
    """A :class:`~ctxtrim.compaction.CompletionTransport` on ``AsyncOpenAI``.

    ``timeout`` (seconds) is passed to each request; ``token_param`` names the request field
    that bounds the summary: ``"max_completion_tokens"`` (what current OpenAI models
    require) or ``"max_tokens"`` (for older OpenAI-compatible servers). ``context_window``,
    when given, is what :class:`~ctxtrim.AutoCompactStore` uses as its ``max_tokens``
    default.
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        *,
        timeout: float | None = 60.0,
        max_result_chars: int = 1000,
        token_param: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
        context_window: int | None = None,
    ) -> None:
        validate_settings(model, timeout, max_result_chars)
        if token_param not in ("max_completion_tokens", "max_tokens"):
            raise CompactionSettingsError(
                f"token_param must be max_completion_tokens or max_tokens, got {token_param!r}"
            )
        self.client = client
        self.model = model
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.token_param = token_param
        self.context_window = context_window

    def __repr__(self) -> str:
        return f"OpenAITransport(model={self.model!r})"

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        import openai

        body: Any = [
            {"role": "system", "content": system},
            {"role": "user", "content": request_text(messages, self.max_result_chars)},
        ]
        try:
            if self.token_param == "max_tokens":
                response = await self.client.chat.completions.create(
                    model=self.model, messages=body, max_tokens=max_tokens, timeout=self.timeout
                )
            else:
                response = await self.client.chat.completions.create(
                    model=self.model,
                    messages=body,
                    max_completion_tokens=max_tokens,
                    timeout=self.timeout,
                )
        except Exception as err:
            mapped = map_sdk_error(openai, "OpenAI", err)
            if mapped is None:
                raise
            raise mapped from err
        text: str | None = response.choices[0].message.content if response.choices else None
        if not text or not text.strip():
            raise CompactionError("OpenAI returned an empty summary", kind="empty_summary")
        return text.strip()
