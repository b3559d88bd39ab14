"""Compilations: the channel's last published episodes joined into one video, posted by hand.

`compile_channel` takes the channel's last N published episodes (oldest first), probes each
video, and picks the encode the compilation keeps (the most common one among the inputs that
already meet the pipeline's standard: H.264 yuv420p tagged bt709 with AAC; else the channel's
render settings). Inputs in that encode are joined by stream copy with ffmpeg's concat
demuxer; only the others are re-encoded to it first. The description carries a chapter list
in YouTube's format (the first at 0:00, each start the sum of the durations before it, from
the probed files, which the concat list also states so that the joins land there).

The result is gated like an episode where the gates apply (streams, duration, text limits,
banned terms, AI disclosure; its audio is its episodes', so the duplicate gate does not apply)
and written as an episode of kind `compilation`, `ready` or `rejected`, off the schedule: no
slot ever takes it (slots take their own kind only), and it does not count as the channel's
stock of ready episodes. A person posts it with `autoretto post-now CHANNEL --episode ID`.

It is built in a staging folder and moved into media/episodes/<id> in the same transaction
that writes its row, so no `making` row exists for a make to mistake for its own.
"""

from __future__ import annotations

import itertools
import os
import secrets
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import iso
from .errors import UsageError
from .ledger import episodes as ledger
from .ledger.store import dumps, loads
from .media import Media, local_episode, publishing_files, upload

if TYPE_CHECKING:
    from .config import ChannelConfig, Config
    from .ffmpeg import MediaInfo
    from .ledger.store import Store as Database
    from .pipeline import Gate

MIN_EPISODES = 2
MAX_EPISODES = 200
FPS_TOLERANCE = 0.01

Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class Encode:
    """What two files must share for one to follow the other by stream copy."""

    video_codec: str
    width: int
    height: int
    fps: float
    pix_fmt: str | None
    color_space: str | None
    audio_codec: str | None
    sample_rate: int
    channels: int

    @classmethod
    def of(cls, info: MediaInfo) -> Encode:
        video, audio = info.video, info.audio
        assert video is not None
        return cls(
            video.codec,
            video.width,
            video.height,
            round(video.fps, 3),
            video.pix_fmt,
            video.color_space,
            audio.codec if audio else None,
            audio.sample_rate if audio else 0,
            audio.channels if audio else 0,
        )

    def matches(self, other: Encode) -> bool:
        return replace(self, fps=0.0) == replace(other, fps=0.0) and (
            abs(self.fps - other.fps) <= FPS_TOLERANCE
        )

    @property
    def standard(self) -> bool:
        """The pipeline's own output encode (what the streams gate asks of a video)."""
        return (
            self.video_codec == "h264"
            and self.pix_fmt == "yuv420p"
            and self.color_space == "bt709"
            and self.audio_codec == "aac"
            and self.width > 0
            and self.height > 0
            and self.fps > 0
            and self.sample_rate > 0
            and self.channels > 0
        )

    def describe(self) -> str:
        audio = (
            f"{self.audio_codec} {self.sample_rate} Hz {self.channels} ch"
            if self.audio_codec
            else "no audio"
        )
        return (
            f"{self.video_codec} {self.width}x{self.height} {self.fps:g} fps "
            f"{self.pix_fmt or '?'} {self.color_space or 'untagged'}, {audio}"
        )


@dataclass
class Part:
    """One episode in the compilation."""

    episode: dict[str, Any]
    source: Path  # the episode's video
    info: MediaInfo
    encode: Encode
    joined: Path | None = None  # what the concat list names (the source, or its re-encode)
    duration: float = 0.0  # of `joined`, probed
    method: str = "copied"  # "copied" | "re-encoded"
    why: str = ""  # what differed, when re-encoded


def timestamp(seconds: float) -> str:
    """YouTube's chapter time: 0:00, 4:05, 1:02:03 (whole seconds, rounded)."""
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def chapters(titles: list[str], durations: list[float]) -> list[dict[str, Any]]:
    """The chapter list: each title starts at the sum of the durations before it."""
    found, start = [], 0.0
    for title, duration in zip(titles, durations, strict=True):
        found.append(
            {"start": round(start, 3), "timestamp": timestamp(start), "title": _one_line(title)}
        )
        start += duration
    return found


def chapter_text(found: list[dict[str, Any]]) -> str:
    return "\n".join(f"{chapter['timestamp']} {chapter['title']}" for chapter in found)


def _one_line(text: str) -> str:
    return " ".join(str(text or "").split()) or "Untitled"


def published_episodes(db: Database, channel: str, last: int) -> list[dict[str, Any]]:
    """The channel's last `last` published episodes (kind `episode`), oldest first; an episode
    counts as published from its first published post."""
    return list(reversed(ledger.last_published_of_kind(db, channel, "episode", last)))


def _video_of(episode: dict[str, Any]) -> Path:
    videos = loads(episode["videos"], {}) or {}
    path = videos.get("landscape") or videos.get("vertical") or next(iter(videos.values()), None)
    if not path:
        raise UsageError(f"episode {episode['id']} has no video to compile")
    return Path(path)


def choose_target(parts: list[Part], settings: Any) -> Encode:
    """The encode the compilation keeps: the most common standard one among the parts (the
    earliest on a tie), else the channel's render settings in the first part's orientation."""
    standard = [part.encode for part in parts if part.encode.standard]
    if standard:
        counts = Counter(standard)
        best = max(counts.values())
        return next(encode for encode in standard if counts[encode] == best)
    first = parts[0].encode
    width, height = (
        settings.vertical_size if first.height > first.width else settings.landscape_size
    )
    return Encode("h264", width, height, float(settings.fps), "yuv420p", "bt709", "aac", 48000, 2)


def _difference(encode: Encode, target: Encode) -> str:
    names = {
        "video_codec": "codec",
        "pix_fmt": "pixel format",
        "color_space": "colour space",
        "audio_codec": "audio codec",
        "sample_rate": "audio rate",
        "channels": "audio channels",
    }
    different = []
    if (encode.width, encode.height) != (target.width, target.height):
        different.append(f"size {encode.width}x{encode.height}")
    if abs(encode.fps - target.fps) > FPS_TOLERANCE:
        different.append(f"{encode.fps:g} fps")
    for field, label in names.items():
        if getattr(encode, field) != getattr(target, field):
            different.append(f"{label} {getattr(encode, field) or 'none'}")
    return ", ".join(different)


def compile_channel(
    config: Config,
    db: Database,
    channel: str,
    *,
    last: int,
    now: datetime,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Build a compilation of `channel`'s last `last` published episodes and store it as an
    episode of kind `compilation` (ready, or rejected by a gate).

    Returns the episode (`episode_json`) plus `parts` (each episode's start, duration and
    whether it was copied or re-encoded), `chapters`, `files` (its ready-to-post texts) and
    `notes`. Raises UsageError before anything is written when the channel has fewer than two
    published episodes or a video is missing, and MediaError when ffmpeg fails (nothing is
    kept then).
    """
    from .episodes import episode_json, get_episode, refuse_while_held
    from .ffmpeg import check_playable

    chosen = config.channel(channel)
    if not MIN_EPISODES <= last <= MAX_EPISODES:
        raise UsageError(f"--last {last}: give a number from {MIN_EPISODES} to {MAX_EPISODES}")
    refuse_while_held(config, db)
    episodes = published_episodes(db, chosen.name, last)
    if len(episodes) < MIN_EPISODES:
        raise UsageError(
            f'channel "{chosen.name}" has {len(episodes)} published episode'
            f"{'' if len(episodes) == 1 else 's'}; a compilation needs at least {MIN_EPISODES}"
        )
    notes = []
    if len(episodes) < last:
        notes.append(f"only {len(episodes)} published episodes; the compilation has them all")
    report = progress or (lambda stage, fraction: None)
    report("probe", 0.0)
    parts = []
    media = Media.of(config)
    for episode in episodes:
        # media in a bucket: the parts this host did not make come from its cache
        source = _video_of(local_episode(media, db, episode))
        if not source.is_file():
            raise UsageError(f"episode {episode['id']}: its video {source} is missing")
        info = check_playable(source)
        parts.append(Part(episode, source, info, Encode.of(info)))
    target = choose_target(parts, chosen.pipeline)
    staging = config.paths.media / "compilations" / f"{chosen.name}-{secrets.token_hex(4)}"
    staging.mkdir(parents=True)
    try:
        result = _build(config, db, chosen, parts, target, staging, now, notes, report)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # moved into place when it worked
    episode = episode_json(get_episode(db, result["id"]))
    return {**episode, **{key: value for key, value in result.items() if key != "id"}}


def _build(
    config: Config,
    db: Database,
    channel: ChannelConfig,
    parts: list[Part],
    target: Encode,
    staging: Path,
    now: datetime,
    notes: list[str],
    report: Progress,
) -> dict[str, Any]:
    from .ffmpeg import probe

    settings = channel.pipeline
    for index, part in enumerate(parts):
        report("join", index / (len(parts) + 1))
        if part.encode.matches(target):
            part.joined, part.duration = part.source, part.info.duration
            continue
        part.method, part.why = "re-encoded", _difference(part.encode, target)
        part.joined = staging / f"part-{index + 1:03d}.mp4"
        _reencode(part, target, settings)
        part.duration = probe(part.joined).duration
    output = staging / "compilation.mp4"
    _join(parts, output, staging / "parts.ffconcat")
    report("gates", len(parts) / (len(parts) + 1))
    titles = [part.episode["title"] or f"Episode {part.episode['id']}" for part in parts]
    found = chapters(titles, [part.duration for part in parts])
    total = sum(part.duration for part in parts)
    copy = _copy(channel, parts, found)
    from .pipeline.textfit import KNOWN_PLATFORMS, build_texts

    platforms = KNOWN_PLATFORMS  # posted by hand: ready-to-post texts for every platform
    texts = build_texts(
        platforms=platforms,
        title=copy["title"],
        description=copy["description"],
        short=copy["short"],
        tags=copy["tags"],
        disclosure=copy["disclosure"],
        ai_generated=copy["ai_generated"],
    )
    thumbnail = _thumbnail(parts, staging)
    video_format = "vertical" if target.height > target.width else "landscape"
    gates = _gates(
        settings,
        output=output,
        video_format=video_format,
        target=target,
        total=total,
        thumbnail=thumbnail,
        texts=texts,
        platforms=platforms,
        copy=copy,
        chapter_list=chapter_text(found),
    )
    notes.extend(_notes(found, parts, total))
    passed = all(gate.passed for gate in gates)
    failed = next((f"{gate.name}: {gate.reason}" for gate in gates if not gate.passed), None)
    part_facts = [
        {
            "episode_id": part.episode["id"],
            "title": titles[index],
            "start": found[index]["start"],
            "timestamp": found[index]["timestamp"],
            "duration": round(part.duration, 3),
            "joined": part.method,
            "why": part.why or None,
        }
        for index, part in enumerate(parts)
    ]
    moment = iso(now)
    video_name = f"{video_format}.mp4"

    def place(episode_id: int) -> tuple[dict, str | None]:
        # Inside the transaction that writes the row: a move that fails leaves no row.
        folder = config.paths.media / "episodes" / str(episode_id)
        _clear_way(config, folder, moment)
        _keep_finished(staging, folder, folder / video_name)
        return (
            {video_format: str(folder / video_name)},
            str(folder / "thumbnail.jpg") if thumbnail else None,
        )

    episode_id = ledger.add_with_files(
        db,
        {
            "channel": channel.name,
            "kind": "compilation",
            "state": "ready" if passed else "rejected",
            "reason": failed,
            "title": _row_title(texts, copy["title"]),
            "description": copy["description"],
            "tags": dumps(copy["tags"]),
            "texts": dumps(texts),
            "videos": dumps({}),
            "duration": round(total, 3),
            "beats": dumps([]),
            "gates": dumps([gate.__dict__ for gate in gates]),
            "ai_generated": int(copy["ai_generated"]),
            "source": dumps(
                {"compilation": [part.episode["id"] for part in parts], "parts": part_facts}
            ),
            "off_schedule": 1,
            "created_at": moment,
            "updated_at": moment,
        },
        place,
    )
    folder = config.paths.media / "episodes" / str(episode_id)
    video = folder / video_name
    if passed:  # [media] url: other hosts read it from the bucket (it is off the schedule)
        upload(Media.of(config), db, episode_id, publishing_files({"video": str(video)},
               str(folder / "thumbnail.jpg") if thumbnail else None))  # fmt: skip
    from .translate import write_ready_texts

    heading = (
        f"Compilation {episode_id} of {channel.name} ({'ready' if passed else 'rejected'})\n"
        f"Video: {video}\nPost it with: autoretto post-now {channel.name} --episode {episode_id}"
    )
    files = write_ready_texts(
        folder,
        "texts",
        heading,
        texts,
        extra={"episode_id": episode_id, "kind": "compilation", "chapters": found},
    )
    return {
        "id": episode_id,
        "parts": part_facts,
        "chapters": found,
        "target": target.describe(),
        "files": files,
        "notes": notes,
    }


def _row_title(texts: dict[str, dict], title: str) -> str:
    """The compilation's title as the platform that names episodes has it, else `title`
    fitted to that platform's title."""
    from .pipeline.textfit import episode_title, fit, title_limits

    return episode_title(texts) or fit(title, title_limits())


def _reencode(part: Part, target: Encode, settings: Any) -> None:
    """Re-encode `part` to the target encode: scaled to fit, padded, at the target's rate."""
    from .ffmpeg import run_ffmpeg
    from .pipeline.audio import AAC_OPTIONS
    from .pipeline.render import COLOUR_TAGS, TO_YUV

    assert part.joined is not None
    width, height = target.width, target.height
    scale = (
        f"scale={width}:{height}:force_original_aspect_ratio=decrease,"
        f"pad={width}:{height}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps={target.fps:g},{TO_YUV}"
    )
    duration = part.info.duration
    inputs = ["-i", str(part.source)]
    audio_map = "0:a:0"
    if part.info.audio is None:  # a silent video gets a silent track: every part has audio
        layout = "mono" if target.channels == 1 else "stereo"
        inputs += ["-f", "lavfi", "-i", f"anullsrc=r={target.sample_rate}:cl={layout}"]
        audio_map = "1:a:0"
    partial = part.joined.with_name(f"{part.joined.stem}.partial.mp4")
    run_ffmpeg(
        [
            "-hide_banner",
            "-nostdin",
            "-y",
            "-v",
            "error",
            *inputs,
            "-map",
            "0:v:0",
            "-map",
            audio_map,
            "-vf",
            scale,
            "-c:v",
            "libx264",
            "-preset",
            settings.preset,
            "-crf",
            str(settings.crf),
            "-pix_fmt",
            "yuv420p",
            *COLOUR_TAGS,
            *AAC_OPTIONS,
            "-ar",
            str(target.sample_rate),
            "-ac",
            str(target.channels),
            "-t",
            f"{duration:.4f}",
            "-movflags",
            "+faststart",
            "-f",
            "mp4",
            str(partial),
        ],
        timeout=max(600.0, duration * 4),
    )
    os.replace(partial, part.joined)


def _concat_line(path: Path) -> str:
    escaped = str(path.resolve()).replace("'", "'\\''")
    return f"file '{escaped}'"


def _join(parts: list[Part], output: Path, listing: Path) -> None:
    """Join the parts by stream copy (concat demuxer). Each entry states its probed duration,
    so each part starts exactly where the chapter list says."""
    from .ffmpeg import run_ffmpeg
    from .pipeline.render import COLOUR_TAGS

    lines = ["ffconcat version 1.0"]
    for part in parts:
        assert part.joined is not None
        lines += [_concat_line(part.joined), f"duration {part.duration:.6f}"]
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial = output.with_name(f"{output.stem}.partial.mp4")
    total = sum(part.duration for part in parts)
    run_ffmpeg(
        [
            "-hide_banner",
            "-nostdin",
            "-y",
            "-v",
            "error",
            "-f",
            "concat",
            "-safe",
            "0",
            "-i",
            str(listing),
            "-map",
            "0:v:0",
            "-map",
            "0:a:0",
            "-map_metadata",
            "-1",
            "-c",
            "copy",
            *COLOUR_TAGS,
            "-movflags",
            "+faststart",
            "-f",
            "mp4",
            str(partial),
        ],
        timeout=max(900.0, total),
    )
    os.replace(partial, output)


def _copy(channel: ChannelConfig, parts: list[Part], found: list[dict[str, Any]]) -> dict:
    """Title, description (the chapter list first, so fitting never cuts it), short text,
    tags and the AI disclosure of the compilation."""
    from .pipeline.copy import disclosure_line
    from .pipeline.textfit import hashtags
    from .translate import DISCLOSURE_START, episode_disclosure

    titles = [chapter["title"] for chapter in found]
    count = len(parts)
    title = "Compilation: " + " · ".join(titles)
    tags: list[str] = []
    for part in parts:
        for tag in [*loads(part.episode["tags"], []), "compilation"]:
            if isinstance(tag, str) and tag.strip() and tag.lower() not in map(str.lower, tags):
                tags.append(tag.strip())
    description = (
        f"{count} tracks, back to back.\n\n{chapter_text(found)}\n\n{hashtags(tags)}".strip()
    )
    short = f"{count} tracks back to back: " + ", ".join(titles)
    ai_generated = any(part.episode["ai_generated"] for part in parts)
    lines = [episode_disclosure(part.episode) for part in parts]
    suno = any("Suno" in line for line in lines)
    gemini = any("artwork generated with Gemini" in line for line in lines)
    disclosure = disclosure_line("Suno" if suno else None, "Gemini" if gemini else None)
    if ai_generated and not disclosure:
        disclosure = next((line for line in lines if line), f"{DISCLOSURE_START}.")
    return {
        "title": title,
        "description": description,
        "short": short,
        "tags": tags,
        "disclosure": disclosure,
        "ai_generated": ai_generated,
    }


def _thumbnail(parts: list[Part], staging: Path) -> Path | None:
    """The first episode's thumbnail, copied (the compilation keeps its own)."""
    source = parts[0].episode.get("thumbnail")
    if not source or not Path(source).is_file():
        return None
    target = staging / "thumbnail.jpg"
    shutil.copyfile(source, target)
    return target


def _gates(
    settings: Any,
    *,
    output: Path,
    video_format: str,
    target: Encode,
    total: float,
    thumbnail: Path | None,
    texts: dict[str, dict],
    platforms: tuple[str, ...],
    copy: dict[str, Any],
    chapter_list: str,
) -> list[Gate]:
    from .pipeline import Gate, gates
    from .platforms import class_or_base

    size = (target.width, target.height)
    longest = _chapters_platform().longest_video_seconds
    bounds = replace(settings, max_seconds=longest) if longest else settings
    results = [
        gates.duration_gate(total, bounds),
        gates.streams_gate(
            {video_format: (str(output), size, total)},
            fps=target.fps,
            thumbnail=str(thumbnail) if thumbnail else None,
        ),
        gates.text_limits_gate(texts, platforms),
        gates.banned_terms_gate(
            texts,
            [copy["title"], copy["description"], copy["short"], *copy["tags"]],
            settings.banned_terms,
        ),
        gates.ai_disclosure_gate(copy["ai_generated"], copy["disclosure"], texts, platforms),
    ]
    cut = [
        platform
        for platform in platforms
        if class_or_base(platform).shows_chapters
        and chapter_list not in str(texts.get(platform, {}).get("description", ""))
    ]
    if cut:
        results.append(
            Gate(
                "chapters",
                False,
                "the chapter list does not fit whole in the description for " + ", ".join(cut),
            )
        )
    else:
        results.append(Gate("chapters", True, f"{chapter_list.count(chr(10)) + 1} chapters"))
    return results


def _notes(found: list[dict[str, Any]], parts: list[Part], total: float) -> list[str]:
    notes = []
    copied = sum(part.method == "copied" for part in parts)
    notes.append(f"{copied} of {len(parts)} episodes joined by stream copy")
    starts = [chapter["start"] for chapter in found] + [total]
    shortest = min(later - earlier for earlier, later in itertools.pairwise(starts))
    player = _chapters_platform()
    count, seconds = player.chapter_minimum
    if len(found) < count or shortest < seconds:
        notes.append(
            f"{player.title} shows chapters only with at least {count} chapters of "
            f"{seconds:g} s or more; the list stays in the description"
        )
    unverified = player.unverified_longest_seconds
    if unverified and total > unverified:
        notes.append(
            f"{timestamp(total)} long: {player.title} takes videos over {unverified / 60:g} "
            "minutes only from a verified channel"
        )
    return notes


def _chapters_platform() -> Any:
    """The platform whose player makes chapters of the list (the compilation is made for it:
    its longest video bounds the compilation); the base, declaring nothing, when none does."""
    from .platforms import declaring
    from .platforms.base import Platform

    return declaring("shows_chapters") or Platform


def _clear_way(config: Config, folder: Path, moment: str) -> None:
    """Left by an episode a restored database forgot: never mix it into this one."""
    if folder.exists():
        aside = config.paths.media / "orphaned" / f"{folder.name}-{moment.replace(':', '')}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(aside))


def _keep_finished(staging: Path, folder: Path, video: Path) -> None:
    """Move the finished files (not the re-encoded parts or the concat list) into place."""
    folder.mkdir(parents=True)
    os.replace(staging / "compilation.mp4", video)
    thumbnail = staging / "thumbnail.jpg"
    if thumbnail.exists():
        os.replace(thumbnail, folder / "thumbnail.jpg")
