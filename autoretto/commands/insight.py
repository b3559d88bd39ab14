"""How it goes: `stats` (and `stats collect`, `stats minute`), `report`, `limits`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..cli_support import (
    ChannelOption,
    JsonOption,
    check_channel,
    command,
    console,
    count,
    group,
    handled,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    say,
)

if TYPE_CHECKING:
    from ..platforms.base import LimitsView

SECTION = "How it goes"

COUNTERS = ("views", "likes", "comments", "reposts", "replies")


def stats_listing(
    context: typer.Context,
    channel: ChannelOption = None,
    json_output: JsonOption = False,
) -> None:
    """Public counters of published posts: per post its latest views, likes, comments,
    reposts and replies and their change over 24 h and 7 days; per channel the totals.

    The counters come from `autoretto stats collect` (cron runs it hourly).

    Example: autoretto stats --channel lofi
    """
    if context.invoked_subcommand is not None:
        return
    from .. import clock
    from ..stats import summary

    home = open_home()
    check_channel(home.config, channel)
    found = summary(home.db, channel, now=clock.now())
    if json_output:
        print_json(found)
        return
    _show_summary(found)


def _show_summary(found: dict[str, Any]) -> None:
    shown = console()
    if not found["posts"]:
        nothing_found(
            "no counters yet", "`autoretto stats collect` reads them; cron runs it hourly"
        )
        return
    read = found["collected_at"] or "never"
    table = plain_table(
        title=f"Post stats at {found['now']} (last read {read})", title_justify="left"
    )
    for column in ("post", "channel", "platform", "title"):
        table.add_column(column, justify="right" if column == "post" else "left")
    for column in (*COUNTERS, "views 24h", "views 7d"):
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
    shown.print(table)
    totals = plain_table(title="Per channel", title_justify="left")
    for column in ("channel", "posts", *COUNTERS, "views 24h", "views 7d"):
        totals.add_column(column, justify="left" if column == "channel" else "right")
    for entry in found["channels"]:
        totals.add_row(
            entry["channel"],
            str(entry["posts"]),
            *(_number(entry[name]) for name in COUNTERS),
            _change(entry["change_24h"], "views"),
            _change(entry["change_7d"], "views"),
        )
    shown.print(totals)


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _change(change: dict[str, int | None] | None, name: str) -> str:
    if change is None or change[name] is None:
        return "-"
    return f"{change[name]:+,}"


def stats_collect(json_output: JsonOption = False) -> None:
    """Read the public counters of every published post and store them as a time series.

    YouTube (videos.list, 50 videos a call, counted in the same quota ledger as uploads),
    Bluesky and Threads where connected; the folder and webhook platforms have none. A
    platform that refuses or rate limits is skipped for this run with a note; the exit code
    stays 0. Cron runs it hourly at the installation's own minute: `autoretto stats minute`
    prints the crontab line.

    Example: autoretto stats collect
    """
    from .. import clock
    from ..stats import collect

    home = open_home()
    report = collect(home.config, home.db, clock.now())
    if json_output:
        print_json(report.as_json())
        return
    read = ", ".join(f"{name} {number}" for name, number in report.read.items()) or "nothing"
    moved = count(report.stored, "post's counters", "posts' counters")
    say(f"read {read}; {moved} moved ({report.seconds:.1f} s)")
    for name, number in report.gone.items():
        say(f"note: {name} no longer shows {number} of the posts asked for")
    for name, why in report.skipped.items():
        say(f"note: {name} skipped: {why}")


def stats_minute(json_output: JsonOption = False) -> None:
    """Print this installation's minute of the hour for `stats collect`, and its crontab line.

    The minute is drawn once per installation (never :00, so a thousand boxes do not all ask
    at once) and kept in the database.

    Example: autoretto stats minute
    """
    from ..stats import crontab_line
    from ..stats import stats_minute as minute_of

    minute = minute_of(open_home().db)
    if json_output:
        print_json({"minute": minute, "crontab": crontab_line(minute)})
        return
    say(f"stats collect runs at :{minute:02d}; add this line to your crontab:")
    say(crontab_line(minute))


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
    N days coloured by what became of it, beside it the list of what went wrong (each linked
    to its slot); per release its platform links, counters and a views sparkline. Prints the
    page's path.

    Example: autoretto report --days 30
    """
    from .. import clock
    from ..report import write_report

    home = open_home()
    target = (out or home.paths.home / "report.html").expanduser()
    say(str(write_report(home.config, home.db, clock.now(), days=days, target=target)))


def limits(json_output: JsonOption = False) -> None:
    """Show X's credit ledger today (reserved, charged, caps, any pause) and Bluesky's posts.

    A post's credits are reserved when it is queued and charged once it is live. When X
    says the prepaid credits are used up, X posting pauses for every channel for 2 hours.

    Example: autoretto limits --json
    """
    from ..clock import now
    from ..platforms import limits_reports, platform_class

    home = open_home()
    reports = limits_reports(home.db, now(), home.config.platforms)
    if json_output:
        print_json(reports)
        return
    for name, report in reports.items():
        _show_limits(platform_class(name).limits_view(report))


def _show_limits(view: LimitsView) -> None:
    shown = console()
    for number, line in enumerate(view.lines):
        stop = view.stopped and number == 0
        shown.print(line, style="bold red" if stop else None, markup=False)
    if view.rows:
        table = plain_table()
        for number, column in enumerate(view.columns):
            table.add_column(column, justify="left" if number == 0 else "right")
        for cells in view.rows:
            table.add_row(*cells)
        shown.print(table)


def register(app: typer.Typer) -> None:
    stats_app = group(
        "stats",
        help=stats_listing.__doc__ or "",
        invoke_without_command=True,
        no_args_is_help=False,
    )
    stats_app.callback()(handled(stats_listing))
    command(stats_app, "collect", stats_collect, SECTION)
    command(stats_app, "minute", stats_minute, SECTION)
    app.add_typer(stats_app, name="stats", rich_help_panel=SECTION)
    command(app, "report", report, SECTION)
    command(app, "limits", limits, SECTION)
