"""Episodes: one release each (ARCHITECTURE.md §4).

States: `making → ready` (every gate passed) or `rejected` (gate and reason), then `approved`
where the channel asks for approval (`hold` takes approval back). A slot posts the oldest
ready (or, with approval, approved) episode that the platform has not had yet.
"""

from __future__ import annotations

import errno
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clock, faults
from .clock import iso
from .config import HEARTBEAT_SECONDS, ChannelConfig, Config
from .errors import AutorettoError, MediaError, NotFound, PostingHeld, UsageError
from .ledger import episodes as ledger
from .ledger.store import dumps, loads
from .platforms.base import EpisodeView

if TYPE_CHECKING:
    from .ledger.store import Store as Database

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
    video, or a still image, is refused before anything is written. The row is `making`, owned
    by this import and kept fresh by its heartbeat, while the copy runs, and becomes `ready`
    only once the copy is complete and on disk. A copy that fails (a full disk) leaves nothing:
    no file, no row. One that is killed is cleaned by the next `run-due`
    (`clean_interrupted_imports`), and `status` shows it until then.
    """
    from .ffmpeg import check_playable

    config.channel(request.channel)
    refuse_while_held(config, db)
    source = request.video.expanduser()
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    if not request.title.strip():
        raise UsageError("--title: an episode needs a title")
    if request.kind == "film":
        _refuse_a_track(source)
    info = check_playable(source)
    assert info.video is not None
    if info.duration < SHORTEST_VIDEO_SECONDS:
        raise MediaError(
            f"{source}: a still image or a clip under {SHORTEST_VIDEO_SECONDS:g} s "
            f"({info.video.codec}, {info.duration:g} s) is not an episode; give a finished video"
        )
    video_format = "vertical" if info.video.height > info.video.width else "landscape"
    moment = iso(now)
    importer = f"import-{uuid.uuid4().hex[:12]}"
    episode_id = ledger.add_episode(
        db,
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
            "run_id": importer,
            "heartbeat_at": moment,
            "created_at": moment,
            "updated_at": moment,
        },
    )
    folder = config.paths.media / "episodes" / str(episode_id)
    target = folder / f"{video_format}{source.suffix.lower()}"
    partial = target.with_name(f".{target.name}.partial")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _copy_keeping_heartbeat(source, partial, db, episode_id, importer)
        os.replace(partial, target)
        from .media import Media, upload

        upload(Media.of(config), db, episode_id, [target])  # [media] url: before it is ready
        done = ledger.finish_import(db, episode_id, importer, {video_format: str(target)}, moment)
        if not done:  # a run took this import for an interrupted one (it went silent too long)
            target.unlink(missing_ok=True)
            raise AutorettoError(
                f"episode {episode_id}: the import was taken for interrupted; add it again"
            )
    except BaseException as error:
        _forget_import(db, folder, episode_id, importer)
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise AutorettoError(
                f"{folder.parent}: the disk is full; nothing was added: free some space, then "
                "add the video again"
            ) from None
        raise
    return get_episode(db, episode_id)


def _refuse_a_track(source: Path) -> None:
    """A film is a finished video: a sound file given as one is refused with where it goes."""
    from .ffmpeg import probe

    info = probe(source)
    if info.video is None and info.audio is not None:
        raise MediaError(
            f"{source}: a sound file, not a film (a finished video); "
            f"`autoretto episode add CHANNEL {source.name}` makes an episode from a track"
        )


#: `episode add` refuses anything shorter: a still image probes as a 0-second video.
SHORTEST_VIDEO_SECONDS = 1.0
_COPY_CHUNK = 1024 * 1024


def _copy_keeping_heartbeat(
    source: Path, partial: Path, db: Database, episode_id: int, importer: str
) -> None:
    """Copy `source` to `partial` (mode 0600, fsynced), refreshing the import's heartbeat as
    it goes, so a long copy is never taken for an interrupted one."""
    last_beat = time.monotonic()
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(source, "rb") as reader, os.fdopen(descriptor, "wb") as writer:
        while chunk := reader.read(_COPY_CHUNK):
            writer.write(chunk)
            faults.checkpoint("import_copy")
            if time.monotonic() - last_beat >= HEARTBEAT_SECONDS:
                last_beat = time.monotonic()
                ledger.beat_import(db, episode_id, importer, iso(clock.now()))
        writer.flush()
        os.fsync(writer.fileno())


def _forget_import(db: Database, folder: Path, episode_id: int, importer: str) -> None:
    """Undo a failed import: its files first (on a full disk that frees the space the database
    needs), then its row. What cannot be undone now is cleaned by the next run."""
    _remove_half_copies(folder)
    with suppress(AutorettoError):
        ledger.forget_import(db, episode_id, importer)


def interrupted_imports(db: Database, now: datetime, stale_after: timedelta) -> list[dict]:
    """`episode add`s that stopped halfway (their process killed): `making` rows of imports
    whose heartbeat is older than `stale_after`. Each: id, channel, title, source, since."""
    found = []
    for silent in ledger.silent_making(db, iso(now - stale_after)):
        imported = (loads(silent["source"], {}) or {}).get("imported")
        if imported is not None:  # an import's source names its file; a make's does not
            found.append({**silent, "source": imported})
    return found


def clean_interrupted_imports(config: Config, db: Database, now: datetime) -> list[str]:
    """Reject each interrupted import (the reason says to add the video again) and remove its
    half-copied file. Returns one note per import cleaned."""
    notes = []
    stale_before = iso(now - config.stale_after)
    for found in interrupted_imports(db, now, config.stale_after):
        reason = "the import was interrupted before its copy was complete; add the video again"
        taken = ledger.reject_interrupted_import(
            db, found["id"], reason=reason, now=iso(now), stale_before=stale_before
        )
        if not taken:
            continue
        _remove_half_copies(config.paths.media / "episodes" / str(found["id"]))
        notes.append(f"episode {found['id']} ({found['source']}): {reason}")
    return notes


def _remove_half_copies(folder: Path) -> None:
    """An import's `.partial` files, and its folder when nothing else is in it."""
    for leftover in folder.glob(".*.partial"):
        leftover.unlink(missing_ok=True)
    with suppress(OSError):
        folder.rmdir()  # only when empty: a folder with other files is not ours to remove


def refuse_while_held(config: Config, db: Database) -> None:
    """No new episode while a restored database waits for `resume`: its id could be one the
    journal names."""
    from .journal import restore_hold

    hold = restore_hold(db, config.journal)
    if hold is not None:
        raise PostingHeld(hold.reason)


def get_episode(db: Database, episode_id: int) -> dict:
    found = ledger.find_episode(db, episode_id)
    if found is None:
        raise NotFound(f"no episode {episode_id} (see `autoretto episodes`)")
    return found


def postable_episode(db: Database, channel: str, episode_id: int) -> dict:
    """The episode `post-now CHANNEL --episode ID` names, when it may be posted for `channel`;
    NotFound or UsageError in plain words when not."""
    episode = get_episode(db, episode_id)
    if episode["channel"] != channel:
        raise UsageError(
            f"episode {episode_id} belongs to channel {episode['channel']}, not {channel}"
        )
    if episode["state"] not in POSTABLE_STATES:
        raise UsageError(
            f"episode {episode_id} is {episode['state']}; only a ready episode is posted"
        )
    return episode


def set_approval(db: Database, episode_id: int, *, approved: bool, now: datetime) -> dict:
    """`approve` (ready → approved) or `hold` (approved → ready)."""
    episode = get_episode(db, episode_id)
    old, new = ("ready", "approved") if approved else ("approved", "ready")
    if episode["state"] == new:
        return episode
    changed = ledger.change_state(db, episode_id, old=old, new=new, now=iso(now))
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
    """The first episode in line (the oldest, unless `episode move`/`swap` placed it) that this
    platform has not had yet and can take, and if none, why.

    Returns (episode, "") or (None, reason) where reason starts with the decision's outcome:
    `waiting_for_approval` (ready episodes exist but none is approved) or `nothing_ready`
    (followed by why the waiting episodes cannot go, when `unsuitable` refused them all).
    """
    refusals = []
    for candidate, refusal in in_line_for(
        db, channel, platform, off_schedule=off_schedule, unsuitable=unsuitable
    ):
        if refusal is None:
            return candidate, ""
        refusals.append(f"episode {candidate['id']}: {refusal}")
    if refusals:
        return None, "nothing_ready: " + "; ".join(refusals[:3])
    only_kind = None if off_schedule else channel.kind
    if channel.approval and ledger.has_unapproved(
        db, channel.episode_channel, platform, had_states=HAD_STATES, kind=only_kind
    ):
        return None, "waiting_for_approval"
    return None, "nothing_ready"


def in_line_for(
    db: Database,
    channel: ChannelConfig,
    platform: str,
    *,
    off_schedule: bool = False,
    unsuitable: Callable[[dict], str | None] = lambda episode: None,
) -> Iterator[tuple[dict, str | None]]:
    """The episodes this platform has not had yet, in the order slots take them, each with why
    the platform cannot take it (None: it can). `next_episode_for` takes the first it can; the
    page's queue (engine/queue.py) shows the next ones the same way."""
    kind = channel.kind
    if kind not in ("episode", "film"):
        raise ValueError(kind)
    states = ("approved",) if channel.approval else POSTABLE_STATES
    # Slots take their own kind only (a film has its own cadence, a compilation none); a
    # post-now (off_schedule) may take any kind.
    only_kind = None if off_schedule else kind
    candidates = ledger.unhad_episodes(
        db,
        channel.episode_channel,
        platform,
        states=states,
        had_states=HAD_STATES,
        kind=only_kind,
    )
    for candidate in candidates:
        if (loads(candidate["source"], {}) or {}).get("pruned_at") is not None:
            continue  # its files were removed (retention.py)
        yield candidate, unsuitable(candidate)


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
        stored=episode.get("stored") or {},
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
    return ledger.list_episodes(db, channel)
