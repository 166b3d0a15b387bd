"""``python -m ctxtrim.bench``: the side-by-side table (see :func:`ctxtrim.bench.cli.main`)."""

from ctxtrim.bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
