"""Settings from a TOML file and ``OSTINATO_*`` environment variables.

Precedence, strongest first: command-line options, environment variables,
the configuration file (``--config``, ``$OSTINATO_CONFIG`` or ``./ostinato.toml``),
the defaults below.

Besides the runner's knobs, the orchestrator's live here (which visit types it
serves, the policy ratios per visit type, the queue threshold), with the
cooldowns of a grab and the feedback knobs; :meth:`Settings.grab_options`
and :meth:`Settings.feedback_policy` hand them to the store's verbs.
"""

from __future__ import annotations

import getpass
import importlib
import json
import logging
import math
import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from .domain.change_rates import RevisitModel
from .domain.durations import BARE_NUMBER_FORMS, parse_duration
from .domain.errors import ValidationError, close_names, did_you_mean
from .domain.lookahead import MAX_K, NODE_TTL, Lookahead, PickRule
from .domain.orchestration import default_ratios, validate_ratios
from .domain.schedules import ScheduleTiming
from .domain.visit_policies import POLICY_NAMES, GrabOptions
from .domain.visits import FeedbackPolicy

log = logging.getLogger(__name__)

DEFAULT_DB = "sqlite:///ostinato.db"
EXECUTORS = ("embedded", "celery")
#: the OSTINATO_ variables read besides the settings' own (``OSTINATO_<SETTING>``): an OSTINATO_ variable
#: that is neither is warned about with the closest names, as a misspelt setting would be ignored otherwise
OTHER_VARIABLES = (
    "OSTINATO_CONFIG",              # the settings file
    "OSTINATO_API_OPEN_METRICS",    # ostinato api serve --open-metrics
    # the tests', the benchmarks' and the swh migration guide's own
    "OSTINATO_TEST_PG_DSN", "OSTINATO_PG_BINDIR", "OSTINATO_RABBITMQ_SERVER", "OSTINATO_TANSU_BIN",
    "OSTINATO_SWH_PEER_VENV", "OSTINATO_SCREENSHOTS", "OSTINATO_FUZZ_EXAMPLES", "OSTINATO_CALENDAR_EXAMPLES",
    "OSTINATO_CLI", "OSTINATO_SETTINGS", "OSTINATO_SWH_URL", "OSTINATO_SWH_TOKEN",
    "OSTINATO_SWH_RPC_HOST", "OSTINATO_SWH_RPC_PORT", "OSTINATO_SWH_RPC_URL",
)


@dataclass(frozen=True)
class Settings:
    #: database URL (``sqlite:///…`` or ``postgresql://…``); PostgreSQL waits 5 s for a server that does not
    #: answer, unless the URL's ``connect_timeout`` or libpq's ``PGCONNECT_TIMEOUT`` says otherwise
    db: str = DEFAULT_DB
    #: a PostgreSQL streaming standby of ``db`` for what only reads (the API's GETs, the dashboard, ``/metrics``,
    #: ``schedule condition``, ``origin show``, the lists); writes, grabs and the services stay on ``db``
    read_db: str = ""
    #: reads go back to ``db`` while the standby is further behind than this
    read_max_lag: timedelta = timedelta(seconds=10)
    #: the base URL of an Ostinato API (``http://host:8000``) to work through instead of the database
    url: str = ""
    #: the API token's secret sent to ``url`` (``ostinato token add NAME --scope admin`` on the server)
    token: str = field(default="", repr=False)
    #: name of this machine for executors and schedulers
    node: str = field(default_factory=lambda: os.uname().nodename)
    #: embedded executor: number of worker threads
    workers: int = 4
    #: runner: seconds between passes when nothing is ready
    poll_interval: timedelta = timedelta(seconds=1)
    #: runner: most tasks grabbed per task type and pass
    batch_size: int = 1000
    #: a run with no report for this long is marked lost and counted as a failure
    lost_run_timeout: timedelta = timedelta(hours=1)
    #: modules imported at start-up so that their @task callables register
    imports: tuple[str, ...] = ()
    #: orchestrator: visit types served (default: every task type named load-*)
    visit_types: tuple[str, ...] = ()
    #: orchestrator: visit type -> {policy: ratio}, merged over the orchestrator's default table
    policy_ratios: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: orchestrator: fill a queue only when its free room is at least this share of max_queue_length (0: always)
    orchestrator_threshold: float = 0.1
    #: a grabbed origin whose visit never reports back may be grabbed again after this
    in_flight_timeout: timedelta = timedelta(days=1)
    #: no origin is grabbed again within this of a visit (or of the grab that asked for it)
    absolute_cooldown: timedelta = timedelta(hours=12)
    #: no origin is grabbed again within this of a failed visit
    failed_cooldown: timedelta = timedelta(days=1)
    #: no origin is grabbed again within this of a visit that found nothing
    not_found_cooldown: timedelta = timedelta(days=7)
    #: feedback: interval divisor after an eventful visit, multiplier after an uneventful one
    adjust_factor: float = 2.0
    #: feedback: shortest interval between successful visits
    minimum_interval: timedelta = timedelta(days=1)
    #: feedback: failures in a row that disable an origin until it is listed again
    max_failures: int = 3
    #: feedback: next visit target after a failed visit
    failure_delay: timedelta = timedelta(days=1)
    #: schedules: a running schedule's owner pings this often
    schedule_ping_interval: timedelta = timedelta(seconds=30)
    #: schedules: no ping for this long and another scheduler marks the schedule for stealing
    schedule_ping_timeout: timedelta = timedelta(seconds=30)
    #: schedules: a steal mark still there after this long and the schedule is taken over
    schedule_steal_grace: timedelta = timedelta(seconds=30)
    #: schedules: the EWMA's alpha for average_good_duration (0.37: the last 3 runs weigh about 75%)
    schedule_alpha: float = 0.37
    #: schedules: retry backoff after failure 1, 2, 3 or more
    schedule_retry_backoff: tuple[str, ...] = ("5m", "1h", "4h")
    #: schedules: fire times due at once are a backlog for the catch-up rule only when the oldest is older than this
    schedule_catch_up_grace: timedelta = timedelta(seconds=10)
    #: schedules: the pick looks ahead (holds a slot for a more urgent schedule due soon, leaves to another live
    #: scheduler what it can run); false: the proposal's greedy pick
    schedule_lookahead: bool = False
    #: schedules: how far ahead the lookahead pick plans
    schedule_lookahead_horizon: timedelta = timedelta(hours=1)
    #: schedules: how many schedules the lookahead pick looks at: the K most urgent that can start, and the K next due
    schedule_lookahead_k: int = 32
    #: schedules: retries wait by the failed run's length, min(max(L·2^(n-1), 10s), 3 × the backoff of failure n)
    schedule_retry_by_length: bool = False
    #: schedules: the failed share of a good run's items above which a schedule without its own reads partial_failure
    schedule_partial_failure_threshold: float = 0.1
    #: Celery beat (ostinato.integrations.celery.beat:OstinatoScheduler): a fire time a beat claimed and did not
    #: send (it died, or paused) is sent by another beat after this
    beat_lease: timedelta = timedelta(seconds=30)
    #: Celery beat: the most schedules one claim takes
    beat_batch: int = 100
    #: Celery beat: how often a beat looks for new schedules and ended leases when nothing is due
    beat_poll: timedelta = timedelta(seconds=1)
    #: where runs, visits and schedule runs execute: "embedded" (threads of this process) or "celery"
    executor: str = "embedded"
    #: Celery: the broker's URL (redis://host:6379/0 or amqp://user:password@host:5672//)
    broker_url: str = ""
    #: Celery: a queue's depth read from the broker is reused for this long
    queue_depth_cache: timedelta = timedelta(seconds=2)
    #: Celery listener: a worker with no heartbeat for this long is dead; its started runs are lost
    worker_lost_after: timedelta = timedelta(seconds=30)
    #: change_rate_optimal: what the revisits optimise, "age" (time since the first unarchived change) or "freshness"
    revisit_objective: str = "age"
    #: change_rate_optimal: the prior of a new origin's change rate, this many changes over revisit_prior_days
    revisit_prior_changes: float = 0.5
    #: change_rate_optimal: the days over which a new origin is believed to have seen revisit_prior_changes changes
    revisit_prior_days: float = 30.0
    #: change_rate_optimal: no origin waits longer than this between visits
    revisit_ceiling: timedelta = timedelta(days=60)
    #: change_rate_optimal: observations older than this weigh e⁻¹ as much as new ones
    revisit_horizon: timedelta = timedelta(days=365)
    #: change_rate_optimal: where visits see change times, a change this long after the one before starts a burst
    #: (at most: 3 % of the origin's mean gap where that is less)
    revisit_burst_gap: timedelta = timedelta(days=1)
    #: change_rate_optimal: visits a day per visit type to steer to (0: what the orchestrator measures it dispatches)
    revisit_capacity: float = 0.0
    #: change_rate_optimal: how often the orchestrator steers each visit type's threshold
    revisit_steer_every: timedelta = timedelta(minutes=10)
    #: journal client: Kafka bootstrap servers (``ostinato run`` runs the journal client when set)
    journal_brokers: str = ""
    #: journal client: the consumer group whose committed offsets say where to resume
    journal_group_id: str = "ostinato-journal-client"
    #: journal client: the topics of visit statuses
    journal_topics: tuple[str, ...] = ("swh.journal.objects.origin_visit_status",)
    #: services: serve their Prometheus metrics on this port (0: not served)
    metrics_port: int = 0
    #: services: the address the metrics are served on
    metrics_host: str = "127.0.0.1"
    #: API: the reverse proxies (addresses or CIDR networks) whose X-Forwarded-Proto and X-Forwarded-For are
    #: believed (none: the headers are ignored; see docs/reference/security.md, "Behind a proxy")
    trusted_proxies: tuple[str, ...] = ()

    @classmethod
    def load(cls, config_file: str | Path | None = None, environ: Mapping[str, str] | None = None) -> Settings:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        path = config_file or environ.get("OSTINATO_CONFIG")
        if path is None and Path("ostinato.toml").exists():
            path = "ostinato.toml"
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ValidationError("config", "an existing TOML file", str(path)) from None
            except tomllib.TOMLDecodeError as exc:
                raise ValidationError("config", f"valid TOML ({exc})", str(path)) from None
            values.update(data.get("ostinato", data))
        for f in fields(cls):
            env_name = f"OSTINATO_{f.name.upper()}"
            if env_name in environ:
                values[f.name] = environ[env_name]
        _warn_of_unknown_variables(environ, [f"OSTINATO_{f.name.upper()}" for f in fields(cls)])
        return cls().with_values(values)

    def with_values(self, values: Mapping[str, Any]) -> Settings:
        """A copy with ``values`` parsed and checked; unknown keys are errors."""
        known = {f.name: f for f in fields(self)}
        parsed: dict[str, Any] = {}
        for key, value in values.items():
            if value is None:
                continue
            if key not in known:
                close = close_names(str(key), known)
                raise ValidationError(key, f"a setting of Ostinato{did_you_mean(close)}" if close
                                      else f"one of the settings {', '.join(sorted(known))}", value)
            default = getattr(self, key)
            if key == "policy_ratios":
                parsed[key] = _parse_policy_ratios(value)
            elif key == "executor":
                if value not in EXECUTORS:
                    raise ValidationError(key, f"one of {', '.join(EXECUTORS)}", value)
                parsed[key] = value
            elif key == "revisit_capacity":
                parsed[key] = _parse_number(value, key, minimum=0.0)
            elif key == "metrics_port":
                parsed[key] = _parse_port(value, key)
            elif key == "trusted_proxies":
                parsed[key] = _parse_networks(value, key)
            elif key in ("orchestrator_threshold", "schedule_partial_failure_threshold"):
                parsed[key] = _parse_number(value, key, minimum=0.0, maximum=1.0)
            elif isinstance(default, float):
                parsed[key] = _parse_number(value, key)
            elif isinstance(default, timedelta):
                parsed[key] = _parse_setting_duration(value, key)
            elif isinstance(default, bool):
                parsed[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int):
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValidationError(key, "a whole number", value)
                try:
                    parsed[key] = int(value)
                except (TypeError, ValueError):
                    raise ValidationError(key, "a whole number", value) from None
                limit = _WHOLE_LIMITS.get(key, 1_000_000)
                if not 1 <= parsed[key] <= limit:
                    raise ValidationError(key, f"a whole number from 1 to {limit:,}", value)
            elif isinstance(default, tuple):
                if isinstance(value, (list, tuple)):
                    if not all(isinstance(v, str) and v.strip() for v in value):
                        raise ValidationError(key, "a list of non-empty names", value)
                    parsed[key] = tuple(v.strip() for v in value)
                else:
                    parsed[key] = tuple(v.strip() for v in str(value).split(",") if v.strip())
            else:
                parsed[key] = str(value)
        settings = replace(self, **parsed)
        settings.feedback_policy()
        settings.grab_options()
        settings.schedule_timing()
        return settings

    def import_modules(self) -> None:
        """Import the modules of ``imports``, where ``@task`` callables register themselves: every
        process that runs callables does it first (run, runner, scheduler, worker). A module that
        fails to import is bad input naming the setting, not a traceback."""
        for module in self.imports:
            try:
                importlib.import_module(module)
            except Exception as exc:
                raise ValidationError("imports", "modules this process can import",
                                      f"{module} ({type(exc).__name__}: {exc})") from exc

    def celery_broker(self) -> str:
        """The broker URL, required when ``executor`` is celery."""
        if not self.broker_url:
            raise ValidationError("broker_url", "a broker URL such as redis://127.0.0.1:6379/0 (setting broker_url, "
                                  "or OSTINATO_BROKER_URL)", self.broker_url or None)
        return self.broker_url

    def feedback_policy(self) -> FeedbackPolicy:
        """The feedback knobs and the cooldowns after a visit, for ``record_visit_statuses``."""
        return FeedbackPolicy(
            adjust_factor=self.adjust_factor, minimum_interval=self.minimum_interval, max_failures=self.max_failures,
            failure_delay=self.failure_delay,
            absolute_cooldown=self.absolute_cooldown, failed_cooldown=self.failed_cooldown,
            not_found_cooldown=self.not_found_cooldown, revisit=self.revisit_model(),
        ).validated()

    def revisit_model(self) -> RevisitModel:
        """change_rate_optimal's knobs (errors name the revisit_* setting)."""
        # validated() reads the objective's name (and names the setting when it is none)
        return RevisitModel(objective=self.revisit_objective,  # type: ignore[arg-type]  # a name, read by validated()
                            prior_changes=self.revisit_prior_changes,
                            prior_days=self.revisit_prior_days, ceiling=self.revisit_ceiling,
                            horizon=self.revisit_horizon, burst_gap=self.revisit_burst_gap).validated()

    def schedule_timing(self) -> ScheduleTiming:
        """The schedules' knobs that are not per schedule, for the deadline scheduler."""
        backoff = tuple(_parse_setting_duration(v, "schedule_retry_backoff", allow_zero=True)
                        for v in self.schedule_retry_backoff)
        try:
            return ScheduleTiming(alpha=self.schedule_alpha, backoff=backoff, ping_interval=self.schedule_ping_interval,
                                  ping_timeout=self.schedule_ping_timeout, steal_grace=self.schedule_steal_grace,
                                  catch_up_grace=self.schedule_catch_up_grace,
                                  retry_by_length=self.schedule_retry_by_length,
                                  partial_failure_threshold=self.schedule_partial_failure_threshold).validated()
        except ValidationError as exc:  # name the setting, not the dataclass field
            field = exc.field if exc.field.startswith("schedule_") else f"schedule_{exc.field}"
            raise ValidationError(field, exc.expected, exc.got) from None

    def schedule_pick_rule(self) -> PickRule | None:
        """How the deadline scheduler picks: lookahead within its bounds, or None (the greedy pick)."""
        if not self.schedule_lookahead:
            return None
        try:
            return PickRule(lookahead=Lookahead(horizon=self.schedule_lookahead_horizon, k=self.schedule_lookahead_k,
                                                node_ttl=max(NODE_TTL, 3 * self.schedule_ping_interval))).validated()
        except ValidationError as exc:  # name the setting
            raise ValidationError(f"schedule_{exc.field}", exc.expected, exc.got) from None

    def grab_options(self) -> GrabOptions:
        """How the orchestrator's grabs treat what they pick, for ``grab_next_visits``."""
        return GrabOptions(in_flight_timeout=self.in_flight_timeout, minimum_interval=self.minimum_interval).validated()

    def ratios(self, visit_type: str) -> dict[str, float]:
        """The default ratios of ``visit_type``, with this configuration's over them."""
        return merged_ratios(visit_type, self.policy_ratios.get(visit_type, {}))


def local_actor() -> str:
    """Who acts where no token says, for the audit trail: this process's OS user and host (``user@host``)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name in the environment nor in the password database
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def _warn_of_unknown_variables(environ: Mapping[str, str], settings: list[str]) -> None:
    """One warning line per OSTINATO_ variable that nothing reads (a misspelt setting, most likely),
    with the closest known names; not an error, as a TOML file's unknown key is: another program may
    own a variable of that prefix."""
    known = {name.removeprefix("OSTINATO_").lower(): name for name in (*settings, *OTHER_VARIABLES)}
    for name in sorted(environ):
        if name.startswith("OSTINATO_") and name not in known.values():
            close = [known[k] for k in close_names(name.removeprefix("OSTINATO_"), known)]
            log.warning("%s: not a setting of Ostinato, ignored%s", name, did_you_mean(close))


def _parse_setting_duration(value: Any, key: str, *, allow_zero: bool = False) -> timedelta:
    """A duration setting: text with a unit (``30s``, ``12h``, ``PT1H``) or a timedelta. A number,
    from TOML or the environment alike, is refused: ``poll_interval = 1`` names no unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValidationError(key, BARE_NUMBER_FORMS, value)
    return parse_duration(value, key, allow_zero=allow_zero)


def merged_ratios(visit_type: str, overrides: Mapping[str, float]) -> dict[str, float]:
    """The default ratios of ``visit_type`` with ``overrides`` over them, checked (errors name
    ``policy_ratios.<visit_type>.<policy>``)."""
    return validate_ratios({**default_ratios(visit_type), **overrides}, POLICY_NAMES,
                           field=f"policy_ratios.{visit_type}")


def _parse_policy_ratios(value: Any) -> dict[str, dict[str, float]]:
    """A table visit_type -> {policy: ratio} (TOML, or JSON text from the environment)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValidationError("policy_ratios", 'a JSON object such as {"git": {"origins_without_last_update": 0}}',
                                  value) from None
    if not isinstance(value, Mapping):
        raise ValidationError("policy_ratios", "a table of visit type to {policy = ratio}", value)
    parsed: dict[str, dict[str, float]] = {}
    for visit_type, table in value.items():
        if not isinstance(table, Mapping):
            raise ValidationError(f"policy_ratios.{visit_type}", "a table of policy = ratio", table)
        merged = merged_ratios(visit_type, table)
        parsed[visit_type] = {policy: merged[policy] for policy in table}
    return parsed


#: the largest value each whole-number setting takes (others: a million)
_WHOLE_LIMITS = {"workers": 1024, "max_failures": 1000, "beat_batch": 10_000, "schedule_lookahead_k": MAX_K}


def _parse_number(value: Any, key: str, *, minimum: float | None = None, maximum: float | None = None) -> float:
    if isinstance(value, bool):
        raise ValidationError(key, "a number", value)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond any float
        raise ValidationError(key, "a number", value) from None
    if not math.isfinite(number) or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        if minimum is not None and maximum is not None:
            bounds = f"a number from {minimum:g} to {maximum:g}"
        elif minimum is not None:
            bounds = f"a number of at least {minimum:g}"
        else:
            bounds = "a finite number"
        raise ValidationError(key, bounds, value)
    return number


def _parse_networks(value: Any, key: str) -> tuple[str, ...]:
    """Addresses and CIDR networks, as a list or comma-separated text; each written as ``ipaddress`` writes it."""
    import ipaddress

    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    networks = []
    for item in items:
        if not isinstance(item, str):
            raise ValidationError(key, "addresses or CIDR networks (10.0.0.0/8, ::1), comma-separated", value)
        if not item.strip():
            continue
        try:
            networks.append(str(ipaddress.ip_network(item.strip(), strict=False)))
        except ValueError:
            raise ValidationError(key, "addresses or CIDR networks (10.0.0.0/8, ::1), comma-separated", item) from None
    return tuple(networks)


def _parse_port(value: Any, key: str) -> int:
    """A TCP port, 0 for none."""
    try:
        port = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        port = None
    if port is None or not 0 <= port <= 65535:
        raise ValidationError(key, "a port from 1 to 65535, or 0 for none", value)
    return port
