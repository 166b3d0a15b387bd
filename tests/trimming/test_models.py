"""The model table: lookups by SDK names and snapshots, the SDKs' own model lists covered,
budgets as a fraction of the window, user rows, and unknown names refused (never guessed)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest

from ctxtrim import FitContextWindow, InvalidArgument, Message, models
from ctxtrim.errors import UnknownModel


def _literal_names(alias: object) -> list[str]:
    """The string literals of an SDK's model type (a Literal, or a Union holding one)."""
    names: list[str] = []
    for arg in typing.get_args(alias) or ():
        if isinstance(arg, str):
            names.append(arg)
        else:
            names.extend(_literal_names(arg))
    return names


def _sdk_chat_models() -> list[str]:
    anthropic_types = pytest.importorskip("anthropic.types")
    openai_types = pytest.importorskip("openai.types")
    names = _literal_names(anthropic_types.Model) + _literal_names(openai_types.ChatModel)
    assert len(names) > 50  # the types were read, not an empty Union
    return names


@pytest.fixture(autouse=True)
def _no_leftover_rows() -> Iterator[None]:
    before = dict(models._user)
    yield
    models._user.clear()
    models._user.update(before)


def test_every_sdk_model_name_is_in_the_table_or_excluded_with_a_reason() -> None:
    missing = []
    for name in _sdk_chat_models():
        if name in models.NOT_LISTED:
            with pytest.raises(UnknownModel, match=models.NOT_LISTED[name]):
                models.lookup(name)
        else:
            try:
                models.lookup(name)
            except UnknownModel:
                missing.append(name)
    assert not missing, f"new SDK model names: add rows or NOT_LISTED entries: {missing}"


def test_excluded_names_are_still_named_by_the_sdks() -> None:
    names = set(_sdk_chat_models())
    stale = [n for n in models.NOT_LISTED if n not in names]
    assert not stale, f"NOT_LISTED names no SDK lists any more: {stale}"


@pytest.mark.parametrize(
    ("name", "row", "window", "output"),
    [
        ("claude-sonnet-4-5", "claude-sonnet-4-5", 200_000, 64_000),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", 200_000, 64_000),
        ("claude-opus-4-1-20250805", "claude-opus-4-1", 200_000, 32_000),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet", 200_000, 64_000),
        ("gpt-4.1", "gpt-4.1", 1_047_576, 32_768),
        ("gpt-4.1-2025-04-14", "gpt-4.1", 1_047_576, 32_768),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini", 1_047_576, 32_768),
        ("gpt-4o-mini", "gpt-4o-mini", 128_000, 16_384),
        ("gpt-4o-2024-08-06", "gpt-4o", 128_000, 16_384),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13", 128_000, 4_096),  # a row of its own
        ("o3", "o3", 200_000, 100_000),
        ("gpt-5-2025-08-07", "gpt-5", 400_000, 128_000),
        ("gemini-2.5-pro", "gemini-2.5-pro", 1_048_576, 65_536),
        ("models/gemini-2.0-flash-001", "gemini-2.0-flash", 1_048_576, 8_192),
    ],
)
def test_lookup_by_alias_snapshot_and_prefix(name: str, row: str, window: int, output: int) -> None:
    limits = models.lookup(name)
    assert (limits.name, limits.context_window, limits.max_output_tokens) == (
        row,
        window,
        output,
    )
    assert models.context_window(name) == window


def test_rows_state_their_source_and_are_sane() -> None:
    for name, row in models.TABLE.items():
        assert row.name == name and row.source
        assert row.provider in ("openai", "anthropic", "google")
        assert row.context_window >= 8_192
        if row.max_output_tokens is not None:
            assert 0 < row.max_output_tokens <= row.context_window, name
    assert models.TABLE_DATE in (models.__doc__ or "")
    assert "genai-prices" in (models.__doc__ or "")


@pytest.mark.parametrize("name", ["gpt-7", "claude-sonet-4-5", "gemini-9-ultra", "my-finetune"])
def test_unknown_model_is_a_typed_error_never_a_guess(name: str) -> None:
    with pytest.raises(UnknownModel, match="register") as info:
        models.lookup(name)
    assert info.value.model == name
    assert isinstance(info.value, InvalidArgument) and isinstance(info.value, ValueError)
    with pytest.raises(UnknownModel):
        models.budget(name, 0.8)


def test_a_close_name_is_suggested_not_used() -> None:
    with pytest.raises(UnknownModel, match="close: claude-sonnet-4-5"):
        models.lookup("claude-sonet-4-5")


def test_excluded_sdk_name_says_why() -> None:
    with pytest.raises(UnknownModel, match="no published context window"):
        models.lookup("gpt-6.2-sol")


@pytest.mark.parametrize("bad", ["", None, 3])
def test_bad_model_argument(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="model must be a non-empty str"):
        models.lookup(bad)  # type: ignore[arg-type]


def test_budget_as_a_fraction_with_and_without_output_room() -> None:
    assert models.budget("gpt-4.1") == 1_047_576
    assert models.budget("gpt-4.1", 0.8) == int(1_047_576 * 0.8)
    assert models.budget("gpt-4.1", 0.8, reserve_output=True) == int((1_047_576 - 32_768) * 0.8)
    assert models.budget("claude-sonnet-4-5", 0.5, reserve_output=8_000) == 96_000


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fraction": 0}, "fraction must be a number in"),
        ({"fraction": 1.5}, "fraction must be a number in"),
        ({"fraction": True}, "fraction must be a number in"),
        ({"reserve_output": 0}, "reserve_output must be an int >= 1"),
        ({"reserve_output": 200_000}, "must be less than claude-sonnet-4-5's context window"),
    ],
)
def test_budget_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        models.budget("claude-sonnet-4-5", **kwargs)  # type: ignore[arg-type]


def test_reserve_output_true_refuses_an_unknown_output_limit() -> None:
    assert models.lookup("claude-opus-4-6").max_output_tokens is None
    with pytest.raises(InvalidArgument, match="does not know claude-opus-4-6's output limit"):
        models.budget("claude-opus-4-6", reserve_output=True)


def test_register_adds_and_overrides_and_unregister_restores() -> None:
    row = models.register("acme-chat", context_window=32_000, max_output_tokens=4_000)
    assert models.lookup("acme-chat") == row and models.lookup("acme-chat-2026-01-02") == row
    models.register("gpt-4o", context_window=64_000, provider="openai")
    assert models.lookup("gpt-4o-2024-11-20").context_window == 64_000  # snapshots follow
    assert models.unregister("gpt-4o") and not models.unregister("gpt-4o")
    assert models.lookup("gpt-4o").context_window == 128_000


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"context_window": 0}, "context_window must be an int >= 1"),
        ({"context_window": 10, "max_output_tokens": 11}, "at most context_window"),
        ({"context_window": 10, "max_output_tokens": 1.5}, "max_output_tokens must be"),
        ({"context_window": 10, "provider": "acme"}, "provider must be"),
    ],
)
def test_register_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidArgument, match=match):
        models.register("x", **kwargs)  # type: ignore[arg-type]


def test_fit_context_window_for_a_model() -> None:
    strategy = models.fit_context_window("gpt-4o-mini", 0.5, reserve_output=True)
    assert isinstance(strategy, FitContextWindow)
    assert strategy.budget == int((128_000 - 16_384) * 0.5)
    models.register("tiny", context_window=200)
    history = [Message.user("task")] + [Message.user("word " * 40) for _ in range(6)]
    kept = models.fit_context_window("tiny", 0.5)(history)
    assert kept[0] is history[0] and len(kept) < len(history)
