"""The make's own beat tracker (numpy) held to librosa's, the library it replaced in the
make: the same onset envelope, the same tempo frame by frame, the same beats, on the demo
synth and on grooves made to trip a tracker (a tempo change, swing, a beatless intro and
outro under rain, half or double time, noise with no beat at all).

librosa stays here as the independent measure (the `test` extra); the make does not
import it (tests/test_health.py checks what a make's process loads).
"""

import numpy as np
import pytest

from autoretto.pipeline import beats as tracker
from autoretto.pipeline.synth import render_synth
from tests.pipeline.test_beats import CASES
from tests.pipeline.tracks import drums, pink_noise

librosa = pytest.importorskip("librosa")


def _mono(stereo: np.ndarray, rate: int) -> np.ndarray:
    import soxr

    mono = np.asarray(stereo, dtype=np.float32).mean(axis=1)
    return soxr.resample(mono, rate, tracker.ANALYSIS_RATE, quality="soxr_hq").astype(np.float32)


def _folded(local):
    """analyse()'s octave folding, applied to librosa's tempo as to ours."""
    local = local / 2.0 ** np.floor(np.log2(local / tracker.TEMPO_OCTAVE[0]))
    return local / 2.0 ** np.round(np.log2(local / float(np.median(local))))


def _tracks():
    for case, shape in CASES.items():
        yield case, lambda shape=shape: _mono(drums(**shape)[0], 48000)
    yield "pink noise, no beat", lambda: _mono(pink_noise(30.0), 48000)


def _synth(tmp_path, seed):
    path = tmp_path / "synth.wav"
    render_synth(path, seed=seed, seconds=60)
    return tracker.load_mono(path)[0]


TRACKS = dict(_tracks())


@pytest.mark.parametrize("name", [*TRACKS, "synth seed 42", "synth seed 7"])
def test_the_beats_are_librosas_frame_for_frame(name, tmp_path):
    if name.startswith("synth"):
        samples = _synth(tmp_path, int(name.rsplit(" ", 1)[1]))
    else:
        samples = TRACKS[name]()
    rate, hop = tracker.ANALYSIS_RATE, tracker.HOP

    ours = tracker.onset_strength(samples)
    theirs = librosa.onset.onset_strength(y=samples, sr=rate, hop_length=hop)
    assert ours.shape == theirs.shape
    assert np.allclose(ours, theirs, rtol=1e-4, atol=1e-4 * float(theirs.max()))

    their_tempo = librosa.feature.tempo(
        onset_envelope=theirs, sr=rate, hop_length=hop, aggregate=None
    )
    assert np.array_equal(tracker.local_tempo(theirs), their_tempo)
    assert np.array_equal(tracker.local_tempo(ours), their_tempo)

    bpm = _folded(their_tempo)
    _, their_beats = librosa.beat.beat_track(
        onset_envelope=theirs, sr=rate, hop_length=hop, bpm=bpm
    )
    assert list(tracker.track_beats(theirs, bpm)) == list(their_beats)
    assert list(tracker.track_beats(ours, _folded(tracker.local_tempo(ours)))) == list(their_beats)


def test_silence_has_no_beats():
    silence = np.zeros(tracker.ANALYSIS_RATE * 10, dtype=np.float32)
    envelope = tracker.onset_strength(silence)
    assert not envelope.any()
    assert len(tracker.track_beats(envelope, np.full(len(envelope), 120.0))) == 0


@pytest.mark.filterwarnings("ignore:n_fft=2048 is too large")  # librosa's, on 0.3 s
@pytest.mark.parametrize("seconds", [0.3, 1.5])
def test_a_track_shorter_than_a_beat_s_reach_is_tracked_as_librosa_tracks_it(seconds):
    # shorter than the score's Gaussian (two periods): the make must reach its duration gate
    rate = tracker.ANALYSIS_RATE
    clicks = np.zeros(int(seconds * rate), dtype=np.float32)
    clicks[:: rate // 4] = 0.9
    envelope = librosa.onset.onset_strength(y=clicks, sr=rate, hop_length=tracker.HOP)
    bpm = np.full(len(envelope), 120.0)
    _, theirs = librosa.beat.beat_track(
        onset_envelope=envelope, sr=rate, hop_length=tracker.HOP, bpm=bpm
    )
    assert list(tracker.track_beats(envelope, bpm)) == list(theirs)
