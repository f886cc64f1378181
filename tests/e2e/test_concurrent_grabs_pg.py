"""Two orchestrators grabbing at once on one PostgreSQL never take the same origin."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visit_policies import GrabRequest, VisitPolicy
from ostinato.store.postgresql import PostgresStore

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
N = 3000


def test_concurrent_grabs_share_the_origins_without_overlap(pg_dsn):
    with PostgresStore(pg_dsn) as setup:
        lister = setup.get_or_create_lister("forge", "forge", T0)
        setup.record_listed_origins(lister.id, [
            ListedOrigin(f"https://forge.example/{i}", "git", last_update=T0 - timedelta(minutes=i % 500),
                         is_fork=i % 7 == 0)
            for i in range(N)
        ], T0)
    start = threading.Barrier(3)
    taken: list[list[str]] = [[], [], []]
    errors: list[BaseException] = []

    def orchestrator(index: int) -> None:
        try:
            with PostgresStore(pg_dsn) as store:
                start.wait()
                policy = [VisitPolicy.NEVER_VISITED_OLDEST_UPDATE_FIRST, VisitPolicy.OLDEST_SCHEDULED_FIRST,
                          VisitPolicy.STOP_AFTER_SUCCESS][index]
                while True:
                    visits = store.grab_next_visits("git", [GrabRequest(policy, 37)], T0)
                    if not visits:
                        return
                    taken[index].extend(v.url for v in visits)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=orchestrator, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    every = [url for part in taken for url in part]
    assert len(every) == len(set(every)) == N
    assert sum(1 for part in taken if part) >= 2, [len(part) for part in taken]
