"""``ostinato lister``, ``origin`` and ``visit-status``: listers, the origins they list,
and the journal's visit statuses fed back into the visit stats (see docs/design/origins.md).

Files are JSON lines (one record per line, blank lines skipped; ``-`` reads
stdin). Every line is validated before anything is written, because each store
call is its own transaction: bad lines fail the whole file with
``error: line N: field: expected …`` for each of the first 20 (exit status 2)
and the store is left as it was.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import IO, Any, TypeVar

import click
from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from ..domain.errors import NotFoundError, ValidationError
from ..domain.origins import Lister, StoredListedOrigin, parse_listed_origin
from ..domain.visit_changes import VisitChanges
from ..domain.visit_policies import visit_type_of_task_type
from ..domain.visits import VisitStats, parse_visit_status
from ..store import Store
from .app import AppContext, command_group, pass_app, readable
from .output import (
    DurationType,
    NumberType,
    WholeNumberType,
    console,
    echo_json,
    format_time,
    format_when,
    plural,
    print_rows,
)

T = TypeVar("T")

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
file_argument = click.argument("file", metavar="FILE|-", type=click.File("rb"))
#: listed origins of one URL: one per lister and visit type, so a handful
_SHOW_LIMIT = 10_000
_PROGRESS_STEP = 1000


# -- lister ---------------------------------------------------------------------
@command_group("lister", "Declare, list and delete listers.")
def lister() -> None:
    pass


@lister.command("add")
@click.argument("name")
@click.argument("instance_name", metavar="INSTANCE_NAME")
@json_option
@pass_app
def lister_add(app: AppContext, name: str, instance_name: str, as_json: bool) -> None:
    """Declare the lister NAME of INSTANCE_NAME (e.g. github github), unless it exists.

    Example: ostinato lister add gitlab gitlab.inria.fr
    """
    name, instance_name = _name(name, "name"), _name(instance_name, "instance_name")
    found, created = get_or_create_lister(app.store(), name, instance_name, app.clock.now())
    if as_json:
        echo_json({**lister_to_dict(found), "created": created})
        return
    click.echo(f"Created lister {found.id}" if created else f"Lister {found.id} already exists")
    now = app.clock.now()
    click.echo("\n".join([
        f"  Name: {found.name}",
        f"  Instance: {found.instance_name}",
        f"  Current state: {json.dumps(found.current_state, ensure_ascii=False)}",
        f"  Last listing finished: {_when(found.last_listing_finished_at, now)}",
    ]))


@lister.command("list")
@json_option
@pass_app
def lister_list(app: AppContext, as_json: bool) -> None:
    """List the listers by name and instance."""
    rows = [lister_to_dict(item) for item in app.read_store().list_listers()]
    columns = [("id", "id"), ("name", "name"), ("instance_name", "instance"), ("last_listing_finished_at", "last listing finished"),
               ("current_state", "current state")]
    print_rows(rows, as_json, columns, title=None if as_json else plural(len(rows), "lister"))


@lister.command("delete")
@click.argument("lister_spec", metavar="LISTER")
@pass_app
def lister_delete(app: AppContext, lister_spec: str) -> None:
    """Delete LISTER (NAME or NAME/INSTANCE) if it lists no origin: one declared by mistake.

    A lister that lists origins is kept, with their history. Example: ostinato lister delete githbu/github.com
    """
    store = app.store()
    found, _ = resolve_lister(store, lister_spec)
    store.delete_lister(found.id)
    click.echo(f"Deleted lister {found.id} ({found.name}/{found.instance_name})")


def lister_to_dict(item: Lister) -> dict[str, Any]:
    return {"id": item.id, "name": item.name, "instance_name": item.instance_name, "current_state": dict(item.current_state),
            "last_listing_finished_at": item.last_listing_finished_at, "updated": item.updated}


def get_or_create_lister(store: Store, name: str, instance_name: str, now: datetime) -> tuple[Lister, bool]:
    """The lister, and whether this call created it."""
    for item in store.list_listers():
        if item.name == name and item.instance_name == instance_name:
            return item, False
    return store.get_or_create_lister(name, instance_name, now), True


def resolve_lister(store: Store, spec: str, instance_name: str | None = None, *, field: str = "lister",
                   create_at: datetime | None = None) -> tuple[Lister, bool]:
    """The lister a person means by ``spec``, and whether this call created it.

    ``NAME/INSTANCE`` (or ``NAME`` with ``instance_name``) is that lister; with
    ``create_at`` it is created when new. A bare ``NAME`` is the one lister of that
    name: several are refused, listing them as NAME/INSTANCE; none is refused,
    listing the known listers (a new lister is declared only with its instance,
    so that a typo creates nothing).
    """
    name, slash, instance = spec.partition("/")
    if instance_name is not None:
        if slash:
            raise ValidationError("instance", f"either --lister NAME/INSTANCE or --instance, not both (--lister {spec})",
                                  instance_name)
        slash, instance = "/", instance_name
    name = _name(name, field)
    listers = store.list_listers()
    known = ", ".join(sorted(f"{item.name}/{item.instance_name}" for item in listers)) or "none yet"
    if slash:
        instance = _name(instance, "instance")
        for item in listers:
            if item.name == name and item.instance_name == instance:
                return item, False
        if create_at is not None:
            return store.get_or_create_lister(name, instance, create_at), True
        raise ValidationError(field, f"a known lister, NAME or NAME/INSTANCE (known: {known})", spec)
    same = [item for item in listers if item.name == name]
    if len(same) == 1:
        return same[0], False
    if same:
        candidates = ", ".join(sorted(f"{item.name}/{item.instance_name}" for item in same))
        raise ValidationError(field, f"one lister: {name} is the name of several, say which as NAME/INSTANCE "
                              f"({candidates})", spec)
    how = "; a new lister is declared with its instance: NAME/INSTANCE or --instance" if create_at is not None else ""
    raise ValidationError(field, f"a known lister, NAME or NAME/INSTANCE (known: {known}){how}", spec)


def _name(value: str, field: str) -> str:
    if not value.strip():
        raise ValidationError(field, "a non-empty name", value)
    return value


# -- origin ---------------------------------------------------------------------
@command_group("origin", "Record the origins a lister saw, and show an origin.")
def origin() -> None:
    pass


@origin.command("record")
@file_argument
@click.option("--lister", "lister_name", required=True, metavar="NAME[/INSTANCE]",
              help="Lister that saw the origins: NAME alone is the one lister of that name; NAME/INSTANCE is "
                   "created if new.")
@click.option("--instance", "instance_name", metavar="INSTANCE", help="Its instance (same as --lister NAME/INSTANCE).")
@click.option("--batch-size", type=WholeNumberType(1), default=10_000, show_default=True, help="Origins written per transaction.")
@json_option
@pass_app
def origin_record(app: AppContext, file: IO[bytes], lister_name: str, instance_name: str | None, batch_size: int, as_json: bool) -> None:
    """Record listed origins from FILE (JSON lines, - for stdin), one origin per line.

    Fields: url, visit_type (required), extra_loader_arguments, last_update,
    enabled, is_fork, forked_from_url. Re-listed origins get a new last_seen and
    are enabled again. The whole file is checked before anything is written.

    Example line: {"url": "https://github.com/turtl/mobile", "visit_type": "git", "last_update": "2026-01-02T03:04:05Z"}
    """
    store = app.store()
    with _progress() as progress:
        known = loader_visit_types(store)
        origins = read_json_lines(file, lambda record: _with_loader(parse_listed_origin(record), "visit_type", known),
                                  _advancer(progress, "reading"))
        # the last line of a (url, visit_type) wins, as within one store batch
        unique = list({(o.url, o.visit_type): o for o in origins}.values())
        found, created = resolve_lister(store, lister_name, instance_name, create_at=app.clock.now())
        now = app.clock.now()  # one last_seen for the whole file
        writing = progress.add_task("recording", total=len(unique))
        recorded = 0
        for batch in batches(unique, batch_size):
            recorded += store.record_listed_origins(found.id, batch, now)
            progress.advance(writing, len(batch))
    merged = len(origins) - len(unique)
    if as_json:
        echo_json({"lister": lister_to_dict(found), "lister_created": created, "lines": len(origins), "recorded": recorded,
                   "merged": merged})
        return
    if created:
        click.echo(f"Created lister {found.name}/{found.instance_name} (id {found.id})")
    note = f" ({plural(merged, 'repeated line')} merged, the last one counted)" if merged else ""
    click.echo(f"Recorded {plural(recorded, 'origin')} for lister {found.name}/{found.instance_name} (id {found.id}){note}")


@origin.command("show")
@click.argument("url")
@json_option
@pass_app
def origin_show(app: AppContext, url: str, as_json: bool) -> None:
    """Show every listing of URL (all listers and visit types) and its visit stats."""
    store = app.read_store()
    listed = store.get_listed_origins(url=url, limit=_SHOW_LIMIT)
    if not listed:
        raise NotFoundError("origin", url)
    listers = {item.id: item for item in store.list_listers()}
    visit_types = sorted({item.origin.visit_type for item in listed})
    stats = {s.visit_type: s for s in store.get_visit_stats([(url, t) for t in visit_types])}
    seen = {c.visit_type: c for c in store.get_visit_changes([(url, t) for t in visit_types])}
    entries = [
        {"visit_type": t, "listed": [_listed_to_dict(item, listers) for item in listed if item.origin.visit_type == t],
         "stats": _stats_to_dict(stats[t]) if t in stats else None,
         "changes_seen": _changes_to_dict(seen[t]) if t in seen else None}
        for t in visit_types
    ]
    if as_json:
        echo_json({"url": url, "visit_types": entries})
        return
    _print_origin(url, entries, app.clock.now())


def _listed_to_dict(item: StoredListedOrigin, listers: dict[int, Lister]) -> dict[str, Any]:
    found, o = listers.get(item.lister_id), item.origin
    return {
        "lister_id": item.lister_id,
        "lister": found.name if found else None,
        "instance_name": found.instance_name if found else None,
        "enabled": o.enabled,
        "first_seen": item.first_seen,
        "last_seen": item.last_seen,
        "last_update": o.last_update,
        "is_fork": o.is_fork,
        "forked_from_url": o.forked_from_url,
        "extra_loader_arguments": dict(o.extra_loader_arguments),
    }


def _stats_to_dict(stats: VisitStats) -> dict[str, Any]:
    return {
        "last_visit": stats.last_visit,
        "last_visit_status": stats.last_visit_status.value if stats.last_visit_status else None,
        "last_successful": stats.last_successful,
        "last_snapshot": stats.last_snapshot.hex() if stats.last_snapshot is not None else None,
        "last_eventful": stats.last_eventful,
        "last_uneventful": stats.last_uneventful,
        "failure_count": stats.failure_count,
        "last_scheduled": stats.last_scheduled,
        "next_visit_target": stats.next_visit_target,
        "last_status_date": stats.last_status_date,
        "successful_visits": stats.successful_visits,
        "cooldown_until": stats.cooldown_until,
    }


def _changes_to_dict(found: VisitChanges) -> dict[str, Any]:
    return {"status_date": found.status_date, "newest_change_at": found.newest_change_at,
            "change_times": None if found.change_times is None else list(found.change_times)}


def _changes_lines(seen: dict[str, Any] | None, now: datetime) -> list[str]:
    """What the last successful visit that said so saw of the changes: the newest, how many times, their span."""
    if seen is None:
        return []
    times = seen["change_times"]
    found = "" if times is None else f"; {plural(len(times), 'change time')} found" + (
        f", {format_time(times[0])} to {format_time(times[-1])}" if times else "")
    return [f"      Changes seen (visit of {format_time(seen['status_date'])}): "
            f"newest {_when(seen['newest_change_at'], now, 'unknown')}{found}"]


def _print_origin(url: str, entries: list[dict[str, Any]], now: datetime) -> None:
    lines = [f"Origin {url}"]
    for entry in entries:
        lines.append(f"  Visit type {entry['visit_type']}")
        for item in entry["listed"]:
            who = f"{item['lister']}/{item['instance_name']}" if item["lister"] else "?"
            lines += [
                f"    Listed by {who} (lister {item['lister_id']}): {'enabled' if item['enabled'] else 'disabled'}",
                f"      First seen: {_when(item['first_seen'], now)}",
                f"      Last seen: {_when(item['last_seen'], now)}",
                f"      Last update: {_when(item['last_update'], now, 'unknown')}",
                f"      Fork: {_fork(item['is_fork'], item['forked_from_url'])}",
            ]
            if item["extra_loader_arguments"]:
                lines.append(f"      Extra loader arguments: {json.dumps(item['extra_loader_arguments'], ensure_ascii=False)}")
        stats = entry["stats"]
        if stats is not None and stats["last_status_date"] is None:
            lines += [f"    Last scheduled: {_when(stats['last_scheduled'], now)}",
                      f"    Not grabbed before: {_when(stats['cooldown_until'], now, 'free now')}"]
        if stats is None or stats["last_status_date"] is None:
            lines.append("    Visits: none recorded")
            continue
        # the newest final status says when the last visit was and how it went (last_visit keeps the seed's
        # meaning: a failed visit leaves it as it was, so alone it would read "never" after a failure)
        outcome = f"{stats['last_visit_status']}, " if stats["last_visit_status"] else ""
        lines += [
            "    Visits:",
            f"      Last visit: {outcome}{_when(stats['last_status_date'], now)}",
            f"      Last successful: {_when(stats['last_successful'], now)}",
            f"      Last snapshot: {stats['last_snapshot'] or 'none'}",
            f"      Last eventful: {_when(stats['last_eventful'], now)}",
            f"      Last uneventful: {_when(stats['last_uneventful'], now)}",
            f"      Failures in a row: {stats['failure_count']}",
            f"      Next visit target: {_when(stats['next_visit_target'], now, 'none')}",
            f"      Successful visits: {stats['successful_visits']}",
            f"      Last scheduled: {_when(stats['last_scheduled'], now)}",
            f"      Not grabbed before: {_when(stats['cooldown_until'], now, 'free now')}",
            *_changes_lines(entry["changes_seen"], now),
        ]
    click.echo("\n".join(lines))


def _fork(is_fork: bool | None, forked_from: str | None) -> str:
    if is_fork is None:
        return f"unknown, from {forked_from}" if forked_from else "unknown"
    if not is_fork:
        return "no"
    return f"yes, of {forked_from}" if forked_from else "yes"


def _when(value: datetime | None, now: datetime, missing: str = "never") -> str:
    return missing if value is None else format_when(value, now)


# -- visit-status ---------------------------------------------------------------
@command_group("visit-status", "Feed the journal's visit statuses back into the visit stats.")
def visit_status() -> None:
    pass


@visit_status.command("record")
@file_argument
@click.option("--adjust-factor", type=NumberType(), help="Interval divisor after an eventful visit, multiplier after an uneventful one (default: the setting, 2).")
@click.option("--minimum-interval", type=DurationType(), help="Shortest interval between successful visits (default: the setting, 1d).")
@click.option("--failure-delay", type=DurationType(), help="Next visit target after a failed visit (default: the setting, 1d).")
@click.option("--max-failures", type=WholeNumberType(1), help="Failures in a row that disable an origin until it is listed again (default: the setting, 3).")
@click.option("--batch-size", type=WholeNumberType(1), default=10_000, show_default=True, help="Statuses applied per transaction.")
@json_option
@pass_app
def visit_status_record(app: AppContext, file: IO[bytes], adjust_factor: float | None, minimum_interval: timedelta | None,
                        failure_delay: timedelta | None, max_failures: int | None, batch_size: int, as_json: bool) -> None:
    """Apply visit statuses from FILE (JSON lines, - for stdin) to the visit stats.

    One journal message per line: origin, visit, type, status, date, snapshot
    (hex or null), optionally changes (a count), newest_change_at and
    change_times (at most 64 times with a zone). Only final statuses count; replaying a file, duplicates and
    late arrivals change nothing. The whole file is checked before anything is
    written, and applied oldest first. The feedback knobs and the cooldowns
    after a visit come from the settings (ostinato.toml); options override them.

    Example line: {"origin": "https://github.com/turtl/mobile", "visit": 3, "type": "git", "status": "full", "date": "2026-01-02T03:04:05Z", "snapshot": "9b92…"}
    """
    overrides: dict[str, Any] = {"adjust_factor": adjust_factor, "minimum_interval": minimum_interval,
                                 "failure_delay": failure_delay, "max_failures": max_failures}
    try:
        policy = dataclasses.replace(app.settings.feedback_policy(),
                                     **{k: v for k, v in overrides.items() if v is not None}).validated()
    except ValidationError as exc:
        raise readable(exc) from None
    store = app.store()
    with _progress() as progress:
        known = loader_visit_types(store)
        statuses = read_json_lines(file, lambda record: _with_loader(parse_visit_status(record), "type", known),
                                   _advancer(progress, "reading"))
        # oldest first across batches too: the result does not depend on --batch-size
        statuses.sort(key=lambda s: s.date)
        writing = progress.add_task("applying", total=len(statuses))
        changed = 0
        for batch in batches(statuses, batch_size):
            changed += store.record_visit_statuses(batch, policy, now=app.clock.now())
            progress.advance(writing, len(batch))
    ignored = len(statuses) - changed
    if as_json:
        echo_json({"statuses": len(statuses), "changed": changed, "ignored": ignored})
        return
    click.echo(f"Read {plural(len(statuses), 'visit status', 'visit statuses')}: {changed} changed the visit stats, "
               f"{ignored} ignored (not final, duplicate or late)")


# -- visit types ----------------------------------------------------------------
def loader_visit_types(store: Store) -> set[str]:
    """The visit types Ostinato can load: those with a task type ``load-<visit type>``."""
    return {v for v in (visit_type_of_task_type(t.type) for t in store.list_task_types()) if v is not None}


def check_visit_type(visit_type: str, known: set[str], field: str = "visit_type") -> str:
    """A visit type with a loader, or a ValidationError naming ``field`` (a typo would list
    origins nobody ever visits)."""
    if visit_type not in known:
        names = ", ".join(sorted(known)) or "none yet"
        raise ValidationError(field, f"a visit type with a loader, a task type load-<visit type> (known: {names})",
                              visit_type)
    return visit_type


def _with_loader(item: T, field: str, known: set[str]) -> T:
    check_visit_type(getattr(item, field), known, field)  # ``field``: the item's attribute of that name
    return item


# -- reading and batching -------------------------------------------------------
#: bad lines a file's refusal lists, each with its number and field
MAX_BAD_LINES = 20


class BadLines(ValidationError):
    """A file refused for its bad lines: the first :data:`MAX_BAD_LINES` of them (``errors``, each
    located at ``line N``) and how many there were (``total``). It reads as its first error, the
    others on the following lines."""

    def __init__(self, errors: Sequence[ValidationError], total: int):
        self.errors = list(errors)
        self.total = total
        first = self.errors[0]
        super().__init__(first.field, first.expected, first.got, record=first.record)

    def _message(self) -> str:
        if self.total == 1:
            return str(self.errors[0])
        more = self.total - len(self.errors)
        return (f"{self.total} bad lines, nothing was written:"
                + "".join(f"\n  {error}" for error in self.errors)
                + (f"\n  … and {more} more bad line{'s' if more != 1 else ''}" if more else ""))


def read_json_lines(stream: IO[bytes], parse: Callable[[Any], T], on_lines: Callable[[int], None] | None = None, *,
                    decode: Callable[[bytes, bytes], Any] | None = None, first_line: int = 1) -> list[T]:
    """Every non-blank line of ``stream`` decoded as JSON and read by ``parse``.

    Reads the whole file; if any line is bad, raises :class:`BadLines` with the
    first :data:`MAX_BAD_LINES` errors, each located at ``line N`` (1-based); a
    line that is not JSON is an error on the field ``record``. ``decode`` (the
    stripped line and the raw one) reads another line format the same way (a CSV
    row, say), and ``first_line`` numbers the lines of a stream whose first ones
    were read already (a CSV header).
    """
    decode = decode or _decode_line
    parsed: list[T] = []
    errors: list[ValidationError] = []
    total = 0
    number = first_line - 1
    for number, raw in enumerate(stream, first_line):
        if on_lines is not None and number % _PROGRESS_STEP == 0:
            on_lines(_PROGRESS_STEP)
        text = raw.strip()
        if not text:
            continue
        try:
            item = parse(decode(text, raw))
        except ValidationError as exc:
            total += 1
            if len(errors) < MAX_BAD_LINES:
                errors.append(exc.at(f"line {number}"))
            continue
        if not errors:  # once a line is bad, nothing is kept: the rest is only checked
            parsed.append(item)
    if on_lines is not None:
        on_lines(number % _PROGRESS_STEP)
    if errors:
        raise BadLines(errors, total)
    return parsed


def _decode_line(text: bytes, raw: bytes) -> Any:
    """One line as JSON, or a ValidationError on the field ``record``."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise ValidationError("record", "UTF-8 text", _excerpt(raw)) from None
    except ValueError as exc:
        why = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ValidationError("record", f"one JSON object per line ({why})", _excerpt(raw)) from None
    except RecursionError:  # nested deeper than the decoder's stack: no record is
        raise ValidationError("record", "one JSON object per line, not nested thousands deep", _excerpt(raw)) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _excerpt(raw: bytes, size: int = 80) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
    return text if len(text) <= size else text[: size - 1] + "…"


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _progress() -> Progress:
    """Progress on stderr, shown only on a terminal."""
    err = console(stderr=True)
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True, disable=not err.is_terminal)


def _advancer(progress: Progress, description: str) -> Callable[[int], None]:
    task_id = progress.add_task(description, total=None)
    return lambda n: progress.advance(task_id, n)


__all__ = ["BadLines", "MAX_BAD_LINES", "batches", "check_visit_type", "get_or_create_lister", "loader_visit_types", "lister", "lister_to_dict", "origin",
           "read_json_lines", "resolve_lister", "visit_status"]
