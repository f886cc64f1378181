"""Where the protocol's visit-stats upsert spends its time as the table grows: the WAL it writes.

Starts a private durable PostgreSQL (``shared_buffers`` 2 GB, plus any ``--pg-setting``), lists N origins of one
lister (``record_listed_origins``), ``VACUUM ANALYZE``, ``CHECKPOINT``, then writes 12 batches of 1,000 first
successful visits (random origins) through the store's ``merge_visit_stats``, the statement behind
``ostinato swh-rpc``'s ``origin_visit_stats_upsert``, and prints each batch's time and the WAL it wrote
(``pg_current_wal_insert_lsn`` before and after). Right after a checkpoint every page a batch touches for the
first time carries a full-page image in the WAL: compare ``--pg-setting full_page_writes=off`` (unsafe, to
measure only) and ``wal_compression=lz4``.

    .venv/bin/python bench/upsert_wal.py --origins 100000
    .venv/bin/python bench/upsert_wal.py --origins 1000000 --pg-setting full_page_writes=off
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository's root: its test_servers

import psycopg

from ostinato.domain.listing_grabs import ProtocolVisitStats
from ostinato.domain.origins import ListedOrigin
from ostinato.domain.visits import VisitOutcome
from ostinato.store.postgresql import PostgresStore
from test_servers.postgres import PostgresCluster

NOW = datetime(2026, 11, 1, tzinfo=UTC)
BATCHES, BATCH = 12, 1000


def url(i: int) -> str:
    return f"https://forge.example/r/{hashlib.sha1(str(i).encode()).hexdigest()}"


def listed_store(dsn: str, origins: int) -> PostgresStore:
    """A store at ``dsn`` with ``origins`` origins of one lister listed, vacuumed, analyzed, checkpointed."""
    store = PostgresStore(dsn)
    store.init_schema()
    lister = store.get_or_create_lister("forge", "main", NOW)
    for start in range(0, origins, 20_000):
        store.record_listed_origins(lister.id, [
            ListedOrigin(url(i), "git", {}, last_update=NOW - timedelta(hours=i % 5000))
            for i in range(start, min(origins, start + 20_000))], NOW)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")
    return store


def visit_order(origins: int) -> list[int]:
    """The origins in the order their first visits come (seeded)."""
    order = list(range(origins))
    random.Random(1).shuffle(order)
    return order


def first_visits(order: list[int], k: int) -> list[ProtocolVisitStats]:
    """Batch ``k``: the stats of the first successful visit of the next ``BATCH`` origins, at minute ``k``."""
    at = NOW + timedelta(minutes=k)
    return [ProtocolVisitStats(url(i), "git", at, VisitOutcome.SUCCESSFUL, at, hashlib.sha1(f"s{i}".encode()).digest(),
                               None, None, None, None) for i in order[k * BATCH:(k + 1) * BATCH]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000)
    parser.add_argument("--pg-setting", dest="pg_settings", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    settings = {"shared_buffers": "2GB", **dict(item.split("=", 1) for item in args.pg_settings)}
    with PostgresCluster(durable=True, settings=settings) as cluster:
        dsn = cluster.dsn()
        store = listed_store(dsn, args.origins)
        with psycopg.connect(dsn, autocommit=True) as conn:
            pages = conn.execute("SELECT pg_relation_size('origin_visit_stats') / 8192").fetchone()[0]
        print(f"{args.origins:,} origins, {pages:,} heap pages of visit stats; settings {settings}")
        order = visit_order(args.origins)
        times, wal = [], []
        for k in range(BATCHES):
            stats = first_visits(order, k)
            at = stats[0].last_visit
            with psycopg.connect(dsn, autocommit=True) as conn:
                before = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
            started = time.perf_counter()
            store.merge_visit_stats(stats, now=at)
            times.append(time.perf_counter() - started)
            with psycopg.connect(dsn, autocommit=True) as conn:
                wal.append(int(conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                                            (before,)).fetchone()[0]))
        store.close()
    print(f"merge of {BATCH:,}: median {statistics.median(times) * 1000:.1f} ms (each: "
          + ", ".join(f"{t * 1000:.0f}" for t in times) + ")")
    print(f"WAL a batch: median {statistics.median(wal) / 1e6:.2f} MB (each: "
          + ", ".join(f"{w / 1e6:.1f}" for w in wal) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
