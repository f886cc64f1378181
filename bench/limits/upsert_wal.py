"""Where the protocol's visit-stats upsert spends its time as the table grows: the WAL it writes.

Starts a private durable PostgreSQL (``shared_buffers`` 2 GB, plus any ``--pg-setting``), lists N origins of one
lister (``record_listed_origins``), ``VACUUM ANALYZE``, ``CHECKPOINT``, then writes 12 batches of 1,000 first
successful visits (random origins) through the store's ``merge_visit_stats``, the statement behind
``ostinato swh-rpc``'s ``origin_visit_stats_upsert``, and prints each batch's time and the WAL it wrote
(``pg_current_wal_insert_lsn`` before and after). Right after a checkpoint every page a batch touches for the
first time carries a full-page image in the WAL: compare ``--pg-setting full_page_writes=off`` (unsafe, to
measure only) and ``wal_compression=lz4``.

Then it prints what the WAL of the 12 batches is made of, per origin written: each kind of record (``pg_walinspect``)
and the table or index it went to, with the bytes of its full-page images apart. That is where a layout's WAL goes:
the row's new version, each index entry it adds, the lock an upsert writes first, the metric cells.

    .venv/bin/python bench/limits/upsert_wal.py --origins 100000
    .venv/bin/python bench/limits/upsert_wal.py --origins 1000000 --pg-setting full_page_writes=off
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

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
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            first = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
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
        with psycopg.connect(dsn, autocommit=True) as conn:
            parts = wal_parts(conn, first)
        store.close()
    print(f"merge of {BATCH:,}: median {statistics.median(times) * 1000:.1f} ms (each: "
          + ", ".join(f"{t * 1000:.0f}" for t in times) + ")")
    print(f"WAL a batch: median {statistics.median(wal) / 1e6:.2f} MB (each: "
          + ", ".join(f"{w / 1e6:.1f}" for w in wal) + ")")
    rows = BATCHES * BATCH
    print(f"the WAL of the {BATCHES} batches, per origin written (records of the server's other work included):")
    for (kind, relation), (count, size, images) in parts[:14]:
        print(f"  {kind:>14} {relation or '-':<40} {count / rows:5.2f} a row {size / rows:7.0f} B"
              + (f" (of which full-page images {images / rows:,.0f} B)" if images else ""))
    return 0


def wal_parts(conn: psycopg.Connection, since: str) -> list[tuple[tuple[str, str | None], tuple[int, int, int]]]:
    """The WAL since ``since`` by kind of record and the relation it went to: (count, bytes, bytes of full-page
    images), largest first."""
    conn.execute("SELECT pg_switch_wal()")  # the records read must be flushed
    names = dict(conn.execute("SELECT pg_relation_filenode(oid)::text, relname::text FROM pg_class "
                              "WHERE pg_relation_filenode(oid) IS NOT NULL").fetchall())
    parts: dict[tuple[str, str | None], list[int]] = {}
    for kind, blocks, size, images in conn.execute(
            "SELECT record_type, block_ref, record_length, fpi_length "
            "FROM pg_get_wal_records_info(%s, pg_current_wal_flush_lsn())", (since,)):
        found = re.search(r"rel \d+/\d+/(\d+)", blocks or "")
        key = (kind, names.get(found.group(1), found.group(1)) if found else None)
        part = parts.setdefault(key, [0, 0, 0])
        part[0] += 1
        part[1] += size
        part[2] += images
    return sorted(((key, (c, b, i)) for key, (c, b, i) in parts.items()), key=lambda item: -item[1][1])


if __name__ == "__main__":
    sys.exit(main())
