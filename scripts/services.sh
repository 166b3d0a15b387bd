#!/usr/bin/env bash
# Throw-away Redis (>= 7) and PostgreSQL (>= 14) on 127.0.0.1, outside pytest (for the
# benches, or a shell session). The test suite and its fault tests start their own with the
# same code (tests/servers.py), the one way to start them.
#
#   eval "$(scripts/services.sh start)"   # prints export lines for the URLs and the state dir
#   scripts/services.sh stop [DIR]          # DIR defaults to $CTXTRIM_SERVICES_DIR
#
# Each server gets a free port and a data directory under a fresh temp dir; a stop removes
# everything. Install the binaries first: apt-get install redis-server postgresql.
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "$0")/../tests/servers.py" "$@"
