"""An episode's files in the media bucket (`[media] url`): one row for each file whose upload
completed (autoretto/media.py), with the digest and size taken on the host that made it.

Written in statements both stores accept; only `record` opens a transaction (never call it
inside one).
"""

from __future__ import annotations

from typing import Any

from .store import execute, marks, rows, transaction


def record(
    db: Any, *, episode_id: int, name: str, key: str, sha256: str, size: int, now: str
) -> None:
    """Record `name` of the episode as uploaded (again: its row is replaced)."""
    with transaction(db):
        execute(
            db, "DELETE FROM episode_files WHERE episode_id = ? AND name = ?", (episode_id, name)
        )
        execute(
            db,
            "INSERT INTO episode_files (episode_id, name, key, sha256, size, uploaded_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (episode_id, name, key, sha256, size, now),
        )


def of_episode(db: Any, episode_id: int) -> dict[str, dict[str, Any]]:
    """The episode's recorded files, by name."""
    return {
        found["name"]: found
        for found in rows(
            db,
            "SELECT name, key, sha256, size, uploaded_at FROM episode_files WHERE episode_id = ?"
            " ORDER BY name",
            (episode_id,),
        )
    }


def forget(db: Any, episode_id: int) -> int:
    """Drop the episode's records; how many there were."""
    return execute(db, "DELETE FROM episode_files WHERE episode_id = ?", (episode_id,))


def states(db: Any, episode_ids: list[int]) -> dict[int, str]:
    """The state of each of `episode_ids` that has a row (a restored database may not)."""
    if not episode_ids:
        return {}
    return {
        found["id"]: found["state"]
        for found in rows(
            db,
            f"SELECT id, state FROM episodes WHERE id IN ({marks(len(episode_ids))})",
            tuple(episode_ids),
        )
    }


def recorded_episodes(db: Any) -> set[int]:
    """Every episode that has a recorded file."""
    found = rows(db, "SELECT DISTINCT episode_id FROM episode_files")
    return {one["episode_id"] for one in found}


def begin_upload(db: Any, episode_id: int, now: str) -> None:
    """Mark that an upload of the episode's files began (kept until its objects are gone)."""
    if rows(db, "SELECT 1 AS found FROM episode_uploads WHERE episode_id = ?", (episode_id,)):
        return
    execute(
        db,
        "INSERT INTO episode_uploads (episode_id, started_at) VALUES (?, ?)"
        " ON CONFLICT (episode_id) DO NOTHING",
        (episode_id, now),
    )


def uploads_to_clean(db: Any) -> list[int]:
    """Episodes whose upload began and which no slot will take: dropped (`discarded`,
    `rejected`), or gone from the database (a restored copy)."""
    return [
        found["episode_id"]
        for found in rows(
            db,
            "SELECT u.episode_id FROM episode_uploads u LEFT JOIN episodes e"
            " ON e.id = u.episode_id WHERE e.id IS NULL OR e.state IN ('discarded', 'rejected')"
            " ORDER BY u.episode_id",
        )
    ]


def upload_begun(db: Any, episode_id: int) -> bool:
    return bool(
        rows(db, "SELECT 1 AS found FROM episode_uploads WHERE episode_id = ?", (episode_id,))
    )


def forget_upload(db: Any, episode_id: int) -> None:
    execute(db, "DELETE FROM episode_uploads WHERE episode_id = ?", (episode_id,))
