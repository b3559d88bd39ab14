"""Making episodes with the pipeline, and keeping a channel's stock of ready ones.

An episode being made is a `making` row owned by the run making it (its run id, kept fresh by
the run's heartbeat). A make that dies leaves that row and its work folder; the next make for
the channel claims it (compare-and-set on the stale heartbeat) and resumes in the same folder,
where every finished stage is reused. A make that fails for a reason a person must fix (a
refused key, no track left) leaves the row `making` with the reason and no owner, so it is
resumed, not multiplied, once the cause is fixed.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clock, faults, liveness
from .clock import iso
from .config import ChannelConfig, Config
from .episodes import get_episode, refuse_while_held
from .ledger import episodes as ledger
from .ledger.store import dumps, loads

if TYPE_CHECKING:
    from .ledger.store import Store as Database
    from .pipeline import GivenTrack

log = logging.getLogger("autoretto.produce")

Progress = Callable[[str, float], None]


def beat(connection: Any, run_id: str, now: datetime) -> None:
    """The heartbeat of the episodes `run_id` is making: they are not taken for interrupted."""
    ledger.beat_making(connection, run_id, iso(now))


def unposted_ready(db: Database, channel: str) -> int:
    """Ready (or approved) on-schedule episodes of the channel that no platform has had."""
    return ledger.count_unposted_ready(db, channel)


def make_for_channel(
    config: Config,
    db: Database,
    channel: ChannelConfig,
    *,
    run_id: str,
    now: datetime,
    progress: Progress | None = None,
    given: GivenTrack | None = None,
    off_schedule: bool = False,
) -> dict:
    """Make one episode for `channel` (resuming an interrupted one first). Returns its row,
    `ready` or `rejected`. Raises AutorettoError when the pipeline cannot go on.

    With `given` (`episode add TRACK`): a new episode made from that track (`off_schedule`:
    only post-now posts it). The track and the person's copy are recorded on the row first,
    so a make of it that is interrupted is resumed with them.
    """
    from .errors import AutorettoError
    from .media import Media, publishing_files, upload
    from .pipeline import MakeRequest, make_episode

    refuse_while_held(config, db)
    episode_id = None
    if given is None:
        episode_id = _claim_interrupted(db, channel.name, run_id, now, config.stale_after)
    if episode_id is None:
        added = _added_facts(given) if given is not None else None
        episode_id = _start_new(
            config, db, channel.name, run_id, now, added=added, off_schedule=off_schedule
        )
    else:
        added = (loads(get_episode(db, episode_id)["source"], {}) or {}).get("added")
        given = _given_track(added) if added else None
    workdir = config.paths.media / "episodes" / str(episode_id)
    workdir.mkdir(parents=True, exist_ok=True)
    request = MakeRequest(
        channel=channel.name,
        settings=channel.pipeline,
        providers=config.providers,
        platforms=tuple(channel.platforms or ()),
        workdir=workdir,
        seed=int.from_bytes(hashlib.sha256(f"{channel.name}:{episode_id}".encode()).digest()[:4]),
        used_tracks=_used_tracks(db, channel.name),
        past_fingerprints=_past_fingerprints(db, episode_id),
        count_generation=lambda provider, cap: count_generation(db, provider, cap, clock.now()),
        given=given,
    )

    def report(stage: str, fraction: float) -> None:
        faults.checkpoint(f"make_{stage}")  # crash points inside a make, for the tests
        if progress is not None:
            progress(stage, fraction)

    try:
        made = make_episode(request, report)
        if made.passed:
            # With [media] url: every file publishing reads is in the bucket, and recorded,
            # before the episode is ready (a host killed here leaves it making, resumed later).
            upload(Media.of(config), db, episode_id, publishing_files(made.videos, made.thumbnail))
    except AutorettoError as error:
        # Kept `making`, released: the next make resumes this episode in its folder.
        ledger.release_making(db, episode_id, run_id, reason=str(error), now=iso(clock.now()))
        raise
    ledger.finish_making(
        db,
        episode_id,
        run_id,
        state="ready" if made.passed else "rejected",
        made={
            "reason": made.reason,
            "title": made.title,
            "description": made.description,
            "tags": dumps(made.tags),
            "texts": dumps(made.texts),
            "videos": dumps(made.videos),
            "thumbnail": made.thumbnail or None,
            "audio": made.audio or None,
            "duration": made.duration,
            "tempo": made.tempo,
            "beats": dumps(made.beats),
            "gates": dumps([g.__dict__ for g in made.gates]),
            "ai_generated": int(made.ai_generated),
            "fingerprint": made.fingerprint,
            "source": dumps({**made.source, "added": added} if added else made.source),
        },
        now=iso(clock.now()),
    )
    return get_episode(db, episode_id)


def _claim_interrupted(
    db: Database, channel: str, run_id: str, now: datetime, stale_after: timedelta
) -> int | None:
    """Take over a `making` episode whose make is gone (released, or its run gone:
    liveness.holder_gone)."""
    for candidate in ledger.making_not_held_by(db, channel, run_id):
        if (loads(candidate["source"], {}) or {}).get("imported") is not None:
            continue  # an `episode add` copying its file (episodes.py cleans those), not a make
        holder = candidate["run_id"]
        gone = liveness.holder_gone(db, holder, now=now, stale_after=stale_after)
        if holder is not None and gone is None:
            continue  # a live run is making it
        taken = ledger.take_over_making(
            db,
            candidate["id"],
            run_id=run_id,
            holder=holder,
            beat=gone.beat if gone else None,
            now=iso(now),
        )
        if taken:
            log.info("resuming the interrupted make of episode %s", candidate["id"])
            return candidate["id"]
    return None


def _added_facts(given: GivenTrack) -> dict:
    """How the row records a given track: its file and the person's copy (JSON-safe)."""
    return {
        "track": str(Path(given.path).expanduser().resolve()),
        "title": given.title,
        "description": given.description,
        "tags": list(given.tags),
    }


def _given_track(added: dict) -> GivenTrack:
    from .pipeline import GivenTrack

    return GivenTrack(
        path=Path(added["track"]),
        title=added.get("title") or "",
        description=added.get("description") or "",
        tags=tuple(added.get("tags") or ()),
    )


def _start_new(
    config: Config,
    db: Database,
    channel: str,
    run_id: str,
    now: datetime,
    *,
    added: dict | None = None,
    off_schedule: bool = False,
) -> int:
    moment = iso(now)
    episode_id = ledger.add_episode(
        db,
        {
            "channel": channel,
            "state": "making",
            "title": "(being made)",
            "tags": dumps([]),
            "texts": dumps({}),
            "videos": dumps({}),
            "gates": dumps([]),
            "source": dumps({"added": added} if added else {}),
            "ai_generated": 0,
            "off_schedule": int(off_schedule),
            "run_id": run_id,
            "heartbeat_at": moment,
            "created_at": moment,
            "updated_at": moment,
        },
    )
    workdir = config.paths.media / "episodes" / str(episode_id)
    if workdir.exists():
        # Left by an episode a restored database forgot: never let a new episode reuse it.
        aside = config.paths.media / "orphaned" / f"{episode_id}-{moment.replace(':', '')}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(workdir), str(aside))
    return episode_id


def _used_tracks(db: Database, channel: str) -> frozenset[str]:
    """Every track the channel's episodes took, rejected ones too (or a bad one comes back)."""
    used = set()
    for source in ledger.channel_sources(db, channel):
        track = source.get("track")
        if track:
            used.add(track)
    return frozenset(used)


def _past_fingerprints(db: Database, episode_id: int) -> tuple[tuple[int, str], ...]:
    return tuple(ledger.ready_fingerprints(db, episode_id))


def count_generation(db: Database, provider: str, daily_cap: int, now: datetime) -> bool:
    """Count one paid generation of `provider` on the UTC day of `now`, unless the day already
    has `daily_cap`: then False and nothing is counted. One conditional UPDATE, so two makes
    at once never pass the cap together."""
    return ledger.count_generation(db, provider, now.strftime("%Y-%m-%d"), daily_cap)


def make_notes(episode: dict) -> list[str]:
    """What a make said about how the episode came to be (Gemini declined a prompt and
    plainer words or the offline stage were used)."""
    return list(loads(episode.get("source"), {}).get("notes") or [])
