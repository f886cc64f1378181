"""The grab with politeness per host, written once over a :class:`~ostinato.store.dialect.Dialect`
(see docs/reference/origins.md, "Politeness per host", and ``domain.politeness``).

A visit type without limits is grabbed as before (``grab_picked``: one statement per pick). With
limits, each pick walks its index as before with the hosts that have no room left out
(``host_filter``, a list the grab keeps up to date as it takes), then:

1. the hosts of what it found are locked (``lock_hosts``; on PostgreSQL an advisory lock per host,
   tried and never waited for: a host another grab holds is left for this pass);
2. their visits in flight and last starts are read again, after the lock, so what another grab
   committed is counted;
3. each host keeps what its room allows (``domain.politeness.room``), in the pick's order; the rest
   is left, its host now closed, and the walk goes on past it for the room still wanted.

Visits in flight are counted from the scheduling rows (the in-flight index holds only those), so
statuses, releases and in-flight timeouts free a host's room with no counter to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from ...domain.politeness import HostLimits, Politeness
from ..dialect import Dialect
from ..queries import Queries

#: walks of one pick at most per grab: each closes every host it found full
MAX_ROUNDS = 8


@lru_cache(maxsize=64)
def polite_statement(template: str, pick: str, host_filter: str) -> str:
    """``polite_pick`` around ``pick`` with ``host_filter`` before its ORDER BY."""
    pick = pick.rstrip().rstrip(";")
    marker = "\nORDER BY s.visit_type"
    if pick.count(marker) != 1:
        raise ValueError("a pick orders by s.visit_type once, where the host filter goes before")
    filtered = pick.replace(marker, f"\n  {host_filter.strip()}{marker}")
    return template.strip().replace("{pick}", filtered)


def read_politeness(db: Dialect, conn: Any, q: Queries, visit_type: str) -> Politeness:
    """The visit type's limits and its hosts' overrides, as stored."""
    default: tuple[Any, Any] = (None, None)
    hosts: dict[str, HostLimits] = {}
    for host, limit, spacing in db.tuples(conn, q.politeness, {"visit_type": visit_type}):
        seconds = None if spacing is None else timedelta(seconds=float(spacing))
        if host is None:
            default = (limit, seconds)
        else:
            hosts[host] = HostLimits(limit, seconds)
    return Politeness(visit_type, default[0], default[1], hosts)


class PoliteGrab:
    """One grab's state: hosts' visits in flight, last starts, locks and which hosts are closed."""

    def __init__(self, db: Dialect, conn: Any, q: Queries, politeness: Politeness, params: dict[str, Any],
                 now: datetime):
        self.db, self.conn, self.q, self.politeness, self.now = db, conn, q, politeness, now
        self.params = params
        self.in_flight: dict[str, int] = dict(db.tuples(conn, q.in_flight_by_host, params))
        since = db.time(now - politeness.longest_spacing())
        self.starts: dict[str, datetime] = {
            h: db.read_time(t) for h, t in db.tuples(conn, q.recent_starts, {**params, "since": since})}
        self.locked: set[str] = set()
        self.closed: set[str] = {h for h in set(self.in_flight) | set(self.starts) if self._room(h) == 0}

    def _room(self, host: str) -> int | None:
        return self.politeness.room(host, self.in_flight.get(host, 0), self.starts.get(host), self.now)

    def _limited(self, host: str) -> bool:
        limit, spacing = self.politeness.limits(host)
        return limit is not None or spacing > timedelta(0)

    def _lock(self, hosts: set[str]) -> None:
        """Lock ``hosts`` (those another grab holds are closed) and read their state again."""
        wanted = self.db.array(sorted(hosts))
        got = {r[0] for r in self.db.tuples(self.conn, self.q.lock_hosts, {**self.params, "hosts": wanted})}
        self.closed |= hosts - got
        self.locked |= got
        if not got:
            return
        mine = {**self.params, "hosts": self.db.array(sorted(got))}
        fresh: dict[str, int] = dict(self.db.tuples(self.conn, self.q.in_flight_of_hosts, mine))
        starts: dict[str, Any] = dict(self.db.tuples(self.conn, self.q.starts_of_hosts, mine))  # times as stored
        for host in got:
            self.in_flight[host] = fresh.get(host, 0)
            when = starts.get(host)
            self.starts.pop(host, None)
            if when is not None:
                self.starts[host] = self.db.read_time(when)
            if self._room(host) == 0:
                self.closed.add(host)

    def _keep(self, rows: Sequence[tuple]) -> list[tuple]:
        """What the hosts' room allows, in the pick's order; fills hosts close."""
        kept = []
        for row in rows:
            host = row[4]
            if host is None or not self._limited(host):
                kept.append(row)
                continue
            if host in self.closed:
                continue
            room = self._room(host)
            if room is not None and room <= 0:
                self.closed.add(host)
                continue
            kept.append(row)
            self.in_flight[host] = self.in_flight.get(host, 0) + 1
            self.starts[host] = self.now
            if self._room(host) == 0:
                self.closed.add(host)
        return kept

    def pick(self, pick_sql: str, limit: int) -> list[tuple]:
        """Up to ``limit`` origins of one pick that their hosts' room allows, marked as grabbed."""
        sql = polite_statement(self.q.polite_pick, pick_sql, self.q.host_filter)
        taken: list[tuple] = []
        for _ in range(MAX_ROUNDS):
            want = limit - len(taken)
            if want <= 0:
                break
            closed = self.db.array(sorted(self.closed))
            rows = self.db.tuples(self.conn, sql, {**self.params, "limit": want, "closed_hosts": closed})
            hosts = {r[4] for r in rows if r[4] is not None and r[4] not in self.locked and self._limited(r[4])}
            if hosts:
                self._lock(hosts - self.closed)
            kept = self._keep(rows)
            if kept:
                self.conn.execute(self.q.mark_grabbed, {**self.params, "urls": self.db.array(r[0] for r in kept)})
                started = sorted({r[4] for r in kept if r[4] is not None and self._limited(r[4])})
                if started:
                    self.conn.execute(self.q.record_starts, {**self.params, "hosts": self.db.array(started)})
            taken.extend(kept)
            if len(rows) < want:  # the walk found no more
                break
        return taken
