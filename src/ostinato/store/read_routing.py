"""Reads from a PostgreSQL streaming standby, everything else from the primary (the ``read_db`` setting).

:class:`ReadRoutingStore` is a :class:`~ostinato.store.interface.Store` over two PostgreSQL stores: the
primary, and a hot standby of it. A verb that only reads (:data:`READ_VERBS`: a verb served to a read
token, ``REMOTE_SCOPES``, but the schema's state) goes to the standby when both hold:

- **the standby is close enough**: its lag, measured on the standby (0 when it has replayed all it
  received, else the time since the last transaction it replayed), is at most ``max_lag``;
- **it has this store's own writes**: after a write (:data:`WRITE_VERBS`), the primary's WAL position is
  noted, and reads go to the standby only once it has replayed past it (read your writes, to the byte).

Otherwise, or when the standby cannot be reached (it is then left alone for :data:`RETRY_DOWN` seconds),
the read goes to the primary. Writes, grabs and every verb that is not a plain read always go to the
primary. Each read's source is kept (:attr:`ReadRoutingStore.last_read`, per thread): the API answers
it in its headers and the dashboard says it.

Every verb of :class:`Store` is declared on the class, one line each (``name = _routed(Store.name)``), so
that mypy checks each against :class:`Store` and a verb added to :class:`Store` makes the class abstract
until it is declared here; which way each goes is the lists' to say, not the line's. The two measures it
needs, it asks the PostgreSQL stores by their public verbs: :meth:`PostgresStore.wal_position` on the
primary, :meth:`PostgresStore.replay_state` on the standby.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from .interface import ROLES, Store

if TYPE_CHECKING:
    from .postgresql import PostgresStore

log = logging.getLogger(__name__)

#: seconds a standby that could not be reached is left alone
RETRY_DOWN = 5.0
#: seconds a measured lag is trusted for (a read at most measures once in this time)
MEASURE_EVERY = 0.25
#: reads that stay on the primary though they only read: the schema's state decides migrations
PRIMARY_READS = frozenset({"schema_state"})
#: the WAL position noted when the primary's could not be read: no standby is past it, reads stay on the primary
#: until a later write notes one
NO_POSITION = "FFFFFFFF/FFFFFFFF"


def _verbs(scope: str) -> frozenset[str]:
    """The verbs served to a token of ``scope`` (each role's ``REMOTE_SCOPES``)."""
    return frozenset(verb for role in ROLES for verb, given in sys.modules[role.__module__].REMOTE_SCOPES.items()
                     if given == scope)


#: the verbs that only read, served by the standby when it is close enough and has this store's writes
READ_VERBS = _verbs("read") - PRIMARY_READS
#: the verbs that write (served to worker and admin tokens, and the token, audit and schema verbs the API does not
#: serve): the primary's WAL position is noted after each. Any other verb goes to the primary without one (a
#: token's check touches its last use: no reader needs to see that)
WRITE_VERBS = _verbs("worker") | _verbs("admin") | {"create_api_token", "revoke_api_token", "record_audit", "init_schema",
                                                    "upgrade_schema"}

#: where the reads of one request were served, when the caller collects them (the API's middleware sets a
#: list here for each request; the worker thread that runs the request sees the same list)
READS: ContextVar[list[ReadSource] | None] = ContextVar("ostinato_reads", default=None)


@dataclass(frozen=True, slots=True)
class ReadSource:
    """Where a read was served: ``standby`` or ``primary``; the standby's lag when measured; why the primary."""

    where: str
    lag_seconds: float | None
    reason: str = ""


P = ParamSpec("P")
R = TypeVar("R")


def _routed(verb: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[ReadRoutingStore, P], R]:
    """The verb of :class:`Store` as :class:`ReadRoutingStore` answers it: a read (:data:`READ_VERBS`) by the
    standby or the primary, a write (:data:`WRITE_VERBS`) by the primary with its WAL position noted after,
    any other verb by the primary."""
    name = verb.__name__
    if name in READ_VERBS:
        def routed(self: ReadRoutingStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return self._read(name, *args, **kwargs)
    elif name in WRITE_VERBS:
        def routed(self: ReadRoutingStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return self._write(name, *args, **kwargs)
    else:
        def routed(self: ReadRoutingStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return getattr(self.primary, name)(*args, **kwargs)
    routed.__name__, routed.__qualname__, routed.__doc__ = name, f"ReadRoutingStore.{name}", verb.__doc__
    return routed


class ReadRoutingStore(Store):
    """The store of a primary with its reads on a standby (module docstring); every other verb is the primary's."""

    def __init__(self, primary: PostgresStore, standby: PostgresStore, max_lag: timedelta, *,
                 monotonic: Callable[[], float] = time.monotonic):
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
            state = self.standby.replay_state(lsn)
        except Exception as exc:  # an unreachable standby sends reads to the primary
            log.warning("the read standby cannot be reached (%s: %s): reading from the primary for %.0f s",
                        type(exc).__name__, exc, RETRY_DOWN)
            return self._down()
        lag = state.lag_seconds
        if not state.standby:
            if not self._warned_not_standby:
                self._warned_not_standby = True
                log.warning("read_db is not a standby (pg_is_in_recovery() is false there): every read goes to db")
            source = ReadSource("primary", None, "read_db is not a standby: its rows may not be db's")
        elif lag > self.max_lag:
            source = ReadSource("primary", lag, f"the standby is {lag:.1f} s behind, over the bound of {self.max_lag:g} s")
        elif not state.replayed:
            source = ReadSource("primary", lag, "the standby has not replayed this process's last write yet")
        else:
            source = ReadSource("standby", lag)
        with self._lock:
            if lsn == self._written_lsn:  # a write since would make the measure stale
                self._measured = (now, source)
            if state.standby and (lag > self.max_lag) != self._behind:
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
            lsn = self.primary.wal_position()
        except Exception:  # no position known: read from the primary until one is
            lsn = NO_POSITION
        with self._lock:
            self._written_lsn = lsn
            self._measured = None

    def close(self) -> None:
        try:
            self.standby.close()
        finally:
            self.primary.close()

    # -- every other verb of Store, by role; where each goes is READ_VERBS' and WRITE_VERBS' to say ----------
    # schema
    schema_state = _routed(Store.schema_state)
    init_schema = _routed(Store.init_schema)
    upgrade_schema = _routed(Store.upgrade_schema)
    check_schema = _routed(Store.check_schema)

    # task
    create_task_type = _routed(Store.create_task_type)
    add_task_type = _routed(Store.add_task_type)
    update_task_type = _routed(Store.update_task_type)
    delete_task_type = _routed(Store.delete_task_type)
    get_task_type = _routed(Store.get_task_type)
    list_task_types = _routed(Store.list_task_types)
    create_tasks = _routed(Store.create_tasks)
    get_tasks = _routed(Store.get_tasks)
    search_tasks = _routed(Store.search_tasks)
    peek_ready_tasks = _routed(Store.peek_ready_tasks)
    grab_ready_tasks = _routed(Store.grab_ready_tasks)
    set_task_status = _routed(Store.set_task_status)
    disable_tasks = _routed(Store.disable_tasks)
    respawn_tasks = _routed(Store.respawn_tasks)
    retry_task_run = _routed(Store.retry_task_run)
    record_run_events = _routed(Store.record_run_events)
    mark_lost_runs = _routed(Store.mark_lost_runs)
    in_flight_backend_ids = _routed(Store.in_flight_backend_ids)
    list_task_runs = _routed(Store.list_task_runs)
    recent_task_runs = _routed(Store.recent_task_runs)
    count_tasks = _routed(Store.count_tasks)
    task_activity = _routed(Store.task_activity)
    archivable_tasks = _routed(Store.archivable_tasks)
    delete_tasks = _routed(Store.delete_tasks)

    # origin
    get_or_create_lister = _routed(Store.get_or_create_lister)
    list_listers = _routed(Store.list_listers)
    update_lister = _routed(Store.update_lister)
    delete_lister = _routed(Store.delete_lister)
    record_listed_origins = _routed(Store.record_listed_origins)
    record_listings = _routed(Store.record_listings)
    get_listings = _routed(Store.get_listings)
    get_listed_origins = _routed(Store.get_listed_origins)
    record_visit_statuses = _routed(Store.record_visit_statuses)
    get_visit_stats = _routed(Store.get_visit_stats)
    get_visit_changes = _routed(Store.get_visit_changes)
    grab_next_visits = _routed(Store.grab_next_visits)
    get_politeness = _routed(Store.get_politeness)
    set_visit_type_politeness = _routed(Store.set_visit_type_politeness)
    set_host_politeness = _routed(Store.set_host_politeness)
    release_visits = _routed(Store.release_visits)
    get_revisit_thresholds = _routed(Store.get_revisit_thresholds)
    set_revisit_threshold = _routed(Store.set_revisit_threshold)
    sample_change_rates = _routed(Store.sample_change_rates)
    update_origin_metrics = _routed(Store.update_origin_metrics)
    get_origin_metrics = _routed(Store.get_origin_metrics)

    # schedule
    create_schedule = _routed(Store.create_schedule)
    get_schedule = _routed(Store.get_schedule)
    list_schedules = _routed(Store.list_schedules)
    save_schedule = _routed(Store.save_schedule)
    update_schedule = _routed(Store.update_schedule)
    pause_schedule = _routed(Store.pause_schedule)
    resume_schedule = _routed(Store.resume_schedule)
    request_schedule_run = _routed(Store.request_schedule_run)
    claim_run_now = _routed(Store.claim_run_now)
    delete_schedule = _routed(Store.delete_schedule)
    pick_schedules = _routed(Store.pick_schedules)
    heartbeat_scheduler = _routed(Store.heartbeat_scheduler)
    list_schedulers = _routed(Store.list_schedulers)
    list_holds = _routed(Store.list_holds)
    pick_schedule = _routed(Store.pick_schedule)
    ping_schedule = _routed(Store.ping_schedule)
    end_schedule_run = _routed(Store.end_schedule_run)
    steal_silent_schedules = _routed(Store.steal_silent_schedules)
    release_owner_schedules = _routed(Store.release_owner_schedules)
    listen_schedule_changes = _routed(Store.listen_schedule_changes)
    next_can_start_by = _routed(Store.next_can_start_by)
    list_schedule_runs = _routed(Store.list_schedule_runs)
    apply_declarations = _routed(Store.apply_declarations)
    catch_up_schedules = _routed(Store.catch_up_schedules)
    list_firings = _routed(Store.list_firings)
    claim_firings = _routed(Store.claim_firings)
    mark_firings_sent = _routed(Store.mark_firings_sent)
    release_firings = _routed(Store.release_firings)
    next_send_at = _routed(Store.next_send_at)

    # token
    create_api_token = _routed(Store.create_api_token)
    list_api_tokens = _routed(Store.list_api_tokens)
    revoke_api_token = _routed(Store.revoke_api_token)
    find_api_token = _routed(Store.find_api_token)
    open_console_session = _routed(Store.open_console_session)
    find_console_session = _routed(Store.find_console_session)
    close_console_session = _routed(Store.close_console_session)

    # compat
    schedule_task_runs = _routed(Store.schedule_task_runs)
    get_task_runs_by_backend_id = _routed(Store.get_task_runs_by_backend_id)
    overwrite_task_status = _routed(Store.overwrite_task_status)
    list_runs_to_archive = _routed(Store.list_runs_to_archive)
    delete_archived_runs = _routed(Store.delete_archived_runs)
    grab_listed_origins = _routed(Store.grab_listed_origins)
    merge_visit_stats = _routed(Store.merge_visit_stats)
    get_protocol_visit_stats = _routed(Store.get_protocol_visit_stats)
    list_listings = _routed(Store.list_listings)
    lister_visit_types = _routed(Store.lister_visit_types)
    count_listed_origins = _routed(Store.count_listed_origins)
    get_compat_records = _routed(Store.get_compat_records)
    list_compat_records = _routed(Store.list_compat_records)
    put_compat_records = _routed(Store.put_compat_records)

    # import
    import_task_types = _routed(Store.import_task_types)
    import_tasks = _routed(Store.import_tasks)
    import_task_runs = _routed(Store.import_task_runs)
    import_listers = _routed(Store.import_listers)
    import_listed_origins = _routed(Store.import_listed_origins)
    import_visit_stats = _routed(Store.import_visit_stats)
    import_origin_metrics = _routed(Store.import_origin_metrics)

    # history
    record_history = _routed(Store.record_history)
    read_history = _routed(Store.read_history)
    prune_history = _routed(Store.prune_history)
    ended_runs = _routed(Store.ended_runs)

    # audit
    record_audit = _routed(Store.record_audit)
    list_audit = _routed(Store.list_audit)


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
