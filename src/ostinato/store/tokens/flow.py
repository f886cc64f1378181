"""The tokens role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

A token is kept by the SHA-256 of its secret; its last use is written at most once a
``API_TOKEN_TOUCH_EVERY``, so that checking a token on every request is a read. A console session
is kept by the SHA-256 of its id, joined to its token's row at each look-up (a revoked token's
sessions end at once); its idle end moves forward at most once a ``API_TOKEN_TOUCH_EVERY`` too.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
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
            conn.execute(self._tokens.close_token_sessions, {"id": token["id"]})
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

    # -- the console's sessions --------------------------------------------------------------
    def open_console_session(self, session_hash: str, token_id: int, now: datetime, *,
                             idle: timedelta = TokenStore.CONSOLE_SESSION_IDLE,
                             lifetime: timedelta = TokenStore.CONSOLE_SESSION_LIFETIME) -> dict[str, Any]:
        self._checked_session(session_hash, idle, lifetime)
        expires_at = now + lifetime
        params = {"session_hash": session_hash, "token_id": token_id, "now": self.db.time(now),
                  "idle_until": self.db.time(min(now + idle, expires_at)), "expires_at": self.db.time(expires_at)}
        try:
            with self.db.write() as conn:
                conn.execute(self._tokens.prune_console_sessions, params)
                row = conn.execute(self._tokens.insert_console_session, params).fetchone()
                token = conn.execute(self._tokens.find_console_session, params).fetchone() if row else None
        except Exception as exc:
            if not self.db.is_unique_violation(exc):
                raise
            raise ConflictError("a console session with this id already exists") from None
        if row is None or token is None:
            raise NotFoundError("live api token", token_id)
        return self._console_session(token)

    def find_console_session(self, session_hash: str, now: datetime, *,
                             idle: timedelta = TokenStore.CONSOLE_SESSION_IDLE) -> dict[str, Any] | None:
        self._checked_session(session_hash, idle)
        rows = self.db.read(self._tokens.find_console_session, {"session_hash": session_hash})
        if not rows:
            return None
        session = self._console_session(rows[0])
        token = session["token"]
        if session["idle_until"] <= now or session["expires_at"] <= now or token["revoked_at"] is not None:
            return None
        idle_until = min(now + idle, session["expires_at"])
        moved = idle_until > session["idle_until"] and (idle_until - session["idle_until"] >= self.API_TOKEN_TOUCH_EVERY
                                                         or idle_until == session["expires_at"])
        last = token["last_used_at"]
        used = last is None or now - last >= self.API_TOKEN_TOUCH_EVERY
        if moved or used:
            with self.db.write() as conn:
                if moved:
                    conn.execute(self._tokens.touch_console_session,
                                 {"id": session["id"], "idle_until": self.db.time(idle_until), "now": self.db.time(now)})
                    session["idle_until"] = idle_until
                if used:
                    conn.execute(self._tokens.touch_api_token, {"id": token["id"], "now": self.db.time(now)})
                    token["last_used_at"] = now
        return session

    def close_console_session(self, session_hash: str) -> bool:
        self._checked_session(session_hash)
        with self.db.write() as conn:
            return conn.execute(self._tokens.close_console_session, {"session_hash": session_hash}).fetchone() is not None

    def _console_session(self, row: Row) -> dict[str, Any]:
        read_time = self.db.read_time
        return {"id": row["session_id"], "token": self._api_token(row), "created_at": read_time(row["session_created_at"]),
                "idle_until": read_time(row["idle_until"]), "expires_at": read_time(row["expires_at"])}

    def _api_token(self, row: Row) -> dict[str, Any]:
        read_time = self.db.read_time
        return {"id": row["id"], "name": row["name"], "scope": row["scope"], "created_at": read_time(row["created_at"]),
                "revoked_at": read_time(row["revoked_at"]), "last_used_at": read_time(row["last_used_at"])}
