"""`AnthropicTransport`: summaries from a Claude model.

Uses the official ``anthropic`` SDK's ``AsyncAnthropic`` client (install
``ctxtrim[anthropic]``), Messages API. The history is rendered as text (tool inputs and
results clipped character-safe, earlier summaries under "Previous summary") and sent as one
user message with the summariser's instructions as ``system``. SDK errors become
:class:`~ctxtrim.errors.CompactionError` (``kind`` = ``rate_limit``, ``server_error`` —
overloaded 529 included —, ``timeout``, ``connection``, ``api_error``), the SDK error
chained as the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxtrim.errors import CompactionError
from ctxtrim.messages import Message
from ctxtrim.transports._sdk import map_sdk_error, request_text, validate_settings

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicTransport"]


class AnthropicTransport:
    """A :class:`~ctxtrim.compaction.CompletionTransport` on ``AsyncAnthropic``.

    ``timeout`` (seconds) is passed to each request. ``context_window``, when given, is
    what :class:`~ctxtrim.AutoCompactStore` uses as its ``max_tokens`` default.
    """

    def __init__(
        self,
        client: AsyncAnthropic,
        model: str,
        *,
        timeout: float | None = 60.0,
        max_result_chars: int = 1000,
        context_window: int | None = None,
    ) -> None:
        validate_settings(model, timeout, max_result_chars)
        self.client = client
        self.model = model
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.context_window = context_window

    def __repr__(self) -> str:
        return f"AnthropicTransport(model={self.model!r})"

    async def complete(self, messages: Sequence[Message], *, system: str, max_tokens: int) -> str:
        import anthropic

        try:
            response = await self.client.messages.create(
                model=self.model,
                system=system,
                messages=[
                    {"role": "user", "content": request_text(messages, self.max_result_chars)}
                ],
                max_tokens=max_tokens,
                timeout=self.timeout,
            )
        except Exception as err:
            mapped = map_sdk_error(anthropic, "Anthropic", err)
            if mapped is None:
                raise
            raise mapped from err
        parts = [getattr(b, "text", None) for b in response.content if b.type == "text"]
        text = "".join(p for p in parts if isinstance(p, str))
        if not text.strip():
            raise CompactionError("Anthropic returned an empty summary", kind="empty_summary")
        return text.strip()
