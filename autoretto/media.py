"""An episode's media in a bucket, for several hosts (`[media] url = "s3://bucket/prefix"`).

Unset (the default), an episode's files live in `<home>/media/episodes/<id>/` only, and
nothing here touches a bucket.

Set, the files publishing reads (the videos and the thumbnail) are uploaded by the host that
made the episode, while it is still `making`, to `<prefix>/episodes/<id>/<name>`, and each is
recorded in the store (`episode_files`: its key, size and sha256, taken while the file was
local) only once its upload completed; the episode becomes `ready` only after every one is
recorded. A host killed mid-upload leaves no record: the next make of the channel (on any host)
resumes the episode and uploads again.

A host that publishes an episode whose folder is not its own reads the files from a cache,
`<home>/media/cache/episodes/<id>/<name>`, downloaded whole and checked against the record
before any request to a platform goes out. Retention removes the cache, the objects and the
records with the episode's other working files.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clock, faults
from .clock import iso
from .ledger import files as ledger
from .ledger.store import dumps, loads

if TYPE_CHECKING:
    from .bucket import Bucket
    from .config import Config
    from .ledger.store import Store as Database

log = logging.getLogger("autoretto.media")

CACHE = "cache"


@dataclass(frozen=True)
class Media:
    """Where this host keeps episode media: its `folder` (`<home>/media`) and, with `[media]
    url`, the bucket every host shares."""

    folder: Path
    url: str | None = None

    @classmethod
    def of(cls, config: Config) -> Media:
        settings = getattr(config, "media", None)
        return cls(config.paths.media, getattr(settings, "url", None))

    @cached_property
    def bucket(self) -> Bucket | None:
        if not self.url:
            return None
        from .bucket import Bucket

        return Bucket(self.url)

    def episode_folder(self, episode_id: int) -> Path:
        return self.folder / "episodes" / str(episode_id)

    def cache_folder(self, episode_id: int) -> Path:
        return self.folder / CACHE / "episodes" / str(episode_id)


def object_name(episode_id: int, name: str) -> str:
    """The object's name under the bucket's prefix."""
    return f"episodes/{episode_id}/{name}"


def publishing_files(videos: dict[str, str], thumbnail: str | None) -> list[Path]:
    """The files of an episode that platforms read: its videos and its thumbnail."""
    found = [Path(path) for path in videos.values()]
    if thumbnail:
        found.append(Path(thumbnail))
    return sorted(set(found))


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256 hex, size) of `path`."""
    with open(path, "rb") as reader:
        digest = hashlib.file_digest(reader, "sha256").hexdigest()
    return digest, path.stat().st_size


# -- the making host ------------------------------------------------------------------------------


def upload(media: Media, db: Database, episode_id: int, files: Iterable[Path]) -> int:
    """Upload `files` of the episode to the bucket and record each once its upload completed
    (a file recorded already with the same digest is not sent again). Returns how many were
    sent; nothing without `[media] url`. Raises BucketError."""
    bucket = media.bucket
    if bucket is None:
        return 0
    recorded = ledger.of_episode(db, episode_id)
    ledger.begin_upload(db, episode_id, iso(clock.now()))
    sent = 0
    for path in files:
        digest, size = file_digest(path)
        name = object_name(episode_id, path.name)
        known = recorded.get(path.name)
        if known and known["sha256"] == digest and int(known["size"]) == size:
            continue
        bucket.put_file(
            name,
            path,
            content_type=mimetypes.guess_type(path.name)[0],
            digest=digest,
        )
        faults.checkpoint("media_upload")  # an object in the bucket, no record of it yet
        ledger.record(
            db,
            episode_id=episode_id,
            name=path.name,
            key=bucket.key(name),
            sha256=digest,
            size=size,
            now=iso(clock.now()),
        )
        sent += 1
        log.info("episode %s: %s uploaded to %s", episode_id, path.name, bucket.place.url)
    return sent


# -- the publishing host --------------------------------------------------------------------------


def digests(db: Database, episode_id: int) -> dict[str, str]:
    """The recorded sha256 of each of the episode's files, by file name ({} without records)."""
    return {name: found["sha256"] for name, found in ledger.of_episode(db, episode_id).items()}


def local_episode(media: Media, db: Database, episode: dict) -> dict:
    """`episode` with its videos and thumbnail where this host can read them: its own folder
    when the file is there, else the cache, downloaded whole from the bucket (size and digest
    checked against the record). The row gains `stored`: local path -> the object's
    `s3://` URL. Unchanged without `[media] url` or records. Raises BucketError (passing when
    the bucket does not answer) before anything is sent anywhere."""
    bucket = media.bucket
    if bucket is None:
        return episode
    records = ledger.of_episode(db, episode["id"])
    if not records:
        return episode
    own = media.episode_folder(episode["id"])
    stored: dict[str, str] = {}

    def placed(path_text: str | None) -> str | None:
        if not path_text:
            return path_text
        path = Path(path_text)
        found = records.get(path.name)
        if found is None:
            return path_text
        local = own / path.name
        if not (path.is_relative_to(own) and local.is_file()):
            local = _cached(media, bucket, episode["id"], path.name, found)
        stored[str(local)] = bucket.url_of(object_name(episode["id"], path.name))
        return str(local)

    videos = {kind: placed(path) for kind, path in loads(episode["videos"], {}).items()}
    thumbnail = placed(episode.get("thumbnail"))
    return {**episode, "videos": dumps(videos), "thumbnail": thumbnail, "stored": stored}


def _cached(media: Media, bucket: Bucket, episode_id: int, name: str, record: dict) -> Path:
    from .bucket import BucketError

    target = media.cache_folder(episode_id) / name
    size = int(record["size"])
    if target.is_file() and target.stat().st_size == size:
        return target  # checked when it was downloaded
    bucket.download(object_name(episode_id, name), target)
    digest, got = file_digest(target)
    if digest != record["sha256"] or got != size:
        target.unlink(missing_ok=True)
        raise BucketError(
            f"{bucket.url_of(object_name(episode_id, name))} is not the file episode {episode_id}"
            f" recorded ({got} bytes, sha256 {digest[:12]}…, not {size} bytes, "
            f"{record['sha256'][:12]}…): make the episode again, or discard it",
            passing=False,
        )
    log.info("episode %s: %s fetched from %s", episode_id, name, bucket.place.url)
    return target


# -- retention ------------------------------------------------------------------------------------


def stored_size(db: Database, episode_id: int) -> tuple[list[str], int]:
    """(keys, total bytes) the store records for the episode's objects."""
    records = ledger.of_episode(db, episode_id)
    return [found["key"] for found in records.values()], sum(
        int(found["size"]) for found in records.values()
    )


def has_objects(db: Database, episode_id: int) -> bool:
    """May the bucket hold objects of the episode (recorded, or an upload that began)?"""
    return bool(ledger.of_episode(db, episode_id)) or ledger.upload_begun(db, episode_id)


def remove(media: Media, db: Database, episode_id: int) -> int:
    """Delete the episode's objects (every name under its folder in the bucket, recorded or
    half uploaded), then its records, then its cache here. Returns the objects deleted. Raises
    BucketError, the records kept, when the bucket does not do it."""
    removed = 0
    bucket = media.bucket
    if bucket is not None and has_objects(db, episode_id):
        names = set(bucket.names(f"episodes/{episode_id}/"))
        names |= {object_name(episode_id, name) for name in ledger.of_episode(db, episode_id)}
        removed = bucket.delete(sorted(names))
        ledger.forget(db, episode_id)
        ledger.forget_upload(db, episode_id)
    shutil.rmtree(media.cache_folder(episode_id), ignore_errors=True)
    return removed


def clean_half_uploads(media: Media, db: Database) -> list[str]:
    """Delete the objects of episodes whose upload began and that no slot will take
    (discarded, rejected, unknown to the database). Returns a line for each failure."""
    if media.bucket is None:
        return []
    failed = []
    for episode_id in ledger.uploads_to_clean(db):
        try:
            count = remove(media, db, episode_id)
        except Exception as error:  # BucketError: tried again by the next prune
            failed.append(str(error))
        else:
            log.info("episode %s: %s objects of a dropped upload deleted", episode_id, count)
    return failed


def sweep_cache(media: Media, db: Database) -> list[Path]:
    """Remove the cached files of episodes that are pruned, dropped or unknown. Returns the
    folders removed."""
    from .ledger import episodes as episodes_ledger

    root = media.folder / CACHE / "episodes"
    if not root.is_dir():
        return []
    ids = sorted(int(p.name) for p in root.iterdir() if p.is_dir() and p.name.isdigit())
    removed = []
    for episode_id in ids:
        found = episodes_ledger.find_episode(db, episode_id)
        source: dict[str, Any] = (loads(found["source"], {}) or {}) if found else {}
        if found is None or found["state"] in ("discarded", "rejected") or source.get("pruned_at"):
            shutil.rmtree(root / str(episode_id), ignore_errors=True)
            removed.append(root / str(episode_id))
    return removed
