"""The audience's replies (issue 28): `replies` (the list), `replies send` (a session now),
`replies confirm` (a reply that may be live)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..cli_support import (
    ChannelOption,
    JsonOption,
    check_channel,
    command,
    console,
    group,
    handled,
    id_argument,
    nothing_found,
    open_home,
    plain_table,
    print_json,
    say,
)

SECTION = "The audience"

ReplyArgument = Annotated[int, id_argument("The reply id (see `autoretto replies`).")]


def replies_listing(
    context: typer.Context,
    channel: ChannelOption = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help="queued, sending, published, may_be_live, failed, needs_person or gone.",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Every reply to a comment, newest first: the comment, the reply, its state and link.

    Replies go out in sessions from `autoretto run-due` (a few at a time, a pause after each),
    or now with `autoretto replies send`.

    Example: autoretto replies --state queued
    """
    if context.invoked_subcommand is not None:
        return
    from ..errors import UsageError, shown
    from ..replies import REPLY_STATES, list_replies, reply_json

    if state is not None and state not in REPLY_STATES:
        raise UsageError(
            f"--state: {shown(state)} is not a reply state; use one of {', '.join(REPLY_STATES)}"
        )
    home = open_home()
    check_channel(home.config, channel)
    found = [reply_json(r) for r in list_replies(home.db, channel=channel, state=state)]
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found(
            f"no {state} reply" if state else "no reply yet",
            "approve a draft with `autoretto inbox approve ID`",
        )
        return
    table = plain_table()
    for column in ("id", "comment", "platform", "state", "reply", "url / reason"):
        table.add_column(column, justify="right" if column in ("id", "comment") else "left")
    for r in found:
        table.add_row(
            str(r["id"]),
            str(r["comment_id"]),
            r["platform"],
            r["state"],
            r["text"],
            r["url"] or r["reason"] or "",
        )
    console().print(table)


def _show_results(report: Any) -> None:
    for result in report.results:
        say(f"reply {result.reply_id}: {result.outcome} ({result.state}) - {result.reason}")
    for note in report.notes:
        say(f"note: {note}")
    for where, moment in report.next_session.items():
        say(f"next session of {where}: {moment}")
    if not report.results and not report.notes:
        nothing_found("no reply to send", "approve one with `autoretto inbox approve ID`")


def replies_send(
    no_wait: Annotated[
        bool,
        typer.Option("--no-wait", help="No pause between replies: send them one after another."),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Send approved replies now, as your own session: a few per account (2 to 5), a pause of
    20 s to 4 min after each, within each platform's cap of replies a day.

    Exit 0 when every reply tried went out (or nothing was waiting); 4 when one failed for
    now (a later session tries it again); 1 when one needs you.

    Example: autoretto replies send
    """
    from ..replies import send_session

    home = open_home()
    report = send_session(home.config, home.db, wait=not no_wait)
    if json_output:
        print_json(report.as_json())
    else:
        _show_results(report)
    raise typer.Exit(_exit_code(report))


def _exit_code(report: Any) -> int:
    from ..engine.run import worst
    from ..errors import Exit

    codes = []
    for result in report.results:
        if result.outcome == "failed":
            codes.append(Exit.RETRY if result.state == "failed" else Exit.NEEDS_PERSON)
    return int(worst(codes))


def replies_confirm(
    reply_id: ReplyArgument,
    live: Annotated[
        str | None, typer.Option("--live", help="It is live, at this URL.", show_default=False)
    ] = None,
    not_live: Annotated[
        bool, typer.Option("--not-live", help="It is not there: let it be sent again.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Say whether a reply that may be live went out, where the platform cannot be asked (or
    let a reply that needs you be sent again once you fixed its cause).

    Examples:
      autoretto replies confirm 4 --live https://bsky.app/profile/me/post/3k
      autoretto replies confirm 4 --not-live
    """
    from ..errors import UsageError
    from ..replies import confirm_reply, reply_json

    if (live is None) == (not not_live):
        raise UsageError("say either --live URL or --not-live")
    home = open_home()
    reply = reply_json(confirm_reply(home.config, home.db, reply_id, live_url=live))
    if json_output:
        print_json(reply)
    else:
        say(f"reply {reply['id']} ({reply['platform']}) is {reply['state']}")


def register(app: typer.Typer) -> None:
    replies_app = group(
        "replies",
        help=replies_listing.__doc__ or "",
        invoke_without_command=True,
        no_args_is_help=False,
    )
    replies_app.callback()(handled(replies_listing))
    command(replies_app, "send", replies_send, SECTION)
    command(replies_app, "confirm", replies_confirm, SECTION)
    app.add_typer(replies_app, name="replies", rich_help_panel=SECTION)
