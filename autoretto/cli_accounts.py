"""The `connect` group: `connect youtube` here, the other platforms' `connect` commands from
their modules.

`register(app)` adds the group to the main `autoretto` app (autoretto/commands/accounts.py
calls it). Each command parses, calls one library function and renders; a person's mistake
(AutorettoError) is one line on stderr and its exit code. No token is ever printed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .cli_instagram_threads import register as register_instagram_threads
from .cli_manual import register as register_manual
from .cli_meta_linkedin import register as register_meta_linkedin
from .cli_social import register as register_social
from .cli_support import command, group
from .errors import UsageError


def _open() -> tuple[Any, Any, Any]:
    """(paths, config, db) of the current home."""
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


def connect_youtube(
    client_secrets: Annotated[
        Path | None,
        typer.Option(
            "--client-secrets",
            help='Google\'s OAuth client JSON (a "Desktop app" client). Default: '
            "client_secrets of the youtube platform settings (client_secret.json in the home).",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int,
        typer.Option(
            "--port", min=1, max=65535, help="Local port for Google's redirect (loopback)."
        ),
    ] = 8765,
    paste: Annotated[
        bool,
        typer.Option("--paste", help="Paste the redirected address instead of an ssh tunnel."),
    ] = False,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="Import Google's authorized-user JSON made on another machine.",
            show_default=False,
        ),
    ] = None,
    allow_edits: Annotated[
        bool,
        typer.Option(
            "--allow-edits",
            help="Also allow changing videos already on YouTube (youtube.force-ssl scope).",
        ),
    ] = False,
) -> None:
    """Connect a YouTube channel once; cron posts to it from then on.

    Over SSH: run the printed `ssh -L` line on your own computer, then open the printed address.

    Or add --paste, and paste back the address the browser ends on.

    Example: autoretto connect youtube --client-secrets ~/client_secret.json --paste
    """
    from .platforms.youtube import connect
    from .vault import Vault

    if port < 1 or port > 65535:
        raise UsageError(f"--port {port}: give a port between 1 and 65535")
    paths, config, db = _open()
    account = connect(
        db,
        paths,
        config.platforms.get("youtube"),
        client_secrets=client_secrets,
        port=port,
        paste=paste,
        token_file=token_file,
        allow_edits=allow_edits,
        say=typer.echo,
        ask=lambda prompt: typer.prompt(prompt),
    )
    place = Vault(paths.home).place()
    where = "the system keyring" if place.kind == "keyring" else place.detail
    typer.echo(f'Connected YouTube channel "{account.name}" ({account.account_id}).')
    typer.echo(f"Its tokens are sealed in the vault; the key is in {where}.")
    if token_file is not None:
        typer.echo(f"{token_file} still holds the refresh token in clear: delete it now.")


def register(app: typer.Typer) -> None:
    """Add the `connect` group (every platform's `connect` command) to the main app."""
    connect_app = group(
        "connect",
        help="Connect an account so Autoretto can post to it.",
        example="autoretto connect youtube --paste",
    )
    command(connect_app, "youtube", connect_youtube, "Accounts")
    register_meta_linkedin(connect_app)
    register_instagram_threads(connect_app)
    register_social(connect_app)
    register_manual(connect_app)
    app.add_typer(connect_app, name="connect", rich_help_panel="Accounts")
