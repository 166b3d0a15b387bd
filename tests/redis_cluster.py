"""A real Redis Cluster on 127.0.0.1 for the tests: three masters with one replica each,
``redis-server --cluster-enabled yes`` (``servers.redis_server``: AOF on, ``appendfsync
always``; node timeout 1 s so a failover takes a few seconds), joined with
``redis-cli --cluster create``.

:func:`start_cluster` returns a :class:`Cluster` whose ``stop()`` kills every node;
:class:`RedisClusterBackend` is a store backend (see ``store_backends.py``) on it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ctxtrim import ContextStore

from servers import Server, redis_server, wait_for

REDIS_CLI = shutil.which("redis-cli")


def _free_cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free and valid too."""
    import random
    import socket

    for _ in range(200):
        port = random.randint(20000, 50000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def _cli(port: int, *args: str) -> str:
    assert REDIS_CLI is not None
    return subprocess.run(
        [REDIS_CLI, "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout


@dataclass
class Cluster:
    servers: dict[int, Server] = field(default_factory=dict)  # port -> node

    @property
    def urls(self) -> list[str]:
        return [f"redis://127.0.0.1:{p}" for p in self.servers]

    def alive(self) -> list[int]:
        return [p for p, s in self.servers.items() if s.running]

    def masters(self) -> list[int]:
        """Ports of the live nodes that say they are masters."""
        return [p for p in self.alive() if "role:master" in _cli(p, "info", "replication")]

    def replica_of(self, master: int) -> int:
        for p in self.alive():
            info = _cli(p, "info", "replication")
            if "role:slave" in info and f"master_port:{master}" in info:
                return p
        raise LookupError(f"no replica of {master}")

    def healthy(self) -> bool:
        return all("cluster_state:ok" in _cli(p, "cluster", "info") for p in self.alive())

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()


def start_cluster(workdir: Path, masters: int = 3, replicas: int = 1) -> Cluster:
    cluster = Cluster()
    try:
        for _ in range(masters * (1 + replicas)):
            port = _free_cluster_port()
            server = redis_server(
                workdir / str(port),
                *("--cluster-enabled", "yes", "--cluster-node-timeout", "1000"),
                *("--cluster-config-file", f"nodes-{port}.conf"),
                port=port,
            )
            server.start()
            cluster.servers[port] = server
        assert REDIS_CLI is not None
        subprocess.run(
            [
                REDIS_CLI,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in cluster.servers),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        wait_for(cluster.healthy, "the cluster", 30)
        # Every replica has finished its first sync (or a failover could find it empty).
        wait_for(
            lambda: all(
                "master_link_status:up" in _cli(p, "info", "replication")
                for p in cluster.alive()
                if "role:slave" in _cli(p, "info", "replication")
            ),
            "replica sync",
            30,
        )
    except BaseException:
        cluster.stop()
        raise
    time.sleep(0.2)
    return cluster


@dataclass(frozen=True)
class RedisClusterBackend:
    """A fresh key prefix on the cluster whose node URL is ``url`` (store_backends shape)."""

    url: str
    prefix: str
    name: str = "redis-cluster"
    persistent: bool = True
    lists_all_sessions: bool = True

    async def open(self, session_id: str | None = None) -> ContextStore:
        from ctxtrim.stores.redis import RedisContextStore

        return await RedisContextStore.open(self.url, session_id, prefix=self.prefix)

    async def cleanup(self) -> None:
        from redis.asyncio.cluster import RedisCluster

        client = RedisCluster.from_url(self.url)
        try:
            # scan_iter on a cluster client walks every primary
            keys = [k async for k in client.scan_iter(match=f"{self.prefix}:*", count=1000)]
            for key in keys:  # one DEL per key: they live in different slots
                await client.delete(key)
        finally:
            await client.aclose()
