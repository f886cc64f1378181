"""``ostinato swh-rpc serve``: swh-scheduler 3.6's RPC protocol on the database of ``--db``
(see docs/reference/swh-compat.md), with uvicorn."""

from __future__ import annotations

from typing import Any

import click

from .. import extras
from .app import AppContext, command_group, pass_app, serve_http
from .output import WholeNumberType


@command_group("swh-rpc", "swh-scheduler 3.6's RPC protocol, for its listers, loaders, journal client and runners.")
def swh_rpc() -> None:
    pass


@swh_rpc.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=WholeNumberType(1, field="port"), default=5008, show_default=True,
              help="TCP port (5008: swh-scheduler's own).")
@click.option("--no-auth", is_flag=True,
              help="Serve without tokens, as swh-scheduler's server does: only behind a boundary that keeps others out "
                   "(bound to 127.0.0.1, or a reverse proxy that authenticates).")
@click.option("--test-reset", is_flag=True, hidden=True,
              help="Serve POST /ostinato-test/reset, which EMPTIES the database (conformance harness only; loopback only).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="warning",
              show_default=True)
@pass_app
def swh_rpc_serve(app: AppContext, host: str, port: int, no_auth: bool, test_reset: bool, log_level: str) -> None:
    """Serve the protocol until SIGINT or SIGTERM. Clients send a token made by `ostinato token add`
    (read scope for the operations that only read, admin for the others) as
    `Authorization: Bearer <secret>`: in swh's configuration, `session_kwargs: {headers: {Authorization: ...}}`.

    Example: ostinato --db postgresql://… swh-rpc serve --host 127.0.0.1 --port 5008
    """
    extras.require("api", "ostinato swh-rpc serve")
    from ..domain.errors import ValidationError
    from ..integrations.swh.app import create_app
    from ..integrations.swh.reset import empty_store

    def make_application() -> Any:
        if test_reset and host not in ("127.0.0.1", "localhost", "::1"):
            raise ValidationError("host", "a loopback address with --test-reset", host)
        store = app.store()  # checks the schema before listening
        return create_app(store, app.clock, require_token=not no_auth,
                          reset=(lambda: empty_store(store)) if test_reset else None,
                          feedback=app.settings.feedback_policy(), grab_options=app.settings.grab_options())

    serve_http(make_application, host=host, port=port, log_level=log_level)


__all__ = ["swh_rpc"]
