"""Build the reference documentation: one HTML page per public module, from the docstrings
and the extension's stub (``ctxtrim/_core.pyi``), with pdoc.

    python scripts/build_docs.py [OUT_DIR]      # default: site/

Every public module is documented: the package walk finds them (a name starting with ``_``
is private; ``ctxtrim.bench`` is the benchmark harness, not API), so a new module needs no
list kept here. ``make docs`` builds the site and checks its links (LinkChecker); CI runs it.
"""

from __future__ import annotations

import importlib

# Loaded before ctxtrim, as in an application that logs: ctxtrim.observe then makes its
# logger at import, and its `logger` is documented with its value.
import logging  # noqa: F401
import pkgutil
import sys
from pathlib import Path

import pdoc

import ctxtrim

EXCLUDED = ("ctxtrim.bench",)


def public_modules() -> list[str]:
    """Every public module that imports here; one that needs a framework this venv cannot
    install (axio needs 3.12; google-adk needs google-genai < 3, which the test extra
    excludes) is left out, and said so."""
    names = ["ctxtrim"]
    for info in pkgutil.walk_packages(ctxtrim.__path__, "ctxtrim."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts) or info.name.startswith(EXCLUDED):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as e:
            print(f"left out {info.name}: {e}", file=sys.stderr)
            continue
        names.append(info.name)
    return names


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "site")
    modules = public_modules()
    pdoc.render.configure(docformat="restructuredtext", show_source=False)
    pdoc.pdoc(*modules, output_directory=out)
    print(f"{len(modules)} modules documented in {out}/")


if __name__ == "__main__":
    main()
