"""Comments (issue 28): every SQL statement on `comments` and `comment_cursors`.

A comment is stored once per (platform, account, the platform's id) whatever the overlap of
reads (`comments_once`, INSERT ... ON CONFLICT DO NOTHING), and a post's cursor is kept in the
same transaction as the comments read before it, so a run killed between the two reads them
again and stores none twice. Each change of state is a conditional UPDATE from the states it
may come from (the WHERE states them), so a person's click and a collect never cross.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .store import execute, marks, row, rows, transaction

#: every state a comment can be in (ledger/store.py `_migration_comments` says what each means)
STATES = ("new", "drafted", "held", "approved", "answered", "ignored", "gone", "mine")
#: the states a draft may be (re)made from
DRAFTABLE = ("new", "drafted", "held")
#: the states a person may ignore a comment from
IGNORABLE = ("new", "drafted", "held")
#: the states whose draft a person may edit (an approved one: while its reply is untried)
EDITABLE = ("new", "drafted", "held", "ignored", "approved")


def published_posts(db: Any, platforms: Iterable[str]) -> list[dict[str, Any]]:
    """id, episode_id, channel, platform, platform_post_id of every published post on
    `platforms` that the platform named, oldest first."""
    names = list(platforms)
    if not names:
        return []
    return rows(
        db,
        "SELECT id, episode_id, channel, platform, platform_post_id FROM posts"
        f" WHERE state = 'published' AND platform_post_id IS NOT NULL AND platform IN"
        f" ({marks(len(names))}) ORDER BY id",
        tuple(names),
    )


def published_platforms(db: Any) -> list[str]:
    """The platforms that have at least one published post."""
    found = rows(db, "SELECT DISTINCT platform FROM posts WHERE state = 'published'")
    return sorted(entry["platform"] for entry in found)


def cursor_of(db: Any, platform: str, account: str, post_id: int) -> str | None:
    """Where the next read of post `post_id`'s comments continues (None: from the start)."""
    found = row(
        db,
        "SELECT cursor FROM comment_cursors WHERE platform = ? AND account = ? AND post_id = ?",
        (platform, account, post_id),
    )
    return None if found is None else found["cursor"]


def store_page(
    db: Any,
    comments: list[dict[str, Any]],
    *,
    platform: str,
    account: str,
    post_id: int,
    cursor: str | None,
    now: str,
) -> list[int]:
    """Store each of `comments` (the columns of a `comments` row but id, state and times) once,
    `new` (or `mine`, when `mine` is true), then keep `cursor` for the post (None: the one
    there was), in one transaction. Returns the ids of the comments that were new to us."""
    stored: list[int] = []
    with transaction(db):
        for comment in comments:
            facts = {
                "platform": platform,
                "account": account,
                "post_id": post_id,
                "state": "mine" if comment.get("mine") else "new",
                "now": now,
                **{key: comment.get(key) for key in _COLUMNS},
            }
            inserted = execute(
                db,
                "INSERT INTO comments (platform, account, platform_comment_id, post_id,"
                " episode_id, channel, parent_id, author, author_id, text, published_at, ref,"
                " state, collected_at, updated_at) VALUES (:platform, :account,"
                " :platform_comment_id, :post_id, :episode_id, :channel, :parent_id, :author,"
                " :author_id, :text, :published_at, :ref, :state, :now, :now)"
                " ON CONFLICT (platform, account, platform_comment_id) DO NOTHING",
                facts,
            )
            if inserted == 1 and facts["state"] == "new":
                found = row(
                    db,
                    "SELECT id FROM comments WHERE platform = ? AND account = ?"
                    " AND platform_comment_id = ?",
                    (platform, account, facts["platform_comment_id"]),
                )
                assert found is not None
                stored.append(found["id"])
        if cursor is not None:
            execute(
                db,
                "INSERT INTO comment_cursors (platform, account, post_id, cursor, read_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, account, post_id) DO UPDATE"
                " SET cursor = excluded.cursor, read_at = excluded.read_at",
                (platform, account, post_id, cursor, now),
            )
    return stored


_COLUMNS = (
    "platform_comment_id",
    "episode_id",
    "channel",
    "parent_id",
    "author",
    "author_id",
    "text",
    "published_at",
    "ref",
)


def mark_gone(db: Any, platform: str, account: str, ids: Iterable[str], now: str) -> int:
    """The comments the platform shows deleted, not yet answered nor approved, become `gone`;
    returns how many moved."""
    moved = 0
    for platform_id in ids:
        moved += execute(
            db,
            "UPDATE comments SET state = 'gone', updated_at = ? WHERE platform = ?"
            " AND account = ? AND platform_comment_id = ?"
            " AND state IN ('new', 'drafted', 'held', 'ignored')",
            (now, platform, account, platform_id),
        )
    return moved


def comment(db: Any, comment_id: int) -> dict[str, Any] | None:
    """One comment with its episode's title and its reply (reply_id, reply_state, reply_url,
    reply_text, reply_attempts; None without one)."""
    found = rows(db, _LISTING + " WHERE c.id = ?", (comment_id,))
    return found[0] if found else None


def waiting_for_a_draft(db: Any, limit: int) -> list[dict[str, Any]]:
    """The oldest `new` comments (none of ours), at most `limit`."""
    return rows(
        db, "SELECT id FROM comments WHERE state = 'new' ORDER BY id LIMIT ?", (int(limit),)
    )


def listing(
    db: Any,
    *,
    channel: str | None = None,
    episode_id: int | None = None,
    states: tuple[str, ...] = (),
    limit: int = 200,
) -> list[dict[str, Any]]:
    """The comments, newest first (by when the platform dated them, else when collected),
    with their episode's title and reply."""
    where, params = [], []
    if channel is not None:
        where.append("c.channel = ?")
        params.append(channel)
    if episode_id is not None:
        where.append("c.episode_id = ?")
        params.append(episode_id)
    if states:
        where.append(f"c.state IN ({marks(len(states))})")
        params.extend(states)
    sql = _LISTING + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY COALESCE(c.published_at, c.collected_at) DESC, c.id DESC LIMIT ?"
    return rows(db, sql, (*params, int(limit)))


_LISTING = (
    "SELECT c.id, c.channel, c.platform, c.account, c.platform_comment_id, c.post_id,"
    " c.episode_id, e.title AS episode_title, c.parent_id, c.author, c.author_id, c.text,"
    " c.published_at, c.ref, c.state, c.category, c.draft, c.draft_by, c.reason,"
    " c.collected_at, c.updated_at, r.id AS reply_id, r.state AS reply_state, r.url AS"
    " reply_url, r.text AS reply_text, r.attempts AS reply_attempts FROM comments c"
    " LEFT JOIN episodes e ON e.id = c.episode_id LEFT JOIN replies r ON r.comment_id = c.id"
)


def set_draft(
    db: Any,
    comment_id: int,
    *,
    state: str,
    category: str | None,
    draft: str | None,
    draft_by: str | None,
    reason: str | None,
    now: str,
    from_states: tuple[str, ...] = DRAFTABLE,
) -> bool:
    """Keep what the assistant (or a person) made of the comment: `state` (drafted or held),
    its category, the draft and who wrote it, why it is held. Only from `from_states`; True
    when the comment moved."""
    return (
        execute(
            db,
            "UPDATE comments SET state = ?, category = ?, draft = ?, draft_by = ?, reason = ?,"
            f" updated_at = ? WHERE id = ? AND state IN ({marks(len(from_states))})",
            (state, category, draft, draft_by, reason, now, comment_id, *from_states),
        )
        == 1
    )


def set_state(
    db: Any, comment_id: int, state: str, *, from_states: tuple[str, ...], now: str
) -> bool:
    """Move the comment to `state` from one of `from_states`; True when it moved."""
    return (
        execute(
            db,
            "UPDATE comments SET state = ?, updated_at = ?"
            f" WHERE id = ? AND state IN ({marks(len(from_states))})",
            (state, now, comment_id, *from_states),
        )
        == 1
    )


def counts(db: Any) -> dict[str, int]:
    """How many comments are in each state."""
    found = rows(db, "SELECT state, COUNT(*) AS n FROM comments GROUP BY state")
    return {entry["state"]: entry["n"] for entry in found}
