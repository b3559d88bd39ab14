"""Posts a person makes: `post NAME EPISODE`, one command for each platform the registry lists
as posted by hand (MANUAL_PLATFORMS, with each command's help in POST_HELP).

The posting screens refuse to run without a terminal: these platforms ask that a person makes
each post, so no script or cron job can press the button. A screen is its adapter's: `screen`
reads what it shows, `ask_choices` asks its questions (autoretto/questions.py) through `ask`
and `say`, which the command wires to rich's prompt and console. A command imports its adapter
only when it runs.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..cli_support import command, group, id_argument, open_home
from ..errors import Exit
from ..questions import Ask, Cancelled, Say

SECTION = "Posting by hand"

EpisodeArgument = Annotated[int, id_argument("The episode to post (see `autoretto episodes`).")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Show the screen and what would be sent; send nothing.")
]


# -- the commands ----------------------------------------------------------------------------------


def _needs_terminal(what: str) -> None:
    if not sys.stdin.isatty():
        typer.echo(
            f"autoretto: {what} needs a terminal: a person makes each post, so it cannot run "
            "from a script or cron",
            err=True,
        )
        raise typer.Exit(Exit.MISTAKE)


def _console_io() -> tuple[Any, Ask, Say]:
    from rich.console import Console
    from rich.prompt import Prompt

    console = Console(highlight=False)

    def ask(question: str) -> str:
        return Prompt.ask(question, console=console, default="", show_default=False)

    def say(text: str, style: str = "") -> None:
        console.print(text, style=style or None, markup=False)

    return console, ask, say


def _render_result(say: Say, result: Any, db: Any) -> Exit:
    """Say how the post went; the exit code it asks for."""
    from ..engine.run import outcome_exit
    from ..posts import get_post

    if result.outcome == "posted":
        say(
            f"Posted: {result.url or 'post ' + str(result.post_id)} ({result.reason})",
            style="bold green",
        )
        return Exit.DONE
    say(f"Not posted ({result.outcome}): {result.reason}", style="bold red")
    return outcome_exit(result.outcome, get_post(db, result.post_id)["state"], asked=True)


def _post_by_hand(platform: str, episode: int, dry_run: bool) -> None:
    """A post a person makes: the platform's screen, the person's choices, then the post (or,
    with --dry-run, what would be sent)."""
    import json

    from ..manual_post import MANUAL_PLATFORMS, post_by_hand, screen

    _needs_terminal(f"post {platform}")
    home = open_home()
    config, db = home.config, home.db
    _, ask, say = _console_io()
    shown = screen(config, db, platform, episode)
    try:
        choices = MANUAL_PLATFORMS[platform].ask_choices(shown, ask, say)
    except Cancelled as cancelled:
        say(f"Not posted: {cancelled}", style="yellow")
        raise typer.Exit(Exit.NEEDS_PERSON) from None
    if dry_run:
        say("Dry run: this would be sent (nothing was):")
        say(json.dumps(choices.to_json(), indent=2, ensure_ascii=False))
        return
    creator = getattr(shown, "creator", None)  # who posts, where the screen shows it
    result = post_by_hand(config, db, platform, episode, choices, creator=creator)
    code = _render_result(say, result, db)
    if code:
        raise typer.Exit(code)


def _post_command(name: str, help: str) -> Any:
    """The `post NAME` command of one platform posted by hand; `help` is its help."""

    def post(episode: EpisodeArgument, dry_run: DryRunOption = False) -> None:
        _post_by_hand(name, episode, dry_run)

    post.__doc__ = help
    post.__name__ = f"post_{name}"
    return post


def register(app: typer.Typer) -> None:
    from ..platforms import POST_HELP  # the registry's data: no adapter is imported

    post_app = group(
        "post",
        help="Make a post yourself at a terminal. The rules of each platform listed below ask "
        "that a person makes each post.",
        example="autoretto post tiktok 42",
    )
    for name, help in POST_HELP.items():
        command(post_app, name, _post_command(name, help), SECTION)
    app.add_typer(post_app, name="post", rich_help_panel=SECTION)
