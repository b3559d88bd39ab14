"""Accounts: `accounts`, `disconnect`, `doctor` (is this home ready?), and the `connect`
group."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..cli_support import (
    JsonOption,
    command,
    console,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    say,
)

SECTION = "Accounts"


def accounts(json_output: JsonOption = False) -> None:
    """List connected accounts and their state (no secrets).

    Example: autoretto accounts --json
    """
    from ..accounts import list_accounts

    found = list_accounts(open_home().db)
    if json_output:
        print_json([a.to_json() for a in found])
        return
    if not found:
        nothing_found("no account is connected", "`autoretto connect youtube`, for one")
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
    console().print(table)


def disconnect(
    platform: Annotated[str, typer.Argument(help="The platform, e.g. youtube.")],
) -> None:
    """Delete our copy of an account's tokens (it says how to revoke access at the platform).

    Example: autoretto disconnect youtube
    """
    from ..accounts import disconnect as forget
    from ..errors import NotFound, UsageError
    from ..platforms import REGISTRY

    if platform not in REGISTRY or not REGISTRY[platform].needs_account:
        names = ", ".join(name for name, cls in REGISTRY.items() if cls.needs_account)
        raise UsageError(f'"{platform}" has no account to disconnect (accounts: {names})')
    removed = forget(open_home().db, platform)
    if removed is None:
        raise NotFound(f"no {platform} account is connected")
    say(f'Deleted Autoretto\'s copy of the {platform} account "{removed.name}".')
    if REGISTRY[platform].disconnect_note:
        say(REGISTRY[platform].disconnect_note)


def doctor(
    json_output: JsonOption = False,
    warm: Annotated[
        bool,
        typer.Option(
            "--warm",
            help="Also track the beats of a few seconds of clicks once (the make's audio "
            "libraries loaded from disk), and say how long it took.",
        ),
    ] = False,
) -> None:
    """Check the home: paths, the config (missing, or there but wrong), where the vault key is
    kept, accounts and their state, each connected platform's API version with the date it
    stops being served, Suno's credits and Gemini's models with their shutdown dates (within
    30 days: a warning; past: a problem), and whether posting is held after a restore.

    Exits 0 when all is well, 2 when the config or the database is missing or wrong, 3 when
    posting is held, 1 for any other problem.

    Example: autoretto doctor --warm
    """
    from .. import clock
    from ..config import Paths, home_dir
    from ..doctor import check, exit_code

    clock.now()  # a clock out of range (AUTORETTO_NOW) stops here
    facts = check(Paths(home_dir()), warm=warm)
    if json_output:
        print_json(facts)
    else:
        _show_doctor(facts)
    raise typer.Exit(exit_code(facts))


def _show_doctor(facts: dict[str, Any]) -> None:
    shown = console()

    def line(text: str, style: str | None = None) -> None:
        from ..cli_support import printable

        shown.print(printable(text), markup=False, style=style, soft_wrap=True)

    line(f"home      {facts['home']}")
    config = facts["config"]
    state = {
        "ok": "ok",
        "missing": "missing: run `autoretto init`",
        "invalid": "invalid: see the problem below",
    }[config["state"]]
    line(f"config    {config['path']} ({state})")
    database = facts["database"]
    line(f"database  {database['path']} ({'ok' if database['ok'] else 'missing'})")
    if database.get("clock_offset_seconds") is not None:
        apart = database["clock_offset_seconds"]
        side = "ahead of" if apart > 0 else "behind"
        line(f"clock     this host's is {abs(apart):.1f} s {side} the database's (limit 30 s)")
    media = facts["media"]
    if media["url"]:
        line(f"media     {media['url']} ({'ok' if media['ok'] else 'not answering'}; cache in "
             f"{media['folder']}/cache)")  # fmt: skip
    else:
        line(f"media     {media['folder']}")
    vault = facts["vault"]
    key = {
        "keyring": f"in the system keyring ({vault['keyring']})",
        "file": f"in {vault['where']} (mode {vault['file_mode']})",
        "environment": f"from {vault['where']} (the environment)",
        "none": "not created yet (made at the first `autoretto connect`)",
    }[vault["key"]]
    if vault.get("variable") == "AUTORETTO_VAULT_KEY_FILE":
        key += (
            ", named by AUTORETTO_VAULT_KEY_FILE"
            if vault["key"] == "file"
            else f": {vault['where']}, named by AUTORETTO_VAULT_KEY_FILE"
        )
    line(f"vault key {key}")
    usable = "usable" if vault["keyring_usable"] else "not usable here (cron usually has none)"
    line(f"keyring   {usable}")
    for account in facts["accounts"]:
        line(
            f"account   {account['platform']}: {account['name']} ({account['account_id']}) "
            f"{account['state']}"
        )
    if facts["journal"]["path"]:
        line(f"journal   {facts['journal']['path']}")
    if "warmed_seconds" in facts:
        line(f"beats     tracked once in {facts['warmed_seconds']:g} s")
    for version in facts["api_versions"]:
        ends = version["ends"] or "no end announced"
        if version["estimated"]:
            ends += " (estimated)"
        line(f"api       {version['platform']}: version {version['version']}, served until {ends}")
    for provider in facts["providers"]:
        if provider["name"] == "suno":
            credits = provider["credits"]
            left = (
                f"{credits['credits_left']} credits left (monthly limit "
                f"{credits.get('monthly_limit')}, used {credits.get('monthly_usage')})"
                if credits
                else "not reachable"
            )
            line(f"suno      {provider['base_url']}: {left}")
        else:
            for model in provider["models"]:
                ends = f"shut down on {model['ends']}" if model["ends"] else "no shutdown announced"
                line(f"gemini    {model['setting']} {model['model']}: {ends}")
    for warning in facts["warnings"]:
        line(f"warning   {warning}", "yellow")
    for problem in facts["problems"]:
        line(f"problem   {problem}", "bold red")
    if not facts["problems"] and not facts["warnings"]:
        line("all good", "green")


def register(app: typer.Typer) -> None:
    from .connect import register as register_connect

    register_connect(app)
    command(app, "accounts", accounts, SECTION)
    command(app, "disconnect", disconnect, SECTION)
    command(app, "doctor", doctor, SECTION)
