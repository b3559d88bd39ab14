"""Commands for Bluesky and X: `connect bluesky`, `connect x`, and `limits`.

`register(app, connect_app)` adds them to the main app and to its `connect` group. Each command
parses, calls one library function and renders; a person's mistake is one line on stderr and
its exit code. No password or token is ever printed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .cli_support import JsonOption, handled, plain_table, print_json


def _open() -> tuple[Any, Any, Any]:
    """(paths, config, db) of the current home."""
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


def connect_bluesky(
    handle: Annotated[
        str,
        typer.Option(
            "--handle", help="Your Bluesky handle, e.g. lofi.bsky.social.", show_default=False
        ),
    ],
) -> None:
    """Connect a Bluesky account with an app password; cron posts to it from then on.

    Make an app password in Bluesky: Settings › Privacy and security › App passwords. It is
    asked for without echo, used once to open a session, and never stored: Autoretto keeps
    only the session's tokens, sealed in the vault.

    Example: autoretto connect bluesky --handle lofi.bsky.social
    """
    from .platforms.bluesky import connect

    paths, config, db = _open()
    password = typer.prompt("App password", hide_input=True)
    account = connect(
        db, paths, config.platforms.get("bluesky"), handle=handle, app_password=password
    )
    typer.echo(f"Connected Bluesky account {account.name} ({account.account_id}).")
    typer.echo("Autoretto keeps the session, not the app password; revoke it any time in Bluesky.")
    if account.meta.get("email_confirmed") is False:
        typer.echo("Bluesky takes videos only from accounts with a confirmed email: confirm yours.")


def limits_command(json_output: JsonOption = False) -> None:
    """Show X's credit ledger today (reserved, charged, caps, any pause) and Bluesky's posts.

    A post's credits are reserved when it is queued and charged once it is live. When X
    says the prepaid credits are used up, X posting pauses for every channel for 2 hours.

    Example: autoretto limits --json
    """
    from .clock import now
    from .platforms import bluesky, x

    _, config, db = _open()
    moment = now()
    report = x.limits_report(db, moment, config.platforms.get("x"))
    posts = bluesky.limits_report(db, moment, config.platforms.get("bluesky"))
    if json_output:
        print_json({"x": report, "bluesky": posts})
        return
    _render(report)
    if posts["account"]:
        typer.echo(
            f"Bluesky {posts['account']}: {posts['posts']} of {posts['daily_cap']} posts today "
            f"({posts['day']} UTC)"
        )


def _render(report: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    if report["paused"]:
        console.print(report["pause_reason"], style="bold red", markup=False)
    else:
        console.print("X: posting (no pause)", markup=False)
    console.print(
        f"today ({report['day']} UTC): {report['charged']} charged "
        f"(${report['charged_usd']:.3f}), {report['reserved']} reserved "
        f"(${report['reserved_usd']:.3f}); installation cap {report['daily_cap'] or 'none'}, "
        f"channel cap {report['channel_daily_cap'] or 'none'}",
        markup=False,
    )
    if report["channels"]:
        table = plain_table()
        for column in ("channel", "charged", "reserved", "cap"):
            table.add_column(column)
        for name, entry in report["channels"].items():
            table.add_row(name, str(entry["charged"]), str(entry["reserved"]), str(entry["cap"]))
        console.print(table)


def register(app: typer.Typer, connect_app: typer.Typer) -> None:
    """Add `connect bluesky` and `connect x` to the connect group, `limits` to the app."""
    connect_app.command("bluesky")(handled(connect_bluesky))
    app.command("limits")(handled(limits_command))
