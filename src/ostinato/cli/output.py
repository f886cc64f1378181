"""Helpers shared by the commands: printing (rich tables, JSON, seed-shaped blocks),
formatting of durations and times, and click parameter types that fail with
Ostinato's own one-line errors.

Parameter types raise :class:`~ostinato.domain.errors.ValidationError` naming the
parameter as the task model names the field (the click parameter's name, e.g.
``min_interval`` or ``next_run``); :class:`~ostinato.cli.app.OstinatoGroup`
turns it into ``error: field: expected …`` and exit status 2.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import click
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..domain.durations import format_duration, parse_duration, parse_time
from ..domain.errors import ValidationError
from ..domain.run_outcomes import outcome_of
from ..domain.status_words import RUN_STATUS_WORDS, task_status_words, with_code
from ..domain.tasks import Task, TaskRun
from .app import AppContext

__all__ = [
    "DomainChoice",
    "DurationType",
    "NumberType",
    "TimeType",
    "WholeNumberType",
    "app_now",
    "console",
    "echo_json",
    "format_duration",
    "format_elapsed",
    "format_interval",
    "format_time",
    "format_when",
    "humanize_delta",
    "key_values",
    "plural",
    "print_rows",
    "print_table",
    "print_task",
]


# -- consoles and printing ------------------------------------------------------
def console(*, stderr: bool = False, width: int | None = None) -> Console:
    """A rich console on the current stdout/stderr (created per call so test runners can swap streams)."""
    return Console(file=sys.stderr if stderr else sys.stdout, highlight=False, soft_wrap=False, width=width)


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON for scripts (times ISO, durations in seconds)."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=_json_default))


def _json_default(value: Any) -> Any:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def print_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]] | None = None, *, title: str | None = None) -> None:
    """Print dicts as a rich table; ``columns`` is ``[(key, header), …]`` (default: the first row's keys).

    Text wraps at word boundaries only: a column of single words (identifiers, URLs, numbers,
    durations) never wraps, and rather than cut a word in the middle, a table that cannot
    fit is printed wider than the terminal.
    """
    if columns is None:
        columns = [(key, key) for key in (rows[0] if rows else {})]
    cells = [[_cell(row.get(key)) for key, _header in columns] for row in rows]
    out = console()
    widths = _column_widths([header for _key, header in columns], cells,
                            [all(" " not in line[i] for line in cells) for i in range(len(columns))],
                            out.width - 3 * len(columns) - 1)
    # every text a Text: what the cells hold is data, and square brackets in it are not rich's markup
    table = Table(title=None if title is None else Text(title), show_lines=False)
    for (_key, header), width in zip(columns, widths, strict=True):
        table.add_column(Text(header), width=width, overflow="fold")
    for line in cells:
        table.add_row(*(Text(cell) for cell in line))
    total = sum(widths) + 3 * len(columns) + 1
    (out if total <= out.width else console(width=total)).print(table)


def _column_widths(headers: Sequence[str], cells: Sequence[Sequence[str]], whole: Sequence[bool], room: int) -> list[int]:
    """Each column's width: its widest cell if the table fits in ``room``; else columns of text
    narrow, widest first, down to their longest word (a column marked ``whole``, of single words,
    keeps its widest cell)."""
    widths, floors = [], []
    for index, header in enumerate(headers):
        texts = [line[index] for line in cells]
        widest = max([cell_len(text) for text in texts] + [cell_len(header)])
        words = texts if whole[index] else [word for text in texts for word in text.split()]
        widths.append(max(widest, 1))
        floors.append(max([cell_len(word) for word in words + header.split()] or [1]))
    while sum(widths) > room:
        shrinkable = [i for i, width in enumerate(widths) if width > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def print_rows(rows: Sequence[Mapping[str, Any]], as_json: bool, columns: Sequence[tuple[str, str]] | None = None, *, title: str | None = None) -> None:
    """A list of dicts as JSON (``--json``) or as a rich table."""
    if as_json:
        echo_json(list(rows))
    else:
        print_table(rows, columns, title=title)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return str(value)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 task``, ``2 tasks``, ``0 tasks``; ``many`` for irregular plurals (``status``, ``statuses``)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


# -- durations and times --------------------------------------------------------
def format_interval(value: timedelta | None, missing: str = "none") -> str:
    """A configured duration as the options take it (``64d``, ``12h``, ``1d6h``); ``missing`` when unset."""
    return missing if value is None else format_duration(value)


def format_elapsed(value: timedelta | None) -> str:
    """A measured duration (a run's, an average), rounded to what a person reads: ``4.7ms``,
    ``12.346s``, ``1h2m3s``; still in the form the options take."""
    if value is None:
        return ""
    size = abs(value)
    if size < timedelta(seconds=1):
        resolution = timedelta(microseconds=100)
    elif size < timedelta(minutes=1):
        resolution = timedelta(milliseconds=1)
    else:
        resolution = timedelta(seconds=1)
    return format_duration(value, resolution=resolution)


def format_time(value: datetime | None) -> str:
    """ISO time to the second, as the original scheduler prints it (``2019-06-25 10:35:10+00:00``)."""
    return "" if value is None else value.isoformat(sep=" ", timespec="seconds")


#: how :func:`humanize_delta` words a span of at least 45 seconds, unit by unit: "a minute" below
#: 90 seconds, else "N minutes" (N at least 2) below 45 minutes, else on to the next unit
_SPAN_WORDS = (
    # (the unit once, the units, the unit's seconds, "once" below, "N units" below)
    ("a minute", "minutes", 60, 90, 45 * 60),
    ("an hour", "hours", 3600, 90 * 60, 22 * 3600),
    ("a day", "days", 86400, 36 * 3600, 30 * 86400),
    ("a month", "months", 30.5 * 86400, 45 * 86400, 345 * 86400),
    ("a year", "years", 365.25 * 86400, 548 * 86400, math.inf),
)


def humanize_delta(value: datetime, now: datetime) -> str:
    """``in 4 hours``, ``15 days ago``, ``in a month``, ``in 10 s``, ``now``: ``value`` relative to ``now``
    (under 45 seconds, the seconds themselves: a run due in 10 s is not one that is due)."""
    seconds = (value - now).total_seconds()
    size = abs(seconds)
    if round(size) == 0:
        return "now"
    text = f"{round(size)} s"
    if size >= 45:
        for once, units, unit_seconds, once_below, units_below in _SPAN_WORDS:
            if size < once_below:
                text = once
                break
            if size < units_below:
                text = f"{max(round(size / unit_seconds), 2)} {units}"
                break
    return f"in {text}" if seconds > 0 else f"{text} ago"


def format_when(value: datetime | None, now: datetime) -> str:
    """``15 days ago (2019-06-25 10:35:10+00:00)``."""
    if value is None:
        return ""
    return f"{humanize_delta(value, now)} ({format_time(value)})"


# -- domain objects as text ----------------------------------------------------
def outcome_lines(metadata: Mapping[str, Any], indent: str) -> list[str]:
    """A run's outcome under it: its error, its traceback's lines (``domain.run_outcomes``: the innermost
    frames, or the lines Python printed), and what the job returned (its result's metadata), one line
    each; nothing for a run with none of these."""
    outcome = outcome_of(metadata)
    lines = []
    if outcome.error:
        lines.append(f"{indent}error: {outcome.error}")
    lines.extend(f"{indent}  {line}" for line in outcome.traceback)
    result = outcome.result
    if result:
        lines.append(f"{indent}result: " + ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in result.items()))
    return lines


def short_error(metadata: Mapping[str, Any], width: int = 80) -> str:
    """A run's error on one line of at most ``width`` characters (a table's cell)."""
    error = str(metadata.get("error") or "")
    return error if len(error) <= width else error[:width - 1] + "…"


def print_task(task: Task, now: datetime, *, show_status: bool = True, runs: Iterable[TaskRun] | None = None) -> None:
    """One task in the original scheduler's shape (``Task 9052257`` / ``Next run: …`` / … / ``Keyword args:``),
    its status in words with its code (``Status: pending (next_run_not_scheduled)``; ``failed (disabled)`` for a
    task its runs disabled, when ``runs`` are given, oldest first)."""
    runs = None if runs is None else list(runs)
    lines = [
        f"Task {task.id}",
        f"  Next run: {format_when(task.next_run, now)}",
        f"  Interval: {format_interval(task.current_interval)}",
        f"  Type: {task.type}",
        f"  Policy: {task.policy.value}",
    ]
    if show_status:
        last = runs[-1].status if runs else None  # runs oldest first: the last is the newest
        lines.append(f"  Status: {with_code(task_status_words(task, last), task.status.value)}")
    lines.append(f"  Priority: {task.priority.value if task.priority else ''}".rstrip())
    lines.append("  Args:")
    lines.extend(f"    {arg!r}" for arg in task.arguments.args)
    lines.append("  Keyword args:")
    lines.extend(f"    {key}: {value!r}" for key, value in task.arguments.kwargs.items())
    if runs is not None:
        lines.append("  Runs:" if runs else "  Runs: none")
        for run in runs:
            took = format_elapsed(run.ended - run.started) if run.ended and run.started else ""
            lines.append(
                f"    {run.id}: {with_code(RUN_STATUS_WORDS[run.status], run.status.value)}"
                + (f", scheduled {format_when(run.scheduled, now)}" if run.scheduled else "")
                + (f", ended {format_when(run.ended, now)}" if run.ended else "")
                + (f", took {took}" if took else "")
                + (f", backend {run.backend_id}" if run.backend_id else "")
            )
            lines.extend(outcome_lines(run.metadata or {}, "      "))
    click.echo("\n".join(lines))


# -- parameter types ------------------------------------------------------------
def _field(param: click.Parameter | None, default: str) -> str:
    return param.name if param is not None and param.name else default


def app_now(ctx: click.Context | None) -> datetime:
    """``app.clock.now()`` of the running command (the wall clock outside a command)."""
    app = ctx.find_object(AppContext) if ctx is not None else None
    if app is None:
        from ..domain.clock import SystemClock

        return SystemClock().now()
    return app.clock.now()


def key_values(values: Iterable[str], field: str, expected: str) -> dict[str, str]:
    """A repeated ``KEY=VALUE`` option as a dict, keys and values stripped (a key given again wins);
    an item with no ``=`` or no key is a ValidationError naming ``field``, ``expected`` what it wants."""
    found: dict[str, str] = {}
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ValidationError(field, expected, text)
        found[key.strip()] = value.strip()
    return found


class DurationType(click.ParamType):
    """``90s``, ``15m``, ``12h``, ``64d``, ``1d12h``, ``P1DT2H`` or seconds, as a positive timedelta."""

    name = "duration"

    def __init__(self, field: str | None = None, *, allow_zero: bool = False):
        self.field = field
        self.allow_zero = allow_zero

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> timedelta:
        if isinstance(value, timedelta):
            return value
        return parse_duration(value, self.field or _field(param, "duration"), allow_zero=self.allow_zero)


class TimeType(click.ParamType):
    """``now``, ``+2h``, ``-1d`` or an ISO 8601 time with a zone, as an aware UTC datetime."""

    name = "time"

    def __init__(self, field: str | None = None):
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        return parse_time(value, app_now(ctx), self.field or _field(param, "time"))


class WholeNumberType(click.ParamType):
    """An integer of at least ``minimum`` (and at most ``maximum``, when given)."""

    name = "integer"

    def __init__(self, minimum: int = 0, field: str | None = None, maximum: int | None = None):
        self.minimum = minimum
        self.field = field
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        field = self.field or _field(param, "number")
        expected = f"a whole number of at least {self.minimum}" if self.minimum else "a whole number of 0 or more"
        if self.maximum is not None:
            expected = f"a whole number from {self.minimum} to {self.maximum}"
        if isinstance(value, bool):
            raise ValidationError(field, expected, value)
        try:
            number = value if isinstance(value, int) else int(str(value).strip(), 10)
        except ValueError:
            raise ValidationError(field, expected, value) from None
        if number < self.minimum or (self.maximum is not None and number > self.maximum):
            raise ValidationError(field, expected, value)
        return number


class NumberType(click.ParamType):
    """A finite real number."""

    name = "number"

    def __init__(self, field: str | None = None):
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        field = self.field or _field(param, "number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValidationError(field, "a number", value) from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValidationError(field, "a finite number", value)
        return number


class DomainChoice(click.ParamType):
    """One of a domain enum's values, parsed by the domain's own parser (``parse_priority`` …)."""

    def __init__(self, parser: Callable[[Any], Any], choices: Sequence[str], name: str = "choice"):
        self.parser = parser
        self.choices = list(choices)
        self.name = name

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:  # click ≥ 8.2 passes ctx
        return "[" + "|".join(self.choices) + "]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return self.parser(value)
