"""Who may do what: the scopes of API tokens, from least to most, each including those before it.

- ``read``: every read (the console's pages, the API's GETs, the store verbs that only read);
- ``worker``: also what the machines do: schedulers, runners, beats, the orchestrator, listers, the
  journal client, the history pass and the archiver (pick, ping, end and steal runs; grab and report tasks;
  record listings and visits; declare their own schedules and task types). No operator action;
- ``admin``: also the operator's actions, each audited (pause, resume, update, run now, delete a
  schedule; disable, enable, retry tasks; add, update, delete task types; politeness; listers' removal).

Each store verb served over HTTP names the scope it needs, beside it in its role's ``interface.py``
(``REMOTE_SCOPES``); docs/reference/security.md lists them, and a test holds the list to the code.
"""

from __future__ import annotations

from typing import Any

from .errors import ValidationError

READ, WORKER, ADMIN = "read", "worker", "admin"
#: the scopes, least first
SCOPES: tuple[str, ...] = (READ, WORKER, ADMIN)


def parse_scope(value: Any, field: str = "scope") -> str:
    """``value`` if it is a scope; ValidationError naming ``field`` otherwise."""
    if value not in SCOPES:
        raise ValidationError(field, ", ".join(SCOPES[:-1]) + " or " + SCOPES[-1], value)
    return str(value)


def allows(token_scope: str, needed: str) -> bool:
    """Whether a token of ``token_scope`` may do what needs ``needed``: its scope is that one or above."""
    return token_scope in SCOPES and SCOPES.index(token_scope) >= SCOPES.index(needed)


__all__ = ["ADMIN", "READ", "SCOPES", "WORKER", "allows", "parse_scope"]
