"""Replies (issue 28): the never-twice transitions of a reply, each a conditional UPDATE from
the expected state, as posts' are (ledger/posts.py). A reply is one row per comment for good
(`replies.comment_id` is unique), so a comment is never answered twice whatever races."""

from __future__ import annotations

from typing import Any

from .store import execute, row, transaction

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
                    "UPDATE replies SET text = :text, approved_by = :by, updated_at = :now"
                    " WHERE id = :id AND state = 'queued' AND attempts = 0",
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
