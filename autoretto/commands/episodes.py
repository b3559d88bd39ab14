"""Episodes: `episodes`, `episode add|show|discard`, `make`, `approve`, `hold`, films (`film
add`, `films`), `translate`, `compile` and `prune`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..cli_support import (
    ChannelOption,
    JsonOption,
    TerminalProgress,
    check_channel,
    command,
    console,
    group,
    id_argument,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    say,
)
from ..cli_support import count as counted
from ..errors import Exit

SECTION = "Episodes"

TitleOption = Annotated[str, typer.Option("--title", "-t", help="The title.")]
DescriptionOption = Annotated[str, typer.Option("--description", "-d", help="The description.")]
TagsOption = Annotated[str, typer.Option("--tags", help="Comma-separated tags.")]


def episodes(channel: ChannelOption = None, json_output: JsonOption = False) -> None:
    """Every episode with its state (and why, when rejected).

    Example: autoretto episodes --channel lofi
    """
    from ..episodes import episode_json, list_episodes

    home = open_home()
    check_channel(home.config, channel)
    found = [episode_json(e) for e in list_episodes(home.db, channel)]
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found("no episode yet", "`autoretto make CHANNEL` or `autoretto episode add`")
        return
    table = plain_table()
    for column in ("id", "channel", "state", "title", "created", "reason"):
        table.add_column(column, justify="right" if column == "id" else "left")
    for e in found:
        table.add_row(
            str(e["id"]),
            e["channel"],
            e["state"],
            e["title"] or "",
            e["created_at"],
            e["reason"] or "",
        )
    console().print(table)


def make(
    channel: Annotated[str, typer.Argument(help="The channel to make episodes for.")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=100, help="How many.")] = 1,
    json_output: JsonOption = False,
) -> None:
    """Make finished, gate-checked episodes with the channel's pipeline.

    Audio, artwork, copy, a beat-synced render (landscape, vertical, a Reels edit) and the
    quality and policy gates. An interrupted make is resumed. On a terminal each make shows
    its progress on stderr. Exit 0 when every episode made is ready, 1 when one was rejected.

    Example: autoretto make lofi -n 2
    """
    from ..engine.make import make_episodes
    from ..episodes import episode_json
    from ..produce import make_notes

    home = open_home()
    progress = TerminalProgress.when_watched()
    made = []
    try:
        for episode in make_episodes(home.config, home.db, channel, count=count, progress=progress):
            made.append(episode_json(episode))
            if progress is not None:
                progress.close()
            if not json_output:
                why = f" - {episode['reason']}" if episode["reason"] else ""
                say(f"episode {episode['id']} {episode['state']}: {episode['title']}{why}")
                for note in make_notes(episode):
                    say(f"note: {note}")
    finally:
        if progress is not None:
            progress.close()
    if json_output:
        print_json(made)
    ready = all(e["state"] == "ready" for e in made)
    raise typer.Exit(Exit.DONE if ready else Exit.NEEDS_PERSON)


def _request(channel: str, video: Path, title: str, description: str, tags: str, **more: Any):
    from ..episodes import ImportRequest

    return ImportRequest(
        channel=channel,
        video=video,
        title=title,
        description=description,
        tags=tuple(t.strip() for t in tags.split(",") if t.strip()),
        **more,
    )


def episode_add(
    channel: Annotated[str, typer.Argument(help="The channel it belongs to.")],
    video: Annotated[
        Path,
        typer.Argument(
            help="A finished video, or an audio track (mp3 m4a flac ogg opus wav ...) to make "
            "one from."
        ),
    ],
    title: Annotated[
        str,
        typer.Option(
            "--title",
            "-t",
            help="The title (needed for a video; a track's own tags give it when left out).",
        ),
    ] = "",
    description: DescriptionOption = "",
    tags: TagsOption = "",
    off_schedule: Annotated[
        bool, typer.Option("--off-schedule", help="Only `post-now` posts it, never a slot.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Add your own finished video as a ready episode, or make one from your own track.

    A video is copied as it is. An audio track is made into an episode by the channel's
    pipeline, like a folder track: rendered over artwork, its title, artist and (with
    `artwork = "track"`) cover art taken from its tags. Exit 1 when a gate rejected it.

    Examples:
    autoretto episode add lofi ~/videos/rain.mp4 --title "Rainy night" --tags lofi,rain
    autoretto episode add lofi ~/music/neon-drive.mp3
    """
    from ..engine.make import add_episode
    from ..episodes import episode_json
    from ..produce import make_notes

    home = open_home()
    request = _request(channel, video, title, description, tags, off_schedule=off_schedule)
    progress = TerminalProgress.when_watched()
    try:
        episode = add_episode(home.config, home.db, request, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    if json_output:
        print_json(episode_json(episode))
    elif episode["state"] == "ready":
        say(f"episode {episode['id']} is ready: {episode['title']}")
    else:
        why = f" - {episode['reason']}" if episode["reason"] else ""
        say(f"episode {episode['id']} {episode['state']}: {episode['title']}{why}")
    if not json_output:
        for note in make_notes(episode):
            say(f"note: {note}")
    raise typer.Exit(Exit.DONE if episode["state"] == "ready" else Exit.NEEDS_PERSON)


def episode_show(
    episode_id: Annotated[int, id_argument("The episode id.")],
    json_output: JsonOption = False,
) -> None:
    """Everything about one episode: files, gates, beats, posts, translations.

    Example: autoretto episode show 12 --json
    """
    from ..catalog import episode_details

    episode = episode_details(open_home().db, episode_id)
    if json_output:
        print_json(episode)
        return
    say(f"episode {episode['id']} {episode['title'] or ''} ({episode['state']})")
    for item in episode["translations"]:
        where = f"on YouTube since {item['applied_at']}" if item["applied_at"] else "not on YouTube"
        say(f"  translation {item['language']}: {item['title']} ({where})")
    for key in ("channel", "created_at", "reason", "duration", "tempo", "thumbnail"):
        if episode.get(key) is not None:
            say(f"  {key}: {episode[key]}")
    source = episode["source"]
    for key in ("track", "imported"):
        if source.get(key):
            say(f"  {key}: {source[key]}")
    for name, path in episode["videos"].items():
        say(f"  video {name}: {path}")
    for gate in episode["gates"]:
        mark = "pass" if gate["passed"] else "FAIL"
        say(f"  gate {gate['name']}: {mark} {gate.get('reason') or ''}".rstrip())
    for post in episode["posts"]:
        say(f"  post {post['id']} {post['platform']}: {post['state']} {post['url'] or ''}".rstrip())
    for note in source.get("notes") or []:
        say(f"  note: {note}")


def episode_discard(
    episode_id: Annotated[int, typer.Argument(help="The episode id.")],
    json_output: JsonOption = False,
) -> None:
    """Drop an episode stuck making (or rejected): its files are removed, it becomes discarded.

    A ready, approved or posted episode is refused, and so is one a run is making right now.

    Example: autoretto episode discard 12
    """
    from .. import clock
    from ..retention import discard_episode

    home = open_home()
    result = discard_episode(
        home.config, home.db, episode_id, now=clock.now(), stale_after=home.config.stale_after
    )
    if json_output:
        print_json(result)
    else:
        say(
            f"episode {result['episode_id']} is discarded (it was {result['was']}); removed "
            f"{counted(result['files'], 'file')}, {_megabytes(result['bytes'])} from "
            f"{result['folder']}"
            + (
                f" and {counted(result['objects'], 'object')} from the media bucket"
                if result["objects"]
                else ""
            )
        )
        if result["problem"]:
            say(f"note: {result['problem']}")


def _set_approval(episode_id: int, approved: bool) -> None:
    from .. import clock
    from ..episodes import set_approval

    episode = set_approval(open_home().db, episode_id, approved=approved, now=clock.now())
    say(f"episode {episode['id']} is {episode['state']}")


def approve(episode_id: Annotated[int, id_argument("The episode id.")]) -> None:
    """Approve a ready episode (or film), for channels with `approval = true`.

    Example: autoretto approve 12
    """
    _set_approval(episode_id, True)


def hold(episode_id: Annotated[int, id_argument("The episode id.")]) -> None:
    """Withdraw an episode's approval; it is not posted until approved again.

    Example: autoretto hold 12
    """
    _set_approval(episode_id, False)


def film_add(
    channel: Annotated[str, typer.Argument(help="The channel whose films cadence posts it.")],
    video: Annotated[Path, typer.Argument(help="The finished film.")],
    title: TitleOption,
    description: DescriptionOption = "",
    tags: TagsOption = "",
    json_output: JsonOption = False,
) -> None:
    """Import a film. It is posted on `[channels.films]` slots once you `autoretto approve` it
    (a dry run that records what would be sent, until `direct_publishing = true`).

    Example: autoretto film add lofi ~/films/winter.mp4 --title "A winter night, 2 hours"
    """
    from .. import clock
    from ..episodes import episode_json, import_episode

    home = open_home()
    request = _request(channel, video, title, description, tags, kind="film")
    film = import_episode(home.config, home.db, request, clock.now())
    if json_output:
        print_json(episode_json(film))
    else:
        say(f"film {film['id']} is ready: {film['title']} (approve it to have it posted)")


def films(channel: ChannelOption = None, json_output: JsonOption = False) -> None:
    """Every film: its state, its folder, the dry runs recorded and its posts.

    Example: autoretto films --channel lofi
    """
    from ..catalog import list_films

    home = open_home()
    check_channel(home.config, channel)
    found = list_films(home.config, home.db, channel)
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found("no film yet", "`autoretto film add CHANNEL VIDEO --title T`")
    for film in found:
        posted = ", ".join(f"{p['platform']} {p['state']}" for p in film["posts"]) or "no post"
        say(
            f"film {film['id']} {film['channel']} {film['state']}: {film['title']} - {posted}; "
            f"{counted(len(film['dry_runs']), 'dry run')}; {film['folder']}"
        )


def prune(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Remove the working files of episodes published everywhere longer ago than [media] keep.

    Videos, audio and pictures go; each episode's facts and thumbnail stay, and the outbox is
    never touched. An episode a platform or a lost-answer check still needs is kept, with why.
    run-due does this after every run.

    Example: autoretto prune --dry-run
    """
    from .. import clock
    from ..retention import prune as apply

    home = open_home()
    result = apply(home.config, home.db, now=clock.now(), dry_run=dry_run)
    if json_output:
        print_json(result)
    else:
        if result["before"] is None:
            say(f'nothing is pruned: [media] keep = "{result["keep"]}"')
        verb = "would remove" if dry_run else "removed"
        for entry in result["pruned"]:
            say(
                f"episode {entry['episode_id']} ({entry['channel']}, published "
                f"{entry['published_at']}): {verb} {counted(len(entry['files']), 'file')}, "
                f"{_megabytes(entry['bytes'])}"
            )
        for entry in result["kept"]:
            say(f"episode {entry['episode_id']} kept: {entry['reason']}")
        for error in result["errors"]:
            say(f"error: {error}", err=True)
        if result["before"] is not None:
            total = "would free" if dry_run else "freed"
            say(
                f"{total} {_megabytes(result['bytes'])} (episodes published everywhere before "
                f'{result["before"]}; [media] keep = "{result["keep"]}")'
            )
    raise typer.Exit(Exit.NEEDS_PERSON if result["errors"] else Exit.DONE)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def translate_command(
    episode_id: Annotated[int, id_argument("The episode id.")],
    to: Annotated[
        str,
        typer.Option("--to", help="Languages as BCP-47 tags, comma-separated: de,es,pt-BR."),
    ],
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The language the episode's copy is in (default: Gemini says).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Make and store the texts; change nothing on YouTube."),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Translate an episode's copy with Gemini; write ready-to-post texts per platform.

    The texts go next to the video as texts.LANG.json and texts.LANG.txt, fitted to every
    platform's limits. If YouTube was connected with --allow-edits and the episode is on
    YouTube, its translated titles and descriptions are set there too (50 quota units).

    Example: autoretto translate 12 --to de,es,pt-BR
    """
    from .. import clock
    from ..translate import localizing_platform, translate

    home = open_home()
    result = translate(
        home.config, home.db, episode_id, to, clock.now(), source_language=source, dry_run=dry_run
    )
    localizing = localizing_platform()
    # what happened on the platform that takes the translations (`youtube`)
    on_platform = result.get(localizing.name) if localizing is not None else None
    failed = bool(result["errors"] or (on_platform and on_platform["error"]))
    code = Exit.NEEDS_PERSON if failed else Exit.DONE
    if json_output:
        print_json(result)
        raise typer.Exit(code)
    for made in result["languages"]:
        say(f"{made['language']}: {made['title']}")
        say(f"  {made['files']['text']}")
    for error in result["errors"]:
        say(f"{error['language']}: not translated - {error['reason']}", err=True)
    for note in result["notes"]:
        say(f"note: {note}")
    if on_platform and on_platform["error"]:
        say(f"{localizing.name}: not changed - {on_platform['error']}", err=True)
    elif on_platform and on_platform["reason"]:
        say(f"{localizing.name}: {on_platform['reason']}")
    raise typer.Exit(code)


def compile_command(
    channel: Annotated[str, typer.Argument(help="The channel whose episodes to join.")],
    last: Annotated[
        int,
        typer.Option(
            "--last", "-n", min=1, max=1000, help="How many of its last published episodes."
        ),
    ] = 5,
    json_output: JsonOption = False,
) -> None:
    """Join the channel's last published episodes into one gated compilation video.

    Episodes in the same encode are joined without re-encoding; the description lists
    chapters. A compilation is never posted by a slot: post it with
    `autoretto post-now CHANNEL --episode ID`.

    Example: autoretto compile lofi --last 10
    """
    from .. import clock
    from ..compile import compile_channel

    home = open_home()
    result = compile_channel(home.config, home.db, channel, last=last, now=clock.now())
    code = Exit.DONE if result["state"] == "ready" else Exit.NEEDS_PERSON
    if json_output:
        print_json(result)
        raise typer.Exit(code)
    why = f" - {result['reason']}" if result["reason"] else ""
    say(f"compilation {result['id']} {result['state']}: {result['title']}{why}")
    for part in result["parts"]:
        how = part["joined"] + (f" ({part['why']})" if part["why"] else "")
        say(f"  {part['timestamp']} episode {part['episode_id']} {part['title']}: {how}")
    say(f"  video: {next(iter(result['videos'].values()))}")
    say(f"  texts: {result['files']['text']}")
    for note in result["notes"]:
        say(f"note: {note}")
    if result["state"] == "ready":
        say(f"post it with: autoretto post-now {channel} --episode {result['id']}")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    command(app, "episodes", episodes, SECTION)
    episode_app = group(
        "episode",
        help="Look at, import and drop single episodes.",
        example="autoretto episode show 12",
    )
    command(episode_app, "add", episode_add, SECTION)
    command(episode_app, "show", episode_show, SECTION)
    command(episode_app, "discard", episode_discard, SECTION)
    app.add_typer(episode_app, name="episode", rich_help_panel=SECTION)
    command(app, "make", make, SECTION)
    command(app, "approve", approve, SECTION)
    command(app, "hold", hold, SECTION)
    film_app = group(
        "film",
        help="Films: long videos posted on a channel's own films cadence.",
        example='autoretto film add lofi ~/films/winter.mp4 --title "A winter night"',
    )
    command(film_app, "add", film_add, SECTION)
    app.add_typer(film_app, name="film", rich_help_panel=SECTION)
    command(app, "films", films, SECTION)
    command(app, "translate", translate_command, SECTION)
    command(app, "compile", compile_command, SECTION)
    command(app, "prune", prune, SECTION)
