"""Episodes: their rows (made, imported, compiled), the making claim and its heartbeat, what a
slot may take, retention's marks and discards, and the count of paid generations.

Every statement is written in a form both stores accept: no JSON functions (an episode's
`source` JSON is read and written whole, here or by the caller, in Python), no INSERT OR
IGNORE, new rows read back with RETURNING. No function here opens a transaction unless its
docstring says so; those that do are never called inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .claims import BEAT_UNCHANGED
from .store import dumps, execute, loads, marks, row, rows, transaction

#: What a finished make writes (`finish_making`), besides its state.
MADE_COLUMNS = (
    "reason",
    "title",
    "description",
    "tags",
    "texts",
    "videos",
    "thumbnail",
    "audio",
    "duration",
    "tempo",
    "beats",
    "gates",
    "ai_generated",
    "fingerprint",
    "source",
)

#: The columns an episode row has (ledger/store.py, migrations 1 and 5): what a make writes,
#: and the row's own bookkeeping.
EPISODE_COLUMNS = frozenset(
    {
        *MADE_COLUMNS,
        "channel",
        "state",
        "off_schedule",
        "run_id",
        "heartbeat_at",
        "created_at",
        "updated_at",
        "kind",
    }
)


# -- rows ------------------------------------------------------------------------------------------


def add_episode(db: Any, values: dict[str, Any]) -> int:
    """Write a new episode row with `values` (column -> value; the columns left out take their
    defaults) and return its id."""
    unknown = set(values) - EPISODE_COLUMNS
    if unknown:
        raise ValueError(f"not episode columns: {', '.join(sorted(unknown))}")
    columns = list(values)
    added = row(
        db,
        f"INSERT INTO episodes ({', '.join(columns)})"
        f" VALUES ({', '.join(':' + column for column in columns)}) RETURNING id",
        values,
    )
    assert added is not None
    return added["id"]


def find_episode(db: Any, episode_id: int) -> dict | None:
    """The episode's row, or None."""
    return row(db, "SELECT * FROM episodes WHERE id = ?", (episode_id,))


def list_episodes(db: Any, channel: str | None = None) -> list[dict]:
    """Every episode's row (of `channel` when given), oldest first."""
    if channel:
        return rows(db, "SELECT * FROM episodes WHERE channel = ? ORDER BY id", (channel,))
    return rows(db, "SELECT * FROM episodes ORDER BY id")


def change_state(db: Any, episode_id: int, *, old: str, new: str, now: str) -> bool:
    """Move the episode from state `old` to `new` (approve, hold); False when it was not `old`."""
    return (
        execute(
            db,
            "UPDATE episodes SET state = :new, updated_at = :now WHERE id = :id AND state = :old",
            {"new": new, "old": old, "now": now, "id": episode_id},
        )
        == 1
    )


# -- imports (`episode add`) -----------------------------------------------------------------------


def beat_import(db: Any, episode_id: int, importer: str, now: str) -> None:
    """The heartbeat of an import still copying its video."""
    execute(
        db,
        "UPDATE episodes SET heartbeat_at = :now WHERE id = :id AND run_id = :importer",
        {"now": now, "id": episode_id, "importer": importer},
    )


def finish_import(db: Any, episode_id: int, importer: str, videos: dict, now: str) -> bool:
    """The import's copy is complete: its `making` row becomes `ready` with `videos`. False when
    the row is no longer this import's (a run took it for an interrupted one)."""
    return (
        execute(
            db,
            "UPDATE episodes SET state = 'ready', videos = :videos, run_id = NULL,"
            " updated_at = :now WHERE id = :id AND state = 'making' AND run_id = :importer",
            {"videos": dumps(videos), "now": now, "id": episode_id, "importer": importer},
        )
        == 1
    )


def forget_import(db: Any, episode_id: int, importer: str) -> bool:
    """Delete a failed import's row, while it is still this import's `making` row."""
    return (
        execute(
            db,
            "DELETE FROM episodes WHERE id = :id AND state = 'making' AND run_id = :importer",
            {"id": episode_id, "importer": importer},
        )
        == 1
    )


def silent_making(db: Any, stale_before: str) -> list[dict]:
    """`making` episodes whose heartbeat is older than `stale_before` (or missing), imports and
    makes alike: id, channel, title, source (the JSON text), since (the heartbeat)."""
    return rows(
        db,
        "SELECT id, channel, title, source, heartbeat_at AS since FROM episodes"
        " WHERE state = 'making' AND (heartbeat_at IS NULL OR heartbeat_at < ?) ORDER BY id",
        (stale_before,),
    )


def reject_interrupted_import(
    db: Any, episode_id: int, *, reason: str, now: str, stale_before: str
) -> bool:
    """Reject a `making` episode whose heartbeat is still older than `stale_before`; False when
    it is no longer (its import went on, or another run took it first)."""
    return (
        execute(
            db,
            "UPDATE episodes SET state = 'rejected', reason = :reason, run_id = NULL,"
            " updated_at = :now WHERE id = :id AND state = 'making'"
            " AND (heartbeat_at IS NULL OR heartbeat_at < :stale_before)",
            {"reason": reason, "now": now, "id": episode_id, "stale_before": stale_before},
        )
        == 1
    )


# -- what a slot takes -----------------------------------------------------------------------------


#: The order slots take episodes in: by id (oldest first), unless `episode move` or `episode
#: swap` gave one another place (`queue_order`, an id of the channel's line it took over).
IN_LINE = "COALESCE(e.queue_order, e.id), e.id"


def _not_had(had_states: Sequence[str]) -> str:
    return (
        " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id AND p.platform = ?"
        f" AND p.state IN ({marks(len(had_states))}))"
    )


def _schedule_filter(kind: str | None) -> tuple[str, tuple[str, ...]]:
    # A slot takes its own kind only and no off-schedule episode; kind None (a post-now) takes
    # any.
    if kind is None:
        return "", ()
    return " AND e.off_schedule = 0 AND e.kind = ?", (kind,)


def unhad_episodes(
    db: Any,
    channel: str,
    platform: str,
    *,
    states: Sequence[str],
    had_states: Sequence[str],
    kind: str | None,
) -> list[dict]:
    """The channel's episodes in one of `states` of which `platform` has no post in one of
    `had_states`, oldest first (whole rows). With `kind`, only on-schedule episodes of that
    kind; with None, any."""
    schedule, kind_values = _schedule_filter(kind)
    return rows(
        db,
        f"SELECT e.* FROM episodes e WHERE e.channel = ? AND e.state IN ({marks(len(states))})"
        f"{schedule}{_not_had(had_states)} ORDER BY {IN_LINE}",
        (channel, *states, *kind_values, platform, *had_states),
    )


def has_unapproved(
    db: Any, channel: str, platform: str, *, had_states: Sequence[str], kind: str | None
) -> bool:
    """Whether the channel has a `ready` (not approved) episode `platform` has not had
    (`kind` as for `unhad_episodes`)."""
    schedule, kind_values = _schedule_filter(kind)
    return (
        row(
            db,
            f"SELECT 1 AS found FROM episodes e WHERE e.channel = ? AND e.state = 'ready'"
            f"{schedule}{_not_had(had_states)} LIMIT 1",
            (channel, *kind_values, platform, *had_states),
        )
        is not None
    )


def count_unposted_ready(db: Any, channel: str) -> int:
    """Ready (or approved) on-schedule episodes of the channel that no platform has had."""
    found = row(
        db,
        "SELECT COUNT(*) AS n FROM episodes e WHERE e.channel = ? AND e.state IN"
        " ('ready', 'approved') AND e.off_schedule = 0 AND NOT EXISTS (SELECT 1 FROM posts p"
        " WHERE p.episode_id = e.id AND p.state != 'queued')",
        (channel,),
    )
    return found["n"] if found else 0


def unposted_ready_counts(db: Any) -> dict[str, int]:
    """`count_unposted_ready` of every channel that has any, in one read (a run over hundreds
    of channels whose stocks are full asks once, not once a channel)."""
    found = rows(
        db,
        "SELECT e.channel, COUNT(*) AS n FROM episodes e WHERE e.state IN ('ready', 'approved')"
        " AND e.off_schedule = 0 AND NOT EXISTS (SELECT 1 FROM posts p"
        " WHERE p.episode_id = e.id AND p.state != 'queued') GROUP BY e.channel",
    )
    return {r["channel"]: r["n"] for r in found}


# -- making (produce.py) ---------------------------------------------------------------------------


def beat_making(connection: Any, run_id: str, now: str) -> None:
    """The heartbeat of the episodes `run_id` is making. `connection`: anything `execute` takes
    (the heartbeat thread's own connection)."""
    execute(
        connection,
        "UPDATE episodes SET heartbeat_at = :now WHERE run_id = :run AND state = 'making'",
        {"now": now, "run": run_id},
    )


def making_not_held_by(db: Any, channel: str, run_id: str) -> list[dict]:
    """The channel's `making` episodes not held by `run_id`, oldest first: id, run_id (their
    holder, or None), source (the JSON text: an import's names the file it copies)."""
    return rows(
        db,
        "SELECT id, run_id, source FROM episodes WHERE channel = ? AND state = 'making'"
        " AND (run_id IS NULL OR run_id != ?) ORDER BY id",
        (channel, run_id),
    )


def take_over_making(
    db: Any, episode_id: int, *, run_id: str, holder: str | None, beat: int | None, now: str
) -> bool:
    """Make `run_id` the holder of a `making` episode that has none, or whose holder `holder`
    still has the beat `beat` seen when it was judged gone (claims.BEAT_UNCHANGED)."""
    return (
        execute(
            db,
            "UPDATE episodes SET run_id = :run, heartbeat_at = :now, reason = NULL"
            " WHERE id = :id AND state = 'making' AND (run_id IS NULL"
            f" OR (run_id = :holder AND {BEAT_UNCHANGED}))",
            {"run": run_id, "now": now, "id": episode_id, "holder": holder, "beat": beat},
        )
        == 1
    )


def release_making(db: Any, episode_id: int, run_id: str, *, reason: str, now: str) -> None:
    """Give back a make that stopped for `reason`: the row stays `making`, with no holder."""
    execute(
        db,
        "UPDATE episodes SET run_id = NULL, reason = :reason, updated_at = :now"
        " WHERE id = :id AND run_id = :run",
        {"reason": reason, "now": now, "id": episode_id, "run": run_id},
    )


def finish_making(
    db: Any, episode_id: int, run_id: str, *, state: str, made: dict[str, Any], now: str
) -> bool:
    """Write a finished make (`made`: every one of MADE_COLUMNS) and its `state` (ready or
    rejected) on the `making` row `run_id` holds; False when it holds it no longer."""
    return (
        execute(
            db,
            "UPDATE episodes SET state = :state, "
            + ", ".join(f"{column} = :{column}" for column in MADE_COLUMNS)
            + ", run_id = NULL, updated_at = :now"
            " WHERE id = :id AND state = 'making' AND run_id = :run",
            {
                **{column: made[column] for column in MADE_COLUMNS},
                "state": state,
                "now": now,
                "id": episode_id,
                "run": run_id,
            },
        )
        == 1
    )


def channel_sources(db: Any, channel: str) -> list[dict]:
    """The `source` of every episode of the channel, whatever its state, as dicts."""
    return [
        loads(found["source"], {}) or {}
        for found in rows(db, "SELECT source FROM episodes WHERE channel = ?", (channel,))
    ]


def ready_fingerprints(db: Any, except_id: int) -> list[tuple[int, str]]:
    """(id, fingerprint) of every ready or approved episode that has one, but `except_id`."""
    return [
        (found["id"], found["fingerprint"])
        for found in rows(
            db,
            "SELECT id, fingerprint FROM episodes WHERE fingerprint IS NOT NULL"
            " AND state IN ('ready', 'approved') AND id != ?",
            (except_id,),
        )
    ]


def count_generation(db: Any, provider: str, day: str, daily_cap: int) -> bool:
    """Count one paid generation of `provider` on `day`, unless the day already has `daily_cap`:
    then False and nothing is counted. Opens its own transaction (never call it inside one):
    the row is made if missing, then one conditional UPDATE counts, so two makes at once never
    pass the cap together."""
    key = {"platform": provider, "account": "default", "bucket": "generations", "day": day}
    with transaction(db):
        execute(
            db,
            "INSERT INTO usage (platform, account, bucket, day, used)"
            " VALUES (:platform, :account, :bucket, :day, 0)"
            " ON CONFLICT (platform, account, bucket, day) DO NOTHING",
            key,
        )
        counted = execute(
            db,
            "UPDATE usage SET used = used + 1 WHERE platform = :platform AND account = :account"
            " AND bucket = :bucket AND day = :day AND used < :cap",
            {**key, "cap": daily_cap},
        )
    return counted == 1


# -- retention (retention.py) ----------------------------------------------------------------------


def last_published_before(db: Any, before: str) -> list[dict]:
    """Episodes with a published post whose latest publish is older than `before`, oldest first:
    id, channel, kind, published_at (the latest), source (the JSON text)."""
    return rows(
        db,
        "SELECT e.id, e.channel, e.kind, e.source, MAX(p.published_at) AS published_at"
        " FROM episodes e JOIN posts p ON p.episode_id = e.id AND p.state = 'published'"
        " GROUP BY e.id HAVING MAX(p.published_at) < ? ORDER BY e.id",
        (before,),
    )


def set_source_once(db: Any, episode_id: int, key: str, value: Any) -> bool:
    """Set `key` of the episode's `source` JSON to `value`, unless it has a value there already
    (a JSON null is none). The JSON is changed in Python and written back by compare-and-set on
    the text read, read again when another process changed it meanwhile, so nothing another
    process wrote into it is lost. True when this call set it."""
    while True:
        found = row(db, "SELECT source FROM episodes WHERE id = ?", (episode_id,))
        if found is None:
            return False
        source = loads(found["source"], {}) or {}
        if source.get(key) is not None:
            return False
        unchanged = "source IS NULL" if found["source"] is None else "source = :old"
        changed = execute(
            db,
            f"UPDATE episodes SET source = :new WHERE id = :id AND {unchanged}",
            {"new": dumps({**source, key: value}), "id": episode_id, "old": found["source"]},
        )
        if changed:
            return True


def posts_of(db: Any, episode_id: int) -> list[dict]:
    """The episode's posts, oldest first: id, channel, platform, state, slot."""
    return rows(
        db,
        "SELECT id, channel, platform, state, slot FROM posts WHERE episode_id = ? ORDER BY id",
        (episode_id,),
    )


def slot_decisions(db: Any, channel: str, slot: str | None) -> list[dict]:
    """The decisions on a slot of the channel: platform, outcome."""
    return rows(
        db,
        "SELECT platform, outcome FROM decisions WHERE channel = ? AND slot = ?",
        (channel, slot),
    )


def first_sent_post(db: Any, episode_id: int) -> dict | None:
    """One post of the episode past `queued` (platform, state), or None."""
    return row(
        db,
        "SELECT platform, state FROM posts WHERE episode_id = ? AND state != 'queued' LIMIT 1",
        (episode_id,),
    )


def discard(
    db: Any, episode_id: int, *, state: str, reason: str, now: str, stale_before: str
) -> bool:
    """Make the episode `discarded`, while it is still `state` and, when `making`, held by no
    make heard from since `stale_before`; False when it changed meanwhile."""
    return (
        execute(
            db,
            "UPDATE episodes SET state = 'discarded', reason = :reason, run_id = NULL,"
            " updated_at = :now WHERE id = :id AND state = :state AND (:state != 'making'"
            " OR run_id IS NULL OR heartbeat_at IS NULL OR heartbeat_at < :stale_before)",
            {
                "reason": reason,
                "now": now,
                "id": episode_id,
                "state": state,
                "stale_before": stale_before,
            },
        )
        == 1
    )


# -- compilations (compile.py) ---------------------------------------------------------------------


def last_published_of_kind(db: Any, channel: str, kind: str, last: int) -> list[dict]:
    """The channel's last `last` published episodes of `kind`, newest first (whole rows, with
    first_published_at: an episode counts as published from its first published post)."""
    return rows(
        db,
        "SELECT e.*, MIN(p.published_at) AS first_published_at FROM episodes e"
        " JOIN posts p ON p.episode_id = e.id AND p.state = 'published'"
        " WHERE e.channel = ? AND e.kind = ? GROUP BY e.id"
        " ORDER BY first_published_at DESC, e.id DESC LIMIT ?",
        (channel, kind, last),
    )


def add_with_files(
    db: Any, values: dict[str, Any], place: Callable[[int], tuple[dict, str | None]]
) -> int:
    """Write a new episode row with `values`, then call `place(episode_id)`, which puts its files
    in place and returns (videos, thumbnail), and record those; all in one transaction that this
    function opens (never call it inside one), so a `place` that fails leaves no row. Returns the
    episode's id."""
    with transaction(db):
        episode_id = add_episode(db, values)
        videos, thumbnail = place(episode_id)
        execute(
            db,
            "UPDATE episodes SET videos = ?, thumbnail = ? WHERE id = ?",
            (dumps(videos), thumbnail, episode_id),
        )
    return episode_id


# -- the line and the editor (autoretto/editing.py) ------------------------------------------------


def unsent_in_line(db: Any, channel: str, *, kind: str, states: Sequence[str]) -> list[dict]:
    """The channel's on-schedule episodes of `kind` in one of `states` that no platform has a
    post of yet, in the order slots take them: id and `place` (their key in that order)."""
    return rows(
        db,
        "SELECT e.id, COALESCE(e.queue_order, e.id) AS place FROM episodes e"
        f" WHERE e.channel = ? AND e.kind = ? AND e.off_schedule = 0 AND e.state IN"
        f" ({marks(len(states))}) AND NOT EXISTS (SELECT 1 FROM posts p WHERE"
        f" p.episode_id = e.id) ORDER BY {IN_LINE}",
        (channel, kind, *states),
    )


def give_places(db: Any, places: dict[int, tuple[int, int]]) -> bool:
    """Give each episode id its new place in line, `places[id] = (old, new)`, each written only
    where the episode's place is still `old` and no platform has had a post of it. Inside one
    transaction; False, changing nothing, when any of them moved meanwhile."""
    try:
        with transaction(db):
            for episode_id, (old, new) in places.items():
                changed = execute(
                    db,
                    "UPDATE episodes SET queue_order = :new WHERE id = :id"
                    " AND COALESCE(queue_order, id) = :old"
                    " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = :id)",
                    {"new": new, "old": old, "id": episode_id},
                )
                if changed != 1:
                    raise _Moved
    except _Moved:  # rolled back whole
        return False
    return True


class _Moved(Exception):
    """An episode's place changed under a move (another edit won)."""


def write_copy(
    db: Any,
    episode_id: int,
    *,
    old_texts: str,
    values: dict[str, Any],
    edits: list[dict[str, Any]],
    states: Sequence[str],
    untouched_platforms: Sequence[str],
    now: str,
) -> bool:
    """Write an episode's edited copy (`values`: title, description, texts, gates) and record
    each of `edits` (who, platform, field, old, new), in one transaction; only while the
    episode is in one of `states`, its texts are still `old_texts` (nobody else edited it
    meanwhile) and none of `untouched_platforms` has a post of it yet (none began meanwhile).
    False, changing nothing, when not."""
    unknown = set(values) - {"title", "description", "texts", "gates"}
    if unknown:
        raise ValueError(f"not copy columns: {', '.join(sorted(unknown))}")
    settings = ", ".join(f"{name} = :{name}" for name in values)
    allowed = ", ".join(f":state{n}" for n in range(len(states)))
    platforms = ", ".join(f":platform{n}" for n in range(len(untouched_platforms)))
    no_post = (
        f" AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = :id AND p.platform IN"
        f" ({platforms}))"
        if untouched_platforms
        else ""
    )
    with transaction(db):
        changed = execute(
            db,
            f"UPDATE episodes SET {settings}, updated_at = :now WHERE id = :id"
            f" AND texts = :old_texts AND state IN ({allowed}){no_post}",
            {
                **values,
                **{f"state{n}": state for n, state in enumerate(states)},
                **{f"platform{n}": name for n, name in enumerate(untouched_platforms)},
                "now": now,
                "id": episode_id,
                "old_texts": old_texts,
            },
        )
        if changed != 1:
            return False
        last = row(
            db,
            "SELECT COALESCE(MAX(seq), 0) AS seq FROM episode_edits WHERE episode_id = ?",
            (episode_id,),
        )
        seq = last["seq"] if last else 0
        for edit in edits:
            seq += 1
            execute(
                db,
                "INSERT INTO episode_edits (episode_id, seq, at, who, platform, field, old, new)"
                " VALUES (:episode_id, :seq, :at, :who, :platform, :field, :old, :new)",
                {"episode_id": episode_id, "seq": seq, "at": now, **edit},
            )
    return True


def edits_of(db: Any, episode_id: int) -> list[dict]:
    """The episode's recorded edits, oldest first: seq, at, who, platform, field, old, new."""
    return rows(
        db,
        "SELECT seq, at, who, platform, field, old, new FROM episode_edits WHERE episode_id = ?"
        " ORDER BY seq",
        (episode_id,),
    )


def episodes_of_slots(db: Any, channel: str, first: str, last: str) -> dict[str, int]:
    """The episode each of the channel's slot keys `first` to `last` went out with (or is on
    its way with): slot -> episode id, from the slot's posts."""
    found: dict[str, int] = {}
    for post in rows(
        db,
        "SELECT slot, episode_id FROM posts WHERE channel = ? AND slot >= ? AND slot <= ?"
        " ORDER BY id",
        (channel, first, last),
    ):
        found.setdefault(post["slot"], post["episode_id"])
    return found
