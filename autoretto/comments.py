"""The audience's comments (issue 28): collected from the platforms, drafted for, and answered
or ignored by a person (`autoretto inbox`, the page's inbox).

`collect` reads, for every published post on a platform whose class reads comments
(`Platform.comments` "read" or "reply") and is connected, the comments that came after the
post's cursor, stores each once whatever the overlap (ledger/comments.py), keeps the page's
cursor once its comments are stored, and has the assistant draft for each new one
(assistant.py). Cron runs it at the home's own minute, as `stats collect`:

- a platform at its quota or rate limit waits for its next window (the report says so; no
  error, what was read stays stored);
- a platform that refuses the permission: the person who connected it is told to reconnect
  with the permission (`comment_scope`) named: notify event `comments_reconnect`, and a line
  in health.platform_trouble until a read succeeds again;
- a platform that has no comments Autoretto reads is listed as "cannot read", with why.

The person's side: `approve` (a reply is queued, replies.approve), `edit` (the draft, and a
queued reply's text while it is untried), `ignore`, `redraft`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import assistant
from .clock import iso
from .errors import AutorettoError, NotFound, UsageError
from .ledger import comments as ledger
from .ledger import meta
from .ledger.store import dumps, loads

if TYPE_CHECKING:
    from .config import ChannelConfig, Config
    from .ledger.store import Store as Database

log = logging.getLogger("autoretto.comments")

#: `meta` keys of the platforms whose comments cannot be read until a person reconnects
TROUBLE_PREFIX = "comments:trouble:"
#: new comments drafted per collect at most (the rest wait for the next)
DRAFTS_PER_RUN = 200
NOTE_NO_COMMENTS = "{title} has no comments: it only delivers the post"


@dataclass
class CollectReport:
    """What one `inbox collect` did."""

    at: datetime
    read: dict[str, int] = field(default_factory=dict)  # platform -> comments read
    stored: int = 0  # comments new to the inbox
    drafted: int = 0
    held: int = 0
    approved_by_rule: int = 0
    gone: int = 0  # comments deleted on the platform before they were answered
    skipped: dict[str, str] = field(default_factory=dict)  # platform -> why not (all) read
    cannot_read: dict[str, str] = field(default_factory=dict)  # platform -> its note
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "read": self.read,
            "stored": self.stored,
            "drafted": self.drafted,
            "held": self.held,
            "approved_by_rule": self.approved_by_rule,
            "gone": self.gone,
            "skipped": self.skipped,
            "cannot_read": self.cannot_read,
            "notes": self.notes,
            "seconds": round(self.seconds, 3),
        }


# -- collect ----------------------------------------------------------------------------------


def collect(config: Config, db: Database, now: datetime) -> CollectReport:
    """Read the new comments under every published post on the platforms that have them,
    store each once, and draft for the new ones. Never raises for a platform's trouble: the
    platform is skipped for this run and the report says why."""
    from .engine.run import Run
    from .platforms import REGISTRY, class_or_base
    from .platforms.base import LimitReached, NeedsPerson, PlatformError

    started = time.monotonic()
    report = CollectReport(now)
    chosen = {name for channel in config.channels for name in channel.platforms or ()}
    known = set(ledger.published_platforms(db)) | chosen
    looking = Run(config, db, "comments", record=False, now=now)
    for name in dict.fromkeys([*(n for n in REGISTRY if n in known), *sorted(known)]):
        cls = class_or_base(name)
        if cls.comments not in ("read", "reply"):
            report.cannot_read[name] = cls.comments_note or NOTE_NO_COMMENTS.format(title=cls.title)
            continue
        platform = looking.platform(name)
        if not platform.is_connected():
            report.skipped[name] = f"{platform.title} is not connected"
            continue
        account = platform.account().account_id if hasattr(platform, "account") else ""
        read = 0
        try:
            for post in ledger.published_posts(db, [name]):
                read += _read_post(db, platform, account, post, now, report)
        except LimitReached as limit:
            report.skipped[name] = f"waits for its next window: {limit.reason}"
        except NeedsPerson as refused:
            report.skipped[name] = _reconnect(config, db, cls, refused.reason, now)
        except PlatformError as error:
            report.skipped[name] = error.reason
            log.warning("inbox: %s skipped for this run: %s", name, error.reason)
        except NotImplementedError:  # a class that says it reads comments, but cannot yet
            report.skipped[name] = f"{cls.title}'s adapter does not read comments yet"
        else:
            meta.forget(db, TROUBLE_PREFIX + name)
        report.read[name] = read
    draft_waiting(config, db, now, report)
    meta.put(db, "comments_collected_at", int(now.timestamp()))
    report.seconds = time.monotonic() - started
    return report


def _read_post(
    db: Database,
    platform: Any,
    account: str,
    post: dict[str, Any],
    now: datetime,
    report: CollectReport,
) -> int:
    """Read one post's new comments, page by page, each page stored with its cursor."""
    read = 0
    cursor = ledger.cursor_of(db, platform.name, account, post["id"])
    for page in platform.read_comments(str(post["platform_post_id"]), cursor):
        found = [
            {
                "platform_comment_id": comment.id,
                "episode_id": post["episode_id"],
                "channel": post["channel"],
                "parent_id": comment.parent_id,
                "author": comment.author,
                "author_id": comment.author_id or None,
                "text": comment.text,
                "published_at": comment.published_at,
                "ref": dumps(comment.ref) if comment.ref else None,
                "mine": comment.mine,
            }
            for comment in page.comments
        ]
        stored = ledger.store_page(
            db,
            found,
            platform=platform.name,
            account=account,
            post_id=post["id"],
            cursor=page.cursor,
            now=iso(now),
        )
        read += len(found)
        report.stored += len(stored)
        if page.gone:
            report.gone += ledger.mark_gone(db, platform.name, account, page.gone, iso(now))
        if page.cursor is not None:
            cursor = page.cursor
    return read


def _reconnect(config: Config, db: Database, cls: Any, reason: str, now: datetime) -> str:
    """A refused permission: kept for health.platform_trouble, told once (`comments_reconnect`)
    to the person who connected the account. Returns the report's words."""
    from .notify import notify

    scope = cls.comment_scope or "the permission to read comments"
    fix = f"autoretto connect {cls.name}{getattr(cls, 'connect_arguments', '')}"
    words = f"{reason}; reconnect {cls.title} granting {scope}: `{fix}`"
    key = TROUBLE_PREFIX + cls.name
    told = meta.get(db, key) is not None
    meta.put(db, key, dumps({"reason": reason, "scope": scope, "fix": fix, "at": iso(now)}))
    if not told:
        notify(
            config.notify,
            {
                "event": "comments_reconnect",
                "at": iso(now),
                "platform": cls.name,
                "scope": scope,
                "reason": reason,
                "fix": fix,
                "line": f"{cls.title} refused reading comments: {words}",
            },
        )
    log.warning("inbox: %s cannot read comments: %s", cls.name, words)
    return words


def comment_troubles(db: Database) -> dict[str, dict[str, Any]]:
    """platform -> {reason, scope, fix, at} of each platform whose comments cannot be read
    until a person reconnects it."""
    return {
        key[len(TROUBLE_PREFIX) :]: loads(value, {})
        for key, value in meta.starting_with(db, TROUBLE_PREFIX).items()
    }


# -- drafts -----------------------------------------------------------------------------------


def draft_waiting(
    config: Config, db: Database, now: datetime, report: CollectReport | None = None
) -> CollectReport:
    """Draft for the `new` comments (oldest first, at most DRAFTS_PER_RUN)."""
    report = report or CollectReport(now)
    helpers = _Helpers(config, db)
    for entry in ledger.waiting_for_a_draft(db, DRAFTS_PER_RUN):
        try:
            outcome = _draft_one(config, db, entry["id"], now, helpers)
        except assistant.AssistantUnavailable as unavailable:
            report.notes.append(f"the assistant cannot draft now: {unavailable}")
            break  # Gemini will not answer the next one either; the next run asks again
        if outcome == "held":
            report.held += 1
        elif outcome in ("drafted", "approved"):
            report.drafted += 1
            report.approved_by_rule += outcome == "approved"
    return report


class _Helpers:
    """What drafting many comments shares: the seed and, when asked for, the Gemini client."""

    def __init__(self, config: Config, db: Database) -> None:
        from .engine.run import pace_seed

        self.seed = pace_seed(db, create=True)
        self.config = config
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            self._client = assistant.gemini_client(self.config)
        return self._client


def _channel(config: Config, name: str) -> ChannelConfig | None:
    return next((channel for channel in config.channels if channel.name == name), None)


def _draft_one(
    config: Config,
    db: Database,
    comment_id: int,
    now: datetime,
    helpers: _Helpers,
    *,
    from_states: tuple[str, ...] = ("new",),
) -> str:
    """Draft for one comment: "drafted", "held", "approved" (by the channel's rule) or
    "moved" (a person or another run changed it meanwhile)."""
    from .platforms import class_or_base

    found = ledger.comment(db, comment_id)
    if found is None or found["state"] not in from_states:
        return "moved"
    cls = class_or_base(found["platform"])
    channel = _channel(config, found["channel"])
    facts = assistant.Facts(
        comment_id=comment_id,
        platform_comment_id=found["platform_comment_id"],
        author=found["author"],
        text=found["text"],
        channel=found["channel"],
        title=found["episode_title"] or "",
        platform_title=cls.title,
        reply_length=cls.reply_length,
    )
    if assistant.uses_gemini(channel):
        assert channel is not None
        draft = assistant.gemini_draft(facts, channel, helpers.client())
    else:
        draft = assistant.offline_draft(facts, helpers.seed)
    held = draft.held_reason
    moved = ledger.set_draft(
        db,
        comment_id,
        state="held" if held else "drafted",
        category=draft.category,
        draft=None if held else draft.reply,
        draft_by=None if held else draft.by,
        reason=held,
        now=iso(now),
        from_states=from_states,
    )
    if not moved:
        return "moved"
    if held:
        return "held"
    by_rule = channel is not None and channel.auto_reply and draft.category in assistant.BY_RULE
    if by_rule and _approve_by_rule(db, cls, channel, found, draft, now):
        return "approved"
    return "drafted"


def _approve_by_rule(
    db: Database,
    cls: Any,
    channel: ChannelConfig,
    found: dict[str, Any],
    draft: assistant.Draft,
    now: datetime,
) -> bool:
    """A thanks or praise draft that passes the reply gates goes without a person on a
    channel with `auto_reply = true`. Without the gates (replies.gate_problems) nothing is
    approved by rule."""
    from .episodes import get_episode
    from .replies import approve

    try:
        from .replies import gate_problems  # type: ignore[attr-defined]
    except ImportError:
        return False
    episode = get_episode(db, found["episode_id"])
    problems = gate_problems(
        cls, draft.reply, episode=episode, channel_config=channel, drafted_by=draft.by
    )
    if problems:
        log.info("inbox: comment %s waits for a person: %s", found["id"], "; ".join(problems))
        return False
    approve(db, found["id"], text=draft.reply, by="rule", now=now)
    return True


# -- the person's side ------------------------------------------------------------------------


def get_comment(db: Database, comment_id: int) -> dict[str, Any]:
    found = ledger.comment(db, comment_id)
    if found is None:
        raise NotFound(f"no comment {comment_id}; see `autoretto inbox`")
    return found


def comment_json(found: dict[str, Any]) -> dict[str, Any]:
    """A comment as `inbox --json` gives it (a stable interface)."""
    return {
        "id": found["id"],
        "channel": found["channel"],
        "platform": found["platform"],
        "episode_id": found["episode_id"],
        "episode_title": found["episode_title"],
        "author": found["author"],
        "text": found["text"],
        "published_at": found["published_at"],
        "collected_at": found["collected_at"],
        "state": found["state"],
        "category": found["category"],
        "draft": found["draft"],
        "draft_by": found["draft_by"],
        "reason": found["reason"],
        "parent_id": found["parent_id"],
        "reply_id": found["reply_id"],
        "reply_state": found["reply_state"],
        "reply_url": found["reply_url"],
    }


def listing(
    db: Database,
    *,
    channel: str | None = None,
    episode_id: int | None = None,
    state: str | None = None,
    limit: int = 200,
) -> list[dict[str, Any]]:
    """The inbox, newest first (`state` one of ledger.STATES, else a UsageError)."""
    if state is not None and state not in ledger.STATES:
        raise UsageError(f"--state: give one of {', '.join(ledger.STATES)} (not {state!r})")
    states = (state,) if state else ()
    return [
        comment_json(found)
        for found in ledger.listing(
            db, channel=channel, episode_id=episode_id, states=states, limit=limit
        )
    ]


def approve_comment(
    db: Database, comment_id: int, *, text: str | None, now: datetime
) -> dict[str, Any]:
    """A person approves a reply to the comment: `text`, else its draft. The reply row."""
    from .replies import approve

    found = get_comment(db, comment_id)
    if found["state"] in ("answered", "gone", "mine"):
        raise UsageError(f"comment {comment_id} is {found['state']}: it takes no reply")
    if found["reply_id"] is not None and text is not None and not _untried(found):
        raise UsageError(
            f"comment {comment_id}'s reply is already {found['reply_state']}; its text can "
            "no longer change"
        )
    if text is not None and not text.strip():
        raise UsageError("--text: the reply is empty; give its words, or leave --text out")
    words = found["draft"] if text is None else text
    if not (words or "").strip():
        raise UsageError(
            f"comment {comment_id} has no draft: give the reply with --text "
            f'(e.g. autoretto inbox approve {comment_id} --text "Thank you!")'
        )
    reply = approve(db, comment_id, text=words, by="person", now=now)
    if found["reply_id"] is not None and reply["text"] != found["draft"]:
        # An approved reply given new words: the draft shown with it says the same.
        ledger.set_draft(
            db,
            comment_id,
            state="approved",
            category=found["category"],
            draft=reply["text"],
            draft_by="person",
            reason=None,
            now=iso(now),
            from_states=("approved",),
        )
    return reply


def _untried(found: dict[str, Any]) -> bool:
    return found["reply_state"] == "queued" and not found["reply_attempts"]


def edit_draft(db: Database, comment_id: int, *, text: str, now: datetime) -> dict[str, Any]:
    """A person's words for the draft; a queued reply not yet tried takes them too. The
    comment as it is then."""
    from .ledger import replies as reply_ledger

    text = text.strip()
    if not text:
        raise UsageError("--text: the draft is empty; give the words of the reply")
    found = get_comment(db, comment_id)
    if found["state"] not in ledger.EDITABLE:
        raise UsageError(f"comment {comment_id} is {found['state']}: its draft cannot change")
    if found["state"] == "approved" or found["reply_id"] is not None:
        if not _untried(found):
            raise UsageError(
                f"comment {comment_id}'s reply is already {found['reply_state']}; its text can "
                "no longer change"
            )
        queued = reply_ledger.queue_reply(
            db,
            comment_id=comment_id,
            text=text,
            approved_by="person",
            not_before=None,
            now=iso(now),
        )
        if queued is None or queued["text"] != text:
            raise UsageError(
                f"comment {comment_id}'s reply went on its way meanwhile; its text stays"
            )
        state = "approved"
    else:
        state = "drafted"
    ledger.set_draft(
        db,
        comment_id,
        state=state,
        category=found["category"],
        draft=text,
        draft_by="person",
        reason=None,
        now=iso(now),
        from_states=(found["state"],),
    )
    return comment_json(get_comment(db, comment_id))


def ignore_comment(db: Database, comment_id: int, *, now: datetime) -> dict[str, Any]:
    """A person leaves the comment unanswered. The comment as it is then."""
    found = get_comment(db, comment_id)
    if found["state"] == "ignored":
        return comment_json(found)
    if not ledger.set_state(db, comment_id, "ignored", from_states=ledger.IGNORABLE, now=iso(now)):
        raise UsageError(f"comment {comment_id} is {found['state']}: it cannot be ignored now")
    return comment_json(get_comment(db, comment_id))


def redraft(config: Config, db: Database, comment_id: int, now: datetime) -> dict[str, Any]:
    """The assistant drafts for the comment again (a new, drafted or held one)."""
    found = get_comment(db, comment_id)
    if found["state"] not in ledger.DRAFTABLE:
        raise UsageError(
            f"comment {comment_id} is {found['state']}: only a new, drafted or held comment "
            "is drafted again"
        )
    try:
        _draft_one(config, db, comment_id, now, _Helpers(config, db), from_states=ledger.DRAFTABLE)
    except assistant.AssistantUnavailable as unavailable:
        raise AutorettoError(f"the assistant cannot draft now: {unavailable}") from None
    return comment_json(get_comment(db, comment_id))


def last_collected(db: Database) -> datetime | None:
    from datetime import UTC

    found = meta.get(db, "comments_collected_at")
    return None if found is None else datetime.fromtimestamp(int(found), UTC)


def ref_of(found: dict[str, Any]) -> dict[str, Any]:
    """The platform's threading facts kept with a comment (Comment.ref)."""
    return json.loads(found.get("ref") or "{}")
