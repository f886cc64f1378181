"""Settings from a TOML file and ``OSTINATO_*`` environment variables.

Precedence, strongest first: command-line options, environment variables,
the configuration file (``--config``, ``$OSTINATO_CONFIG`` or ``./ostinato.toml``),
the defaults below.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Mapping

from .domain.durations import parse_duration
from .domain.errors import ValidationError

DEFAULT_DB = "sqlite:///ostinato.db"


@dataclass(frozen=True)
class Settings:
    #: database URL (``sqlite:///…`` or ``postgresql://…``)
    db: str = DEFAULT_DB
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

    @classmethod
    def load(cls, config_file: str | Path | None = None, environ: Mapping[str, str] | None = None) -> "Settings":
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
        return cls().with_values(values)

    def with_values(self, values: Mapping[str, Any]) -> "Settings":
        """A copy with ``values`` parsed and checked; unknown keys are errors."""
        known = {f.name: f for f in fields(self)}
        parsed: dict[str, Any] = {}
        for key, value in values.items():
            if value is None:
                continue
            if key not in known:
                raise ValidationError(key, f"one of the settings {', '.join(sorted(known))}", value)
            default = getattr(self, key)
            if isinstance(default, timedelta):
                parsed[key] = parse_duration(value, key)
            elif isinstance(default, bool):
                parsed[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int):
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValidationError(key, "a whole number", value)
                try:
                    parsed[key] = int(value)
                except (TypeError, ValueError):
                    raise ValidationError(key, "a whole number", value) from None
                if parsed[key] < 1:
                    raise ValidationError(key, "a whole number of at least 1", value)
            elif isinstance(default, tuple):
                parsed[key] = tuple(value) if isinstance(value, (list, tuple)) else tuple(v.strip() for v in str(value).split(",") if v.strip())
            else:
                parsed[key] = str(value)
        return replace(self, **parsed)
