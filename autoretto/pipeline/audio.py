"""The audio stage: get a track (synth, folder or suno), measure it, normalise it.

Decoding goes through the ffmpeg binary (mp3, wav, flac, m4a alike); pydub is not used
because it calls ffprobe, which the imageio-ffmpeg wheel does not ship.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from autoretto.errors import AutorettoError, MediaError
from autoretto.ffmpeg import FfmpegError, probe, run_ffmpeg
from autoretto.pipeline.errors import NoTrackLeft

AUDIO_EXTENSIONS = (".mp3", ".wav", ".flac", ".m4a")
WORK_RATE = 48000
AAC_BITRATE = "192k"
# ffmpeg's default AAC coder ("twoloop") overshoots the true peak erratically, by up to
# 4 dB on impulsive material; the "fast" coder stays within about 1.5 dB.
AAC_OPTIONS = ["-c:a", "aac", "-aac_coder", "fast", "-b:a", AAC_BITRATE]
# AAC encoding can lift the true peak by a few tenths of a dB: aim below the limit.
TRUE_PEAK_MARGIN = 0.5


@dataclass(frozen=True)
class AudioMeasure:
    integrated: float  # LUFS; -70.0 for silence
    true_peak: float  # dBTP; -inf for silence
    loudness_range: float
    silences: list[tuple[float, float]]  # (start, end) seconds of each silence found
    duration: float


def temp_path(final: Path) -> Path:
    """Where to write `final` before os.replace makes it complete (same folder, same type)."""
    return final.with_name(f"{final.stem}.partial{final.suffix}")


def pick_folder_track(folder: Path, used_tracks: frozenset[str], channel: str) -> Path:
    """The oldest (by modification time, then name) track in `folder` not in `used_tracks`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise AutorettoError(
            f"the audio folder {folder} of channel {channel!r} does not exist: create it and "
            f"put tracks ({', '.join(AUDIO_EXTENSIONS)}) in it"
        )
    tracks = [
        path.resolve()
        for path in folder.iterdir()
        if path.is_file()
        and path.suffix.lower() in AUDIO_EXTENSIONS
        and not path.name.startswith(".")
    ]
    unused = [path for path in tracks if str(path) not in used_tracks]
    if not unused:
        if tracks:
            raise NoTrackLeft(
                f"channel {channel!r} has used all {len(tracks)} tracks in {folder}: "
                "add new tracks there"
            )
        raise NoTrackLeft(
            f"the audio folder {folder} of channel {channel!r} has no tracks "
            f"({', '.join(AUDIO_EXTENSIONS)}): add some"
        )
    return min(unused, key=lambda path: (path.stat().st_mtime, path.name))


def decode_to_wav(source: Path, destination: Path) -> float:
    """Decode any audio file to 16-bit 48 kHz stereo WAV at `destination`; return seconds.

    Raises MediaError naming `source` when it is not audio ffmpeg can read.
    """
    try:
        info = probe(source)
    except MediaError:
        raise MediaError(
            f"{source}: not an audio file ffmpeg can read; replace or remove it"
        ) from None
    if info.audio is None:
        raise MediaError(f"{source}: has no audio stream; replace or remove it")
    partial = temp_path(destination)
    try:
        run_ffmpeg(
            [
                "-hide_banner",
                "-nostdin",
                "-y",
                "-v",
                "error",
                "-i",
                str(source),
                "-map",
                "0:a:0",
                "-vn",
                "-ac",
                "2",
                "-ar",
                str(WORK_RATE),
                "-c:a",
                "pcm_s16le",
                "-f",
                "wav",
                str(partial),
            ],
            timeout=600,
        )
    except FfmpegError as error:
        partial.unlink(missing_ok=True)
        raise MediaError(f"{source}: the audio cannot be decoded ({error})") from None
    import soundfile

    frames = soundfile.info(str(partial)).frames
    if frames == 0:
        partial.unlink(missing_ok=True)
        raise MediaError(f"{source}: holds no audio samples")
    os.replace(partial, destination)
    return frames / WORK_RATE


def _number(pattern: str, text: str, default: float) -> float:
    found = re.findall(pattern, text)
    if not found:
        return default
    value = found[-1]
    return float("-inf") if value == "-inf" else float(value)


def measure(path: Path, *, silence_threshold_db: float, min_silence: float) -> AudioMeasure:
    """EBU R128 integrated loudness and true peak, plus silences, in one decode of `path`."""
    process = run_ffmpeg(
        [
            "-hide_banner",
            "-nostdin",
            "-i",
            str(path),
            "-vn",
            "-af",
            f"ebur128=peak=true:framelog=verbose,"
            f"silencedetect=n={silence_threshold_db:g}dB:d={min_silence:g}",
            "-f",
            "null",
            "-",
        ],
        timeout=600,
    )
    text = process.stderr
    summary = text[text.rfind("Summary:") :] if "Summary:" in text else text
    integrated = _number(r"I:\s+(-?[\d.]+|-inf) LUFS", summary, -70.0)
    peak = _number(r"Peak:\s+(-?[\d.]+|-inf) dBFS", summary, float("-inf"))
    loudness_range = _number(r"LRA:\s+(-?[\d.]+) LU", summary, 0.0)
    duration = 0.0
    times = re.findall(r"time=(\d+):(\d+):(\d+(?:\.\d+)?)", text)
    if times:
        hours, minutes, seconds = times[-1]
        duration = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    silences, start = [], None
    for kind, value in re.findall(r"silence_(start|end): (-?[\d.]+)", text):
        if kind == "start":
            start = max(0.0, float(value))
        elif start is not None:
            silences.append((round(start, 3), round(float(value), 3)))
            start = None
    if start is not None:
        silences.append((round(start, 3), round(max(duration, start), 3)))
    return AudioMeasure(integrated, peak, loudness_range, silences, duration)


def clipped_fraction(path: Path) -> float:
    """Share of samples that sit at full scale in runs of three or more (hard clipping)."""
    import numpy as np
    import soundfile

    clipped = total = 0
    limit = 32766
    for block in soundfile.blocks(
        str(path), blocksize=WORK_RATE * 10, dtype="int16", always_2d=True
    ):
        at_limit = np.abs(block.astype(np.int32)) >= limit
        total += at_limit.size
        if not at_limit.any():
            continue
        # a sample counts when it and both neighbours in its channel are at the limit
        run = at_limit[1:-1] & at_limit[:-2] & at_limit[2:]
        clipped += int(run.sum())
    return clipped / total if total else 0.0


def normalise(
    source: Path,
    destination: Path,
    measured: AudioMeasure,
    *,
    target: float,
    true_peak_max: float,
    loudness_tolerance: float = 1.0,
    attempts: int = 4,
) -> dict:
    """Encode `source` to AAC at `destination` at `target` LUFS, true peak under the limit.

    A plain gain when the peak allows it, otherwise ffmpeg's loudnorm (true-peak limited).
    ffmpeg's AAC encoder can overshoot the true peak by several dB on bright, impulsive
    material, so the encoded file is measured and, if its peak is over the limit, encoded
    again with the limiter's ceiling lowered by the overshoot. A silent source is encoded
    as it is (the gates reject it). Returns what was done.
    """
    silent = measured.integrated <= -69.0 or measured.true_peak == float("-inf")
    gain = 0.0 if silent else target - measured.integrated
    ceiling = true_peak_max - TRUE_PEAK_MARGIN
    facts: dict = {}
    limit = False  # after an overshoot, always through the limiter
    for attempt in range(1, attempts + 1):
        if silent:
            method, audio_filter = "none", "anull"
        elif not limit and measured.true_peak + gain <= ceiling:
            method, audio_filter = "gain", f"volume={gain:.2f}dB"
        else:
            method, audio_filter = "loudnorm", _loudnorm_filter(source, target, ceiling)
        partial = temp_path(destination)
        run_ffmpeg(
            [
                "-hide_banner",
                "-nostdin",
                "-y",
                "-v",
                "error",
                "-i",
                str(source),
                "-vn",
                "-af",
                audio_filter,
                "-ar",
                str(WORK_RATE),
                "-ac",
                "2",
                *AAC_OPTIONS,
                "-movflags",
                "+faststart",
                str(partial),
            ],
            timeout=900,
        )
        facts.update({"method": method, "gain_db": round(gain, 2), "passes": attempt})
        if method == "loudnorm":
            facts["ceiling_dbtp"] = round(ceiling, 2)
        if silent or attempt == attempts:
            break
        encoded = measure(partial, silence_threshold_db=-90, min_silence=3600)
        overshoot = encoded.true_peak - true_peak_max
        if overshoot <= -0.1:
            break
        if not limit and method == "gain" and overshoot + 0.3 <= 0.7 * loudness_tolerance:
            gain -= overshoot + 0.3  # a small overshoot: a little quieter, within tolerance
            continue
        ceiling = max(-9.0, ceiling - overshoot - TRUE_PEAK_MARGIN)
        limit = True
    os.replace(partial, destination)
    return facts


def _loudnorm_filter(source: Path, target: float, ceiling: float) -> str:
    first = run_ffmpeg(
        [
            "-hide_banner",
            "-nostdin",
            "-i",
            str(source),
            "-vn",
            "-af",
            f"loudnorm=I={target:g}:TP={ceiling:g}:LRA=20:print_format=json",
            "-f",
            "null",
            "-",
        ],
        timeout=900,
    )
    values = _loudnorm_json(first.stderr)
    return (
        f"loudnorm=I={target:g}:TP={ceiling:g}:LRA=20"
        f":measured_I={values['input_i']}:measured_TP={values['input_tp']}"
        f":measured_LRA={values['input_lra']}:measured_thresh={values['input_thresh']}"
        f":offset={values['target_offset']}:linear=true"
    )


def _loudnorm_json(stderr: str) -> dict:
    import json

    start = stderr.rfind("{")
    end = stderr.rfind("}")
    try:
        values = json.loads(stderr[start : end + 1])
        return {
            key: float(values[key])
            for key in ("input_i", "input_tp", "input_lra", "input_thresh", "target_offset")
        }
    except (ValueError, KeyError) as error:
        raise FfmpegError(f"ffmpeg's loudnorm gave no measurement ({error})") from None
