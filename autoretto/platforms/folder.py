"""The `folder` platform: a local outbox (a demo, a NAS share, a folder for manual uploads).

Publishing copies the episode's video to `<outbox>/<channel>/` beside a JSON sidecar. Their
name is fixed by the post's identity (`<title>_<marker>`), so a second copy of one post cannot
exist: every attempt, whatever the database remembers, writes to the same name. The sidecar is
written last and atomically, so it is the proof that a post went out: a video without one is an
interrupted copy that the next attempt overwrites, and a post whose sidecar exists is found
again instead of copied twice.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any, ClassVar

from ..clock import iso, now
from .base import CarouselSpec, Platform, PostRequest, Published
from .text import TextField


class FolderPlatform(Platform):
    name = "folder"
    title = "Folder outbox"
    #: the outbox keeps the episode's whole copy, as it is
    texts_title: ClassVar[str | None] = "Anywhere else"
    text_fields: ClassVar[dict[str, TextField] | None] = {}
    can_find_attempts = True
    needs_account = False
    counters = None  # nothing to read
    shows_chapters = True  # the sidecar's description is the one a person uploads elsewhere
    settings_defaults: ClassVar[dict[str, Any]] = {"path": "outbox", "format": "landscape"}
    #: the outbox keeps a carousel's cards beside its sidecar, at the 4:5 portrait size most
    #: carousels take (Instagram's), for a person to post by hand
    carousel = CarouselSpec(
        least=2,
        most=10,
        size=(1080, 1350),
        max_bytes=8 * 1024 * 1024,
        source="https://developers.facebook.com/docs/instagram-platform/content-publishing/",
        alt_text=True,
    )

    @property
    def outbox(self) -> Path:
        return self.context.paths.resolve(self.settings["path"])

    def account_key(self) -> str:
        return str(self.settings["path"])

    def _sidecar(self, request: PostRequest) -> Path:
        name = f"{_slug(request.episode.title)}_{request.marker}"
        return self.outbox / request.channel / f"{name}.json"

    def _find_attempt(self, request: PostRequest) -> Published | None:
        sidecar = self._sidecar(request)
        if not sidecar.exists():
            return None
        facts = json.loads(sidecar.read_text(encoding="utf-8"))
        if "cards" in facts:
            return Published(facts["platform_post_id"], sidecar.as_uri())
        return Published(
            facts["platform_post_id"], sidecar.with_suffix(facts["video_suffix"]).as_uri()
        )

    def _publish_carousel(self, request: PostRequest) -> Published:
        """The cards beside a sidecar that lists them in order with their alt texts; the
        sidecar, written last, is the proof the carousel went out."""
        already = self._find_attempt(request)
        if already is not None:
            return already
        sidecar = self._sidecar(request)
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        cards = []
        for index, image in enumerate(request.images, 1):
            card = sidecar.with_name(f"{sidecar.stem}-{index}{Path(image.path).suffix}")
            _atomic_copy(Path(image.path), card)
            cards.append({"file": card.name, "alt": image.alt})
            request.heartbeat()
        facts = {
            **post_facts(request),
            "kind": "carousel",
            "published_at": iso(now()),
            "platform_post_id": sidecar.stem,
            "cards": cards,
        }
        _atomic_write(sidecar, json.dumps(facts, indent=2, ensure_ascii=False))
        return Published(sidecar.stem, sidecar.as_uri())

    def _publish(self, request: PostRequest) -> Published:
        already = self._find_attempt(request)
        if already is not None:
            return already
        source = self.video_file(request.episode)
        sidecar = self._sidecar(request)
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        video = sidecar.with_suffix(source.suffix)
        _atomic_copy(source, video)
        request.heartbeat()
        facts = {
            **post_facts(request),
            "published_at": iso(now()),
            "platform_post_id": sidecar.stem,
            "video": video.name,
            "video_suffix": source.suffix,
        }
        _atomic_write(sidecar, json.dumps(facts, indent=2, ensure_ascii=False))
        return Published(sidecar.stem, video.as_uri())


def post_facts(request: PostRequest) -> dict[str, Any]:
    """What an outbox sidecar and a webhook's metadata say of a post."""
    episode = request.episode
    return {
        "channel": request.channel,
        "slot": request.slot,
        "slot_at": request.slot_at,
        "publish_at": iso(request.publish_at),
        "episode_id": episode.id,
        "post_id": request.post_id,
        "marker": request.marker,
        "title": episode.title,
        "description": episode.description,
        "tags": list(episode.tags),
        "ai_generated": episode.ai_generated,
    }


def _slug(title: str) -> str:
    """The title as a short ASCII file name part, for people browsing the outbox."""
    plain = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")[:40].strip("-") or "episode"


def _atomic_copy(source: Path, target: Path) -> None:
    """Put `source` at `target`: a hard link where the file system allows one (the outbox then
    costs no space, and the file stays when the episode's own copy is pruned), else a copy.
    Either way the file appears whole under its name or not at all."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        try:
            os.link(source, partial)
        except OSError:  # another file system (EXDEV), or one without links (EPERM, ENOTSUP)
            with open(source, "rb") as reader, open(partial, "wb") as writer:
                shutil.copyfileobj(reader, writer, 1024 * 1024)
                writer.flush()
                os.fsync(writer.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)  # a full disk leaves no half copy behind
        raise


def _atomic_write(target: Path, text: str) -> None:
    partial = target.with_name(f".{target.name}.partial")
    try:
        with open(partial, "w", encoding="utf-8") as writer:
            writer.write(text)
            writer.flush()
            os.fsync(writer.fileno())
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
