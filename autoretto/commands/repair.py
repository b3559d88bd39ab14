"""When something went wrong: `confirm` and `look` (a post that may be live), `incidents`, and
a restored database: `journal`, `resume`."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cli_support import (
    JsonOption,
    command,
    count,
    id_argument,
    nothing_found,
    open_home,
    print_json,
    say,
)

SECTION = "When something went wrong"

PostArgument = Annotated[int, id_argument("The post id (see `autoretto posts`).")]


def confirm(
    post_id: PostArgument,
    live: Annotated[
        str | None, typer.Option("--live", help="It is live, at this URL.", show_default=False)
    ] = None,
    not_live: Annotated[
        bool, typer.Option("--not-live", help="It is not there: let it be sent again.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Say whether a post that may be live went out, for platforms that cannot be asked.

    Examples:
      autoretto confirm 17 --live https://example.com/p/123
      autoretto confirm 17 --not-live
    """
    from ..engine.restore import confirm_post
    from ..errors import UsageError
    from ..posts import post_json

    if (live is None) == (not not_live):
        raise UsageError("say either --live URL or --not-live")
    home = open_home()
    post = post_json(confirm_post(home.config, home.db, post_id, live_url=live))
    if json_output:
        print_json(post)
    else:
        say(f"post {post['id']} ({post['platform']}) is {post['state']}")


def look(post_id: PostArgument, json_output: JsonOption = False) -> None:
    """Look for a post's last attempt on its platform; send it again only if it is not there.

    Exit 0 when the post is out; 4 when it is not and sending it failed for now; 1 when it
    needs you.

    Example: autoretto look 17
    """
    from ..engine.restore import look_post
    from ..engine.run import outcome_exit
    from ..posts import get_post

    home = open_home()
    result = look_post(home.config, home.db, post_id)
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
        say(f"post {result.post_id}: {result.outcome} - {result.reason}")
    state = get_post(home.db, result.post_id)["state"]
    raise typer.Exit(outcome_exit(result.outcome, state, asked=True))


def incidents(
    all_incidents: Annotated[bool, typer.Option("--all", help="Closed ones too.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Incidents: 3 or more failed posts within 2 hours open one; a success closes it.

    Example: autoretto incidents --all
    """
    from ..ledger.runs import list_incidents

    found = list_incidents(open_home().db, open_only=not all_incidents)
    if json_output:
        print_json(found)
        return
    if not found:
        nothing_found("no open incident" if not all_incidents else "no incident yet")
    for incident in found:
        state = f"closed {incident['closed_at']}" if incident["closed_at"] else "OPEN"
        say(
            f"incident {incident['id']}: opened {incident['opened_at']}, {state}, "
            f"{count(incident['failures'], 'failure')} - {incident['reason']}"
        )


def journal_command(json_output: JsonOption = False) -> None:
    """What the publish journal has that the database lacks (after a restore).

    Example: autoretto journal
    """
    from ..engine.restore import journal_report

    home = open_home()
    report = journal_report(home.config, home.db)
    if json_output:
        print_json(report)
        return
    seqs = f"#{report['journal_seq']}, database: #{report['database_seq']}"
    say(f"journal {report['journal']}: {seqs}")
    if report["held"]:
        say(f"POSTING IS HELD: {report['held']}")
    for entry in report["missing"]:
        if entry["kind"] == "publish":
            say(
                f"#{entry['seq']} {entry['at']} published episode {entry['episode_id']} "
                f"({entry['channel']}) on {entry['platform']}: {entry.get('url') or ''}"
            )
        elif entry["kind"] == "attempt":
            say(
                f"#{entry['seq']} {entry['at']} sent episode {entry['episode_id']} "
                f"({entry['channel']}) to {entry['platform']}: it may be there "
                f"(autoretto-{entry.get('identity') or '?'})"
            )
        elif entry["kind"] == "stamp":
            say(
                f"#{entry['seq']} {entry['at']} stamp of {entry['channel']} -> {entry['slot']} "
                f"({entry.get('slot_at') or 'local time'})"
            )
        else:  # the mark an earlier `resume` left: nothing was posted
            say(f"#{entry['seq']} {entry['at']} {entry['kind']}")
    if not report["missing"]:
        nothing_found("the database knows every line of the journal")


def resume(
    checked: Annotated[
        bool, typer.Option("--checked", help="I have checked what the platforms already have.")
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Lift the restore hold: write the journal's publishes back into the database first.

    Example: autoretto resume --checked
    """
    from ..engine.restore import resume as resume_posting

    home = open_home()
    report = resume_posting(home.config, home.db, checked=checked)
    if json_output:
        print_json(report)
    elif report["written_back"]:
        say(
            f"wrote {count(report['written_back'], 'journal entry', 'journal entries')} back; "
            "posting resumes"
        )
    else:
        say("posting is not held; nothing to resume")


def register(app: typer.Typer) -> None:
    command(app, "confirm", confirm, SECTION)
    command(app, "look", look, SECTION)
    command(app, "incidents", incidents, SECTION)
    command(app, "journal", journal_command, SECTION)
    command(app, "resume", resume, SECTION)
