"""The README's Python snippets and the quickstart example run as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet_runs(code: str) -> None:
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


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
