"""``ostinato journal-client`` (see docs/design/origins.md): visit statuses from Kafka into the visit stats.

A thin face over :class:`ostinato.integrations.kafka.journal_client.JournalClient` (imported
when the command runs, so other commands do not load confluent-kafka): it
opens the store, reads the feedback knobs from the settings, handles SIGINT and
SIGTERM like the other services (the batch in hand is stored and committed,
then the client leaves) and prints what it did. A group the brokers refuse this
client (a member of another assignment protocol holds the group id) exits with
status 2 and one line saying so.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from datetime import timedelta

import click
from rich.console import Console
from rich.logging import RichHandler

from .. import extras
from ..domain.errors import ValidationError
from ..integrations.kafka.journal_messages import DEFAULT_TOPIC
from .app import AppContext, cli, pass_app, readable, stop_on_signals
from .output import DurationType, WholeNumberType, echo_json, key_values, plural
from .services import metrics_options


def _setup_logging(verbose: bool) -> None:
    """Logs on stderr (stdout is for the summary, or its JSON)."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(message)s", datefmt="[%X]",
                        handlers=[RichHandler(console=Console(stderr=True), show_path=False, rich_tracebacks=True)],
                        force=True)
    logging.getLogger("psycopg.pool").setLevel(logging.WARNING)


@cli.command("journal-client")
@click.option("--brokers", metavar="HOST:PORT[,…]",
              help="Kafka bootstrap servers (default: the journal_brokers setting, $OSTINATO_JOURNAL_BROKERS).")
@click.option("--group-id", metavar="ID",
              help="Consumer group whose committed offsets say where to resume (default: the journal_group_id "
                   "setting, $OSTINATO_JOURNAL_GROUP_ID).")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC",
              help=f"Topic to read (repeatable; default: the journal_topics setting, {DEFAULT_TOPIC}).")
@click.option("--from-beginning/--from-end", default=True, show_default=True,
              help="Where a partition the group has no committed offset for (a new group, or offsets the brokers "
                   "forgot: expired or deleted) starts: its earliest message (statuses read again, which changes "
                   "nothing), or only messages written from now on (statuses written before are NOT read). "
                   "Either way a warning names the partitions.")
@click.option("--batch-size", type=WholeNumberType(1), default=1000, show_default=True,
              help="Most statuses handed to the store at once.")
@click.option("--batch-timeout", type=DurationType(), default="500ms", show_default=True,
              help="How long to wait for a batch to fill (e.g. 500ms, 2s).")
@click.option("--max-messages", type=WholeNumberType(1), help="Exit after this many messages (stored and committed).")
@click.option("--once", is_flag=True, help="Read every partition to its end, store, commit, exit.")
@click.option("--session-timeout", type=DurationType(), default="45s", show_default=True,
              help="How long the group waits for a silent client before handing its partitions to the others.")
@click.option("--consumer-option", "consumer_options", multiple=True, metavar="KEY=VALUE",
              help="Extra librdkafka consumer setting, e.g. security.protocol=SSL (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the counters as JSON on exit.")
@click.option("-v", "--verbose", is_flag=True)
@metrics_options
@pass_app
def journal_client(app: AppContext, brokers: str, group_id: str, topics: tuple[str, ...], from_beginning: bool,
                   batch_size: int, batch_timeout: timedelta, max_messages: int | None, once: bool,
                   session_timeout: timedelta, consumer_options: tuple[str, ...], as_json: bool, verbose: bool) -> None:
    """Feed visit statuses from Kafka back into the visit stats.

    Messages are journal visit statuses, each either a JSON object (origin,
    visit, type, status, date, snapshot in hex) or the Software Heritage
    archive's msgpack. Offsets are committed once the store has the batch
    (at least once; replays change nothing). A bad message is logged with its
    topic, partition, offset and the field at fault, counted and skipped. If
    the store fails, the batch is retried with backoff and nothing is
    committed. The client is a member of its consumer group: run as many as
    you like with one group id and they share the partitions (one that stops
    hands its own over at once, one that dies after --session-timeout). With
    --once, a client reads the partitions the group gives it to their end. The
    feedback knobs come from the settings (ostinato.toml).

    Partitions without a committed offset are named in a warning (and counted in
    partitions_without_offset). If a member of another assignment protocol (another
    version or program) holds the group id, the brokers refuse this client: it waits
    one --session-timeout for that member to leave, then exits with status 2.

    Stops cleanly on Ctrl-C or SIGTERM.
    """
    extras.require("kafka", "ostinato journal-client")
    from ..integrations.kafka.journal_client import GroupProtocolConflict, JournalClient

    _setup_logging(verbose)
    consumer_config = key_values(consumer_options, "consumer_option", "KEY=VALUE (a librdkafka setting)")
    try:
        policy = app.settings.feedback_policy().validated()
    except ValidationError as exc:
        raise readable(exc) from None
    brokers = brokers or app.settings.journal_brokers
    if not brokers:
        raise ValidationError("brokers", "Kafka bootstrap servers HOST:PORT[,…] (--brokers, or the journal_brokers "
                              "setting)", None)
    client = JournalClient(app.store(), policy, app.clock, brokers=brokers, group_id=group_id or app.settings.journal_group_id,
                           topics=topics or app.settings.journal_topics, batch_size=batch_size, batch_timeout=batch_timeout.total_seconds(),
                           from_beginning=from_beginning, consumer_config=consumer_config,
                           session_timeout=session_timeout.total_seconds())
    stop = threading.Event()

    started = time.monotonic()
    try:
        with stop_on_signals(stop, "storing the batch in hand, then stopping"), client:
            client.run_forever(stop, max_messages=max_messages, until_caught_up=once)
            left_behind = client.waiting_for_store
    except GroupProtocolConflict as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    counters = client.counters
    if as_json:
        echo_json({**counters.as_dict(), "seconds": round(time.monotonic() - started, 3), "uncommitted_batch": left_behind})
        return
    click.echo(f"stopped: {plural(counters.consumed, 'message')} read, {plural(counters.recorded, 'status', 'statuses')} "
               f"recorded ({counters.changed} changed the visit stats), {counters.rejected} rejected, "
               f"{plural(counters.batches, 'batch', 'batches')} in {time.monotonic() - started:.1f}s")
    dropped = sum(counters.fields_dropped.values())
    if dropped:
        click.echo(f"{plural(dropped, 'bad change field')} dropped from statuses that were kept: "
                   + "; ".join(f"{count} × {kind}" for kind, count in sorted(counters.fields_dropped.items())))
    if left_behind:
        click.echo("the store did not take the last batch: its offsets are not committed, it is read again on the next start",
                   err=True)
