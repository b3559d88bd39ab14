"""`autoretto limits`: X's credit ledger and Bluesky's posts today.

`register(app)` adds it to the main app. It parses, calls the platforms' reports and renders.
"""

from __future__ import annotations

from typing import Any

import typer

from .cli_support import JsonOption, handled, plain_table, print_json


def _open() -> tuple[Any, Any, Any]:
    """(paths, config, db) of the current home."""
    from .config import Paths, home_dir, load_config
    from .store import open_database

    paths = Paths(home_dir())
    config = load_config(paths)
    return paths, config, open_database(paths.database)


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


def register(app: typer.Typer) -> None:
    """Add `limits` to the app."""
    app.command("limits")(handled(limits_command))
