"""The audience: `inbox` (the comments under the releases), `inbox collect`, `inbox show`,
`inbox approve`, `inbox edit`, `inbox ignore`, `inbox draft`."""

from __future__ import annotations

from typing import Annotated, Any

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
    id_argument,
    id_option,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    say,
)

SECTION = "The audience"

CommentId = Annotated[int, id_argument("The comment's id (see `autoretto inbox`).")]
TextOption = Annotated[
    str | None,
    typer.Option("--text", "-t", help="The reply's words.", show_default=False),
]


def inbox_listing(
    context: typer.Context,
    channel: ChannelOption = None,
    episode: Annotated[int | None, id_option("--episode", "-e", help="Only this episode.")] = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            "-s",
            help="Only comments in this state: new, drafted, held, approved, answered, "
            "ignored, gone, mine.",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """The comments under your releases, newest first: author, words, platform, episode,
    state, the assistant's draft and the reply's state.

    `autoretto inbox collect` reads them (cron runs it hourly). Approve a draft with
    `autoretto inbox approve ID`, change it with `inbox edit ID --text ...`, leave a comment
    unanswered with `inbox ignore ID`.

    Example: autoretto inbox --channel lofi --state drafted
    """
    if context.invoked_subcommand is not None:
        return
    from ..comments import listing

    home = open_home()
    check_channel(home.config, channel)
    found = listing(home.db, channel=channel, episode_id=episode, state=state)
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found("no comments", "`autoretto inbox collect` reads them; cron runs it hourly")
        return
    table = plain_table(title="Inbox", title_justify="left")
    for column in ("id", "channel", "platform", "episode", "author", "comment", "state", "draft"):
        table.add_column(column, justify="right" if column == "id" else "left", overflow="fold")
    for entry in found:
        table.add_row(
            str(entry["id"]),
            entry["channel"],
            entry["platform"],
            f"{entry['episode_id']} {entry['episode_title'] or ''}".strip(),
            entry["author"],
            entry["text"],
            _state_words(entry),
            entry["draft"] or "",
        )
    console().print(table)


def _state_words(entry: dict[str, Any]) -> str:
    words = entry["state"]
    if entry["reason"] and entry["state"] == "held":
        words += f" ({entry['reason']})"
    if entry["reply_state"]:
        words += f"; reply {entry['reply_state']}"
    if entry["reply_url"]:
        words += f" {entry['reply_url']}"
    return words


def inbox_collect(json_output: JsonOption = False) -> None:
    """Read the new comments under every published post and draft a reply to each.

    Bluesky (the post's thread) and every platform whose adapter reads comments, where
    connected; each comment is stored once whatever the overlap. A platform at its quota or
    rate limit waits for its next window; one that refuses the permission is named with what
    to reconnect. The exit code stays 0. Cron runs it hourly at the minute of `stats collect`
    (`autoretto stats minute`).

    Example: autoretto inbox collect
    """
    from .. import clock
    from ..comments import collect

    home = open_home()
    report = collect(home.config, home.db, clock.now())
    if json_output:
        print_json(report.as_json())
        return
    read = ", ".join(f"{name} {number}" for name, number in report.read.items()) or "nothing"
    say(
        f"read {read}; {count(report.stored, 'new comment')}, {report.drafted} drafted, "
        f"{report.held} held for you ({report.seconds:.1f} s)"
    )
    if report.approved_by_rule:
        say(f"{count(report.approved_by_rule, 'reply', 'replies')} approved by the rule")
    for name, why in report.skipped.items():
        say(f"note: {name} skipped: {why}")
    for name, note in report.cannot_read.items():
        say(f"note: {name} cannot read comments: {note}")
    for note in report.notes:
        say(f"note: {note}")


def inbox_show(comment_id: CommentId, json_output: JsonOption = False) -> None:
    """One comment: its words, author, episode, state, the draft and the reply.

    Example: autoretto inbox show 12
    """
    from ..comments import comment_json, get_comment

    found = comment_json(get_comment(open_home().db, comment_id))
    if json_output:
        print_json(found)
        return
    _show(found)


def _show(found: dict[str, Any]) -> None:
    say(f"comment {found['id']} on {found['platform']} ({found['channel']}), {found['state']}")
    say(f"episode {found['episode_id']}: {found['episode_title'] or ''}")
    say(f"{found['author']}: {found['text']}")
    if found["reason"]:
        say(f"held: {found['reason']}")
    if found["draft"]:
        say(f"draft ({found['draft_by']}): {found['draft']}")
    if found["reply_id"]:
        url = f" {found['reply_url']}" if found["reply_url"] else ""
        say(f"reply {found['reply_id']}: {found['reply_state']}{url}")


def inbox_approve(
    comment_id: CommentId, text: TextOption = None, json_output: JsonOption = False
) -> None:
    """Approve the reply to a comment: the draft, or your own words with --text. It goes out
    in the next reply session (run-due), at a person's pace.

    Example: autoretto inbox approve 12 --text "Thank you, glad it helps!"
    """
    from .. import clock
    from ..comments import approve_comment

    reply = approve_comment(open_home().db, comment_id, text=text, now=clock.now())
    if json_output:
        print_json(
            {key: reply[key] for key in ("id", "comment_id", "state", "text", "approved_by")}
        )
        return
    say(f"comment {comment_id}: reply {reply['id']} is {reply['state']}: {reply['text']}")


def inbox_edit(
    comment_id: CommentId,
    text: Annotated[str, typer.Option("--text", "-t", help="The draft's new words.")],
    json_output: JsonOption = False,
) -> None:
    """Change a comment's draft; a reply approved but not yet tried takes the new words.

    Example: autoretto inbox edit 12 --text "Thanks! The next one is out Friday."
    """
    from .. import clock
    from ..comments import edit_draft

    found = edit_draft(open_home().db, comment_id, text=text, now=clock.now())
    if json_output:
        print_json(found)
        return
    say(f"comment {comment_id} ({found['state']}): {found['draft']}")


def inbox_ignore(comment_id: CommentId, json_output: JsonOption = False) -> None:
    """Leave a comment unanswered (it is never drafted for or answered by rule).

    Example: autoretto inbox ignore 12
    """
    from .. import clock
    from ..comments import ignore_comment

    found = ignore_comment(open_home().db, comment_id, now=clock.now())
    if json_output:
        print_json(found)
        return
    say(f"comment {comment_id} is {found['state']}")


def inbox_draft(comment_id: CommentId, json_output: JsonOption = False) -> None:
    """Have the assistant draft the reply to a comment again.

    Example: autoretto inbox draft 12
    """
    from .. import clock
    from ..comments import redraft

    home = open_home()
    found = redraft(home.config, home.db, comment_id, clock.now())
    if json_output:
        print_json(found)
        return
    _show(found)


def register(app: typer.Typer) -> None:
    inbox_app = group(
        "inbox",
        help=inbox_listing.__doc__ or "",
        invoke_without_command=True,
        no_args_is_help=False,
    )
    inbox_app.callback()(handled(inbox_listing))
    command(inbox_app, "collect", inbox_collect, SECTION)
    command(inbox_app, "show", inbox_show, SECTION)
    command(inbox_app, "approve", inbox_approve, SECTION)
    command(inbox_app, "edit", inbox_edit, SECTION)
    command(inbox_app, "ignore", inbox_ignore, SECTION)
    command(inbox_app, "draft", inbox_draft, SECTION)
    app.add_typer(inbox_app, name="inbox", rich_help_panel=SECTION)
