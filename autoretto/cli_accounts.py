"""Commands for accounts: `connect NAME` (commands/connect.py), `accounts`, `disconnect`,
`doctor`.

`register(app)` adds them to the main `autoretto` app. Each command parses, calls one library
function and renders; a person's mistake (AutorettoError) is one line on stderr and its exit
code. No token is ever printed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .cli_manual import register as register_manual
from .cli_social import register as register_social
from .cli_support import JsonOption, handled, plain_table, print_json
from .commands.connect import register as register_connect
from .errors import NotFound, UsageError

GOOGLE_PERMISSIONS = "https://myaccount.google.com/permissions"


def _open() -> tuple[Any, Any, Any]:
    """(paths, config, db) of the current home."""
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


def accounts_command(json_output: JsonOption = False) -> None:
    """List connected accounts and their state (no secrets).

    Example: autoretto accounts --json
    """
    from rich.console import Console

    from .accounts import list_accounts

    _, _, db = _open()
    found = list_accounts(db)
    if json_output:
        print_json([a.to_json() for a in found])
        return
    if not found:
        typer.echo("No accounts connected. Run `autoretto connect youtube`.")
        return
    table = plain_table()
    for column in ("platform", "account", "id", "state", "since"):
        table.add_column(column, overflow="fold")
    for account in found:
        state = (
            account.state if account.state == "connected" else f"{account.state}: {account.reason}"
        )
        table.add_row(
            account.platform, account.name, account.account_id, state, account.connected_at
        )
    Console().print(table)


def disconnect_command(
    platform: Annotated[str, typer.Argument(help="The platform, e.g. youtube.")],
) -> None:
    """Delete our copy of an account's tokens (it says how to revoke access at the platform).

    Example: autoretto disconnect youtube
    """
    from .accounts import disconnect
    from .platforms import REGISTRY

    if platform not in REGISTRY or not REGISTRY[platform].needs_account:
        names = ", ".join(name for name, cls in REGISTRY.items() if cls.needs_account)
        raise UsageError(f'"{platform}" has no account to disconnect (accounts: {names})')
    _, _, db = _open()
    removed = disconnect(db, platform)
    if removed is None:
        raise NotFound(f"no {platform} account is connected")
    typer.echo(f'Deleted Autoretto\'s copy of the {platform} account "{removed.name}".')
    if platform == "youtube":
        typer.echo(f"Google still lists Autoretto until you remove it at {GOOGLE_PERMISSIONS}")


def doctor_command(
    json_output: JsonOption = False,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm",
            help="Also load librosa and compile its beat tracking now (numba, up to a minute "
            "once per install), so the first make does not wait for it.",
        ),
    ] = False,
) -> None:
    """Check the home: paths, where the vault key is kept, accounts and their state, each
    connected platform's API version with the date it stops being served, Suno's credits and
    Gemini's models with their shutdown dates (within 30 days: a warning; past: a problem).

    Exits 1 when something needs a person. Example: autoretto doctor --warm
    """
    from .accounts import health
    from .config import Paths, home_dir

    facts = health(Paths(home_dir()))
    if warm:
        from .pipeline.beats import warm as warm_beats

        facts["warmed_seconds"] = round(warm_beats(), 1)
    if json_output:
        print_json(facts)
    else:
        _render_doctor(facts)
    if facts["problems"]:
        raise typer.Exit(1)


def _render_doctor(facts: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    console.print(f"home      {facts['home']}", markup=False)
    for name in ("config", "database"):
        item = facts[name]
        console.print(
            f"{name:<9} {item['path']} ({'ok' if item['ok'] else 'missing'})", markup=False
        )
    vault = facts["vault"]
    key = {
        "keyring": f"in the system keyring ({vault['keyring']})",
        "file": f"in {vault['where']} (mode {vault['file_mode']})",
        "none": "not created yet (made at the first `autoretto connect`)",
    }[vault["key"]]
    console.print(f"vault key {key}", markup=False)
    usable = "usable" if vault["keyring_usable"] else "not usable here (cron usually has none)"
    console.print(f"keyring   {usable}", markup=False)
    for account in facts["accounts"]:
        console.print(
            f"account   {account['platform']}: {account['name']} ({account['account_id']}) "
            f"{account['state']}",
            markup=False,
        )
    if facts["journal"]["path"]:
        console.print(f"journal   {facts['journal']['path']}", markup=False)
    if "warmed_seconds" in facts:
        console.print(
            f"librosa   loaded and compiled in {facts['warmed_seconds']:g} s", markup=False
        )
    for version in facts["api_versions"]:
        ends = version["ends"] or "no end announced"
        if version["estimated"]:
            ends += " (estimated)"
        console.print(
            f"api       {version['platform']}: version {version['version']}, served until {ends}",
            markup=False,
        )
    for provider in facts["providers"]:
        if provider["name"] == "suno":
            credits = provider["credits"]
            left = (
                f"{credits['credits_left']} credits left (monthly limit "
                f"{credits.get('monthly_limit')}, used {credits.get('monthly_usage')})"
                if credits
                else "not reachable"
            )
            console.print(f"suno      {provider['base_url']}: {left}", markup=False)
        else:
            for model in provider["models"]:
                ends = f"shut down on {model['ends']}" if model["ends"] else "no shutdown announced"
                console.print(
                    f"gemini    {model['setting']} {model['model']}: {ends}", markup=False
                )
    for warning in facts["warnings"]:
        console.print(f"warning   {warning}", markup=False, style="yellow")
    for problem in facts["problems"]:
        console.print(f"problem   {problem}", markup=False, style="bold red")
    if not facts["problems"] and not facts["warnings"]:
        console.print("all good", style="green")


def register(app: typer.Typer) -> None:
    """Add `connect`, `accounts`, `disconnect` and `doctor` to the main app."""
    register_connect(app)
    register_social(app)
    register_manual(app)
    app.command("accounts")(handled(accounts_command))
    app.command("disconnect")(handled(disconnect_command))
    app.command("doctor")(handled(doctor_command))
