"""Posts and their attempts (ARCHITECTURE.md §3): the never-twice transitions, each a
conditional UPDATE from the expected state; the paced posts and a platform's post in flight;
what a restored database is told back from the journal; the listings; and an episode's
translations. The rules (when a post moves, what a person is told) stay in autoretto/posts.py.

A function that changes more than one row opens its own transaction unless it says it is
called inside the caller's (`write_back` and `newest_episode_id`, inside `resume`'s:
ledger.journal.write_back). A change that commits with a journal number (`open_attempt`,
`record_published`) opens its own transaction too, and takes the number inside it through the
`number` it is given: the journal file is read beside the ledger (autoretto/journal.py), never
in it, but under the same write lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .claims import BEAT_UNCHANGED
from .store import dumps, execute, marks, row, rows, transaction

# -- one post ----------------------------------------------------------------------------------


def ensure_post(
    db: Any,
    *,
    episode_id: int,
    channel: str,
    platform: str,
    slot: str | None,
    now: str,
    kind: str = "video",
) -> dict:
    """The `kind` post ("video", or "carousel": issue 29) of (episode, platform), created
    `queued` if there is none yet."""
    execute(
        db,
        "INSERT INTO posts (episode_id, channel, platform, state, attempts, slot, created_at,"
        " updated_at, kind) VALUES (:episode, :channel, :platform, 'queued', 0, :slot, :now,"
        " :now, :kind) ON CONFLICT (episode_id, platform, kind) DO NOTHING",
        {
            "episode": episode_id,
            "channel": channel,
            "platform": platform,
            "slot": slot,
            "now": now,
            "kind": kind,
        },
    )
    found = find_post(db, episode_id, platform, kind)
    assert found is not None
    return found


def find_post(db: Any, episode_id: int, platform: str, kind: str = "video") -> dict | None:
    """The `kind` post of `episode_id` to `platform`, or None."""
    return row(
        db,
        "SELECT * FROM posts WHERE episode_id = ? AND platform = ? AND kind = ?",
        (episode_id, platform, kind),
    )


def post_by_id(db: Any, post_id: int) -> dict | None:
    return row(db, "SELECT * FROM posts WHERE id = ?", (post_id,))


def last_attempt(db: Any, post_id: int) -> dict | None:
    return row(
        db, "SELECT * FROM post_attempts WHERE post_id = ? ORDER BY id DESC LIMIT 1", (post_id,)
    )


def attempt_by_id(db: Any, attempt_id: int) -> dict | None:
    return row(db, "SELECT * FROM post_attempts WHERE id = ?", (attempt_id,))


def keep_identity(db: Any, post_id: int, identity: str) -> None:
    """Keep the post's identity, unless it has one already (it is computed once)."""
    execute(
        db,
        "UPDATE posts SET identity = :identity WHERE id = :id AND identity IS NULL",
        {"identity": identity, "id": post_id},
    )


def was_tried(db: Any, post_id: int) -> bool:
    """Has the post an attempt whose request may have gone out (any but `not_sent`)?"""
    tried = row(
        db,
        "SELECT 1 AS yes FROM post_attempts WHERE post_id = ?"
        " AND COALESCE(outcome, '') != 'not_sent' LIMIT 1",
        (post_id,),
    )
    return tried is not None


def newest_episode_id(db: Any) -> int:
    """The highest episode id the database knows (0 for none): after a restore, every post of
    an episode up to it is in doubt. Called inside `resume`'s transaction."""
    found = row(db, "SELECT COALESCE(MAX(id), 0) AS id FROM episodes")
    return int(found["id"]) if found else 0


# -- the transitions ---------------------------------------------------------------------------


def take_back_from_gone_run(
    db: Any, *, post_id: int, holder: str | None, beat: int, now: str, look_from: str
) -> bool:
    """`sending` → `may_be_live` for a post whose run is gone, if `holder` still holds it with
    the beat it was judged gone by (-1: a run with no row); its open attempts end `unknown`.
    Opens its own transaction. True when this call moved it."""
    params = {"now": now, "id": post_id, "holder": holder, "beat": beat, "look_from": look_from}
    with transaction(db, rows_only=True):
        changed = execute(
            db,
            "UPDATE posts SET state = 'may_be_live', run_id = NULL, updated_at = :now,"
            " look_from = :look_from, reason = 'the run sending it stopped; it may have gone out'"
            " WHERE id = :id AND state = 'sending'"
            " AND (run_id = :holder OR (run_id IS NULL AND :holder IS NULL))"
            f" AND {BEAT_UNCHANGED}",
            params,
        )
        if changed:
            execute(
                db,
                "UPDATE post_attempts SET outcome = 'unknown', ended_at = :now"
                " WHERE post_id = :id AND ended_at IS NULL",
                params,
            )
    return changed == 1


#: What takes a change's journal number, inside the transaction that records the change, on its
#: connection (autoretto/journal.take: it reads the journal file's tail under the write lock).
#: Whatever it raises rolls the change back.
NumberLine = Callable[[Any], object]


def open_attempt(
    db: Any,
    *,
    number: NumberLine,
    post_id: int,
    state: str,
    attempts: int,
    run_id: str,
    now: str,
    slot: str | None,
    marker: str,
    timeout_seconds: float,
) -> int | None:
    """CAS the post from (`state`, `attempts`) to `sending` by `run_id`, remembering the slot
    it is now sent for, open an attempt row and have `number(db)` take the attempt's journal
    number, in one transaction that this opens (what `number` raises rolls it all back). Returns
    the attempt's id, or None when another run took the post (nothing numbered then)."""
    with transaction(db, rows_only=True):
        attempt_id = _open_attempt(
            db,
            post_id=post_id,
            state=state,
            attempts=attempts,
            run_id=run_id,
            now=now,
            slot=slot,
            marker=marker,
            timeout_seconds=timeout_seconds,
        )
        if attempt_id is not None:
            number(db)
    return attempt_id


def _open_attempt(
    db: Any,
    *,
    post_id: int,
    state: str,
    attempts: int,
    run_id: str,
    now: str,
    slot: str | None,
    marker: str,
    timeout_seconds: float,
) -> int | None:
    changed = execute(
        db,
        "UPDATE posts SET state = 'sending', attempts = attempts + 1, run_id = :run,"
        " heartbeat_at = :now, updated_at = :now, slot = :slot"
        " WHERE id = :id AND state = :state AND attempts = :attempts",
        {
            "run": run_id,
            "now": now,
            "id": post_id,
            "state": state,
            "attempts": attempts,
            "slot": slot,
        },
    )
    if not changed:
        return None
    previous = last_attempt(db, post_id)
    opened = row(
        db,
        "INSERT INTO post_attempts (post_id, run_id, marker, started_at, timeout_seconds,"
        " handles) VALUES (:post, :run, :marker, :now, :timeout, :handles) RETURNING id",
        {
            "post": post_id,
            "run": run_id,
            "marker": marker,
            "now": now,
            "timeout": timeout_seconds,
            # Handles carry over: a new attempt resumes what the last one left.
            "handles": previous["handles"] if previous else dumps({}),
        },
    )
    assert opened is not None
    return int(opened["id"])


def save_handles(db: Any, attempt_id: int, handles: dict) -> None:
    """Keep the attempt's platform handles. Replaces: the platform always hands over the whole
    set it needs to resume."""
    execute(db, "UPDATE post_attempts SET handles = ? WHERE id = ?", (dumps(handles), attempt_id))


def beat_post(db: Any, *, post_id: int, run_id: str, now: str) -> None:
    """The heartbeat of one post while `run_id` sends it."""
    execute(
        db,
        "UPDATE posts SET heartbeat_at = :now WHERE id = :id AND run_id = :run",
        {"now": now, "id": post_id, "run": run_id},
    )


def beat_posts(connection: Any, *, run_id: str, now: str) -> None:
    """The heartbeat of every post `run_id` is sending: they are not taken for stale."""
    execute(
        connection,
        "UPDATE posts SET heartbeat_at = :now WHERE run_id = :run AND state = 'sending'",
        {"now": now, "run": run_id},
    )


def record_published(
    db: Any,
    *,
    number: NumberLine,
    post_id: int,
    attempt_id: int | None,
    url: str | None,
    platform_post_id: str | None,
    now: str,
    expected: str,
    run_id: str | None = None,
) -> bool:
    """`expected` → `published` (only while `run_id` holds it, when given), with its link; the
    attempt, if any, ends `published`; when the post moved, `number(db)` takes the publish's
    journal number. One transaction, opened here. True when the post moved."""
    with transaction(db, rows_only=True):
        changed = _record_published(
            db,
            post_id=post_id,
            attempt_id=attempt_id,
            url=url,
            platform_post_id=platform_post_id,
            now=now,
            expected=expected,
            run_id=run_id,
        )
        if changed:
            number(db)
    return changed


def _record_published(
    db: Any,
    *,
    post_id: int,
    attempt_id: int | None,
    url: str | None,
    platform_post_id: str | None,
    now: str,
    expected: str,
    run_id: str | None,
) -> bool:
    run_filter = " AND run_id = :run" if run_id else ""
    changed = execute(
        db,
        "UPDATE posts SET state = 'published', url = :url, platform_post_id = :pid,"
        " reason = NULL, run_id = NULL, updated_at = :now, published_at = :now"
        f" WHERE id = :id AND state = :expected{run_filter}",
        {
            "url": url,
            "pid": platform_post_id,
            "now": now,
            "id": post_id,
            "expected": expected,
            "run": run_id,
        },
    )
    if attempt_id is not None:
        execute(
            db,
            "UPDATE post_attempts SET outcome = 'published', ended_at = :now WHERE id = :id",
            {"now": now, "id": attempt_id},
        )
    return changed == 1


def abandon_attempt(
    db: Any, *, post_id: int, attempt_id: int, state: str, run_id: str, now: str
) -> None:
    """Put the post back in `state`, its try not counted, after an attempt that never went out
    (the attempt ends `not_sent`). Opens its own transaction."""
    with transaction(db, rows_only=True):
        execute(
            db,
            "UPDATE posts SET state = :old, attempts = attempts - 1, run_id = NULL,"
            " updated_at = :now WHERE id = :id AND state = 'sending' AND run_id = :run",
            {"old": state, "now": now, "id": post_id, "run": run_id},
        )
        execute(
            db,
            "UPDATE post_attempts SET outcome = 'not_sent', ended_at = :now WHERE id = :id",
            {"now": now, "id": attempt_id},
        )


def record_failure(
    db: Any,
    *,
    post_id: int,
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
    ends with `attempt_outcome` and the platform's `error`. Opens its own transaction."""
    with transaction(db, rows_only=True):
        execute(
            db,
            "UPDATE posts SET state = :state, reason = :reason, attempts = :attempts,"
            " run_id = NULL, updated_at = :now WHERE id = :id AND state = 'sending'"
            " AND run_id = :run",
            {
                "state": state,
                "reason": reason,
                "attempts": attempts,
                "now": now,
                "id": post_id,
                "run": run_id,
            },
        )
        execute(
            db,
            "UPDATE post_attempts SET outcome = :outcome, error = :error, ended_at = :now"
            " WHERE id = :id",
            {"outcome": attempt_outcome, "error": error, "now": now, "id": attempt_id},
        )


def confirm_not_live(
    db: Any, *, post_id: int, old: str, new: str, attempts: int, reason: str, now: str
) -> bool:
    """A person's word: `old` → `new` with the tries it keeps. True when the post moved."""
    return (
        execute(
            db,
            "UPDATE posts SET state = :new, attempts = :attempts, reason = :reason,"
            " updated_at = :now WHERE id = :id AND state = :old",
            {
                "new": new,
                "attempts": attempts,
                "reason": reason,
                "now": now,
                "id": post_id,
                "old": old,
            },
        )
        == 1
    )


# -- paced posts and the in-flight post of a platform ------------------------------------------


def pace_post(db: Any, *, post_id: int, moment: str, slot: str, slot_at: str, now: str) -> None:
    """Give a queued (or failed) post its paced moment and the slot it serves."""
    execute(
        db,
        "UPDATE posts SET not_before = :moment, slot = :slot, slot_at = :at, updated_at = :now"
        " WHERE id = :id AND state IN ('queued', 'failed')",
        {"moment": moment, "slot": slot, "at": slot_at, "now": now, "id": post_id},
    )


def clear_moment(db: Any, post_id: int) -> None:
    execute(db, "UPDATE posts SET not_before = NULL WHERE id = ?", (post_id,))


def paced_posts(db: Any) -> list[dict]:
    """Posts waiting for their paced moment, soonest first."""
    return rows(
        db,
        "SELECT * FROM posts WHERE not_before IS NOT NULL AND state IN ('queued', 'failed')"
        " AND kind = 'video' ORDER BY not_before, id",
    )


def post_in_flight(db: Any, *, channel: str, platform: str, slot: str, kind: str) -> dict | None:
    """The post of a `kind` episode that keeps `platform` busy for a slot: one already sent for
    this very slot first, else one sending, may be live, or waiting for its paced moment."""
    # This slot's post first, by a CASE rather than `p.slot = :slot DESC`: a post without a
    # slot compares NULL, which PostgreSQL sorts first when descending, SQLite last.
    return row(
        db,
        "SELECT p.* FROM posts p JOIN episodes e ON e.id = p.episode_id"
        " WHERE p.channel = :channel AND p.platform = :platform AND e.kind = :kind"
        " AND (p.slot = :slot OR p.state IN ('sending', 'may_be_live')"
        " OR (p.not_before IS NOT NULL AND p.state IN ('queued', 'failed')))"
        " AND p.kind = 'video' ORDER BY CASE WHEN p.slot = :slot THEN 0 ELSE 1 END, p.id LIMIT 1",
        {"channel": channel, "platform": platform, "slot": slot, "kind": kind},
    )


def post_moments(db: Any, *, platform: str, episode_id: int, start: str, end: str) -> list[str]:
    """When the platform's posts of other episodes went out (or are paced to), between two
    instants (text times, compared as text)."""
    return [
        found["moment"]
        for found in rows(
            db,
            "SELECT COALESCE(published_at, not_before) AS moment FROM posts"
            " WHERE platform = :platform AND episode_id != :episode"
            " AND COALESCE(published_at, not_before) BETWEEN :start AND :end",
            {"platform": platform, "episode": episode_id, "start": start, "end": end},
        )
    ]


# -- carousels (issue 29) ----------------------------------------------------------------------


def releases_without_carousel(db: Any, *, channel: str, platform: str, since: str) -> list[dict]:
    """The channel's video posts to `platform` published at or after `since` whose episode has
    no carousel post there yet: episode_id, published_at, slot_at (oldest first)."""
    return rows(
        db,
        "SELECT v.episode_id, v.published_at, v.slot_at FROM posts v"
        " WHERE v.channel = :channel AND v.platform = :platform AND v.kind = 'video'"
        " AND v.state = 'published' AND v.published_at >= :since"
        " AND NOT EXISTS (SELECT 1 FROM posts c WHERE c.episode_id = v.episode_id"
        " AND c.platform = v.platform AND c.kind = 'carousel') ORDER BY v.published_at, v.id",
        {"channel": channel, "platform": platform, "since": since},
    )


def plan_carousel(
    db: Any, *, episode_id: int, channel: str, platform: str, moment: str, now: str
) -> bool:
    """Create the episode's carousel post to `platform`, `queued` for `moment`; False when it
    already has one (another run planned it: its moment stands)."""
    return bool(
        execute(
            db,
            "INSERT INTO posts (episode_id, channel, platform, state, attempts, created_at,"
            " updated_at, kind, not_before) VALUES (:episode, :channel, :platform, 'queued', 0,"
            " :now, :now, 'carousel', :moment) ON CONFLICT (episode_id, platform, kind)"
            " DO NOTHING",
            {
                "episode": episode_id,
                "channel": channel,
                "platform": platform,
                "now": now,
                "moment": moment,
            },
        )
    )


def carousels_due(db: Any, now: str) -> list[dict]:
    """Carousel posts whose moment has come and that are not done: queued, failed (tried again),
    may be live (looked for first), or sending (taken back only from a run that is gone)."""
    return rows(
        db,
        "SELECT * FROM posts WHERE kind = 'carousel' AND not_before <= ?"
        " AND state IN ('queued', 'failed', 'may_be_live', 'sending') ORDER BY not_before, id",
        (now,),
    )


# -- a restored database: what the journal knows, written back ---------------------------------


def write_back(db: Any, entry: dict[str, Any], moment: str) -> None:
    """A journal line (`publish` or `attempt`) written back into a restored database: the post
    becomes `published` again, or `may_be_live` unless it is published; the episode row is made
    as a placeholder when the database never had it. Called inside `resume`'s transaction.

    The episode and the post keep the ids the journal names (a post's id only when no other
    post has taken it since), so the next ids handed out move past them. On SQLite that is what
    INTEGER PRIMARY KEY does; a store with id sequences (PostgreSQL) must move its sequences
    past them after a write-back."""
    execute(
        db,
        "INSERT INTO episodes (id, channel, state, title, off_schedule, source, created_at,"
        " updated_at) VALUES (:id, :channel, 'ready', :title, 1, :source, :now, :now)"
        " ON CONFLICT (id) DO NOTHING",
        {
            "id": entry["episode_id"],
            "channel": entry["channel"],
            "title": f"(restored from the journal: episode {entry['episode_id']})",
            "source": '{"restored_from_journal": true}',
            "now": moment,
        },
    )
    taken = row(db, "SELECT 1 AS yes FROM posts WHERE id = ?", (entry["post_id"],))
    # The id column is left out, not given NULL, when the journal's id is taken: a NULL id is
    # a new one on SQLite but an error on PostgreSQL.
    id_column, id_value = ("id, ", ":post_id, ") if taken is None else ("", "")
    params = {
        "post_id": entry["post_id"],
        "episode_id": entry["episode_id"],
        "channel": entry["channel"],
        "platform": entry["platform"],
        "identity": entry.get("identity"),
        "slot": entry.get("slot"),
        "now": moment,
        "post_kind": entry.get("post_kind") or "video",
    }
    if entry["kind"] == "publish":
        execute(
            db,
            f"INSERT INTO posts ({id_column}episode_id, channel, platform, state, url,"
            " platform_post_id, attempts, slot, identity, created_at, updated_at, published_at,"
            f" kind) VALUES ({id_value}:episode_id, :channel, :platform, 'published', :url,"
            " :pid, 1, :slot, :identity, :now, :now, :at, :post_kind)"
            " ON CONFLICT (episode_id, platform, kind) DO UPDATE"
            " SET state = 'published', url = :url, platform_post_id = :pid, run_id = NULL,"
            " identity = COALESCE(posts.identity, :identity),"
            " reason = 'written back from the journal'",
            {
                **params,
                "url": entry.get("url"),
                "pid": entry.get("platform_post_id"),
                "at": entry["at"],
            },
        )
        return
    reason = "the journal shows an attempt the restored database forgot; it is looked for first"
    execute(
        db,
        f"INSERT INTO posts ({id_column}episode_id, channel, platform, state, attempts, slot,"
        f" identity, reason, created_at, updated_at, kind) VALUES ({id_value}:episode_id,"
        " :channel, :platform, 'may_be_live', 1, :slot, :identity, :reason, :now, :now,"
        " :post_kind) ON CONFLICT (episode_id, platform, kind) DO UPDATE"
        " SET state = 'may_be_live', run_id = NULL,"
        " identity = COALESCE(posts.identity, :identity), reason = :reason"
        " WHERE posts.state != 'published'",
        {**params, "reason": reason},
    )


# -- listings ----------------------------------------------------------------------------------


def list_posts(db: Any, *, channel: str | None = None, state: str | None = None) -> list[dict]:
    """Every post (of `channel`, in `state`, when given), oldest first."""
    clauses, params = [], []
    if channel:
        clauses.append("channel = ?")
        params.append(channel)
    if state:
        clauses.append("state = ?")
        params.append(state)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return rows(db, f"SELECT * FROM posts{where} ORDER BY id", tuple(params))


def posts_of_episode(db: Any, episode_id: int) -> list[dict]:
    """The episode's posts, oldest first."""
    return rows(db, "SELECT * FROM posts WHERE episode_id = ? ORDER BY id", (episode_id,))


def published_platform_id(db: Any, episode_id: int, platform: str) -> str | None:
    """The platform's id of the episode's published post there, or None."""
    found = row(
        db,
        "SELECT platform_post_id FROM posts WHERE episode_id = ? AND platform = ?"
        " AND state = 'published' AND platform_post_id IS NOT NULL AND kind = 'video'",
        (episode_id, platform),
    )
    return None if found is None else found["platform_post_id"]


# -- an episode's translations -----------------------------------------------------------------


def keep_translation(db: Any, *, episode_id: int, language: str, texts: str, now: str) -> None:
    """Keep the episode's copy in `language` (`texts`, JSON). A new translation replaces the
    old one; it is not on the platform until applied again. Opens its own transaction."""
    with transaction(db):
        execute(
            db,
            "INSERT INTO translations (episode_id, language, texts, created_at, applied_at)"
            " VALUES (?, ?, ?, ?, NULL) ON CONFLICT (episode_id, language) DO UPDATE SET"
            " texts = excluded.texts, created_at = excluded.created_at, applied_at = NULL",
            (episode_id, language, texts, now),
        )


def translations(db: Any, episode_id: int) -> list[dict]:
    """The episode's stored translations (language, texts, created_at, applied_at), by
    language."""
    return rows(
        db,
        "SELECT language, texts, created_at, applied_at FROM translations"
        " WHERE episode_id = ? ORDER BY language",
        (episode_id,),
    )


def mark_translations_applied(db: Any, episode_id: int, languages: list[str], now: str) -> None:
    """The episode's translations in `languages` are set on the platform as of `now`."""
    if not languages:
        return
    placeholders = marks(len(languages))
    execute(
        db,
        "UPDATE translations SET applied_at = ? WHERE episode_id = ?"
        f" AND language IN ({placeholders})",
        (now, episode_id, *languages),
    )
