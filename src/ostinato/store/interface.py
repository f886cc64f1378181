"""The storage interface: every role of the store at once. One implementation per kind of store.

Each role is a narrow interface in domain verbs, in its own package beside this file:
``schema/``, ``tasks/``, ``origins/``, ``schedules/``, ``tokens/``, ``compat/`` (what the
swh-scheduler protocol's face needs), ``imports/``, ``history/`` (the console's samples) and ``audit/``
(the trail of the dashboard's actions). A service that needs one role can name
that role (``TaskStore``, ``OriginStore``, …); :class:`Store` is all of them, which the SQL stores
(``SQLiteStore``, ``PostgresStore``) and the HTTP client (``ostinato.remote``) implement.

Every verb that depends on the time takes ``now`` from the caller (the clock is injected
upstream), and every verb that changes several rows does it in one transaction, in batches.
"""

from __future__ import annotations

from .audit.interface import AuditStore
from .compat.interface import CompatStore
from .history.interface import HistoryStore
from .imports.interface import ImportStore
from .origins.interface import OriginStore
from .schedules.interface import ScheduleStore
from .schema.interface import SchemaState, SchemaStore
from .tasks.interface import ArchivedTask, TaskActivity, TaskStore
from .tokens.interface import TokenStore

#: the roles, in the order the HTTP API lists their verbs
ROLES = (SchemaStore, TaskStore, OriginStore, ScheduleStore, TokenStore, CompatStore, ImportStore, HistoryStore,
         AuditStore)


class Store(SchemaStore, TaskStore, OriginStore, ScheduleStore, TokenStore, CompatStore, ImportStore, HistoryStore,
            AuditStore):
    """Everything Ostinato keeps, behind verbs that say what they do."""

    #: "sqlite", "postgresql" or "remote"
    dialect: str


__all__ = ["ArchivedTask", "AuditStore", "CompatStore", "HistoryStore", "ImportStore", "OriginStore", "ROLES", "ScheduleStore", "SchemaState",
           "SchemaStore", "Store", "TaskActivity", "TaskStore", "TokenStore"]
