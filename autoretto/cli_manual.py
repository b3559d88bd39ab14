"""Commands `connect tiktok` and `connect pinterest`, for the posts a person makes by hand
(`autoretto post tiktok|pinterest`, autoretto/commands/by_hand.py).

`register(connect_app)` adds both to the `connect` group. Each parses its options, calls the
platform's `connect` and renders; a person's mistake is one line and an exit code.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .cli_support import command


def _open() -> tuple[Any, Any, Any]:
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


def connect_tiktok(
    client_key: Annotated[
        str | None,
        typer.Option(
            "--client-key",
            help="Your TikTok app's client key. Default: client_key of [platforms.tiktok].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Connect a TikTok account (Login Kit with PKCE) for `autoretto post tiktok`.

    Open the printed address on any computer, authorize the app (video.publish), and paste back
    the address the browser ends on. The client secret is read from the variable named by
    client_secret_env (TIKTOK_CLIENT_SECRET), else asked for without echo.

    Example: autoretto connect tiktok --client-key abc123
    """
    from .platforms.tiktok import client_secret_from, connect

    paths, config, db = _open()
    settings = config.platforms.get("tiktok") or {}
    secret = client_secret_from(settings) or typer.prompt("Client secret", hide_input=True)
    account = connect(
        db, paths, settings, client_key=client_key or settings.get("client_key", ""),
        client_secret=secret, say=typer.echo, ask=lambda prompt: typer.prompt(prompt),
    )  # fmt: skip
    typer.echo(f"Connected TikTok account {account.name}.")
    typer.echo("Its tokens are sealed in the vault; post with `autoretto post tiktok EPISODE`.")
    if not settings.get("audited", False):
        typer.echo("Until the app is audited (audited = true), TikTok posts are private.")


def connect_pinterest(
    app_id: Annotated[
        str | None,
        typer.Option(
            "--app-id",
            help="Your Pinterest app id. Default: app_id of [platforms.pinterest].",
            show_default=False,
        ),
    ] = None,
    sandbox_token: Annotated[
        bool,
        typer.Option(
            "--sandbox-token",
            help="Paste a sandbox access token (My apps › Manage) instead of signing in.",
        ),
    ] = False,
) -> None:
    """Connect a Pinterest account for `autoretto post pinterest`.

    Open the printed address on any computer, give the app access, and paste back the address
    the browser ends on; continuous refresh tokens keep it connected. The app secret is read
    from the variable named by app_secret_env (PINTEREST_APP_SECRET), else asked for without
    echo. With Trial access, set sandbox = true and connect with --sandbox-token.

    Example: autoretto connect pinterest --app-id 1234567
    """
    from .platforms.pinterest import app_secret_from, connect

    paths, config, db = _open()
    settings = config.platforms.get("pinterest") or {}
    if sandbox_token:
        token = typer.prompt("Sandbox access token", hide_input=True)
        account = connect(
            db, paths, settings, app_id="", app_secret="", say=typer.echo,
            ask=lambda prompt: typer.prompt(prompt), sandbox_token=token,
        )  # fmt: skip
    else:
        secret = app_secret_from(settings) or typer.prompt("App secret", hide_input=True)
        account = connect(
            db, paths, settings, app_id=app_id or settings.get("app_id", ""), app_secret=secret,
            say=typer.echo, ask=lambda prompt: typer.prompt(prompt),
        )  # fmt: skip
    typer.echo(f"Connected Pinterest account {account.name}.")
    typer.echo("Its tokens are sealed in the vault; pin with `autoretto post pinterest EPISODE`.")


def register(connect_app: typer.Typer) -> None:
    """Add `connect tiktok` and `connect pinterest` to the connect group."""
    command(connect_app, "tiktok", connect_tiktok, "Accounts")
    command(connect_app, "pinterest", connect_pinterest, "Accounts")
