"""Throughput of the journal client: visit statuses from Kafka into each store, against a bare consumer.

In one run, the benchmark

1. starts a throwaway Tansu broker (``test_servers.kafka.TansuBroker``,
   in-memory) and produces N visit statuses to one topic of ``--partitions``
   partitions: N/2 ``git`` origins visited twice (the second visit 30 days after
   the first, its date spread over the past two years), 80 % ``full`` (half the
   second visits with a new snapshot), 10 % ``partial``, 5 % ``failed``, 5 %
   ``not_found``, keyed by origin, encoded as ``--format`` (``msgpack``: the
   archive's, with msgpack timestamps; ``json``; ``mixed``: alternately);
2. times the **peer**: a bare confluent-kafka consumer (``assign`` at the
   beginning, ``consume`` in batches of ``--batch-size``) that reads the N
   messages and decodes each one with ``decode_visit_status``, no store, no
   commit, and also one that only reads them (no decoding);
3. for each store (SQLite in a temporary file, PostgreSQL in a throwaway
   ``PostgresCluster``) on a fresh database, times one ``JournalClient`` (its own
   consumer group, batches of ``--batch-size``) from its start until it has read,
   stored and committed the N statuses, and checks the counters and the visit
   stats (one per origin, none rejected);

then prints statuses per second and the ratio of each store's to the peer's,
and writes the figures and the machine description as JSON.

Run from the repository root::

    .venv/bin/python bench/scale/journal_client.py                      # 200,000 statuses, both stores
    .venv/bin/python bench/scale/journal_client.py --statuses 20000 --stores sqlite --format json

PostgreSQL runs with fsync on (``durable=True``, as in production) unless
``--no-durable`` is given.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]  # the repository's root: bench.*, test_servers (bench/README.md)

from rich.table import Table

from bench.common.report import RESULTS, code_version, console, progress, result_header
from bench.limits.tasks import fresh_store
from ostinato.domain.clock import SystemClock
from ostinato.domain.visits import FeedbackPolicy, JournalStatus, VisitStatus
from ostinato.integrations.kafka.journal_client import JournalClient
from ostinato.integrations.kafka.journal_messages import decode_visit_status, encode_json, encode_msgpack
from ostinato.store.interface import Store
from test_servers.kafka import TansuBroker

STORES = ("sqlite", "postgresql")
FORMATS = ("msgpack", "json", "mixed")
TOPIC = "swh.journal.objects.origin_visit_status"
VISIT_TYPE = "git"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statuses", type=int, default=200_000, help="number of statuses N (default 200000)")
    parser.add_argument("--format", choices=FORMATS, default="msgpack", help="message encoding (default msgpack)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the topic (default 4)")
    parser.add_argument("--batch-size", type=int, default=1000, help="JournalClient batch_size and the peer's consume size")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores among sqlite,postgresql")
    parser.add_argument("--no-durable", dest="durable", action="store_false", help="PostgreSQL with fsync off (not like production)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the data")
    parser.add_argument("--json-out", type=Path, help="where to write the results (default bench/results/journal-client-<date>.json)")
    args = parser.parse_args(argv)
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    unknown = sorted(set(args.stores) - set(STORES))
    if unknown:
        parser.error(f"--stores: expected some of {', '.join(STORES)}, got {args.stores}")
    if min(args.statuses, args.partitions, args.batch_size) < 1:
        parser.error("--statuses, --partitions and --batch-size must be at least 1")
    if args.json_out is None:
        args.json_out = RESULTS / f"journal-client-{date.today().isoformat()}.json"
    return args


# -- data -------------------------------------------------------------------------
def make_statuses(n: int, seed: int) -> list[VisitStatus]:
    rng = random.Random(seed)
    now = datetime.now(UTC).replace(microsecond=0)
    origins = (n + 1) // 2
    statuses: list[VisitStatus] = []
    for i in range(origins):
        url = f"https://forge.example.org/group{i % 1000}/repo{i}.git"
        first = now - timedelta(days=760) + timedelta(seconds=rng.randrange(700 * 86400))
        snapshot = rng.randbytes(20)
        for visit, when in ((1, first), (2, first + timedelta(days=30))):
            if len(statuses) == n:
                break
            roll = rng.random()
            if roll < 0.8:
                status = JournalStatus.FULL
                if visit == 2 and rng.random() < 0.5:
                    snapshot = rng.randbytes(20)
            elif roll < 0.9:
                status = JournalStatus.PARTIAL
            elif roll < 0.95:
                status = JournalStatus.FAILED
            else:
                status = JournalStatus.NOT_FOUND
            final_snapshot = snapshot if status in (JournalStatus.FULL, JournalStatus.PARTIAL) else None
            statuses.append(VisitStatus(url, visit, VISIT_TYPE, status, when, final_snapshot))
    return statuses


def encode(status: VisitStatus, index: int, fmt: str) -> bytes:
    if fmt == "json" or (fmt == "mixed" and index % 2):
        return encode_json(status)
    return encode_msgpack(status)


def produce(broker: TansuBroker, statuses: list[VisitStatus], fmt: str) -> dict[str, Any]:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20, "batch.num.messages": 10_000,
                         "queue.buffering.max.messages": 1_000_000})
    start = time.perf_counter()
    size = 0
    with progress("produce", len(statuses)) as advance:
        for index, status in enumerate(statuses):
            value = encode(status, index, fmt)
            size += len(value)
            while True:
                try:
                    producer.produce(TOPIC, value=value, key=status.origin.encode())
                    break
                except BufferError:
                    producer.poll(0.05)
            if index % 10_000 == 9_999:
                producer.poll(0)
                advance(10_000)
        left = producer.flush(60)
        advance(len(statuses) % 10_000)
    if left:
        raise RuntimeError(f"{left} messages not delivered")
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "messages_per_s": len(statuses) / seconds, "mean_message_bytes": size / len(statuses)}


# -- the peer: a bare consumer ------------------------------------------------------
def run_peer(broker: TansuBroker, n: int, partitions: int, batch_size: int, decode: bool) -> dict[str, Any]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"peer-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        start = time.perf_counter()
        consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        read = 0
        with progress("peer, decode" if decode else "peer, read only", n) as advance:
            while read < n:
                messages = consumer.consume(batch_size, 1.0)
                done = 0
                for message in messages:
                    if message.error() is not None:
                        continue
                    if decode:
                        decode_visit_status(message.value())
                    done += 1
                read += done
                advance(done)
                if time.perf_counter() - start > 600:
                    raise RuntimeError(f"peer read only {read:,} of {n:,} messages in 10 min")
        seconds = time.perf_counter() - start
    finally:
        consumer.close()
    return {"seconds": seconds, "statuses_per_s": n / seconds}


# -- the journal client on a store ------------------------------------------------------
def run_store(store: Store, broker: TansuBroker, statuses: list[VisitStatus], batch_size: int) -> dict[str, Any]:
    n = len(statuses)
    clock = SystemClock()
    journal = JournalClient(store, FeedbackPolicy(), clock, brokers=broker.bootstrap_servers,
                            group_id=f"bench-{uuid.uuid4().hex[:8]}", topics=[TOPIC], batch_size=batch_size)
    store_seconds = 0.0
    original = store.record_visit_statuses

    def timed_record(*args: Any, **kwargs: Any) -> int:
        nonlocal store_seconds
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            store_seconds += time.perf_counter() - began

    store.record_visit_statuses = timed_record  # type: ignore[method-assign]  # wrapped on this instance, to time the store's share
    try:
        start = time.perf_counter()
        with journal, progress("journal client", n) as advance:
            while journal.counters.consumed < n or journal.waiting_for_store:
                advance(journal.run_once())
                if time.perf_counter() - start > 1800:
                    raise RuntimeError(f"the journal client read only {journal.counters.consumed:,} of {n:,} in 30 min")
            seconds = time.perf_counter() - start
    finally:
        del store.record_visit_statuses
    counters = journal.counters
    keys = sorted({(s.origin, s.type) for s in statuses})
    stats = store.get_visit_stats(keys)
    if (counters.consumed, counters.recorded, counters.rejected) != (n, n, 0) or len(stats) != len(keys):
        raise RuntimeError(f"unexpected outcome: {counters}, {len(stats):,} visit stats for {len(keys):,} origins")
    return {"seconds": seconds, "statuses_per_s": n / seconds, "store_seconds": store_seconds,
            "store_share": store_seconds / seconds, "batches": counters.batches, "changed": counters.changed,
            "store_failures": counters.store_failures}


def report(results: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    peer = results["peer_decode"]["statuses_per_s"]
    ratios = {name: results[name]["statuses_per_s"] / peer for name in args.stores}
    table = Table(title=f"Ostinato journal client: N={args.statuses:,} {args.format} statuses, "
                        f"{args.partitions} partitions, batch {args.batch_size:,}"
                        + (f", PostgreSQL durable={args.durable}" if "postgresql" in args.stores else ""))
    for column, justify in (("consumer", "left"), ("statuses/s", "right"), ("seconds", "right"),
                            ("in the store", "right"), ("÷ peer (decode)", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]  # rich's justify is a Literal of these values
    table.add_row("peer: read only", f"{results['peer_read']['statuses_per_s']:,.0f}",
                  f"{results['peer_read']['seconds']:.1f}", "", "")
    table.add_row("peer: read + decode", f"{peer:,.0f}", f"{results['peer_decode']['seconds']:.1f}", "", "1.00×")
    for name in args.stores:
        figures = results[name]
        table.add_row(f"JournalClient, {name} {figures['version']}", f"{figures['statuses_per_s']:,.0f}",
                      f"{figures['seconds']:.1f}", f"{figures['store_share']:.0%}", f"{ratios[name]:.2f}×")
    from rich.console import Console

    Console(width=None if sys.stdout.isatty() else 120).print(table)
    return ratios


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    code = code_version()
    console.print(f"ostinato in {code['package']}: commit {(code['git_commit'] or '?')[:12]}")
    statuses = make_statuses(args.statuses, args.seed)
    results: dict[str, Any] = {}
    with TansuBroker({TOPIC: args.partitions}) as broker:
        console.print(f"[bold]Tansu[/bold] on {broker.bootstrap_servers}: producing {args.statuses:,} {args.format} statuses")
        results["produce"] = produce(broker, statuses, args.format)
        results["peer_read"] = run_peer(broker, args.statuses, args.partitions, args.batch_size, decode=False)
        results["peer_decode"] = run_peer(broker, args.statuses, args.partitions, args.batch_size, decode=True)
        console.print(f"  peer: {results['peer_read']['statuses_per_s']:,.0f} messages/s read, "
                      f"{results['peer_decode']['statuses_per_s']:,.0f} statuses/s read and decoded")
        for name in args.stores:
            with tempfile.TemporaryDirectory(prefix="ostinato-bench-") as workdir:
                with fresh_store(name, Path(workdir), args.durable) as (store, version):
                    console.print(f"[bold]{name}[/bold] {version}")
                    figures = run_store(store, broker, statuses, args.batch_size)
            results[name] = {"version": version, **figures}
            console.print(f"  {figures['statuses_per_s']:,.0f} statuses/s, {figures['store_share']:.0%} of the time in the store")
    ratios = report(results, args)
    document = {
        **result_header("bench/scale/journal_client.py", results),
        "code": code,
        "parameters": {"statuses": args.statuses, "format": args.format, "partitions": args.partitions,
                       "batch_size": args.batch_size, "durable": args.durable, "seed": args.seed},
        "results": results,
        "ratio_over_peer_decode": ratios,
    }
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    args.json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    console.print(f"results written to {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
