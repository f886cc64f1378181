"""The origin metrics the writes keep up to date equal a full recount, on every store.

A seeded random sequence of listings (by several listers, some origins listed by more than one),
visit statuses (successful, failed, not found; recent and old; with the wall clock and without),
grabs under every policy (dry runs and real ones), hand-backs, the swh protocol's stats upserts and
grabs, and a clock that moves by odd
amounts; every few steps the metrics a pass reads from what the writes kept are compared with a
full recount of every origin (``update_origin_metrics(now, recount=True)``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from origin_history import OriginHistory


class Sequence(OriginHistory):
    """One random history, step by step, on a store."""

    def step(self) -> None:
        self.rng.choice((self.listing, self.statuses, self.statuses, self.grab, self.grab, self.release,
                         self.protocol_stats, self.protocol_grab))()
        self.now += self.moment(timedelta(minutes=25))

    def check(self) -> None:
        kept = self.store.update_origin_metrics(self.now)
        recounted = self.store.update_origin_metrics(self.now, recount=True)
        assert kept == recounted, f"at {self.now}"
        assert self.store.get_origin_metrics() == recounted


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_metrics_equal_a_full_recount(store, seed):
    run = Sequence(store, seed)
    for number in range(120):
        run.step()
        if number % 8 == 7:
            run.check()
    run.check()


def test_kept_metrics_equal_a_recount_after_a_long_history(store):
    """No recount in between: every change since the start is carried by the cells alone."""
    run = Sequence(store, 7)
    for _ in range(150):
        run.step()
    assert any(m.origins_known for m in store.update_origin_metrics(run.now))
    run.check()
