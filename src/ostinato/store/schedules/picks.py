"""The schedule pick by a rule other than the plain greedy one (``domain.lookahead``), written once over a
:class:`~ostinato.store.dialect.Dialect`: the snapshot it plans from (the K most urgent schedules that
can start, the K next due within the horizon, the live schedulers, the holds in force), the choice
made by the domain's rule, and the ownership and holds written, in one transaction. Also the
schedulers' heartbeats and the holds as the interfaces read them.

The plain pick (deadline order, no lookahead) stays the indexed pick of ``flow.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ...domain.errors import ValidationError
from ...domain.lookahead import NODE_TTL, Candidate, Hold, NodeLoad, PickOrder, PickRule, choose, order_key, period_of
from ...domain.run_lengths import expected_length
from ...domain.schedules import Schedule, ScheduleRun
from ..dialect import Connection, Dialect, Row
from ..queries import Queries

#: a scheduler silent for this many node timeouts is forgotten
FORGET_AFTER = 10
#: the most runs in flight one heartbeat tells
MAX_SLOTS = 10_000


class PickFlow:
    """The pick by rule, the heartbeats and the holds (mixed into the schedules' flow)."""

    db: Dialect

    @property
    def _schedules(self) -> Queries:
        return self.db.queries("schedules")

    def _schedule(self, row: Row) -> Schedule:
        raise NotImplementedError

    def _run(self, row: Row) -> ScheduleRun:
        raise NotImplementedError

    def _pick_by_rule(self, conn: Connection, *, node: str, owner_name: str, tags: Sequence[str], now: datetime,
                      rule: PickRule, window: int) -> tuple[list[str], list[Row], list[Row]]:
        """Choose by ``rule`` from the snapshot read in ``conn``, take ownership of the chosen and replace
        this scheduler's holds: the names taken in order, their rows as owned, their runs as opened. On
        PostgreSQL the snapshot's reads go in one round trip (pipeline mode), and so do the writes."""
        queries, time = self._schedules, self.db.time
        look = rule.lookahead
        k = max(look.k if look is not None else 0, len(tags))
        params = {"now": time(now), "node": node, "limit": k, "window": window}
        if rule.order is PickOrder.DEADLINE:  # the plain pick's two walks (flow.pick_query), K rows each
            startable = conn.execute(queries.count_startable, params).fetchone()["n"]
            query = queries.candidates_by_deadline if startable >= window else queries.few_candidates_by_deadline
        else:  # the due order walks the wake index; the period order sorts what it reads (no index)
            query = queries.candidates_by_due
            params["limit"] = k if rule.order is PickOrder.DUE else window
        with self.db.pipeline(conn):
            mine_cursor = conn.execute(query, params)
            if look is not None:  # and those other schedulers may run: every one of them plans with the same ones
                any_cursor = conn.execute(query, {**params, "node": None})
                upcoming_cursor = conn.execute(queries.upcoming_schedules,
                                               {**params, "until": time(now + look.horizon), "limit": look.k})
                nodes_cursor = conn.execute(queries.list_schedulers, {"cutoff": time(now - look.node_ttl)})
                holds_cursor = conn.execute(queries.list_holds, {"now": time(now)})
        rows = {r["name"]: r for r in mine_cursor.fetchall()}
        upcoming: list[Candidate] = []
        nodes: list[NodeLoad] = []
        holds: list[Hold] = []
        if look is not None:
            rows.update((r["name"], r) for r in any_cursor.fetchall())
            upcoming = [self._candidate(r) for r in upcoming_cursor.fetchall()]
            nodes = [self._node_load(r) for r in nodes_cursor.fetchall()]
            holds = [self._hold(r) for r in holds_cursor.fetchall()]
        candidates = sorted((self._candidate(r) for r in rows.values()), key=lambda c: order_key(rule, c))
        mine = [c for c in candidates if node not in c.excluded][:k]
        candidates = sorted({c.name: c for c in [*candidates[:k], *mine]}.values(), key=lambda c: order_key(rule, c))
        choice = choose(node=node, instance=owner_name, room=len(tags), startable=candidates, upcoming=upcoming,
                        nodes=nodes, holds=holds, now=now, rule=rule)
        rewrite_holds = look is not None and (choice.holds or any((h.node, h.instance) == (node, owner_name) for h in holds))
        free = {r["name"] for r in conn.execute(queries.lock_chosen,
                                                {"names": self.db.array(choice.take)}).fetchall()} if choice.take else set()
        chosen = [n for n in choice.take if n in free]  # a concurrent pick is taking the others
        columns = self.db.columns(names=chosen, tags=list(tags[:len(chosen)]))
        params = {"now": time(now), "node": node, "owner_name": owner_name, **columns}
        with self.db.pipeline(conn):  # the rows are free and locked: every one is taken, its run opened
            if rewrite_holds:
                self._replace_holds(conn, node, owner_name, choice.holds, now)
            if chosen:
                owned_cursor = conn.execute(queries.take_ownership, params)
                runs_cursor = conn.execute(queries.insert_schedule_runs, params)
        if not chosen:
            return [], [], []
        by_name = {r["name"]: r for r in owned_cursor.fetchall()}
        runs = list(runs_cursor.fetchall())
        assert set(by_name) == set(chosen), f"locked schedules not taken: {sorted(set(chosen) - set(by_name))}"
        return chosen, [by_name[n] for n in chosen], runs

    def _candidate(self, row: Row) -> Candidate:
        """The pick's view of a schedule's row: the few columns it plans with."""
        db = self.db
        can = db.read_time(row["can_start_by"])
        return Candidate(row["name"], can, db.read_time(row["should_start_by"]),
                         expected_length(db.read_interval(row["average_good_duration"]),
                                         db.read_interval(row["expected_duration"])),
                         period_of(db.read_interval(row["scheduling_period"]), row["cron_schedule"], row["tz"], can),
                         frozenset(db.read_array(row["dont_run_on_nodes"])))

    def _replace_holds(self, conn: Connection, node: str, instance: str, holds: Sequence[Hold], now: datetime) -> None:
        time = self.db.time
        conn.execute(self._schedules.drop_holds, {"node": node, "instance": instance})
        if holds:
            conn.execute(self._schedules.insert_holds, {
                "node": node, "instance": instance, "now": time(now),
                **self.db.columns(names=[h.waits_for for h in holds], due=[time(h.due_at) for h in holds],
                                  expires=[time(h.expires_at) for h in holds])})

    def _node_load(self, row: Row) -> NodeLoad:
        read = self.db.read_time
        return NodeLoad(row["node"], row["instance"], row["slots"],
                        tuple(read(t) for t in self.db.read_array(row["run_ends"])), read(row["seen_at"]))

    def _hold(self, row: Row) -> Hold:
        read = self.db.read_time
        return Hold(row["node"], row["instance"], row["waits_for"], read(row["due_at"]), read(row["expires_at"]))

    # -- heartbeats and holds ------------------------------------------------------
    def heartbeat_scheduler(self, node: str, instance: str, *, slots: int, run_ends: Sequence[datetime],
                            now: datetime, ttl: timedelta = NODE_TTL) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= MAX_SLOTS:
            raise ValidationError("slots", f"a whole number from 1 to {MAX_SLOTS}", slots)
        if len(run_ends) > slots:
            raise ValidationError("run_ends", f"at most one end per slot ({slots})", len(run_ends))
        time = self.db.time
        with self.db.write() as conn:
            conn.execute(self._schedules.heartbeat_scheduler, {
                "node": node, "instance": instance, "slots": slots, "now": time(now),
                "run_ends": self.db.array(time(t) for t in sorted(run_ends))})
            conn.execute(self._schedules.forget_schedulers, {"cutoff": time(now - ttl * FORGET_AFTER)})
            conn.execute(self._schedules.purge_holds, {"cutoff": time(now - ttl)})

    def list_schedulers(self, now: datetime, *, ttl: timedelta = NODE_TTL) -> list[NodeLoad]:
        return [self._node_load(r) for r in self.db.read(self._schedules.list_schedulers,
                                                          {"cutoff": self.db.time(now - ttl)})]

    def list_holds(self, now: datetime, *, schedule: str | None = None) -> list[Hold]:
        time = self.db.time
        if schedule is None:
            rows = self.db.read(self._schedules.list_holds, {"now": time(now)})
        else:
            rows = self.db.read(self._schedules.holds_for, {"name": schedule, "now": time(now)})
        return [self._hold(r) for r in rows]
