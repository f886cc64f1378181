"""Each answer says where its reads were served, with the ``read_db`` setting (``store.read_routing``).

An ASGI middleware: it collects the reads of each request (``store.read_routing.READS``) and adds to the
answer ``X-Ostinato-Read-From`` (``standby`` when every read was the standby's, else ``primary``),
``X-Ostinato-Read-Lag`` (the standby's largest lag seen, in seconds) and, when the primary served,
``X-Ostinato-Read-Note`` (why: the standby too far behind, not yet at this server's last write, or
unreachable). An answer with no read (or a server without ``read_db``) gets none of them. The dashboard
says the same on its pages (:func:`read_note`).
"""

from __future__ import annotations

from typing import Any

from ..store.read_routing import READS, ReadSource, summary


def read_note() -> str:
    """The reads of the page being drawn, in words (empty without a standby)."""
    collected = READS.get()
    found = summary(collected) if collected else None
    if found is None:
        return ""
    lag = "" if found.lag_seconds is None else f", {found.lag_seconds:.1f} s behind the primary"
    if found.where == "standby":
        return f"read from the standby{lag}"
    return f"read from the primary: {found.reason}"


def _headers(found: ReadSource) -> list[tuple[bytes, bytes]]:
    headers = [(b"x-ostinato-read-from", found.where.encode())]
    if found.lag_seconds is not None:
        headers.append((b"x-ostinato-read-lag", f"{found.lag_seconds:.3f}".encode()))
    if found.reason:
        headers.append((b"x-ostinato-read-note", found.reason.encode("ascii", "replace")))
    return headers


class ReadSourceHeaders:
    """The middleware (module docstring)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        collected: list[ReadSource] = []
        token = READS.set(collected)

        async def send_with_source(message: dict) -> None:
            if message["type"] == "http.response.start":
                found = summary(collected)
                if found is not None:
                    message = {**message, "headers": [*message.get("headers", []), *_headers(found)]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_source)
        finally:
            READS.reset(token)
