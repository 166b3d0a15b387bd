"""scripts/peer_tests.py (``make peer-tests``) without the package index: the import swap,
the choice of the tests that touch a replaced component, and the expected-differences
bookkeeping. The run itself (download, pytest) is the Makefile target, run by CI."""

from __future__ import annotations

import ast
import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("tomllib", reason="the script reads its list with tomllib (Python >= 3.11)")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "peer_tests.py"


@pytest.fixture(scope="module")
def peer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("peer_tests", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["peer_tests"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SOURCE = textwrap.dedent(
    """\
    import pytest
    from agents import (
        Agent,
        SQLiteSession,
        Runner,
    )
    from agents.memory import SessionSettings


    @pytest.fixture
    def backend():
        return SQLiteSession("s")


    @pytest.fixture
    def wrapped(backend):
        return backend


    def test_uses_fixture(wrapped):
        pass


    def test_direct():
        SQLiteSession("x")


    def make():
        return SQLiteSession("h")


    def test_via_helper():
        make()


    def test_unrelated():
        Agent(name="a")


    async def test_local_import():
        from agents.memory import SQLiteSession as S
        S("y")


    class TestThing:
        def test_method(self):
            SQLiteSession("z")

        def test_other(self):
            pass
    """
)


def swap(peer: ModuleType) -> object:
    return peer.Swap(
        ("agents", "agents.memory"),
        "SQLiteSession",
        "ctxtrim.integrations.openai_agents",
        "CtxtrimSession",
    )


def test_rewrite_swaps_every_import_of_the_component_and_keeps_the_rest(
    peer: ModuleType,
) -> None:
    text, swapped = peer.rewrite(SOURCE, (swap(peer),))
    assert swapped == {"SQLiteSession"}
    assert "from agents import Agent, Runner\n" in text
    assert (
        "from ctxtrim.integrations.openai_agents import CtxtrimSession as SQLiteSession\n" in text
    )
    # The local import inside a function keeps its indentation and its local name.
    assert "    from ctxtrim.integrations.openai_agents import CtxtrimSession as S\n" in text
    assert "from agents.memory import SessionSettings\n" in text
    left = [
        alias.name
        for node in ast.walk(ast.parse(text))  # still valid Python
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("agents")
        for alias in node.names
    ]
    assert left == ["Agent", "Runner", "SessionSettings"]


def test_rewrite_reports_nothing_swapped_when_the_import_is_absent(peer: ModuleType) -> None:
    text, swapped = peer.rewrite("from agents import Agent\n", (swap(peer),))
    assert swapped == set() and text == "from agents import Agent\n"


def test_touching_selects_the_tests_that_use_the_component(peer: ModuleType) -> None:
    tests = peer.touching(SOURCE, {"SQLiteSession"})
    # Through a fixture chain, a helper, directly, by a local import, in a Test class.
    assert sorted(tests) == [
        "TestThing::test_method",
        "test_direct",
        "test_local_import",
        "test_uses_fixture",
        "test_via_helper",
    ]


def test_listed_matches_an_id_or_every_case_of_a_parametrized_test(peer: ModuleType) -> None:
    expected = {"f.py::test_a": "why", "f.py::test_b[x]": "why"}
    assert peer.listed("f.py::test_a", expected) == "f.py::test_a"
    assert peer.listed("f.py::test_a[1-2]", expected) == "f.py::test_a"
    assert peer.listed("f.py::test_b[x]", expected) == "f.py::test_b[x]"
    assert peer.listed("f.py::test_b[y]", expected) is None
    assert peer.listed("f.py::test_c", expected) is None


def test_the_repository_list_is_well_formed_and_names_known_frameworks(
    peer: ModuleType,
) -> None:
    expected = peer.load_expected()
    assert set(expected) == {fw.name for fw in peer.FRAMEWORKS}
    for tests in expected.values():
        for test, why in tests.items():
            assert "::" in test and test.startswith("tests/") and len(why) > 20


def test_a_malformed_entry_is_refused(peer: ModuleType, tmp_path: Path) -> None:
    bad = tmp_path / "list.toml"
    bad.write_text(
        '[[difference]]\nframework = "langchain"\nkind = "deliberate"\nwhy = "x"\ntests = ["a"]\n'
    )
    with pytest.raises(SystemExit, match="kind must be pair-safety"):
        peer.load_expected(bad)
    bad.write_text(
        '[[difference]]\nframework = "nope"\nkind = "pair-safety"\nwhy = "x"\ntests = ["a"]\n'
    )
    with pytest.raises(SystemExit, match="needs framework"):
        peer.load_expected(bad)
