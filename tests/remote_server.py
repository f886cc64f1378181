"""A real HTTP server for the remote store's tests (no tests here): uvicorn on a free port of
127.0.0.1, in a thread, serving whichever application the current test put in place, so that one
server serves a whole session and each test its own store behind its own API."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import uvicorn
from waiting import wait_until

from test_servers.postgres import free_port


class SwitchableApp:
    """An ASGI application that forwards to ``current`` (set by each test)."""

    def __init__(self) -> None:
        self.current: Callable[..., Any] | None = None

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if self.current is None:
            raise RuntimeError("no application in place")
        await self.current(scope, receive, send)


class ThreadedServer:
    """uvicorn over :class:`SwitchableApp` on a free port of 127.0.0.1, in a daemon thread."""

    def __init__(self) -> None:
        self.app = SwitchableApp()
        # uvicorn binds the port itself: over a socket handed in (``sockets=``), each answer waited for the
        # client's delayed ACK, some 40 ms
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, lifespan="off", log_level="warning",
                                access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="remote-store-api", daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()

        def started() -> bool:
            if not self.thread.is_alive():
                raise RuntimeError("the test API server did not start")
            return self.server.started

        wait_until(started, timeout=30, interval=0.01, what="the test API server to start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
