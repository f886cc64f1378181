"""The journal client as a consumer group: statuses per second with 1, 2 and 4 clients against one PostgreSQL.

In one run, the benchmark

1. starts a throwaway Tansu broker and a PostgreSQL cluster (``--durable`` as in production, else fsync off);
2. seeds a template database with N listed origins of one lister (``bench/origins_data.Dataset``: their
   listings and visit-stats rows) and produces M of their first visit statuses (msgpack, keyed by origin)
   to one topic of ``--partitions`` partitions;
3. for each count of clients k (``--clients 1,2,4``), clones the template (every run starts from the same
   rows), starts k ``ostinato journal-client``-like processes in one fresh consumer group
   (``bench/scale/journal_group_member.py``: a ``JournalClient`` on a ``PostgresStore``, each batch's start and end
   printed), and waits until the group has committed every partition to its end; then stops them;

and prints, per k, the statuses per second from the first batch's start to the last batch's end (joining
the group is left out: Tansu answers a join after a share of the session timeout), the ratio to one client,
and the visit stats checked (M rows with a status). Two cores run the k clients, PostgreSQL and the broker
together: see ``bench/scale/README.md`` for what such a machine can and cannot show.

    .venv/bin/python bench/scale/journal_group.py --origins 1000000 --statuses 200000
    .venv/bin/python bench/scale/journal_group.py --origins 20000 --statuses 20000 --clients 1,2   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

import psycopg
from confluent_kafka import Consumer, Producer, TopicPartition

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.origins_data import Dataset
from ostinato.integrations.kafka.journal_messages import encode_msgpack
from ostinato.store.postgresql import PostgresStore
from test_servers.kafka import TansuBroker
from test_servers.postgres import PostgresCluster

MEMBER = Path(__file__).with_name("journal_group_member.py")
TOPIC = "swh.journal.objects.origin_visit_status"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--origins", type=int, default=1_000_000)
    parser.add_argument("--statuses", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--clients", default="1,2,4")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--durable", action="store_true", help="PostgreSQL with fsync on (as in production)")
    parser.add_argument("--hash-parts", type=int, default=0,
                        help="hash-partition the visit stats by URL in this many parts (0: the store's own table)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    return args


def partition_by_hash(dsn: str, parts: int) -> None:
    """The visit stats, which the statuses write, made ``PARTITION BY HASH (url)`` in ``parts`` parts, with the
    store's own columns, indexes and triggers (re-created on the partitioned table): the store's listings and
    statuses run on it unchanged. The listings' table stays whole: the store's listing write reads a system
    column a partitioned table cannot give, and its grabs mark rows by tuple id, which parts do not make
    unique (neither is measured here)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in ("origin_visit_stats",):
            indexes = [r[0] for r in conn.execute(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = %s::regclass AND NOT indisprimary",
                (table,))]
            triggers = [r[0] for r in conn.execute(
                "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                (table,))]
            key = conn.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                               "AND contype = 'p'", (table,)).fetchone()[0]
            conn.execute(f"ALTER TABLE {table} RENAME TO {table}_plain")
            conn.execute(f"CREATE TABLE {table} (LIKE {table}_plain INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
                         f"INCLUDING GENERATED, {key}) PARTITION BY HASH (url)")
            for i in range(parts):
                conn.execute(f"CREATE TABLE {table}_p{i} PARTITION OF {table} FOR VALUES WITH (MODULUS {parts}, "
                             f"REMAINDER {i})")
            conn.execute(f"DROP TABLE {table}_plain CASCADE")
            for statement in indexes + triggers:
                conn.execute(statement)


def seed(dsn: str, data: Dataset, now: datetime, batch: int, hash_parts: int) -> None:
    store = PostgresStore(dsn)
    try:
        store.init_schema()
        if hash_parts:
            partition_by_hash(dsn, hash_parts)
        lister = store.get_or_create_lister("forge", "forge.example", now)
        with progress("listings", data.n) as advance:
            for origins in data.listed_batches(batch):
                store.record_listed_origins(lister.id, origins, now)
                advance(len(origins))
    finally:
        store.close()


def produce(broker: TansuBroker, data: Dataset, m: int, batch: int) -> dict[int, int]:
    """The first ``m`` statuses of the journal; each partition's end offset, from the delivery reports."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20,
                         "queue.buffering.max.messages": 1_000_000})
    ends: dict[int, int] = {}

    def delivered(error, message) -> None:
        if error is None:
            ends[message.partition()] = max(ends.get(message.partition(), 0), message.offset() + 1)

    sent = 0
    with progress("produce", m) as advance:
        for statuses in data.status_batches(batch):
            for status in statuses[: m - sent]:
                while True:
                    try:
                        producer.produce(TOPIC, encode_msgpack(status), key=status.origin.encode(), on_delivery=delivered)
                        break
                    except BufferError:
                        producer.poll(0.05)
            producer.poll(0)
            advance(min(len(statuses), m - sent))
            sent += min(len(statuses), m - sent)
            if sent >= m:
                break
    assert producer.flush(120) == 0
    return ends


def group_offsets(broker: TansuBroker, group: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [TopicPartition(TOPIC, p) for p in range(partitions)], timeout=10)}
    finally:
        consumer.close()


def run_group(k: int, dsn: str, broker: TansuBroker, ends: dict[int, int], args: argparse.Namespace) -> dict[str, float]:
    group = f"bench-{k}-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    members = [subprocess.Popen([sys.executable, str(MEMBER), dsn, broker.bootstrap_servers, TOPIC, group,
                                 str(args.batch_size)], stdout=subprocess.PIPE, text=True, env=env) for _ in range(k)]
    started = time.monotonic()
    try:
        while True:
            offsets = group_offsets(broker, group, args.partitions)
            if all(offsets.get(p, -1) >= end for p, end in ends.items()):
                break
            if time.monotonic() - started > 3600:
                raise RuntimeError(f"{k} clients did not finish in an hour: {offsets}")
            time.sleep(1)
    finally:
        for member in members:
            member.send_signal(signal.SIGTERM)
    batches = []
    for member in members:
        out, _ = member.communicate(timeout=60)
        batches += [tuple(map(float, line.split()[1:])) for line in out.splitlines() if line.startswith("batch ")]
    first, last = min(b[0] for b in batches), max(b[1] for b in batches)
    n = int(sum(b[2] for b in batches))
    busy = sum(b[1] - b[0] for b in batches)
    return {"clients": k, "statuses": n, "seconds": last - first, "statuses_per_s": n / (last - first),
            "store_share": busy / (k * (last - first)), "batches": len(batches)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    now = datetime.now(UTC).replace(microsecond=0)
    data = Dataset(args.origins, 7, now)
    results = []
    with tempfile.TemporaryDirectory(prefix="ostinato-group-"), \
            PostgresCluster(durable=args.durable, settings={"shared_buffers": "2GB"}) as cluster, \
            TansuBroker({TOPIC: args.partitions}) as broker:
        cluster.create_database("template_group")
        seed(cluster.dsn("template_group"), data, now, 10_000, args.hash_parts)
        ends = produce(broker, data, args.statuses, 10_000)
        console.print(f"{args.origins:,} origins, {sum(ends.values()):,} statuses in {args.partitions} partitions; "
                      f"visit stats {f'hash-partitioned in {args.hash_parts:d} parts' if args.hash_parts else 'as the store has them'}")
        for k in args.clients:
            name = f"run_{k}"
            with psycopg.connect(cluster.dsn("postgres"), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name} TEMPLATE template_group")
            figures = run_group(k, cluster.dsn(name), broker, ends, args)
            with psycopg.connect(cluster.dsn(name)) as conn:
                fed = conn.execute("SELECT count(*) FROM origin_visit_stats WHERE last_status_date IS NOT NULL").fetchone()[0]
            figures["visit_stats_with_a_status"] = fed
            results.append(figures)
            console.print(f"{k} client{'s' if k > 1 else ''}: {figures['statuses_per_s']:,.0f} statuses/s "
                          f"({figures['seconds']:.1f} s, store busy {100 * figures['store_share']:.0f} % of each "
                          f"client's time), {fed:,} visit stats fed")
    base = results[0]["statuses_per_s"]
    for figures in results:
        figures["ratio_to_one"] = figures["statuses_per_s"] / base
        console.print(f"  {figures['clients']} → {figures['ratio_to_one']:.2f}× one client")
    layout = f"-hash{args.hash_parts}" if args.hash_parts else ""
    out = args.json_out or (RESULTS
                            / f"journal-group-{now:%Y-%m-%d}-{(code['git_commit'] or 'x')[:7]}{layout}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**result_header("bench/scale/journal_group.py", {}), "code": code, "parameters": vars(args) | {
        "json_out": str(out)}, "results": results}, indent=2, default=str) + "\n")
    console.print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
