"""The schema role's flow, written once over a :class:`~ostinato.store.dialect.Dialect`.

A fresh database gets the dialect's canonical schema (``store/<dialect>/schema_*.sql``) and a
``schema_version`` row per migration; an existing one gets the migrations it lacks
(``store/<dialect>/migrations/``), in order, in one transaction, each recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ...domain.errors import ConflictError
from ..dialect import Dialect
from ..migrations import latest_version
from .interface import SchemaState, SchemaStore


class SchemaFlow(SchemaStore):
    db: Dialect

    @property
    def _schema(self):
        return self.db.queries("schema")

    def schema_state(self) -> SchemaState:
        latest = latest_version(self.db.migrations)
        if not self.db.read(self._schema.has_schema_version)[0]["found"]:
            return SchemaState(None, latest)
        return SchemaState(self.db.read(self._schema.current_version)[0]["version"], latest)

    def init_schema(self) -> SchemaState:
        applied_at = self.db.time(datetime.now(UTC))  # when it happened, for the record only
        with self.db.write() as conn:
            if conn.execute(self._schema.count_tables).fetchone()["tables"]:
                raise ConflictError(f"{self.db.where} is not empty: use `ostinato db upgrade` on an existing database")
            conn.execute(self._schema.create_schema_version)
            self.db.run_script(conn, self.db.schema_script())
            for migration in self.db.migrations:
                conn.execute(self._schema.record_version, {"version": migration.version, "description": migration.description,
                                                           "applied_at": applied_at})
        return self.schema_state()

    def upgrade_schema(self) -> list[int]:
        applied = []
        with self.db.write() as conn:
            self.db.lock(conn, "ostinato.migrations")
            conn.execute(self._schema.create_schema_version)
            current = conn.execute(self._schema.current_version).fetchone()["version"] or 0
            for migration in self.db.migrations:
                if migration.version <= current:
                    continue
                self.db.run_script(conn, migration.sql)
                conn.execute(self._schema.record_version, {
                    "version": migration.version, "description": migration.description,
                    "applied_at": self.db.time(datetime.now(UTC)),
                })
                applied.append(migration.version)
        return applied
