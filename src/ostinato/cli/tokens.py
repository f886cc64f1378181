"""``ostinato token``: the HTTP API's bearer tokens. ``add`` prints the secret once (only
its SHA-256 is stored), ``list`` shows names, scopes and use, ``revoke`` ends a token."""

from __future__ import annotations

import click

from ..api.tokens import SCOPES, hash_secret, new_secret, parse_scope, token_to_dict
from .app import AppContext, command_group, pass_app
from .output import DomainChoice, echo_json, plural, print_rows

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@command_group("token", "Tokens of the HTTP API: read (reads), worker (the machines' writes too) or admin (everything).")
def token() -> None:
    pass


@token.command("add")
@click.argument("name")
@click.option("--scope", type=DomainChoice(parse_scope, list(SCOPES)), required=True,
              help="read: reads only; worker: also what schedulers, runners, listers and the journal client "
                   "write (no operator action); admin: every request.")
@json_option
@pass_app
def token_add(app: AppContext, name: str, scope: str, as_json: bool) -> None:
    """Create token NAME and print its secret, once: it cannot be shown again.

    Example: ostinato token add grafana --scope read
    """
    secret = new_secret()
    created = app.store().create_api_token(name, scope, hash_secret(secret), app.clock.now(), actor=app.actor)
    if as_json:
        echo_json({**token_to_dict(created), "secret": secret})
        return
    click.echo(f"Created token {created['name']} ({created['scope']}). Its secret, shown only this once:")
    click.echo(secret)
    click.echo("Send it as: Authorization: Bearer <secret>", err=True)


@token.command("list")
@json_option
@pass_app
def token_list(app: AppContext, as_json: bool) -> None:
    """Every token (revoked ones too), by name; never their secrets."""
    rows = [token_to_dict(t) for t in app.store().list_api_tokens()]
    columns = [("name", "name"), ("scope", "scope"), ("created_at", "created"), ("last_used_at", "last used"),
               ("revoked_at", "revoked")]
    print_rows(rows, as_json, columns, title=None if as_json else plural(len(rows), "token"))


@token.command("revoke")
@click.argument("name")
@json_option
@pass_app
def token_revoke(app: AppContext, name: str, as_json: bool) -> None:
    """Revoke token NAME: requests carrying it are refused from now on."""
    revoked = app.store().revoke_api_token(name, app.clock.now(), actor=app.actor)
    if as_json:
        echo_json(token_to_dict(revoked))
        return
    click.echo(f"Revoked token {revoked['name']} (at {revoked['revoked_at'].isoformat()})")


__all__ = ["token"]
