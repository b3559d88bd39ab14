"""Read models: what `status`, `run-due --dry-run`, the report, stats and the page read.

Every function here only reads, except `record_readings` (the stats series). A list of values
asked about (channels, posts, episodes) travels as `?` placeholders, a bounded number per
statement (`CHUNK`), in a form every store accepts: an IN list, or a VALUES list where each
value must drive an index seek of its own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .store import execute, loads, marks, row, rows, transaction

#: values passed in one statement at most (SQLite takes 32,766 placeholders, PostgreSQL 65,535)
CHUNK = 2000


def _chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _marks(count: int, width: int = 1) -> str:
    """`count` VALUES rows of `width` placeholders each: "(?, ?), (?, ?)"."""
    one = f"({marks(width)})"
    return ", ".join([one] * count)


# -- channels, posts, episodes --------------------------------------------------------------------


def channels_by_name(db: Any) -> dict[str, dict[str, Any]]:
    """Every channel row (stamp, claim, schedule seen), by name."""
    return {found["name"]: found for found in rows(db, "SELECT * FROM channels")}


def posts_needing_person(db: Any) -> list[dict[str, Any]]:
    """id, channel, platform, state, reason of the posts that need a person or may be live."""
    return rows(
        db,
        "SELECT id, channel, platform, state, reason FROM posts"
        " WHERE state IN ('needs_person', 'may_be_live') ORDER BY id",
    )


def posts_needing_person_titled(db: Any) -> list[dict[str, Any]]:
    """As `posts_needing_person`, with each post's episode `title`."""
    return rows(
        db,
        "SELECT p.id, p.channel, p.platform, p.state, p.reason, e.title FROM posts p"
        " JOIN episodes e ON e.id = p.episode_id"
        " WHERE p.state IN ('needs_person', 'may_be_live') ORDER BY p.id",
    )


def posts_kept_private(db: Any, platform: str) -> list[dict[str, Any]]:
    """id, channel, url and `handles` (decoded) of every attempt of a published post of
    `platform` whose handles mention `kept_private`, by post."""
    found = rows(
        db,
        "SELECT p.id, p.channel, p.url, a.handles FROM posts p"
        " JOIN post_attempts a ON a.post_id = p.id"
        " WHERE p.platform = :platform AND p.state = 'published'"
        " AND a.handles LIKE :mention ORDER BY p.id",
        # The pattern is a parameter: a literal % in the statement is a placeholder to psycopg.
        {"platform": platform, "mention": "%kept_private%"},
    )
    return [{**post, "handles": loads(post["handles"], {})} for post in found]


def ready_counts(db: Any) -> dict[str, int]:
    """Ready (or approved) slot episodes per channel that no platform has published yet."""
    return {
        found["channel"]: found["ready"]
        for found in rows(
            db,
            "SELECT e.channel AS channel, COUNT(*) AS ready FROM episodes e"
            " WHERE e.state IN ('ready', 'approved') AND e.off_schedule = 0"
            " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id"
            " AND p.state = 'published') GROUP BY e.channel",
        )
    }


def ready_counts_by_kind(db: Any) -> dict[tuple[str, str], int]:
    """Ready (or approved) slot episodes per (channel, kind) that no platform has had yet."""
    return {
        (found["channel"], found["kind"]): found["ready"]
        for found in rows(
            db,
            "SELECT e.channel, e.kind, COUNT(*) AS ready FROM episodes e"
            " WHERE e.state IN ('ready', 'approved') AND e.off_schedule = 0"
            " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id"
            " AND p.state = 'published') GROUP BY e.channel, e.kind",
        )
    }


def recent_decisions(db: Any, spans: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """channel, slot, slot_at, platform, outcome (read `posted` when its post is published
    since), reason and decided_at of every decision in each channel's range of slot keys
    (`spans`: channel -> (first, last), both kept): each range one range of the decisions'
    index, as `shown_slot_records` reads them."""
    found: list[dict[str, Any]] = []
    for chunk in _chunks(list(spans.items())):
        found.extend(
            rows(
                db,
                f"WITH wanted (channel, first_key, last_key) AS (VALUES {_marks(len(chunk), 3)})"
                " SELECT d.channel, d.slot, d.slot_at, d.platform, CASE WHEN p.state ="
                " 'published' THEN 'posted' ELSE d.outcome END AS outcome, d.reason,"
                " d.decided_at FROM wanted JOIN decisions d ON d.channel = wanted.channel"
                " AND d.slot BETWEEN wanted.first_key AND wanted.last_key"
                " LEFT JOIN posts p ON p.id = d.post_id",
                tuple(value for name, (first, last) in chunk for value in (name, first, last)),
            )
        )
    return found


def episode_tracks(db: Any, channels: Sequence[str]) -> dict[str, set[str]]:
    """The folder tracks (`source.track`) every episode of each of `channels` took, whatever
    its state (a rejected episode used its track too)."""
    found: dict[str, set[str]] = {name: set() for name in channels}
    for chunk in _chunks(sorted(found)):
        for episode in rows(
            db,
            f"SELECT channel, source FROM episodes WHERE channel IN ({marks(len(chunk))})",
            tuple(chunk),
        ):
            track = (loads(episode["source"], {}) or {}).get("track")
            if track:
                found[episode["channel"]].add(track)
    return found


def count_unposted(db: Any, episode_ids: Sequence[int]) -> int:
    """How many of `episode_ids` (distinct) no platform has had yet: every post of theirs is
    still queued, or they have none."""
    counted = 0
    for chunk in _chunks(sorted(episode_ids)):
        found = row(
            db,
            f"SELECT COUNT(*) AS n FROM episodes e WHERE e.id IN ({marks(len(chunk))})"
            " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id"
            " AND p.state != 'queued')",
            tuple(chunk),
        )
        counted += int(found["n"]) if found else 0
    return counted


# -- slots: status and the report -----------------------------------------------------------------


def shown_slot_records(db: Any, spans: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
    """For each channel's range of slot keys (`spans`: channel -> (first, last), both kept):
    {channel, slot, state, outcome: None} for each slot row, and {channel, slot, state: None,
    outcome} for each decision, its outcome read `posted` when its post is published.

    Each range is read as one range of its keys in the slots' and the decisions' indexes, not
    key by key: at a thousand channels that is a third of the pages read. (`status` over 1,000
    channels reads some 6,000 rows here: one row each, four columns, as few as will do.)"""
    found: list[dict[str, Any]] = []
    for chunk in _chunks(list(spans.items())):
        found.extend(
            rows(
                db,
                f"WITH wanted (channel, first_key, last_key) AS (VALUES {_marks(len(chunk), 3)})"
                " SELECT s.channel AS channel, s.slot AS slot, s.state AS state,"
                " NULL AS outcome FROM wanted JOIN slots s"
                " ON s.channel = wanted.channel"
                " AND s.slot BETWEEN wanted.first_key AND wanted.last_key"
                " UNION ALL SELECT d.channel, d.slot, NULL, CASE WHEN d.outcome IS NOT NULL"
                " AND p.state = 'published' THEN 'posted' ELSE d.outcome END FROM wanted"
                " JOIN decisions d ON d.channel = wanted.channel"
                " AND d.slot BETWEEN wanted.first_key AND wanted.last_key"
                " LEFT JOIN posts p ON p.id = d.post_id",
                tuple(value for name, (first, last) in chunk for value in (name, first, last)),
            )
        )
    return found


def decisions_between(db: Any, channel: str, first: str, last: str) -> list[dict[str, Any]]:
    """slot, platform, outcome, reason, post_id and its post's `post_state` of each of the
    channel's decisions from slot key `first` to `last`, in the order they were made."""
    return rows(
        db,
        "SELECT d.slot, d.platform, d.outcome, d.reason, d.post_id, p.state AS post_state"
        " FROM decisions d LEFT JOIN posts p ON p.id = d.post_id"
        " WHERE d.channel = ? AND d.slot >= ? AND d.slot <= ? ORDER BY d.id",
        (channel, first, last),
    )


def slot_states_between(db: Any, channel: str, start: str, end: str) -> dict[str, str]:
    """The stored state of each of the channel's slot rows from instant `start` to `end`."""
    return {
        found["slot"]: found["state"]
        for found in rows(
            db,
            "SELECT slot, state FROM slots WHERE channel = ? AND slot_at >= ? AND slot_at <= ?",
            (channel, start, end),
        )
    }


def paced_posts_between(db: Any, channel: str, first: str, last: str) -> list[dict[str, Any]]:
    """id, slot, platform, not_before of the channel's posts that wait for their human-pace
    moment (queued, or failed and to be tried again), for slot keys `first` to `last`."""
    return rows(
        db,
        "SELECT id, slot, platform, not_before FROM posts WHERE not_before IS NOT NULL"
        " AND state IN ('queued', 'failed') AND slot >= ? AND slot <= ? AND channel = ?"
        " AND kind = 'video'",
        (first, last, channel),
    )


def waits_between(db: Any, channel: str, first: str, last: str) -> list[dict[str, Any]]:
    """slot, platform, reason of the channel's slots that wait for a busy platform, for slot
    keys `first` to `last`."""
    return rows(
        db,
        "SELECT slot, platform, reason FROM slot_waits WHERE channel = ?"
        " AND slot >= ? AND slot <= ?",
        (channel, first, last),
    )


def releases_between(db: Any, channel: str, since: str, until: str) -> list[dict[str, Any]]:
    """id, episode_id, platform, url, published_at and episode `title` of the channel's posts
    published from `since` to `until`, newest first."""
    return rows(
        db,
        "SELECT p.id, p.episode_id, p.platform, p.url, p.published_at, e.title FROM posts p"
        " JOIN episodes e ON e.id = p.episode_id WHERE p.channel = ? AND p.state = 'published'"
        " AND p.published_at >= ? AND p.published_at <= ? ORDER BY p.published_at DESC, p.id",
        (channel, since, until),
    )


# -- stats ----------------------------------------------------------------------------------------


def published_with_platform_ids(db: Any) -> list[dict[str, Any]]:
    """id, platform, platform_post_id of every published post the platform named, by id."""
    return rows(
        db,
        "SELECT id, platform, platform_post_id FROM posts WHERE state = 'published'"
        " AND platform_post_id IS NOT NULL ORDER BY id",
    )


def record_readings(db: Any, readings: Sequence[tuple[Any, ...]]) -> None:
    """Keep each reading, (post_id, at, views, likes, comments, reposts, replies); a reading
    at the same instant is replaced. Opens its own transaction."""
    with transaction(db):
        for reading in readings:
            execute(
                db,
                "INSERT INTO post_stats (post_id, at, views, likes, comments, reposts, replies)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (post_id, at) DO UPDATE SET"
                " views = excluded.views, likes = excluded.likes,"
                " comments = excluded.comments, reposts = excluded.reposts,"
                " replies = excluded.replies",
                tuple(reading),
            )


_LATEST = (
    " SELECT s.* FROM wanted w JOIN post_stats s"
    " ON s.post_id = w.post_id AND s.at = (SELECT MAX(m.at) FROM post_stats m"
    " WHERE m.post_id = w.post_id AND m.at <= ?)"
)


def latest_readings(
    db: Any, moment: str, post_ids: Sequence[int] | None = None
) -> dict[int, dict[str, Any]]:
    """Each post's last reading at or before `moment` (every post, or only `post_ids`), by
    post id."""
    # Driven from the posts, one index seek each for their last reading (the primary key is
    # (post_id, at)), so it costs the posts asked for, not the length of their series.
    if post_ids is None:
        found = rows(db, "WITH wanted (post_id) AS (SELECT id FROM posts)" + _LATEST, (moment,))
        return {entry["post_id"]: entry for entry in found}
    latest: dict[int, dict[str, Any]] = {}
    for chunk in _chunks(sorted(set(post_ids))):
        for entry in rows(
            db,
            f"WITH wanted (post_id) AS (VALUES {_marks(len(chunk))})" + _LATEST,
            (*chunk, moment),
        ):
            latest[entry["post_id"]] = entry
    return latest


def posts_with_readings(db: Any, now: str, channel: str | None = None) -> list[dict[str, Any]]:
    """id, episode_id, channel, platform, url, published_at and episode `title` of the published
    posts (of one channel, or all) read at least once by `now`, newest first."""
    where = " AND p.channel = :channel" if channel else ""
    return rows(
        db,
        "SELECT p.id, p.episode_id, p.channel, p.platform, p.url, p.published_at,"
        " e.title FROM posts p JOIN episodes e ON e.id = p.episode_id"
        " WHERE p.state = 'published' AND EXISTS (SELECT 1 FROM post_stats s"
        f" WHERE s.post_id = p.id AND s.at <= :now){where}"
        " ORDER BY p.published_at DESC, p.id DESC",
        {"now": now, "channel": channel},
    )


def views_readings(
    db: Any, post_ids: Sequence[int], until: str
) -> dict[int, tuple[list[str], list[int | None]]]:
    """Each post's readings up to `until`, oldest first: (their instants, their views), by post
    id (a post without readings is left out)."""
    series: dict[int, tuple[list[str], list[int | None]]] = {}
    for chunk in _chunks(sorted(set(post_ids))):
        for entry in rows(
            db,
            "SELECT post_id, at, views FROM post_stats"
            f" WHERE post_id IN ({marks(len(chunk))}) AND at <= ?"
            " ORDER BY post_id, at",
            (*chunk, until),
        ):
            instants, views = series.setdefault(entry["post_id"], ([], []))
            instants.append(entry["at"])
            views.append(entry["views"])
    return series
