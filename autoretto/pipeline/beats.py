"""Beat tracking (librosa), the energy curve for the reels edit, the audio fingerprint."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

ANALYSIS_RATE = 22050  # what beat tracking needs; loading at 44.1/48 kHz doubles the memory
HOP = 512
# librosa's beats come out about one hop late against the true onsets (measured on the
# synth: a kick on the beat is reported ~20-27 ms after it); move them back by that much.
BEAT_LATENCY = HOP / ANALYSIS_RATE
TEMPO_OCTAVE = (70.0, 140.0)  # BPM: the visual beat's speed, first folded into these
PULSE_WINDOW = 6.0  # seconds of onsets judged around a beat
PULSE_MIN = 0.3  # below: no beat there (a beatless intro, a break), the picture stays calm


@dataclass(frozen=True)
class BeatAnalysis:
    tempo: float  # BPM from the median beat interval (librosa's own estimate is quantised)
    beats: list[float]  # seconds
    duration: float
    reels_start: float
    reels_end: float
    fingerprint: str


def load_librosa() -> None:
    """Import what beat tracking uses (numba compiles it the first time, then caches)."""
    import librosa.beat
    import librosa.onset  # noqa: F401


def warm() -> float:
    """Pay librosa's import and numba's first compile now, not in the first make: track
    the beats of a few seconds of clicks. Returns the seconds it took."""
    import tempfile
    import time

    import numpy as np
    import soundfile

    started = time.perf_counter()
    clicks = np.zeros(ANALYSIS_RATE * 12, dtype=np.float32)
    for index in range(24):
        start = index * ANALYSIS_RATE // 2
        clicks[start : start + 200] = np.hanning(200)
    with tempfile.TemporaryDirectory(prefix="autoretto-warm-") as folder:
        path = f"{folder}/clicks.wav"
        soundfile.write(path, clicks, ANALYSIS_RATE)
        analyse(path, reels_seconds=5)
    return time.perf_counter() - started


def load_mono(path: str | os.PathLike):
    """The audio at `path` as mono float32 samples at ANALYSIS_RATE, and that rate.

    What librosa.load(path, sr=ANALYSIS_RATE) gives (the channels' mean, soxr's HQ
    resampler, the length rounded up), without librosa: it runs while librosa imports.
    """
    import math

    import numpy as np
    import soundfile

    with soundfile.SoundFile(str(path)) as audio:
        rate = audio.samplerate
        samples = audio.read(dtype="float32", always_2d=True)
    samples = samples.mean(axis=1, dtype=np.float32)
    if rate != ANALYSIS_RATE:
        import soxr

        length = math.ceil(len(samples) * ANALYSIS_RATE / rate)
        resampled = soxr.resample(samples, rate, ANALYSIS_RATE, quality="soxr_hq")
        samples = np.zeros(length, dtype=np.float32)
        samples[: min(length, len(resampled))] = resampled[:length]
    return samples, ANALYSIS_RATE


def analyse(
    path: str | os.PathLike,
    *,
    reels_seconds: float,
    librosa_ready: Callable[[], None] | None = None,
) -> BeatAnalysis:
    """Track beats in the audio at `path` (any file soundfile reads: WAV/FLAC/MP3).

    Also picks the strongest-energy window of `reels_seconds` (starting on a beat) and
    computes the duplicate-detection fingerprint from the same decoded samples. The
    samples are read and fingerprinted first; then `librosa_ready` is called (it waits
    for librosa's import where that runs beside).
    """
    import numpy as np

    from autoretto.pipeline.fingerprint import fingerprint

    samples, rate = load_mono(path)
    duration = len(samples) / rate
    print_of_audio = fingerprint(samples, rate)
    if librosa_ready is not None:
        librosa_ready()
    import librosa

    envelope = librosa.onset.onset_strength(y=samples, sr=rate, hop_length=HOP)
    # the tempo frame by frame (over ~8 s windows), so a tempo change is followed, folded
    # into one octave: a groove that reads as well at half or double speed must not flip
    # between the two from one bar to the next
    local_tempo = librosa.feature.tempo(
        onset_envelope=envelope, sr=rate, hop_length=HOP, aggregate=None
    )
    local_tempo = local_tempo / 2.0 ** np.floor(np.log2(local_tempo / TEMPO_OCTAVE[0]))
    # ... around the track's own median, so a tempo near the octave's edge stays on one side
    middle = float(np.median(local_tempo))
    local_tempo = local_tempo / 2.0 ** np.round(np.log2(local_tempo / middle))
    _, frames = librosa.beat.beat_track(
        onset_envelope=envelope, sr=rate, hop_length=HOP, bpm=local_tempo
    )
    frames = [frame for frame in frames if has_pulse(envelope, int(frame), local_tempo)]
    times = librosa.frames_to_time(frames, sr=rate, hop_length=HOP) - BEAT_LATENCY
    beats = [round(float(time), 4) for time in times if 0 <= time < duration]
    tempo = tempo_from_beats(beats)
    start, end = strongest_window(samples, rate, beats, min(reels_seconds, duration))
    return BeatAnalysis(
        tempo=round(tempo, 2),
        beats=beats,
        duration=round(duration, 4),
        reels_start=round(start, 4),
        reels_end=round(end, 4),
        fingerprint=print_of_audio,
    )


def pulse_strength(envelope, start: int, stop: int, tempo: float) -> float:
    """How periodic the onsets in frames [start, stop) are at the beat period of `tempo`:
    the autocorrelation (mean removed, 1.0 at lag 0) of the onset envelope at the beat's
    lag (best of +-2 frames). A groove gives 0.4-0.9; a pad, rain or vinyl crackle, with
    onsets at random, under 0.25."""
    import numpy as np

    piece = np.asarray(envelope[max(0, start) : stop], dtype=np.float64)
    lag = round(60.0 / max(tempo, 1.0) * ANALYSIS_RATE / HOP)
    if len(piece) < 3 * lag:
        return 0.0
    piece = piece - piece.mean()
    energy = float(np.dot(piece, piece))
    if energy <= 1e-12:
        return 0.0
    return max(
        float(np.dot(piece[:-shift], piece[shift:])) / energy
        for shift in range(max(1, lag - 2), lag + 3)
    )


def has_pulse(envelope, frame: int, local_tempo) -> bool:
    """A beat is kept where the onsets in the PULSE_WINDOW seconds around it are periodic
    at the beat's period: in a beatless intro, a break or an outro of rain, pad or vinyl
    crackle the tracker's grid carries on over nothing, and is dropped there."""
    tempo = float(local_tempo[min(frame, len(local_tempo) - 1)])
    half = round(PULSE_WINDOW / 2 * ANALYSIS_RATE / HOP)
    return pulse_strength(envelope, frame - half, frame + half, tempo) >= PULSE_MIN


def tempo_from_beats(beats: list[float]) -> float:
    """BPM from the beat intervals near the median one.

    Beat times are quantised to the analysis hop (23 ms), so the median interval alone is
    off by up to a hop; averaging the intervals within 10% of the median undoes that.
    """
    import numpy as np

    if len(beats) < 2:
        return 0.0
    intervals = np.diff(beats)
    median = float(np.median(intervals))
    steady = intervals[np.abs(intervals - median) <= 0.1 * median]
    return 60.0 / float(steady.mean() if len(steady) else median)


def strongest_window(samples, rate: int, beats: list[float], length: float) -> tuple[float, float]:
    """The `length`-second window with the most energy, starting on a beat where possible."""
    import numpy as np

    duration = len(samples) / rate
    if length >= duration - 1e-6:
        return 0.0, duration
    block = max(1, rate // 10)
    blocks = len(samples) // block
    energy = np.square(samples[: blocks * block].reshape(blocks, block)).mean(axis=1)
    cumulative = np.concatenate([[0.0], np.cumsum(energy)])
    span = round(length * 10)
    candidates = [time for time in beats if time + length <= duration] or [0.0]
    best, best_energy = candidates[0], -1.0
    for start in candidates:
        first = int(start * 10)
        total = cumulative[min(first + span, blocks)] - cumulative[first]
        if total > best_energy + 1e-12:
            best, best_energy = start, total
    return float(best), float(best + length)
