"""Whether a console form came from a page of this server: its ``Origin`` header (else its ``Referer``)
against the server's own, the one rule of the console's actions and of its sign-in."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request

from ...domain.audit import one_line


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` of a URL (its default port left out), or None if it has none."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{parts.hostname}" + (f":{port}" if port is not None and port != default else "")


def origin_problem(request: Request, *, required: bool = True) -> str | None:
    """Why the request did not come from a page of this server (its Origin, or its Referer), or None.
    Not ``required``: a request with neither header (a program, not a browser) passes."""
    own = _origin(str(request.base_url))
    given = request.headers.get("origin")
    if given is None:
        referer = request.headers.get("referer")
        if referer is None:
            if not required:
                return None
            return ("origin: the form must be sent from this dashboard's own page (the request has neither an "
                    "Origin nor a Referer header)")
        given, what = _origin(referer) or referer, "Referer"
    else:
        given, what = (_origin(given) or given), "Origin"
    if given != own:
        return f"origin: the form was sent from {one_line(given, 200)} ({what}), not from this dashboard ({own})"
    return None


__all__ = ["origin_problem"]
