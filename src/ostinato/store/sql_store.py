"""The store over a SQL database: every role's flow, written once, over one :class:`Dialect`.

``SQLiteStore`` (``store/sqlite/``) and ``PostgresStore`` (``store/postgresql/``) are this class
with their dialect; each role's flow lives in its package (``store/<role>/flow.py``).
"""

from __future__ import annotations

from .audit.flow import AuditFlow
from .compat.flow import CompatFlow
from .dialect import Dialect
from .history.flow import HistoryFlow
from .imports.flow import ImportFlow
from .interface import Store
from .origins.flow import OriginFlow
from .schedules.flow import ScheduleFlow
from .schema.flow import SchemaFlow
from .tasks.flow import TaskFlow
from .tokens.flow import TokenFlow


class SQLStore(SchemaFlow, TaskFlow, OriginFlow, ScheduleFlow, TokenFlow, CompatFlow, ImportFlow, HistoryFlow,
               AuditFlow, Store):
    """Every role of :class:`Store`, each by its flow, over ``db``."""

    def __init__(self, db: Dialect):
        self.db = db
        self.dialect = db.name

    def close(self) -> None:
        self.db.close()
