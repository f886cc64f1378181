"""The tokens role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

A token is kept by the SHA-256 of its secret; its last use is written at most once a
``API_TOKEN_TOUCH_EVERY``, so that checking a token on every request is a read.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from ...domain.audit import AuditEvent, target_of
from ...domain.errors import ConflictError, NotFoundError
from ..audit.flow import write_audit
from ..dialect import Dialect, Row
from .interface import TokenStore


class TokenFlow(TokenStore):
    db: Dialect

    @property
    def _tokens(self):
        return self.db.queries("tokens")

    def create_api_token(self, name: str, scope: str, secret_hash: str, now: datetime, *, actor: str) -> dict[str, Any]:
        self._checked_api_token(name, scope, secret_hash)
        event = AuditEvent(now, actor, "token.add", target_of("token", name), f"done: added, scope {scope}").validated()
        params = {"name": name, "scope": scope, "secret_hash": secret_hash, "now": self.db.time(now)}
        try:
            with self.db.write() as conn:
                row = conn.execute(self._tokens.insert_api_token, params).fetchone()
                write_audit(self.db, conn, event)
        except Exception as exc:
            if not self.db.is_unique_violation(exc):
                raise
            if self.db.is_unique_violation(exc, "api_token.name"):
                raise ConflictError(f"api token {name!r} already exists") from None
            raise ConflictError("an api token with this secret already exists") from None
        return self._api_token(row)

    def list_api_tokens(self) -> list[dict[str, Any]]:
        return [self._api_token(r) for r in self.db.read(self._tokens.list_api_tokens)]

    def revoke_api_token(self, name: str, now: datetime, *, actor: str) -> dict[str, Any]:
        event = AuditEvent(now, actor, "token.revoke", target_of("token", name), "done: revoked").validated()
        with self.db.write() as conn:
            row = conn.execute(self._tokens.revoke_api_token, {"name": name, "now": self.db.time(now)}).fetchone()
            if row is None:
                raise NotFoundError("api token", name)
            token = self._api_token(row)
            if token["revoked_at"] != now:  # revoked before: the first time is kept
                event = dataclasses.replace(event, outcome="done: unchanged, it was revoked at "
                                                           f"{token['revoked_at'].isoformat()}")
            write_audit(self.db, conn, event)
        return token

    def find_api_token(self, secret_hash: str, *, now: datetime | None = None) -> dict[str, Any] | None:
        rows = self.db.read(self._tokens.find_api_token, {"secret_hash": secret_hash})
        if not rows:
            return None
        token = self._api_token(rows[0])
        last = token["last_used_at"]
        if now is not None and token["revoked_at"] is None and (last is None or now - last >= self.API_TOKEN_TOUCH_EVERY):
            with self.db.write() as conn:
                conn.execute(self._tokens.touch_api_token, {"id": token["id"], "now": self.db.time(now)})
            token["last_used_at"] = now
        return token

    def _api_token(self, row: Row) -> dict[str, Any]:
        read_time = self.db.read_time
        return {"id": row["id"], "name": row["name"], "scope": row["scope"], "created_at": read_time(row["created_at"]),
                "revoked_at": read_time(row["revoked_at"]), "last_used_at": read_time(row["last_used_at"])}
