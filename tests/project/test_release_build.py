"""The release build ships a stripped extension: Cargo's release profile strips it, and
scripts/check_wheel.py (run by ``make wheel`` on every wheel it builds, and by the release
workflow on the wheels it publishes) refuses a wheel whose extension still carries a
symbol table or debug info."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ctxtrim

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_wheel.py"


def check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True
    )


def test_the_release_profile_strips_the_extension() -> None:
    cargo = (ROOT / "Cargo.toml").read_text()
    release = cargo.split("[profile.release]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^strip = ("symbols"|"debuginfo"|true)$', release, re.M), release
    assert "make wheel" in SCRIPT.read_text()
    assert "scripts/check_wheel.py dist/ctxtrim-*.whl" in (ROOT / "Makefile").read_text()
    release = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    assert "python scripts/check_wheel.py dist/*.whl" in release  # the published wheels too


@pytest.fixture
def extension() -> Path:
    found = [
        p for p in Path(ctxtrim.__file__).parent.glob("_core.*") if p.suffix in (".so", ".pyd")
    ]
    if not found or found[0].read_bytes()[:4] != b"\x7fELF":
        pytest.skip("the installed extension is not an ELF file (Linux only)")
    return found[0]


def wheel_of(extension: Path, directory: Path) -> Path:
    wheel = directory / "ctxtrim-0.0.0-cp3-cp3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("ctxtrim/__init__.py", "")
        zf.write(extension, f"ctxtrim/{extension.name}")
        zf.writestr("ctxtrim/_core.pyi", "")
    return wheel


def test_a_wheel_with_symbols_is_refused_and_a_stripped_one_passes(
    extension: Path, tmp_path: Path
) -> None:
    objcopy = shutil.which("objcopy")
    if objcopy is None:
        pytest.skip("binutils' objcopy is not installed (apt-get install binutils)")
    stripped = tmp_path / "stripped" / extension.name
    stripped.parent.mkdir()
    subprocess.run([objcopy, "--strip-all", str(extension), str(stripped)], check=True)
    # Whatever the installed build: a copy of the stripped one with a debug section added.
    note = tmp_path / "note.txt"
    note.write_text("debug info")
    full = tmp_path / "full" / extension.name
    full.parent.mkdir()
    add = ["--add-section", f".debug_ctxtrim={note}"]
    subprocess.run([objcopy, *add, str(stripped), str(full)], check=True)

    refused = check(wheel_of(full, full.parent))
    assert refused.returncode == 1 and "NOT stripped: .debug_ctxtrim" in refused.stderr
    passed = check(wheel_of(stripped, stripped.parent), stripped)
    assert passed.returncode == 0, passed.stderr
    lines = passed.stdout.splitlines()
    assert len(lines) == 2 and all(line.endswith(", stripped") for line in lines)
    assert f"ctxtrim/{extension.name} {stripped.stat().st_size // 1024} KB" in lines[0]


def test_a_file_without_the_extension_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "other-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("other/__init__.py", "")
    result = check(wheel)
    assert result.returncode == 1 and "no ctxtrim/_core extension" in result.stderr
