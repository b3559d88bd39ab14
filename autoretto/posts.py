"""Posts and their attempts: the never-twice state machine (ARCHITECTURE.md §3).

One post per (episode, platform), enforced by a unique index. States:

    queued → sending → published
             sending → may_be_live   (the answer was lost after the platform may have published)
             sending → failed        (a passing failure; tried again on a later slot)
             sending → needs_person  (revoked token, missing permission, 3 failed attempts)

Every transition is a conditional UPDATE from the expected state, so two processes can never
both move one post to `sending`. Each attempt is a row of its own, with durable platform handles
saved before irreversible steps.

A post's identity on the platform is its content: a digest of the episode's videos and copy,
the platform and the account (`identity`), never a row id that a restored database hands out
again. Its marker (`autoretto-<identity>`) is the same on every attempt and travels with each
one (a tag, a record key, a file name, an Idempotency-Key), so the platform can always be asked
whether it already has this post. It is asked before the first send whenever the database
cannot prove no earlier attempt exists: a post that may be live, a post an earlier attempt of
which failed, and every post of an episode that a restored database knew (`in_doubt_through`).

Every attempt is written to the publish journal before its request goes out, and every publish
after it is recorded; every failure counts toward an incident.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clock, faults, incidents, journal, liveness
from .clock import from_iso, iso
from .episodes import episode_view, get_episode
from .errors import UsageError
from .ledger import meta
from .ledger import posts as ledger
from .ledger.store import loads
from .notify import NotifySettings, notify
from .platforms.base import (
    CannotAsk,
    CarouselImage,
    EpisodeView,
    Failure,
    Platform,
    PlatformError,
    PostRequest,
    Published,
)

if TYPE_CHECKING:
    from .journal import Journal
    from .ledger.store import Store as Database

log = logging.getLogger("autoretto.posts")

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Posting:
    """What moving a post needs to know about the run doing it."""

    db: Database
    run_id: str
    now: datetime
    stale_after: timedelta
    journal: Journal
    notify: NotifySettings
    #: every post whose request went out in this run, as it went (the run's report counts it)
    sent: list[int] = field(default_factory=list)
    #: may a look that is due within minutes be waited for in-process (run-due), rather
    #: than left for a later run?
    waits: bool = False
    #: where episode media lives (autoretto.media.Media); None: each episode's own folder
    media: Any = None

    def tell(self, event: str, **facts: Any) -> None:
        notify(self.notify, {"event": event, "at": iso(clock.now()), **facts})


@dataclass(frozen=True)
class PostResult:
    """How one try at one post ended, in the words of a decision."""

    outcome: str  # posted | failed | refused_by_limit | busy
    reason: str
    post_id: int
    url: str | None = None
    sent: bool = False  # a request went out in this try (the claim cannot be given back)
    #: nothing went out and the post can be tried again: the slot stays owed inside its window
    owed: bool = False


def ensure_post(
    db: Database,
    *,
    episode: dict,
    platform: str,
    slot: str | None,
    now: datetime,
    kind: str = "video",
) -> dict:
    """The `kind` post ("video" or "carousel") for (episode, platform), created `queued` if
    there is none yet."""
    return ledger.ensure_post(
        db,
        episode_id=episode["id"],
        channel=episode["channel"],
        platform=platform,
        slot=slot,
        now=iso(now),
        kind=kind,
    )


def get_post(db: Database, post_id: int) -> dict:
    found = ledger.post_by_id(db, post_id)
    if found is None:
        raise UsageError(f"no post {post_id} (see `autoretto posts`)")
    return found


def last_attempt(db: Database, post_id: int) -> dict | None:
    return ledger.last_attempt(db, post_id)


def content_identity(
    episode: EpisodeView, platform: str, account: str, digests: dict[str, str] | None = None
) -> str:
    """What makes a post this post: the bytes of the episode's videos, its copy, the platform
    and the account it goes to (16 hex digits). Row ids and paths are left out on purpose: a
    restored database hands ids out again, and a home may move. `digests`: the sha256 of
    files by name as the store recorded them (media in a bucket), used instead of reading a
    file this host may not have."""
    digest = hashlib.sha256()
    for name, path in sorted(episode.videos.items()):
        digest.update(f"video:{name}:".encode())
        recorded = (digests or {}).get(Path(path).name)
        if recorded:
            digest.update(bytes.fromhex(recorded))
            continue
        try:
            with open(path, "rb") as reader:
                digest.update(hashlib.file_digest(reader, "sha256").digest())
        except OSError:
            digest.update(b"missing")
    copy = [episode.title, episode.description, list(episode.tags), episode.texts]
    digest.update(json.dumps(copy, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    digest.update(f"|{platform}|{account}".encode())
    return digest.hexdigest()[:16]


def marker_of(identity: str) -> str:
    return f"autoretto-{identity}"


def post_identity(
    db: Database,
    post: dict,
    episode: dict,
    platform: Platform,
    images: tuple[CarouselImage, ...] = (),
) -> str:
    """The post's identity, computed once and kept on the post. A carousel's is its cards' and
    its copy's (`images`), under the platform's name and "/carousel"."""
    if post.get("identity"):
        return post["identity"]
    from .media import digests

    view, where = episode_view(episode), platform.name
    if post.get("kind", "video") != "video":
        cards = {f"card{index}": image.path for index, image in enumerate(images, 1)}
        view, where = replace(view, videos=cards), f"{platform.name}/{post['kind']}"
    identity = content_identity(view, where, platform.account_key(), digests(db, episode["id"]))
    ledger.keep_identity(db, post["id"], identity)
    post["identity"] = identity
    return identity


def in_doubt(db: Database, post: dict) -> bool:
    """Can the database not prove that no earlier attempt of this post reached the platform?
    True when an earlier attempt failed (whether its request went out is not known here), and
    for every post of an episode that a restored database knew (`resume` sets the mark)."""
    if ledger.was_tried(db, post["id"]):
        return True
    found = meta.get(db, "in_doubt_through")
    return found is not None and post["episode_id"] <= int(found)


def take_back_from_gone_run(posting: Posting, post: dict) -> dict:
    """A post left `sending` by a run that is gone (liveness.holder_gone) becomes
    `may_be_live`: it may have gone out. It is asked about no sooner than its request must have
    ended, counted on this run's own clock from now (the attempt's request timeout): a request
    still in flight is not on the platform yet, and a look then would send a second copy.
    Returns the post as it is now (unchanged while its run may be alive)."""
    gone = holder_gone(posting, post["run_id"], last_attempt(posting.db, post["id"]))
    if gone is None:
        return post
    ledger.take_back_from_gone_run(
        posting.db,
        post_id=post["id"],
        holder=post["run_id"],
        beat=gone.beat,
        now=gone.now,
        look_from=gone.look_from,
    )
    return get_post(posting.db, post["id"])


@dataclass(frozen=True)
class GoneHolder:
    """A run judged gone, for the take-over's CAS: the beat it was judged by (-1: no run), the
    moment (this run's clock), and when what it sent may be asked about."""

    beat: int
    now: str
    look_from: str


def holder_gone(posting: Posting, holder: str | None, attempt: dict | None) -> GoneHolder | None:
    """Whether the run `holder` that left something `sending` (a post, a reply) is gone, judged
    on this run's own clock (liveness.holder_gone); None while it may be alive (or it is this
    run). What it sent is asked about no sooner than its request must have ended: now plus the
    `attempt`'s request timeout."""
    if holder == posting.run_id:
        return None
    now = clock.now()
    gone = liveness.holder_gone(posting.db, holder, now=now, stale_after=posting.stale_after)
    if gone is None and holder is not None:
        return None
    timeout = (attempt or {}).get("timeout_seconds") or 0
    return GoneHolder(gone.beat if gone else -1, iso(now), iso(now + timedelta(seconds=timeout)))


def _request(
    posting: Posting,
    post: dict,
    episode: dict,
    attempt: dict,
    *,
    number: int,
    publish_at: datetime,
    slot: str | None,
    slot_at: str | None,
    images: tuple[CarouselImage, ...] = (),
) -> PostRequest:
    db = posting.db
    attempt_id = attempt["id"]

    def save_handles(handles: dict) -> None:
        # Replaces: the platform always hands over the whole set it needs to resume.
        if attempt_id is not None:
            ledger.save_handles(db, attempt_id, handles)
            faults.checkpoint("handles_saved")  # a handle on record, the next call not made

    def beat() -> None:
        ledger.beat_post(db, post_id=post["id"], run_id=posting.run_id, now=iso(clock.now()))

    return PostRequest(
        post_id=post["id"],
        attempt=number,
        marker=attempt["marker"],
        channel=post["channel"],
        platform=post["platform"],
        episode=episode_view(episode),
        publish_at=publish_at,
        slot=slot,
        slot_at=slot_at,
        handles=loads(attempt["handles"], {}),
        save_handles=save_handles,
        heartbeat=beat,
        kind=post.get("kind") or "video",
        images=images,
    )


#: run-due waits in-process this long at most for a look it may not make yet; longer, and the
#: slot waits for a later run
LONGEST_LOOK_WAIT = timedelta(minutes=10)


def asked_from(post: dict, attempt: dict | None, platform: Platform) -> datetime | None:
    """From when the platform may be asked about the post: its last attempt's start and the
    platform's `look_delay`, and no sooner than its request must have ended (`look_from`, set
    when its run was found gone)."""
    moments = [from_iso(post["look_from"])] if post.get("look_from") else []
    if attempt is not None:
        moments.append(from_iso(attempt["started_at"]) + platform.look_delay)
    return max(moments, default=None)


def look_for_attempt(
    posting: Posting, platform: Platform, post: dict, episode: dict
) -> tuple[str, str, Published | None]:
    """Ask the platform whether it already has this post (any attempt of it: they all carry
    the same marker).

    Returns (answer, reason, found) with answer one of: `found` (the post is now recorded
    `published`), `absent` (safe to send), `cannot_ask` (a person must confirm), `later` (too
    early to ask this platform) or `unknown` (asking failed; try later).
    """
    attempt = last_attempt(posting.db, post["id"])
    ask_from = asked_from(post, attempt, platform)
    now = posting.now
    waits = posting.waits and ask_from is not None and now < ask_from
    if waits and ask_from - now <= LONGEST_LOOK_WAIT:
        clock.sleep_until(ask_from)  # run-due: a few minutes' wait, not an hour's
        now = max(ask_from, clock.now())
    if ask_from is not None and now < ask_from:
        return "later", f"{platform.title} is asked about it from {iso(ask_from)}", None
    marker = marker_of(post_identity(posting.db, post, episode, platform))
    request = _request(
        posting, post, episode, attempt or {"id": None, "marker": marker, "handles": None},
        number=post["attempts"], publish_at=posting.now, slot=post["slot"], slot_at=None,
    )  # fmt: skip
    try:
        found = platform.find_attempt(request)
    except CannotAsk as error:
        return (
            "cannot_ask",
            f"{error}; confirm with `autoretto confirm {post['id']} --live URL` or --not-live",
            None,
        )
    except (PlatformError, OSError) as error:
        return "unknown", f"could not ask {platform.title}: {error}", None
    if found is None:
        return "absent", f"{platform.title} does not have {marker}", None
    record_published(
        posting, post, attempt["id"] if attempt else None, found, expected=post["state"]
    )
    return "found", f"found on {platform.title}: an earlier attempt went out", found


def record_published(
    posting: Posting,
    post: dict,
    attempt_id: int | None,
    published: Published,
    *,
    expected: str,
    run_id: str | None = None,
) -> bool:
    """Move the post to `published` (from `expected`), then journal it."""
    db = posting.db
    moment = iso(clock.now())
    line = {
        "kind": "publish",
        "at": moment,
        "post_id": post["id"],
        "episode_id": post["episode_id"],
        "channel": post["channel"],
        "platform": post["platform"],
        "slot": post["slot"],
        "identity": post.get("identity"),
        "url": published.url,
        "platform_post_id": published.platform_post_id,
        **_kind_of(post),
    }
    # The change and its journal number commit together, the journal's tail read under the
    # ledger's write lock.
    changed = ledger.record_published(
        db,
        number=journal_number(posting, line),
        post_id=post["id"],
        attempt_id=attempt_id,
        url=published.url,
        platform_post_id=published.platform_post_id,
        now=moment,
        expected=expected,
        run_id=run_id,
    )
    if changed:
        faults.checkpoint("before_journal")
        write_journal(posting)
        incidents.record_success(db, posting.now)
    return changed


def _kind_of(post: dict) -> dict[str, str]:
    """What a journal line says of the post's kind: nothing for a video (lines as they always
    were), `post_kind` for a carousel (a restored database writes back the right post)."""
    kind = post.get("kind") or "video"
    return {} if kind == "video" else {"post_kind": kind}


def journal_number(posting: Posting, line: dict[str, Any], *, before_send: bool = False) -> Any:
    """What takes `line`'s journal number inside the ledger's transaction (its `number`). A
    line `before_send` (an attempt's) that the journal cannot number (it is ahead: a restored
    database) rolls the change back with JournalAhead; a publish that happened is recorded all
    the same (the hold then stops the next run)."""

    def number(locked: Database) -> None:
        seq = journal.take(locked, posting.journal, line)
        if seq is None and before_send:
            raise JournalAhead

    return number


def write_journal(posting: Posting) -> None:
    """Append what the database has that the journal lacks. A publish that happened stays
    recorded when the journal cannot be written: the next run writes its line."""
    try:
        journal.catch_up(posting.db, posting.journal)
    except (*journal.WRITE_ERRORS, journal.JournalConflict) as error:  # the next run holds
        log.warning("the publish journal %s could not be written: %s", posting.journal, error)


class NotStarted(Exception):
    """An attempt that must not go out, in plain words."""


class JournalAhead(Exception):
    """Undo the attempt's transaction: the journal is ahead of the database (restored)."""


def _start_attempt(
    posting: Posting, post: dict, slot: str | None, marker: str, timeout: timedelta
) -> dict | None:
    """CAS the post from its current state to `sending`, open an attempt row and write the
    attempt's journal line, all before anything is sent. None when another run took the post.

    The post remembers the slot it is now sent for, so a run that takes over a dead run's
    slot finds this post instead of sending another episode for the same slot. Raises
    NotStarted (nothing sent, the post as it was) when the journal cannot take the line.
    """
    line = {
        "kind": "attempt",
        "at": iso(posting.now),
        "post_id": post["id"],
        "episode_id": post["episode_id"],
        "channel": post["channel"],
        "platform": post["platform"],
        "slot": slot,
        "identity": post["identity"],
        **_kind_of(post),
    }
    attempt_id = start_journaled(
        posting,
        lambda number: ledger.open_attempt(
            posting.db,
            number=number,
            post_id=post["id"],
            state=post["state"],
            attempts=post["attempts"],
            run_id=posting.run_id,
            now=iso(posting.now),
            slot=slot,
            marker=marker,
            timeout_seconds=timeout.total_seconds(),
        ),
        line,
        abandon=lambda attempt_id: _abandon_attempt(posting, post, attempt_id),
    )
    return None if attempt_id is None else ledger.attempt_by_id(posting.db, attempt_id)


def start_journaled(
    posting: Posting,
    open_attempt: Any,
    line: dict[str, Any],
    *,
    abandon: Any,
) -> int | None:
    """An attempt (a post's, a reply's) opened and its journal `line` written before anything
    is sent: `open_attempt(number)` CASes the row to `sending` and opens the attempt with the
    journal number taken inside its transaction (returns the attempt id, or None when another
    run took it); the line is then appended. Raises JournalAhead (the journal is ahead: nothing
    changed), NotStarted (nothing sent; `abandon(attempt_id)` put the row back) or
    JournalConflict."""
    try:
        attempt_id = open_attempt(journal_number(posting, line, before_send=True))
    except journal.JournalUnreachable as error:  # a bucket's journal: nothing was taken
        raise NotStarted(f"{error}; nothing was sent") from None
    if attempt_id is None:
        return None
    try:
        journal.catch_up(posting.db, posting.journal)
    except journal.JournalConflict:
        abandon(attempt_id)
        raise
    except journal.JournalUnreachable as error:
        abandon(attempt_id)
        raise NotStarted(f"{error}; nothing was sent") from None
    except journal.WRITE_ERRORS as error:
        abandon(attempt_id)
        raise NotStarted(
            f"the publish journal {posting.journal} could not be written ({error}); nothing "
            "was sent"
        ) from None
    return attempt_id


def _abandon_attempt(posting: Posting, post: dict, attempt_id: int) -> None:
    """Put the post back as it was before an attempt that never went out."""
    ledger.abandon_attempt(
        posting.db,
        post_id=post["id"],
        attempt_id=attempt_id,
        state=post["state"],
        run_id=posting.run_id,
        now=iso(clock.now()),
    )


def send_post(
    posting: Posting,
    platform: Platform,
    episode: dict,
    *,
    publish_at: datetime,
    slot: str | None = None,
    slot_at: str | None = None,
    kind: str = "video",
    images: tuple[CarouselImage, ...] = (),
) -> PostResult:
    """Post `episode` to `platform` once, whatever state its post is in. Never sends twice.
    `kind` "carousel": the episode's cards (`images`) as one carousel post (issue 29), a post
    of its own beside the video's."""
    db = posting.db
    post = ensure_post(
        db, episode=episode, platform=platform.name, slot=slot, now=posting.now, kind=kind
    )
    post_id = post["id"]
    title = platform.title

    if post["state"] == "published":
        return PostResult("posted", f"already on {title}", post_id, post["url"])
    if post["state"] == "needs_person":
        return PostResult("failed", post["reason"] or "needs a person", post_id)
    if post["state"] == "sending":
        post = take_back_from_gone_run(posting, post)
        if post["state"] == "sending":
            return PostResult("busy", f"post {post_id} is being sent by another run", post_id)
    identity = post_identity(db, post, episode, platform, images)
    if post["state"] == "may_be_live" or (platform.can_find_attempts and in_doubt(db, post)):
        # The database cannot prove that no earlier attempt exists: ask first.
        answer, reason, found = look_for_attempt(posting, platform, post, episode)
        if answer == "found":
            return PostResult("posted", reason, post_id, found.url if found else None)
        # A platform that cannot be asked about a post in doubt was checked by the person who
        # lifted the restore hold; one that may be live waits for `confirm`.
        settled = answer == "absent" or (answer == "cannot_ask" and post["state"] != "may_be_live")
        if not settled:
            return PostResult("busy", f"post {post_id} may be live: {reason}", post_id)
        post = get_post(db, post_id)

    if posting.media is not None:
        from .bucket import BucketError
        from .media import local_episode

        try:  # the files where this host reads them, before anything goes to the platform
            episode = local_episode(posting.media, db, episode)
        except BucketError as error:
            return PostResult("failed", f"{error}; nothing was sent", post_id, owed=True)

    # What the attempt will be, asked of the platform's limits: its handles are the ones the
    # last attempt left (a new attempt carries them over), so a post an earlier try began is
    # not refused for a limit that finishing it does not touch.
    earlier = last_attempt(db, post_id)
    probe = PostRequest(
        post_id=post_id, attempt=post["attempts"] + 1, marker=marker_of(identity),
        channel=post["channel"], platform=platform.name, episode=episode_view(episode),
        publish_at=publish_at, slot=slot, slot_at=slot_at,
        handles=loads(earlier["handles"], {}) if earlier else {}, kind=kind, images=images,
    )  # fmt: skip
    limit = platform.limit_reason(probe)
    if limit:
        return PostResult("refused_by_limit", limit, post_id)

    try:
        attempt = _start_attempt(posting, post, slot, marker_of(identity), platform.request_timeout)
    except JournalAhead:
        held = "posting is held: the journal is ahead of the database (a restored copy)"
        return PostResult("busy", held, post_id)
    except NotStarted as error:
        return PostResult("failed", str(error), post_id, owed=True)
    if attempt is None:
        return PostResult("busy", f"post {post_id} was taken by another run", post_id)
    number = post["attempts"] + 1
    request = _request(
        posting, post, episode, attempt, number=number, publish_at=publish_at, slot=slot,
        slot_at=slot_at, images=images,
    )  # fmt: skip
    faults.checkpoint("before_send")
    outcome = platform.publish(request)
    faults.checkpoint("after_send")
    if isinstance(outcome, Published) or outcome.sent:
        posting.sent.append(post_id)
    if isinstance(outcome, Published):
        record_published(
            posting, post, attempt["id"], outcome, expected="sending", run_id=posting.run_id
        )
        faults.checkpoint("after_publish_recorded")
        return PostResult("posted", f"published on {title}", post_id, outcome.url, sent=True)
    result = _record_failure(posting, post, attempt, outcome, number=number, title=title)
    _after_failure(posting, platform, post, outcome, result)
    return result


@dataclass(frozen=True)
class Settled:
    """Where a failed attempt leaves what it sent (a post, a reply): its new state, the
    decision's word, the tries it counts, why, whether a request went out, whether it is still
    owed inside its window, and the attempt's outcome."""

    state: str
    outcome: str
    attempts: int
    reason: str
    sent: bool = True
    owed: bool = False
    attempt_outcome: str = ""


def settle_failure(failure: Failure, *, state: str, number: int) -> Settled:
    """The one rule for a failed attempt number `number` of something that was in `state`:
    nothing sent → back as it was, no try spent; a lost answer → may be live; a limit → queued,
    no try spent; needs a person or refused → needs_person; gone (what a reply answers was
    deleted) → gone, never retried; a passing failure → failed, and after MAX_ATTEMPTS tries a
    person."""
    kind = failure.kind
    if not failure.sent and kind == "passing":
        # Nothing reached the platform: no try spent, nothing to look for, and the slot stays
        # owed inside its window (ARCHITECTURE.md §3).
        reason = f"{failure.reason}; nothing was sent, tried again inside the slot's window"
        new_state = "queued" if state == "queued" else "failed"
        return Settled(new_state, "failed", number - 1, reason, False, True, "not_sent")
    if kind == "lost_answer":
        reason = f"{failure.reason}; it may be live and is looked for before any retry"
        return Settled("may_be_live", "failed", number, reason, attempt_outcome=kind)
    if kind == "limit":
        # A limit met at the platform is no try spent: back to queued, attempt not counted.
        return Settled(
            "queued", "refused_by_limit", number - 1, failure.reason, False, attempt_outcome=kind
        )
    if kind in ("needs_person", "rejected"):
        return Settled("needs_person", "failed", number, failure.reason, attempt_outcome=kind)
    if kind == "gone":
        reason = f"{failure.reason}; never tried again"
        return Settled("gone", "failed", number, reason, attempt_outcome=kind)
    if number >= MAX_ATTEMPTS:
        reason = f"{failure.reason} (failed {number} times; a person must look)"
        return Settled("needs_person", "failed", number, reason, attempt_outcome=kind)
    return Settled("failed", "failed", number, failure.reason, attempt_outcome=kind)


def _record_failure(
    posting: Posting, post: dict, attempt: dict, failure: Failure, *, number: int, title: str
) -> PostResult:
    settled = settle_failure(failure, state=post["state"], number=number)
    ledger.record_failure(
        posting.db,
        post_id=post["id"],
        attempt_id=attempt["id"],
        run_id=posting.run_id,
        state=settled.state,
        reason=settled.reason,
        attempts=settled.attempts,
        attempt_outcome=settled.attempt_outcome,
        error=failure.reason,
        now=iso(clock.now()),
    )
    return PostResult(
        settled.outcome, settled.reason, post["id"], sent=settled.sent, owed=settled.owed
    )


def _after_failure(
    posting: Posting, platform: Platform, post: dict, failure: Failure, result: PostResult
) -> None:
    """Tell a person what needs them; count the failure toward an incident."""
    if failure.kind == "limit":
        return
    facts = {
        "post_id": post["id"],
        "channel": post["channel"],
        "platform": platform.name,
        "episode_id": post["episode_id"],
        "reason": result.reason,
    }
    blocked = platform.not_ready_reason()
    if failure.kind == "needs_person" and blocked:
        posting.tell("account_reconnect", **{**facts, "reason": blocked})
    if get_post(posting.db, post["id"])["state"] == "needs_person":
        posting.tell("post_needs_person", **facts)
    count_toward_incident(posting, result.reason)


def count_toward_incident(posting: Posting, reason: str) -> None:
    """Count a failure (a post's, a reply's) toward an incident; tell a person when it opens
    one."""
    opened = incidents.record_failure(posting.db, reason, posting.now)
    if opened is not None:
        posting.tell(
            "incident_opened",
            incident_id=opened["id"],
            failures=opened["failures"],
            reason=opened["reason"],
        )


# -- a person's word -----------------------------------------------------------------------


def confirm(posting: Posting, post_id: int, *, live_url: str | None) -> dict:
    """A person says whether a post that may be live is live (with its URL) or not.

    `--live URL` records it published (and journals it). `--not-live` lets it be sent again:
    a `may_be_live` post goes back to `failed`, keeping its count of tries; a `needs_person`
    post goes back to `queued` with its tries reset, for a person who fixed the cause.
    """
    post = get_post(posting.db, post_id)
    if live_url is not None:
        if post["state"] not in ("may_be_live", "needs_person", "failed", "queued"):
            raise UsageError(f"post {post_id} is {post['state']}; nothing to confirm")
        attempt = last_attempt(posting.db, post_id)
        record_published(
            posting, post, attempt["id"] if attempt else None, Published(live_url, live_url),
            expected=post["state"],
        )  # fmt: skip
        return get_post(posting.db, post_id)
    if post["state"] == "may_be_live":
        new_state, attempts = "failed", post["attempts"]
    elif post["state"] == "needs_person":
        new_state, attempts = "queued", 0
    else:
        raise UsageError(
            f"post {post_id} is {post['state']}; only a post that may be live or needs a person "
            "can be confirmed not live"
        )
    ledger.confirm_not_live(
        posting.db,
        post_id=post_id,
        old=post["state"],
        new=new_state,
        attempts=attempts,
        reason="a person confirmed it is not live",
        now=iso(clock.now()),
    )
    return get_post(posting.db, post_id)


def look(posting: Posting, platform: Platform, post_id: int) -> PostResult:
    """`autoretto look POST`: look for the post's last attempt, and send it if it is absent."""
    post = get_post(posting.db, post_id)
    episode = get_episode(posting.db, post["episode_id"])
    return send_post(posting, platform, episode, publish_at=posting.now, slot=post["slot"])


# -- paced posts and the in-flight post of a platform -----------------------------------------


def defer_post(
    db: Database,
    *,
    episode: dict,
    platform: str,
    slot_key: str,
    slot_at: str,
    moment: datetime,
    now: datetime,
) -> dict:
    """Queue the slot's post for its paced moment; it is decided when it goes out."""
    post = ensure_post(db, episode=episode, platform=platform, slot=slot_key, now=now)
    ledger.pace_post(
        db, post_id=post["id"], moment=iso(moment), slot=slot_key, slot_at=slot_at, now=iso(now)
    )
    return post


def clear_moment(db: Database, post_id: int) -> None:
    ledger.clear_moment(db, post_id)


def paced_posts(db: Database) -> list[dict]:
    """Posts waiting for their paced moment, soonest first."""
    return ledger.paced_posts(db)


def in_flight(
    db: Database, *, channel: str, platform: str, slot_key: str, kind: str
) -> dict | None:
    """The post that keeps `platform` busy for a slot: one already sent for this very slot (by
    a run that died before it could record the decision), else one still on its way (sending,
    may be live, or waiting for its paced moment)."""
    return ledger.post_in_flight(db, channel=channel, platform=platform, slot=slot_key, kind=kind)


def account_moments(
    db: Database, *, platform: str, episode_id: int, start: datetime, end: datetime
) -> list[datetime]:
    """When the platform's other posts went out (or are paced to), between two instants."""
    return [
        from_iso(moment)
        for moment in ledger.post_moments(
            db, platform=platform, episode_id=episode_id, start=iso(start), end=iso(end)
        )
    ]


def beat(connection: Any, run_id: str, now: datetime) -> None:
    """The heartbeat of the posts `run_id` is sending: they are not taken for stale."""
    ledger.beat_posts(connection, run_id=run_id, now=iso(now))


# -- a restored database: what the journal knows, written back --------------------------------


def write_back(db: Database, entry: dict[str, Any], moment: str) -> None:
    """`resume`: a publish or an attempt the journal knows and a restored database forgot.

    A publish becomes a `published` post again. An attempt whose post is not published becomes
    `may_be_live`: it is looked for (by its identity) before anything is sent. The episode row
    is recreated as a placeholder when the old database never had it (which also moves the
    next episode id past it).
    """
    ledger.write_back(db, entry, moment)


# -- listings ------------------------------------------------------------------------------


def post_json(post: dict) -> dict:
    """The stable `--json` shape of a post."""
    return {
        "id": post["id"],
        "episode_id": post["episode_id"],
        "channel": post["channel"],
        "platform": post["platform"],
        "state": post["state"],
        "url": post["url"],
        "platform_post_id": post["platform_post_id"],
        "attempts": post["attempts"],
        "reason": post["reason"],
        "kind": post.get("kind") or "video",
        "not_before": post.get("not_before"),
    }


def list_posts(db: Database, *, channel: str | None = None, state: str | None = None) -> list[dict]:
    return ledger.list_posts(db, channel=channel, state=state)
