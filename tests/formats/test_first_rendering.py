"""A message's first JSON rendering on the bytes path (``to_*_json``): made in the core for
common shapes (the format's core renderer, then the encoder), by the Python renderer for the
rest. Both must keep and return exactly what the Python path made before."""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import Message
from ctxtrim.errors import InvalidMessage
from ctxtrim.formats import anthropic, openai_chat, openai_responses

from strategies import histories, messages

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MODULES = [openai_chat, openai_responses, anthropic]


def _fresh(ms: list[Message]) -> list[Message]:
    return [Message.decode(m.encode()) for m in ms]


def _json(module: ModuleType, ms: list[Message]) -> bytes | str:
    try:
        out: bytes = module._RENDERINGS.json_bytes(ms)
    except InvalidMessage as e:
        return f"{e.path}: {e}"
    return out


@PROPS
@given(ms=st.one_of(histories(), st.lists(messages(), max_size=6)))
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_the_first_rendering_in_the_core_is_the_python_one(
    module: ModuleType, ms: list[Message]
) -> None:
    renderings = module._RENDERINGS
    core, python = _fresh(ms), _fresh(ms)
    got = _json(module, core)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(renderings, "_fast", lambda message: None)  # every message via render_one
        expected = _json(module, python)
    assert got == expected
    attr = renderings._attr
    for a, b in zip(core, python, strict=True):
        assert getattr(a, attr, None) == getattr(b, attr, None)  # the kept objects
        assert getattr(a, attr + "_json", None) == getattr(b, attr + "_json", None)
    assert _json(module, core) == got  # then from what was kept


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_common_shapes_are_first_rendered_without_the_python_renderer(
    module: ModuleType,
) -> None:
    ms = [
        Message.user("look at a.py"),
        Message.assistant("reading", tool_uses=[("c1", "read", {"path": "a.py"})]),
        Message.tool_results(("c1", "x = 1")),
        Message.assistant("done"),
    ]

    def boom(message: Message, path: str) -> object:
        raise AssertionError(f"the Python renderer ran for {path}")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(module._RENDERINGS, "_render", boom)
        got = module._RENDERINGS.json_bytes(ms)
    assert got == module._RENDERINGS.json_bytes(_fresh(ms))
