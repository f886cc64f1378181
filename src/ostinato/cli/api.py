"""``ostinato api serve``: the HTTP API (and /metrics) with uvicorn, on the database of ``--db``."""

from __future__ import annotations

import threading

import click

from .. import extras
from .app import AppContext, command_group, pass_app, refuse_open_beyond_loopback, serve_http, store_shown
from .output import WholeNumberType


@command_group("api", "The HTTP API: OpenAPI at /openapi.json and /docs, Prometheus metrics at /metrics.")
def api() -> None:
    pass


@api.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=WholeNumberType(1, field="port"), default=8000, show_default=True, help="TCP port.")
@click.option("--open-metrics", is_flag=True, envvar="OSTINATO_API_OPEN_METRICS",
              help="Serve /metrics without a token (for a Prometheus on a trusted network).")
@click.option("--insecure", is_flag=True,
              help="With --open-metrics, listen on an address other than loopback all the same (anyone who reaches "
                   "it may read /metrics).")
@click.option("--no-history", is_flag=True,
              help="Do not run the console's history pass (every minute) in this server: run "
                   "`ostinato history sample --every 1m` elsewhere, or do without the dashboard's history.")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="info",
              show_default=True)
@pass_app
def api_serve(app: AppContext, host: str, port: int, open_metrics: bool, insecure: bool, no_history: bool,
              log_level: str) -> None:
    """Serve the API until SIGINT or SIGTERM. Requests need a token (`ostinato token add`),
    except /health and the OpenAPI description.

    Example: ostinato api serve --host 0.0.0.0 --port 8000
    """
    extras.require("api", "ostinato api serve")
    if open_metrics:
        refuse_open_beyond_loopback(host, insecure, flag="--open-metrics", serves="/metrics")
    from ..api import create_app

    auth = ("tokens required (not for /health, the OpenAPI description and /metrics: --open-metrics)" if open_metrics
            else "tokens required (not for /health and the OpenAPI description)")
    from ..services.history import run_history

    stop = threading.Event()

    def make_application():  # the store is opened, and its schema checked, before listening
        application = create_app(app.read_store(), app.settings, app.clock, open_metrics=open_metrics)
        if not no_history:
            threading.Thread(target=run_history, args=(app.store(), app.clock, stop), name="ostinato-history",
                             kwargs={"timing": app.settings.schedule_timing()}, daemon=True).start()
        return application

    history = "no history pass (--no-history)" if no_history else "history sampled every minute"
    try:
        serve_http(make_application, host=host, port=port, log_level=log_level, proxy_headers=False,
                   started=f"ostinato api serve: {{url}} on {store_shown(app.settings)}; {auth}; {history}; "
                           "dashboard at {url}")
    finally:
        stop.set()


__all__ = ["api"]
