"""Episodes: one release each (ARCHITECTURE.md §4).

States: `making → ready` (every gate passed) or `rejected` (gate and reason), then `approved`
where the channel asks for approval (`hold` takes approval back). A slot posts the oldest
ready (or, with approval, approved) episode that the platform has not had yet.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import iso
from .config import ChannelConfig, Config
from .errors import NotFound, UsageError
from .platforms.base import EpisodeView
from .store import dumps, execute, loads, row, rows, transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

POSTABLE_STATES = ("ready", "approved")
# A post in one of these states means the platform has had (or is getting) the episode.
HAD_STATES = ("published", "sending", "may_be_live", "needs_person")


@dataclass(frozen=True)
class ImportRequest:
    channel: str
    video: Path
    title: str
    description: str = ""
    tags: tuple[str, ...] = ()
    off_schedule: bool = False
    kind: str = "episode"  # or "film": posted on the channel's films cadence once approved


def import_episode(config: Config, db: Database, request: ImportRequest, now: datetime) -> dict:
    """Copy a finished video into the home as a ready episode. Returns the episode as a dict.

    The file is probed (and its first second decoded) first, so a file that is not a playable
    video is refused before anything is written. The row is `making` while the copy runs and
    becomes `ready` only once the copy is complete.
    """
    from .ffmpeg import check_playable

    config.channel(request.channel)
    refuse_while_held(config, db)
    source = request.video.expanduser()
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    if not request.title.strip():
        raise UsageError("--title: an episode needs a title")
    info = check_playable(source)
    assert info.video is not None
    video_format = "vertical" if info.video.height > info.video.width else "landscape"
    moment = iso(now)
    with transaction(db):
        episode_id = (
            db["episodes"]
            .insert(
                {
                    "channel": request.channel,
                    "state": "making",
                    "title": request.title.strip(),
                    "description": request.description,
                    "tags": dumps(list(request.tags)),
                    "texts": dumps({}),
                    "videos": dumps({}),
                    "duration": info.duration,
                    "gates": dumps([]),
                    "ai_generated": 0,
                    "source": dumps({"imported": str(source.absolute())}),
                    "off_schedule": int(request.off_schedule),
                    "kind": request.kind,
                    "created_at": moment,
                    "updated_at": moment,
                }
            )
            .last_pk
        )
    folder = config.paths.media / "episodes" / str(episode_id)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{video_format}{source.suffix.lower()}"
    partial = target.with_name(f".{target.name}.partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)
    execute(
        db,
        "UPDATE episodes SET state = 'ready', videos = :videos, updated_at = :now"
        " WHERE id = :id AND state = 'making'",
        {"videos": dumps({video_format: str(target)}), "now": moment, "id": episode_id},
    )
    return get_episode(db, episode_id)


def refuse_while_held(config: Config, db: Database) -> None:
    """No new episode while a restored database waits for `resume`: its id could be one the
    journal names."""
    from .errors import AutorettoError
    from .journal import restore_hold

    hold = restore_hold(db, config.journal)
    if hold is not None:
        raise AutorettoError(hold.reason)


def get_episode(db: Database, episode_id: int) -> dict:
    found = row(db, "SELECT * FROM episodes WHERE id = ?", (episode_id,))
    if found is None:
        raise NotFound(f"no episode {episode_id} (see `autoretto episodes`)")
    return found


def set_approval(db: Database, episode_id: int, *, approved: bool, now: datetime) -> dict:
    """`approve` (ready → approved) or `hold` (approved → ready)."""
    episode = get_episode(db, episode_id)
    old, new = ("ready", "approved") if approved else ("approved", "ready")
    if episode["state"] == new:
        return episode
    changed = execute(
        db,
        "UPDATE episodes SET state = :new, updated_at = :now WHERE id = :id AND state = :old",
        {"new": new, "old": old, "now": iso(now), "id": episode_id},
    )
    if not changed:
        verb = "approved" if approved else "held"
        raise UsageError(
            f"episode {episode_id} is {episode['state']}; only a {old} episode can be {verb}"
        )
    return get_episode(db, episode_id)


def next_episode_for(
    db: Database,
    channel: ChannelConfig,
    platform: str,
    *,
    off_schedule: bool = False,
    unsuitable: Callable[[dict], str | None] = lambda episode: None,
) -> tuple[dict | None, str]:
    """The oldest episode this platform has not had yet and can take, and if none, why.

    Returns (episode, "") or (None, reason) where reason starts with the decision's outcome:
    `waiting_for_approval` (ready episodes exist but none is approved) or `nothing_ready`
    (followed by why the waiting episodes cannot go, when `unsuitable` refused them all).
    """
    kind = channel.kind
    if kind not in ("episode", "film"):
        raise ValueError(kind)
    states = ("approved",) if channel.approval else POSTABLE_STATES
    # Slots take their own kind only (a film has its own cadence, a compilation none); a
    # post-now (off_schedule) may take any kind.
    schedule_filter = "" if off_schedule else f" AND e.off_schedule = 0 AND e.kind = '{kind}'"
    placeholders = ",".join("?" * len(states))
    had = ",".join("?" * len(HAD_STATES))
    candidates = rows(
        db,
        f"SELECT e.* FROM episodes e WHERE e.channel = ? AND e.state IN ({placeholders})"
        f"{schedule_filter} AND json_extract(e.source, '$.pruned_at') IS NULL"  # files removed
        " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id"
        f" AND p.platform = ? AND p.state IN ({had})) ORDER BY e.id",
        (channel.episode_channel, *states, platform, *HAD_STATES),
    )
    refusals = []
    for candidate in candidates:
        refusal = unsuitable(candidate)
        if refusal is None:
            return candidate, ""
        refusals.append(f"episode {candidate['id']}: {refusal}")
    if refusals:
        return None, "nothing_ready: " + "; ".join(refusals[:3])
    if channel.approval:
        waiting = row(
            db,
            "SELECT 1 FROM episodes e WHERE e.channel = ? AND e.state = 'ready'"
            f"{schedule_filter} AND NOT EXISTS (SELECT 1 FROM posts p WHERE"
            f" p.episode_id = e.id AND p.platform = ? AND p.state IN ({had})) LIMIT 1",
            (channel.episode_channel, platform, *HAD_STATES),
        )
        if waiting is not None:
            return None, "waiting_for_approval"
    return None, "nothing_ready"


def episode_view(episode: dict) -> EpisodeView:
    return EpisodeView(
        id=episode["id"],
        channel=episode["channel"],
        title=episode["title"] or "",
        description=episode["description"] or "",
        tags=tuple(loads(episode["tags"], [])),
        videos=loads(episode["videos"], {}),
        thumbnail=episode["thumbnail"],
        duration=episode["duration"],
        texts=loads(episode["texts"], {}),
        ai_generated=bool(episode["ai_generated"]),
    )


def episode_json(episode: dict) -> dict[str, Any]:
    """The stable `--json` shape of an episode."""
    return {
        "id": episode["id"],
        "channel": episode["channel"],
        "state": episode["state"],
        "title": episode["title"],
        "description": episode["description"],
        "tags": loads(episode["tags"], []),
        "created_at": episode["created_at"],
        "reason": episode["reason"],
        "videos": loads(episode["videos"], {}),
        "thumbnail": episode["thumbnail"],
        "duration": episode["duration"],
        "tempo": episode["tempo"],
        "beats": loads(episode["beats"], []),
        "gates": loads(episode["gates"], []),
        "ai_generated": bool(episode["ai_generated"]),
        "off_schedule": bool(episode["off_schedule"]),
        "kind": episode.get("kind", "episode"),
        "texts": loads(episode["texts"], {}),
        # when the retention policy removed its working files ([media] keep), else None
        "pruned_at": (loads(episode.get("source"), {}) or {}).get("pruned_at"),
    }


def list_episodes(db: Database, channel: str | None = None) -> list[dict]:
    if channel:
        return rows(db, "SELECT * FROM episodes WHERE channel = ? ORDER BY id", (channel,))
    return rows(db, "SELECT * FROM episodes ORDER BY id")
