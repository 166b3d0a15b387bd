#!/usr/bin/env bash
# Throw-away Redis and PostgreSQL servers on 127.0.0.1 for the store tests.
#
#   eval "$(scripts/services.sh start)"   # prints export lines for the URLs and the state dir
#   scripts/services.sh stop [DIR]          # DIR defaults to $CTXTRIM_SERVICES_DIR
#
# Each server gets a free port and a data directory under a fresh temp dir, so runs never
# share state and a stop removes everything. Redis runs with AOF on and `appendfsync always`
# (the durability the kill -9 tests rely on); PostgreSQL is initdb'd with trust auth for the
# local user `postgres` and runs as that user (initdb refuses root). Debian's `redis-server`
# and `postgresql` packages are installed when missing (needs root or passwordless sudo).
# Progress goes to stderr; only the export lines go to stdout.
set -euo pipefail

log() { printf 'services: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif sudo -n true 2>/dev/null; then sudo -n "$@"; else
        die "need root to run: $*"
    fi
}

pg_bindir() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    return 1
}

ensure_installed() {
    local missing=()
    command -v redis-server >/dev/null || missing+=(redis-server)
    pg_bindir >/dev/null || missing+=(postgresql)
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
    # The Debian packages start a system-wide instance on the default ports; we never use them.
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Run a command as the postgres user when we are root (initdb and postgres refuse root).
as_pg() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
    ensure_installed
    local dir redis_port pg_port bindir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/ctxtrim-services.XXXXXX")
    chmod 755 "$dir"
    redis_port=$(free_port)
    pg_port=$(free_port)
    bindir=$(pg_bindir) || die "no PostgreSQL binaries under /usr/lib/postgresql"

    mkdir -p "$dir/redis"
    redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir/redis" --save '' \
        --appendonly yes --appendfsync always --daemonize yes \
        --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
    for _ in $(seq 100); do
        redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
        sleep 0.1
    done
    redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG || die "redis did not start ($dir/redis.log)"

    mkdir -p "$dir/pg"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir/pg"
    as_pg "$bindir/initdb" -D "$dir/pg/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
    as_pg "$bindir/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w -t 60 \
        -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1" start >/dev/null \
        || die "postgres did not start ($dir/pg/log)"
    echo "$bindir" >"$dir/pg_bindir"

    log "redis on 127.0.0.1:$redis_port, postgres on 127.0.0.1:$pg_port, state in $dir"
    echo "export CTXTRIM_SERVICES_DIR=$dir"
    echo "export CTXTRIM_REDIS_URL=redis://127.0.0.1:$redis_port/0"
    echo "export CTXTRIM_POSTGRES_DSN=postgresql://postgres@127.0.0.1:$pg_port/postgres"
}

stop() {
    local dir=${1:-${CTXTRIM_SERVICES_DIR:-}}
    [ -n "$dir" ] && [ -d "$dir" ] || die "usage: $0 stop DIR (or set CTXTRIM_SERVICES_DIR)"
    if [ -f "$dir/redis.pid" ]; then
        kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
    fi
    if [ -f "$dir/pg/data/postmaster.pid" ]; then
        as_pg "$(cat "$dir/pg_bindir")/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    for _ in $(seq 50); do
        [ -f "$dir/redis.pid" ] && kill -0 "$(cat "$dir/redis.pid")" 2>/dev/null || break
        sleep 0.1
    done
    rm -rf "$dir"
    log "stopped and removed $dir"
}

case "${1:-}" in
start) start ;;
stop) stop "${2:-}" ;;
*) die "usage: $0 start | stop [DIR]" ;;
esac
