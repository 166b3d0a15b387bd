"""Private Redis and PostgreSQL servers for the fault tests, and the fault-count report.

Each server runs on 127.0.0.1 on a free port with its own data directory, in its own
process group, so a test can SIGKILL, SIGSTOP or SIGCONT it without touching anything else
(never the shared servers of ``scripts/services.sh``). ``ready`` checks mean "answers
commands": Redis past loading its AOF (``INFO persistence`` says ``loading:0``), PostgreSQL
past crash recovery (a connection succeeds).

:func:`report` prints a fault test's counts (acknowledged, lost, duplicated,
unknown-outcome) into the pytest run, whatever the capture mode.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")
PG_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), reverse=True)
AS_ROOT = os.geteuid() == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], bool], what: str, seconds: float = 30) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise TimeoutError(f"{what} did not come up in {seconds}s")


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _descendants(root: int) -> list[int]:
    """Every live process below ``root`` (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class Server:
    """A server process in its own process group (signalled whole)."""

    def __init__(
        self,
        argv: list[str],
        port: int,
        user: str | None = None,
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self.argv, self.port, self.user = argv, port, user
        self.ready = ready or (lambda: answers(port))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            user=self.user,
        )
        wait_for(self.ready, self.argv[0])

    def signal(self, sig: int) -> None:
        """Signal the server and every process under it. PostgreSQL backends call
        ``setsid()``, so the process group alone would miss them."""
        assert self.proc is not None
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self) -> None:
        assert self.proc is not None
        self.signal(signal.SIGCONT)  # a stopped process dies on SIGKILL too; be explicit
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        wait_for(lambda: not answers(self.port), "shutdown", 10)

    def pause(self) -> None:
        """SIGSTOP: the kernel still accepts connections and data, nothing answers."""
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill9()


def redis_loaded(port: int) -> bool:
    """The server answers commands: ``loading:0`` (a restart replays the AOF first, and
    until then every data command gets ``LOADING``)."""
    import redis

    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        try:
            info = client.info("persistence")
        finally:
            client.close()
    except redis.RedisError:
        return False
    return int(info.get("loading", 1)) == 0 and int(info.get("async_loading", 0)) == 0


def redis_server(workdir: Path, *extra: str) -> tuple[Server, str]:
    """A private redis-server (AOF on, ``appendfsync always``) and its URL; not started."""
    assert REDIS_SERVER is not None
    port = free_port()
    server = Server(
        [
            REDIS_SERVER,
            *("--bind", "127.0.0.1", "--port", str(port), "--dir", str(workdir)),
            *("--save", "", "--appendonly", "yes", "--appendfsync", "always", *extra),
        ],
        port,
        ready=lambda: redis_loaded(port),
    )
    return server, f"redis://127.0.0.1:{port}/0"


def postgres_server(workdir: Path) -> tuple[Server, str]:
    """A private, initdb'd PostgreSQL (run as ``postgres`` when we are root) and its DSN;
    not started. ``workdir`` must be reachable by that user (not pytest's tmp_path)."""
    bindir = Path(PG_BINS[0]).parent
    user = "postgres" if AS_ROOT else None
    data = workdir / "data"
    data.mkdir()
    if AS_ROOT:
        shutil.chown(workdir, "postgres")
        shutil.chown(data, "postgres")
    subprocess.run(
        [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        stdout=subprocess.DEVNULL,
        user=user,
    )
    port = free_port()
    dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def accepts_queries() -> bool:  # past crash recovery, not only listening
        import psycopg

        try:
            psycopg.connect(dsn, connect_timeout=1).close()
            return True
        except psycopg.OperationalError:
            return False

    server = Server(
        [
            str(bindir / "postgres"),
            *("-D", str(data), "-p", str(port), "-k", str(workdir)),
            *("-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"),
        ],
        port,
        user=user,
        ready=accepts_queries,
    )
    return server, dsn


def report(
    request: pytest.FixtureRequest,
    test: str,
    backend: str,
    *,
    acknowledged: int,
    lost: int,
    duplicated: int,
    unknown: int,
    **more: int,
) -> None:
    """One line of fault counts in the run's output (shown even when output is captured).
    ``unknown`` counts calls whose outcome the client could not know (a writer killed
    mid-call, ``OutcomeUnknownError``)."""
    extra = "".join(f" {k}={v}" for k, v in more.items())
    line = (
        f"fault counts [{test}/{backend}]: acknowledged={acknowledged} lost={lost}"
        f" duplicated={duplicated} unknown-outcome={unknown}{extra}"
    )
    plugins = request.config.pluginmanager
    reporter = plugins.get_plugin("terminalreporter")
    capture = plugins.get_plugin("capturemanager")
    if reporter is None or capture is None:  # pragma: no cover - pytest without them
        print(line)
        return
    with capture.global_and_fixture_disabled():  # what capsys.disabled() does
        reporter.write_line(line)
