"""ctxtrim: keep an LLM agent's conversation history inside the context window.

A Rust core holds a copy-on-write message log with cached token counts, turns and a
pair-safe cut index; this package gives it a typed Python face: the message model, the
``ContextStore`` ABC and its in-memory store, token counting and history validation.
Every history ctxtrim hands back is provider-valid: no tool result without its call, no
call cut from its result.
"""

from typing import TYPE_CHECKING, Any

from ctxtrim._core import MessageLog, TurnCounter, TurnId, __version__
from ctxtrim.errors import (
    CompactionError,
    CompactionSettingsError,
    CorruptRecordError,
    CtxtrimError,
    FormatError,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    InvalidTurnId,
    MessageTooLarge,
    NotJSONData,
    OutcomeUnknownError,
    StaleGenerationError,
    StoreError,
    TokenCountError,
    UnknownModel,
)
from ctxtrim.messages import (
    Block,
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    decode_messages,
    encode_messages,
)
from ctxtrim.store import ContextStore, HistorySnapshot, MemoryContextStore
from ctxtrim.strategies import (
    CacheStable,
    ContextStrategy,
    FitContextWindow,
    HeadAndTail,
    InvalidStrategy,
    KeepLastMessages,
    KeepLastTurns,
    Pipeline,
    TrimRounds,
)
from ctxtrim.tokens import (
    AnthropicTokenCounter,
    ExactTokenCounter,
    HeuristicTokenCounter,
    TokenCounter,
    estimate_tokens,
    price_table,
    tool_tokens,
)
from ctxtrim.validate import repair, validate

if TYPE_CHECKING:
    from ctxtrim._records import SessionInfo, TrimReport, Violation
    from ctxtrim.clearing import (
        ClearThinking,
        ClearToolResults,
        KeepRecentImages,
        TruncateToolOutputs,
    )
    from ctxtrim.compaction import (
        AutoCompactStore,
        CompactionEvent,
        CompletionTransport,
        compact_context,
    )
    from ctxtrim.overflow import is_context_overflow, retry_on_overflow
    from ctxtrim.stores import SQLiteContextStore

# Imported on first use: compaction brings asyncio, the SQLite store sqlite3 and a thread
# pool, which a process that only trims never needs (``import ctxtrim`` stays light); the
# in-place strategies bring their trigger specs (``ctxtrim.triggers``), which a process that
# only cuts never needs; the public records are dataclasses (``ctxtrim._records``), and
# ``dataclasses`` brings ``inspect``. Each resolves through the module that documents it.
# ``validate`` stays eager: it is also the name of its module, which an import of
# ``ctxtrim.validate`` would otherwise leave in its place.
_LAZY = {
    "ClearThinking": "ctxtrim.clearing",
    "ClearToolResults": "ctxtrim.clearing",
    "KeepRecentImages": "ctxtrim.clearing",
    "TruncateToolOutputs": "ctxtrim.clearing",
    "AutoCompactStore": "ctxtrim.compaction",
    "CompactionEvent": "ctxtrim.compaction",
    "CompletionTransport": "ctxtrim.compaction",
    "compact_context": "ctxtrim.compaction",
    "SQLiteContextStore": "ctxtrim.stores",
    "is_context_overflow": "ctxtrim.overflow",
    "retry_on_overflow": "ctxtrim.overflow",
    "SessionInfo": "ctxtrim.store",
    "TrimReport": "ctxtrim.strategies",
    "Violation": "ctxtrim.validate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxtrim' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups find it directly
    return value


def __dir__() -> list[str]:
    # Every public name, the ones not imported yet included.
    return sorted({*globals(), *__all__})


__all__ = [
    "AnthropicTokenCounter",
    "AutoCompactStore",
    "Block",
    "CacheStable",
    "ClearThinking",
    "ClearToolResults",
    "CompactionError",
    "CompactionEvent",
    "CompactionSettingsError",
    "CompletionTransport",
    "ContextStore",
    "ContextStrategy",
    "CorruptRecordError",
    "CtxtrimError",
    "ExactTokenCounter",
    "FitContextWindow",
    "FormatError",
    "HeadAndTail",
    "HeuristicTokenCounter",
    "HistorySnapshot",
    "ImageBlock",
    "InvalidArgument",
    "InvalidMessage",
    "InvalidSessionId",
    "InvalidStrategy",
    "InvalidTurnId",
    "KeepLastMessages",
    "KeepLastTurns",
    "KeepRecentImages",
    "MemoryContextStore",
    "Message",
    "MessageLog",
    "MessageTooLarge",
    "NotJSONData",
    "OutcomeUnknownError",
    "Pipeline",
    "ProviderBlock",
    "ReasoningBlock",
    "SQLiteContextStore",
    "SessionInfo",
    "StaleGenerationError",
    "StoreError",
    "TextBlock",
    "TokenCountError",
    "TokenCounter",
    "ToolResultBlock",
    "ToolUseBlock",
    "TrimReport",
    "TrimRounds",
    "TruncateToolOutputs",
    "TurnCounter",
    "TurnId",
    "UnknownModel",
    "Usage",
    "Violation",
    "__version__",
    "compact_context",
    "decode_messages",
    "encode_messages",
    "estimate_tokens",
    "is_context_overflow",
    "price_table",
    "repair",
    "retry_on_overflow",
    "tool_tokens",
    "validate",
]
