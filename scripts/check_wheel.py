"""Check that the Rust extension in each wheel ships without a symbol table or debug info,
and print the wheel's size and the extension's, unpacked.

Run: ``python scripts/check_wheel.py dist/ctxtrim-*.whl`` (``make wheel`` runs it on the
wheels it builds). Exit 1, naming the wheel, if an extension still has a ``.symtab`` or a
``.debug_*`` section: the release profile in Cargo.toml strips them (``strip = "symbols"``),
and a debug build left in place would be 20 times the size. An ELF extension is checked
(Linux wheels); a macOS or Windows one is only measured. A path to a bare ``.so`` works too.
"""

from __future__ import annotations

import argparse
import struct
import sys
import zipfile
from pathlib import Path


def elf_sections(data: bytes) -> list[str] | None:
    """The section names of a 64-bit little-endian ELF file, or None for anything else."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_offset, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    names = data[strtab_offset : strtab_offset + strtab_size]
    return [names[h[0] : names.index(b"\0", h[0])].decode() for h in headers]


def unstripped(sections: list[str]) -> list[str]:
    return [s for s in sections if s == ".symtab" or s.startswith(".debug")]


def extensions(path: Path) -> list[tuple[str, bytes]]:
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as wheel:
            return [
                (name, wheel.read(name))
                for name in wheel.namelist()
                if name.startswith("ctxtrim/_core") and not name.endswith(".pyi")
            ]
    return [(path.name, path.read_bytes())]


def check(path: Path) -> bool:
    found = extensions(path)
    if not found:
        print(f"{path}: no ctxtrim/_core extension in it", file=sys.stderr)
        return False
    ok = True
    for name, data in found:
        sections = elf_sections(data)
        size = f"{path.name}: {path.stat().st_size // 1024} KB; {name} {len(data) // 1024} KB"
        if sections is None:
            print(f"{size} (not ELF: not checked)")
        elif bad := unstripped(sections):
            print(f"{size}, NOT stripped: {', '.join(bad)}", file=sys.stderr)
            ok = False
        else:
            print(f"{size}, stripped")
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="wheels or extension files")
    args = parser.parse_args()
    results = [check(p) for p in args.paths]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
