"""Commands for things a person posts by hand: `translate` and `compile`.

`register(app)` adds them to the main `autoretto` app. Each command parses, calls one library
function and renders; a person's mistake (AutorettoError) is one line on stderr and its exit
code.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .cli_support import JsonOption, handled, id_argument, print_json


def _open() -> tuple[Any, Any]:
    """(config, db) of the current home."""
    from .config import load_config
    from .store import open_database

    config = load_config()
    return config, open_database(config.paths.database)


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
    from . import clock
    from .translate import translate

    config, db = _open()
    result = translate(
        config, db, episode_id, to, clock.now(), source_language=source, dry_run=dry_run
    )
    failed = bool(result["errors"] or result["youtube"]["error"])
    if json_output:
        print_json(result)
        raise typer.Exit(1 if failed else 0)
    for made in result["languages"]:
        typer.echo(f"{made['language']}: {made['title']}")
        typer.echo(f"  {made['files']['text']}")
    for error in result["errors"]:
        typer.echo(f"{error['language']}: not translated - {error['reason']}", err=True)
    for note in result["notes"]:
        typer.echo(f"note: {note}")
    youtube = result["youtube"]
    if youtube["error"]:
        typer.echo(f"youtube: not changed - {youtube['error']}", err=True)
    elif youtube["reason"]:
        typer.echo(f"youtube: {youtube['reason']}")
    raise typer.Exit(1 if failed else 0)


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
    from . import clock
    from .compile import compile_channel

    config, db = _open()
    result = compile_channel(config, db, channel, last=last, now=clock.now())
    if json_output:
        print_json(result)
        raise typer.Exit(0 if result["state"] == "ready" else 1)
    why = f" - {result['reason']}" if result["reason"] else ""
    typer.echo(f"compilation {result['id']} {result['state']}: {result['title']}{why}")
    for part in result["parts"]:
        how = part["joined"] + (f" ({part['why']})" if part["why"] else "")
        typer.echo(f"  {part['timestamp']} episode {part['episode_id']} {part['title']}: {how}")
    typer.echo(f"  video: {next(iter(result['videos'].values()))}")
    typer.echo(f"  texts: {result['files']['text']}")
    for note in result["notes"]:
        typer.echo(f"note: {note}")
    if result["state"] == "ready":
        typer.echo(f"post it with: autoretto post-now {channel} --episode {result['id']}")
    raise typer.Exit(0 if result["state"] == "ready" else 1)


def register(app: typer.Typer) -> None:
    """Add `translate` and `compile` to the main app."""
    app.command("translate")(handled(translate_command))
    app.command("compile")(handled(compile_command))
