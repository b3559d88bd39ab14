"""The audio stage: get a track (synth, folder or suno), measure it, bring it to the target.

Every format is decoded by the one ffmpeg helper (`autoretto.ffmpeg`) to a 32-bit float,
48 kHz stereo WAV: pydub is not used because it calls ffprobe, which the imageio-ffmpeg
wheel does not ship. A track is brought to the channel's loudness target by a gain when its
true peak allows it, otherwise by a gain into a true-peak limiter (4x oversampled, with a
look-ahead), the gain searched until the limited track is at the target; the AAC it ends
in is measured again, and encoded again under a lower ceiling if the codec lifted its peak.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from autoretto.errors import AutorettoError, MediaError
from autoretto.ffmpeg import FfmpegError, probe, run_ffmpeg
from autoretto.pipeline.errors import NoTrackLeft

AUDIO_EXTENSIONS = (".mp3", ".wav", ".flac", ".m4a", ".ogg", ".opus", ".aif", ".aiff")
WORK_RATE = 48000
AAC_BITRATE = "192k"
# ffmpeg's default AAC coder ("twoloop") overshoots the true peak erratically, by up to
# 4 dB on impulsive material; the "fast" coder less. Its temporal noise shaping lifted the
# true peak of the bright synth by 2.8 dB at 192k and by 0.4 dB without it (measured
# 2026-12-01, 180 s track, ffmpeg 9.0.2), and costs a fifth of the encode.
AAC_OPTIONS = ["-c:a", "aac", "-aac_coder", "fast", "-aac_tns", "0", "-b:a", AAC_BITRATE]
# AAC encoding can lift the true peak by a few tenths of a dB: aim below the limit.
TRUE_PEAK_MARGIN = 0.5
# BS.1770-4 measures the true peak at 4x oversampling (192 kHz for 48 kHz audio): the
# limiter works at that rate too, so what it holds under the ceiling is the true peak.
TRUE_PEAK_RATE = 4 * WORK_RATE
LIMITER_ATTACK_MS = 1.0  # the look-ahead: the gain is down before the peak arrives
LIMITER_RELEASE_MS = 20.0
SEARCH_PASSES = 7  # gains tried into the limiter before the closest one is taken
SEARCH_WITHIN = 0.15  # LU: close enough to the aim
MAX_LIMITING_DB = 40.0
ENCODES = 3  # AAC encodes at most (each one after the first under a lower ceiling)
CLIP_LEVEL = 0.99  # of full scale: where a flat top counts as clipping
TONAL_FRAME = 4096  # ~85 ms at 48 kHz
TONAL_FRAMES = 600  # spread over the track: enough to judge, cheap for 20 minutes
TONAL_PEAK = 10.0  # a bin 10 dB over its neighbourhood is a tonal peak


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
    """Decode any audio file to a 32-bit float stereo WAV at `destination`; its seconds.

    Float keeps a quiet track's detail for the gain that follows and a 5.1 downmix or an
    over-full-scale float source from clipping. The sample rate stays the source's, so
    its clipping can be seen (a resampler rounds flat tops off); the AAC is 48 kHz.

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
                "-c:a",
                "pcm_f32le",
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

    decoded = soundfile.info(str(partial))
    if decoded.frames == 0:
        partial.unlink(missing_ok=True)
        raise MediaError(f"{source}: holds no audio samples")
    os.replace(partial, destination)
    return decoded.frames / decoded.samplerate


def _number(pattern: str, text: str, default: float) -> float:
    found = re.findall(pattern, text)
    if not found:
        return default
    value = found[-1]
    return float("-inf") if value == "-inf" else float(value)


def measure(
    path: Path,
    *,
    silence_threshold_db: float = -50.0,
    min_silence: float = 3.0,
    audio_filter: str | None = None,
) -> AudioMeasure:
    """EBU R128 integrated loudness and true peak, plus silences, in one decode of `path`.

    With `audio_filter`, what is measured is `path` passed through that filter chain.
    """
    chain = [audio_filter] if audio_filter else []
    chain += [
        "ebur128=peak=true:framelog=verbose",
        f"silencedetect=n={silence_threshold_db:g}dB:d={min_silence:g}",
    ]
    process = run_ffmpeg(
        ["-hide_banner", "-nostdin", "-i", str(path), "-vn", "-af", ",".join(chain),
         "-f", "null", "-"],
        timeout=1800,
    )  # fmt: skip
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
    """Share of samples in flat tops at full scale: three or more equal samples in a row
    at 99% of full scale or more, in one channel (what hard clipping leaves).

    Equal, not only high: a float source (or a 5.1 downmix) may go over full scale with
    a smooth waveform, which a gain brings back whole.
    """
    import numpy as np
    import soundfile

    clipped = total = 0
    for block in soundfile.blocks(
        str(path), blocksize=480000, dtype="float32", always_2d=True, overlap=2
    ):
        high = np.abs(block) >= CLIP_LEVEL
        total += high.shape[0] * high.shape[1]
        if not high.any():
            continue
        flat = (block[1:-1] == block[:-2]) & (block[1:-1] == block[2:])
        clipped += int((flat & high[1:-1]).sum())
    return clipped / total if total else 0.0


def tonal_share(path: Path) -> float | None:
    """How much of the track's sound is pitched: 0.0 for noise alone, near 1.0 for a pad;
    None when nothing in it is audible.

    In frames of ~85 ms spread over the track (silent ones skipped), the share of the
    energy (40 Hz-16 kHz) in spectral peaks standing 10 dB over their neighbourhood; the
    median over the frames. Noise of any colour puts about 1% of its energy in such peaks
    (its spectrum is locally flat); notes, chords, basses and drum bodies put 20-100%.
    """
    import numpy as np
    import soundfile

    with soundfile.SoundFile(str(path)) as audio:
        frames = audio.frames
        count = max(1, min(TONAL_FRAMES, frames // TONAL_FRAME))
        starts = np.linspace(0, max(0, frames - TONAL_FRAME), count).astype(int)
        window = np.hanning(TONAL_FRAME).astype(np.float32)
        frequencies = np.fft.rfftfreq(TONAL_FRAME, 1 / audio.samplerate)
        band = (frequencies >= 40) & (frequencies <= 16000)
        spectra = []
        for start in starts:
            audio.seek(int(start))
            block = audio.read(TONAL_FRAME, dtype="float32", always_2d=True)
            if len(block) < TONAL_FRAME:
                continue
            mono = block.mean(axis=1)
            if float(np.mean(np.square(mono))) < 1e-7:  # below -70 dBFS: silence
                continue
            spectra.append(np.square(np.abs(np.fft.rfft(mono * window)))[band])
    if not spectra:
        return None
    power = np.array(spectra) + 1e-20
    # the neighbourhood: the geometric mean over +-15 bins (~ +-175 Hz)
    neighbourhood = np.exp(_moving_mean(np.log(power), 31))
    peaks = power > TONAL_PEAK * neighbourhood
    shares = (power * peaks).sum(axis=1) / power.sum(axis=1)
    return round(float(np.median(shares)), 4)


def _moving_mean(values, size: int):
    """The mean of each row's `size` values centred on each one (`size` odd), the edge
    values repeated beyond the ends (scipy's uniform_filter1d, mode "nearest"; numpy here,
    so that the make does not pay scipy's import)."""
    import numpy as np

    half = size // 2
    padded = np.pad(values, ((0, 0), (half, half)), mode="edge")
    sums = np.cumsum(padded, axis=1, dtype=np.float64)
    sums = np.concatenate([np.zeros((len(values), 1)), sums], axis=1)
    return (sums[:, size:] - sums[:, :-size]) / size


def level_filter(gain_db: float, ceiling_dbtp: float | None, *, true_peak: bool = True) -> str:
    """The ffmpeg filter chain: a gain, then (with a ceiling) the limiter.

    The limiter holds the true peak (at 4x the rate) under the ceiling; with `true_peak`
    False only the sample peak, four times cheaper: good enough to search the gain with.
    """
    chain = [f"volume={gain_db:.3f}dB"]
    if ceiling_dbtp is not None:
        limit = min(1.0, max(0.0625, 10 ** (ceiling_dbtp / 20)))  # alimiter's own range
        limiter = (
            f"alimiter=limit={limit:.6f}:attack={LIMITER_ATTACK_MS:g}"
            f":release={LIMITER_RELEASE_MS:g}:level=false:latency=true"
        )
        if true_peak:
            chain += [f"aresample={TRUE_PEAK_RATE}", limiter, f"aresample={WORK_RATE}"]
        else:
            chain.append(limiter)
    return ",".join(chain)


def integrated_loudness(path: Path, audio_filter: str) -> float:
    """Integrated loudness (LUFS) of `path` through `audio_filter`, nothing else measured."""
    process = run_ffmpeg(
        ["-hide_banner", "-nostdin", "-i", str(path), "-vn", "-af", f"{audio_filter},ebur128",
         "-f", "null", "-"],
        timeout=1800,
    )  # fmt: skip
    text = process.stderr
    return _number(r"I:\s+(-?[\d.]+|-inf) LUFS", text[text.rfind("Summary:") :], -70.0)


def normalise(
    source: Path,
    destination: Path,
    measured: AudioMeasure,
    *,
    target: float,
    true_peak_max: float,
    loudness_tolerance: float = 1.0,
    silence_threshold_db: float = -50.0,
    min_silence: float = 3.0,
) -> tuple[dict, AudioMeasure]:
    """Encode `source` to AAC at `destination`, `target` LUFS, true peak under the limit.

    A plain gain when the true peak allows it; otherwise the gain into the true-peak
    limiter that lands the limited track on the target (searched, each try measured). The
    AAC is measured; a codec that lifted the true peak over the limit gets the track again
    under a ceiling lowered by the overshoot, and a codec that moved the loudness gets it
    with the aim moved the other way. A silent source is encoded as it is (the gates
    reject it). Returns what was done and the measure of the AAC written.
    """
    silent = measured.integrated <= -69.0 or measured.true_peak == float("-inf")
    gain = 0.0 if silent else target - measured.integrated
    ceiling = true_peak_max - TRUE_PEAK_MARGIN
    limited = not silent and measured.true_peak + gain > ceiling
    aim = target
    facts: dict = {"passes": 0}
    partial = temp_path(destination)
    for encode in range(1, ENCODES + 1):
        if limited:
            gain = _limited_gain(source, aim, ceiling, gain, facts)
        audio_filter = "anull" if silent else level_filter(gain, ceiling if limited else None)
        run_ffmpeg(
            ["-hide_banner", "-nostdin", "-y", "-v", "error", "-i", str(source), "-vn",
             "-af", audio_filter, "-ar", str(WORK_RATE), "-ac", "2", *AAC_OPTIONS,
             "-movflags", "+faststart", str(partial)],
            timeout=1800,
        )  # fmt: skip
        final = measure(partial, silence_threshold_db=silence_threshold_db, min_silence=min_silence)
        facts.update(
            {
                "method": "none" if silent else "limiter" if limited else "gain",
                "gain_db": round(gain, 2),
                "encodes": encode,
            }
        )
        if limited:
            facts["ceiling_dbtp"] = round(ceiling, 2)
        if silent:
            break
        overshoot = final.true_peak - true_peak_max
        off = final.integrated - target
        if overshoot <= 0 and abs(off) <= 0.5 * loudness_tolerance:
            break
        if overshoot > 0:
            ceiling = max(-24.0, ceiling - overshoot - 0.2)
            if not limited:
                limited = True
                gain = target - measured.integrated
        if abs(off) > 0.3 * loudness_tolerance:
            aim -= off
            if not limited:
                gain -= off
    os.replace(partial, destination)
    return facts, final


def _limited_gain(source: Path, aim: float, ceiling: float, gain: float, facts: dict) -> float:
    """The gain into the limiter (under `ceiling`) whose output measures `aim` LUFS.

    More gain makes the limited track louder, less than one for one. The secant method
    finds it in a few measured tries, first with the cheap sample-peak limiter, then with
    the true-peak one it ends with (which limits a little more); the closest try is taken
    when none is within SEARCH_WITHIN.
    """
    bounds = (gain - 24.0, gain + MAX_LIMITING_DB)
    slope = 0.5  # a first guess: about half of the gain shows as loudness once limiting
    for true_peak, passes in ((False, SEARCH_PASSES), (True, 3)):
        tries: list[tuple[float, float]] = []
        for _ in range(passes):
            chain = level_filter(gain, ceiling, true_peak=true_peak)
            level = integrated_loudness(source, chain)
            facts["passes"] += 1
            tries.append((gain, level))
            miss = aim - level
            if abs(miss) <= SEARCH_WITHIN:
                break
            if len(tries) >= 2:
                (gain_a, level_a), (gain_b, level_b) = tries[-2], tries[-1]
                if not math.isclose(gain_a, gain_b):
                    slope = min(1.0, max(0.05, (level_b - level_a) / (gain_b - gain_a)))
            gain = min(bounds[1], max(bounds[0], gain + miss / slope))
        else:
            gain = min(tries, key=lambda found: abs(aim - found[1]))[0]
    return gain
