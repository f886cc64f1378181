"""One journal client of a consumer group, as its own process (``python journal_member.py DSN BROKERS TOPIC
GROUP``), for the group's tests: it feeds a PostgreSQL store, and says on stdout, one line each, when it
starts recording a batch (``recording N``), when the store has it (``recorded N``) and which partitions
the group gives it (``assigned [...]``), so that a test can SIGKILL it in the middle of a batch. Each
batch takes ``--store-delay`` seconds longer, the time a test needs to catch it there."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time

from ostinato.domain.clock import SystemClock
from ostinato.domain.visits import FeedbackPolicy
from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.store.postgresql import PostgresStore


class SlowStore:
    def __init__(self, store: PostgresStore, delay: float):
        self._store, self.delay = store, delay

    def record_visit_statuses(self, statuses, policy, *, now=None):
        print(f"recording {len(statuses)}", flush=True)
        time.sleep(self.delay)  # a slow store: the batch stays read and not stored while a test kills the member
        changed = self._store.record_visit_statuses(statuses, policy, now=now)
        print(f"recorded {len(statuses)}", flush=True)
        return changed

    def __getattr__(self, name):
        return getattr(self._store, name)


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("dsn", "brokers", "topic", "group"):
        parser.add_argument(name)
    parser.add_argument("--store-delay", type=float, default=0.3)
    parser.add_argument("--batch-size", type=int, default=25)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    store = PostgresStore(args.dsn)
    client = JournalClient(SlowStore(store, args.store_delay), FeedbackPolicy(), SystemClock(), brokers=args.brokers,
                           group_id=args.group, topics=[args.topic], batch_size=args.batch_size, batch_timeout=0.2,
                           session_timeout=6, retry_delays=(0.2,))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    shown: list = []
    with client:
        while not stop.is_set():
            client.run_once()
            if client.assignment != shown:
                shown = client.assignment
                print(f"assigned {[p for _, p in shown]}", flush=True)
    store.close()
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
