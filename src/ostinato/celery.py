"""The Celery app for running workers with Celery's own command line::

    OSTINATO_DB=postgresql://… OSTINATO_BROKER_URL=redis://… \\
        celery -A ostinato.celery worker -Q load-git,save_code_now:load-git -E

(or ``OSTINATO_URL`` and ``OSTINATO_TOKEN`` instead of ``OSTINATO_DB``, to work through the API).

Importing this module reads the settings (``ostinato.toml``, ``OSTINATO_*``),
imports the modules of the ``imports`` setting, and registers, for every task
type in the database, the task named after its ``backend_name``, plus the
schedule-run task: the same worker as ``ostinato worker``, which picks the
queues and the worker's name for you. Task events (``-E``) must be on for
``ostinato listener`` to see runs start.

This module is only that entry point; the Celery code itself lives in :mod:`ostinato.integrations.celery`.
"""

from __future__ import annotations

from .cli.app import open_settings_store
from .config import Settings
from .domain.clock import SystemClock
from .integrations.celery.app import make_celery_app
from .integrations.celery.worker import WorkerRuntime, install_worker_tasks

settings = Settings.load()
settings.import_modules()
app = make_celery_app(settings.celery_broker())
with open_settings_store(settings) as _store:  # the API's (url) or the database's (db)
    _store.check_schema()
    _backends = {t.backend_name for t in _store.list_task_types()}
install_worker_tasks(app, WorkerRuntime(settings, SystemClock(), open_store=lambda _db: open_settings_store(settings)),
                     _backends)

__all__ = ["app"]
