"""The ``ostinato`` command group, its shared context and its error handling.

Every command module adds itself to :data:`cli`; commands reach the store and
the clock through :class:`AppContext`, so tests can hand in their own.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from .. import extras
from ..config import Settings, local_actor
from ..domain.clock import Clock, SystemClock
from ..domain.durations import format_duration
from ..domain.errors import ConflictError, NotFoundError, OstinatoError, SchemaError, ValidationError
from ..store import Store, open_store, shown_url

if TYPE_CHECKING:
    from ..store.read_routing import ReadRoutingStore


@dataclass
class AppContext:
    settings: Settings
    clock: Clock = field(default_factory=SystemClock)
    _store: Store | None = None
    _read_store: ReadRoutingStore | None = None

    def store(self, *, check_schema: bool = True, create: bool = False) -> Store:
        """The store of ``settings.db``, or the API's at ``settings.url`` (which wins), opened on first use.

        Only the commands that make a schema (``db init``, ``db upgrade``, ``run``, ``example install``)
        pass ``create``: for every other command a missing SQLite file is an error, never a new file.
        """
        if self._store is None:
            self._store = open_settings_store(self.settings, create=create)
        if check_schema:
            self._store.check_schema()
        return self._store

    @property
    def actor(self) -> str:
        """Who acts, for the audit trail: the OS user and host (through ``--url``, the API's token name
        replaces it)."""
        return local_actor()

    def read_store(self) -> Store:
        """For what only reads: with the ``read_db`` setting, the store whose reads go to that standby (the
        primary's while the standby lags or is down; writes always to the primary); else :meth:`store`."""
        primary = self.store()
        if not self.settings.read_db or self.settings.url:
            return primary
        if self._read_store is None:
            from ..store.postgresql import PostgresStore
            from ..store.read_routing import ReadRoutingStore

            standby = open_store(self.settings.read_db, create=False)
            if not isinstance(primary, PostgresStore) or not isinstance(standby, PostgresStore):
                standby.close()
                raise ValidationError("read_db", "a PostgreSQL standby of a PostgreSQL db",
                                      f"{shown_url(self.settings.read_db)} for {shown_url(self.settings.db)}")
            self._read_store = ReadRoutingStore(primary, standby, self.settings.read_max_lag)
        return self._read_store

    def close(self) -> None:
        if self._read_store is not None:
            self._read_store.standby.close()
            self._read_store = None
        if self._store is not None:
            self._store.close()
            self._store = None


def open_settings_store(settings: Settings, *, create: bool = False) -> Store:
    """The API's store at ``settings.url`` (with ``settings.token``) when set, else the database ``settings.db``
    (a missing SQLite file created only with ``create``)."""
    if settings.url:
        extras.require("remote", "--url (working through the API)")
        from ..remote import RemoteStore

        return RemoteStore(settings.url, settings.token)  # type: ignore[abstract]  # its verbs are set on import
    return open_store(settings.db, create=create)


def store_shown(settings: Settings) -> str:
    """The store the settings name, as a message may show it: never a password."""
    return f"the API at {settings.url}" if settings.url else shown_url(settings.db)


pass_app = click.make_pass_decorator(AppContext)


#: what a command stopped by Ctrl-C says: each write is one transaction, rolled back if not done
INTERRUPTED = ("interrupted (Ctrl-C): the transaction in progress, if any, was rolled back, nothing of it written; "
               "what was committed before it stays")


#: fields of the domain whose option's parameter has another name
FIELD_OPTIONS: dict[str, str] = {}


def option_names(command: click.Command) -> dict[str, str]:
    """Each parameter's name to what the user typed: an option's longest flag, an argument's metavar."""
    names = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name:
            names[param.name] = max(param.opts, key=len)
        elif isinstance(param, click.Argument) and param.name:
            names[param.name] = param.human_readable_name.rstrip(".")
    return names


def readable(exc: ValidationError, flags: Mapping[str, str] | None = None) -> ValidationError:
    """The same error with a duration shown as people write it (``2h``) rather than its repr, and the
    field named by the option the user typed (``flags``: a field's name to its option, ``scheduling_period``
    to ``--every``; an item's suffix kept: ``blackout_periods[1]`` is ``--blackout[1]``)."""
    field = exc.field
    if flags:
        name, bracket, rest = field.partition("[")
        head, dot, tail = name.partition(".")
        if head in flags:
            field = flags[head] + dot + tail + bracket + rest
    got = format_duration(exc.got) if isinstance(exc.got, timedelta) else exc.got
    if field == exc.field and got is exc.got:
        return exc
    return ValidationError(field, exc.expected, got, record=exc.record)


class OstinatoCommand(click.Command):
    """A command whose bad input is told by the option the user typed (``--interval``, not the domain's
    ``current_interval``); an error about a record of a file keeps the record's own field names."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except ValidationError as exc:  # an option's type refused its value
            raise self._named(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as exc:
            raise self._named(exc) from None

    def _named(self, exc: ValidationError) -> ValidationError:
        if exc.record is not None:
            return exc
        head = exc.field.partition("[")[0].partition(".")[0]
        names = option_names(self)
        # the parameter of that name, else the one given as a repeated option (statuses), else by its alias
        plurals = (f"{head}s", f"{head}es", f"{head[:-1]}ies")
        option = (names.get(head) or next((names[p] for p in plurals if p in names), None)
                  or names.get(FIELD_OPTIONS.get(head, "")))
        return readable(exc, {head: option}) if option else exc


class OstinatoGroup(click.Group):
    """Turns Ostinato's errors into one-line messages and exit statuses.

    Bad input (ValidationError) exits 2 like click's own usage errors; a missing
    object or a conflict exits 1; a schema problem exits 3; Ctrl-C exits 130, as a shell's
    interrupted command does.
    """

    command_class = OstinatoCommand

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as exc:
            _fail(f"error: {exc}", 2)
        except SchemaError as exc:
            _fail(f"error: {exc}", 3)
        except (NotFoundError, ConflictError) as exc:
            _fail(f"error: {exc}", 1)
        except OstinatoError as exc:
            _fail(f"error: {exc}", 1)
        except KeyboardInterrupt:  # Ctrl-C in a command that is no service (a service stops on it, with 0)
            _fail(INTERRUPTED, 130)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event, message: str = "stopping") -> Iterator[None]:
    """Set ``stop`` on SIGINT or SIGTERM while the block runs (in the main thread only).

    The handler never touches ``stop``'s lock itself: a signal can arrive while
    the main thread holds it (inside ``stop.wait()``), and a second Ctrl-C would
    otherwise deadlock; a short thread sets the event instead.
    """
    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            return
        logging.getLogger("ostinato").info("%s received: %s", signal.Signals(signum).name, message)
        threading.Thread(target=stop.set, name="ostinato-stop", daemon=True).start()

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reached from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def refuse_open_beyond_loopback(host: str, insecure: bool, *, flag: str, serves: str) -> None:
    """A server that ``serves`` something without a token (because of ``flag``) listens on a loopback
    address only, unless ``--insecure`` says that every address reaching ``host`` may have it."""
    if not insecure and not is_loopback(host):
        raise ValidationError("--host", f"a loopback address (127.0.0.1, ::1 or localhost) with {flag}, which serves "
                              f"{serves} without a token; or --insecure, to serve it to every address that reaches "
                              "this one", host)


def serve_http(make_application: Callable[[], Any], *, host: str, port: int, log_level: str,
               started: str | None = None, proxy_headers: bool = True) -> None:
    """Serve the ASGI application ``make_application()`` returns with uvicorn until SIGINT or SIGTERM.

    The port is checked first, then the application made (which is where a command opens its store
    and checks the schema, before listening). Once listening, the line ``started`` is printed (with
    ``{url}`` replaced by the address served). A stop asked for ends with status 0, like the other
    commands; a server that could not listen exits with status 1 (uvicorn logged why). Without
    ``proxy_headers``, uvicorn leaves the forwarding headers alone (it believes 127.0.0.1's by
    default): the application reads them itself, from the proxies it trusts.
    """
    import uvicorn

    if port > 65535:
        raise ValidationError("port", "a TCP port from 1 to 65535", port)
    shown_host = f"[{host}]" if ":" in host and not host.startswith("[") else host

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and started is not None:
                click.echo(started.replace("{url}", f"http://{shown_host}:{port}/"), err=True)

    server = Server(uvicorn.Config(make_application(), host=host, port=port, log_level=log_level,
                                   proxy_headers=proxy_headers))
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again for the handler
    # it found: with these no-op handlers a stop asked for ends with status 0
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not server.started:
        raise SystemExit(1)


def quiet_chatty_loggers() -> None:
    """A line per HTTP request of the remote store (httpx) or per pool event (psycopg) would drown a
    command's output (a --json listing included) and the services' own log."""
    for chatty in ("psycopg.pool", "httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def _fail(message: str, code: int) -> None:
    click.echo(message, err=True)
    sys.exit(code)


@click.group(cls=OstinatoGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", envvar="OSTINATO_DB", help="Database URL: sqlite:///PATH (default sqlite:///ostinato.db) or postgresql://…")
@click.option("--url", envvar="OSTINATO_URL",
              help="Work through the Ostinato API at this URL (http://HOST:PORT) instead of on the database.")
@click.option("--token", envvar="OSTINATO_TOKEN", help="The API token's secret for --url (better: OSTINATO_TOKEN).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML settings file (default ./ostinato.toml).")
@click.version_option(package_name="ostinato")
@click.pass_context
def cli(ctx: click.Context, db: str | None, url: str | None, token: str | None, config_file: str | None) -> None:
    """Ostinato: a scheduler for recurring work at archive scale."""
    quiet_chatty_loggers()
    if ctx.obj is None:
        settings = Settings.load(config_file).with_values({"db": db, "url": url, "token": token})
        ctx.obj = AppContext(settings)
        ctx.call_on_close(ctx.obj.close)


def command_group(name: str, help_text: str) -> Callable[..., click.Group]:
    """A sub-group of ``ostinato`` with the same error handling."""
    return cli.group(name, cls=OstinatoGroup, help=help_text)
