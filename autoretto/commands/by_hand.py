"""Posts a person makes: `post tiktok EPISODE`, `post pinterest EPISODE`.

The posting screens refuse to run without a terminal: TikTok and Pinterest ask that a person
makes each post, so no script or cron job can press the button.

The screens' questions live in small functions that take `ask` (a prompt → the typed answer)
and `say` (a line, with an optional rich style), so tests drive them with scripted answers; the
commands wire rich's prompt and console to them. Nothing on a screen is chosen for the person:
the privacy has no default, comments / Duet / Stitch start off, commercial disclosure starts off.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..cli_support import command, group, id_argument, open_home
from ..errors import Exit

if TYPE_CHECKING:
    from ..manual_post import PinterestScreen, TikTokScreen
    from ..platforms.pinterest import PinterestChoices
    from ..platforms.tiktok import CreatorInfo, TikTokChoices

SECTION = "Posting by hand"

Ask = Callable[[str], str]
Say = Callable[..., None]  # say(text, style="")

PRIVACY_LABELS = {
    "PUBLIC_TO_EVERYONE": "Everyone",
    "MUTUAL_FOLLOW_FRIENDS": "Friends (followers you follow back)",
    "FOLLOWER_OF_CREATOR": "Followers",
    "SELF_ONLY": "Only me (private)",
}
YES = ("y", "yes")
NO = ("n", "no", "")

EpisodeArgument = Annotated[int, id_argument("The episode to post (see `autoretto episodes`).")]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Show the screen and what would be sent; send nothing.")
]


class Cancelled(Exception):
    """The person declined; nothing was sent."""


# -- the questions --------------------------------------------------------------------------------


def ask_yes_no(ask: Ask, say: Say, question: str) -> bool:
    """A yes/no question whose empty answer is no."""
    while True:
        answer = ask(f"{question} [y/N]").strip().lower()
        if answer in YES:
            return True
        if answer in NO:
            return False
        say("Answer y or n.", style="yellow")


def ask_text(ask: Ask, say: Say, question: str, default: str, *, limit: int, required: bool) -> str:
    """A line of text: empty keeps `default`; longer than `limit` is asked again."""
    shown = default if len(default) <= 60 else default[:57] + "…"
    while True:
        answer = ask(f"{question} [{shown}]" if default else question).strip()
        value = answer or default
        if required and not value:
            say(f"{question} cannot be empty.", style="yellow")
            continue
        if len(value) > limit:
            say(f"{question} is {len(value)} characters; at most {limit}.", style="yellow")
            continue
        return value


def ask_number(ask: Ask, say: Say, question: str, items: list[str]) -> int:
    """The index of one of `items`, listed 1..n. Nothing is preselected: an empty answer is
    refused and the question asked again."""
    for number, item in enumerate(items, start=1):
        say(f"  {number}. {item}")
    while True:
        answer = ask(f"{question} (1-{len(items)})").strip()
        if not answer:
            say("Choose one: nothing is chosen for you.", style="yellow")
            continue
        if answer.isdigit() and 1 <= int(answer) <= len(items):
            return int(answer) - 1
        say(f"Type a number from 1 to {len(items)}.", style="yellow")


def choose_privacy(creator: CreatorInfo, ask: Ask, say: Say, *, audited: bool) -> str:
    """The privacy, from the creator's `privacy_level_options`, nothing preselected. Until the
    app is audited only "Only me" is offered (TikTok makes every such post private)."""
    options = list(creator.privacy_level_options)
    if not audited:
        if "SELF_ONLY" not in options:
            raise Cancelled("this TikTok account offers no private option, and posts stay private")
        options = ["SELF_ONLY"]
    if not options:
        raise Cancelled("TikTok offers no privacy option for this account now")
    say("Who can see this post?")
    chosen = ask_number(ask, say, "Privacy", [PRIVACY_LABELS.get(o, o) for o in options])
    return options[chosen]


def choose_interactions(creator: CreatorInfo, ask: Ask, say: Say) -> tuple[bool, bool, bool]:
    """(comments, Duet, Stitch): each off unless ticked; not offered, greyed out, where the
    creator turned it off in TikTok."""
    chosen = []
    for what, disabled in (
        ("Allow comments", creator.comment_disabled),
        ("Allow Duet", creator.duet_disabled),
        ("Allow Stitch", creator.stitch_disabled),
    ):
        if disabled:
            say(f"  {what}: off (turned off in your TikTok settings)", style="dim")
            chosen.append(False)
        else:
            chosen.append(ask_yes_no(ask, say, what + "?"))
    return chosen[0], chosen[1], chosen[2]


def choose_disclosure(ask: Ask, say: Say, *, privacy: str) -> tuple[bool, bool, bool]:
    """(disclose, your brand, branded content). Off unless turned on; when on, at least one of
    the two must be chosen, and branded content cannot be private."""
    from ..platforms.tiktok import BRANDED_NOT_PRIVATE

    while True:
        if not ask_yes_no(
            ask, say, "Disclose commercial content (promotes a brand, product or service)?"
        ):
            return False, False, False
        your_brand = ask_yes_no(ask, say, '  "Your brand" (you promote yourself or your business)?')
        branded = ask_yes_no(ask, say, '  "Branded content" (a paid partnership with a brand)?')
        if not (your_brand or branded):
            say(
                'With disclosure on, choose "Your brand" and/or "Branded content" '
                "(or turn disclosure off).",
                style="yellow",
            )
            continue
        if branded and privacy == "SELF_ONLY":
            say(f"Refused: {BRANDED_NOT_PRIVATE}", style="yellow")
            continue
        if branded:
            say('Your post will be labelled "Paid partnership".')
        elif your_brand:
            say('Your post will be labelled "Promotional content".')
        return True, your_brand, branded


def show_video(screen: TikTokScreen | PinterestScreen, say: Say) -> None:
    video = screen.video
    duration = f"{video.duration:.1f} s" if video.duration else "unknown"
    say(
        f"Video: {duration}, {video.size_text}, {video.resolution}  ({video.path})",
    )


def tiktok_choices(screen: TikTokScreen, ask: Ask, say: Say) -> TikTokChoices:
    """The TikTok screen's questions, in TikTok's order; the person's choices. Raises
    Cancelled when the person declines or the video cannot be posted by this creator."""
    from ..platforms.tiktok import (
        TITLE_MAX_UTF16,
        TikTokChoices,
        choice_problems,
        declaration,
        utf16_units,
    )

    creator = screen.creator
    handle = f" (@{creator.username})" if creator.username else ""
    say(f"Posting to TikTok as {creator.nickname or 'your account'}{handle}", style="bold")
    say(f'Episode {screen.episode_id}: "{screen.episode_title}"')
    show_video(screen, say)
    longest = creator.max_video_post_duration_sec
    if screen.video.duration and longest and screen.video.duration > longest:
        raise Cancelled(
            f"the video is {screen.video.duration:.0f} s; this creator may post videos of up to "
            f"{longest} s"
        )
    if screen.already:
        say(f"Note: {screen.already}", style="yellow")
    if not screen.audited:
        say(
            "Until the app is audited by TikTok, posts are private: only you will see this one.",
            style="bold yellow",
        )
    while True:
        title = ask_text(ask, say, "Title", screen.default_title, limit=10_000, required=True)
        if utf16_units(title) <= TITLE_MAX_UTF16:
            break
        say(f"The title is longer than TikTok's {TITLE_MAX_UTF16} characters.", style="yellow")
    privacy = choose_privacy(creator, ask, say, audited=screen.audited)
    comment, duet, stitch = choose_interactions(creator, ask, say)
    disclose, your_brand, branded = choose_disclosure(ask, say, privacy=privacy)
    if screen.is_aigc:
        say("The post is labelled AI-generated content.")
    choices = TikTokChoices(
        title=title,
        privacy_level=privacy,
        allow_comment=comment,
        allow_duet=duet,
        allow_stitch=stitch,
        disclose_commercial=disclose,
        your_brand=your_brand,
        branded_content=branded,
        is_aigc=screen.is_aigc,
    )
    say("After posting, TikTok takes a few minutes to process the video before it appears.")
    say(declaration(choices), style="bold")
    if not ask_yes_no(ask, say, "Post to TikTok now?"):
        raise Cancelled("nothing was posted")
    confirmed = TikTokChoices(**{**choices.to_json(), "music_confirmed": True})
    problems = choice_problems(
        confirmed, creator, audited=screen.audited, duration=screen.video.duration
    )
    if problems:
        raise Cancelled("; ".join(problems))
    return confirmed


def pinterest_choices(screen: PinterestScreen, ask: Ask, say: Say) -> PinterestChoices:
    """The Pinterest screen's questions; the person's choices. Raises Cancelled when the person
    declines."""
    from ..platforms.pinterest import (
        ALT_TEXT_MAX,
        DESCRIPTION_MAX,
        LINK_MAX,
        TITLE_MAX,
        PinterestChoices,
        choice_problems,
    )

    say(f"Pinning to Pinterest as {screen.account}", style="bold")
    if screen.sandbox:
        say("Sandbox (Trial access): this Pin is visible only to you.", style="bold yellow")
    say(f'Episode {screen.episode_id}: "{screen.episode_title}"')
    show_video(screen, say)
    if screen.already:
        say(f"Note: {screen.already}", style="yellow")
    say("Which board?")
    labels = [
        board["name"] + (" (secret)" if board.get("privacy") == "SECRET" else "")
        for board in screen.boards
    ]
    board = screen.boards[ask_number(ask, say, "Board", labels)]
    title = ask_text(ask, say, "Title", screen.default_title, limit=TITLE_MAX, required=True)
    description = ask_text(
        ask, say, "Description", screen.default_description, limit=DESCRIPTION_MAX, required=False
    )
    while True:
        link = ask_text(ask, say, "Link (empty: none)", "", limit=LINK_MAX, required=False)
        if not link or link.startswith(("https://", "http://")):
            break
        say("The link must start with https://", style="yellow")
    alt_text = ask_text(
        ask, say, "Alt text", screen.default_alt_text, limit=ALT_TEXT_MAX, required=False
    )
    duration = screen.video.duration
    while True:
        answer = ask(
            f"Cover frame, seconds into the video [{screen.default_cover_seconds}]"
        ).strip()
        try:
            cover = float(answer) if answer else screen.default_cover_seconds
        except ValueError:
            say("Type a number of seconds, e.g. 2.5", style="yellow")
            continue
        if cover < 0 or (duration and cover > duration):
            say(f"Choose a time from 0 to {duration or 0:.1f} seconds.", style="yellow")
            continue
        break
    choices = PinterestChoices(
        board_id=board["id"],
        board_name=board["name"],
        title=title,
        description=description,
        link=link,
        alt_text=alt_text,
        cover_seconds=cover,
    )
    problems = choice_problems(choices, duration=duration)
    if problems:
        raise Cancelled("; ".join(problems))
    say(f'Board "{board["name"]}", title "{title}", cover at {cover} s.')
    if not ask_yes_no(ask, say, "Pin it now?"):
        raise Cancelled("nothing was posted")
    return choices


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


def post_tiktok(episode: EpisodeArgument, dry_run: DryRunOption = False) -> None:
    """Post an episode to TikTok yourself, from an interactive screen.

    Shows who you post as, the video, and asks for the title, who can see it (nothing is
    chosen for you), comments / Duet / Stitch and commercial content disclosure, then asks you
    to confirm after TikTok's Music Usage Confirmation. Needs a terminal.

    Example: autoretto post tiktok 42
    """
    from ..manual_post import tiktok_screen

    _post_by_hand("tiktok", episode, dry_run, tiktok_screen, tiktok_choices)


def post_pinterest(episode: EpisodeArgument, dry_run: DryRunOption = False) -> None:
    """Pin an episode to Pinterest yourself, from an interactive screen.

    Lists your boards to choose from and asks for the title, description, link, alt text and
    the cover frame (seconds into the video). Off until [platforms.pinterest] approved = true.
    Needs a terminal.

    Example: autoretto post pinterest 42
    """
    from ..manual_post import pinterest_screen

    _post_by_hand("pinterest", episode, dry_run, pinterest_screen, pinterest_choices)


def _post_by_hand(
    platform: str, episode: int, dry_run: bool, screen_of: Any, choices_of: Any
) -> None:
    """A post a person makes: the platform's screen, the person's choices, then the post (or,
    with --dry-run, what would be sent)."""
    import json

    from ..manual_post import post_by_hand

    _needs_terminal(f"post {platform}")
    home = open_home()
    config, db = home.config, home.db
    _, ask, say = _console_io()
    screen = screen_of(config, db, episode)
    try:
        choices = choices_of(screen, ask, say)
    except Cancelled as cancelled:
        say(f"Not posted: {cancelled}", style="yellow")
        raise typer.Exit(Exit.NEEDS_PERSON) from None
    if dry_run:
        say("Dry run: this would be sent (nothing was):")
        say(json.dumps(choices.to_json(), indent=2, ensure_ascii=False))
        return
    creator = getattr(screen, "creator", None)  # who posts, as TikTok's screen shows it
    result = post_by_hand(config, db, platform, episode, choices, creator=creator)
    code = _render_result(say, result, db)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    post_app = group(
        "post",
        help="Make a post yourself at a terminal (TikTok, Pinterest).",
        example="autoretto post tiktok 42",
    )
    command(post_app, "tiktok", post_tiktok, SECTION)
    command(post_app, "pinterest", post_pinterest, SECTION)
    app.add_typer(post_app, name="post", rich_help_panel=SECTION)
