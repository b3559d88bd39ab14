"""The page: `serve` and `review`.

`serve` is the only command that loads
the web stack (Starlette, uvicorn, Jinja2), inside the function; `review` signs a link with the
standard library, so neither slows `status` or `run-due`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..cli_support import JsonOption, command, id_argument, open_home, print_json
from ..web import DEFAULT_HOST, DEFAULT_PORT

LOGIN_FILE = "serve.login"

SECTION = "The page"


def serve(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Listen here. Anything but this machine (127.0.0.1) needs a password or a "
            "token in the config's serve table first.",
        ),
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port.")] = DEFAULT_PORT,
    hash_password: Annotated[
        bool,
        typer.Option(
            "--hash-password",
            help="Ask for a password, print the password_hash line for the config, then exit.",
        ),
    ] = False,
) -> None:
    """Serve the page: the calendar live, each episode's page with Approve, Hold and Post now,
    posts that may be live, the restore hold, incidents, accounts to reconnect, the limits.

    Sign in with the address it prints (it holds a token made for this start), or with the
    token or password of the config's serve table.

    Example: autoretto serve --port 8780
    """
    from ..web.settings import ServeSettings
    from ..web.settings import hash_password as make_hash

    if hash_password:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
        if len(password) < 10:
            from ..errors import UsageError

            raise UsageError("choose a password of at least 10 characters")
        typer.echo("Put this line under [serve] in autoretto.toml:")
        typer.echo(f'password_hash = "{make_hash(password)}"')
        return
    config = open_home().config  # a missing home or a bad config stops here, before listening
    settings = ServeSettings.of(config)
    local = _is_loopback(host)
    if not local and not settings.has_secret:
        from ..errors import UsageError

        raise UsageError(
            f"--host {host}: the page would be open beyond this machine, so it needs a "
            f"password or a token first: set [serve] password_hash (`autoretto serve "
            f"--hash-password` prints it) or [serve] token_env in {config.path}"
        )
    settings.fixed_token()  # a token_env that names an unset variable stops here
    listening = _bind(host, port)
    bound_at, bound = listening.getsockname()[:2]
    _run(config, settings, listening, host=host, port=bound, local=local, bound_at=bound_at)


def _is_loopback(host: str) -> bool:
    from ..web.settings import is_loopback

    return is_loopback(host)


def _headless() -> bool:
    """No screen to open the page on here: no X or Wayland display, or a shell over ssh."""
    import os

    has_screen = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    return not has_screen or bool(os.environ.get("SSH_CONNECTION"))


def _bind(host: str, port: int) -> Any:
    import socket

    from ..errors import UsageError

    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
        listening = socket.socket(family, kind, protocol)
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(128)
    except OSError as error:
        raise UsageError(
            f"--host {host} --port {port}: cannot listen there ({error.strerror or error}); "
            "choose another --port, or stop what holds it"
        ) from None
    return listening


def _run(
    config: Any, settings: Any, listening: Any, *, host: str, port: int, local: bool, bound_at: str
) -> None:
    import logging
    import secrets
    from urllib.parse import urlsplit

    import uvicorn

    from ..web.app import create_app, loopback_hosts
    from ..web.server import guarded_protocol, sized_for_files
    from ..web.settings import address

    for name in ("autoretto.web", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.INFO)
    token = secrets.token_urlsafe(32)
    allowed = None  # beyond this machine: any name (a tunnel's, the LAN's)
    if local:
        # The names it answers to follow where it listens (127.0.0.2 is this machine too);
        # any other name is refused (DNS rebinding).
        allowed = loopback_hosts(port, host, bound_at)
        if settings.url:  # the creator's own tunnel to this port, by its public name
            allowed.add(urlsplit(settings.url).netloc.lower())
    app = create_app(config, login_token=token, allowed_hosts=allowed)
    max_connections, backlog = sized_for_files()
    # Bound to every address, it is also at 127.0.0.1; beyond this machine, at [serve] public_url.
    here = address(DEFAULT_HOST if host in ("0.0.0.0", "::") else host, port)
    base = settings.url.rstrip("/") if settings.url and not local else here
    sign_in = f"{base}/login?token={token}"
    login_file = config.paths.home / LOGIN_FILE
    _write_private(login_file, sign_in + "\n")
    typer.echo(f"Autoretto's page is at {base}/ (Ctrl-C stops it)")
    if local and _headless():
        from ..oauth import loopback_recipe

        # The tunnel's far end is where it listens (127.0.0.2 is not localhost's 127.0.0.1).
        target = "localhost" if host in ("localhost", DEFAULT_HOST) else bound_at
        shown = f"[{target}]" if ":" in target else target
        typer.echo("No screen here? On your own computer, open a terminal and run (keep it open):")
        typer.echo(f"  {loopback_recipe(port, shown)}")
        typer.echo(f"then open {here}/ (or the sign-in address) in that computer's browser")
    if sys.stdout.isatty():
        typer.echo(f"Sign in at {sign_in}")
    else:
        # Not a terminal (systemd, a log file): the sign-in address stays out of the log.
        typer.echo(f"The sign-in address is in {login_file} (readable only by you)")
    sys.stdout.flush()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_config=None,
            access_log=False,  # Guard logs each request without its query (tokens, signatures)
            server_header=False,
            date_header=False,  # the one clock is autoretto.clock, not the system's
            lifespan="off",
            timeout_graceful_shutdown=5,
            # uvicorn's h11 protocol with a deadline on each request and a cap on the open
            # connections (web/server.py): slow clients cannot keep others out.
            http=guarded_protocol(
                request_timeout=settings.request_timeout.total_seconds(),
                max_connections=max_connections,
            ),
            ws="none",  # the page has no websocket; an upgrade is answered as plain HTTP
            backlog=backlog,
        )
    )
    try:
        server.run(sockets=[listening])
    finally:
        login_file.unlink(missing_ok=True)
        listening.close()


def _write_private(path: Path, text: str) -> None:
    import os

    partial = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as writer:
        writer.write(text)
    os.replace(partial, path)


def review(
    episode_id: Annotated[int, id_argument("The episode to show.")],
    valid_for: Annotated[
        str | None,
        typer.Option(
            "--for", help="How long the link works (30m, 12h, 3d). Default: review_for, or 3d."
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Print a signed link to one episode's page, for a collaborator: whoever holds it can
    watch that episode and approve or hold it, nothing else, until it expires.

    The link points at the serve table's public_url (default http://127.0.0.1:8780, this
    machine only: it warns so).

    Example: autoretto review 12 --for 2d
    """
    from ..clock import iso, now, parse_duration
    from ..episodes import get_episode
    from ..errors import UsageError
    from ..web.links import review_path, signing_key
    from ..web.settings import ServeSettings

    home = open_home()
    config = home.config
    episode = get_episode(home.db, episode_id)
    settings = ServeSettings.of(config)
    try:
        lifetime = parse_duration(valid_for) if valid_for is not None else settings.review_for
    except ValueError as error:
        raise UsageError(f"--for: {error}") from None
    until = now() + lifetime
    link = settings.review_base() + review_path(signing_key(config.paths.home), episode_id, until)
    if settings.review_base_is_local():
        # On stderr: the link (or the JSON) stays alone on stdout for a script.
        typer.echo(
            f"warning: this link points at {settings.review_base()}, this machine only: a "
            "collaborator cannot open it; set [serve] public_url in "
            f"{config.path} to the address where they reach the page (README: The page)",
            err=True,
        )
    if json_output:
        print_json({"episode_id": episode_id, "url": link, "until": iso(until)})
        return
    typer.echo(link)
    typer.echo(
        f"works until {iso(until)} for episode {episode_id} ({episode['title']}): watch it, "
        "approve or hold it; nothing else"
    )


def register(app: typer.Typer) -> None:
    command(app, "serve", serve, SECTION)
    command(app, "review", review, SECTION)
