"""``ostinato api serve``: the HTTP API (and /metrics) with uvicorn, on the database of ``--db``."""

from __future__ import annotations

import click

from .. import extras
from .app import AppContext, command_group, pass_app, serve_http
from .output import WholeNumberType


@command_group("api", "The HTTP API: OpenAPI at /openapi.json and /docs, Prometheus metrics at /metrics.")
def api() -> None:
    pass


@api.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=WholeNumberType(1, field="port"), default=8000, show_default=True, help="TCP port.")
@click.option("--open-metrics", is_flag=True, envvar="OSTINATO_API_OPEN_METRICS",
              help="Serve /metrics without a token (for a Prometheus on a trusted network).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="info",
              show_default=True)
@pass_app
def api_serve(app: AppContext, host: str, port: int, open_metrics: bool, log_level: str) -> None:
    """Serve the API until SIGINT or SIGTERM. Requests need a token (`ostinato token add`),
    except /health and the OpenAPI description.

    Example: ostinato api serve --host 0.0.0.0 --port 8000
    """
    extras.require("api", "ostinato api serve")
    from ..api import create_app

    # the store is opened, and its schema checked, before listening
    serve_http(lambda: create_app(app.store(), app.settings, app.clock, open_metrics=open_metrics),
               host=host, port=port, log_level=log_level)


__all__ = ["api"]
