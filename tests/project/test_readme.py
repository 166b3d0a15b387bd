"""The README's (and the package description's) Python snippets, its command-line examples
and the quickstart example run as written, and the numbers it states about ctxtrim's own
behaviour are what the code computes (scripts/readme_numbers.py)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ctxtrim import observe

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = [
    code
    for doc in ("README.md", "docs/package.md")  # the guide, and the package's description
    for code in re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.S)
]


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code: str) -> None:
    if "langchain_middleware" in code and sys.version_info < (3, 11):
        pytest.skip("the LangChain v1 middleware snippet needs langchain 1.5: Python >= 3.11")
    before = observe.state.listeners
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    # A snippet that starts watching stops too: one left running would watch every test after
    # it (a report per trim, listeners holding what they were told).
    assert observe.state.listeners == before


def test_quickstart_example_runs() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "over budget: False; violations in any request: 0" in out
    assert "offline compactions" in out and "after 0 offline" not in out


#: The README's CLI examples: a command and the report line it prints, quoted together.
CLI_EXAMPLES = re.findall(
    r"`ctxtrim (trim [^`]+)` prints\n`(ctxtrim: [^`]+)`", (ROOT / "README.md").read_text()
)


def test_the_readme_has_cli_examples_to_check() -> None:
    assert CLI_EXAMPLES  # the pattern below still finds them


@pytest.mark.parametrize(("command", "printed"), CLI_EXAMPLES)
def test_a_readme_cli_example_prints_what_the_readme_says(
    command: str, printed: str, tmp_path: Path
) -> None:
    args = [tmp_path / "out.json" if a == "out.json" else a for a in command.split()]
    result = subprocess.run(
        [sys.executable, "-m", "ctxtrim", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == printed


NUMBERS = ROOT / "scripts" / "readme_numbers.py"


@pytest.fixture(scope="module")
def readme_numbers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("readme_numbers", NUMBERS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_numbers"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_readme_numbers_are_what_the_code_says() -> None:
    """scripts/readme_numbers.py recomputes every console example and stated fact."""
    proc = subprocess.run(
        [sys.executable, str(NUMBERS), "--check"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every console example: as the README says" in proc.stdout


def test_a_number_that_moved_is_named_with_its_true_value(readme_numbers: ModuleType) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    icon = "a 64\N{MULTIPLICATION SIGN}64 icon"
    edited = text.replace(f"{icon} 255", f"{icon} 256")
    edited = edited.replace('"messages_after": 33', '"messages_after": 27')
    assert edited.count("256") == text.count("256") + 1 and edited != text
    texts = {readme: edited}
    facts = readme_numbers.check_facts(texts)
    assert [(m.what, m.stated, m.actual) for m in facts] == [
        ("OpenAI's price of a 1280x800 and a 64x64 image", "256", "255")
    ]
    (console,) = readme_numbers.check_console(texts)
    assert console.what.endswith("--max-tokens 3000 -o trimmed.json --json")
    assert '"messages_after": 27' in console.stated and '"messages_after": 33' in console.actual
    fixed = edited[: console.span[0]] + console.actual + edited[console.span[1] :]
    assert readme_numbers.check_console({readme: fixed}) == []  # what --write would write
