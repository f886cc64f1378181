"""Reaching the PostgreSQL server: one checked connection before the pool, and URLs shown without
their password.

The pool alone would retry an unreachable server in the background for its whole timeout, logging
each refusal, and end in a ``PoolTimeout``; one direct connection, with a connect timeout, tells at
once and says why.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ...domain.errors import StoreUnavailable

#: seconds to wait for a server that does not answer (libpq's ``connect_timeout``), unless the URL or libpq's
#: own ``PGCONNECT_TIMEOUT`` in the environment says
CONNECT_TIMEOUT = 5
_HIDDEN = "***"
_PASSWORD_KEYWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")


def redacted(dsn: str) -> str:
    """The URL (or libpq ``key=value`` string) with its password, if any, replaced by ``***``."""
    if "://" not in dsn:
        return _PASSWORD_KEYWORD.sub(lambda m: m.group(1) + _HIDDEN, dsn)
    try:
        parts = urlsplit(dsn)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            if ":" in user:
                user = user.split(":", 1)[0] + ":" + _HIDDEN
            netloc = f"{user}@{host}"
        query = urlencode([(k, _HIDDEN if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)],
                          safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "the PostgreSQL URL given"  # too malformed to tell its password from the rest


def connect_options(dsn: str) -> dict[str, Any]:
    """Options added to every connection: a connect timeout unless the URL sets its own, or libpq's
    ``PGCONNECT_TIMEOUT`` does (which libpq then reads itself)."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StoreUnavailable(f"database {redacted(dsn)}: not a valid PostgreSQL URL ({_reason(exc)})") from None
    if given.get("connect_timeout") or os.environ.get("PGCONNECT_TIMEOUT", "").strip():
        return {}
    return {"connect_timeout": CONNECT_TIMEOUT}


def check_reachable(dsn: str, options: dict[str, Any]) -> None:
    """Connect once and close: a server that refuses, does not answer, or rejects the login is a
    :class:`StoreUnavailable` naming the URL (without its password) and libpq's reason."""
    try:
        with psycopg.connect(dsn, **options):
            pass
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot connect to the database {redacted(dsn)}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    """libpq's message on one line, without psycopg's ``connection failed:`` preamble."""
    text = re.sub(r"^connection (failed|is bad): ", "", str(exc).strip())
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines) or type(exc).__name__
