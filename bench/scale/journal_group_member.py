"""One member of the benchmark's consumer group (``bench/scale/journal_group.py``), as its own process:
``python journal_group_member.py DSN BROKERS TOPIC GROUP BATCH``. A ``JournalClient`` on a
``PostgresStore`` until SIGTERM; each batch the store took is printed as ``batch START END STATUSES``
(wall-clock seconds, comparable between the members)."""

from __future__ import annotations

import signal
import sys
import threading
import time

from ostinato.domain.clock import SystemClock
from ostinato.domain.visits import FeedbackPolicy
from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.store.postgresql import PostgresStore


class TimedStore:
    def __init__(self, store: PostgresStore):
        self._store = store

    def record_visit_statuses(self, statuses, policy, *, now=None):
        start = time.time()
        changed = self._store.record_visit_statuses(statuses, policy, now=now)
        print(f"batch {start:.6f} {time.time():.6f} {len(statuses)}", flush=True)
        return changed

    def __getattr__(self, name):
        return getattr(self._store, name)


def main() -> None:
    dsn, brokers, topic, group, batch = sys.argv[1:6]
    store = PostgresStore(dsn)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client = JournalClient(TimedStore(store), FeedbackPolicy(), SystemClock(), brokers=brokers, group_id=group,
                           topics=[topic], batch_size=int(batch), batch_timeout=0.2, session_timeout=6)
    with client:
        client.run_forever(stop)
    store.close()


if __name__ == "__main__":
    main()
