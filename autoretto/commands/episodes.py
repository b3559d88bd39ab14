"""Episodes: `episodes`, `episode add|show|discard|edit|edits|move|swap`, `queue`, `make`,
`approve`, `hold`, films (`film add`, `films`), `translate`, `compile` and `prune`."""

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
from ..errors import Exit, UsageError

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


def episode_edit(
    episode_id: Annotated[int, id_argument("The episode id.")],
    title: Annotated[
        str | None, typer.Option("--title", "-t", help="A new title.", show_default=False)
    ] = None,
    description: Annotated[
        str | None,
        typer.Option("--description", "-d", help="A new description.", show_default=False),
    ] = None,
    text: Annotated[
        list[str] | None,
        typer.Option(
            "--text",
            help="One platform's text field as PLATFORM.FIELD=TEXT (repeat for more), e.g. "
            "bluesky.text=...",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Change an episode's title, description or one platform's text before it goes out.

    The text gates run again on the new text (a failing one refuses the edit, nothing changes);
    a platform that has a post of the episode keeps its text (a post already sent or on its way
    is never changed); every change is recorded (`autoretto episode edits ID`).

    Example: autoretto episode edit 12 --title "Night drive" --text bluesky.text="Out now"
    """
    import getpass

    from .. import clock
    from ..editing import CopyEdit, edit_copy

    texts: dict[str, dict[str, str]] = {}
    for given in text or []:
        where, equals, value = given.partition("=")
        platform, dot, field = where.partition(".")
        if not equals or not dot or not platform or not field:
            raise UsageError(
                f"--text {given[:40]!r}: write PLATFORM.FIELD=TEXT, e.g. bluesky.text=Out now"
            )
        texts.setdefault(platform.strip(), {})[field.strip()] = value
    if title is None and description is None and not texts:
        raise UsageError("give --title, --description or --text: there is nothing to change")
    home = open_home()
    result = edit_copy(
        home.config,
        home.db,
        episode_id,
        CopyEdit(title=title, description=description, texts=texts),
        who=f"cli:{getpass.getuser()}",
        now=clock.now(),
    )
    if json_output:
        print_json(result)
        return
    if not result["changed"]:
        say(f"episode {episode_id}: nothing changed (the texts are already so)")
    for change in result["changed"]:
        where = f"{change['platform']} {change['field']}" if change["platform"] else change["field"]
        say(f"episode {episode_id} {where}: {change['new']}")
    for platform, why in result["kept"].items():
        say(f"  {platform} keeps its text: {why}")


def episode_edits(
    episode_id: Annotated[int, id_argument("The episode id.")],
    json_output: JsonOption = False,
) -> None:
    """The changes made to an episode's copy: when, by whom, which field, old and new.

    Example: autoretto episode edits 12
    """
    from ..editing import edits_of

    found = edits_of(open_home().db, episode_id)
    if json_output:
        print_json(found)
        return
    if not found:
        say(f"episode {episode_id} was never edited")
    for edit in found:
        where = f"{edit['platform']} {edit['field']}" if edit["platform"] else edit["field"]
        say(f"{edit['at']} {edit['who']}: {where}: {edit['old']!r} -> {edit['new']!r}")


def episode_move(
    episode_id: Annotated[int, id_argument("The episode id.")],
    slot: Annotated[
        str | None,
        typer.Option(
            "--slot",
            help="The coming slot (local, as `autoretto queue` shows it, 2026-12-08T19:00) "
            "that should take the episode.",
            show_default=False,
        ),
    ] = None,
    place: Annotated[
        int | None,
        typer.Option("--place", help="Its place in the channel's line (1: next).", min=1),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Move an episode to another coming slot: it takes that slot's place in the channel's
    line, and the episodes between move one place along.

    A slot posts the first episode in line that the platform has not had; the line is oldest
    first unless moved. Only an episode that no platform has had yet is moved.

    Example: autoretto episode move 14 --slot 2026-12-08T19:00
    """
    from .. import clock
    from ..editing import move, move_to_slot

    if (slot is None) == (place is None):
        raise UsageError("give one of --slot or --place")
    home = open_home()
    if slot is not None:
        line = move_to_slot(home.config, home.db, episode_id, slot, clock.now())
    else:
        assert place is not None
        line = move(home.db, episode_id, place - 1)
    _say_line(episode_id, line, json_output)


def episode_swap(
    episode_id: Annotated[int, id_argument("The episode id.")],
    other_id: Annotated[int, id_argument("The episode to swap places with.")],
    json_output: JsonOption = False,
) -> None:
    """Swap two episodes' places in their channel's line (and so the slots they go out on).

    Example: autoretto episode swap 14 15
    """
    from ..editing import swap

    _say_line(episode_id, swap(open_home().db, episode_id, other_id), json_output)


def _say_line(episode_id: int, line: list[int], json_output: bool) -> None:
    if json_output:
        print_json({"episode_id": episode_id, "line": line})
        return
    say(f"episode {episode_id} is now number {line.index(episode_id) + 1} in line")
    say("line: " + " ".join(str(number) for number in line))
    say("see the slots each goes out on with: autoretto queue")


def queue(
    channel: ChannelOption = None,
    count: Annotated[
        int, typer.Option("--count", "-n", help="Coming slots per channel.", min=1)
    ] = 10,
    json_output: JsonOption = False,
) -> None:
    """Which episode goes out on which coming slot, per channel and platform.

    The same choice run-due makes (the first episode in line each platform has not had and
    can take), if nothing changes meanwhile. Reorder with `episode move` and `episode swap`.

    Example: autoretto queue --channel lofi
    """
    from .. import clock
    from ..engine.queue import coming_queue

    home = open_home()
    check_channel(home.config, channel)
    found = coming_queue(home.config, home.db, clock.now(), count=count, only_channel=channel)
    if json_output:
        print_json({name: [entry.json() for entry in entries] for name, entries in found.items()})
        return
    for name, entries in found.items():
        say(f"{name}:")
        if not entries:
            say("  no coming slot")
        for entry in entries:
            episode = entry.episode
            what = (
                f"episode {episode['id']} {episode['title'] or ''}".rstrip()
                if episode
                else next(iter(entry.reasons.values()), "no platform")
            )
            due = " (due now)" if entry.due else ""
            say(f"  {entry.slot.key.replace('T', ' ')}{due}: {what}")
            if not entry.alike:
                for platform, taken in entry.episodes.items():
                    shown = f"episode {taken['id']}" if taken else entry.reasons[platform]
                    say(f"    {platform}: {shown}")


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
    command(episode_app, "edit", episode_edit, SECTION)
    command(episode_app, "edits", episode_edits, SECTION)
    command(episode_app, "move", episode_move, SECTION)
    command(episode_app, "swap", episode_swap, SECTION)
    command(app, "queue", queue, SECTION)
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
