"""The job: `run-due` (what cron runs), `post-now`, and what they did: `status`, `decisions`,
`posts`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..cli_support import (
    ChannelOption,
    JsonOption,
    NowOption,
    TerminalProgress,
    check_channel,
    command,
    console,
    count,
    id_option,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    printable,
    say,
)

if TYPE_CHECKING:
    from ..config import Config

SECTION = "The job"

POST_STATES = ("queued", "sending", "published", "may_be_live", "failed", "needs_person")


def run_due(
    channel: ChannelOption = None,
    now: NowOption = None,
    no_make: Annotated[
        bool, typer.Option("--no-make", help="Post only: make no episode in this run.")
    ] = False,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait", help="Do not wait in-process for paced posts; a later run sends them."
        ),
    ] = False,
    json_output: JsonOption = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Say what this run would claim, make and post; change nothing, send nothing.",
        ),
    ] = False,
) -> None:
    """Serve every channel's due slot (what cron runs hourly), then top up the stocks.

    With --channel it is the on-demand button: the same claim as cron, so pressing it while
    cron runs is safe. On a terminal it shows each step (a slot claimed, a post sent, a make's
    progress) on stderr; under cron it prints only its summary. Exit 0 when the run did its
    job, even if nothing was due; 4 when a post failed for now (the next run tries it again);
    1 when a person must look; 3 while posting is held.

    Examples:
      autoretto run-due --channel lofi
      autoretto run-due --dry-run
    """
    from ..engine.preview import preview_run_due
    from ..engine.run_due import run_due as run

    home = open_home(now=now)
    check_channel(home.config, channel)
    if dry_run:
        preview = preview_run_due(
            home.config, home.db, only_channel=channel, make=not no_make, wait=not no_wait
        )
        if json_output:
            print_json(preview.as_json())
        else:
            _show_preview(preview)
        raise typer.Exit(preview.exit_code)
    progress = TerminalProgress.when_watched()
    try:
        report = run(
            home.config,
            home.db,
            only_channel=channel,
            make=not no_make,
            wait=not no_wait,
            progress=progress,
        )
    finally:
        if progress is not None:
            progress.close()
    if json_output:
        print_json(report.as_json())
    else:
        _show_report(home.config, report)
    raise typer.Exit(report.exit_code)


def _show_report(config: Config, report: Any) -> None:
    from ..decisions import decision_words

    zones = {c.name: c.timezone for c in config.cadences}
    for decision in report.decisions:
        say(decision_words(decision))
    for waiting in report.waiting:
        say(decision_words({**waiting, "timezone": zones.get(waiting["channel"])}))
    for episode_id in report.made:
        say(f"made episode {episode_id}")
    for note in report.notes:
        say(f"note: {note}")
    if report.held:
        say(f"POSTING IS HELD: {report.held}", err=True)
    for error in report.errors:
        say(f"error: {error}", err=True)
    if report.sent:
        say(f"sent: {count(len(report.sent), 'request')} went out (posts {_ids(report.sent)})")
    for owed in report.owed:
        say(f"tried again later: {owed}")
    quiet = report.decisions or report.errors or report.held or report.made or report.waiting
    if not (quiet or report.sent or report.owed):
        say(f"nothing due ({count(report.channels, 'channel')} checked)")


def _ids(numbers: list[int]) -> str:
    return ", ".join(str(number) for number in numbers)


def _show_preview(preview: Any) -> None:
    say(f"dry run at {preview.now:%Y-%m-%dT%H:%M:%SZ}: nothing is changed, nothing is sent")
    if preview.held:
        say(f"POSTING IS HELD: {preview.held}", err=True)
        return
    for entry in preview.would:
        where = " ".join(entry[key] for key in ("channel", "slot", "platform") if entry[key])
        say(f"{where}: would {entry['what']}" if where else f"would {entry['what']}")
    if not preview.would:
        say(f"nothing due ({count(preview.channels, 'channel')} checked)")


def post_now(
    channel: Annotated[str, typer.Argument(help="The channel to post for.")],
    episode: Annotated[
        int | None,
        id_option("--episode", "-e", help="This episode instead of the oldest ready."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Post a ready episode now, outside the slots, to the channel's platforms.

    Uses the same post records as the slots: a post-now and a slot never both post one episode
    to one platform. It goes out 20 seconds to 2 minutes after the command (a human pace).
    Exit 0 when every platform has it; 4 when a post failed for now; 1 when one needs you.

    Example: autoretto post-now lofi --episode 12
    """
    from ..clock import iso
    from ..engine.post_now import post_now as post
    from ..engine.post_now import post_now_exit

    home = open_home()

    def announce(moment: Any) -> None:
        if not json_output:
            say(f"going out at {iso(moment)} (a human pace, not on the second)")

    chosen, results = post(home.config, home.db, channel, episode_id=episode, announce=announce)
    if json_output:
        print_json(
            {
                "episode_id": chosen["id"],
                "results": [
                    {
                        "platform": r.platform,
                        "outcome": r.outcome,
                        "reason": r.reason,
                        "post_id": r.post_id,
                        "url": r.url,
                    }
                    for r in results
                ],
            }
        )
    else:
        for r in results:
            link = f" {r.url}" if r.url else ""
            say(f"episode {chosen['id']} {r.platform}: {r.outcome}{link} - {r.reason}")
    raise typer.Exit(post_now_exit(results))


def status(
    channel: ChannelOption = None,
    json_output: JsonOption = False,
    now: NowOption = None,
) -> None:
    """Per channel: the stamp, the due slot, recent and next slots, ready episodes.

    At the top: a held restore, platforms that cannot post (not connected, refused, or failing
    slot after slot) with the command that fixes each, stocks that cover fewer than three
    coming slots, sign-ins that end soon, open incidents, posts that need you, slots that wait
    for a busy platform and imports cut short. Slot times are the channel's own (its zone is
    under its name); the states are the words of `autoretto decisions`; `runs out` is the
    slot after which the channel has nothing left to post (ready episodes and unused tracks).

    Example: autoretto status --channel lofi
    """
    from .. import clock
    from ..engine.status import status as build_status

    home = open_home(now=now)
    check_channel(home.config, channel)
    report = build_status(home.config, home.db, clock.now(), only_channel=channel)
    if json_output:
        print_json(report)
        return
    table = plain_table(title=f"Autoretto at {report['now']}", title_justify="left")
    for column in ("channel", "stamp", "due", "ready", "recent", "next", "runs out"):
        table.add_column(column)
    for entry in report["channels"]:
        recent = "\n".join(f"{s['slot']} {s['slot_state']}" for s in entry["recent"])
        upcoming = "\n".join(s["slot"] for s in entry["upcoming"])
        due = entry["due"]["slot"] if entry["due"] else "-"
        if entry["claim"]:
            due += f"\nclaimed by {entry['claim']['run_id']}"
        table.add_row(
            f"{entry['channel']}\n{entry['timezone']}",
            entry["stamp"] or "never",
            due,
            str(entry["ready"]),
            recent,
            upcoming,
            _runs_out(entry["stock"]),
        )
    shown = console()
    lines = []
    if report["held"]:
        lines.append(("bold red", f"POSTING IS HELD: {report['held']}"))
    lines += [("bold red", trouble["line"]) for trouble in report["trouble"]]
    lines += [
        ("yellow", f"stock low: {entry['stock']['line']}")
        for entry in report["channels"]
        if entry["stock"] and entry["stock"]["low"]
    ]
    lines += [("yellow", f"sign-in ending: {w['reason']}") for w in report["expiring"]]
    lines += [("yellow", f"{w['platform']}: {w['reason']}") for w in report["platform_warnings"]]
    lines += [
        ("bold red", f"incident {i['id']} open since {i['opened_at']}: {i['reason'] or ''}")
        for i in report["incidents"]
    ]
    lines += [
        ("yellow", f"post {p['id']} {p['channel']} {p['platform']} {p['state']}: {p['reason']}")
        for p in report["needs_person"]
    ]
    lines += [
        (
            "yellow",
            f"episode {e['id']} {e['channel']}: the import of {e['source']} was interrupted; "
            "the next run-due cleans it up",
        )
        for e in report["interrupted"]
    ]
    for style, line in lines:
        shown.print(printable(line), style=style, markup=False)
    shown.print(table)


def _runs_out(stock: dict[str, Any] | None) -> str:
    """The `runs out` cell: after which slot the stock is gone, "-" when it never is."""
    if stock is None or stock["slots_covered"] is None:
        return "-"
    if stock["runs_out_after"] is not None:
        return f"after {stock['runs_out_after']['shown']}"
    return "now" if stock["slots_covered"] == 0 else f"{stock['slots_covered']}+ slots"


def decisions(
    channel: ChannelOption = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only slots at or after this time (ISO-8601).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Every slot decision: posted, missed, nothing_ready, waiting_for_approval,
    refused_by_limit, failed, dry_run (a slot that waits for a busy platform shows in
    `status`). A slot is the channel's local time; its zone is under the channel's name.

    Example: autoretto decisions --channel lofi --since 2026-11-01T00:00:00Z
    """
    from ..clock import parse_instant
    from ..engine.status import list_decisions

    since_at = parse_instant(since, what="--since") if since else None
    home = open_home()
    check_channel(home.config, channel, cadences=True)
    found = list_decisions(home.db, channel=channel, since=since_at)
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found("no decision yet" if channel is None and since is None else "no decision")
        return
    zones = {c.name: c.timezone for c in home.config.cadences}
    table = plain_table()
    for column in ("channel", "slot", "platform", "outcome", "post", "reason"):
        table.add_column(column)
    for d in found:
        zone = zones.get(d["channel"])
        table.add_row(
            d["channel"] + (f"\n{zone}" if zone else ""),
            d["slot"],
            d["platform"],
            d["outcome"],
            str(d["post_id"] or ""),
            d["reason"] or "",
        )
    console().print(table)


def posts(
    channel: ChannelOption = None,
    state: Annotated[
        str | None,
        typer.Option("--state", help=f"{', '.join(POST_STATES[:-1])} or {POST_STATES[-1]}."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Every post of an episode to a platform, with its state and link (or why not).

    Example: autoretto posts --state needs_person
    """
    from ..errors import UsageError, shown
    from ..posts import list_posts, post_json

    if state is not None and state not in POST_STATES:
        raise UsageError(
            f"--state: {shown(state)} is not a post state; use one of {', '.join(POST_STATES)}"
        )
    home = open_home()
    check_channel(home.config, channel)
    found = [post_json(p) for p in list_posts(home.db, channel=channel, state=state)]
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found(f"no {state} post" if state else "no post yet")
        return
    table = plain_table()
    for column in ("id", "episode", "channel", "platform", "state", "tries", "url / reason"):
        table.add_column(
            column, justify="right" if column in ("id", "episode", "tries") else "left"
        )
    for p in found:
        table.add_row(
            str(p["id"]),
            str(p["episode_id"]),
            p["channel"],
            p["platform"],
            p["state"],
            str(p["attempts"]),
            p["url"] or p["reason"] or "",
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    command(app, "run-due", run_due, SECTION)
    command(app, "post-now", post_now, SECTION)
    command(app, "status", status, SECTION)
    command(app, "decisions", decisions, SECTION)
    command(app, "posts", posts, SECTION)
