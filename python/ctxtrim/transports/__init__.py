"""Summarisation transports for :mod:`ctxtrim.compaction`.

Each implements :class:`~ctxtrim.compaction.CompletionTransport`
(``async complete(messages, *, system, max_tokens) -> str``):

* :class:`ExtractiveTransport` — offline, no model, deterministic;
* :class:`OpenAITransport` — the official ``openai`` SDK (``pip install ctxtrim[openai]``);
* :class:`AnthropicTransport` — the official ``anthropic`` SDK
  (``pip install ctxtrim[anthropic]``).

The SDK transports import their SDK only when they make a request, so importing this
package never needs either SDK.
"""

from ctxtrim.transports.anthropic import AnthropicTransport
from ctxtrim.transports.extractive import ExtractiveTransport
from ctxtrim.transports.openai import OpenAITransport

__all__ = ["AnthropicTransport", "ExtractiveTransport", "OpenAITransport"]
