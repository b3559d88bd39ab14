"""Generated test music: mixes of known shape, loudness and rhythm, in any file format.

Every generator returns float64 samples (frames x channels) at `rate`; `write_track` puts
them in a file of the asked format (soundfile for PCM/FLAC/AIFF/Ogg, the bundled ffmpeg for
the lossy codecs). Loudness is set with pyloudnorm, the test suite's own meter.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyloudnorm
import soundfile

from autoretto.ffmpeg import run_ffmpeg

RATE = 48000


def loudness(samples: np.ndarray, rate: int) -> float:
    """Integrated loudness (ITU-R BS.1770-4) of float samples, by pyloudnorm."""
    return float(pyloudnorm.Meter(rate).integrated_loudness(samples))


def true_peak(samples: np.ndarray, oversample: int = 4, block: int = 480000) -> float:
    """dBTP: the sample peak after 4x oversampling (BS.1770-4 Annex 2), a block at a time
    (with a margin each side, so the filter sees the samples around every block)."""
    from scipy.signal import resample_poly

    margin, peak = 256, 0.0
    for start in range(0, len(samples), block):
        low = max(0, start - margin)
        piece = resample_poly(samples[low : start + block + margin], oversample, 1, axis=0)
        inner = piece[(start - low) * oversample : (start - low + block) * oversample]
        peak = max(peak, float(np.max(np.abs(inner))))
    return float(20 * np.log10(peak + 1e-12))


def crest_factor(samples: np.ndarray) -> float:
    """Peak over RMS in dB."""
    rms = np.sqrt(np.mean(np.square(samples)))
    return float(20 * np.log10(np.max(np.abs(samples)) / rms))


def _kick(rate: int, decay: float = 0.12) -> np.ndarray:
    t = np.arange(int(0.3 * rate)) / rate
    phase = 2 * np.pi * (50 * t + 100 * 0.03 * (1 - np.exp(-t / 0.03)))
    return np.sin(phase) * np.exp(-t / decay)


def _click(rate: int) -> np.ndarray:
    """A short, bright percussive hit (a rim shot): 25 ms."""
    rng = np.random.default_rng(3)
    t = np.arange(int(0.025 * rate)) / rate
    return (np.sin(2 * np.pi * 1800 * t) + 0.5 * rng.standard_normal(len(t))) * np.exp(-t / 0.006)


def _pad(seconds: float, rate: int, root: float = 110.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    chord = sum(np.sin(2 * np.pi * root * ratio * t + ratio) for ratio in (1, 1.2, 1.5, 2, 3))
    wobble = 0.8 + 0.2 * np.sin(2 * np.pi * 0.25 * t)
    return chord * wobble / 5


def _place(buffer: np.ndarray, when: float, sound: np.ndarray, rate: int, gain=1.0) -> None:
    start = round(when * rate)
    if start >= len(buffer):
        return
    end = min(len(buffer), start + len(sound))
    buffer[start:end] += gain * sound[: end - start]


def _stereo(mono: np.ndarray, width: float = 0.1) -> np.ndarray:
    delayed = np.roll(mono, 7)
    return np.stack([mono, (1 - width) * mono + width * delayed], axis=1)


def kick_and_pad(seconds: float, *, rate: int = RATE, bpm: float = 120.0) -> np.ndarray:
    """The issue's track: a kick on every beat near full scale over a quiet pad.

    A normal dynamic mix: true peak about -1.5 dBTP, integrated around -20 LUFS, which
    no plain gain brings to -14 LUFS under a -1 dBTP ceiling.
    """
    mono = 0.012 * _pad(seconds, rate)
    kick = _kick(rate, decay=0.02)
    for index in range(int(seconds * bpm / 60) + 1):
        _place(mono, index * 60 / bpm, kick, rate, 0.8)
    stereo = _stereo(mono)
    return stereo * 10 ** (-1.5 / 20) / 10 ** (true_peak(stereo[: rate * 4]) / 20)


def very_dynamic(seconds: float, *, rate: int = RATE) -> np.ndarray:
    """Sparse bright hits at full scale over a faint pad: crest factor above 20 dB."""
    mono = 0.12 * _pad(seconds, rate, root=220.0)
    click = _click(rate)
    for index in range(int(seconds / 1.5) + 1):
        _place(mono, 0.25 + index * 1.5, click, rate, 1.0)
    stereo = _stereo(mono)
    return stereo * 0.95 / np.max(np.abs(stereo))


def brick_walled(seconds: float, *, rate: int = RATE, integrated: float = -6.0) -> np.ndarray:
    """A dense mix driven into saturation: peaks at -0.3 dBFS, `integrated` LUFS."""
    rng = np.random.default_rng(5)
    t = np.arange(int(seconds * rate)) / rate
    saw = sum(((t * f * k) % 1.0 - 0.5) / k for f in (55.0, 82.4, 110.0) for k in (1, 2))
    mono = 0.6 * saw + 0.2 * rng.standard_normal(len(t))
    kick = _kick(rate)
    for index in range(int(seconds * 2) + 1):
        _place(mono, index * 0.5, kick, rate, 2.0)
    stereo = _stereo(mono)
    excerpt = stereo[: 8 * rate]  # the mix repeats: its first 8 s judge the drive
    low, high = 0.5, 200.0  # the drive that lands on the loudness asked for
    for _ in range(16):
        drive = np.sqrt(low * high)
        shaped = np.tanh(excerpt * drive)
        scale = 10 ** (-0.3 / 20) / np.max(np.abs(shaped))
        if loudness(shaped * scale, rate) < integrated:
            low = drive
        else:
            high = drive
    shaped = np.tanh(stereo * drive)
    return shaped * 10 ** (-0.3 / 20) / np.max(np.abs(shaped))


def pink_noise(seconds: float, *, rate: int = RATE) -> np.ndarray:
    """Stationary pink noise (only noise: no music in it)."""
    rng = np.random.default_rng(9)
    count = int(seconds * rate)
    spectrum = np.fft.rfft(rng.standard_normal((count, 2)), axis=0)
    spectrum /= np.sqrt(np.maximum(np.arange(spectrum.shape[0]), 1))[:, None]
    noise = np.fft.irfft(spectrum, n=count, axis=0)
    return 0.3 * noise / np.max(np.abs(noise))


def at_loudness(samples: np.ndarray, rate: int, integrated: float) -> np.ndarray:
    """`samples` with a gain that makes them `integrated` LUFS (pyloudnorm)."""
    return samples * 10 ** ((integrated - loudness(samples, rate)) / 20)


def surround(stereo: np.ndarray) -> np.ndarray:
    """A 5.1 mix (FL FR FC LFE BL BR) built from a stereo one."""
    left, right = stereo[:, 0], stereo[:, 1]
    centre = 0.5 * (left + right)
    return np.stack([left, right, centre, 0.3 * centre, 0.5 * left, 0.5 * right], axis=1)


# suffix -> how to write it: (soundfile format, subtype) or ffmpeg codec arguments
FORMATS = {
    "wav16": (".wav", ("WAV", "PCM_16")),
    "wav8": (".wav", ("WAV", "PCM_U8")),
    "wav24": (".wav", ("WAV", "PCM_24")),
    "wavfloat": (".wav", ("WAV", "FLOAT")),
    "flac": (".flac", ("FLAC", "PCM_16")),
    "aiff": (".aiff", ("AIFF", "PCM_16")),
    "aif": (".aif", ("AIFF", "PCM_24")),
    "mp3": (".mp3", ["-c:a", "libmp3lame", "-b:a", "192k"]),
    "ogg": (".ogg", ["-c:a", "libvorbis", "-q:a", "6"]),
    "opus": (".opus", ["-c:a", "libopus", "-b:a", "160k"]),
    "m4a": (".m4a", ["-c:a", "aac", "-b:a", "192k"]),
}


def write_track(
    directory: Path, name: str, samples: np.ndarray, *, rate: int = RATE, kind: str = "wav16"
) -> Path:
    """Write `samples` as `directory/name<suffix>` in the format `kind` (see FORMATS)."""
    suffix, how = FORMATS[kind]
    path = Path(directory) / f"{name}{suffix}"
    if isinstance(how, tuple):
        soundfile.write(str(path), samples, rate, format=how[0], subtype=how[1])
        return path
    staging = path.with_name(path.stem + ".staging.wav")
    soundfile.write(str(staging), samples, rate, subtype="FLOAT")
    run_ffmpeg(["-v", "error", "-y", "-i", str(staging), *how, str(path)])
    staging.unlink()
    return path


def write_long_track(path: Path, make_loop, seconds: float, *, rate: int = RATE) -> Path:
    """A `seconds`-long FLAC made of one 32-second loop from `make_loop(seconds, rate=)`.

    Written a loop at a time, so a 20-minute track never sits in memory whole. 32 s holds
    whole cycles of the generators' pads and beats, so the seams do not click.
    """
    loop = make_loop(32.0, rate=rate)
    total = round(seconds * rate)
    with soundfile.SoundFile(
        str(path), "w", samplerate=rate, channels=loop.shape[1], format="FLAC", subtype="PCM_16"
    ) as handle:
        written = 0
        while written < total:
            piece = loop[: total - written]
            handle.write(piece)
            written += len(piece)
    return path


def _hat(rate: int) -> np.ndarray:
    rng = np.random.default_rng(4)
    t = np.arange(int(0.04 * rate)) / rate
    return np.diff(rng.standard_normal(len(t) + 1)) * np.exp(-t / 0.01)


def _snare(rate: int) -> np.ndarray:
    rng = np.random.default_rng(6)
    t = np.arange(int(0.15 * rate)) / rate
    return (0.6 * rng.standard_normal(len(t)) + np.sin(2 * np.pi * 190 * t)) * np.exp(-t / 0.05)


def drums(
    sections: list[tuple[float, float]],
    *,
    rate: int = RATE,
    swing: float = 0.0,
    intro: float = 0.0,
    outro: float = 0.0,
    half_time: bool = False,
    texture: float = 0.0,
) -> tuple[np.ndarray, list[float]]:
    """A drum groove over a pad; returns (samples, the true beat times).

    `sections` are (seconds, bpm) played one after the other (a tempo change between
    them). Kick on beats 1 and 3, snare on 2 and 4, hats on the eighths, the off-beat eighth
    late by `swing` of half a beat (0.33: triplet swing). `intro` and `outro` seconds of
    the pad alone (no beat) before and after. `half_time`: kick on 1, snare on 3 only, hats
    on the quarters, so the groove reads as well at half the tempo. `texture`: the level of
    a rain-like noise with random crackles under the whole track (what a tracker may take
    for beats where there are none).
    """
    groove = sum(seconds for seconds, _ in sections)
    total = intro + groove + outro
    mono = 0.05 * _pad(total + 0.5, rate)[: int(total * rate)]
    kick, snare, hat = _kick(rate, decay=0.08), _snare(rate), _hat(rate)
    beats: list[float] = []
    when = intro
    for seconds, bpm in sections:
        beat = 60.0 / bpm
        for index in range(round(seconds / beat)):
            at = when + index * beat
            beats.append(round(at, 4))
            step = index % 4
            if half_time:
                if step == 0:
                    _place(mono, at, kick, rate, 0.8)
                if step == 2:
                    _place(mono, at, snare, rate, 0.5)
                _place(mono, at, hat, rate, 0.15)
                continue
            if step in (0, 2):
                _place(mono, at, kick, rate, 0.8)
            else:
                _place(mono, at, snare, rate, 0.5)
            _place(mono, at, hat, rate, 0.15)
            _place(mono, at + beat / 2 * (1 + swing), hat, rate, 0.1)
        when += round(seconds / beat) * beat
    if texture:
        rng = np.random.default_rng(12)
        mono += texture * pink_noise(total, rate=rate)[: len(mono), 0]
        crackle = _click(rate) * 0.5
        for at in rng.uniform(0, total, int(total * 3)):
            _place(mono, float(at), crackle, rate, texture * rng.uniform(0.5, 2.0))
    stereo = _stereo(mono)
    return stereo * 0.9 / np.max(np.abs(stereo)), beats


def cover_picture(colour: tuple[int, int, int], *, kind: str = "PNG", size: int = 96) -> bytes:
    """A square picture of one colour, as a PNG or JPEG file's bytes: cover art to embed."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format=kind)
    return buffer.getvalue()


def tag_track(
    path: Path, *, title: str, artist: str, picture: bytes | None = None, mime: str = "image/png"
) -> Path:
    """Write `title`, `artist` and (given) a front-cover `picture` into the tags of the track at
    `path`, the way each format keeps them: ID3 (mp3), MP4 atoms (m4a), Vorbis comments with a
    PICTURE block (flac) or a METADATA_BLOCK_PICTURE comment (ogg, opus)."""
    import base64

    from mutagen.flac import FLAC, Picture

    def flac_picture() -> Picture:
        block = Picture()
        block.type, block.mime, block.data = 3, mime, picture
        return block

    suffix = Path(path).suffix.lower()
    if suffix == ".mp3":
        from mutagen.id3 import APIC, ID3, TIT2, TPE1

        tags = ID3()
        tags.add(TIT2(encoding=3, text=title))
        tags.add(TPE1(encoding=3, text=artist))
        if picture:
            tags.add(APIC(encoding=3, mime=mime, type=3, desc="cover", data=picture))
        tags.save(str(path))
    elif suffix == ".m4a":
        from mutagen.mp4 import MP4, MP4Cover

        audio = MP4(str(path))
        audio["\xa9nam"], audio["\xa9ART"] = [title], [artist]
        if picture:
            form = MP4Cover.FORMAT_PNG if mime == "image/png" else MP4Cover.FORMAT_JPEG
            audio["covr"] = [MP4Cover(picture, imageformat=form)]
        audio.save()
    elif suffix == ".flac":
        audio = FLAC(str(path))
        audio["title"], audio["artist"] = [title], [artist]
        if picture:
            audio.add_picture(flac_picture())
        audio.save()
    elif suffix in (".ogg", ".opus"):
        from mutagen.oggopus import OggOpus
        from mutagen.oggvorbis import OggVorbis

        audio = (OggOpus if suffix == ".opus" else OggVorbis)(str(path))
        audio["TITLE"], audio["ARTIST"] = [title], [artist]
        if picture:
            encoded = base64.b64encode(flac_picture().write()).decode("ascii")
            audio["METADATA_BLOCK_PICTURE"] = [encoded]
        audio.save()
    else:
        raise ValueError(f"no tags written for {suffix}")
    return path
