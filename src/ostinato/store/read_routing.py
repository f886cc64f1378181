"""Reads from a PostgreSQL streaming standby, everything else from the primary (the ``read_db`` setting).

:class:`ReadRoutingStore` is a :class:`~ostinato.store.interface.Store` over two: the primary, and a hot
standby of it. A verb that only reads (a verb served to a read token, ``REMOTE_SCOPES``, but the schema's
state) goes to the standby when both hold:

- **the standby is close enough**: its lag, measured on the standby (0 when it has replayed all it
  received, else the time since the last transaction it replayed), is at most ``max_lag``;
- **it has this store's own writes**: after a write, the primary's WAL position is noted, and reads go
  to the standby only once it has replayed past it (read your writes, to the byte).

Otherwise, or when the standby cannot be reached (it is then left alone for :data:`RETRY_DOWN` seconds),
the read goes to the primary. Writes, grabs and every verb that is not a plain read always go to the
primary. Each read's source is kept (:attr:`ReadRoutingStore.last_read`, per thread): the API answers
it in its headers and the dashboard says it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .interface import ROLES, Store

log = logging.getLogger(__name__)

#: seconds a standby that could not be reached is left alone
RETRY_DOWN = 5.0
#: seconds a measured lag is trusted for (a read at most measures once in this time)
MEASURE_EVERY = 0.25
#: reads that stay on the primary though they only read: the schema's state decides migrations
PRIMARY_READS = frozenset({"schema_state"})


def _verbs(scope: str) -> frozenset[str]:
    """The verbs served to a token of ``scope`` (each role's ``REMOTE_SCOPES``)."""
    import sys

    return frozenset(verb for role in ROLES for verb, given in sys.modules[role.__module__].REMOTE_SCOPES.items()
                     if given == scope)


#: where the reads of one request were served, when the caller collects them (the API's middleware sets a
#: list here for each request; the worker thread that runs the request sees the same list)
READS: ContextVar[list[ReadSource] | None] = ContextVar("ostinato_reads", default=None)


@dataclass(frozen=True, slots=True)
class ReadSource:
    """Where a read was served: ``standby`` or ``primary``; the standby's lag when measured; why the primary."""

    where: str
    lag_seconds: float | None
    reason: str = ""


_LAG = """
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END AS lag,
       pg_last_wal_replay_lsn()::text AS replayed,
       CASE WHEN %(lsn)s::text IS NULL THEN true ELSE pg_last_wal_replay_lsn() >= %(lsn)s::pg_lsn END AS has_writes
"""


class ReadRoutingStore:
    """The store of a primary with its reads on a standby (module docstring); every other verb is the primary's."""

    def __init__(self, primary: Store, standby: Store, max_lag: timedelta, *, monotonic: Callable[[], float] = time.monotonic):
        self.primary, self.standby, self.max_lag = primary, standby, max_lag.total_seconds()
        self.dialect = primary.dialect
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._written_lsn: str | None = None
        self._down_until = 0.0
        self._measured: tuple[float, ReadSource] | None = None
        self._local = threading.local()
        self._warned_not_standby = False
        self._behind = False  # the standby was last seen past max_lag (said once, and once when it is back)

    # -- where each verb goes -------------------------------------------------------------
    @property
    def last_read(self) -> ReadSource | None:
        """Where this thread's last read was served."""
        return getattr(self._local, "source", None)

    def _source(self) -> ReadSource:
        now = self._monotonic()
        with self._lock:
            if now < self._down_until:
                return ReadSource("primary", None, "the standby cannot be reached")
            if self._measured is not None and now - self._measured[0] < MEASURE_EVERY:
                return self._measured[1]
            lsn = self._written_lsn
        try:
            standby = self.standby.db  # type: ignore[attr-defined]  # an SQL store's dialect (Store names none)
            row = standby.read(_LAG, {"lsn": lsn})[0]
        except Exception as exc:  # an unreachable standby sends reads to the primary
            log.warning("the read standby cannot be reached (%s: %s): reading from the primary for %.0f s",
                        type(exc).__name__, exc, RETRY_DOWN)
            return self._down()
        lag = float(row["lag"] or 0.0)
        if not row["standby"]:
            if not self._warned_not_standby:
                self._warned_not_standby = True
                log.warning("read_db is not a standby (pg_is_in_recovery() is false there): every read goes to db")
            source = ReadSource("primary", None, "read_db is not a standby: its rows may not be db's")
        elif lag > self.max_lag:
            source = ReadSource("primary", lag, f"the standby is {lag:.1f} s behind, over the bound of {self.max_lag:g} s")
        elif not row["has_writes"]:
            source = ReadSource("primary", lag, "the standby has not replayed this process's last write yet")
        else:
            source = ReadSource("standby", lag)
        with self._lock:
            if lsn == self._written_lsn:  # a write since would make the measure stale
                self._measured = (now, source)
            if row["standby"] and (lag > self.max_lag) != self._behind:
                self._behind = lag > self.max_lag
                if self._behind:
                    log.warning("the read standby is %.1f s behind, over read_max_lag (%g s): reading from the "
                                "primary until it catches up", lag, self.max_lag)
                else:
                    log.warning("the read standby is back within read_max_lag (%.1f s behind): reading from it "
                                "again", lag)
        return source

    def _down(self) -> ReadSource:
        """The standby could not be reached: leave it alone for :data:`RETRY_DOWN` seconds."""
        with self._lock:
            self._down_until = self._monotonic() + RETRY_DOWN
            self._measured = None
        return ReadSource("primary", None, "the standby cannot be reached")

    def _read(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        source = self._source()
        self._local.source = source
        collected = READS.get()
        if collected is not None:
            collected.append(source)
        target = self.standby if source.where == "standby" else self.primary
        try:
            return getattr(target, verb)(*args, **kwargs)
        except Exception as exc:
            if target is self.primary or not _is_connection_error(exc):
                raise
            self._local.source = self._down()
            if collected is not None:
                collected.append(self._local.source)
            return getattr(self.primary, verb)(*args, **kwargs)

    def _write(self, verb: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.primary, verb)(*args, **kwargs)
        finally:
            self._note_write()

    def _note_write(self) -> None:
        """The primary's WAL position after a write: reads wait for the standby to pass it."""
        try:
            primary = self.primary.db  # type: ignore[attr-defined]  # an SQL store's dialect (Store names none)
            lsn = primary.read("SELECT pg_current_wal_insert_lsn()::text AS lsn")[0]["lsn"]
        except Exception:  # no position known: read from the primary until one is
            lsn = "FFFFFFFF/FFFFFFFF"
        with self._lock:
            self._written_lsn = lsn
            self._measured = None

    # -- the rest of Store --------------------------------------------------------------
    def close(self) -> None:
        try:
            self.standby.close()
        finally:
            self.primary.close()

    def __enter__(self) -> ReadRoutingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attribute = getattr(self.primary, name)
        if not callable(attribute):
            return attribute
        if name in READ_VERBS:
            return lambda *args, **kwargs: self._read(name, *args, **kwargs)
        if name in WRITE_VERBS:
            return lambda *args, **kwargs: self._write(name, *args, **kwargs)
        return attribute


def summary(sources: list[ReadSource]) -> ReadSource | None:
    """One answer's reads as one: the standby's only if every read was, with the largest lag seen."""
    if not sources:
        return None
    lags = [s.lag_seconds for s in sources if s.lag_seconds is not None]
    lag = max(lags) if lags else None
    on_primary = [s for s in sources if s.where == "primary"]
    return ReadSource("primary", lag, on_primary[0].reason) if on_primary else ReadSource("standby", lag)


def _is_connection_error(exc: BaseException) -> bool:
    import psycopg

    from ..domain.errors import StoreUnavailable

    return isinstance(exc, (psycopg.OperationalError, StoreUnavailable))


READ_VERBS = _verbs("read") - PRIMARY_READS
#: the verbs that write (served to worker and admin tokens, and the token, audit and schema verbs the API does not
#: serve): the primary's WAL position is noted after each. Any other verb goes to the primary without one (a
#: token's check touches its last use: no reader needs to see that)
WRITE_VERBS = _verbs("worker") | _verbs("admin") | {"create_api_token", "revoke_api_token", "record_audit", "init_schema",
                                                    "upgrade_schema"}

# every verb of Store is answered (by __getattr__): a store wherever one is asked for
Store.register(ReadRoutingStore)
