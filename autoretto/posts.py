"""Posts and their attempts: the never-twice state machine (ARCHITECTURE.md §3).

One post per (episode, platform), enforced by a unique index. States:

    queued → sending → published
             sending → may_be_live   (the answer was lost after the platform may have published)
             sending → failed        (a passing failure; tried again on a later slot)
             sending → needs_person  (revoked token, missing permission, 3 failed attempts)

Every transition is a conditional UPDATE from the expected state, so two processes can never
both move one post to `sending`. Each attempt is a row of its own with a marker the platform
can find again, and durable platform handles saved before irreversible steps.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from . import clock, faults
from .clock import iso
from .episodes import episode_view
from .platforms.base import CannotAsk, Failure, Platform, PlatformError, PostRequest, Published
from .store import dumps, execute, loads, row, rows, transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class PostResult:
    """How one try at one post ended, in the words of a decision."""

    outcome: str  # posted | failed | refused_by_limit | busy
    reason: str
    post_id: int
    url: str | None = None
    sent: bool = False  # a request went out in this try (the claim cannot be given back)


def ensure_post(
    db: Database, *, episode: dict, platform: str, slot: str | None, now: datetime
) -> dict:
    """The post for (episode, platform), created `queued` if there is none yet."""
    moment = iso(now)
    execute(
        db,
        "INSERT OR IGNORE INTO posts (episode_id, channel, platform, state, attempts, slot,"
        " created_at, updated_at) VALUES (:episode, :channel, :platform, 'queued', 0, :slot,"
        " :now, :now)",
        {
            "episode": episode["id"],
            "channel": episode["channel"],
            "platform": platform,
            "slot": slot,
            "now": moment,
        },
    )
    found = row(
        db,
        "SELECT * FROM posts WHERE episode_id = ? AND platform = ?",
        (episode["id"], platform),
    )
    assert found is not None
    return found


def get_post(db: Database, post_id: int) -> dict | None:
    return row(db, "SELECT * FROM posts WHERE id = ?", (post_id,))


def last_attempt(db: Database, post_id: int) -> dict | None:
    return row(
        db, "SELECT * FROM post_attempts WHERE post_id = ? ORDER BY id DESC LIMIT 1", (post_id,)
    )


def mark_stale_sending(db: Database, *, stale_before: datetime, now: datetime) -> list[int]:
    """Posts left `sending` by a run that is gone become `may_be_live`; returns their ids."""
    stale = rows(
        db,
        "SELECT id FROM posts WHERE state = 'sending' AND heartbeat_at < ?",
        (iso(stale_before),),
    )
    moved = []
    for post in stale:
        changed = execute(
            db,
            "UPDATE posts SET state = 'may_be_live', run_id = NULL, updated_at = :now,"
            " reason = 'the run sending it stopped; it may have gone out'"
            " WHERE id = :id AND state = 'sending' AND heartbeat_at < :stale_before",
            {"now": iso(now), "id": post["id"], "stale_before": iso(stale_before)},
        )
        if changed:
            execute(
                db,
                "UPDATE post_attempts SET outcome = 'unknown', ended_at = :now"
                " WHERE post_id = :id AND ended_at IS NULL",
                {"now": iso(now), "id": post["id"]},
            )
            moved.append(post["id"])
    return moved


def _request(
    db: Database,
    post: dict,
    episode: dict,
    attempt: dict,
    *,
    publish_at: datetime,
    slot: str | None,
    slot_at: str | None,
    run_id: str,
) -> PostRequest:
    attempt_id = attempt["id"]

    def save_handles(handles: dict) -> None:
        current = loads(
            row(db, "SELECT handles FROM post_attempts WHERE id = ?", (attempt_id,))["handles"],
            {},
        )
        current.update(handles)
        execute(
            db,
            "UPDATE post_attempts SET handles = ? WHERE id = ?",
            (dumps(current), attempt_id),
        )

    def beat() -> None:
        execute(
            db,
            "UPDATE posts SET heartbeat_at = :now WHERE id = :id AND run_id = :run",
            {"now": iso(clock.now()), "id": post["id"], "run": run_id},
        )

    return PostRequest(
        post_id=post["id"],
        attempt=post["attempts"] if attempt.get("number") is None else attempt["number"],
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
    )


def look_for_attempt(
    db: Database, platform: Platform, post: dict, episode: dict, *, run_id: str, now: datetime
) -> tuple[str, str, Published | None]:
    """Ask the platform whether the last attempt of a `may_be_live` post went out.

    Returns (answer, reason, found) with answer one of: `found` (the post is now recorded
    `published`), `absent` (safe to send again), `cannot_ask` (a person must confirm),
    `unknown` (asking failed; try later).
    """
    attempt = last_attempt(db, post["id"])
    if attempt is None:
        return "absent", "no attempt was made", None
    request = _request(
        db,
        post,
        episode,
        attempt,
        publish_at=now,
        slot=post["slot"],
        slot_at=None,
        run_id=run_id,
    )
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
        return "absent", f"{platform.title} does not have attempt {attempt['marker']}", None
    _record_published(db, post["id"], attempt["id"], found, expected="may_be_live", now=now)
    return "found", f"found on {platform.title}", found


def _record_published(
    db: Database,
    post_id: int,
    attempt_id: int,
    published: Published,
    *,
    expected: str,
    now: datetime,
    run_id: str | None = None,
) -> bool:
    moment = iso(now)
    with transaction(db):
        run_filter = " AND run_id = :run" if run_id else ""
        changed = execute(
            db,
            "UPDATE posts SET state = 'published', url = :url, platform_post_id = :pid,"
            " reason = NULL, run_id = NULL, updated_at = :now, published_at = :now"
            f" WHERE id = :id AND state = :expected{run_filter}",
            {
                "url": published.url,
                "pid": published.platform_post_id,
                "now": moment,
                "id": post_id,
                "expected": expected,
                "run": run_id,
            },
        )
        execute(
            db,
            "UPDATE post_attempts SET outcome = 'published', ended_at = :now WHERE id = :id",
            {"now": moment, "id": attempt_id},
        )
    return changed == 1


def _start_attempt(db: Database, post: dict, *, run_id: str, now: datetime) -> dict | None:
    """CAS the post from its current state to `sending` and open an attempt row."""
    moment = iso(now)
    with transaction(db):
        changed = execute(
            db,
            "UPDATE posts SET state = 'sending', attempts = attempts + 1, run_id = :run,"
            " heartbeat_at = :now, updated_at = :now"
            " WHERE id = :id AND state = :state AND attempts = :attempts",
            {
                "run": run_id,
                "now": moment,
                "id": post["id"],
                "state": post["state"],
                "attempts": post["attempts"],
            },
        )
        if not changed:
            return None
        previous = last_attempt(db, post["id"])
        number = post["attempts"] + 1
        marker = f"autoretto-{post['id']}-{number}-{secrets.token_hex(4)}"
        attempt_id = (
            db["post_attempts"]
            .insert(
                {
                    "post_id": post["id"],
                    "run_id": run_id,
                    "marker": marker,
                    "started_at": moment,
                    # Handles carry over: a new attempt resumes what the last one left.
                    "handles": previous["handles"] if previous else dumps({}),
                }
            )
            .last_pk
        )
    attempt = row(db, "SELECT * FROM post_attempts WHERE id = ?", (attempt_id,))
    assert attempt is not None
    attempt["number"] = number
    return attempt


def send_post(
    db: Database,
    platform: Platform,
    episode: dict,
    *,
    run_id: str,
    now: datetime,
    stale_after: timedelta,
    publish_at: datetime,
    slot: str | None = None,
    slot_at: str | None = None,
) -> PostResult:
    """Post `episode` to `platform` once, whatever state its post is in. Never sends twice."""
    post = ensure_post(db, episode=episode, platform=platform.name, slot=slot, now=now)
    post_id = post["id"]
    title = platform.title

    if post["state"] == "published":
        return PostResult("posted", f"already on {title}", post_id, post["url"])
    if post["state"] == "needs_person":
        return PostResult("failed", post["reason"] or "needs a person", post_id)
    if post["state"] == "sending":
        mark_stale_sending(db, stale_before=now - stale_after, now=now)
        post = get_post(db, post_id)
        if post["state"] == "sending":
            return PostResult("busy", f"post {post_id} is being sent by another run", post_id)
    if post["state"] == "may_be_live":
        answer, reason, found = look_for_attempt(
            db, platform, post, episode, run_id=run_id, now=now
        )
        if answer == "found":
            return PostResult("posted", reason, post_id, found.url if found else None)
        if answer != "absent":
            return PostResult("busy", f"post {post_id} may be live: {reason}", post_id)
        post = get_post(db, post_id)

    probe = PostRequest(
        post_id=post_id,
        attempt=post["attempts"] + 1,
        marker="",
        channel=post["channel"],
        platform=platform.name,
        episode=episode_view(episode),
        publish_at=publish_at,
        slot=slot,
        slot_at=slot_at,
    )
    limit = platform.limit_reason(probe)
    if limit:
        return PostResult("refused_by_limit", limit, post_id)

    attempt = _start_attempt(db, post, run_id=run_id, now=now)
    if attempt is None:
        return PostResult("busy", f"post {post_id} was taken by another run", post_id)
    request = _request(
        db,
        post,
        episode,
        attempt,
        publish_at=publish_at,
        slot=slot,
        slot_at=slot_at,
        run_id=run_id,
    )
    faults.checkpoint("before_send")
    outcome = platform.publish(request)
    faults.checkpoint("after_send")
    if isinstance(outcome, Published):
        _record_published(
            db, post_id, attempt["id"], outcome, expected="sending", now=now, run_id=run_id
        )
        faults.checkpoint("after_publish_recorded")
        return PostResult("posted", f"published on {title}", post_id, outcome.url, sent=True)
    return _record_failure(db, post, attempt, outcome, title=title, now=now, run_id=run_id)


def _record_failure(
    db: Database,
    post: dict,
    attempt: dict,
    failure: Failure,
    *,
    title: str,
    now: datetime,
    run_id: str,
) -> PostResult:
    post_id = post["id"]
    attempts = attempt["number"]
    sent = failure.kind in ("lost_answer", "passing", "rejected", "needs_person")
    if failure.kind == "lost_answer":
        new_state, outcome = "may_be_live", "failed"
        reason = f"{title}: {failure.reason}; it may be live and is checked before any retry"
    elif failure.kind == "limit":
        # A limit met at the platform is no try spent: back to queued, attempt not counted.
        new_state, outcome, attempts = "queued", "refused_by_limit", attempts - 1
        reason, sent = failure.reason, False
    elif failure.kind in ("needs_person", "rejected"):
        new_state, outcome, reason = "needs_person", "failed", failure.reason
    elif attempts >= MAX_ATTEMPTS:
        new_state, outcome = "needs_person", "failed"
        reason = f"{failure.reason} (failed {attempts} times; a person must look)"
    else:
        new_state, outcome, reason = "failed", "failed", failure.reason
    moment = iso(now)
    with transaction(db):
        execute(
            db,
            "UPDATE posts SET state = :state, reason = :reason, attempts = :attempts,"
            " run_id = NULL, updated_at = :now WHERE id = :id AND state = 'sending'"
            " AND run_id = :run",
            {
                "state": new_state,
                "reason": reason,
                "attempts": attempts,
                "now": moment,
                "id": post_id,
                "run": run_id,
            },
        )
        execute(
            db,
            "UPDATE post_attempts SET outcome = :outcome, error = :error, ended_at = :now"
            " WHERE id = :id",
            {"outcome": failure.kind, "error": failure.reason, "now": moment, "id": attempt["id"]},
        )
    return PostResult(outcome, reason, post_id, sent=sent)


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
    }


def list_posts(db: Database, *, channel: str | None = None, state: str | None = None) -> list[dict]:
    clauses, params = [], []
    if channel:
        clauses.append("channel = ?")
        params.append(channel)
    if state:
        clauses.append("state = ?")
        params.append(state)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return rows(db, f"SELECT * FROM posts{where} ORDER BY id", tuple(params))
