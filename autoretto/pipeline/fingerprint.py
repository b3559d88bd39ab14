"""A compact audio fingerprint for spotting a near-duplicate of a past release.

Every quarter second, 16 bits: the signs of how the energy differences between 17
adjacent log-spaced bands (200-4000 Hz), over a 1.5 s window, change from the previous
frame. Such bits survive re-encoding, gain changes and small shifts in time (the long
window overlaps itself); unrelated music agrees on about half of them, a re-encoded copy
on 85% or more. Stored as "fp1:" + base64: about 1.9 KB for three minutes.
"""

from __future__ import annotations

import base64

PREFIX = "fp1:"
FRAME_SECONDS = 0.25
WINDOW = 32768
BANDS = 17
MIN_OVERLAP_FRAMES = 40  # 10 s of audio in common before two tracks are compared


def fingerprint(samples, rate: int) -> str:
    """Fingerprint mono float `samples` at `rate` Hz; "" when there is too little audio."""
    import numpy as np

    hop = int(rate * FRAME_SECONDS)
    if len(samples) < WINDOW + hop:
        return ""
    count = 1 + (len(samples) - WINDOW) // hop
    window = np.hanning(WINDOW).astype(np.float32)
    edges = np.geomspace(200, 4000, BANDS + 1)
    bins = np.fft.rfftfreq(WINDOW, 1 / rate)
    band_of_bin = np.digitize(bins, edges) - 1
    energies = np.zeros((count, BANDS), dtype=np.float64)
    for start in range(0, count, 64):  # a few frames at a time keeps memory flat
        stop = min(count, start + 64)
        frames = np.stack([samples[i * hop : i * hop + WINDOW] for i in range(start, stop)])
        power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
        for band in range(BANDS):
            energies[start:stop, band] = power[:, band_of_bin == band].sum(axis=1)
    if not energies.any():
        return ""
    differences = energies[:, :-1] - energies[:, 1:]
    bits = (differences[1:] - differences[:-1]) > 0
    words = (bits * (1 << np.arange(16, dtype=np.uint32))).sum(axis=1).astype(">u2")
    return PREFIX + base64.b64encode(words.tobytes()).decode("ascii")


def _decode(value: str):
    import numpy as np

    if not isinstance(value, str) or not value.startswith(PREFIX):
        return None
    try:
        raw = base64.b64decode(value[len(PREFIX) :], validate=True)
    except ValueError:
        return None
    if len(raw) % 2:
        return None
    return np.frombuffer(raw, dtype=">u2").astype(np.uint16)


def similarity(first: str, second: str) -> float:
    """Best share of agreeing bits over every alignment of the two (0.0-1.0).

    ~0.5 for unrelated audio, ~1.0 for the same audio. 0.0 when either is unusable or
    they have less than MIN_OVERLAP_FRAMES in common.
    """
    import numpy as np

    a, b = _decode(first), _decode(second)
    if a is None or b is None or not len(a) or not len(b):
        return 0.0
    minimum = min(MIN_OVERLAP_FRAMES, len(a), len(b))
    best = 0.0
    for offset in range(-(len(b) - minimum), len(a) - minimum + 1):
        a_start, b_start = max(0, offset), max(0, -offset)
        length = min(len(a) - a_start, len(b) - b_start)
        if length < minimum:
            continue
        xor = a[a_start : a_start + length] ^ b[b_start : b_start + length]
        differing = int(np.unpackbits(xor.view(np.uint8)).sum())
        agreement = 1.0 - differing / (16 * length)
        best = max(best, agreement)
    return best
