"""Beat tracking, the energy curve for the reels edit, the audio fingerprint.

The beats are tracked with numpy alone, by the method librosa uses (its onset strength,
its autocorrelation tempogram with a log-normal prior, and Ellis's dynamic programme:
D. P. W. Ellis, "Beat Tracking by Dynamic Programming", J. New Music Research 36(1), 2007,
https://www.ee.columbia.edu/~dpwe/pubs/Ellis07-beattrack.pdf). librosa itself costs a cron
make 3-5 s of CPU to import (numba compiles one of its beat functions at every import), a
fifth of the whole make; the tests hold this tracker to librosa's beats frame for frame
(tests/pipeline/test_beat_tracker.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ANALYSIS_RATE = 22050  # what beat tracking needs; loading at 44.1/48 kHz doubles the memory
HOP = 512
N_FFT = 2048
N_MELS = 128
# the onsets come out about one hop late against the true ones (measured on the synth: a
# kick on the beat is reported ~20-27 ms after it, as librosa reports it); move them back
BEAT_LATENCY = HOP / ANALYSIS_RATE
TEMPO_OCTAVE = (70.0, 140.0)  # BPM: the visual beat's speed, first folded into these
PULSE_WINDOW = 6.0  # seconds of onsets judged around a beat
PULSE_MIN = 0.3  # below: no beat there (a beatless intro, a break), the picture stays calm
# the tempo estimate: ~8 s of onsets autocorrelated, a log-normal prior (one octave wide)
# around 120 BPM, nothing over 320 BPM; how tightly the beats keep to it (librosa's defaults)
TEMPO_SECONDS = 8.0
TEMPO_PRIOR = 120.0
TEMPO_MAX = 320.0
TIGHTNESS = 100.0


@dataclass(frozen=True)
class BeatAnalysis:
    tempo: float  # BPM from the median beat interval (the tempogram's own is quantised)
    beats: list[float]  # seconds
    duration: float
    reels_start: float
    reels_end: float
    fingerprint: str


def warm() -> float:
    """Track the beats of a few seconds of clicks (what `doctor --warm` runs: numpy's and
    soundfile's first import). Returns the seconds it took."""
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
    resampler, the length rounded up), without librosa.
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


def analyse(path: str | os.PathLike, *, reels_seconds: float) -> BeatAnalysis:
    """Track beats in the audio at `path` (any file soundfile reads: WAV/FLAC/MP3).

    Also picks the strongest-energy window of `reels_seconds` (starting on a beat) and
    computes the duplicate-detection fingerprint from the same decoded samples.
    """
    import numpy as np

    from autoretto.pipeline.fingerprint import fingerprint

    samples, rate = load_mono(path)
    duration = len(samples) / rate
    print_of_audio = fingerprint(samples, rate)
    envelope = onset_strength(samples)
    # the tempo frame by frame (over ~8 s windows), so a tempo change is followed, folded
    # into one octave: a groove that reads as well at half or double speed must not flip
    # between the two from one bar to the next
    local = local_tempo(envelope)
    local = local / 2.0 ** np.floor(np.log2(local / TEMPO_OCTAVE[0]))
    # ... around the track's own median, so a tempo near the octave's edge stays on one side
    middle = float(np.median(local))
    local = local / 2.0 ** np.round(np.log2(local / middle))
    frames = track_beats(envelope, local)
    frames = [frame for frame in frames if has_pulse(envelope, int(frame), local)]
    times = np.asarray(frames, dtype=np.float64) * HOP / ANALYSIS_RATE - BEAT_LATENCY
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


def _mel_filters():
    """Slaney's mel filter bank (librosa's default): N_MELS triangles spaced evenly on
    his mel scale (linear to 1 kHz, logarithmic above) from 0 Hz to half the rate, each
    scaled to the same area. Shape (N_MELS, N_FFT // 2 + 1)."""
    import numpy as np

    linear_step = 200.0 / 3  # Hz per mel below 1 kHz
    log_step = np.log(6.4) / 27.0  # above it
    knee = 1000.0 / linear_step

    def to_mel(hz):
        hz = np.asarray(hz, dtype=np.float64)
        return np.where(hz >= 1000.0, knee + np.log(np.maximum(hz, 1e-9) / 1000.0) / log_step,
                        hz / linear_step)  # fmt: skip

    def to_hz(mel):
        return np.where(mel >= knee, 1000.0 * np.exp(log_step * (mel - knee)), mel * linear_step)

    edges = to_hz(np.linspace(to_mel(0.0), to_mel(ANALYSIS_RATE / 2), N_MELS + 2))
    bins = np.fft.rfftfreq(N_FFT, 1.0 / ANALYSIS_RATE)
    rising = (bins[None, :] - edges[:-2, None]) / np.diff(edges)[:-1, None]
    falling = (edges[2:, None] - bins[None, :]) / np.diff(edges)[1:, None]
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


def onset_strength(samples):
    """The onset strength per hop: the mel power spectrogram in dB (80 dB below its peak at
    most), its rise from one frame to the next (falls count 0), averaged over the bands.
    Frames are centred on their hop (the signal padded with zeros by half a window), and
    the envelope is shifted three frames later as librosa's is, so BEAT_LATENCY holds."""
    import numpy as np

    samples = np.asarray(samples, dtype=np.float32)
    half = N_FFT // 2
    padded = np.concatenate([np.zeros(half, np.float32), samples, np.zeros(half, np.float32)])
    count = 1 + len(samples) // HOP
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
    filters = _mel_filters()
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:count]
    mel = np.empty((count, N_MELS), dtype=np.float32)
    for first in range(0, count, 1024):  # ~8 MB of spectrum at a time
        spectrum = np.fft.rfft(frames[first : first + 1024] * window, axis=1)
        power = np.square(spectrum.real) + np.square(spectrum.imag)
        mel[first : first + 1024] = power @ filters.T
    decibels = 10.0 * np.log10(np.maximum(mel, 1e-10))
    decibels = np.maximum(decibels, decibels.max() - 80.0)
    rise = np.maximum(0.0, decibels[1:] - decibels[:-1]).mean(axis=1)
    envelope = np.zeros(count, dtype=np.float32)
    shift = 1 + N_FFT // (2 * HOP)
    envelope[shift:] = rise[: count - shift]
    return envelope


def local_tempo(envelope):
    """The tempo (BPM) at each frame: the autocorrelation of TEMPO_SECONDS of onsets
    around it (Hann-windowed, scaled to its largest lag), weighted by a log-normal prior
    one octave wide around TEMPO_PRIOR, nothing over TEMPO_MAX."""
    import numpy as np

    envelope = np.asarray(envelope, dtype=np.float64)
    count = len(envelope)
    width = int(int(TEMPO_SECONDS * ANALYSIS_RATE) // HOP)
    # the edges ramp down to zero rather than stopping dead
    padded = np.pad(envelope, width // 2, mode="linear_ramp", end_values=(0, 0))
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(width) / width)
    size = 1
    while size < 2 * width - 1:
        size *= 2
    lags = np.arange(width)
    with np.errstate(divide="ignore"):
        bpm = np.where(lags > 0, 60.0 * ANALYSIS_RATE / (HOP * np.maximum(lags, 1)), np.inf)
        prior = -0.5 * (np.log2(bpm) - np.log2(TEMPO_PRIOR)) ** 2
    prior[bpm >= TEMPO_MAX] = -np.inf
    best = np.empty(count, dtype=np.int64)
    frames = np.lib.stride_tricks.sliding_window_view(padded, width)[:count]
    for first in range(0, count, 2048):
        piece = frames[first : first + 2048] * window
        correlation = np.fft.irfft(np.abs(np.fft.rfft(piece, n=size, axis=1)) ** 2, n=size)
        correlation = correlation[:, :width]
        peak = np.abs(correlation).max(axis=1, keepdims=True)
        correlation = correlation / np.where(peak > 0, peak, 1.0)
        best[first : first + 2048] = np.argmax(np.log1p(1e6 * correlation) + prior, axis=1)
    return bpm[best]


def track_beats(envelope, bpm):
    """The frames of the beats: Ellis's dynamic programme over the onsets, each beat one
    period (from `bpm`, frame by frame) after the one before, give or take, the tighter the
    better (TIGHTNESS); weak beats at the ends are trimmed."""
    import numpy as np

    envelope = np.asarray(envelope, dtype=np.float64)
    count = len(envelope)
    if count == 0 or not envelope.any():
        return np.array([], dtype=np.int64)
    onsets = envelope / (envelope.std(ddof=1) + np.finfo(np.float64).tiny)
    period = np.round(ANALYSIS_RATE / HOP * 60.0 / np.asarray(bpm, dtype=np.float64))
    period = np.broadcast_to(period, (count,))
    # each frame's score: the onsets near it, weighted by a Gaussian a sixteenth of its
    # period wide
    score = np.empty(count)
    shapes = {}
    for value in np.unique(period):
        reach = int(value)
        offsets = np.arange(-reach, reach + 1)
        shape = np.exp(-0.5 * (offsets * 32.0 / value) ** 2)
        where = period == value
        # centred ("same"), also where the track is shorter than the shape
        score[where] = np.convolve(onsets, shape)[reach : reach + count][where]
        # the beat before frame i lies between half a period and two periods back; nearer
        # ones first, so that of two equal scores the nearer wins
        gaps = np.arange(int(np.round(value / 2)), 2 * reach + 1)
        shapes[value] = (gaps, -TIGHTNESS * (np.log(gaps) - np.log(value)) ** 2)
    threshold = 0.01 * score.max()
    total = np.empty(count)
    back = np.full(count, -1, dtype=np.int64)
    first_beat = True
    for index in range(count):
        gaps, penalty = shapes[period[index]]
        usable = int(np.searchsorted(gaps, index, side="right"))
        before = -1
        if usable:
            candidates = total[index - gaps[:usable]] + penalty[:usable]
            best = int(np.argmax(candidates))
            before = index - int(gaps[best])
            total[index] = score[index] + candidates[best]
        else:
            total[index] = score[index]
        if first_beat and score[index] < threshold:
            back[index] = -1
        else:
            back[index] = before
            first_beat = False
    # the last beat: the last local peak of the running score at least half the peaks' median
    peaks = np.zeros(count, dtype=bool)
    if count > 1:
        peaks[1:-1] = (total[1:-1] > total[:-2]) & (total[1:-1] >= total[2:])
        peaks[-1] = total[-1] > total[-2]
    last = count - 1
    if peaks.any():
        limit = 0.5 * float(np.median(total[peaks]))
        found = np.flatnonzero(peaks & (total >= limit))
        if len(found):
            last = int(found[-1])
    beats = []
    while last >= 0:
        beats.append(last)
        last = int(back[last])
    beats = np.array(beats[::-1], dtype=np.int64)
    # weak beats at either end go: those where the score is under half the RMS of the
    # beats' smoothed scores (as librosa takes it: the smoothing's tail of two included)
    smoothed = np.convolve(score[beats], np.hanning(5))[2 : count + 2]
    floor = 0.5 * float(np.sqrt(np.mean(np.square(smoothed))))
    strong = np.flatnonzero(score > floor)
    if not len(strong):
        return np.array([], dtype=np.int64)
    return beats[(beats >= strong[0]) & (beats <= strong[-1])]


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
