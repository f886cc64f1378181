"""The optional parts of the install: which pip extra brings which modules, and the check a feature
makes before it imports them.

``pip install ostinato`` alone runs the embedded default (SQLite, in-process workers, the CLI,
calendars and schedules, the services' Prometheus metrics). Everything else is an extra named for what it enables; a feature whose
extra is missing stops with one line naming the extra to install (:class:`MissingExtra`), never with
an ``ImportError`` traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from typing import Any

from .domain.errors import MissingExtra

#: each extra of ``pyproject.toml`` and the top-level modules it provides
EXTRAS: dict[str, tuple[str, ...]] = {
    "postgresql": ("psycopg", "psycopg_pool"),
    "celery": ("celery", "kombu", "redis"),
    "kafka": ("confluent_kafka",),
    "api": ("fastapi", "uvicorn", "jinja2", "fastapi_standalone_docs"),
    "remote": ("httpx",),
    "sim": ("numpy",),
    "plots": ("matplotlib",),
    "solar": ("ephem",),
}


def missing_module(extra: str) -> str | None:
    """The first module of ``extra`` that cannot be imported here, or None when all can."""
    for module in EXTRAS[extra]:
        if module in sys.modules:  # imported already (kombu then replaces itself by a module without __spec__)
            continue
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return module
    return None


def require(extra: str, feature: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` is installed; ``feature`` names
    what needed it, as the user asked for it (``"--db postgresql://…"``, ``"ostinato api serve"``)."""
    missing = missing_module(extra)
    if missing is not None:
        raise MissingExtra(extra, feature, missing)


def installed(extra: str) -> bool:
    return missing_module(extra) is None


def lazy_exports(package: str, exports: Mapping[str, str], extra: str, feature: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``exports`` (name → submodule)
    on first use, after checking ``extra``: the package imports without its extra, and using it
    without says which extra to install."""
    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        require(extra, feature)
        return getattr(importlib.import_module(f".{exports[name]}", package), name)

    return __getattr__
