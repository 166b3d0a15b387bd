"""The server turn inside a real HTTP server: what ctxtrim costs a Starlette + uvicorn app.

Run: ``python benches/http_server.py [--sessions 500] [--messages 2000] [--clients 50]
[--requests 4000] [--rounds 3]``.

A Starlette app served by uvicorn (in a child process, one worker) holds ``--sessions``
``MemoryContextStore`` sessions of ``--messages`` messages each. Two routes take a turn's
body (4 new Chat Completions messages, ~1 KB of JSON) for a session:

- ``/turn/{session}``: the documented server path: ``from_openai_chat_json(body)`` →
  ``store.append_many`` → ``FitContextWindow(8000).apply(store)`` →
  ``to_openai_chat_json(window)``, returned as the response body (the request a server
  would post to the provider, ~30 KB);
- ``/json/{session}``: the same turn with the window written by
  ``FitContextWindow(8000).apply_json(store, "openai")``, which copies what the session's
  last request shares with this one instead of reading the window's messages again;
- ``/noop/{session}``: reads the body and returns a prebuilt window of the same size: the
  same server, sockets and client, with no history work at all.

``--clients`` concurrent aiohttp clients (in this process) send ``--requests`` requests
round-robin over the sessions; the routes are measured in alternating rounds and the median
requests per second of each is reported, with ctxtrim's as a share of the no-op server's
(the goal: at least 90 %). The client shares the machine with the server, equally for both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import statistics
import sys
import time
from typing import Any

from ctxtrim.bench.history import BUDGET
from ctxtrim.bench.paths import SYSTEM, turn_dicts, turn_messages


def _app(sessions: int, messages: int) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from ctxtrim import FitContextWindow, MemoryContextStore, Message
    from ctxtrim.bench.timing import drive
    from ctxtrim.formats import from_openai_chat_json, to_openai_chat_json

    turns = messages // 4
    stores = []
    for s in range(sessions):
        history = [Message.system(SYSTEM)]
        history += [m for i in range(turns) for m in turn_messages(s * turns + i)]
        stores.append(drive(MemoryContextStore.from_history(history)))
    fit = FitContextWindow(BUDGET)
    prebuilt = to_openai_chat_json(fit.apply(stores[0]))

    async def turn(request: Request) -> Response:
        store = stores[int(request.path_params["session"])]
        await store.append_many(from_openai_chat_json(await request.body()))
        window = fit.apply(store)
        return Response(to_openai_chat_json(window), media_type="application/json")

    async def turn_json(request: Request) -> Response:
        store = stores[int(request.path_params["session"])]
        await store.append_many(from_openai_chat_json(await request.body()))
        return Response(fit.apply_json(store, "openai"), media_type="application/json")

    async def noop(request: Request) -> Response:
        await request.body()
        return Response(prebuilt, media_type="application/json")

    return Starlette(
        routes=[
            Route("/turn/{session}", turn, methods=["POST"]),
            Route("/json/{session}", turn_json, methods=["POST"]),
            Route("/noop/{session}", noop, methods=["POST"]),
        ]
    )


def _serve(port: int, sessions: int, messages: int) -> None:
    import uvicorn

    uvicorn.run(_app(sessions, messages), host="127.0.0.1", port=port, log_level="warning")


async def _round(port: int, route: str, args: argparse.Namespace, bodies: list[bytes]) -> float:
    """Requests per second of ``args.requests`` requests to ``route`` from the clients."""
    import aiohttp

    queue = list(range(args.requests))
    connector = aiohttp.TCPConnector(limit=args.clients)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            while queue:
                k = queue.pop()
                url = f"http://127.0.0.1:{port}/{route}/{k % args.sessions}"
                async with session.post(url, data=bodies[k % len(bodies)]) as response:
                    assert response.status == 200, await response.text()
                    await response.read()

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(args.clients)))
        return args.requests / (time.perf_counter() - start)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, server: multiprocessing.Process) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if not server.is_alive():
            raise SystemExit("the server exited before it listened")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the server did not listen within 600 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = _free_port()
    server = multiprocessing.Process(
        target=_serve, args=(port, args.sessions, args.messages), daemon=True
    )
    server.start()
    try:
        _wait_for(port, server)
        # Each request is a new turn: bodies past every session's history.
        first = args.sessions * args.messages // 4
        bodies = [json.dumps(turn_dicts(first + i)).encode() for i in range(1000)]
        rates: dict[str, list[float]] = {route: [] for route in ROUTES}
        for route in ROUTES:  # warm every route up
            asyncio.run(_round(port, route, args, bodies))
        for _ in range(args.rounds):
            for route in ROUTES:
                rates[route].append(asyncio.run(_round(port, route, args, bodies)))
    finally:
        server.terminate()
        server.join()
    noop = statistics.median(rates["noop"])
    print(
        f"# {args.sessions} sessions x {args.messages:,} messages, {args.clients} clients, "
        f"{args.requests} requests a round, median of {args.rounds} rounds",
        file=sys.stderr,
    )
    print("| handler | requests / s | share of the no-op server |")
    print("|---|---:|---:|")
    for route, label in ROUTES.items():
        rate = statistics.median(rates[route])
        print(f"| {label} | {rate:,.0f} | {100 * rate / noop:.0f} % |")


ROUTES = {
    "noop": "no-op (read the body, return a prebuilt window)",
    "turn": "ctxtrim turn: read, append, `apply`, `to_openai_chat_json`",
    "json": "ctxtrim turn: read, append, `apply_json`",
}


if __name__ == "__main__":
    main()
