"""The page's inbox (issue 28), beside the calendar: the comments under the releases, each with
its author, words, episode and state, the assistant's draft in a box a person can change, and
the buttons Approve (the reply goes out in the next session), Send now and Ignore.

Everything goes through the library the command line calls (autoretto/comments.py,
autoretto/replies.py); every POST passes the door's CSRF and Origin checks (door.py).
`send` is `replies.send_now(config, db, reply_id, who="page")`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .. import clock
from ..errors import UsageError
from ..ledger.comments import STATES
from .actions import database

if TYPE_CHECKING:
    from ..config import Config

#: the filter shown when none is asked for: what waits for a person
WAITING = ("new", "drafted", "held")


# -- what the page reads and does -------------------------------------------------------------


def inbox_page(config: Config, *, channel: str | None, state: str | None) -> dict[str, Any]:
    """The comments to show (newest first) and the filters."""
    from ..comments import listing

    channels = [entry.name for entry in config.channels]
    if channel is not None and channel not in channels:
        raise UsageError(f"channel: no channel {channel!r} (channels: {', '.join(channels)})")
    with database(config) as db:
        if state == "waiting" or state is None:
            found = [
                entry
                for waiting in WAITING
                for entry in listing(db, channel=channel, state=waiting)
            ]
            found.sort(key=lambda entry: (entry["published_at"] or "", entry["id"]), reverse=True)
        else:
            found = listing(db, channel=channel, state=state)
    return {
        "comments": found,
        "channels": channels,
        "states": STATES,
        "channel": channel,
        "state": state or "waiting",
    }


def approve(config: Config, comment_id: int, text: str | None) -> dict[str, Any]:
    from ..comments import approve_comment

    with database(config) as db:
        return approve_comment(db, comment_id, text=text, now=clock.now())


def ignore(config: Config, comment_id: int) -> dict[str, Any]:
    from ..comments import ignore_comment

    with database(config) as db:
        return ignore_comment(db, comment_id, now=clock.now())


def approve_and_send(config: Config, comment_id: int, text: str | None) -> dict[str, Any]:
    """Approve the reply, then send it at once through the replies' guards; the reply as the
    ledger has it then."""
    from ..comments import approve_comment
    from ..ledger.replies import reply_by_id
    from ..replies import send_now

    with database(config) as db:
        reply = approve_comment(db, comment_id, text=text, now=clock.now())
        send_now(config, db, reply["id"], who="page")
        return reply_by_id(db, reply["id"]) or reply


# -- the handlers -----------------------------------------------------------------------------


async def inbox(request: Request) -> Response:
    """GET /inbox (`?channel=NAME`, `?state=drafted`; by default what waits for a person)."""
    from .app import need_owner, read, render
    from .door import Refused

    visitor = need_owner(request)
    channel = request.query_params.get("channel") or None
    state = request.query_params.get("state") or None
    if state is not None and state != "waiting" and state not in STATES:
        raise Refused(400, f"state: give one of waiting, {', '.join(STATES)} (?state=drafted).")
    data = await read(request, inbox_page, channel=channel, state=state)
    return render(request, "inbox.html", visitor, title="Inbox", here="inbox", **data)


def _text(form: Any) -> str | None:
    text = str(form.get("text") or "").strip()
    return text or None


def _back(form: Any) -> str:
    """Back to the inbox with the filters the person had (only the inbox's own query)."""
    from urllib.parse import urlencode

    kept = {
        key: str(form.get(key))
        for key in ("channel", "state")
        if form.get(key) and str(form.get(key)).replace("_", "").isalnum()
    }
    return "/inbox" + (f"?{urlencode(kept)}" if kept else "")


async def approve_reply(request: Request) -> Response:
    """POST /inbox/{comment_id}/approve (form field `text`: the reply's words)."""
    from .app import do, flash, need_owner
    from .door import checked_form

    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    comment_id = request.path_params["comment_id"]
    reply = await do(request, visitor, approve, comment_id, _text(form))
    if reply is not None:
        flash(
            request,
            visitor,
            "ok",
            f"Comment {comment_id}: the reply is {reply['state']}; it goes out in the next "
            "reply session.",
        )
    return RedirectResponse(_back(form), status_code=303)


async def ignore_comment(request: Request) -> Response:
    """POST /inbox/{comment_id}/ignore."""
    from .app import do, flash, need_owner
    from .door import checked_form

    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    comment_id = request.path_params["comment_id"]
    found = await do(request, visitor, ignore, comment_id)
    if found is not None:
        flash(request, visitor, "ok", f"Comment {comment_id} is ignored.")
    return RedirectResponse(_back(form), status_code=303)


async def send_reply(request: Request) -> Response:
    """POST /inbox/{comment_id}/send: approve, then send at once (replies.send_now)."""
    from .app import do, flash, need_owner
    from .door import checked_form

    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    comment_id = request.path_params["comment_id"]
    reply = await do(request, visitor, approve_and_send, comment_id, _text(form))
    if reply is not None:
        where = f": {reply['url']}" if reply.get("url") else ""
        level = "ok" if reply["state"] in ("published", "queued", "sending") else "error"
        reason = f" ({reply['reason']})" if reply.get("reason") else ""
        flash(
            request,
            visitor,
            level,
            f"Comment {comment_id}: the reply is {reply['state'].replace('_', ' ')}"
            f"{where}{reason}.",
        )
    return RedirectResponse(_back(form), status_code=303)
