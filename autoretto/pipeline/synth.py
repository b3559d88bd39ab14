"""A small built-in synthesiser: a lofi-ish loop with a steady, known tempo.

It is our own deterministic algorithm (drum one-shots, a bass line, pad chords and a
pentatonic melody, all chosen from the seed), not a generative model, so a synth track is
not "AI-generated". It exists so the demo and the tests need nothing external.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")
_MINOR = (0, 2, 3, 5, 7, 8, 10)
_PROGRESSIONS = ((0, 5, 3, 4), (0, 3, 4, 4), (0, 5, 2, 6), (0, 6, 5, 4), (0, 3, 6, 4))
SAMPLE_RATE = 44100


@dataclass(frozen=True)
class SynthTrack:
    path: str
    bpm: float
    key: str
    seconds: float
    first_beat: float  # seconds; beat k sounds at first_beat + k * 60 / bpm


def _frequency(midi_note: float) -> float:
    return 440.0 * 2 ** ((midi_note - 69) / 12)


def render_synth(
    path: str | os.PathLike, *, seed: int, seconds: float, bpm: float | None = None
) -> SynthTrack:
    """Write a 16-bit stereo WAV of `seconds` to `path` and describe it.

    The tempo is chosen from `seed` (80-125 BPM) unless `bpm` is given; a kick lands
    exactly on every beat, the first at 0 s.
    """
    import numpy as np
    import soundfile

    rng = np.random.default_rng(seed)
    if bpm is None:
        bpm = float(rng.integers(80, 126))
    root = int(rng.integers(0, 12))
    progression = _PROGRESSIONS[int(rng.integers(0, len(_PROGRESSIONS)))]
    rate = SAMPLE_RATE
    total = round(seconds * rate)
    # float32 and in place: a long track's buffers stay small (a 180 s one: 2 x 32 MB)
    left = np.zeros(total + rate, dtype=np.float32)
    right = np.zeros_like(left)
    beat = 60.0 / bpm

    def add(buffer, start_seconds, wave, gain=1.0):
        start = round(start_seconds * rate)
        if start >= total:
            return
        end = min(start + len(wave), len(buffer))
        buffer[start:end] += gain * wave[: end - start]

    # One-shots, made once.
    t = np.arange(int(0.35 * rate)) / rate
    kick_phase = 2 * np.pi * (45 * t + (150 - 45) * 0.04 * (1 - np.exp(-t / 0.04)))
    kick = np.sin(kick_phase) * np.exp(-t / 0.18)
    kick[: int(0.002 * rate)] *= np.linspace(0, 1, int(0.002 * rate))
    t_snare = np.arange(int(0.2 * rate)) / rate
    noise = rng.standard_normal(len(t_snare))
    noise = np.diff(noise, prepend=0.0)  # crude high-pass
    snare = (0.5 * noise + 0.6 * np.sin(2 * np.pi * 185 * t_snare)) * np.exp(-t_snare / 0.07)
    t_hat = np.arange(int(0.05 * rate)) / rate
    hat = np.diff(rng.standard_normal(len(t_hat)), prepend=0.0)
    hat = np.convolve(hat, np.ones(3) / 3, mode="same")  # take the edge off the top end
    hat *= np.exp(-t_hat / 0.012) * 0.2

    swing = float(rng.uniform(0.0, 0.06)) * beat
    beats_total = int(np.ceil(seconds / beat)) + 1
    for index in range(beats_total):
        start = index * beat
        add(left, start, kick, 0.9)
        add(right, start, kick, 0.9)
        if index % 4 in (1, 3):
            add(left, start, snare, 0.35)
            add(right, start, snare, 0.3)
        for half, pan in ((0.0, 0.6), (0.5 * beat + swing, 0.4)):
            gain = 0.5 + 0.5 * rng.random()
            add(left, start + half, hat, gain * pan)
            add(right, start + half, hat, gain * (1 - pan))

    bar = 4 * beat
    bars = int(np.ceil(seconds / bar)) + 1
    t_bar = np.arange(int(bar * rate)) / rate
    envelope = np.minimum(1.0, t_bar / 0.4) * np.minimum(1.0, (bar - t_bar) / 0.3)
    pentatonic = (0, 3, 5, 7, 10)
    melody_notes = 60 + root + np.array(pentatonic + tuple(12 + step for step in pentatonic))
    t_note = np.arange(int(0.9 * beat * rate)) / rate
    note_envelope = np.exp(-t_note / (0.35 * beat)) * np.minimum(1.0, t_note / 0.01)
    # a chord's pad and bass, and a note's wave, are the same each time they come back:
    # computed once (the progression has four chords), added where they play
    pads: dict[int, tuple] = {}
    notes: dict[float, object] = {}
    for index in range(bars):
        degree = progression[index % len(progression)]
        chord_root = 48 + root + _MINOR[degree]
        if degree not in pads:
            chord = [
                chord_root
                + _MINOR[(degree + step) % 7]
                - _MINOR[degree]
                + (12 if (degree + step) >= 7 else 0)
                for step in (0, 2, 4)
            ]
            pad = np.zeros_like(t_bar)
            for note in chord:
                for detune in (-0.08, 0.08):
                    pad += np.sin(2 * np.pi * _frequency(note + 12 + detune) * t_bar)
            pad *= envelope * 0.045
            bass_frequency = _frequency(chord_root - 12)
            t_bass = np.arange(int(0.9 * beat * rate)) / rate
            bass = np.sin(2 * np.pi * bass_frequency * t_bass)
            bass += 0.3 * np.sin(4 * np.pi * bass_frequency * t_bass)
            bass *= np.exp(-t_bass / (0.6 * beat)) * np.minimum(1.0, t_bass / 0.005)
            pads[degree] = (pad, np.roll(pad, int(0.012 * rate)), bass)
        pad, pad_right, bass = pads[degree]
        add(left, index * bar, pad)
        add(right, index * bar, pad_right)
        for hit in (0, 2, 2.5):
            add(left, index * bar + hit * beat, bass, 0.3)
            add(right, index * bar + hit * beat, bass, 0.3)
        for eighth in range(8):
            if rng.random() < 0.45:
                note = float(rng.choice(melody_notes))
                if note not in notes:
                    wave = np.sin(2 * np.pi * _frequency(note) * t_note)
                    wave += 0.2 * np.sin(6 * np.pi * _frequency(note) * t_note)
                    notes[note] = wave * note_envelope
                wave = notes[note]
                when = index * bar + eighth * beat / 2 + (swing if eighth % 2 else 0.0)
                add(left, when, wave, 0.09)
                add(right, when, wave, 0.13)

    stereo = np.empty((total, 2), dtype=np.float32)
    stereo[:, 0], stereo[:, 1] = left[:total], right[:total]
    del left, right
    stereo *= 1.2
    np.tanh(stereo, out=stereo)
    stereo /= np.tanh(1.2)
    fade = min(total, int(0.5 * rate))
    if fade:
        stereo[-fade:] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)[:, None]
    peak = float(np.max(np.abs(stereo))) or 1.0
    stereo *= 10 ** (-3 / 20) / peak
    path = Path(path)
    soundfile.write(str(path), stereo, rate, subtype="PCM_16", format="WAV")
    return SynthTrack(str(path), float(bpm), f"{NOTE_NAMES[root]} minor", seconds, 0.0)
