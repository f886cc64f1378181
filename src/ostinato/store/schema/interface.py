"""The schema role: the database's schema version, creating it, and upgrading it by migrations.

A narrow interface in domain verbs; :class:`~ostinato.store.interface.Store` is every role at once.
The flow that implements it for the SQL stores is ``flow.py`` beside this file.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Self


@dataclass(frozen=True, slots=True)
class SchemaState:
    current: int | None
    latest: int

    @property
    def up_to_date(self) -> bool:
        return self.current == self.latest


#: The verbs a client may call through the HTTP API (``ostinato.remote``), each with the token scope
#: it needs (``domain.access``: read, worker or admin), and those it may not, with why: a verb added here is
#: reviewed for both.
#: Its state is read. Not served: creating and upgrading the schema (done where the database is),
#: closing (each client's own), check_schema (the client computes it from schema_state).
REMOTE_SCOPES: dict[str, str] = {"schema_state": "read"}
NOT_REMOTE: dict[str, str] = {
    "init_schema": "the schema is created where the database is: `ostinato db init` with --db, on the server",
    "upgrade_schema": "migrations are applied where the database is: `ostinato db upgrade` with --db, on the server",
    "close": "closing concerns each client's own connections",
    "check_schema": "computed on the client from schema_state",
}


class SchemaStore(abc.ABC):
    """the database's schema version, creating it, and upgrading it by migrations."""

    # -- schema -----------------------------------------------------------
    @abc.abstractmethod
    def schema_state(self) -> SchemaState: ...

    @abc.abstractmethod
    def init_schema(self) -> SchemaState:
        """Create the canonical schema in an empty database (error if one exists)."""

    @abc.abstractmethod
    def upgrade_schema(self) -> list[int]:
        """Apply pending migrations; return the versions applied."""

    def check_schema(self) -> None:
        """Raise SchemaError unless the schema is at the latest version."""
        from ...domain.errors import SchemaError

        state = self.schema_state()
        if state.current is None:
            raise SchemaError("the database has no Ostinato schema: run `ostinato db init`")
        if state.current < state.latest:
            raise SchemaError(f"schema version {state.current} is older than {state.latest}: run `ostinato db upgrade`")
        if state.current > state.latest:
            raise SchemaError(f"schema version {state.current} is newer than this Ostinato ({state.latest}): upgrade Ostinato")

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
