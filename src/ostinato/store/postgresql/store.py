"""The PostgreSQL store: :class:`SQLStore` over :class:`PostgresDialect` (psycopg 3 with a pool).

Beyond :class:`~ostinato.store.interface.Store`, it answers two questions of streaming replication, which
the read routing (``store/read_routing.py``) asks: a primary's WAL position (:meth:`PostgresStore.wal_position`),
and how far a standby's replay is (:meth:`PostgresStore.replay_state`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sql_store import SQLStore
from .dialect import PostgresDialect

_REPLAY = """
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END AS lag,
       CASE WHEN %(past)s::text IS NULL THEN true ELSE pg_last_wal_replay_lsn() >= %(past)s::pg_lsn END AS replayed
"""


@dataclass(frozen=True, slots=True)
class ReplayState:
    """A server's replay of its primary's WAL, as :meth:`PostgresStore.replay_state` measures it on that server."""

    #: the server is a standby (``pg_is_in_recovery()``); if not, the other fields say nothing
    standby: bool
    #: 0 when it has replayed all it received, else the time since the last transaction it replayed
    lag_seconds: float
    #: it has replayed past the position asked (True when none was asked)
    replayed: bool


class PostgresStore(SQLStore):
    """Every role of the store on one PostgreSQL database (see ``store/postgresql/dialect.py``)."""

    db: PostgresDialect

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0):
        self.dsn = dsn
        super().__init__(PostgresDialect(dsn, min_size=min_size, max_size=max_size, timeout=timeout))

    def wal_position(self) -> str:
        """The server's WAL position now (``pg_current_wal_insert_lsn()``, as text): a standby that has replayed
        past it has every write committed here before. On a primary only (a standby raises)."""
        return str(self.db.read("SELECT pg_current_wal_insert_lsn()::text AS lsn")[0]["lsn"])

    def replay_state(self, past: str | None = None) -> ReplayState:
        """Whether this server is a standby, its lag, and whether it has replayed past the WAL position ``past``
        (one of :meth:`wal_position`'s, on its primary)."""
        row = self.db.read(_REPLAY, {"past": past})[0]
        return ReplayState(bool(row["standby"]), float(row["lag"] or 0.0), bool(row["replayed"]))
