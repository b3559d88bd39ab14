"""Commands for looking: `stats`, `stats collect`, `stats minute`, `report`.

`register(app)` adds them to the main `autoretto` app. Each command parses, calls one library
function (autoretto/stats.py, autoretto/report.py) and renders; a person's mistake is one line
on stderr and its exit code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .cli_support import JsonOption, handled, plain_table, print_json

COUNTERS = ("views", "likes", "comments", "reposts", "replies")

stats_app = typer.Typer(
    help="Public counters of published posts (views, likes, comments, reposts, replies).",
    invoke_without_command=True,
)


def _open() -> tuple[Any, Any]:
    """(config, db) of the current home."""
    from .config import load_config
    from .store import open_database

    config = load_config()
    return config, open_database(config.paths.database)


@stats_app.callback()
@handled
def stats_listing(
    context: typer.Context,
    channel: Annotated[
        str | None, typer.Option("--channel", "-c", help="Only this channel.", show_default=False)
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Per post its latest counters and their change over 24 h and 7 days; per channel totals.

    The counters come from `autoretto stats collect` (cron runs it hourly). Example:
    autoretto stats --channel lofi
    """
    if context.invoked_subcommand is not None:
        return
    from . import clock
    from .stats import summary

    config, db = _open()
    if channel is not None:
        config.channel(channel)  # a name that is not a channel is a mistake, not an empty list
    found = summary(db, channel, now=clock.now())
    if json_output:
        print_json(found)
        return
    _print_summary(found)


def _print_summary(found: dict[str, Any]) -> None:
    from rich.console import Console

    console = Console(highlight=False)
    if not found["posts"]:
        console.print("no counters yet: `autoretto stats collect` reads them (cron runs it hourly)")
        return
    read = found["collected_at"] or "never"
    table = plain_table(
        title=f"Post stats at {found['now']} (last read {read})", title_justify="left"
    )
    for column in ("post", "channel", "platform", "title", "views", "likes", "comments"):
        table.add_column(column, justify="right" if column in ("views", "likes") else "left")
    for column in ("reposts", "replies", "views 24h", "views 7d"):
        table.add_column(column, justify="right")
    for post in found["posts"]:
        table.add_row(
            str(post["post_id"]),
            post["channel"],
            post["platform"],
            post["title"] or "",
            *(_number(post[name]) for name in COUNTERS),
            _change(post["change_24h"], "views"),
            _change(post["change_7d"], "views"),
        )
    console.print(table)
    totals = plain_table(title="Per channel", title_justify="left")
    for column in ("channel", "posts", "views", "likes", "comments", "reposts", "replies"):
        totals.add_column(column, justify="left" if column == "channel" else "right")
    totals.add_column("views 24h", justify="right")
    totals.add_column("views 7d", justify="right")
    for entry in found["channels"]:
        totals.add_row(
            entry["channel"],
            str(entry["posts"]),
            *(_number(entry[name]) for name in COUNTERS),
            _change(entry["change_24h"], "views"),
            _change(entry["change_7d"], "views"),
        )
    console.print(totals)


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _change(change: dict[str, int | None] | None, name: str) -> str:
    if change is None or change[name] is None:
        return "-"
    return f"{change[name]:+,}"


@stats_app.command("collect")
@handled
def stats_collect(json_output: JsonOption = False) -> None:
    """Read the public counters of every published post and store them as a time series.

    YouTube (videos.list, 50 videos a call, counted in the same quota ledger as uploads),
    Bluesky and Threads where connected; the folder and webhook platforms have none. A
    platform that refuses or rate limits is skipped for this run with a note; the exit code
    stays 0. Cron runs it hourly at the installation's own minute: `autoretto stats minute`
    prints the crontab line.
    """
    from . import clock
    from .stats import collect

    config, db = _open()
    report = collect(config, db, clock.now())
    if json_output:
        print_json(report.as_json())
        return
    read = ", ".join(f"{name} {count}" for name, count in report.read.items()) or "nothing"
    typer.echo(f"read {read}; {report.stored} posts' counters moved ({report.seconds:.1f} s)")
    for name, count in report.gone.items():
        typer.echo(f"note: {name} no longer shows {count} of the posts asked for")
    for name, why in report.skipped.items():
        typer.echo(f"note: {name} skipped: {why}")


@stats_app.command("minute")
@handled
def stats_minute_command(json_output: JsonOption = False) -> None:
    """Print this installation's minute of the hour for `stats collect`, and its crontab line.

    The minute is drawn once per installation (never :00, so a thousand boxes do not all ask
    at once) and kept in the database. Example: autoretto stats minute
    """
    from .stats import crontab_line, stats_minute

    _, db = _open()
    minute = stats_minute(db)
    if json_output:
        print_json({"minute": minute, "crontab": crontab_line(minute)})
        return
    typer.echo(f"stats collect runs at :{minute:02d}; add this line to your crontab:")
    typer.echo(crontab_line(minute))


def report(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Where to write the page. Default: report.html in the home."
        ),
    ] = None,
    days: Annotated[
        int,
        typer.Option("--days", "-d", min=1, max=366, help="Show the last and the next N days."),
    ] = 7,
) -> None:
    """Write the report: one HTML page that opens from disk (no server, nothing fetched).

    At the top what needs a person; per channel a calendar of every slot of the last and next
    N days coloured by its decision (hover a slot for why); per release its platform links,
    counters and a views sparkline. Prints the page's path. Example: autoretto report --days 30
    """
    from . import clock
    from .errors import UsageError
    from .report import render

    config, db = _open()
    target = (out or config.paths.home / "report.html").expanduser()
    text = render(config, db, clock.now(), days=days)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(target)  # a browser open on the old page never sees half a page
    except OSError as error:
        raise UsageError(f"{target}: cannot write the report ({error.strerror})") from None
    typer.echo(str(target.absolute()))


def register(app: typer.Typer) -> None:
    """Add `stats …` and `report` to the main app."""
    app.add_typer(stats_app, name="stats")
    app.command("report")(handled(report))
