"""What is removed from the home, and when: the retention policy and discarding an episode.

`[media] keep = "30d"` (the default; "forever" turns it off) removes the working files of an
episode (its videos, audio and pictures in `media/episodes/<id>/`; its small JSON facts and
its thumbnail stay) once it has been published everywhere it goes and the last of those
publishes is older than `keep`. An episode is kept, and `prune` says why, while:
- any post of it is not `published` (queued, failed, sending, may be live, needs a person): a
  retry or a lost-answer check still needs the file it sends or resumes;
- a platform decided on a slot it went out on has not had it yet (a limit, a missed moment):
  that platform takes it on a later slot;
- a platform the channel posts to (its `platforms` list) has not had it.
A pruned episode is never offered to a slot again. The folder outbox is the creator's own
output and is never touched. With `[media] url` the episode's objects in the bucket and their
records go too, and every host's cached copy (`media/cache/episodes/<id>`); objects of an
upload that never finished are deleted once their episode is dropped (autoretto/media.py).

`discard_episode` drops an episode that is stuck `making` (or was rejected): its folder is
removed and it becomes `discarded`; a ready, approved or posted episode is refused.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bucket import BucketError
from .clock import iso
from .config import MediaSettings
from .errors import UsageError
from .ledger import episodes as ledger
from .ledger.store import loads
from .media import Media, clean_half_uploads, has_objects, remove, stored_size, sweep_cache

if TYPE_CHECKING:
    from .config import Config
    from .ledger.store import Store as Database

log = logging.getLogger("autoretto.retention")

KEPT_FILES = ("*.json", "thumbnail.*")  # the facts and the small picture that describe it


def prune(config: Config, db: Database, *, now: datetime, dry_run: bool = False) -> dict:
    """Apply the retention policy at `now`. Returns what was (or, with `dry_run`, would be)
    removed and which old episodes were kept and why:
    {keep, dry_run, before, pruned: [{episode_id, channel, published_at, files, bytes}],
     kept: [{episode_id, channel, published_at, reason}], bytes, errors}."""
    media = getattr(config, "media", None) or MediaSettings()
    result: dict[str, Any] = {
        "keep": media.keep,
        "dry_run": dry_run,
        "before": None,
        "pruned": [],
        "kept": [],
        "bytes": 0,
        "errors": [],
    }
    keep_for = media.keep_for
    place = Media.of(config)
    if not dry_run:
        # The bucket's objects of episodes no slot will take, half uploaded ones too, and the
        # cached copies of pruned or dropped episodes (these whatever `keep` says).
        result["errors"].extend(clean_half_uploads(place, db))
        sweep_cache(place, db)
    if keep_for is None:
        return result
    before = iso(now - keep_for)
    result["before"] = before
    for episode in ledger.last_published_before(db, before):
        pruned = (loads(episode.pop("source"), {}) or {}).get("pruned_bytes") is not None
        folder = config.paths.media / "episodes" / str(episode["id"])
        files = _working_files(folder) + _working_files(place.cache_folder(episode["id"]))
        if pruned:  # done already; by another host, when this one still has copies of its own
            if files and not dry_run:
                result["errors"].extend(_remove(files, folder))
            continue
        in_bucket = place.bucket is not None and has_objects(db, episode["id"])
        if not files and not in_bucket:  # none here (removed by hand, or never had any): done
            if not dry_run:
                _mark(db, episode["id"], "pruned_bytes", 0)
            continue
        entry = {
            "episode_id": episode["id"],
            "channel": episode["channel"],
            "published_at": episode["published_at"],
        }
        reason = _still_needed(config, db, episode)
        if reason:
            result["kept"].append({**entry, "reason": reason})
            continue
        size = sum(_size(path) for path in files)
        shown = [_shown(p, folder, config.paths.media) for p in files]
        if in_bucket:
            keys, stored = stored_size(db, episode["id"])
            shown += [f"{place.url} {key}" for key in keys]
            size += stored
        entry.update({"files": shown, "bytes": size})
        if not dry_run:
            _mark(db, episode["id"], "pruned_at", iso(now))
            failed = _remove(files, folder)
            if in_bucket:
                try:
                    remove(place, db, episode["id"])
                except BucketError as error:  # its records stay: the next prune tries again
                    failed.append(str(error))
            result["errors"].extend(failed)
            if not failed:
                _mark(db, episode["id"], "pruned_bytes", size)
        result["pruned"].append(entry)
        result["bytes"] += size
    return result


def _shown(path: Path, folder: Path, media: Path) -> str:
    return str(path.relative_to(folder) if path.is_relative_to(folder) else path.relative_to(media))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # removed meanwhile (another run pruning at the same moment)
        return 0


def _working_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    kept = {path for pattern in KEPT_FILES for path in folder.glob(pattern)}
    return sorted(p for p in folder.rglob("*") if p.is_file() and p not in kept)


def _still_needed(config: Config, db: Database, episode: dict) -> str | None:
    """Why the episode's files must stay, or None when it is published everywhere it goes."""
    posts = ledger.posts_of(db, episode["id"])
    for post in posts:
        if post["state"] in ("sending", "may_be_live"):
            return (
                f"its {post['platform']} post {post['id']} may be live: its files stay for the "
                "lost-answer check"
            )
        if post["state"] != "published":
            return f"its {post['platform']} post {post['id']} is {post['state']}, not published"
    cadence = _cadence_of(config, episode)
    if cadence is None:
        return None  # its channel is gone from the config: no slot will take it again
    published = {post["platform"] for post in posts}
    if cadence.platforms is not None:
        wanted = {name: "one of the channel's platforms" for name in cadence.platforms}
    else:  # every connected platform: those decided on the slots it went out on
        wanted = {}
        for post in posts:
            for decision in ledger.slot_decisions(db, post["channel"], post["slot"]):
                wanted.setdefault(
                    decision["platform"], f"slot {post['slot']}: {decision['outcome']}"
                )
    from .platforms import MANUAL_PLATFORMS  # posted by a person, never on a slot

    for platform, why in wanted.items():
        if platform not in published and platform not in MANUAL_PLATFORMS:
            return f"not yet published on {platform} ({why}), which takes it on a later slot"
    return None


def _cadence_of(config: Config, episode: dict):
    channel = next((c for c in config.channels if c.name == episode["channel"]), None)
    if channel is not None and episode.get("kind") == "film":
        return channel.films
    return channel


def _mark(db: Database, episode_id: int, key: str, value: Any) -> None:
    # `pruned_at` is recorded before the files go, so no slot takes the episode while they are
    # removed; `pruned_bytes` once they are gone, so a prune cut short is finished next time.
    # Each is set once: a mark already there is kept.
    ledger.set_source_once(db, episode_id, key, value)


def _remove(files: list[Path], folder: Path) -> list[str]:
    failed = []
    for path in files:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            failed.append(f"{path}: cannot remove it ({error.strerror})")
    for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):  # not empty: something we keep is in it
            directory.rmdir()
    return failed


def discard_episode(
    config: Config, db: Database, episode_id: int, *, now: datetime, stale_after: timedelta
) -> dict:
    """Drop an episode stuck `making` (no live make holds it) or `rejected`: its folder is
    removed and its state becomes `discarded`. Raises UsageError, changing nothing, for an
    episode that is ready, approved, posted, or being made right now. Returns
    {episode_id, channel, was, state, folder, files, bytes, objects (deleted from the media
    bucket), problem (the bucket did not answer: `prune` finishes it)}."""
    from .episodes import get_episode

    episode = get_episode(db, episode_id)
    state = episode["state"]
    posted = ledger.first_sent_post(db, episode_id)
    if posted is not None:
        raise UsageError(
            f"episode {episode_id} has a {posted['platform']} post ({posted['state']}): a posted "
            "episode is part of the channel's history and is not discarded"
        )
    if state in ("ready", "approved"):
        raise UsageError(
            f"episode {episode_id} is {state} and may still be posted: discard drops only an "
            f"episode stuck making or rejected (`autoretto hold {episode_id}` keeps an approved "
            "one off the slots)"
        )
    if state not in ("making", "rejected"):
        raise UsageError(f"episode {episode_id} is {state}: there is nothing to discard")
    stale_before = iso(now - stale_after)
    if state == "making" and episode["run_id"] and (episode["heartbeat_at"] or "") >= stale_before:
        raise UsageError(
            f"episode {episode_id} is being made right now (run {episode['run_id']}, last heard "
            f"at {episode['heartbeat_at']}); let that make end, or stop it, then discard"
        )
    reason = f"discarded by a person at {iso(now)}" + (
        f" (it was {state}: {episode['reason']})" if episode["reason"] else f" (it was {state})"
    )
    changed = ledger.discard(
        db, episode_id, state=state, reason=reason, now=iso(now), stale_before=stale_before
    )
    if not changed:
        raise UsageError(f"episode {episode_id} changed while it was being discarded; try again")
    folder = config.paths.media / "episodes" / str(episode_id)
    files = [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []
    size = sum(_size(p) for p in files)
    shutil.rmtree(folder, ignore_errors=True)
    objects, problem = 0, None
    try:  # its objects in the media bucket, half uploaded ones too, and its cache here
        objects = remove(Media.of(config), db, episode_id)
    except BucketError as error:  # `prune` deletes them once the bucket answers
        problem = f"{error}; `autoretto prune` deletes them later"
    log.info("episode %s discarded (%s files, %s bytes)", episode_id, len(files), size)
    return {
        "objects": objects,
        "problem": problem,
        "episode_id": episode_id,
        "channel": episode["channel"],
        "was": state,
        "state": "discarded",
        "folder": str(folder),
        "files": len(files),
        "bytes": size,
    }
