"""`autoretto connect instagram` and `autoretto connect threads`.

`register(connect_app)` adds both to the existing `connect` group. Each parses its options,
calls the platform's `connect` and renders; a person's mistake is one line and an exit code. The
app secret comes from the environment variable the platform settings name (`app_secret_env`)
or a hidden prompt; it is used for the sign-in only and never stored or printed, nor is a token.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from .cli_support import JsonOption, command, print_json

AppIdOption = Annotated[
    str | None,
    typer.Option(
        "--app-id",
        help="The Meta app's id for this product. Default: app_id of the platform settings.",
        show_default=False,
    ),
]
AccountOption = Annotated[
    str | None,
    typer.Option(
        "--account",
        help="The account to post as (id or username), when the sign-in offers several.",
        show_default=False,
    ),
]


def _connect(
    platform_name: str, app_id: str | None, account: str | None, json_output: bool
) -> None:
    from .config import Paths, home_dir, load_config
    from .platforms.instagram import InstagramPlatform, connect
    from .platforms.threads import ThreadsPlatform
    from .store import open_database

    platform = {"instagram": InstagramPlatform, "threads": ThreadsPlatform}[platform_name]
    paths = Paths(home_dir())
    config = load_config(paths)
    db = open_database(paths.database)
    settings: dict[str, Any] = config.platforms.get(platform_name) or platform.parse_settings(
        {}, path=config.path, paths=paths
    )
    variable = settings["app_secret_env"]
    app_secret = os.environ.get(variable) if variable else None
    if not app_secret:
        app_secret = typer.prompt(
            f"{platform.title} app secret (or set ${variable})", hide_input=True, err=True
        )
    say = (lambda line: typer.echo(line, err=True)) if json_output else typer.echo
    saved = connect(
        db,
        paths,
        settings,
        app_id=app_id,
        app_secret=app_secret,
        account_id=account,
        say=say,
        ask=lambda prompt: typer.prompt(prompt, err=json_output),
        platform=platform,
    )
    expires = saved.meta.get("token_expires_at")
    if json_output:
        print_json(saved.to_json())
        return
    typer.echo(f'Connected {platform.title} account "{saved.name}" ({saved.account_id}).')
    typer.echo(
        f"Its token is sealed in the vault; it lasts until {expires} and Autoretto renews it "
        "while it posts."
    )
    if settings.get("media_host") is None:
        typer.echo(
            f"{platform.title} fetches videos from a link: add a [media_host] section to the "
            "config before the first post."
        )


def connect_instagram(
    app_id: AppIdOption = None, account: AccountOption = None, json_output: JsonOption = False
) -> None:
    """Connect an Instagram professional account (Business or Creator) for Reels.

    Open the printed address anywhere, press Allow, and paste back the address the browser
    ends on. The app secret is read from $INSTAGRAM_APP_SECRET (app_secret_env) or asked for.

    Example: autoretto connect instagram --app-id 1234567890
    """
    _connect("instagram", app_id, account, json_output)


def connect_threads(
    app_id: AppIdOption = None, account: AccountOption = None, json_output: JsonOption = False
) -> None:
    """Connect a Threads profile.

    Open the printed address anywhere, press Allow, and paste back the address the browser
    ends on. The app secret is read from $THREADS_APP_SECRET (app_secret_env) or asked for.

    Example: autoretto connect threads --app-id 1234567890
    """
    _connect("threads", app_id, account, json_output)


def register(connect_app: typer.Typer) -> None:
    """Add `instagram` and `threads` to the `connect` group."""
    command(connect_app, "instagram", connect_instagram, "Accounts")
    command(connect_app, "threads", connect_threads, "Accounts")
