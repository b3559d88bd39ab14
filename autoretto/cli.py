"""The `autoretto` command: the typer app and its entry point.

The commands live in `autoretto/commands/`, one module per concept (the job, episodes, repair,
accounts, posting by hand, insight, the audience's inbox, the page, the home); each parses,
calls one library function and renders. What they share is in `cli_support.py`: the one
`open_home()`, the error edge (a person's mistake is one line on stderr and a code of the one
exit-code table; anything else is a bug and keeps its traceback), and the output helpers.
`--json` output is a stable interface.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from . import __version__
from .cli_support import Commands, group
from .commands import register

app = group(
    "autoretto",
    help="Make music videos and publish each channel's slots, exactly once, from cron.",
    example="autoretto status",
    cls=Commands,
    add_completion=True,  # --install-completion, --show-completion
)


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


register(app)


def only_the_command(whole: typer.Typer, words: list[str]) -> typer.Typer:
    """The app with only the command that `words` run (`status`, `run-due`, `episode` and its
    subcommands): click's tree of all the commands and their options costs more to build than
    `status` takes to read a thousand channels, and one command needs only its own. Anything
    else (no command, the root's help, a name that is no command) gets the whole app, whose
    help and mistakes name every command."""
    import copy

    from typer.main import get_command_name

    name = next((word for word in words if not word.startswith("-")), None)
    if name is None:
        return whole
    commands = [
        c
        for c in whole.registered_commands
        if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) == name
    ]
    groups = [g for g in whole.registered_groups if g.name == name]
    if not commands and not groups:
        return whole
    narrowed = copy.copy(whole)
    narrowed.registered_commands = commands
    narrowed.registered_groups = groups
    return narrowed


def run() -> None:
    """Console-script entry point."""
    import os

    # The home holds secrets (the notify topic, the heartbeat address, sealed tokens): every
    # file and folder this process makes, ffmpeg's and SQLite's too, is its owner's alone.
    os.umask(0o077)
    try:
        only_the_command(app, sys.argv[1:])()
    except BrokenPipeError:  # `autoretto decisions | head`
        sys.stderr.close()
