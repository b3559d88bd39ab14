"""The render stage: beat-synced H.264/AAC videos by segment reuse (see RENDERING.md).

Beat times are snapped to the frame grid. Between two beats the picture does the same
thing every time (a pulse decaying, a flash fading, a zoom creeping, one of a few
pictures held), so each distinct (effect, gap length in frames) is one short clip,
encoded once from the still picture inside ffmpeg's filter graph, starting on a
keyframe. The clips' raw H.264 is joined in beat order and muxed by stream copy with the
AAC audio. Cost grows with the number of distinct gaps, not the song's length.

A pulse or a flash looks the same in its first frames whatever the gap, and is over
(under a pixel, under a luma step) after DECAY_SECONDS: those frames are computed once
per picture into a raw file, and every clip is encoded from it, its last frame held. The
filter graph (the costly part: ~40 ms a 1080p frame) then runs for 18 frames, not for
every frame of every distinct clip.

A clip made from those frames is the same frames whatever its length, only held longer:
the longest clip of a picture and effect is encoded once, and every shorter one is its
first frames, cut from its H.264 at a frame boundary (no B-frames: each frame needs
only those before it).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from autoretto.ffmpeg import run_ffmpeg
from autoretto.pipeline.audio import AAC_OPTIONS

COLOUR_TAGS = [
    "-colorspace",
    "bt709",
    "-color_primaries",
    "bt709",
    "-color_trc",
    "bt709",
    "-color_range",
    "tv",
]
TO_YUV = "scale=out_color_matrix=bt709:out_range=tv:flags=bicubic,format=yuv420p"
PULSE_AMOUNT = 0.06  # the picture grows 6% on the beat
PULSE_DECAY = 0.12  # seconds for the pulse to fall to 1/e
FLASH_AMOUNT = 0.45  # added luma on the beat (0-1)
FLASH_DECAY = 0.09
ZOOM_AMOUNT = 0.05  # the zoom creeps in 5% over a beat, then snaps back on the next
MAX_CLIP_SECONDS = 2.0  # longer gaps are split into held-picture chunks
# pulse: 6% * exp(-0.6 / 0.12) = 0.04% of the width, under a pixel at 1920; flash:
# 0.45 * exp(-0.6 / 0.09) = 0.06% of full luma, under one step of 255
DECAY_SECONDS = 0.6
CUT_VARIANTS = 4
REELS_FADE_IN = 1.0
REELS_AUDIO_FADE_IN = 1.5
REELS_AUDIO_FADE_OUT = 2.0


@dataclass(frozen=True)
class Clip:
    """One piece of the timeline: `frames` frames of `effect` ("beat" or "hold") on
    picture `variant`, with an optional fade ("in", "out" or "")."""

    effect: str
    variant: int
    frames: int
    fade: str = ""


@dataclass(frozen=True)
class VideoJob:
    name: str  # "landscape", "vertical", "reels"
    image: Path  # the still picture, already at `size`
    size: tuple[int, int]
    output: Path
    start: float = 0.0  # where in the audio this video starts (seconds)
    length: float | None = None  # seconds; None = to the end of the audio
    fades: bool = False  # fade in at the start and out at the end (the reels edit)


def plan(
    beats: list[float], *, start: float, length: float, fps: int, fades: bool, variants: int
) -> list[Clip]:
    """The timeline of clips for a video of `length` seconds from `start` in the audio."""
    total = max(1, round(length * fps))
    longest = int(MAX_CLIP_SECONDS * fps)
    beat_frames = sorted({round((beat - start) * fps) for beat in beats})
    beat_frames = [frame for frame in beat_frames if 0 <= frame < total]
    marks = beat_frames if beat_frames and beat_frames[0] == 0 else [0, *beat_frames]
    clips: list[Clip] = []
    for index, begin in enumerate(marks):
        end = marks[index + 1] if index + 1 < len(marks) else total
        on_beat = begin in beat_frames
        # picture 0 holds before the first beat, so beat k shows picture (k + 1) mod n
        variant = ((beat_frames.index(begin) + 1) % variants) if on_beat else 0
        frames = end - begin
        first = min(frames, longest)
        clips.append(Clip("beat" if on_beat else "hold", variant, first))
        rest = frames - first
        while rest > 0:  # hold the picture in chunks; the last chunk takes any remainder
            chunk = rest if rest < 2 * longest else longest
            clips.append(Clip("hold", variant, chunk))
            rest -= chunk
    if fades and clips:
        clips[0] = Clip(clips[0].effect, clips[0].variant, clips[0].frames, "in")
        last = clips[-1]
        clips[-1] = Clip(
            last.effect, last.variant, last.frames, "both" if len(clips) == 1 else "out"
        )
    return clips


def effect_filter(clip: Clip, *, style: str, size: tuple[int, int], fps: int) -> str:
    """The filter graph turning the looped still picture into `clip`'s frames."""
    duration = clip.frames / fps
    chain = [f"[0:v]loop=loop=-1:size=1:start=0,settb=1/{fps},setpts=N"]
    if clip.effect == "beat" and style in ("pulse", "zoom"):
        # perspective samples between pixels, so the zoom moves smoothly; a per-frame
        # `scale` + `crop` moves in whole pixels and the decay visibly ticks.
        seconds = f"(in/{fps})"  # in = the frame's number within this clip
        if style == "pulse":
            factor = f"(1+{PULSE_AMOUNT}*exp(-{seconds}/{PULSE_DECAY}))"
        else:
            factor = f"(1+{ZOOM_AMOUNT}*{seconds}/{max(duration, 1 / fps):.6f})"
        margin = f"((1-1/{factor})/2)"
        left, top = f"W*{margin}", f"H*{margin}"
        right, bottom = f"W-W*{margin}", f"H-H*{margin}"
        chain.append(
            f"perspective=x0='{left}':y0='{top}':x1='{right}':y1='{top}'"
            f":x2='{left}':y2='{bottom}':x3='{right}':y3='{bottom}'"
            ":interpolation=linear:eval=frame"
        )
    chain.append(TO_YUV)
    if clip.effect == "beat" and style == "flash":
        chain.append(f"eq=brightness='{FLASH_AMOUNT}*exp(-t/{FLASH_DECAY})':eval=frame")
    fade_length = min(duration, REELS_FADE_IN)
    if clip.fade in ("in", "both"):
        chain.append(f"fade=t=in:st=0:d={fade_length:.4f}")
    if clip.fade in ("out", "both"):
        chain.append(f"fade=t=out:st={duration - fade_length:.4f}:d={fade_length:.4f}")
    return ",".join(chain) + "[v]"


def _x264(fps: int, crf: int, preset: str) -> list[str]:
    return [
        "-r", str(fps), "-c:v", "libx264", "-preset", preset, "-crf", str(crf),
        "-pix_fmt", "yuv420p", "-x264-params", "keyint=infinite:scenecut=0:bframes=0",
        *COLOUR_TAGS, "-f", "h264",
    ]  # fmt: skip


def encode_clip(
    clip: Clip,
    image: Path,
    destination: Path,
    *,
    style: str,
    size: tuple[int, int],
    fps: int,
    crf: int,
    preset: str,
) -> None:
    """Encode `clip` as raw H.264 starting with an IDR frame (written atomically)."""
    partial = destination.with_name(destination.name + ".partial")
    run_ffmpeg(
        ["-hide_banner", "-nostdin", "-y", "-v", "error", "-i", str(image),
         "-filter_complex", effect_filter(clip, style=style, size=size, fps=fps),
         "-map", "[v]", "-frames:v", str(clip.frames), *_x264(fps, crf, preset), str(partial)],
        timeout=600,
    )  # fmt: skip
    os.replace(partial, destination)


def frames_reusable(clip: Clip, style: str) -> bool:
    """Whether `clip` is made from precomputed frames: a beat of pulse or flash, a still."""
    return clip.effect == "hold" or style in ("pulse", "flash", "cut")


def render_frames(
    image: Path, destination: Path, *, effect: str, style: str, size: tuple[int, int], fps: int
) -> int:
    """Write the raw yuv420p frames clips are made from: the first DECAY_SECONDS of a beat
    (`effect` "beat"), or the one still frame ("hold"). Returns how many frames."""
    count = 1
    if effect == "beat" and style in ("pulse", "flash"):
        count = round(DECAY_SECONDS * fps)
    graph = effect_filter(Clip(effect, 0, count), style=style, size=size, fps=fps)
    partial = destination.with_name(destination.name + ".partial")
    run_ffmpeg(
        ["-hide_banner", "-nostdin", "-y", "-v", "error", "-i", str(image),
         "-filter_complex", graph, "-map", "[v]", "-frames:v", str(count),
         "-f", "rawvideo", "-pix_fmt", "yuv420p", str(partial)],
        timeout=600,
    )  # fmt: skip
    os.replace(partial, destination)
    return count


def encode_from_frames(
    clip: Clip,
    frames: Path,
    destination: Path,
    *,
    size: tuple[int, int],
    fps: int,
    crf: int,
    preset: str,
) -> None:
    """Encode `clip` from a raw frames file (its last frame held to the clip's length),
    with the clip's fade, as raw H.264 starting with an IDR frame (written atomically)."""
    duration = clip.frames / fps
    chain = ["tpad=stop_mode=clone:stop=-1"]
    fade_length = min(duration, REELS_FADE_IN)
    if clip.fade in ("in", "both"):
        chain.append(f"fade=t=in:st=0:d={fade_length:.4f}")
    if clip.fade in ("out", "both"):
        chain.append(f"fade=t=out:st={duration - fade_length:.4f}:d={fade_length:.4f}")
    partial = destination.with_name(destination.name + ".partial")
    run_ffmpeg(
        ["-hide_banner", "-nostdin", "-y", "-v", "error",
         "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{size[0]}x{size[1]}", "-r", str(fps),
         "-i", str(frames), "-vf", ",".join(chain), "-frames:v", str(clip.frames),
         *_x264(fps, crf, preset), str(partial)],
        timeout=600,
    )  # fmt: skip
    os.replace(partial, destination)


def _nal_units(data: bytes) -> list[tuple[int, int]]:
    """(start of its start code, first byte after the start code) of each NAL unit in the
    Annex B stream `data`."""
    units, position = [], data.find(b"\x00\x00\x01")
    while position != -1:
        start = position - 1 if position > 0 and data[position - 1] == 0 else position
        units.append((start, position + 3))
        position = data.find(b"\x00\x00\x01", position + 3)
    return units


def first_frames(data: bytes, count: int) -> bytes:
    """The first `count` frames of the raw H.264 `data` (Annex B, no B-frames), cut
    where frame `count + 1` begins. Raises ValueError when `data` holds fewer frames."""
    frames = 0
    for start, payload in _nal_units(data):
        if payload >= len(data):
            break
        kind = data[payload] & 0x1F
        # a slice (1: non-IDR, 5: IDR) whose first_mb_in_slice is 0 (ue(v) "1") starts a
        # frame; a parameter set, SEI or delimiter after a frame belongs to the next one
        starts_frame = kind in (1, 5) and payload + 1 < len(data) and data[payload + 1] & 0x80
        if (starts_frame or kind in (6, 7, 8, 9)) and frames == count:
            return data[:start]
        if starts_frame:
            frames += 1
    if frames == count:
        return data
    raise ValueError(f"the clip holds {frames} frames, not {count} or more")


def cut_variants(image: Path, directory: Path) -> list[Path]:
    """The pictures the "cut" style cycles through: the original, a mirrored close-up,
    and close-ups of the left and right of the picture."""
    from PIL import Image, ImageOps

    base = Image.open(image).convert("RGB")
    width, height = base.size

    def close_up(left: float, zoom: float):
        box_width, box_height = width / zoom, height / zoom
        x = (width - box_width) * left
        y = (height - box_height) / 2
        return base.resize(
            (width, height), Image.BICUBIC, box=(x, y, x + box_width, y + box_height)
        )

    pictures = [base, ImageOps.mirror(close_up(0.5, 1.15)), close_up(0.0, 1.4), close_up(1.0, 1.4)]
    paths = []
    for index, picture in enumerate(pictures[:CUT_VARIANTS]):
        path = directory / f"{image.stem}-cut{index}.png"
        if not path.exists():
            partial = path.with_name(path.stem + ".partial.png")
            picture.save(partial, compress_level=1)
            os.replace(partial, path)
        paths.append(path)
    return paths


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def render_videos(
    jobs: list[VideoJob],
    *,
    audio: Path | Callable[[], Path],
    beats: list[float],
    duration: float,
    style: str,
    fps: int,
    crf: int,
    preset: str,
    clip_dir: Path,
    progress: Callable[[float], None] | None = None,
    workers: int | None = None,
) -> dict[str, list[Path]]:
    """Render every job's video (skipping outputs that already exist).

    Distinct clips across all jobs are encoded once, in parallel; each video is then
    joined and muxed with the audio (cut and faded for a job with `fades`); `audio` may be
    a callable giving it, called once the clips are encoded (the audio may still be in the
    making meanwhile). Returns, for
    each video rendered now, the clip files it is made of in order: its H.264, byte for
    byte, one keyframe each (they stay in `clip_dir` until it is removed).
    """
    clip_dir.mkdir(parents=True, exist_ok=True)
    pending = [job for job in jobs if not job.output.exists()]
    if not pending:
        return {}
    timelines: dict[str, list[tuple[Path, Clip]]] = {}
    tasks: dict[Path, tuple[Clip, Path, VideoJob, Path | None]] = {}
    frame_files: dict[Path, tuple[Path, str, VideoJob]] = {}
    for job in pending:
        pictures = cut_variants(job.image, clip_dir) if style == "cut" else [job.image]
        digests = [_digest(picture) for picture in pictures]
        length = job.length if job.length is not None else duration - job.start
        clips = plan(
            beats, start=job.start, length=length, fps=fps, fades=job.fades, variants=len(pictures)
        )
        timeline = []
        for clip in clips:
            name = (
                f"{job.size[0]}x{job.size[1]}-{style}-{clip.effect}-{clip.frames}"
                f"-{clip.fade or 'plain'}-{digests[clip.variant]}.h264"
            )
            path = clip_dir / name
            timeline.append((path, clip))
            if path.exists():
                continue
            frames = None
            if frames_reusable(clip, style):
                kind = "beat" if clip.effect == "beat" and style in ("pulse", "flash") else "hold"
                frames = clip_dir / (
                    f"{job.size[0]}x{job.size[1]}-{style}-{kind}-{digests[clip.variant]}.yuv"
                )
                if not frames.exists():
                    frame_files[frames] = (pictures[clip.variant], kind, job)
            tasks[path] = (clip, pictures[clip.variant], job, frames)
        timelines[job.name] = timeline

    # the clips made from one frames file with no fade: the longest is encoded, the others
    # are cut from it
    shorter: dict[Path, list[tuple[Path, Clip]]] = {}
    families: dict[Path, list[Path]] = {}
    for path, (clip, _picture, _job, frames) in tasks.items():
        if frames is not None and not clip.fade:
            families.setdefault(frames, []).append(path)
    for paths in families.values():
        paths.sort(key=lambda path: tasks[path][0].frames, reverse=True)
        longest, *rest = paths
        shorter[longest] = [(path, tasks[path][0]) for path in rest]
        for path in rest:
            del tasks[path]
    steps = len(frame_files) + len(tasks) + 2 * len(pending)
    done = 0

    def advance() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(min(1.0, done / steps))

    def make_frames(item):
        path, (picture, kind, job) = item
        render_frames(picture, path, effect=kind, style=style, size=job.size, fps=fps)

    def encode(item):
        path, (clip, picture, job, frames) = item
        if frames is None:
            encode_clip(
                clip, picture, path, style=style, size=job.size, fps=fps, crf=crf, preset=preset
            )
        else:
            encode_from_frames(clip, frames, path, size=job.size, fps=fps, crf=crf, preset=preset)
        if shorter.get(path):
            data = path.read_bytes()
            for short_path, short_clip in shorter[path]:
                partial = short_path.with_name(short_path.name + ".partial")
                partial.write_bytes(first_frames(data, short_clip.frames))
                os.replace(partial, short_path)

    workers = workers or min(4, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # queued first, so no encode waits on frames that no worker has taken; the costly
        # ones first (a beat's frames, the longest clips), so no core idles at the end
        frames_made = {
            item[0]: pool.submit(make_frames, item)
            for item in sorted(frame_files.items(), key=lambda item: item[1][1] != "beat")
        }

        def encode_when_ready(item):
            frames = item[1][3]
            if frames in frames_made:
                frames_made[frames].result()
            encode(item)

        encodes = [
            pool.submit(encode_when_ready, item)
            for item in sorted(tasks.items(), key=lambda item: -item[1][0].frames)
        ]
        track = audio() if callable(audio) else audio
        # a cut or faded video's own audio is made while the clips are still encoding
        with ThreadPoolExecutor(max_workers=1) as beside:
            tracks = {
                job.name: beside.submit(_job_audio, job, track, duration, clip_dir)
                for job in pending
            }
            for future in [*frames_made.values(), *encodes]:
                future.result()
                advance()

        def finish(job: VideoJob) -> None:
            _join_and_mux(
                job,
                timelines[job.name],
                audio=track,
                track=tracks[job.name].result(),
                duration=duration,
                fps=fps,
                clip_dir=clip_dir,
            )

        for _ in pool.map(finish, pending):
            advance()
            advance()
    return {job.name: [path for path, _ in timelines[job.name]] for job in pending}


def _job_audio(job: VideoJob, audio: Path, duration: float, clip_dir: Path) -> Path:
    """The audio of `job`'s video: `audio` itself, or its cut (and faded) piece, written
    to `clip_dir`."""
    if not (job.fades or job.start > 0 or job.length is not None):
        return audio
    length = job.length if job.length is not None else duration - job.start
    track = clip_dir / f"{job.name}.audio.m4a"
    fade_out = min(REELS_AUDIO_FADE_OUT, length / 3)
    fade_in = min(REELS_AUDIO_FADE_IN, length / 3)
    fades = (
        (f"afade=t=in:st=0:d={fade_in:.3f},afade=t=out:st={length - fade_out:.3f}:d={fade_out:.3f}")
        if job.fades
        else "anull"
    )
    run_ffmpeg(
        ["-hide_banner", "-nostdin", "-y", "-v", "error", "-ss", f"{job.start:.4f}",
         "-t", f"{length:.4f}", "-i", str(audio), "-af", fades, *AAC_OPTIONS, "-ar", "48000",
         str(track)],
        timeout=600,
    )  # fmt: skip
    return track


def _join_and_mux(
    job: VideoJob,
    timeline: list[tuple[Path, Clip]],
    *,
    audio: Path,
    track: Path,
    duration: float,
    fps: int,
    clip_dir: Path,
) -> None:
    """Join `job`'s clips and mux them with `track` (its audio, made from `audio`)."""
    joined = clip_dir / f"{job.name}.joined.h264"
    with open(joined, "wb") as handle:
        cache: dict[Path, bytes] = {}
        for path, _ in timeline:
            if path not in cache:
                cache[path] = path.read_bytes()
            handle.write(cache[path])
    length = job.length if job.length is not None else duration - job.start
    partial = job.output.with_name(f"{job.output.stem}.partial{job.output.suffix}")
    try:
        # -t with the audio's length: -shortest overshoots with a looped picture.
        run_ffmpeg(
            [
                "-hide_banner",
                "-nostdin",
                "-y",
                "-v",
                "error",
                "-r",
                str(fps),
                "-f",
                "h264",
                "-i",
                str(joined),
                "-i",
                str(track),
                "-map",
                "0:v:0",
                "-map",
                "1:a:0",
                "-c:v",
                "copy",
                "-c:a",
                "copy",
                "-t",
                f"{length:.4f}",
                *COLOUR_TAGS,
                "-movflags",
                "+faststart",
                "-f",
                "mp4",
                str(partial),
            ],
            timeout=900,
        )
        os.replace(partial, job.output)
    finally:
        joined.unlink(missing_ok=True)
        if track != audio:
            track.unlink(missing_ok=True)
