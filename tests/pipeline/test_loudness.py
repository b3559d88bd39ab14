"""Real music in: every shape and format of track reaches the loudness target, or a named
gate refuses it naming the file.

The published audio is measured by two meters: ffmpeg's (what the gates use) and
pyloudnorm's (ITU-R BS.1770-4, independent of ffmpeg), with the true peak taken at 4x
oversampling by scipy. Most cases test the audio stage (decode, loudness, AAC, gates) on
its own; a few run a whole make and measure the audio inside the rendered video.
"""

import numpy as np
import pytest
import soundfile

from autoretto.pipeline import make_episode
from autoretto.pipeline.audio import decode_to_wav, measure
from autoretto.pipeline.make import audio_stage_gates
from tests.pipeline import tracks
from tests.pipeline.tracks import (
    at_loudness,
    brick_walled,
    crest_factor,
    kick_and_pad,
    loudness,
    pink_noise,
    surround,
    true_peak,
    very_dynamic,
    write_track,
)

TARGET, PEAK_MAX, TOLERANCE = -14.0, -1.0, 1.0
SECONDS = 12.0


def mono(samples):
    return samples.mean(axis=1, keepdims=True)


# name: (samples at `rate`, the file format, rate)
CASES = {
    "the issue's kick and pad, WAV": (lambda: kick_and_pad(SECONDS), "wav16", 48000),
    "very dynamic (crest > 20 dB)": (lambda: very_dynamic(SECONDS), "wav16", 48000),
    "brick-walled at -6 LUFS": (lambda: brick_walled(SECONDS), "wav24", 48000),
    "very quiet (-40 LUFS)": (
        lambda: at_loudness(kick_and_pad(SECONDS), 48000, -40.0),
        "wav24",
        48000,
    ),
    "mono": (lambda: mono(kick_and_pad(SECONDS)), "wav16", 48000),
    "5.1": (lambda: surround(kick_and_pad(SECONDS)), "wav24", 48000),
    "8-bit": (lambda: kick_and_pad(SECONDS), "wav8", 44100),
    "96 kHz / 24-bit": (lambda: kick_and_pad(SECONDS, rate=96000), "wav24", 96000),
    "32-bit float WAV": (lambda: very_dynamic(SECONDS), "wavfloat", 48000),
    "FLAC": (lambda: kick_and_pad(SECONDS, rate=44100), "flac", 44100),
    "MP3": (lambda: kick_and_pad(SECONDS, rate=44100), "mp3", 44100),
    "Ogg Vorbis": (lambda: brick_walled(SECONDS), "ogg", 48000),
    "Opus": (lambda: very_dynamic(SECONDS), "opus", 48000),
    "M4A/AAC": (lambda: kick_and_pad(SECONDS, rate=44100), "m4a", 44100),
    "AIFF": (lambda: kick_and_pad(SECONDS, rate=44100), "aiff", 44100),
    "10 seconds": (lambda: kick_and_pad(10.0), "wav16", 48000),
}


def run_audio_stage(path, settings, workdir):
    """What a make does with a folder track up to the audio gates."""
    workdir.mkdir()
    duration = decode_to_wav(path, workdir / "source.wav")
    source = {"audio": "folder", "track": str(path), "duration": duration}
    return audio_stage_gates(settings, source, workdir)


def decoded(path):
    """Float samples of any media file's audio, decoded by ffmpeg, and their rate."""
    wav = path.with_name(path.stem + ".check.wav")
    decode_to_wav(path, wav)
    samples, rate = soundfile.read(str(wav), dtype="float64")
    wav.unlink()
    return samples, rate


def assert_on_target(path, *, oversampled_peak=True, by_ffmpeg=None):
    """The audio of `path` is at the target by both meters, its true peak under the limit (by
    ffmpeg, and by our own 4x oversampling unless `oversampled_peak` is False). `by_ffmpeg`:
    ffmpeg's measure of that very file when the make already took it."""
    samples, rate = decoded(path)
    independent = loudness(samples, rate)
    by_ffmpeg = by_ffmpeg or measure(path)
    assert abs(independent - TARGET) <= TOLERANCE, independent
    assert abs(by_ffmpeg.integrated - TARGET) <= TOLERANCE, by_ffmpeg
    assert abs(independent - by_ffmpeg.integrated) <= 0.3
    assert by_ffmpeg.true_peak <= PEAK_MAX
    if oversampled_peak:
        assert true_peak(samples) <= PEAK_MAX + 0.15


def test_the_generated_tracks_have_the_shape_they_claim():
    rate = 48000
    issue = kick_and_pad(SECONDS)
    assert -21 < loudness(issue, rate) < -17 and -1.7 < true_peak(issue) < -1.3
    assert crest_factor(very_dynamic(SECONDS)) > 20
    assert loudness(brick_walled(SECONDS), rate) == pytest.approx(-6.0, abs=0.1)
    assert loudness(at_loudness(issue, rate, -40.0), rate) == pytest.approx(-40.0, abs=0.01)
    # the issue's track: no plain gain gets it to -14 LUFS under -1 dBTP
    assert true_peak(issue) + (TARGET - loudness(issue, rate)) > PEAK_MAX + 2


@pytest.mark.parametrize("case", list(CASES))
def test_every_track_reaches_the_target(case, tmp_path, small_settings):
    make, kind, rate = CASES[case]
    path = write_track(tmp_path, "song", make(), rate=rate, kind=kind)
    workdir = tmp_path / "episode"
    _measured, _final, gates = run_audio_stage(path, small_settings(min_seconds=5), workdir)
    assert [gate.name for gate in gates if not gate.passed] == [], [g.reason for g in gates]
    assert_on_target(workdir / "audio.m4a")
    info = soundfile.info(str(workdir / "source.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (rate, 2, "FLOAT")


def test_the_issues_track_goes_through_the_limiter(tmp_path, small_settings):
    path = write_track(tmp_path, "issue", kick_and_pad(SECONDS))
    measured, _final, gates = run_audio_stage(path, small_settings(min_seconds=5), tmp_path / "e")
    assert measured["normalise"]["method"] == "limiter"
    assert measured["normalise"]["gain_db"] > TARGET - measured["loudness"]["integrated"]
    assert all(gate.passed for gate in gates)


def test_a_quiet_track_with_headroom_only_gets_a_gain(tmp_path, small_settings):
    quiet = at_loudness(brick_walled(SECONDS), 48000, -30.0)  # true peak about -23 dBTP
    path = write_track(tmp_path, "quiet", quiet, kind="wavfloat")
    measured, _final, _gates = run_audio_stage(path, small_settings(min_seconds=5), tmp_path / "e")
    assert measured["normalise"]["method"] == "gain"
    assert measured["normalise"]["gain_db"] == pytest.approx(16.0, abs=0.3)
    assert_on_target(tmp_path / "e" / "audio.m4a")


def _square(seconds, rate=48000):
    t = np.arange(int(seconds * rate)) / rate
    wave = np.clip(4 * np.sin(2 * np.pi * 110 * t), -1, 1)
    return np.stack([wave, wave], axis=1)


# name: (samples, what the first failing gate is, words of its reason)
REFUSALS = {
    "silence": (lambda: np.zeros((48000 * 8, 2)), "silence", "is silent from start to end"),
    "only noise": (lambda: pink_noise(8), "noise", "is only noise"),
    "only clipping": (lambda: _square(8), "clipping", "is clipped"),
    "shorter than the minimum": (lambda: kick_and_pad(10.0), "duration", "is 10.0 s, shorter"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_what_cannot_be_fixed_is_refused_by_a_named_gate(case, tmp_path, small_settings):
    make, gate_name, words = REFUSALS[case]
    path = write_track(tmp_path, "bad track", make())
    settings = small_settings(min_seconds=20 if gate_name == "duration" else 5)
    _, _, gates = run_audio_stage(path, settings, tmp_path / "episode")
    failed = [gate for gate in gates if not gate.passed]
    assert failed[0].name == gate_name
    if gate_name != "silence":  # silence is not at the loudness target either
        assert len(failed) == 1, failed
    reason = f"{failed[0].name}: {failed[0].reason}"
    assert reason.startswith(f"{gate_name}: {path} {words}")
    assert "\n" not in reason


def test_a_twenty_minute_track_reaches_the_target(tmp_path, small_settings):
    # the audio stage alone at full length: a render of 20 minutes would cost minutes
    path = tracks.write_long_track(tmp_path / "long.flac", brick_walled, 20 * 60)
    settings = small_settings(max_seconds=3600)
    _measured, final, gates = run_audio_stage(path, settings, tmp_path / "episode")
    assert all(gate.passed for gate in gates), [g.reason for g in gates]
    assert final.duration == pytest.approx(1200, abs=0.5)
    # Loudness by pyloudnorm beside ffmpeg's measure of the published AAC that the make took
    # (`final`; measuring 20 minutes again costs 6 s); the true peak by ffmpeg alone here (our
    # own 4x oversampling of 20 minutes costs 12 s; every shorter track above is checked with it).
    assert_on_target(tmp_path / "episode" / "audio.m4a", oversampled_peak=False, by_ffmpeg=final)


@pytest.mark.parametrize(
    ("make", "kind"),
    [(lambda: kick_and_pad(20.0, rate=44100), "mp3"), (lambda: very_dynamic(20.0), "ogg")],
    ids=["the issue's track as MP3", "very dynamic as Ogg"],
)
def test_a_whole_make_publishes_audio_on_target(make, kind, home, small_settings, request_for):
    folder = home / "tracks"
    folder.mkdir()
    write_track(folder, "own track", make(), rate=44100 if kind == "mp3" else 48000, kind=kind)
    episode = make_episode(request_for(settings=small_settings(audio="folder", min_seconds=5)))
    assert episode.passed, episode.reason
    from pathlib import Path

    assert_on_target(Path(episode.videos["landscape"]))
    assert_on_target(Path(episode.audio))
