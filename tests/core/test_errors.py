"""One exception hierarchy, defined in ctxtrim.errors and raised by the Rust extension."""

from __future__ import annotations

import ast
import importlib
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import ctxtrim
from ctxtrim import _core, errors, formats, strategies

# Imported only to look for exception classes; a missing optional dependency skips a module.
_OPTIONAL = ("ctxtrim.integrations.", "ctxtrim.stores.", "ctxtrim.transports.", "ctxtrim.bench")


def _ctxtrim_modules() -> list[ModuleType]:
    out = []
    for info in pkgutil.walk_packages(ctxtrim.__path__, "ctxtrim."):
        try:
            out.append(importlib.import_module(info.name))
        except ImportError:
            if not info.name.startswith(_OPTIONAL):
                raise
    return out


def test_every_exception_class_is_defined_in_ctxtrim_errors() -> None:
    defined = {
        f"{obj.__module__}.{obj.__qualname__}"
        for module in _ctxtrim_modules()
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, BaseException)
        and obj.__module__.startswith("ctxtrim")
    }
    # The CLI's private error becomes one "ctxtrim: error: ..." line and never leaves main().
    defined.discard("ctxtrim.cli.CliError")
    # A memo's private signal to run the strategy's full pass instead; caught where raised.
    defined.discard("ctxtrim._memo._Fallback")
    assert defined == {f"ctxtrim.errors.{name}" for name in errors.__all__ if name[0].isupper()}


def test_the_extension_defines_no_exception_class() -> None:
    assert not [
        name
        for name, obj in vars(_core).items()
        if isinstance(obj, type) and issubclass(obj, BaseException)
    ]


def test_errors_module_imports_nothing_from_ctxtrim() -> None:
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [name for name in imported if name and name.startswith("ctxtrim")]


def test_the_extension_raises_the_classes_of_ctxtrim_errors() -> None:
    # In a fresh interpreter that never imported ctxtrim.errors itself: the extension
    # imports it on first use, and the raised class is the one defined there.
    code = (
        "import sys, ctxtrim._core as c\n"
        "try:\n"
        "    c.TurnId.parse('x9')\n"
        "except Exception as e:\n"
        "    assert type(e) is sys.modules['ctxtrim.errors'].InvalidTurnId, type(e)\n"
        "    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    with pytest.raises(errors.InvalidTurnId):
        ctxtrim.TurnId.parse("x9")
    with pytest.raises(errors.InvalidMessage):
        ctxtrim.MessageLog().append("not a message")  # type: ignore[arg-type]
    log = ctxtrim.MessageLog([ctxtrim.Message.user("a")])
    with pytest.raises(errors.StaleGenerationError) as err:
        log.replace_prefix(1, [], log.generation + 1)
    assert (err.value.expected, err.value.actual) == (log.generation + 1, log.generation)


def test_old_import_locations_still_work() -> None:
    assert strategies.InvalidStrategy is errors.InvalidStrategy is ctxtrim.InvalidStrategy
    assert formats.FormatError is errors.FormatError is ctxtrim.FormatError
    with pytest.raises(errors.InvalidStrategy):
        strategies.FitContextWindow(0)
    with pytest.raises(errors.FormatError):
        formats.load([], "nope")


@pytest.mark.parametrize(
    "cls",
    [getattr(errors, name) for name in errors.__all__ if name[0].isupper()],
    ids=lambda c: c.__name__,
)
def test_hierarchy(cls: type[Exception]) -> None:
    assert issubclass(cls, errors.CtxtrimError)
    bad_input = {"InvalidMessage", "MessageTooLarge", "InvalidTurnId", "InvalidSessionId"}
    bad_input |= {"InvalidToolArguments", "InvalidArgument", "NotJSONData"}
    bad_input |= {"InvalidStrategy", "FormatError", "CompactionSettingsError", "UnknownModel"}
    assert issubclass(cls, ValueError) == (cls.__name__ in bad_input)


def test_stale_generation_error_keeps_its_generations_through_pickle() -> None:
    err = errors.stale_generation_error(3, 5)
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.expected, back.actual) == (
        errors.StaleGenerationError,
        str(err),
        3,
        5,
    )
