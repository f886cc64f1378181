"""The API behind a reverse proxy: which proxies' ``X-Forwarded-Proto`` and ``X-Forwarded-For`` are believed.

A proxy that terminates TLS talks plain HTTP to the API; without a word from it, the API would take
its requests for plain HTTP (the console's cookie would lose ``Secure``, and its forms' origin check
would expect ``http://``) and every client for the proxy (the sign-in limit would count them all as
one). The ``trusted_proxies`` setting (``OSTINATO_TRUSTED_PROXIES``: addresses and CIDR networks,
comma-separated; none by default) names the proxies whose headers are believed:

- ``X-Forwarded-Proto`` (``http`` or ``https``; of several values, the last, the one the nearest
  proxy wrote) becomes the request's scheme;
- ``X-Forwarded-For``: read from its right end, past the trusted proxies' own addresses, the first
  address that is not one of them becomes the request's client (the leftmost if all are; the
  proxy's own if that is not an IP address).

From any other address the headers are ignored, so that a client cannot claim HTTPS or another
address. ``ostinato api serve`` turns uvicorn's own reading of these headers off (it believes
127.0.0.1 by default): this middleware is the only one that reads them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """Addresses and CIDR networks (``10.0.0.0/8``, ``::1``); ValueError for one that is neither."""
    return tuple(ipaddress.ip_network(value.strip(), strict=False) for value in values)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class TrustedProxies:
    """An ASGI middleware believing the forwarding headers of ``networks`` only (see the module's docstring)."""

    def __init__(self, app: ASGIApp, networks: Iterable[str]) -> None:
        self.app = app
        self.networks = parse_networks(networks)

    def trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.networks:
            client = scope.get("client")
            if client is not None and self.trusted(client[0]):
                scope = self._forwarded(scope, Headers(scope=scope))
        await self.app(scope, receive, send)

    def _forwarded(self, scope: Scope, headers: Headers) -> Scope:
        changed: dict[str, Any] = {}
        protos = [p.strip().lower() for p in ",".join(headers.getlist("x-forwarded-proto")).split(",") if p.strip()]
        if protos and protos[-1] in ("http", "https"):
            changed["scheme"] = protos[-1]
        chain = [a.strip() for a in ",".join(headers.getlist("x-forwarded-for")).split(",") if a.strip()]
        if chain:
            client = next((a for a in reversed(chain) if not self.trusted(a)), chain[0])
            if _is_address(client):  # else (``unknown``, a name) the proxy's own stays
                changed["client"] = (client, 0)
        return {**scope, **changed} if changed else scope


__all__ = ["TrustedProxies", "parse_networks"]
