"""Replies to the audience's comments (issue 28): a reply is a post of its own, with an
identity from its content, the comment it answers and the account, through the same states
and guards as a post (autoretto/posts.py), sent in sessions at a person's pace (pace.py).

    queued → sending → published            (its comment `answered`)
             sending → may_be_live          (the answer was lost: looked for before any retry)
             sending → failed               (passing; three tries, then a person)
             sending → needs_person         (a revoked permission: the person is told)
             sending → gone                 (the comment was deleted meanwhile: never retried)

The guards before a send are the post's: published → nothing; needs_person or gone →
nothing; sending → taken back only from a run that is gone (liveness); may_be_live, or any
earlier attempt, or a restored database → the platform is asked first (`find_reply`; where it
cannot be asked a person confirms: `autoretto replies confirm`); the platform's cap of
replies per account and day (`replies_per_day`, counted in the usage ledger) → no try spent;
then a compare-and-set to `sending`, an attempt row and its journal line before the request.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import clock, faults, pace
from .clock import from_iso, iso
from .errors import UsageError
from .ledger import meta
from .ledger import replies as ledger
from .ledger.store import loads
from .posts import (
    LONGEST_LOOK_WAIT,
    JournalAhead,
    NotStarted,
    Posting,
    asked_from,
    count_toward_incident,
    holder_gone,
    journal_number,
    marker_of,
    settle_failure,
    start_journaled,
    write_journal,
)

if TYPE_CHECKING:
    from .config import ChannelConfig, Config
    from .engine.run import Run
    from .ledger.store import Store as Database
    from .platforms.base import Comment, Platform, ReplyRequest

log = logging.getLogger("autoretto.replies")

REPLY_STATES = ("queued", "sending", "published", "may_be_live", "failed", "needs_person", "gone")
#: the bucket of the usage ledger a platform's replies are counted in, per account and day
USAGE_BUCKET = "replies"


def approve(db: Database, comment_id: int, *, text: str, by: str, now: datetime) -> dict:
    """Queue the one reply to comment `comment_id` (by "person" or "rule"); the reply row.
    UsageError (one line) when there is no such comment or it cannot be answered."""
    text = text.strip()
    if not text:
        raise UsageError(f"comment {comment_id}: the reply is empty; give --text or a draft")
    queued = ledger.queue_reply(
        db, comment_id=comment_id, text=text, approved_by=by, not_before=None, now=iso(now)
    )
    if queued is None:
        raise UsageError(
            f"comment {comment_id} cannot be answered (no such comment, or it is gone or our "
            "own); see `autoretto inbox`"
        )
    return queued


# -- identity and gates ------------------------------------------------------------------------


def reply_identity(text: str, platform: str, account: str, comment_id: str) -> str:
    """What makes a reply this reply: its text, the platform, the account it goes out from and
    the platform's id of the comment it answers (16 hex digits). Never a row id: a restored
    database hands those out again."""
    digest = hashlib.sha256()
    for part in (text, platform, account, comment_id):
        digest.update(part.encode("utf-8") + b"\x1f")
    return digest.hexdigest()[:16]


def grapheme_count(text: str) -> int:
    """User-perceived characters (extended grapheme clusters, the `regex` module's `\\X`), the
    unit platforms count a reply's length in."""
    import regex

    return len(regex.findall(r"\X", text))


_LINK = r"(?i)\b(?:https?://|www\.)\S+"


def disclosed(platform_cls: type[Platform], text: str, drafted_by: str | None) -> str:
    """`text` with the platform's AI disclosure appended when it asks for one and the text is
    the assistant's draft (a person's own words carry none)."""
    words = platform_cls.reply_disclosure
    if not words or drafted_by != "assistant" or words.lower() in text.lower():
        return text
    return f"{text.rstrip()} {words}"


def gate_problems(
    platform_cls: type[Platform],
    text: str,
    *,
    episode: dict | None,
    channel_config: ChannelConfig | None,
    drafted_by: str | None,
) -> list[str]:
    """What keeps `text` from going out as a reply on the platform, one plain sentence each
    ([] when it may go): the channel's banned terms (its pipeline's policy gate's list), the
    platform's `reply_length` in graphemes, a link where the platform takes none in replies,
    the platform's AI disclosure missing from the assistant's unedited draft. `episode` is the
    one the comment is under (its title is no banned term's excuse either)."""
    import re

    title = platform_cls.title
    problems = []
    pipeline = getattr(channel_config, "pipeline", None)
    for term in getattr(pipeline, "banned_terms", ()) or ():
        if re.search(r"(?<!\w)" + re.escape(term) + r"(?!\w)", text, flags=re.IGNORECASE):
            problems.append(f"the reply contains the banned term {term!r}")
            break
    if not text.strip():
        problems.append("the reply is empty")
    length = grapheme_count(text)
    if platform_cls.reply_length and length > platform_cls.reply_length:
        problems.append(
            f"the reply is {length} characters; {title} takes {platform_cls.reply_length}"
        )
    if not platform_cls.reply_links and re.search(_LINK, text):
        problems.append(f"{title} takes no links in replies; remove the link")
    words = platform_cls.reply_disclosure
    if words and drafted_by == "assistant" and words.lower() not in text.lower():
        problems.append(f"{title} asks an AI-written reply to say so: add {words!r}")
    return problems


# -- the reply and its attempts ----------------------------------------------------------------


@dataclass(frozen=True)
class ReplyResult:
    """How one try at one reply ended: `outcome` is published | busy (another run has it, or
    it waits for a look) | refused_by_limit (no try spent) | failed (the reply's `state`
    says what now: failed, may_be_live, needs_person, gone) | waits (nothing may be sent from
    the account now)."""

    outcome: str
    reason: str
    reply_id: int
    state: str
    url: str | None = None
    sent: bool = False  # a request went out in this try

    def as_json(self) -> dict[str, Any]:
        return {
            "reply_id": self.reply_id,
            "outcome": self.outcome,
            "state": self.state,
            "reason": self.reason,
            "url": self.url,
            "sent": self.sent,
        }


def get_reply(db: Database, reply_id: int) -> dict:
    found = ledger.reply_by_id(db, reply_id)
    if found is None:
        raise UsageError(f"no reply {reply_id} (see `autoretto replies`)")
    return found


def reply_text(platform: Platform, reply: dict, comment: dict) -> str:
    """What goes out: the approved text, with the platform's AI disclosure where the text is the
    assistant's draft as it was approved by rule (a person's edit is theirs)."""
    drafted_by = "assistant" if reply["approved_by"] == "rule" else comment.get("draft_by")
    return disclosed(type(platform), reply["text"], drafted_by)


def identity_of(db: Database, reply: dict, comment: dict, platform: Platform) -> str:
    """The reply's identity, computed once and kept on the reply."""
    if reply.get("identity"):
        return reply["identity"]
    identity = reply_identity(
        reply_text(platform, reply, comment),
        platform.name,
        reply["account"],
        comment["platform_comment_id"],
    )
    ledger.keep_identity(db, reply["id"], identity)
    reply["identity"] = identity
    return identity


def in_doubt(db: Database, reply: dict) -> bool:
    """Can the database not prove that no earlier attempt of this reply reached the platform?
    True after an attempt that may have gone out, and for every reply a restored database
    knew (`resume` sets the mark)."""
    if ledger.was_tried(db, reply["id"]):
        return True
    found = meta.get(db, "replies_in_doubt_through")
    return found is not None and reply["id"] <= int(found)


def comment_of(db: Database, comment: dict) -> Comment:
    """The stored comment as the platform's `Comment` (its post's platform id looked up)."""
    from .ledger.posts import post_by_id
    from .platforms.base import Comment

    post = post_by_id(db, comment["post_id"]) or {}
    return Comment(
        id=comment["platform_comment_id"],
        post_id=post.get("platform_post_id") or "",
        author=comment["author"],
        text=comment["text"],
        published_at=comment["published_at"],
        author_id=comment["author_id"] or "",
        parent_id=comment["parent_id"],
        ref=loads(comment["ref"], {}) or {},
    )


def _request(
    posting: Posting, platform: Platform, reply: dict, comment: dict, attempt: dict
) -> ReplyRequest:
    from .platforms.base import ReplyRequest

    db, attempt_id = posting.db, attempt["id"]

    def save_handles(handles: dict) -> None:
        if attempt_id is not None:
            ledger.save_handles(db, attempt_id, handles)

    def beat() -> None:
        ledger.beat_reply(db, reply_id=reply["id"], run_id=posting.run_id, now=iso(clock.now()))

    return ReplyRequest(
        reply_id=reply["id"],
        attempt=reply["attempts"] + 1,
        marker=attempt["marker"],
        channel=reply["channel"],
        platform=reply["platform"],
        comment=comment_of(db, comment),
        text=reply_text(platform, reply, comment),
        handles=loads(attempt["handles"], {}) or {},
        save_handles=save_handles,
        heartbeat=beat,
    )


def take_back_from_gone_run(posting: Posting, reply: dict) -> dict:
    """A reply left `sending` by a run that is gone becomes `may_be_live` (posts'
    take_back_from_gone_run, for a reply). Returns the reply as it is now."""
    gone = holder_gone(posting, reply["run_id"], ledger.last_attempt(posting.db, reply["id"]))
    if gone is None:
        return reply
    ledger.take_back_from_gone_run(
        posting.db,
        reply_id=reply["id"],
        holder=reply["run_id"],
        beat=gone.beat,
        now=gone.now,
        look_from=gone.look_from,
    )
    return get_reply(posting.db, reply["id"])


def look_for_reply(
    posting: Posting, platform: Platform, reply: dict, comment: dict
) -> tuple[str, str, Any]:
    """Ask the platform whether it already has this reply (any attempt of it: they all carry
    the same marker). Returns (answer, reason, found) as posts.look_for_attempt does: `found`
    (now recorded published), `absent`, `cannot_ask`, `later` or `unknown`."""
    from .platforms.base import CannotAsk, PlatformError

    attempt = ledger.last_attempt(posting.db, reply["id"])
    ask_from = asked_from(reply, attempt, platform)
    now = clock.now()
    if posting.waits and ask_from is not None and now < ask_from <= now + LONGEST_LOOK_WAIT:
        clock.sleep_until(ask_from)  # run-due: a few minutes' wait, not an hour's
        now = max(ask_from, clock.now())
    if ask_from is not None and now < ask_from:
        return "later", f"{platform.title} is asked about it from {iso(ask_from)}", None
    marker = marker_of(identity_of(posting.db, reply, comment, platform))
    blank = {"id": None, "marker": marker, "handles": None}
    request = _request(posting, platform, reply, comment, attempt or blank)
    try:
        found = platform.find_reply(request)
    except CannotAsk as error:
        return (
            "cannot_ask",
            f"{error}; confirm with `autoretto replies confirm {reply['id']} --live URL` or "
            "--not-live",
            None,
        )
    except (PlatformError, OSError) as error:
        return "unknown", f"could not ask {platform.title}: {error}", None
    if found is None:
        return "absent", f"{platform.title} does not have {marker}", None
    record_published(
        posting, reply, attempt["id"] if attempt else None, found, expected=reply["state"]
    )
    return "found", f"found on {platform.title}: an earlier attempt went out", found


def _line(kind: str, reply: dict, comment: dict, moment: str, **more: Any) -> dict[str, Any]:
    """A journal line of the reply: enough to make it (and its comment) again in a restored
    database (ledger.replies.write_back)."""
    return {
        "kind": kind,
        "at": moment,
        "reply_id": reply["id"],
        "comment_id": comment["id"],
        "channel": reply["channel"],
        "platform": reply["platform"],
        "account": reply["account"],
        "platform_comment_id": comment["platform_comment_id"],
        "post_id": comment["post_id"],
        "episode_id": comment["episode_id"],
        "ref": loads(comment["ref"], {}) or {},
        "identity": reply.get("identity"),
        "text": reply["text"],
        **more,
    }


def record_published(
    posting: Posting,
    reply: dict,
    attempt_id: int | None,
    published: Any,
    *,
    expected: str,
    run_id: str | None = None,
) -> bool:
    """Move the reply to `published` (from `expected`) and its comment to `answered`, its
    journal line numbered in the same transaction, then written."""
    db = posting.db
    comment = ledger.comment_by_id(db, reply["comment_id"]) or {}
    moment = iso(clock.now())
    # A platform that gives a reply no address of its own (Instagram's and Threads' replies
    # have no permalink in their APIs): the post it is under, where a person finds it.
    url = published.url or _post_url(db, comment)
    line = _line(
        "reply", reply, comment, moment,
        url=url, platform_reply_id=published.platform_post_id,
    )  # fmt: skip
    changed = ledger.record_published(
        db,
        number=journal_number(posting, line),
        reply_id=reply["id"],
        attempt_id=attempt_id,
        url=url,
        platform_reply_id=published.platform_post_id,
        now=moment,
        expected=expected,
        run_id=run_id,
    )
    if changed:
        write_journal(posting)
    return changed


def _post_url(db: Database, comment: dict) -> str | None:
    from .ledger import posts as posts_ledger

    post = posts_ledger.post_by_id(db, comment["post_id"]) if comment.get("post_id") else None
    return (post or {}).get("url")


def _usage(platform: Platform) -> Any:
    from .platforms.base import UsageLedger

    return UsageLedger(platform.name)


def cap_reason(posting: Posting, platform: Platform, account: str) -> str | None:
    """The platform's cap of replies per account and day, when it is used up (no try is spent
    then), else None."""
    usage = _usage(platform)
    cap = platform.replies_per_day
    if usage.used(posting.db, account, USAGE_BUCKET, usage.day(posting.now)) >= cap:
        replies = "reply" if cap == 1 else "replies"
        return (
            f"{platform.title}: {cap} {replies} today from this account, the cap (kept below the "
            "platform's own limit); more tomorrow (UTC)"
        )
    return None


def blocked_reason(platform: Platform, reply: dict) -> str | None:
    """Why nothing may be sent for this reply from the account connected now, else None."""
    if platform.comments != "reply":
        return f"{platform.title} takes no replies from Autoretto"
    if not platform.is_connected():
        return f"{platform.title} is not connected"
    blocked = platform.not_ready_reason()
    if blocked:
        return blocked
    if platform.account_key() != reply["account"]:
        return (
            f"the comment was read from another {platform.title} account than the one connected "
            "now; connect that account again to answer it"
        )
    return None


def send_reply(
    posting: Posting, platform: Platform, reply_id: int, *, config: Config | None = None
) -> ReplyResult:
    """Send reply `reply_id` once, whatever state it is in: the guards of posts.send_post, for
    a reply (`config`: where the channel's banned terms are read). Never sends twice."""
    db = posting.db
    reply = get_reply(db, reply_id)
    title = platform.title

    def result(outcome: str, reason: str, **more: Any) -> ReplyResult:
        state = get_reply(db, reply_id)["state"]
        return ReplyResult(outcome, reason, reply_id, state, **more)

    if reply["state"] == "published":
        return result("published", f"already on {title}", url=reply["url"])
    if reply["state"] in ("needs_person", "gone"):
        return result("failed", reply["reason"] or reply["state"])
    if reply["state"] == "sending":
        reply = take_back_from_gone_run(posting, reply)
        if reply["state"] == "sending":
            return result("busy", f"reply {reply_id} is being sent by another run")
    comment = ledger.comment_by_id(db, reply["comment_id"])
    if comment is None:  # the foreign key cannot go; a damaged copy says so plainly
        return result("waits", f"reply {reply_id} answers comment {reply['comment_id']}, gone")
    if not in_doubt(db, reply) and _collected_gone(db, reply, comment):
        return result("failed", reply_gone_reason)
    blocked = blocked_reason(platform, reply)
    if blocked:
        return result("waits", blocked)
    if reply["state"] == "may_be_live" or (platform.can_find_attempts and in_doubt(db, reply)):
        answer, reason, found = look_for_reply(posting, platform, reply, comment)
        if answer == "found":
            return result("published", reason, url=found.url if found else None)
        settled = answer == "absent" or (answer == "cannot_ask" and reply["state"] != "may_be_live")
        if not settled:
            return result("busy", f"reply {reply_id} may be live: {reason}")
        reply = get_reply(db, reply_id)

    if _collected_gone(db, reply, comment):
        return result("failed", reply_gone_reason)
    text = reply_text(platform, reply, comment)
    episode = _episode(db, comment["episode_id"])
    problems = gate_problems(
        type(platform), text, episode=episode, channel_config=_channel(config, reply["channel"]),
        drafted_by=None if reply["approved_by"] == "person" else "assistant",
    )  # fmt: skip
    if problems and reply["state"] in ("queued", "failed"):
        reason = "; ".join(problems) + " (edit it, then `autoretto replies confirm ID --not-live`)"
        ledger.confirm_not_live(
            db, reply_id=reply_id, old=reply["state"], new="needs_person",
            attempts=reply["attempts"], reason=reason, now=iso(clock.now()),
        )  # fmt: skip
        _tell_needs_person(posting, platform, reply, reason)
        return result("failed", reason)
    limit = cap_reason(posting, platform, reply["account"])
    if limit:
        return result("refused_by_limit", limit)
    identity = identity_of(db, reply, comment, platform)  # the text as it goes out, kept

    attempt = _start_attempt(posting, platform, reply, comment, marker_of(identity))
    if isinstance(attempt, ReplyResult):
        return attempt
    usage = _usage(platform)
    day = usage.day(posting.now)
    if not usage.charge(db, reply["account"], USAGE_BUCKET, 1, platform.replies_per_day, day):
        _abandon_attempt(posting, reply, attempt["id"])  # another run took the day's last one
        return result("refused_by_limit", cap_reason(posting, platform, reply["account"]) or "")
    number = reply["attempts"] + 1
    request = _request(posting, platform, reply, comment, attempt)
    faults.checkpoint("reply_before_send")
    outcome = platform.reply(request)
    faults.checkpoint("reply_after_send")
    from .platforms.base import Published

    if isinstance(outcome, Published):
        record_published(
            posting, reply, attempt["id"], outcome, expected="sending", run_id=posting.run_id
        )
        faults.checkpoint("reply_after_recorded")
        return result("published", f"replied on {title}", url=outcome.url, sent=True)
    settled = settle_failure(outcome, state=reply["state"], number=number)
    if not settled.sent or outcome.kind in ("gone", "needs_person", "rejected"):
        usage.give_back(db, reply["account"], USAGE_BUCKET, day=day)  # nothing was made
    ledger.record_failure(
        db,
        reply_id=reply_id,
        attempt_id=attempt["id"],
        run_id=posting.run_id,
        state=settled.state,
        reason=settled.reason,
        attempts=settled.attempts,
        attempt_outcome=settled.attempt_outcome,
        error=outcome.reason,
        now=iso(clock.now()),
    )
    if settled.state == "needs_person":
        _tell_needs_person(posting, platform, reply, settled.reason, outcome.kind)
    if outcome.kind not in ("limit", "gone"):
        count_toward_incident(posting, settled.reason)
    return result(settled.outcome, settled.reason, sent=settled.sent)


reply_gone_reason = "the comment was deleted before the reply went out; never tried again"


def _collected_gone(db: Database, reply: dict, comment: dict) -> bool:
    """A comment collected as deleted meanwhile: its reply is recorded `gone` (never sent,
    never retried). True when the reply is gone now."""
    if comment["state"] != "gone" or reply["state"] not in ("queued", "failed", "may_be_live"):
        return False
    now = iso(clock.now())
    ledger.mark_gone(
        db, reply_id=reply["id"], old=reply["state"], reason=reply_gone_reason, now=now
    )
    return True


def _episode(db: Database, episode_id: int) -> dict | None:
    from .ledger.episodes import find_episode

    return find_episode(db, episode_id)


def _channel(config: Config | None, name: str) -> ChannelConfig | None:
    from .errors import NotFound

    if config is None:
        return None
    try:
        return config.channel(name)
    except NotFound:  # a channel since removed from the config: its terms are gone too
        return None


def _start_attempt(
    posting: Posting, platform: Platform, reply: dict, comment: dict, marker: str
) -> dict | ReplyResult:
    """CAS the reply to `sending`, open its attempt and write the attempt's journal line before
    anything is sent (posts.start_journaled); a ReplyResult when nothing may start."""
    state = reply["state"]
    line = _line("reply_attempt", reply, comment, iso(posting.now))
    try:
        attempt_id = start_journaled(
            posting,
            lambda number: ledger.open_attempt(
                posting.db,
                number=number,
                reply_id=reply["id"],
                state=state,
                attempts=reply["attempts"],
                run_id=posting.run_id,
                now=iso(posting.now),
                marker=marker,
                timeout_seconds=platform.request_timeout.total_seconds(),
            ),
            line,
            abandon=lambda attempt_id: _abandon_attempt(posting, reply, attempt_id),
        )
    except JournalAhead:
        held = "posting is held: the journal is ahead of the database (a restored copy)"
        return ReplyResult("busy", held, reply["id"], state)
    except NotStarted as error:
        return ReplyResult("failed", str(error), reply["id"], state)
    if attempt_id is None:
        return ReplyResult(
            "busy", f"reply {reply['id']} was taken by another run", reply["id"], state
        )
    attempt = ledger.attempt_by_id(posting.db, attempt_id)
    assert attempt is not None
    return attempt


def _abandon_attempt(posting: Posting, reply: dict, attempt_id: int) -> None:
    ledger.abandon_attempt(
        posting.db,
        reply_id=reply["id"],
        attempt_id=attempt_id,
        state=reply["state"],
        run_id=posting.run_id,
        now=iso(clock.now()),
    )


def _tell_needs_person(
    posting: Posting, platform: Platform, reply: dict, reason: str, kind: str = ""
) -> None:
    """Tell the person: `reply_needs_person`, naming the permission to grant again when the
    platform refused the account (`comment_scope`)."""
    facts: dict[str, Any] = {
        "reply_id": reply["id"],
        "comment_id": reply["comment_id"],
        "channel": reply["channel"],
        "platform": platform.name,
        "reason": reason,
    }
    if kind == "needs_person" and platform.comment_scope:
        facts["scope"] = platform.comment_scope
        facts["reason"] = f"{reason}; reconnect {platform.title} granting {platform.comment_scope}"
    posting.tell("reply_needs_person", **facts)


# -- a person's word ---------------------------------------------------------------------------


def confirm(posting: Posting, reply_id: int, *, live_url: str | None) -> dict:
    """A person says whether a reply that may be live is live (with its URL) or not.

    `--live URL` records it published (and journals it). `--not-live` lets it be sent again: a
    `may_be_live` reply goes back to `failed`, keeping its count of tries; a `needs_person`
    reply goes back to `queued` with its tries reset, for a person who fixed the cause."""
    from .platforms.base import Published

    reply = get_reply(posting.db, reply_id)
    new_state, attempts = confirmable(reply, live_url=live_url)
    if live_url is not None:
        attempt = ledger.last_attempt(posting.db, reply_id)
        record_published(
            posting, reply, attempt["id"] if attempt else None, Published(live_url, live_url),
            expected=reply["state"],
        )  # fmt: skip
        return get_reply(posting.db, reply_id)
    ledger.confirm_not_live(
        posting.db,
        reply_id=reply_id,
        old=reply["state"],
        new=new_state,
        attempts=attempts,
        reason="a person confirmed it is not live",
        now=iso(clock.now()),
    )
    return get_reply(posting.db, reply_id)


def confirmable(reply: dict, *, live_url: str | None) -> tuple[str, int]:
    """The state and tries a person's word leaves `reply` with; UsageError (one line) when
    there is nothing to confirm."""
    reply_id, state = reply["id"], reply["state"]
    if live_url is not None:
        if state not in ("may_be_live", "needs_person", "failed", "queued"):
            raise UsageError(f"reply {reply_id} is {state}; nothing to confirm")
        return "published", reply["attempts"]
    if state == "may_be_live":
        return "failed", reply["attempts"]
    if state == "needs_person":
        return "queued", 0
    raise UsageError(
        f"reply {reply_id} is {state}; only a reply that may be live or needs a person can be "
        "confirmed not live"
    )


# -- runs: one reply now, a person's session, run-due's sessions ------------------------------


def _platform_of(reply: dict) -> None:
    """UsageError (one line) when the reply's platform is unknown to this version."""
    from .platforms import REGISTRY

    if reply["platform"] not in REGISTRY:
        raise UsageError(f"reply {reply['id']} is for {reply['platform']}, unknown to this version")


def _in_a_run(config: Config, db: Database, kind: str) -> Any:
    """A run of `kind` that refuses to send while posting is held (PostingHeld)."""
    from .engine.run import Run

    return Run(config, db, kind)


def _held(run: Run) -> None:
    from .engine.run import refuse_when_held
    from .errors import PostingHeld

    hold = refuse_when_held(run)
    if hold:
        raise PostingHeld(hold)


def send_now(config: Config, db: Database, reply_id: int, who: str) -> ReplyResult:
    """Send one approved reply at once (the page's "send", by `who`), through the same guards
    and the same cap; no session, no pause."""
    _platform_of(get_reply(db, reply_id))  # a mistake is refused before the run starts
    with _in_a_run(config, db, f"reply-{who}") as run:
        _held(run)
        reply = get_reply(db, reply_id)
        platform = run.platform(reply["platform"])
        return send_reply(run.posting, platform, reply_id, config=config)


def confirm_reply(config: Config, db: Database, reply_id: int, *, live_url: str | None) -> dict:
    """`autoretto replies confirm ID --live URL | --not-live`, refused while posting is held."""
    confirmable(get_reply(db, reply_id), live_url=live_url)  # a mistake before the run starts
    with _in_a_run(config, db, "reply-confirm") as run:
        _held(run)
        return confirm(run.posting, reply_id, live_url=live_url)


@dataclass
class SessionReport:
    """What a run's reply sessions did: `--json`'s "replies" entry of run-due, and `replies
    send`'s answer."""

    results: list[ReplyResult] = field(default_factory=list)
    #: (platform, account) -> the moment of its next session, when one waits
    next_session: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def sent(self) -> list[int]:
        return [r.reply_id for r in self.results if r.sent]

    def as_json(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "published": [r.reply_id for r in self.results if r.outcome == "published"],
            "results": [r.as_json() for r in self.results],
            "next_session": self.next_session,
            "notes": self.notes,
        }


def _groups(replies: list[dict]) -> dict[tuple[str, str], list[dict]]:
    found: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for reply in replies:
        found[(reply["platform"], reply["account"])].append(reply)
    return found


def _zone(config: Config, channel: str) -> Any:
    from datetime import UTC
    from zoneinfo import ZoneInfo

    found = _channel(config, channel)
    # a channel since removed from the config: the account's day is UTC's
    return ZoneInfo(found.timezone) if found is not None else UTC


def _usable(run: Run, name: str) -> Platform | None:
    from .platforms import REGISTRY

    if name not in REGISTRY:
        return None
    platform = run.platform(name)
    return platform if platform.comments == "reply" else None


def run_sessions(run: Run, *, wait: bool, sleep: Any = clock.sleep_until) -> SessionReport:
    """run-due's reply sessions (after its slots): for every platform account with replies to
    send, the session of today (pace.reply_sessions, in the local day of the replies' channel)
    whose moment has come sends its few replies, a drawn pause after each; with `wait`, a
    session or a pause due before the next cron tick is waited for in-process. An idle run
    (nothing approved) costs one query."""
    report = SessionReport()
    if not ledger.sendable_replies(run.db):
        return report
    posting = run.posting
    tried: set[int] = set()
    stopped: set[tuple[str, str]] = set()  # an account that met a limit or a block this run
    while True:
        now = clock.now()
        ahead: list[datetime] = []
        went = False
        for (name, account), replies in _groups(ledger.sendable_replies(run.db)).items():
            platform = _usable(run, name)
            replies = [r for r in replies if r["id"] not in tried]
            if platform is None or not replies or (name, account) in stopped:
                continue
            zone = _zone(run.config, replies[0]["channel"])
            moment, session = _next_turn(run, name, account, zone, now)
            if moment is None:
                continue
            if moment > now:
                ahead.append(moment)
                report.next_session[f"{name}:{account}"] = iso(moment)
                continue
            report.next_session.pop(f"{name}:{account}", None)
            reply = replies[0]
            tried.add(reply["id"])
            run.stage(reply["channel"], f"{name}: reply {reply['id']} in the session of {session}")
            result = send_reply(
                replace_now(posting, clock.now()), platform, reply["id"], config=run.config
            )
            report.results.append(result)
            went = True
            if result.outcome in ("refused_by_limit", "waits"):
                stopped.add((name, account))
                report.notes.append(result.reason)
        if went:
            continue
        moments = pace.wait_for(run.pace, ahead, run.now, clock.now()) if wait else []
        if not moments:
            return report
        sleep(moments[0])


def replace_now(posting: Posting, now: datetime) -> Posting:
    from dataclasses import replace

    return replace(posting, now=now)


def _next_turn(
    run: Run, platform: str, account: str, zone: Any, now: datetime
) -> tuple[datetime | None, str]:
    """When the account may send its next reply: now or later in a session of today's (after
    the pause the last reply asks for), or the start of its next session (today's, else
    tomorrow's first); with the session's start as words."""
    today = now.astimezone(zone).date()
    sessions = pace.reply_sessions(run.pace, platform, account, today, zone)
    for session in sessions:
        if session.end <= now:
            continue
        if session.start > now:
            return session.start, iso(session.start)
        done = ledger.attempts_between(
            run.db, platform=platform, account=account,
            start=iso(session.start), end=iso(session.end),
        )  # fmt: skip
        if done >= session.size:
            continue
        last = ledger.last_attempt_of_account(run.db, platform=platform, account=account)
        if last is not None and done:
            after = from_iso(last) + pace.reply_pause(run.pace, platform, account, session, done)
            if after > now:
                return (after if after < session.end else None), iso(session.start)
        return now, iso(session.start)
    tomorrow = pace.reply_sessions(run.pace, platform, account, today + timedelta(days=1), zone)
    return (tomorrow[0].start if tomorrow else None), ""


def send_session(config: Config, db: Database, *, wait: bool) -> SessionReport:
    """`autoretto replies send`: the person's own session now, for every platform account with
    replies to send: a drawn few (pace.session_size), a drawn pause after each (unless `wait`
    is False), within the same caps."""
    report = SessionReport()
    with _in_a_run(config, db, "replies-send") as run:
        _held(run)
        posting = run.posting
        for (name, account), replies in _groups(ledger.sendable_replies(db)).items():
            platform = _usable(run, name)
            if platform is None:
                report.notes.append(f"{name} takes no replies from Autoretto")
                continue
            size = pace.session_size(run.pace, name, account, run.id)
            for done, reply in enumerate(replies[:size]):
                if done and wait:
                    pause = pace.reply_pause_draw(run.pace, name, account, run.id, done)
                    clock.sleep_until(clock.now() + pause)
                result = send_reply(
                    replace_now(posting, clock.now()), platform, reply["id"], config=config
                )
                report.results.append(result)
                if result.outcome in ("refused_by_limit", "waits"):
                    report.notes.append(result.reason)
                    break
    return report


# -- listings ----------------------------------------------------------------------------------


def reply_json(reply: dict) -> dict[str, Any]:
    """The stable `--json` shape of a reply."""
    return {
        "id": reply["id"],
        "comment_id": reply["comment_id"],
        "episode_id": reply.get("episode_id"),
        "channel": reply["channel"],
        "platform": reply["platform"],
        "comment_author": reply.get("comment_author"),
        "comment_text": reply.get("comment_text"),
        "text": reply["text"],
        "state": reply["state"],
        "approved_by": reply["approved_by"],
        "attempts": reply["attempts"],
        "url": reply["url"],
        "reason": reply["reason"],
        "published_at": reply["published_at"],
    }


def list_replies(
    db: Database, *, channel: str | None = None, state: str | None = None
) -> list[dict]:
    """Every reply (of `channel`, in `state`), newest first, with its comment."""
    return ledger.list_replies(db, channel=channel, state=state)
