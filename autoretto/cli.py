"""The `autoretto` command: parses, calls one library function, renders.

Every command maps a person's mistake (AutorettoError) to one line on stderr and its exit code;
anything else is a bug and keeps its traceback. `--json` output is a stable interface.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from . import __version__
from .cli_accounts import register as register_account_commands
from .cli_extras import register as register_extra_commands
from .cli_insight import register as register_insight_commands
from .cli_support import (
    Commands,
    JsonOption,
    handled,
    id_argument,
    id_option,
    plain_table,
    print_json,
)
from .cli_web import register as register_web_commands

app = typer.Typer(
    cls=Commands,
    name="autoretto",
    help="Make music videos and publish each channel's slots, exactly once, from cron.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,
)
episode_app = typer.Typer(help="Look at, import and make single episodes.", no_args_is_help=True)
config_app = typer.Typer(help="Check the config file.", no_args_is_help=True)
app.add_typer(episode_app, name="episode")
app.add_typer(config_app, name="config")

ChannelOption = Annotated[
    str | None, typer.Option("--channel", "-c", help="Only this channel.", show_default=False)
]
NowOption = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="Act as if it were this time (ISO-8601, e.g. 2026-11-29T10:05:00Z).",
        show_default=False,
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"autoretto {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens.")] = False,
) -> None:
    import logging

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _open(*, now: str | None = None):
    from . import clock
    from .config import load_config
    from .store import open_database

    clock.set_now(now)
    clock.now()  # a clock out of range (AUTORETTO_NOW too) stops here, before anything is written
    config = load_config()
    return config, open_database(config.paths.database)


def _console():
    from rich.console import Console

    return Console(highlight=False)


# -- set-up ----------------------------------------------------------------------------------


@app.command()
@handled
def init() -> None:
    """Create the home: a commented starter config with a demo channel, and the database.

    An existing config is never overwritten. Example: AUTORETTO_HOME=~/autoretto autoretto init
    """
    from .config import STARTER_CONFIG, Paths, home_dir, load_config, write_private
    from .errors import UsageError
    from .store import open_database

    paths = Paths(home_dir())
    try:
        for folder in (paths.home, paths.media, paths.logs):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{paths.home}: cannot create the home ({error.strerror})") from None
    if paths.config.exists():
        typer.echo(f"{paths.config} exists; left as it is")
    else:
        write_private(paths.config, STARTER_CONFIG.encode("utf-8"))
        typer.echo(f"wrote {paths.config}")
    config = load_config(paths)
    open_database(config.paths.database)
    typer.echo(f"database {config.paths.database} is ready")


@config_app.command("check")
@handled
def config_check(json_output: JsonOption = False) -> None:
    """Validate autoretto.toml; one line per problem, exit 2 when it is wrong.

    With --json: {"ok": false, "path", "problems": [{"file", "channel", "field", "message"}]}
    for a config with problems (still exit 2).
    """
    from .config import load_config
    from .errors import ConfigError, one_line
    from .pace import suggest_times

    try:
        config = load_config()
    except ConfigError as error:
        problems = getattr(error, "problems", [error])
        if json_output:
            print_json(
                {"ok": False, "path": error.path, "problems": [_problem(p) for p in problems]}
            )
        else:
            for problem in problems:
                typer.echo(f"autoretto: {one_line(str(problem))}", err=True)
        raise typer.Exit(2) from None
    suggestions = {c.name: found for c in config.cadences if (found := suggest_times(c.slot_times))}
    if json_output:
        print_json(
            {
                "ok": True,
                "path": str(config.path),
                "channels": [c.name for c in config.channels],
                "platforms": sorted(config.platforms),
                "suggestions": suggestions,
            }
        )
        return
    names = ", ".join(c.name for c in config.channels) or "no channels"
    typer.echo(f"{config.path}: ok ({names})")
    for channel, found in suggestions.items():
        better = ", ".join(f"{old} -> {new}" for old, new in found.items())
        typer.echo(f"suggestion: {channel} posts on the hour, like every bot; consider {better}")


def _problem(error: Any) -> dict[str, Any]:
    """A config problem for `config check --json`."""
    return {
        "file": error.path,
        "channel": error.channel,
        "field": error.field,
        "message": error.detail,
    }


# -- the job ---------------------------------------------------------------------------------


@app.command("run-due")
@handled
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
) -> None:
    """Serve every channel's due slot (what cron runs hourly).

    With --channel it is the on-demand button: the same claim as cron, so pressing it while
    cron runs is safe. Exit 0 when the run did its job, even if nothing was due.
    Example: autoretto run-due --channel lofi
    """
    from .engine import run_due as run

    config, db = _open(now=now)
    report = run(config, db, only_channel=channel, make=not no_make, wait=not no_wait)
    if json_output:
        print_json(report.as_json())
    else:
        for decision in report.decisions:
            post = f" (post {decision['post_id']})" if decision["post_id"] else ""
            typer.echo(
                f"{decision['channel']} {decision['slot']} {decision['platform']}: "
                f"{decision['outcome']}{post} - {decision['reason']}"
            )
        for waiting in report.waiting:
            typer.echo(
                f"{waiting['channel']} {waiting['slot']} {waiting['platform']}: waiting - "
                f"{waiting['reason']}"
            )
        for episode_id in report.made:
            typer.echo(f"made episode {episode_id}")
        for note in report.notes:
            typer.echo(f"note: {note}")
        if report.held:
            typer.echo(f"POSTING IS HELD: {report.held}", err=True)
        for error in report.errors:
            typer.echo(f"error: {error}", err=True)
        if not (report.decisions or report.errors or report.held or report.made or report.waiting):
            typer.echo(f"nothing due ({report.channels} channels checked)")
    raise typer.Exit(report.exit_code)


@app.command("post-now")
@handled
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
    to one platform. Example: autoretto post-now lofi --episode 12
    """
    from .engine import post_now as post

    config, db = _open()

    def announce(moment: Any) -> None:
        if not json_output:
            from .clock import iso

            typer.echo(f"going out at {iso(moment)} (a human pace, not on the second)")

    chosen, results = post(config, db, channel, episode_id=episode, announce=announce)
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
            typer.echo(f"episode {chosen['id']} {r.platform}: {r.outcome}{link} - {r.reason}")
    raise typer.Exit(0 if all(r.outcome == "posted" for r in results) else 1)


# -- looking -------------------------------------------------------------------------------


@app.command()
@handled
def status(
    channel: ChannelOption = None,
    json_output: JsonOption = False,
    now: NowOption = None,
) -> None:
    """Per channel: the stamp, the due slot, recent and next slots, ready episodes."""
    from . import clock
    from .engine import status as build_status

    config, db = _open(now=now)
    report = build_status(config, db, clock.now(), only_channel=channel)
    if json_output:
        print_json(report)
        return
    table = plain_table(title=f"Autoretto at {report['now']}", title_justify="left")
    for column in ("channel", "stamp", "due", "ready", "recent", "next"):
        table.add_column(column)
    for entry in report["channels"]:
        recent = "\n".join(f"{s['slot']} {s['state']}" for s in entry["recent"])
        upcoming = "\n".join(s["slot"] for s in entry["upcoming"])
        due = entry["due"]["slot"] if entry["due"] else "-"
        if entry["claim"]:
            due += f"\nclaimed by {entry['claim']['run_id']}"
        table.add_row(
            entry["channel"], entry["stamp"] or "never", due, str(entry["ready"]), recent, upcoming
        )
    from rich.markup import escape

    console = _console()
    if report["held"]:
        console.print(f"[bold red]POSTING IS HELD:[/bold red] {escape(report['held'])}")
    for warning in report["expiring"]:
        console.print(f"[yellow]sign-in ending:[/yellow] {escape(warning['reason'])}")
    for warning in report["platform_warnings"]:
        console.print(f"[yellow]{warning['platform']}:[/yellow] {escape(warning['reason'])}")
    for incident in report["incidents"]:
        console.print(
            f"[bold red]incident {incident['id']}[/bold red] open since {incident['opened_at']}: "
            f"{escape(incident['reason'] or '')}"
        )
    for post in report["needs_person"]:
        console.print(
            f"[yellow]post {post['id']}[/yellow] {post['channel']} {post['platform']} "
            f"{post['state']}: {escape(post['reason'] or '')}"
        )
    for episode in report["interrupted"]:
        console.print(
            f"[yellow]episode {episode['id']}[/yellow] {episode['channel']}: the import of "
            f"{escape(str(episode['source']))} was interrupted; the next run-due cleans it up"
        )
    console.print(table)


@app.command()
@handled
def decisions(
    channel: ChannelOption = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only slots at or after this time (ISO-8601).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Every slot decision: posted, missed, nothing_ready, waiting_for_approval,
    refused_by_limit, failed (a slot that waits for a busy platform shows in `status`)."""
    from .clock import parse_instant
    from .engine import list_decisions

    since_at = parse_instant(since, what="--since") if since else None
    _, db = _open()
    found = list_decisions(db, channel=channel, since=since_at)
    if json_output:
        print_json(found)
        return
    table = plain_table()
    for column in ("channel", "slot", "platform", "outcome", "post", "reason"):
        table.add_column(column)
    for d in found:
        table.add_row(
            d["channel"],
            d["slot"],
            d["platform"],
            d["outcome"],
            str(d["post_id"] or ""),
            d["reason"] or "",
        )
    _console().print(table)


POST_STATES = ("queued", "sending", "published", "may_be_live", "failed", "needs_person")


@app.command()
@handled
def posts(
    channel: ChannelOption = None,
    state: Annotated[
        str | None,
        typer.Option("--state", help=f"{', '.join(POST_STATES[:-1])} or {POST_STATES[-1]}."),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Every post of an episode to a platform, with its state and link."""
    from .errors import UsageError, shown
    from .posts import list_posts, post_json

    if state is not None and state not in POST_STATES:
        raise UsageError(
            f"--state: {shown(state)} is not a post state; use one of {', '.join(POST_STATES)}"
        )
    _, db = _open()
    found = [post_json(p) for p in list_posts(db, channel=channel, state=state)]
    if json_output:
        print_json(found)
        return
    table = plain_table()
    for column in ("id", "episode", "channel", "platform", "state", "tries", "url / reason"):
        table.add_column(column)
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
    _console().print(table)


@app.command()
@handled
def episodes(channel: ChannelOption = None, json_output: JsonOption = False) -> None:
    """Every episode with its state (and why, when rejected)."""
    from .episodes import episode_json, list_episodes

    _, db = _open()
    found = [episode_json(e) for e in list_episodes(db, channel)]
    if json_output:
        print_json(found)
        return
    table = plain_table()
    for column in ("id", "channel", "state", "title", "created", "reason"):
        table.add_column(column)
    for e in found:
        table.add_row(
            str(e["id"]),
            e["channel"],
            e["state"],
            e["title"] or "",
            e["created_at"],
            e["reason"] or "",
        )
    _console().print(table)


# -- episodes ------------------------------------------------------------------------------


@app.command()
@handled
def make(
    channel: Annotated[str, typer.Argument(help="The channel to make episodes for.")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=100, help="How many.")] = 1,
    json_output: JsonOption = False,
) -> None:
    """Make finished, gate-checked episodes with the channel's pipeline.

    Audio, artwork, copy, a beat-synced render (landscape, vertical, a Reels edit) and the
    quality and policy gates. An interrupted make is resumed. Example: autoretto make lofi -n 2
    """
    from .engine import Run
    from .episodes import episode_json
    from .produce import make_for_channel, make_notes

    config, db = _open()
    chosen = config.channel(channel)
    made = []
    with Run(config, db, "make") as run:
        for number in range(count):
            with _progress(f"episode {number + 1}/{count}") as progress:
                episode = make_for_channel(
                    config, db, chosen, run_id=run.id, now=run.now, progress=progress
                )
            made.append(episode_json(episode))
            if not json_output:
                why = f" - {episode['reason']}" if episode["reason"] else ""
                typer.echo(f"episode {episode['id']} {episode['state']}: {episode['title']}{why}")
                for note in make_notes(episode):
                    typer.echo(f"note: {note}")
    if json_output:
        print_json(made)
    raise typer.Exit(0 if all(e["state"] == "ready" for e in made) else 1)


def _progress(label: str):
    """A rich progress bar on a terminal; nothing under cron."""
    from contextlib import contextmanager

    @contextmanager
    def bar():
        if not sys.stderr.isatty():
            yield None
            return
        from rich.progress import Progress

        with Progress(console=_console_err()) as progress:
            task = progress.add_task(label, total=1.0)

            def update(stage: str, fraction: float) -> None:
                progress.update(task, completed=fraction, description=f"{label}: {stage}")

            yield update

    return bar()


def _console_err():
    from rich.console import Console

    return Console(stderr=True)


@episode_app.command("add")
@handled
def episode_add(
    channel: Annotated[str, typer.Argument(help="The channel it belongs to.")],
    video: Annotated[Path, typer.Argument(help="A finished video file.")],
    title: Annotated[str, typer.Option("--title", "-t", help="The title.")],
    description: Annotated[str, typer.Option("--description", "-d", help="The description.")] = "",
    tags: Annotated[str, typer.Option("--tags", help="Comma-separated tags.")] = "",
    off_schedule: Annotated[
        bool, typer.Option("--off-schedule", help="Only `post-now` posts it, never a slot.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Import a finished video (your own footage) as a ready episode.

    Example: autoretto episode add lofi ~/videos/rain.mp4 --title "Rainy night" --tags lofi,rain
    """
    from . import clock
    from .episodes import ImportRequest, episode_json, import_episode

    config, db = _open()
    request = ImportRequest(
        channel=channel,
        video=video,
        title=title,
        description=description,
        tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
        off_schedule=off_schedule,
    )
    episode = import_episode(config, db, request, clock.now())
    if json_output:
        print_json(episode_json(episode))
    else:
        typer.echo(f"episode {episode['id']} is ready: {episode['title']}")


film_app = typer.Typer(help="Films: long videos posted on a channel's own films cadence.")
app.add_typer(film_app, name="film")


@film_app.command("add")
@handled
def film_add(
    channel: Annotated[str, typer.Argument(help="The channel whose films cadence posts it.")],
    video: Annotated[Path, typer.Argument(help="The finished film.")],
    title: Annotated[str, typer.Option("--title", "-t", help="The title.")],
    description: Annotated[str, typer.Option("--description", "-d", help="The description.")] = "",
    tags: Annotated[str, typer.Option("--tags", help="Comma-separated tags.")] = "",
    json_output: JsonOption = False,
) -> None:
    """Import a film. It is posted on `[channels.films]` slots once you `autoretto approve` it
    (a dry run that records what would be sent, until `direct_publishing = true`).

    Example: autoretto film add lofi ~/films/winter.mp4 --title "A winter night, 2 hours"
    """
    from . import clock
    from .episodes import ImportRequest, episode_json, import_episode

    config, db = _open()
    request = ImportRequest(
        channel=channel,
        video=video,
        title=title,
        description=description,
        tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
        kind="film",
    )
    film = import_episode(config, db, request, clock.now())
    if json_output:
        print_json(episode_json(film))
    else:
        typer.echo(f"film {film['id']} is ready: {film['title']} (approve it to have it posted)")


@app.command()
@handled
def films(channel: ChannelOption = None, json_output: JsonOption = False) -> None:
    """Every film: its state, its folder, the dry runs recorded and its posts."""
    from .episodes import episode_json, list_episodes
    from .posts import list_posts, post_json

    config, db = _open()
    found = []
    for film in list_episodes(db, channel):
        if film.get("kind") != "film":
            continue
        entry = episode_json(film)
        folder = config.paths.media / "episodes" / str(film["id"])
        entry["folder"] = str(folder)
        entry["dry_runs"] = sorted(str(p) for p in folder.glob("dry-run-*.json"))
        entry["posts"] = [
            post_json(p)
            for p in list_posts(db, channel=film["channel"])
            if p["episode_id"] == film["id"]
        ]
        found.append(entry)
    if json_output:
        print_json(found)
        return
    if not found:
        typer.echo("no film yet (`autoretto film add CHANNEL VIDEO --title T`)")
    for film in found:
        posted = ", ".join(f"{p['platform']} {p['state']}" for p in film["posts"]) or "no post"
        typer.echo(
            f"film {film['id']} {film['channel']} {film['state']}: {film['title']} - {posted}; "
            f"{len(film['dry_runs'])} dry runs; {film['folder']}"
        )


@episode_app.command("show")
@handled
def episode_show(
    episode_id: Annotated[int, id_argument("The episode id.")],
    json_output: JsonOption = False,
) -> None:
    """Everything about one episode: files, gates, posts."""
    from .episodes import episode_json, get_episode
    from .posts import list_posts, post_json

    _, db = _open()
    episode = episode_json(get_episode(db, episode_id))
    episode["posts"] = [
        post_json(p)
        for p in list_posts(db, channel=episode["channel"])
        if p["episode_id"] == episode_id
    ]
    from .translate import translations_of

    episode["translations"] = translations_of(db, episode_id)
    if json_output:
        print_json(episode)
        return
    from rich.markup import escape

    console = _console()
    console.print(
        f"[bold]episode {episode['id']}[/bold] {escape(episode['title'] or '')} "
        f"({episode['state']})"
    )
    lines = []
    for item in episode["translations"]:
        where = f"on YouTube since {item['applied_at']}" if item["applied_at"] else "not on YouTube"
        lines.append(f"  translation {item['language']}: {item['title']} ({where})")
    for key in ("channel", "created_at", "reason", "duration", "tempo", "thumbnail"):
        if episode.get(key) is not None:
            lines.append(f"  {key}: {episode[key]}")
    for name, path in episode["videos"].items():
        lines.append(f"  video {name}: {path}")
    for gate in episode["gates"]:
        mark = "pass" if gate["passed"] else "FAIL"
        lines.append(f"  gate {gate['name']}: {mark} {gate.get('reason') or ''}")
    for post in episode["posts"]:
        lines.append(f"  post {post['id']} {post['platform']}: {post['state']} {post['url'] or ''}")
    for line in lines:
        console.print(line, markup=False)


@episode_app.command("discard")
@handled
def episode_discard(
    episode_id: Annotated[int, typer.Argument(help="The episode id.")],
    json_output: JsonOption = False,
) -> None:
    """Drop an episode stuck making (or rejected): its files are removed, it becomes discarded.

    A ready, approved or posted episode is refused, and so is one a run is making right now.
    Example: autoretto episode discard 12
    """
    from . import clock
    from .retention import discard_episode

    config, db = _open()
    result = discard_episode(
        config, db, episode_id, now=clock.now(), stale_after=config.stale_after
    )
    if json_output:
        print_json(result)
    else:
        typer.echo(
            f"episode {result['episode_id']} is discarded (it was {result['was']}); removed "
            f"{result['files']} files, {_megabytes(result['bytes'])} from {result['folder']}"
        )


@app.command()
@handled
def prune(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Remove the working files of episodes published everywhere longer ago than [media] keep.

    Videos, audio and pictures go; each episode's facts and thumbnail stay, and the outbox is
    never touched. An episode a platform or a lost-answer check still needs is kept, with why.
    run-due does this after every run. Example: autoretto prune --dry-run
    """
    from . import clock
    from .retention import prune as apply

    config, db = _open()
    result = apply(config, db, now=clock.now(), dry_run=dry_run)
    if json_output:
        print_json(result)
    else:
        if result["before"] is None:
            typer.echo(f'nothing is pruned: [media] keep = "{result["keep"]}"')
        verb = "would remove" if dry_run else "removed"
        for entry in result["pruned"]:
            typer.echo(
                f"episode {entry['episode_id']} ({entry['channel']}, published "
                f"{entry['published_at']}): {verb} {len(entry['files'])} files, "
                f"{_megabytes(entry['bytes'])}"
            )
        for entry in result["kept"]:
            typer.echo(f"episode {entry['episode_id']} kept: {entry['reason']}")
        for error in result["errors"]:
            typer.echo(f"error: {error}", err=True)
        if result["before"] is not None:
            total = "would free" if dry_run else "freed"
            typer.echo(
                f"{total} {_megabytes(result['bytes'])} (episodes published everywhere before "
                f'{result["before"]}; [media] keep = "{result["keep"]}")'
            )
    raise typer.Exit(1 if result["errors"] else 0)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _set_approval(episode_id: int, approved: bool) -> None:
    from . import clock
    from .episodes import set_approval

    _, db = _open()
    episode = set_approval(db, episode_id, approved=approved, now=clock.now())
    typer.echo(f"episode {episode['id']} is {episode['state']}")


@app.command()
@handled
def approve(episode_id: Annotated[int, id_argument("The episode id.")]) -> None:
    """Approve a ready episode, for channels with `approval = true`."""
    _set_approval(episode_id, True)


@app.command()
@handled
def hold(episode_id: Annotated[int, id_argument("The episode id.")]) -> None:
    """Withdraw an episode's approval; it is not posted until approved again."""
    _set_approval(episode_id, False)


# -- when something went wrong ---------------------------------------------------------------


@app.command()
@handled
def confirm(
    post_id: Annotated[int, id_argument("The post id (see `autoretto posts`).")],
    live: Annotated[
        str | None, typer.Option("--live", help="It is live, at this URL.", show_default=False)
    ] = None,
    not_live: Annotated[
        bool, typer.Option("--not-live", help="It is not there: let it be sent again.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Say whether a post that may be live went out, for platforms that cannot be asked.

    Example: autoretto confirm 17 --live https://example.com/p/123   or   autoretto confirm 17
    --not-live
    """
    from .engine import confirm_post
    from .errors import UsageError
    from .posts import post_json

    if (live is None) == (not not_live):
        raise UsageError("say either --live URL or --not-live")
    config, db = _open()
    post = post_json(confirm_post(config, db, post_id, live_url=live))
    if json_output:
        print_json(post)
    else:
        typer.echo(f"post {post['id']} ({post['platform']}) is {post['state']}")


@app.command()
@handled
def look(
    post_id: Annotated[int, id_argument("The post id (see `autoretto posts`).")],
    json_output: JsonOption = False,
) -> None:
    """Look for a post's last attempt on its platform; send it again only if it is not there."""
    from .engine import look_post

    config, db = _open()
    result = look_post(config, db, post_id)
    if json_output:
        print_json(
            {
                "post_id": result.post_id,
                "outcome": result.outcome,
                "reason": result.reason,
                "url": result.url,
            }
        )
    else:
        typer.echo(f"post {result.post_id}: {result.outcome} - {result.reason}")
    raise typer.Exit(0 if result.outcome == "posted" else 1)


@app.command()
@handled
def incidents(
    all_incidents: Annotated[bool, typer.Option("--all", help="Closed ones too.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Incidents: 3 or more failed posts within 2 hours open one; a success closes it."""
    from .incidents import list_incidents

    _, db = _open()
    found = list_incidents(db, open_only=not all_incidents)
    if json_output:
        print_json(found)
        return
    if not found:
        typer.echo("no open incident" if not all_incidents else "no incident yet")
    for incident in found:
        state = f"closed {incident['closed_at']}" if incident["closed_at"] else "OPEN"
        typer.echo(
            f"incident {incident['id']}: opened {incident['opened_at']}, {state}, "
            f"{incident['failures']} failures - {incident['reason']}"
        )


@app.command("journal")
@handled
def journal_command(json_output: JsonOption = False) -> None:
    """What the publish journal has that the database lacks (after a restore)."""
    from .engine import journal_report

    config, db = _open()
    report = journal_report(config, db)
    if json_output:
        print_json(report)
        return
    typer.echo(
        f"journal {report['journal']}: #{report['journal_seq']}, "
        f"database: #{report['database_seq']}"
    )
    if report["held"]:
        typer.echo(f"POSTING IS HELD: {report['held']}")
    for entry in report["missing"]:
        if entry["kind"] == "publish":
            typer.echo(
                f"#{entry['seq']} {entry['at']} published episode {entry['episode_id']} "
                f"({entry['channel']}) on {entry['platform']}: {entry.get('url') or ''}"
            )
        elif entry["kind"] == "attempt":
            typer.echo(
                f"#{entry['seq']} {entry['at']} sent episode {entry['episode_id']} "
                f"({entry['channel']}) to {entry['platform']}: it may be there "
                f"(autoretto-{entry.get('identity') or '?'})"
            )
        else:
            typer.echo(
                f"#{entry['seq']} {entry['at']} stamp of {entry['channel']} -> {entry['slot']}"
            )


@app.command()
@handled
def resume(
    checked: Annotated[
        bool, typer.Option("--checked", help="I have checked what the platforms already have.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Lift the restore hold: write the journal's publishes back into the database first."""
    from .engine import resume as resume_posting

    config, db = _open()
    report = resume_posting(config, db, checked=checked)
    if json_output:
        print_json(report)
    elif report["written_back"]:
        typer.echo(f"wrote {report['written_back']} journal entries back; posting resumes")
    else:
        typer.echo("posting is not held; nothing to resume")


register_account_commands(app)
register_insight_commands(app)
register_extra_commands(app)
register_web_commands(app)


def run() -> None:
    """Console-script entry point."""
    import os

    # The home holds secrets (the notify topic, the heartbeat address, sealed tokens): every
    # file and folder this process makes, ffmpeg's and SQLite's too, is its owner's alone.
    os.umask(0o077)
    try:
        app()
    except BrokenPipeError:  # `autoretto decisions | head`
        sys.stderr.close()
