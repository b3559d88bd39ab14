"""Commands `connect bluesky` and `connect x`.

`register(connect_app)` adds them to the `connect` group. Each command parses, calls one
library function and renders; a person's mistake is one line on stderr and its exit code. No
password or token is ever printed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .cli_support import command


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


def connect_x(
    client_id: Annotated[
        str | None,
        typer.Option(
            "--client-id",
            help="Your X app's OAuth 2.0 client id. Default: client_id of [platforms.x].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Connect an X account (OAuth 2.0 with PKCE); cron posts to it from then on.

    Open the printed address on any computer, authorize the app, and paste back the address
    the browser ends on. A confidential client's secret is read from the variable named by
    client_secret_env (X_CLIENT_SECRET), else asked for without echo (leave it empty for a
    public client).

    Example: autoretto connect x --client-id abc123
    """
    from .platforms.x import client_secret_from, connect

    paths, config, db = _open()
    settings = config.platforms.get("x") or {}
    secret = client_secret_from(settings)
    if secret is None:
        secret = typer.prompt(
            "Client secret (empty for a public client)",
            hide_input=True,
            default="",
            show_default=False,
        )
    account = connect(
        db,
        paths,
        settings,
        client_id=client_id or settings.get("client_id", ""),
        client_secret=secret,
        say=typer.echo,
        ask=lambda prompt: typer.prompt(prompt),
    )
    typer.echo(f"Connected X account {account.name} ({account.account_id}).")
    typer.echo("Its tokens are sealed in the vault.")


def register(connect_app: typer.Typer) -> None:
    """Add `connect bluesky` and `connect x` to the connect group."""
    command(connect_app, "bluesky", connect_bluesky, "Accounts")
    command(connect_app, "x", connect_x, "Accounts")
