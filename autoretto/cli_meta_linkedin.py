"""Commands `connect facebook` and `connect linkedin`: headless sign-in, tokens into the vault.

`register(connect_app)` adds both to the existing `connect` group. Each command reads the app's
id and secret (a client file, or options), prints the platform's consent address, takes back the
address the browser was sent to, and calls one library function that exchanges the code and
stores the sealed account. No secret or token is ever printed.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, urlparse

import typer

from .cli_support import command
from .errors import UsageError

ClientFileOption = Annotated[
    Path | None,
    typer.Option(
        "--client-file",
        help='JSON with the app\'s "client_id" and "client_secret" (or "app_id" and '
        '"app_secret"). Default: client_file of the platform settings, in the home.',
        show_default=False,
    ),
]
ClientIdOption = Annotated[
    str | None,
    typer.Option(
        "--client-id", help="The app's id (wins over the client file).", show_default=False
    ),
]
ClientSecretFileOption = Annotated[
    Path | None,
    typer.Option(
        "--client-secret-file",
        help="A file holding only the app's secret (wins over the client file).",
        show_default=False,
    ),
]
RedirectOption = Annotated[
    str | None,
    typer.Option(
        "--redirect-uri",
        help="The redirect address registered in the app. Default: redirect_uri of the "
        "platform settings (https://localhost/).",
        show_default=False,
    ),
]


def _open() -> tuple[Any, Any, Any]:
    """(paths, config, db) of the current home."""
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


def read_client(
    *,
    paths: Any,
    settings: dict[str, Any],
    client_file: Path | None,
    client_id: str | None,
    client_secret_file: Path | None,
    title: str,
) -> tuple[str, str]:
    """(client id, client secret) from the options, else the client file. UsageError in plain
    words (never quoting the secret) when either is missing."""
    from_file: dict[str, Any] = {}
    path = client_file or paths.resolve(settings["client_file"])
    if client_file is not None or not (client_id and client_secret_file):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if client_file is not None:
                raise UsageError(f"{path}: no such client file") from None
            raw = {}  # the default file is optional; what is missing is said below
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise UsageError(
                f"{path}: not a readable client JSON ({type(error).__name__})"
            ) from None
        from_file = raw if isinstance(raw, dict) else {}
    identifier = client_id or from_file.get("client_id") or from_file.get("app_id")
    secret = from_file.get("client_secret") or from_file.get("app_secret")
    if client_secret_file is not None:
        try:
            secret = client_secret_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(
                f"{client_secret_file}: cannot read the secret ({type(error).__name__})"
            ) from None
    if not identifier or not secret:
        missing = "id" if not identifier else "secret"
        raise UsageError(
            f"no {title} app {missing}: save the app's id and secret in {path} as "
            '{"client_id": "…", "client_secret": "…"} (chmod 600), or pass --client-id and '
            "--client-secret-file"
        )
    return str(identifier), str(secret)


def paste_sign_in(
    *,
    title: str,
    url: str,
    redirect_uri: str,
    state: str,
    say: Callable[[str], None],
    ask: Callable[[str], str],
) -> str:
    """Show the consent address, take back the redirected one; returns the code in it."""
    say(f"Open this address in a browser on any computer, sign in to {title} and allow access:")
    say(url)
    say(
        f"The browser then goes to {redirect_uri}… and may show an error page: that is expected. "
        "Copy that whole address from the address bar and paste it here."
    )
    query = parse_qs(urlparse(ask("Address").strip()).query)
    if "error" in query:
        said = (query.get("error_description") or query["error"])[0]
        raise UsageError(
            f'{title} answered "{said}": access was not allowed; run the command again and allow it'
        )
    if "code" not in query:
        raise UsageError(
            "that address holds no sign-in code; paste the whole address the browser shows after "
            f"you allowed access (it starts with {redirect_uri})"
        )
    if query.get("state", [""])[0] != state:
        raise UsageError("that address belongs to another sign-in attempt; paste the newest one")
    return query["code"][0]


def _choose_page(pages: list[dict[str, str]]) -> dict[str, str]:
    typer.echo("Your Pages:")
    for number, page in enumerate(pages, start=1):
        typer.echo(f"  {number}. {page['name']} ({page['id']})")
    answer = typer.prompt("Post to Page number").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(pages):
        raise UsageError(f'"{answer}" is not one of the numbers 1 to {len(pages)}')
    return pages[int(answer) - 1]


def connect_facebook(
    client_file: ClientFileOption = None,
    client_id: ClientIdOption = None,
    client_secret_file: ClientSecretFileOption = None,
    page: Annotated[
        str | None,
        typer.Option(
            "--page", help="The id of the Page to post to (else you are asked).", show_default=False
        ),
    ] = None,
    redirect_uri: RedirectOption = None,
) -> None:
    """Connect a Facebook Page for Reels once; cron posts to it from then on.

    Needs a Meta app with Facebook Login, its redirect address (default https://localhost/)
    listed under Valid OAuth Redirect URIs, and a Page on which you can create content.

    Example: autoretto connect facebook --client-file ~/facebook_client.json --page 1234567890
    """
    from .platforms import facebook

    paths, config, db = _open()
    settings = {
        **facebook.FacebookPlatform.settings_defaults,
        **(config.platforms.get("facebook") or {}),
    }
    if redirect_uri:
        settings["redirect_uri"] = redirect_uri
    identifier, secret = read_client(
        paths=paths, settings=settings, client_file=client_file, client_id=client_id,
        client_secret_file=client_secret_file, title="Facebook",
    )  # fmt: skip
    state = secrets.token_urlsafe(16)
    code = paste_sign_in(
        title="Facebook",
        url=facebook.authorization_url(settings, client_id=identifier, state=state),
        redirect_uri=settings["redirect_uri"],
        state=state,
        say=typer.echo,
        ask=lambda prompt: typer.prompt(prompt),
    )
    account = facebook.connect(
        db, paths, settings, client_id=identifier, client_secret=secret, code=code, page=page,
        choose=_choose_page,
    )  # fmt: skip
    typer.echo(f'Connected the Facebook Page "{account.name}" ({account.account_id}).')
    typer.echo("Its Page token is sealed in the vault; it does not expire unless you change your")
    typer.echo("password, lose your role on the Page, or remove the app.")


def connect_linkedin(
    client_file: ClientFileOption = None,
    client_id: ClientIdOption = None,
    client_secret_file: ClientSecretFileOption = None,
    organization: Annotated[
        str | None,
        typer.Option(
            "--organization",
            help="Post as this organisation (urn:li:organization:ID) that you administer, "
            "instead of as yourself.",
            show_default=False,
        ),
    ] = None,
    redirect_uri: RedirectOption = None,
) -> None:
    """Connect LinkedIn once (as yourself, or an organisation you administer).

    Needs a LinkedIn app with "Sign In with LinkedIn using OpenID Connect" and "Share on
    LinkedIn" (the Community Management API for an organisation), and its redirect address
    (default https://localhost/) listed under Authorized redirect URLs. LinkedIn sign-ins last
    60 days; connect again before then.

    Example: autoretto connect linkedin --client-file ~/linkedin_client.json
    """
    from .platforms import linkedin

    linkedin.check_organization(organization)
    paths, config, db = _open()
    settings = {
        **linkedin.LinkedInPlatform.settings_defaults,
        **(config.platforms.get("linkedin") or {}),
    }
    if redirect_uri:
        settings["redirect_uri"] = redirect_uri
    identifier, secret = read_client(
        paths=paths, settings=settings, client_file=client_file, client_id=client_id,
        client_secret_file=client_secret_file, title="LinkedIn",
    )  # fmt: skip
    state = secrets.token_urlsafe(16)
    code = paste_sign_in(
        title="LinkedIn",
        url=linkedin.authorization_url(
            settings, client_id=identifier, state=state, organization=organization is not None
        ),
        redirect_uri=settings["redirect_uri"],
        state=state,
        say=typer.echo,
        ask=lambda prompt: typer.prompt(prompt),
    )
    account = linkedin.connect(
        db, paths, settings, client_id=identifier, client_secret=secret, code=code,
        organization=organization,
    )  # fmt: skip
    typer.echo(f'Connected LinkedIn: posting as "{account.name}" ({account.account_id}).')
    expires = account.meta.get("token_expires_at")
    if expires and not account.meta.get("refreshable"):
        typer.echo(
            f"LinkedIn sign-ins cannot be renewed unattended: connect again before {expires}."
        )


def register(connect_app: typer.Typer) -> None:
    """Add `facebook` and `linkedin` to the `connect` group."""
    command(connect_app, "facebook", connect_facebook, "Accounts")
    command(connect_app, "linkedin", connect_linkedin, "Accounts")
