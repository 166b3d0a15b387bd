"""Models' context windows and output limits, by the names the SDKs use.

``lookup("claude-sonnet-4-5-20250929")`` gives a :class:`ModelLimits`; ``budget(model,
fraction=0.8)`` says "80 % of the window" in tokens, for :class:`~ctxtrim.FitContextWindow`
(``fit_context_window`` builds one), :class:`~ctxtrim.AutoCompactStore` (``max_tokens=``) or
anything else taking a token count. An unknown name raises
:class:`~ctxtrim.errors.UnknownModel`: a wrong window is worse than none, so nothing is
guessed. :func:`register` adds a model or overrides a row (a fine-tune, a proxy's name, a
limit that changed).

**Names.** A name is looked up as given, then without a ``models/`` or ``<provider>/``
prefix (``models/gemini-2.5-pro``, ``openai/gpt-4.1``), then without a dated snapshot
suffix (``-2025-04-14``, ``-20250929``), a Gemini version suffix (``-001``) or
``-latest``: a snapshot has its alias's limits unless it has a row of its own
(``gpt-4o-2024-05-13`` does). The model names of the ``anthropic`` SDK
(``anthropic.types.Model``) and the ``openai`` SDK (``openai.types.ChatModel``) pinned by
the test extra are each either in the table or in :data:`NOT_LISTED` with the reason; a
test fails when an SDK release names a model that is neither. The ``google-genai`` SDK has
no list of names; the Gemini rows are the chat models of the sources below.

**Sources, and what they are worth** (table written 2026-11-27, without network access):

* ``context_window``: from the ``genai-prices`` package, version 0.2.3 (pydantic's curated
  price and model data, which states the window of each model it prices), unless the row's
  ``source`` says ``"provider docs"``: then it is the value on the provider's model page as
  we know it, which is more precise where genai-prices rounds (``gpt-4.1``: 1,047,576, where
  genai-prices says 1,000,000). These were not re-checked online when the table was written.
* ``max_output_tokens``: from the providers' model pages as we know them (genai-prices has
  no output limits), and ``None`` where we do not know it: nothing is filled in by analogy.
  ``budget(..., reserve_output=True)`` on such a row raises instead of guessing; give the
  ``max_tokens`` you send (``reserve_output=8192``) or :func:`register` the limit.

Provider limits change (Anthropic's 1M-token context is a beta for some models; OpenAI
raises output limits): when a number matters, check the provider's page and
:func:`register` it.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ctxtrim.errors import InvalidArgument, UnknownModel

if TYPE_CHECKING:
    from ctxtrim.strategies import FitContextWindow

__all__ = [
    "NOT_LISTED",
    "TABLE",
    "ModelLimits",
    "budget",
    "context_window",
    "fit_context_window",
    "lookup",
    "register",
    "unregister",
]

Provider = Literal["openai", "anthropic", "google", "other"]

#: When the table was written (its numbers were last compared with their sources).
TABLE_DATE = "2026-11-27"


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """One model's limits, in tokens. ``context_window`` is what one request may hold
    (input plus output, as OpenAI, Anthropic and Gemini count it); ``max_output_tokens``
    the most one answer may have, ``None`` when the table does not know it. ``source`` says
    where the numbers come from; ``name`` is the table's row (the alias a snapshot maps to)."""

    name: str
    provider: Provider
    context_window: int
    max_output_tokens: int | None
    source: str


_GP = "genai-prices 0.2.3 (window); provider docs (output)"
_DOCS = "provider docs"


def _rows() -> dict[str, ModelLimits]:
    rows: dict[str, ModelLimits] = {}

    def add(provider: Provider, window: int, output: int | None, src: str, *names: str) -> None:
        for name in names:
            rows[name] = ModelLimits(name, provider, window, output, src)

    # -- OpenAI ------------------------------------------------------------------------------
    o: Provider = "openai"
    add(o, 1_050_000, None, _GP, "gpt-6-astra", "gpt-6-sol", "gpt-6-luna")
    add(o, 1_050_000, None, _GP, "gpt-6.1-sol", "gpt-6.1-terra")
    add(o, 1_050_000, None, _GP, "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna")
    add(o, 1_000_000, None, _GP, "gpt-5.5")
    add(o, 1_050_000, None, _GP, "gpt-5.4")
    add(o, 400_000, None, _GP, "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.2-pro")
    add(o, 400_000, 128_000, _GP, "gpt-5.2", "gpt-5.1", "gpt-5", "gpt-5-mini", "gpt-5-nano")
    add(o, 400_000, 128_000, _DOCS, "gpt-5.1-codex")
    add(o, 128_000, 16_384, _DOCS, "gpt-5-chat-latest")
    add(o, 200_000, 100_000, _DOCS, "codex-mini-latest")
    add(o, 1_047_576, 32_768, _DOCS, "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano")
    add(o, 200_000, 100_000, _GP, "o4-mini", "o3", "o3-mini", "o1")
    add(o, 128_000, 65_536, _GP, "o1-mini")
    add(o, 128_000, 32_768, _GP, "o1-preview")
    add(o, 128_000, 16_384, _GP, "gpt-4o", "gpt-4o-mini", "chatgpt-4o-latest")
    add(o, 128_000, 4_096, _DOCS, "gpt-4o-2024-05-13")
    add(o, 128_000, 16_384, _GP, "gpt-4o-search-preview", "gpt-4o-mini-search-preview")
    add(o, 128_000, 16_384, _GP, "gpt-4o-audio-preview", "gpt-4o-mini-audio-preview")
    add(o, 128_000, None, _GP, "gpt-audio-mini")
    add(o, 128_000, 4_096, _GP, "gpt-4-turbo", "gpt-4-turbo-preview", "gpt-4-vision-preview")
    add(o, 128_000, 4_096, _DOCS, "gpt-4-0125-preview", "gpt-4-1106-preview")
    add(o, 8_192, 8_192, _GP, "gpt-4", "gpt-4-0314", "gpt-4-0613")
    add(o, 32_768, None, _DOCS, "gpt-4-32k", "gpt-4-32k-0314", "gpt-4-32k-0613")
    add(o, 16_385, 4_096, _GP, "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-1106")
    add(o, 16_385, 4_096, _GP, "gpt-3.5-turbo-0613", "gpt-3.5-turbo-16k")
    add(o, 16_385, 4_096, _GP, "gpt-3.5-turbo-16k-0613")

    # -- Anthropic ---------------------------------------------------------------------------
    a: Provider = "anthropic"
    add(a, 1_000_000, None, _GP, "claude-fable-5-2", "claude-fable-5-1", "claude-fable-5")
    add(a, 1_000_000, None, _GP, "claude-mythos-5-2")
    add(a, 1_000_000, None, _GP, "claude-opus-5-5", "claude-opus-5")
    add(a, 1_000_000, None, _GP, "claude-sonnet-5-5", "claude-sonnet-5", "claude-haiku-5-5")
    add(a, 1_000_000, None, _GP, "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6")
    add(a, 1_000_000, None, _GP, "claude-sonnet-4-6")
    add(a, 200_000, 64_000, _GP, "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5")
    add(a, 200_000, 64_000, _DOCS, "claude-sonnet-4", "claude-3-7-sonnet")
    add(a, 200_000, 32_000, _DOCS, "claude-opus-4", "claude-opus-4-1")
    add(a, 200_000, 8_192, _DOCS, "claude-3-5-haiku")

    # -- Google (Gemini API names; Vertex AI uses the same) ----------------------------------
    g: Provider = "google"
    add(g, 1_048_576, 65_536, _DOCS, "gemini-2.5-pro", "gemini-2.5-flash")
    add(g, 1_048_576, 65_536, _DOCS, "gemini-2.5-flash-lite", "gemini-3-pro-preview")
    add(g, 1_048_576, 8_192, _DOCS, "gemini-2.0-flash", "gemini-2.0-flash-lite")
    add(g, 2_097_152, 8_192, _DOCS, "gemini-1.5-pro")
    add(g, 1_048_576, 8_192, _DOCS, "gemini-1.5-flash")
    add(g, 1_000_000, None, _GP, "gemini-3-flash-preview", "gemini-3.1-flash-lite")
    add(g, 1_000_000, None, _GP, "gemini-3.5-flash", "gemini-3.5-flash-lite")
    add(g, 1_000_000, None, _GP, "gemini-3.6-flash", "gemini-3.7-flash", "gemini-3.8-flash")
    add(g, 1_048_576, None, _GP, "gemini-4-argon")
    return rows


#: The built-in rows, by name (read-only; :func:`register` adds rows on top of it).
TABLE: Mapping[str, ModelLimits] = _rows()

_NO_WINDOW = "named by the SDK, but no published context window in the table's sources"

#: Names the pinned SDKs list that the table leaves out on purpose, with the reason.
NOT_LISTED: Mapping[str, str] = {
    "claude-mythos-5-1": _NO_WINDOW,
    "claude-mythos-5": _NO_WINDOW,
    "claude-mythos-preview": _NO_WINDOW,
    "gpt-6.2-astra": _NO_WINDOW,
    "gpt-6.2-sol": _NO_WINDOW,
    "gpt-5.1-mini": _NO_WINDOW,
    "gpt-5.3-chat-latest": "a ChatGPT alias whose window the table's sources do not state",
    "gpt-5.2-chat-latest": "a ChatGPT alias whose window the table's sources do not state",
    "gpt-5.1-chat-latest": "a ChatGPT alias whose window the table's sources do not state",
    "gpt-3.5-turbo-0301": "retired; its window is not in the table's sources",
}

_user: dict[str, ModelLimits] = {}
_lock = threading.Lock()
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3}|latest)$")
_PREFIX = re.compile(r"^(?:models|openai|anthropic|google|gemini|vertex_ai)/")


def _find(name: str) -> ModelLimits | None:
    for candidate in (name, _PREFIX.sub("", name)):
        for key in (candidate, _SNAPSHOT.sub("", candidate)):
            row = _user.get(key) or TABLE.get(key)
            if row is not None:
                return row
    return None


def lookup(model: str) -> ModelLimits:
    """The limits of ``model`` (see the module docstring for how names are matched).

    Raises :class:`~ctxtrim.errors.UnknownModel` for a name with no row, naming the close
    rows, or the reason a name the SDKs list is left out.
    """
    if not isinstance(model, str) or not model:
        raise InvalidArgument(f"model must be a non-empty str, got {model!r}")
    row = _find(model)
    if row is not None:
        return row
    bare = _SNAPSHOT.sub("", _PREFIX.sub("", model))
    why = NOT_LISTED.get(model) or NOT_LISTED.get(bare)
    if why is not None:
        hint = f"{model!r} is not in ctxtrim's model table: {why}"
    else:
        close = difflib.get_close_matches(bare, [*_user, *TABLE], n=3, cutoff=0.75)
        near = f" (close: {', '.join(close)})" if close else ""
        hint = f"unknown model {model!r}{near}"
    raise UnknownModel(
        f"{hint}; give its limits with ctxtrim.models.register({model!r}, "
        "context_window=..., max_output_tokens=...)",
        model,
    )


def context_window(model: str) -> int:
    """``lookup(model).context_window``."""
    return lookup(model).context_window


def _check_tokens(name: str, value: object, *, optional: bool = False) -> Any:
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        what = "an int >= 1" + (" or None" if optional else "")
        raise InvalidArgument(f"{name} must be {what}, got {value!r}")
    return value


def register(
    model: str,
    *,
    context_window: int,
    max_output_tokens: int | None = None,
    provider: Provider = "other",
    source: str = "registered",
) -> ModelLimits:
    """Add ``model`` to the table, or override its row (and so its snapshots'), for this
    process; returns the new row. Registered rows are found before the built-in ones."""
    if not isinstance(model, str) or not model.strip():
        raise InvalidArgument(f"model must be a non-empty str, got {model!r}")
    _check_tokens("context_window", context_window)
    _check_tokens("max_output_tokens", max_output_tokens, optional=True)
    if max_output_tokens is not None and max_output_tokens > context_window:
        raise InvalidArgument(
            f"max_output_tokens ({max_output_tokens}) must be at most context_window "
            f"({context_window})"
        )
    if provider not in ("openai", "anthropic", "google", "other"):
        raise InvalidArgument(
            f"provider must be 'openai', 'anthropic', 'google' or 'other', got {provider!r}"
        )
    if not isinstance(source, str):
        raise InvalidArgument(f"source must be a str, got {source!r}")
    row = ModelLimits(model, provider, context_window, max_output_tokens, source)
    with _lock:
        _user[model] = row
    return row


def unregister(model: str) -> bool:
    """Remove a row :func:`register` added (the built-in row, if any, applies again);
    returns whether there was one."""
    with _lock:
        return _user.pop(model, None) is not None


def budget(model: str, fraction: float = 1.0, *, reserve_output: bool | int = False) -> int:
    """Tokens a history may use on ``model``: ``fraction`` of what is left of the context
    window once the answer's room is taken off.

    ``reserve_output``: ``False`` (keep no room: the provider counts the answer against the
    window, so leave it room some other way), ``True`` (the model's ``max_output_tokens``;
    :class:`~ctxtrim.errors.UnknownModel` is not raised for that, but
    :class:`~ctxtrim.errors.InvalidArgument` is when the table does not know the limit), or
    the ``max_tokens`` you send. So ``budget("gpt-4.1", 0.8, reserve_output=4096)`` is
    ``int(0.8 * (1_047_576 - 4096))``.
    """
    if (
        isinstance(fraction, bool)
        or not isinstance(fraction, (int, float))
        or not 0 < fraction <= 1
    ):
        raise InvalidArgument(f"fraction must be a number in (0, 1], got {fraction!r}")
    row = lookup(model)
    if reserve_output is True:
        if row.max_output_tokens is None:
            raise InvalidArgument(
                f"reserve_output=True: the model table does not know {row.name}'s output "
                "limit; pass the max_tokens you send (reserve_output=8192) or register it"
            )
        reserve = row.max_output_tokens
    elif reserve_output is False:
        reserve = 0
    else:
        reserve = _check_tokens("reserve_output", reserve_output)
    if reserve >= row.context_window:
        raise InvalidArgument(
            f"reserve_output ({reserve}) must be less than {row.name}'s context window "
            f"({row.context_window})"
        )
    return max(1, int((row.context_window - reserve) * fraction))


def fit_context_window(
    model: str, fraction: float = 1.0, *, reserve_output: bool | int = False, **options: Any
) -> FitContextWindow:
    """``FitContextWindow(budget(model, fraction, reserve_output=...), **options)``: the
    strategy keeping the longest pair-safe suffix within that share of ``model``'s window
    (``options`` are :class:`~ctxtrim.FitContextWindow`'s: ``counter``, ``tools``...)."""
    from ctxtrim.strategies import FitContextWindow

    return FitContextWindow(budget(model, fraction, reserve_output=reserve_output), **options)
