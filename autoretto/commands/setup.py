"""The home: `init` (a starter config and the database) and `config check`."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import typer

from ..cli_support import JsonOption, command, group, print_json, say

SECTION = "The home"


def init() -> None:
    """Create the home: a commented starter config with a demo channel, and the database.

    An existing config is never overwritten.

    Example: AUTORETTO_HOME=~/autoretto autoretto init
    """
    from ..config import STARTER_CONFIG, Paths, home_dir, load_config, write_private
    from ..errors import UsageError
    from ..journal import PLACE_NAME, default_path, record_place, recorded_place
    from ..ledger.store import open_database, store_name
    from ..platforms import FIELDS

    paths = Paths(home_dir())
    try:
        paths.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        _make_private(paths.home, "the home")  # before anything is made in it
        for folder in (paths.media, paths.logs):
            folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{paths.home}: cannot create the home ({error.strerror})") from None
    if paths.config.exists():
        say(f"{paths.config} exists; left as it is")
    else:
        write_private(paths.config, STARTER_CONFIG.encode("utf-8"))
        say(f"wrote {paths.config}")
    config = load_config(paths, platforms=FIELDS)
    if config.journal_setting is None:
        # The journal's place is decided here, once, and recorded in the home: cron and a
        # login shell (another HOME, another XDG_STATE_HOME) then find the same journal.
        place = recorded_place(paths.home) or default_path(paths.home)
        # The journal's folder in the XDG state folder is Autoretto's own: made or tightened
        # like the home. A folder named by `journal = ...` is the person's (it may be shared,
        # like /tmp): `doctor` says when others can write it.
        state = place.parent
        try:
            state.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            reason = error.strerror
            raise UsageError(f"{state}: cannot create the journal's folder ({reason})") from None
        _make_private(state, "the journal's folder")
        try:
            record_place(paths.home, place)
        except OSError as error:
            record = paths.home / PLACE_NAME
            reason = error.strerror
            raise UsageError(f"{record}: cannot record the journal's place ({reason})") from None
        say(f"the publish journal is {place} (recorded in {paths.home / PLACE_NAME})")
    db = open_database(config.paths.database, url=config.store_url)
    say(f"database {store_name(db, config.paths.database)} is ready")


def _make_private(folder: Path, what: str) -> None:
    """Make `folder` (the home, the journal's folder) its owner's alone, 0700: a member of its
    group who could write there could change the config, the cache or the journal, and have
    Autoretto run their code or post as its owner. Refuses, naming the mode, when it cannot."""
    import stat

    from ..errors import UsageError

    mode = stat.S_IMODE(folder.stat().st_mode)
    if not mode & 0o077:
        return
    try:
        os.chmod(folder, 0o700)
    except OSError as error:
        raise UsageError(
            f"{folder}: {what} is mode {mode:04o}, open to others, and cannot be made 0700 "
            f"({error.strerror}); run `chmod 700 {shlex.quote(str(folder))}` as its owner"
        ) from None
    say(f"{folder}: {what} was mode {mode:04o}; made it 0700 (yours alone)")


def config_check(json_output: JsonOption = False) -> None:
    """Validate autoretto.toml; one line per problem, every problem at once, exit 2 when it
    is wrong. With --json: {"ok": false, "path", "problems": [{"file", "channel", "field",
    "message"}]} for a config with problems (still exit 2). A valid config still warns (exit
    0) about each platform of a channel that cannot post (not connected, refused, failing),
    with the command that fixes it: `warnings` and `trouble` in --json.

    Example: autoretto config check
    """
    from .. import clock
    from ..config import load_config
    from ..errors import ConfigError, Exit, one_line
    from ..health import home_trouble
    from ..pace import suggest_times
    from ..platforms import FIELDS

    try:
        config = load_config(platforms=FIELDS)
    except ConfigError as error:
        problems = getattr(error, "problems", [error])
        if json_output:
            print_json(
                {"ok": False, "path": error.path, "problems": [_problem(p) for p in problems]}
            )
        else:
            for problem in problems:
                typer.echo(f"autoretto: {one_line(str(problem))}", err=True)
        raise typer.Exit(Exit.MISTAKE) from None
    suggestions = {c.name: found for c in config.cadences if (found := suggest_times(c.slot_times))}
    # A platform that cannot post (not connected, refused, failing): valid, but worth a warning.
    troubles = [t.to_json() for t in home_trouble(config, clock.now())]
    if json_output:
        print_json(
            {
                "ok": True,
                "path": str(config.path),
                "channels": [c.name for c in config.channels],
                "platforms": sorted(config.platforms),
                "suggestions": suggestions,
                "warnings": [t["line"] for t in troubles],
                "trouble": troubles,
            }
        )
        return
    names = ", ".join(c.name for c in config.channels) or "no channels"
    say(f"{config.path}: ok ({names})")
    for trouble in troubles:
        say(f"warning: {trouble['line']}")
    for channel, found in suggestions.items():
        better = ", ".join(f"{old} -> {new}" for old, new in found.items())
        say(f"suggestion: {channel} posts on the hour, like every bot; consider {better}")


def _problem(error: Any) -> dict[str, Any]:
    """A config problem for `config check --json`."""
    return {
        "file": error.path,
        "channel": error.channel,
        "field": error.field,
        "message": error.detail,
    }


def register(app: typer.Typer) -> None:
    command(app, "init", init, SECTION)
    config_app = group("config", help="Check the config file.", example="autoretto config check")
    command(config_app, "check", config_check, SECTION)
    app.add_typer(config_app, name="config", rich_help_panel=SECTION)
