"""Quality and policy gates: each a named check with a pass/fail and a plain reason.

Quality gates measure the files themselves (the published audio, the rendered videos as
ffmpeg reads them back), never what an encoder was asked to do.
"""

from __future__ import annotations

import re
from pathlib import Path

from autoretto.errors import MediaError
from autoretto.ffmpeg import check_playable, run_ffmpeg
from autoretto.pipeline import Gate
from autoretto.pipeline.audio import AudioMeasure
from autoretto.pipeline.settings import PipelineSettings

BLACK_LUMA = 32  # of 255, in limited-range luma where black is 16
BLACK_SHARE = 0.98  # of a frame's pixels for the frame to count as black


# Pitched sound (notes, chords, basses, drum bodies) puts 20-100% of a frame's energy in
# spectral peaks; noise of any colour about 1% (see audio.tonal_share).
NOISE_TONAL_SHARE = 0.05


def duration_gate(duration: float, settings: PipelineSettings, track: str = "the track") -> Gate:
    if duration < settings.min_seconds:
        return Gate(
            "duration",
            False,
            f"{track} is {duration:.1f} s, shorter than the "
            f"channel's minimum of {settings.min_seconds:g} s",
        )
    if duration > settings.max_seconds:
        return Gate(
            "duration",
            False,
            f"{track} is {duration:.1f} s, longer than the "
            f"channel's maximum of {settings.max_seconds:g} s",
        )
    return Gate(
        "duration",
        True,
        f"{duration:.1f} s, within {settings.min_seconds:g}-{settings.max_seconds:g} s",
    )


def clipping_gate(fraction: float, settings: PipelineSettings, track: str = "the track") -> Gate:
    percent = fraction * 100
    if fraction > settings.max_clipped_fraction:
        return Gate(
            "clipping",
            False,
            f"{track} is clipped: {percent:.2f}% of its samples sit at full "
            f"scale (limit {settings.max_clipped_fraction * 100:g}%); no gain can undo that",
        )
    return Gate("clipping", True, f"{percent:.3f}% of samples at full scale")


def noise_gate(tonal: float | None, track: str = "the track") -> Gate:
    if tonal is None:
        return Gate("noise", True, "nothing audible to judge (see the silence gate)")
    if tonal < NOISE_TONAL_SHARE:
        return Gate(
            "noise",
            False,
            f"{track} is only noise: no pitched sound in it ({tonal:.1%} of its energy in "
            f"tonal peaks, music has {NOISE_TONAL_SHARE:.0%} or more)",
        )
    return Gate("noise", True, f"{tonal:.0%} of the energy in tonal peaks")


def silence_gate(
    measure: AudioMeasure, settings: PipelineSettings, track: str = "the track"
) -> Gate:
    longest = max(measure.silences, key=lambda span: span[1] - span[0], default=None)
    if longest is not None and longest[1] - longest[0] >= settings.max_silence_seconds:
        start, end = longest
        if start <= 0.05 and end >= measure.duration - 0.05:
            return Gate("silence", False, f"{track} is silent from start to end")
        return Gate(
            "silence",
            False,
            f"{track} has {end - start:.1f} s of silence from {start:.1f} s to {end:.1f} s "
            f"(limit {settings.max_silence_seconds:g} s)",
        )
    return Gate("silence", True, f"no silence of {settings.max_silence_seconds:g} s or more")


def loudness_gate(
    measure: AudioMeasure, settings: PipelineSettings, track: str = "the track"
) -> Gate:
    """The published audio (the AAC, measured) at the target within the tolerance."""
    target, tolerance = settings.loudness_target, settings.loudness_tolerance
    facts = f"{measure.integrated:.1f} LUFS, true peak {measure.true_peak:.1f} dBTP"
    if abs(measure.integrated - target) > tolerance:
        return Gate(
            "loudness",
            False,
            f"{track} came out at {facts}: not within {tolerance:g} LU of the "
            f"{target:g} LUFS target",
        )
    if measure.true_peak > settings.true_peak_max:
        return Gate(
            "loudness",
            False,
            f"{track} came out at {facts}: the true peak is above {settings.true_peak_max:g} dBTP",
        )
    return Gate("loudness", True, facts)


def black_frames_gate(
    videos: dict[str, str],
    fades: frozenset[str] = frozenset(),
    clips: dict[str, list[Path]] | None = None,
) -> Gate:
    """Decode every keyframe (one per beat) of each video, downscaled; any black one fails.

    The first keyframe of a video in `fades` starts a fade from black and is skipped.
    `clips` (from render_videos) gives a video's clip files in order: the video's H.264 is
    those files joined byte for byte, one keyframe each, so each distinct clip is decoded
    once and stands for every place it is used; a video without them is decoded whole.
    """
    for name, path in videos.items():
        frames = _clip_keyframes(name, (clips or {}).get(name))
        if frames is None:
            frames = _keyframes(path)
        if not len(frames):
            return Gate("black_frames", False, f"{name}: no frame could be decoded")
        dark = (frames < BLACK_LUMA).mean(axis=1) >= BLACK_SHARE
        if name in fades:
            dark[0] = False
        if dark.any():
            count = int(dark.sum())
            return Gate(
                "black_frames", False, f"{name}: {count} of {len(frames)} sampled frames are black"
            )
    return Gate("black_frames", True, "no black frames among the keyframes of " + ", ".join(videos))


def _keyframes(source: str, raw_h264: bool = False):
    """The keyframes of the video `source`, 48x48 grey, one row each (numpy uint8)."""
    import numpy as np

    process = run_ffmpeg(
        [
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-skip_frame",
            "nokey",
            "-skip_loop_filter",  # deblocking does not make a frame black or not
            "all",
            *(["-f", "h264"] if raw_h264 else []),
            "-i",
            source,
            "-map",
            "0:v:0",
            "-fps_mode",
            "passthrough",
            "-vf",
            "scale=48:48,format=gray",
            "-f",
            "rawvideo",
            "-",
        ],
        timeout=600,
    )
    frames = np.frombuffer(process.stdout, dtype=np.uint8)
    return frames[: len(frames) // (48 * 48) * 48 * 48].reshape(-1, 48 * 48)


def _clip_keyframes(name: str, clips: list[Path] | None):
    """The keyframes of a video made of `clips` (its clip files in order), each distinct
    clip decoded once; None when a clip is gone or does not hold exactly one keyframe."""
    if not clips or not all(Path(clip).is_file() for clip in clips):
        return None
    distinct = list(dict.fromkeys(Path(clip) for clip in clips))
    joined = distinct[0].with_name(f"{name}.keyframes.h264")
    try:
        with open(joined, "wb") as handle:
            for clip in distinct:
                handle.write(clip.read_bytes())
        frames = _keyframes(str(joined), raw_h264=True)
    finally:
        joined.unlink(missing_ok=True)
    if len(frames) != len(distinct):
        return None
    index = {clip: position for position, clip in enumerate(distinct)}
    return frames[[index[Path(clip)] for clip in clips]]


def streams_gate(
    expected: dict[str, tuple[str, tuple[int, int], float]], *, fps: int, thumbnail: str | None
) -> Gate:
    """Probe each output: H.264 yuv420p at the asked size and frame rate tagged bt709, AAC
    audio, the asked duration, playable from the start; the thumbnail 1280x720 < 2 MB."""
    from concurrent.futures import ThreadPoolExecutor

    from autoretto.pipeline.artwork import THUMBNAIL_MAX_BYTES, THUMBNAIL_SIZE

    def checked(path: str):
        try:
            return check_playable(path)
        except MediaError as error:
            return error

    tolerance = max(0.1, 2.0 / fps)
    with ThreadPoolExecutor(max_workers=max(1, len(expected))) as pool:  # ffmpeg does the work
        found = list(pool.map(checked, [path for path, _, _ in expected.values()]))
    for (name, (_path, size, duration)), info in zip(expected.items(), found, strict=True):
        if isinstance(info, MediaError):
            return Gate("streams", False, f"{name}: {info}")
        video, audio = info.video, info.audio
        problems = []
        if video.codec != "h264":
            problems.append(f"video codec {video.codec}, not h264")
        if video.pix_fmt != "yuv420p":
            problems.append(f"pixel format {video.pix_fmt}, not yuv420p")
        if (video.width, video.height) != tuple(size):
            problems.append(f"{video.width}x{video.height}, not {size[0]}x{size[1]}")
        if abs(video.fps - fps) > 0.05:
            problems.append(f"{video.fps:g} fps, not {fps}")
        if video.color_space != "bt709":
            problems.append(f"colour space {video.color_space or 'untagged'}, not bt709")
        if audio is None:
            problems.append("no audio stream")
        elif audio.codec != "aac":
            problems.append(f"audio codec {audio.codec}, not aac")
        if abs(info.duration - duration) > tolerance:
            problems.append(f"{info.duration:.2f} s long, not {duration:.2f} s")
        if info.size_bytes <= 0:
            problems.append("empty file")
        if problems:
            return Gate("streams", False, f"{name}: " + "; ".join(problems))
    if thumbnail is not None:
        from PIL import Image

        with Image.open(thumbnail) as image:
            if image.size != THUMBNAIL_SIZE or image.format != "JPEG":
                return Gate(
                    "streams",
                    False,
                    f"thumbnail is {image.format} {image.size[0]}x"
                    f"{image.size[1]}, not JPEG 1280x720",
                )
        if Path(thumbnail).stat().st_size >= THUMBNAIL_MAX_BYTES:
            return Gate("streams", False, "thumbnail is 2 MB or more")
    return Gate(
        "streams",
        True,
        "; ".join(
            f"{name} h264+aac {size[0]}x{size[1]} {fps} fps {duration:.1f} s"
            for name, (_, size, duration) in expected.items()
        ),
    )


def text_limits_gate(texts: dict[str, dict], platforms: tuple[str, ...]) -> Gate:
    from autoretto.pipeline.textfit import check_texts

    problems = check_texts(texts, platforms)
    if problems:
        return Gate("text_limits", False, "; ".join(problems))
    return Gate("text_limits", True, "within the limits of " + (", ".join(platforms) or "-"))


def _all_strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _all_strings(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _all_strings(item)]
    return []


def banned_terms_gate(texts: dict[str, dict], extra: list[str], banned: tuple[str, ...]) -> Gate:
    """Case-insensitive whole-word search for each banned term in every text."""
    haystack = "\n".join(_all_strings(texts) + extra)
    for term in banned:
        pattern = r"(?<!\w)" + re.escape(term) + r"(?!\w)"
        if re.search(pattern, haystack, flags=re.IGNORECASE):
            return Gate("banned_terms", False, f"the text contains the banned term {term!r}")
    return Gate("banned_terms", True, f"none of {len(banned)} banned terms")


def duplicate_gate(fingerprint: str, past: tuple[tuple[int, str], ...], threshold: float) -> Gate:
    from autoretto.pipeline.fingerprint import similarity

    if not fingerprint:
        return Gate("duplicate_audio", False, "the audio is too short or silent to fingerprint")
    if not past:
        return Gate("duplicate_audio", True, "no past episodes to compare with")
    best_episode, best = None, 0.0
    for episode_id, other in past:
        score = similarity(fingerprint, other)
        if score > best:
            best_episode, best = episode_id, score
    if best >= threshold:
        return Gate(
            "duplicate_audio",
            False,
            f"the audio matches episode {best_episode} ({best:.0%} alike, limit {threshold:.0%})",
        )
    return Gate(
        "duplicate_audio",
        True,
        f"compared with {len(past)} past episodes; closest {best:.0%} alike",
    )


def ai_disclosure_gate(
    ai_generated: bool, disclosure: str, texts: dict[str, dict], platforms: tuple[str, ...]
) -> Gate:
    """When something came from a generator, every chosen platform's text must say so
    (and YouTube/TikTok must carry their AI-content flags)."""
    if not ai_generated:
        return Gate("ai_disclosure", True, "nothing came from a generator")
    from autoretto.platforms import class_or_base

    missing = []
    for platform in platforms:
        fields = texts.get(platform, {})
        flag = class_or_base(platform).ai_flag
        if flag and fields.get(flag) is not True:
            missing.append(f"{platform} flag")
        if not any(disclosure in text for text in _all_strings(fields)):
            missing.append(f"{platform} text")
    if missing:
        return Gate(
            "ai_disclosure",
            False,
            "the AI-content disclosure is missing from " + ", ".join(missing),
        )
    return Gate("ai_disclosure", True, "disclosed: " + disclosure)
