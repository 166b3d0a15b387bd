"""``python -m ctxtrim``: the ``ctxtrim`` command, for where the console script is not on
``PATH`` (a virtualenv that is not activated, ``pipx run``-less containers)."""

import sys

from ctxtrim.cli import main

if __name__ == "__main__":
    sys.exit(main())
