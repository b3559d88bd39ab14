"""Replies (issue 28): the never-twice transitions of a reply, each a conditional UPDATE from
the expected state, as posts' are (ledger/posts.py). A reply is one row per comment for good
(`replies.comment_id` is unique), so a comment is never answered twice whatever races."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .claims import BEAT_UNCHANGED
from .store import dumps, execute, row, rows, transaction

#: the comment states from which a person (or the channel's rule) may approve a reply
APPROVABLE = ("new", "drafted", "held", "ignored")


def queue_reply(
    db: Any,
    *,
    comment_id: int,
    text: str,
    approved_by: str,
    not_before: str | None,
    now: str,
) -> dict | None:
    """Queue the one reply to comment `comment_id` with `text` (approved by "person" or
    "rule") and mark the comment `approved`, in one transaction. Returns the reply row; None
    when the comment is not there or not approvable. A comment that already has a reply keeps
    it: its row is returned unchanged (its text changes only while it is still `queued`)."""
    with transaction(db, rows_only=True):
        comment = row(db, "SELECT * FROM comments WHERE id = ?", (comment_id,))
        if comment is None:
            return None
        existing = row(db, "SELECT * FROM replies WHERE comment_id = ?", (comment_id,))
        if existing is not None:
            if existing["state"] == "queued" and existing["attempts"] == 0:
                execute(
                    db,
                    # a new text is a new reply: its identity is computed again when it goes
                    "UPDATE replies SET text = :text, approved_by = :by, identity = NULL,"
                    " updated_at = :now WHERE id = :id AND state = 'queued' AND attempts = 0",
                    {"text": text, "by": approved_by, "now": now, "id": existing["id"]},
                )
            return row(db, "SELECT * FROM replies WHERE id = ?", (existing["id"],))
        if comment["state"] not in APPROVABLE:
            return None
        execute(
            db,
            "INSERT INTO replies (comment_id, channel, platform, account, text, state, attempts,"
            " approved_by, not_before, created_at, updated_at) VALUES (:comment, :channel,"
            " :platform, :account, :text, 'queued', 0, :by, :not_before, :now, :now)"
            " ON CONFLICT (comment_id) DO NOTHING",
            {
                "comment": comment_id,
                "channel": comment["channel"],
                "platform": comment["platform"],
                "account": comment["account"],
                "text": text,
                "by": approved_by,
                "not_before": not_before,
                "now": now,
            },
        )
        execute(
            db,
            "UPDATE comments SET state = 'approved', draft = :text, updated_at = :now"
            " WHERE id = :id",
            {"text": text, "now": now, "id": comment_id},
        )
        return row(db, "SELECT * FROM replies WHERE comment_id = ?", (comment_id,))


# -- one reply ---------------------------------------------------------------------------------


def reply_by_id(db: Any, reply_id: int) -> dict | None:
    return row(db, "SELECT * FROM replies WHERE id = ?", (reply_id,))


def comment_by_id(db: Any, comment_id: int) -> dict | None:
    return row(db, "SELECT * FROM comments WHERE id = ?", (comment_id,))


def last_attempt(db: Any, reply_id: int) -> dict | None:
    return row(
        db,
        "SELECT * FROM reply_attempts WHERE reply_id = ? ORDER BY id DESC LIMIT 1",
        (reply_id,),
    )


def attempt_by_id(db: Any, attempt_id: int) -> dict | None:
    return row(db, "SELECT * FROM reply_attempts WHERE id = ?", (attempt_id,))


def keep_identity(db: Any, reply_id: int, identity: str) -> None:
    """Keep the reply's identity, unless it has one already (it is computed once)."""
    execute(
        db,
        "UPDATE replies SET identity = :identity WHERE id = :id AND identity IS NULL",
        {"identity": identity, "id": reply_id},
    )


def was_tried(db: Any, reply_id: int) -> bool:
    """Has the reply an attempt whose request may have gone out (any but `not_sent`)?"""
    tried = row(
        db,
        "SELECT 1 AS yes FROM reply_attempts WHERE reply_id = ?"
        " AND COALESCE(outcome, '') != 'not_sent' LIMIT 1",
        (reply_id,),
    )
    return tried is not None


def newest_reply_id(db: Any) -> int:
    """The highest reply id the database knows (0 for none): after a restore, every reply up
    to it is in doubt. Called inside `resume`'s transaction."""
    found = row(db, "SELECT COALESCE(MAX(id), 0) AS id FROM replies")
    return int(found["id"]) if found else 0


# -- the transitions ---------------------------------------------------------------------------

#: What takes a change's journal number inside the transaction that records it (as in
#: ledger/posts.py); whatever it raises rolls the change back.
NumberLine = Callable[[Any], object]


def take_back_from_gone_run(
    db: Any, *, reply_id: int, holder: str | None, beat: int, now: str, look_from: str
) -> bool:
    """`sending` → `may_be_live` for a reply whose run is gone, if `holder` still holds it with
    the beat it was judged gone by (-1: a run with no row); its open attempts end `unknown`.
    Opens its own transaction. True when this call moved it."""
    params = {"now": now, "id": reply_id, "holder": holder, "beat": beat, "look_from": look_from}
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE replies SET state = 'may_be_live', run_id = NULL, updated_at = :now,"
            " look_from = :look_from, reason = 'the run sending it stopped; it may have gone out'"
            " WHERE id = :id AND state = 'sending'"
            " AND (run_id = :holder OR (run_id IS NULL AND :holder IS NULL))"
            f" AND {BEAT_UNCHANGED}",
            params,
        )
        if changed:
            execute(
                db,
                "UPDATE reply_attempts SET outcome = 'unknown', ended_at = :now"
                " WHERE reply_id = :id AND ended_at IS NULL",
                params,
            )
    return changed == 1


def open_attempt(
    db: Any,
    *,
    number: NumberLine,
    reply_id: int,
    state: str,
    attempts: int,
    run_id: str,
    now: str,
    marker: str,
    timeout_seconds: float,
) -> int | None:
    """CAS the reply from (`state`, `attempts`) to `sending` by `run_id`, open an attempt row
    (its handles carried over from the last one) and have `number(db)` take the attempt's
    journal number, in one transaction that this opens (what `number` raises rolls it all back).
    Returns the attempt's id, or None when another run took the reply (nothing numbered)."""
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE replies SET state = 'sending', attempts = attempts + 1, run_id = :run,"
            " heartbeat_at = :now, updated_at = :now"
            " WHERE id = :id AND state = :state AND attempts = :attempts",
            {"run": run_id, "now": now, "id": reply_id, "state": state, "attempts": attempts},
        )
        if not changed:
            return None
        previous = last_attempt(db, reply_id)
        opened = row(
            db,
            "INSERT INTO reply_attempts (reply_id, run_id, marker, started_at, timeout_seconds,"
            " handles) VALUES (:reply, :run, :marker, :now, :timeout, :handles) RETURNING id",
            {
                "reply": reply_id,
                "run": run_id,
                "marker": marker,
                "now": now,
                "timeout": timeout_seconds,
                "handles": previous["handles"] if previous else dumps({}),
            },
        )
        assert opened is not None
        number(db)
    return int(opened["id"])


def save_handles(db: Any, attempt_id: int, handles: dict) -> None:
    """Keep the attempt's platform handles (the whole set: it replaces)."""
    execute(db, "UPDATE reply_attempts SET handles = ? WHERE id = ?", (dumps(handles), attempt_id))


def beat_reply(db: Any, *, reply_id: int, run_id: str, now: str) -> None:
    execute(
        db,
        "UPDATE replies SET heartbeat_at = :now WHERE id = :id AND run_id = :run",
        {"now": now, "id": reply_id, "run": run_id},
    )


def record_published(
    db: Any,
    *,
    number: NumberLine,
    reply_id: int,
    attempt_id: int | None,
    url: str | None,
    platform_reply_id: str | None,
    now: str,
    expected: str,
    run_id: str | None = None,
) -> bool:
    """`expected` → `published` (only while `run_id` holds it, when given), with its link, and
    its comment `answered`; the attempt, if any, ends `published`; when the reply moved,
    `number(db)` takes the journal number. One transaction, opened here. True when it moved."""
    run_filter = " AND run_id = :run" if run_id else ""
    params = {
        "url": url,
        "pid": platform_reply_id,
        "now": now,
        "id": reply_id,
        "expected": expected,
        "run": run_id,
    }
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE replies SET state = 'published', url = :url, platform_reply_id = :pid,"
            " reason = NULL, run_id = NULL, look_from = NULL, updated_at = :now,"
            f" published_at = :now WHERE id = :id AND state = :expected{run_filter}",
            params,
        )
        if attempt_id is not None:
            execute(
                db,
                "UPDATE reply_attempts SET outcome = 'published', ended_at = :now WHERE id = :a",
                {"now": now, "a": attempt_id},
            )
        if changed:
            execute(
                db,
                "UPDATE comments SET state = 'answered', updated_at = :now"
                " WHERE id = (SELECT comment_id FROM replies WHERE id = :id)",
                params,
            )
            number(db)
    return changed == 1


def abandon_attempt(
    db: Any, *, reply_id: int, attempt_id: int, state: str, run_id: str, now: str
) -> None:
    """Put the reply back in `state`, its try not counted, after an attempt that never went out
    (the attempt ends `not_sent`). Opens its own transaction."""
    with transaction(db, rows_only=True):
        execute(
            db,
            "UPDATE replies SET state = :old, attempts = attempts - 1, run_id = NULL,"
            " updated_at = :now WHERE id = :id AND state = 'sending' AND run_id = :run",
            {"old": state, "now": now, "id": reply_id, "run": run_id},
        )
        execute(
            db,
            "UPDATE reply_attempts SET outcome = 'not_sent', ended_at = :now WHERE id = :id",
            {"now": now, "id": attempt_id},
        )


def record_failure(
    db: Any,
    *,
    reply_id: int,
    attempt_id: int,
    run_id: str,
    state: str,
    reason: str,
    attempts: int,
    attempt_outcome: str,
    error: str,
    now: str,
) -> None:
    """`sending` (held by `run_id`) → `state` with its reason and count of tries; the attempt
    ends with `attempt_outcome`; a reply `gone` leaves its comment `gone` too. Opens its own
    transaction."""
    params = {
        "state": state,
        "reason": reason,
        "attempts": attempts,
        "now": now,
        "id": reply_id,
        "run": run_id,
    }
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE replies SET state = :state, reason = :reason, attempts = :attempts,"
            " run_id = NULL, updated_at = :now WHERE id = :id AND state = 'sending'"
            " AND run_id = :run",
            params,
        )
        execute(
            db,
            "UPDATE reply_attempts SET outcome = :outcome, error = :error, ended_at = :now"
            " WHERE id = :a",
            {"outcome": attempt_outcome, "error": error, "now": now, "a": attempt_id},
        )
        if changed and state == "gone":
            _comment_gone(db, reply_id, now)


def _comment_gone(db: Any, reply_id: int, now: str) -> None:
    execute(
        db,
        "UPDATE comments SET state = 'gone', updated_at = :now"
        " WHERE id = (SELECT comment_id FROM replies WHERE id = :id)",
        {"now": now, "id": reply_id},
    )


def mark_gone(db: Any, *, reply_id: int, old: str, reason: str, now: str) -> bool:
    """`old` → `gone` without an attempt (the comment was found deleted before any send), its
    comment `gone` too. True when the reply moved."""
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE replies SET state = 'gone', reason = :reason, updated_at = :now"
            " WHERE id = :id AND state = :old",
            {"reason": reason, "now": now, "id": reply_id, "old": old},
        )
        if changed:
            _comment_gone(db, reply_id, now)
    return changed == 1


def confirm_not_live(
    db: Any, *, reply_id: int, old: str, new: str, attempts: int, reason: str, now: str
) -> bool:
    """A person's word: `old` → `new` with the tries it keeps. True when the reply moved."""
    changed = execute(
        db,
        "UPDATE replies SET state = :new, attempts = :attempts, reason = :reason,"
        " look_from = NULL, updated_at = :now WHERE id = :id AND state = :old",
        {
            "new": new,
            "attempts": attempts,
            "reason": reason,
            "now": now,
            "id": reply_id,
            "old": old,
        },
    )
    return changed == 1


# -- what sessions send ------------------------------------------------------------------------


def sendable_replies(db: Any, *, platform: str | None = None) -> list[dict]:
    """Replies a session may send, look for, or take back from a run that is gone (`sending`),
    oldest approval first; of `platform` when given."""
    clause = " AND platform = :platform" if platform else ""
    return rows(
        db,
        "SELECT * FROM replies WHERE state IN ('queued', 'failed', 'may_be_live', 'sending')"
        f"{clause} ORDER BY id",
        {"platform": platform},
    )


def attempts_between(db: Any, *, platform: str, account: str, start: str, end: str) -> int:
    """How many reply attempts that may have gone out began from the account between two
    instants (a session's count of replies)."""
    found = row(
        db,
        "SELECT COUNT(*) AS n FROM reply_attempts a JOIN replies r ON r.id = a.reply_id"
        " WHERE r.platform = :platform AND r.account = :account"
        " AND a.started_at >= :start AND a.started_at < :end"
        " AND COALESCE(a.outcome, '') != 'not_sent'",
        {"platform": platform, "account": account, "start": start, "end": end},
    )
    return int(found["n"]) if found else 0


def last_attempt_of_account(db: Any, *, platform: str, account: str) -> str | None:
    """When the account's latest reply attempt began (its pause runs from then), or None."""
    found = row(
        db,
        "SELECT MAX(a.started_at) AS at FROM reply_attempts a JOIN replies r"
        " ON r.id = a.reply_id WHERE r.platform = :platform AND r.account = :account"
        " AND COALESCE(a.outcome, '') != 'not_sent'",
        {"platform": platform, "account": account},
    )
    return found["at"] if found else None


# -- a restored database: what the journal knows, written back --------------------------------


def write_back(db: Any, entry: dict[str, Any], moment: str) -> None:
    """A journal line (`reply` or `reply_attempt`) written back into a restored database, inside
    `resume`'s transaction: the comment it answers is made again when the database never had it
    (answered, or approved), and its one reply becomes `published` again, or `may_be_live`
    unless it is published (looked for by its identity before anything is sent)."""
    published = entry["kind"] == "reply"
    execute(
        db,
        "INSERT INTO comments (platform, account, platform_comment_id, post_id, episode_id,"
        " channel, author, text, ref, state, collected_at, updated_at) VALUES (:platform,"
        " :account, :comment_pid, :post_id, :episode_id, :channel, '', '(restored from the"
        " journal)', :ref, :state, :now, :now)"
        " ON CONFLICT (platform, account, platform_comment_id) DO NOTHING",
        {
            "platform": entry["platform"],
            "account": entry.get("account") or "",
            "comment_pid": entry.get("platform_comment_id") or f"reply-{entry['reply_id']}",
            "post_id": entry.get("post_id") or 0,
            "episode_id": entry.get("episode_id") or 0,
            "channel": entry["channel"],
            "ref": dumps(entry.get("ref") or {}),
            "state": "answered" if published else "approved",
            "now": moment,
        },
    )
    comment = row(
        db,
        "SELECT id FROM comments WHERE platform = ? AND account = ? AND platform_comment_id = ?",
        (
            entry["platform"],
            entry.get("account") or "",
            entry.get("platform_comment_id") or f"reply-{entry['reply_id']}",
        ),
    )
    assert comment is not None
    params = {
        "comment": comment["id"],
        "channel": entry["channel"],
        "platform": entry["platform"],
        "account": entry.get("account") or "",
        "text": entry.get("text") or "",
        "identity": entry.get("identity"),
        "url": entry.get("url"),
        "pid": entry.get("platform_reply_id"),
        "at": entry["at"],
        "now": moment,
    }
    if published:
        execute(
            db,
            "INSERT INTO replies (comment_id, channel, platform, account, text, identity, state,"
            " attempts, approved_by, url, platform_reply_id, reason, created_at, updated_at,"
            " published_at) VALUES (:comment, :channel, :platform, :account, :text, :identity,"
            " 'published', 1, 'journal', :url, :pid, 'written back from the journal', :now,"
            " :now, :at) ON CONFLICT (comment_id) DO UPDATE SET state = 'published',"
            " url = :url, platform_reply_id = :pid, run_id = NULL,"
            " identity = COALESCE(replies.identity, :identity),"
            " reason = 'written back from the journal'",
            params,
        )
        execute(
            db,
            "UPDATE comments SET state = 'answered', updated_at = :now WHERE id = :comment",
            params,
        )
        return
    execute(
        db,
        "INSERT INTO replies (comment_id, channel, platform, account, text, identity, state,"
        " attempts, approved_by, reason, created_at, updated_at) VALUES (:comment, :channel,"
        " :platform, :account, :text, :identity, 'may_be_live', 1, 'journal', :reason, :now,"
        " :now) ON CONFLICT (comment_id) DO UPDATE SET state = 'may_be_live', run_id = NULL,"
        " identity = COALESCE(replies.identity, :identity), reason = :reason"
        " WHERE replies.state != 'published'",
        {
            **params,
            "reason": "the journal shows an attempt the restored database forgot; it is looked "
            "for first",
        },
    )


# -- listings ----------------------------------------------------------------------------------


def list_replies(db: Any, *, channel: str | None = None, state: str | None = None) -> list[dict]:
    """Every reply (of `channel`, in `state`, when given) with its comment's author, text and
    episode, newest first."""
    clauses, params = [], []
    if channel:
        clauses.append("r.channel = ?")
        params.append(channel)
    if state:
        clauses.append("r.state = ?")
        params.append(state)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return rows(
        db,
        "SELECT r.*, c.author AS comment_author, c.text AS comment_text,"
        " c.episode_id AS episode_id, c.platform_comment_id AS platform_comment_id"
        f" FROM replies r JOIN comments c ON c.id = r.comment_id{where} ORDER BY r.id DESC",
        tuple(params),
    )
