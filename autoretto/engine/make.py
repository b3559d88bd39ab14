"""`make` and `episode add`: episodes made now with a channel's pipeline, in a run of their
own (or, for `episode add` of a finished video, imported as it is)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import MediaError
from .run import Run, RunProgress

if TYPE_CHECKING:
    from ..episodes import ImportRequest
    from ..ledger.store import Store as Database


def make_episodes(
    config: Config,
    db: Database,
    channel_name: str,
    *,
    count: int = 1,
    progress: RunProgress | None = None,
) -> Iterator[dict]:
    """Make `count` episodes for the channel, one after the other (an interrupted make of the
    channel is resumed first), yielding each episode's row as it is done, `ready` or
    `rejected`. Raises AutorettoError when the pipeline cannot go on (NotFound for a channel
    that is not in the config); PostingHeld while posting is held."""
    from ..produce import make_for_channel

    channel = config.channel(channel_name)
    with Run(config, db, "make", progress=progress) as run:
        for number in range(count):
            run.stage(channel.name, f"making episode {number + 1} of {count}")
            yield make_for_channel(
                config,
                db,
                channel,
                run_id=run.id,
                now=run.now,
                progress=run.making(channel.name),
            )


def add_episode(
    config: Config,
    db: Database,
    request: ImportRequest,
    *,
    progress: RunProgress | None = None,
) -> dict:
    """`episode add`: a finished video is imported as it is (episodes.import_episode); an
    audio track (a file with sound and no video, cover art aside) is made into an episode by
    the channel's pipeline, in a run of its own, as a folder track would be: its tags give
    the title and, with `artwork = "track"`, the artwork; the request's title, description
    and tags, when given, win. Returns the episode's row (ready, or rejected by a gate)."""
    from .. import clock
    from ..episodes import import_episode
    from ..pipeline import GivenTrack
    from ..produce import make_for_channel

    found = _audio_track(request.video)
    if found is None:
        return import_episode(config, db, request, clock.now())
    track, seconds = found
    channel = config.channel(request.channel)
    settings = channel.pipeline
    if not settings.min_seconds <= seconds <= settings.max_seconds:
        # what the duration gate would reject, said before an episode is written
        raise MediaError(
            f"{track}: {seconds:g} s long; channel {channel.name!r} makes episodes of "
            f"{settings.min_seconds:g} to {settings.max_seconds:g} s ([channels.pipeline] "
            "min_seconds, max_seconds): give a track of that length, or change them"
        )
    given = GivenTrack(
        path=track,
        title=request.title,
        description=request.description,
        tags=tuple(request.tags),
    )
    with Run(config, db, "make", progress=progress) as run:
        run.stage(channel.name, f"making an episode from {track.name}")
        return make_for_channel(
            config,
            db,
            channel,
            run_id=run.id,
            now=run.now,
            progress=run.making(channel.name),
            given=given,
            off_schedule=request.off_schedule,
        )


def _audio_track(path: Path) -> tuple[Path, float] | None:
    """(`path` resolved, its seconds) when it is an audio file (sound, no video stream;
    embedded cover art is not video), else None: a video, or a file the import names the
    trouble of."""
    from ..ffmpeg import probe

    source = Path(path).expanduser()
    if not source.is_file():
        return None
    try:
        info = probe(source)
    except MediaError:
        return None
    if info.video is None and info.audio is not None:
        return source.resolve(), info.duration
    return None
