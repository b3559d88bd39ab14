"""Replies to the audience's comments (issue 28): a reply is a post of its own, with an
identity from its content, the comment it answers and the account, through the same states
and guards as a post (autoretto/posts.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .clock import iso
from .errors import UsageError
from .ledger import replies as ledger

if TYPE_CHECKING:
    from .ledger.store import Store as Database


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
