"""``ostinato swh-rpc``: swh-scheduler 3.6's RPC protocol.

- ``serve``: the protocol on the database of ``--db`` (see docs/reference/swh-compat.md), with uvicorn;
- ``compare``: the same dry-run grabs asked of swh-scheduler's server and of Ostinato's, side by side;
- ``copy-tasks``: the tasks created in Ostinato since the tasks side moved to it, created again on
  swh-scheduler's server (a rollback).

``compare`` and ``copy-tasks`` are thin over :mod:`ostinato.integrations.swh.client` and need no extra
(see docs/how-to/migrate-from-swh-scheduler.md). Their bad options are refused before anything is
asked of a server, each in one line naming the option (exit status 2); a server that cannot be
reached or answers an error is one line too (exit status 1).
"""

from __future__ import annotations

from typing import Any

import click

from .. import extras
from ..domain.errors import ValidationError
from .app import AppContext, command_group, is_loopback, pass_app, refuse_open_beyond_loopback, serve_http, store_shown
from .output import WholeNumberType, echo_json, plural, print_table


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
@click.option("--insecure", is_flag=True,
              help="With --no-auth, listen on an address other than loopback all the same (anyone who reaches it may "
                   "read and write).")
@click.option("--test-reset", is_flag=True, hidden=True,
              help="Serve POST /ostinato-test/reset, which EMPTIES the database (conformance harness only; loopback only).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info", "debug"]), default="warning",
              show_default=True)
@pass_app
def swh_rpc_serve(app: AppContext, host: str, port: int, no_auth: bool, insecure: bool, test_reset: bool,
                  log_level: str) -> None:
    """Serve the protocol until SIGINT or SIGTERM. Clients send a token made by `ostinato token add`
    (read scope for the operations that only read, admin for the others) as
    `Authorization: Bearer <secret>`: in swh's configuration, `session_kwargs: {headers: {Authorization: ...}}`.

    Example: ostinato --db postgresql://… swh-rpc serve --host 127.0.0.1 --port 5008
    """
    extras.require("api", "ostinato swh-rpc serve")
    from ..domain.errors import ValidationError
    from ..integrations.swh.app import create_app
    from ..integrations.swh.reset import empty_store

    if no_auth:
        refuse_open_beyond_loopback(host, insecure, flag="--no-auth", serves="every operation (writes included)")

    def make_application() -> Any:
        if test_reset and not is_loopback(host):
            raise ValidationError("host", "a loopback address with --test-reset", host)
        store = app.store()  # checks the schema before listening
        return create_app(store, app.clock, require_token=not no_auth,
                          reset=(lambda: empty_store(store)) if test_reset else None,
                          feedback=app.settings.feedback_policy(), grab_options=app.settings.grab_options())

    auth = ("NO TOKENS (--no-auth): whoever reaches it may read and write" if no_auth
            else "tokens required (read scope to read, admin scope to write)")
    serve_http(make_application, host=host, port=port, log_level=log_level,
               started=f"ostinato swh-rpc serve: {{url}} on {store_shown(app.settings)}; {auth}")


# -- compare ------------------------------------------------------------------------------------------
PEER_WHAT = "swh-scheduler's RPC server"
OURS_WHAT = "Ostinato's swh-rpc server (ostinato swh-rpc serve)"


def _url(value: str | None, name: str, what: str) -> str:
    from ..integrations.swh.client import check_url

    return check_url(value, name, what)


def _secret(value: str | None, name: str) -> str | None:
    if value is not None and not value.strip():
        raise ValidationError(name, "a token's secret (or leave the option out)", value)
    return value.strip() if value else None


@swh_rpc.command("compare")
@click.option("--peer", metavar="URL", help=f"{PEER_WHAT}, e.g. http://swh-scheduler.internal:5008/ (required).")
@click.option("--peer-token", metavar="T", help="A bearer token for --peer (swh's server has none; a proxy may want one).")
@click.option("--ours", metavar="URL", help=f"{OURS_WHAT}, e.g. http://ostinato.internal:5008/ (required).")
@click.option("--token", metavar="T", help="A token of Ostinato's (ostinato token add … --scope admin) for --ours.")
@click.option("--visit-type", metavar="TYPE", help="The visit type grabbed, e.g. git (required).")
@click.option("--policy", "policies", metavar="P", multiple=True,
              help="A policy of swh's to compare (repeat for several). Default: those swh's recurrent visit scheduler "
                   "uses for the visit type (already_visited_order_by_lag, never_visited_oldest_update_first, "
                   "origins_without_last_update; stop_after_success for the one-shot visit types).")
@click.option("--count", type=WholeNumberType(1, field="count"), default=1000, show_default=True,
              help="Listings asked of each grab.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def swh_rpc_compare(app: AppContext, peer: str | None, peer_token: str | None, ours: str | None, token: str | None,
                    visit_type: str | None, policies: tuple[str, ...], count: int, as_json: bool) -> None:
    """Send the same grab_next_visits(VISIT_TYPE, COUNT, POLICY, dry_run=True, timestamp=now) to swh-scheduler's
    server (--peer) and to Ostinato's (--ours), for each policy, and print how many listings each answered and how
    many are the same (by URL). A dry run: neither marks anything scheduled. Comparing is not failing: the exit
    status is 0 whatever the verdict (1: a server could not be reached or answered an error; 2: a bad option).

    \b
    Example:
      ostinato swh-rpc compare --peer http://swh-scheduler.internal:5008/ \\
          --ours http://ostinato.internal:5008/ --token "$TOKEN" --visit-type git
    """
    from ..integrations.swh.client import POLICIES, SwhRpcClient, compare_grabs, default_policies

    peer = _url(peer, "peer", PEER_WHAT)
    ours = _url(ours, "ours", OURS_WHAT)
    peer_token, token = _secret(peer_token, "peer_token"), _secret(token, "token")
    if visit_type is None or not visit_type.strip():
        raise ValidationError("visit_type", "a visit type, e.g. git (--visit-type)", visit_type or None)
    visit_type = visit_type.strip()
    for policy in policies:
        if policy not in POLICIES:
            raise ValidationError("policy", f"one of swh-scheduler's policies: {', '.join(POLICIES)}", policy)
    chosen = tuple(dict.fromkeys(policies)) or default_policies(visit_type)
    now = app.clock.now()
    found = compare_grabs(SwhRpcClient(peer, peer_token, name="peer"), SwhRpcClient(ours, token, name="ours"),
                          visit_type, chosen, count, now)
    differing = [c for c in found if not c.same]
    verdict = _verdict(found, differing)
    if as_json:
        echo_json({"peer": peer, "ours": ours, "visit_type": visit_type, "count": count, "timestamp": now,
                   "policies": [c.to_dict() for c in found], "same": not differing,
                   "differing": [c.policy for c in differing], "verdict": verdict})
        return
    click.echo(f"Dry-run grabs of {count} {visit_type} visits at {now.isoformat()}: swh-scheduler at {peer}, "
               f"Ostinato at {ours}")
    print_table([{"policy": c.policy, "peer": len(c.peer), "ours": len(c.ours), "common": c.common,
                  "only_peer": len(c.only("peer")), "only_ours": len(c.only("ours")),
                  "order": "same" if c.same_order else "differs"} for c in found],
                [("policy", "policy"), ("peer", "swh-scheduler"), ("ours", "Ostinato"), ("common", "same listings"),
                 ("only_peer", "only swh"), ("only_ours", "only Ostinato"), ("order", "order")])
    for c in differing:
        for side, name in (("peer", "swh-scheduler"), ("ours", "Ostinato")):
            urls = c.only(side)
            if urls:
                more = f", … ({len(urls)} in all)" if len(urls) > 3 else ""
                click.echo(f"  {c.policy}: only {name}: {', '.join(urls[:3])}{more}")
    click.echo(verdict)


def _verdict(found: list[Any], differing: list[Any]) -> str:
    if not found:
        return "Verdict: no policy compared."
    if not differing:
        return f"Verdict: the same listings from both servers for every policy ({len(found)} of {len(found)})."
    what = "; ".join(f"{c.policy} ({c.common} in common, swh-scheduler {len(c.peer)}, Ostinato {len(c.ours)})"
                     for c in differing)
    return (f"Verdict: the listings differ for {len(differing)} of {len(found)} policies: {what}; "
            "see docs/reference/swh-compat.md for the differences that are deliberate.")


# -- copy-tasks ---------------------------------------------------------------------------------------
@swh_rpc.command("copy-tasks")
@click.option("--to", "to", metavar="URL", help=f"{PEER_WHAT}, where the tasks are created (required).")
@click.option("--to-token", metavar="T", help="A bearer token for --to (swh's server has none; a proxy may want one).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@pass_app
def swh_rpc_copy_tasks(app: AppContext, to: str | None, to_token: str | None, as_json: bool) -> None:
    """Create on swh-scheduler's server (--to), through its create_tasks, the tasks created in Ostinato's store
    (--db) since the tasks side moved: same type, arguments, policy, priority, next run, status and
    retries. They get new ids there. A task whose run is in flight in Ostinato is created pending, for swh's
    runner to run again.

    Neither scheduler records when a task was created: the tasks copied are those above the last task swh's
    server still holds as the same one (same id, type and arguments), since the import keeps swh's ids and
    Ostinato numbers its own above them. Run it with the tasks side stopped, before it points back at swh.
    Running it again creates nothing twice (swh's store does not create a task equal to one it holds).

    \b
    Example:
      ostinato swh-rpc copy-tasks --to http://swh-scheduler.internal:5008/
    """
    from ..integrations.swh.client import SwhRpcClient, copy_tasks, tasks_after_cut_over

    to = _url(to, "to", PEER_WHAT)
    to_token = _secret(to_token, "to_token")
    store = app.store()
    swh = SwhRpcClient(to, to_token, name="to")
    report = copy_tasks(tasks_after_cut_over(store, swh), swh)
    rows = [c.to_dict() for c in report.tasks]
    if as_json:
        echo_json({"to": to, "after_id": report.after_id, "found": len(rows), "copied": report.copied,
                   "tasks": rows})
        return
    if not rows:
        click.echo(f"No task created in Ostinato since the cut-over: none above task "
                   f"{report.after_id}, the last one swh-scheduler's server holds. Nothing copied.")
        return
    click.echo(f"Tasks created in Ostinato since the cut-over: {len(rows)}, above task "
               f"{report.after_id}, the last one swh-scheduler's server holds.")
    print_table([{**row, "swh_id": row["swh_id"] if row["swh_id"] is not None else "already there"} for row in rows],
                [("ostinato_id", "Ostinato id"), ("swh_id", "swh id"), ("type", "type"), ("policy", "policy"),
                 ("priority", "priority"), ("status", "status"), ("next_run", "next run")])
    already = len(rows) - report.copied
    note = f"; {already} equal to a task it already held, not created again" if already else ""
    click.echo(f"Copied {plural(report.copied, 'task')} to {to}: they have new ids there (swh id){note}.")


__all__ = ["swh_rpc"]
