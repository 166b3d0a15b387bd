"""Throw-away Redis (>= 7) and PostgreSQL (>= 14) servers on 127.0.0.1: the one way the test
suite, the fault tests and ``scripts/services.sh`` start them.

* :func:`find_redis` / :func:`find_postgres` locate the binaries (``PATH`` first, then
  Debian's ``/usr/lib/postgresql/*/bin``, newest first) and say why when there are none.
* :func:`redis_server` / :func:`postgres_server` make a :class:`Server` on a free port with
  its data under a given directory. Redis runs with AOF on and ``appendfsync always`` (a
  returned write survives ``kill -9``); PostgreSQL is ``initdb``'d with trust auth for the
  user ``postgres`` and, when we are root (``initdb`` refuses root), runs as that user.
* A :class:`Server` runs in its own process group and is signalled whole
  (:meth:`Server.kill9`, :meth:`Server.pause` / :meth:`Server.resume` for SIGSTOP/SIGCONT),
  so a test can kill or freeze its private server and nothing else. It is ready when it
  answers commands, not merely when its port is open: Redis past loading its AOF
  (``INFO persistence`` says ``loading:0``), PostgreSQL past crash recovery (``pg_isready``).
  It can be started again after :meth:`Server.kill9` on the same data (crash recovery).
* :class:`Services` starts both for a test session (``tests/conftest.py``), unless
  ``CTXTRIM_REDIS_URL`` / ``CTXTRIM_POSTGRES_DSN`` already point at servers.
* :func:`report` prints a fault test's counts (acknowledged, lost, duplicated,
  unknown-outcome) into the pytest run, whatever the capture mode.

Run as a script (``python tests/servers.py start`` / ``stop DIR``, which is what
``scripts/services.sh`` does) it starts detached servers and prints the ``export`` lines.
Standard library only, so it runs before anything is installed.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import pytest

REDIS_MIN = 7
POSTGRES_MIN = 14
REDIS_VAR = "CTXTRIM_REDIS_URL"
POSTGRES_VAR = "CTXTRIM_POSTGRES_DSN"
AS_ROOT = os.geteuid() == 0
_T = TypeVar("_T")


class ServerError(RuntimeError):
    """A server did not start (the message holds the tail of its log)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], bool], what: str, seconds: float = 60) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise TimeoutError(f"{what} did not happen in {seconds:g}s")


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _version(argv: list[str]) -> tuple[int, ...] | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(?:v=|\) )(\d+)\.(\d+)", out)  # "v=7.0.15" / "(PostgreSQL) 15.18"
    return (int(m.group(1)), int(m.group(2))) if m else None


@functools.cache
def find_redis() -> tuple[str | None, str]:
    """``(path to redis-server, "")`` or ``(None, why not)``."""
    path = shutil.which("redis-server")
    if path is None:
        return None, "redis-server is not installed (apt-get install redis-server)"
    version = _version([path, "--version"])
    if version is None or version[0] < REDIS_MIN:
        return None, f"{path} is {version or 'of unknown version'}; Redis >= {REDIS_MIN} needed"
    return path, ""


@functools.cache
def find_postgres() -> tuple[Path | None, str]:
    """``(the bin dir holding postgres, initdb and pg_isready, "")`` or ``(None, why not)``."""
    dirs = [Path(p).parent for p in (shutil.which("postgres"), shutil.which("initdb")) if p]
    dirs += sorted(
        (Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/postgres")),
        key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
        reverse=True,
    )
    found = ""
    for d in dirs:
        if not all((d / b).exists() for b in ("postgres", "initdb", "pg_isready")):
            continue
        version = _version([str(d / "postgres"), "--version"])
        if version is not None and version[0] >= POSTGRES_MIN:
            if AS_ROOT and not _user_exists("postgres"):
                return None, "running as root and there is no 'postgres' user to run initdb as"
            return d, ""
        found = f"{d}/postgres is {version or 'of unknown version'}; "
    return None, (
        f"{found}PostgreSQL >= {POSTGRES_MIN} server binaries are not installed "
        "(apt-get install postgresql)"
    )


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def redis_loaded(port: int) -> bool:
    """The server answers commands: ``INFO persistence`` says ``loading:0`` (a restart
    replays the AOF first, and until then every data command gets ``-LOADING``). Spoken
    in RESP over a plain socket, so that it needs no driver."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n")
            reply = b""
            while not reply.startswith(b"-") and (
                b"\r\n" not in reply or len(reply) < _bulk_end(reply)
            ):
                chunk = s.recv(4096)
                if not chunk:
                    return False
                reply += chunk
    except OSError:
        return False
    if not reply.startswith(b"$"):
        return False  # an error reply: -LOADING, or the server is not Redis
    fields = dict(
        line.split(":", 1) for line in reply.decode(errors="replace").splitlines() if ":" in line
    )
    return fields.get("loading") == "0" and fields.get("async_loading", "0") == "0"


def _bulk_end(reply: bytes) -> int:
    """How long a RESP bulk string reply (``$<n>\\r\\n<n bytes>\\r\\n``) is in all."""
    head, _, _ = reply.partition(b"\r\n")
    try:
        return len(head) + 2 + int(head[1:]) + 2
    except ValueError:
        return 0


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


@dataclass
class Server:
    """A server process in its own process group, signalled whole."""

    argv: list[str]
    port: int
    url: str
    log: Path
    ready: Callable[[], bool]
    user: str | None = None
    stop_signal: int = signal.SIGTERM
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return Path(self.argv[0]).name

    def start(self, timeout: float = 60) -> None:
        """Start it and return once it answers commands (:class:`ServerError` with the tail
        of its log if it exits or is not ready within ``timeout`` seconds)."""
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=self.user,
            )
        end = time.monotonic() + timeout
        while not self.ready():
            if self.proc.poll() is not None or time.monotonic() > end:
                self.kill9()
                tail = self.log.read_text(errors="replace")[-2000:]
                raise ServerError(f"{self.name} on port {self.port} did not start:\n{tail}")
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        """Signal the server, its process group and every process under it. PostgreSQL
        backends call ``setsid()``, so the process group alone would miss them; the
        descendants are listed before any signal, while they are still its children."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            return  # reaped: its pid may belong to someone else now
        pids = [self.proc.pid, *_descendants(self.proc.pid)]
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self) -> None:
        """SIGKILL the server and every process under it; wait until the port is closed."""
        assert self.proc is not None
        self.signal(signal.SIGCONT)  # a stopped process dies on SIGKILL too; be explicit
        self.signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        wait_for(lambda: not answers(self.port), f"{self.name} shutdown", 10)

    def pause(self) -> None:
        """SIGSTOP: the kernel still accepts connections and data, nothing answers."""
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def stop(self) -> None:
        """A clean shutdown (resumed first if paused; SIGKILL after 30 s)."""
        if not self.running:
            return
        assert self.proc is not None
        self.signal(signal.SIGCONT)
        try:
            os.kill(self.proc.pid, self.stop_signal)
            self.proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill9()


def _own_dir(path: Path, user: str | None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    if user is not None:
        shutil.chown(path, user)
    return path


def _found(find: Callable[[], tuple[_T | None, str]]) -> _T:
    binary, why = find()
    if binary is None:
        raise ServerError(why)
    return binary


def redis_server(
    workdir: Path, *extra: str, binary: str | None = None, port: int | None = None
) -> Server:
    """A Redis server keeping its AOF in ``workdir`` (not started); ``extra`` arguments go
    to ``redis-server`` (e.g. ``--cluster-enabled yes``)."""
    binary = binary or _found(find_redis)
    port = port or free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    return Server(
        [
            binary,
            *("--bind", "127.0.0.1", "--port", str(port), "--dir", str(workdir)),
            *("--save", "", "--appendonly", "yes", "--appendfsync", "always", *extra),
            # A default Debian /etc/redis config is never read: no file argument.
        ],
        port=port,
        url=f"redis://127.0.0.1:{port}/0",
        log=workdir / "redis.log",
        ready=lambda: redis_loaded(port),
    )


def postgres_server(
    workdir: Path, *, binary: Path | None = None, port: int | None = None
) -> Server:
    """A PostgreSQL server on a cluster in ``workdir/data`` (``initdb`` runs now unless the
    cluster exists; the server is not started). ``binary`` is the bin dir
    :func:`find_postgres` finds. When we are root the server runs as ``postgres``, so
    ``workdir`` is made theirs (it must not be under a directory they cannot enter, such as
    pytest's ``tmp_path``)."""
    bindir = binary or _found(find_postgres)
    port = port or free_port()
    user = "postgres" if AS_ROOT else None
    _own_dir(workdir, user)
    data = workdir / "data"
    if not data.exists():
        subprocess.run(
            [
                str(bindir / "initdb"),
                *("-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            user=user,
        )
    log = workdir / "postgres.log"
    log.touch()
    if user is not None:
        shutil.chown(log, user)

    def accepts_queries() -> bool:  # past crash recovery, not only listening
        probe = [str(bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)]
        return subprocess.run(probe, check=False).returncode == 0

    return Server(
        [
            str(bindir / "postgres"),
            *("-D", str(data), "-p", str(port), "-k", str(workdir)),
            *("-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"),
        ],
        port=port,
        url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
        log=log,
        ready=accepts_queries,
        user=user,
        stop_signal=signal.SIGINT,  # "fast" shutdown
    )


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
    """One line of a fault test's counts in the run's output (shown even when output is
    captured). ``unknown`` counts calls whose outcome the client could not know (a writer
    killed mid-call, ``OutcomeUnknownError``)."""
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


@dataclass
class Services:
    """The session's Redis and PostgreSQL: started here, or given by the environment."""

    urls: dict[str, str] = field(default_factory=dict)  # env var -> URL
    origin: dict[str, str] = field(default_factory=dict)  # env var -> "started" / "environment"
    missing: dict[str, str] = field(default_factory=dict)  # env var -> why there is none
    servers: list[Server] = field(default_factory=list)
    workdir: Path | None = None

    @classmethod
    def start(cls, environ: dict[str, str] | os._Environ[str] = os.environ) -> Services:
        """Start what the environment does not already name, in parallel; binaries that
        are missing (or fail to start) are recorded in ``missing``, never raised."""
        self = cls()
        wanted: list[tuple[str, Callable[[Path], Server]]] = []
        for var, find, make in (
            (REDIS_VAR, find_redis, redis_server),
            (POSTGRES_VAR, find_postgres, postgres_server),
        ):
            if environ.get(var):
                self.urls[var], self.origin[var] = environ[var], "environment"
                continue
            found, why = find()
            if found is None:
                self.missing[var] = why
            else:
                wanted.append((var, make))  # which finds the same binary (cached)
        if not wanted:
            return self
        self.workdir = Path(tempfile.mkdtemp(prefix="ctxtrim-services-"))
        self.workdir.chmod(0o755)

        def run(var: str, make: Callable[[Path], Server]) -> None:
            try:
                assert self.workdir is not None
                server = make(self.workdir / var.split("_")[1].lower())
                server.start()
            except (OSError, subprocess.SubprocessError, ServerError, TimeoutError) as e:
                err = getattr(e, "stderr", None)
                self.missing[var] = f"could not start it: {e}" + (
                    f"\n{err.decode(errors='replace')}" if isinstance(err, bytes) else ""
                )
                return
            self.servers.append(server)
            self.urls[var], self.origin[var] = server.url, "started"

        threads = [threading.Thread(target=run, args=w) for w in wanted]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        self.servers.clear()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


def _main(argv: list[str]) -> int:
    """``start``: detached servers, ``export`` lines on stdout; ``stop DIR``: stop, remove."""
    if argv[:1] == ["start"]:
        services = Services.start(environ={})
        for var, why in services.missing.items():
            print(f"services: no server for {var}: {why}", file=sys.stderr)
        if services.missing:
            services.stop()
            return 1
        assert services.workdir is not None
        for s in services.servers:
            assert s.proc is not None
            (services.workdir / f"{s.name}.pid").write_text(f"{s.proc.pid} {int(s.stop_signal)}")
        print(f"export CTXTRIM_SERVICES_DIR={services.workdir}")
        for var, url in services.urls.items():
            print(f"export {var}={url}")
        return 0
    if argv[:1] == ["stop"]:
        target = argv[1] if len(argv) > 1 else os.environ.get("CTXTRIM_SERVICES_DIR", "")
        workdir = Path(target)
        if not target or not workdir.is_dir():
            print("usage: servers.py stop DIR (or set CTXTRIM_SERVICES_DIR)", file=sys.stderr)
            return 2
        for pidfile in workdir.glob("*.pid"):
            pid, sig = map(int, pidfile.read_text().split())
            try:
                os.kill(pid, sig)
                wait_for(functools.partial(_gone, pid), f"process {pid} exit", 30)
            except ProcessLookupError:
                pass
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"services: stopped and removed {workdir}", file=sys.stderr)
        return 0
    print("usage: servers.py start | stop [DIR]", file=sys.stderr)
    return 2


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie (its parent, the `start` process, is gone: init reaps it soon) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except (OSError, IndexError):
        return True


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
