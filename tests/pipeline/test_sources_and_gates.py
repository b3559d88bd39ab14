"""The folder source, and tracks that the quality and policy gates must reject."""

import os

import numpy as np
import pytest
import soundfile

from autoretto.errors import MediaError
from autoretto.pipeline import NoTrackLeft, make_episode
from autoretto.pipeline.audio import pick_folder_track
from autoretto.pipeline.gates import banned_terms_gate, duplicate_gate
from autoretto.pipeline.synth import render_synth


def write_wav(path, samples, rate=44100):
    soundfile.write(str(path), samples, rate, subtype="PCM_16")
    return path


def test_folder_picks_the_oldest_unused_track(tmp_path):
    for index, name in enumerate(["b.mp3", "a.wav", "c.flac", "notes.txt", "d.m4a"]):
        path = tmp_path / name
        path.write_bytes(b"x")
        os.utime(path, (1000 + index, 1000 + (index if name != "a.wav" else 0)))
    (tmp_path / "b.mp3").touch()  # now the newest
    os.utime(tmp_path / "c.flac", (1000, 1000))  # same time as a.wav: the name decides
    assert pick_folder_track(tmp_path, frozenset(), "demo").name == "a.wav"
    used = frozenset({str((tmp_path / "a.wav").resolve())})
    assert pick_folder_track(tmp_path, used, "demo").name == "c.flac"
    used |= {str((tmp_path / name).resolve()) for name in ("c.flac", "d.m4a", "b.mp3")}
    with pytest.raises(NoTrackLeft, match="used all 4 tracks"):
        pick_folder_track(tmp_path, used, "demo")


def test_folder_takes_ogg_opus_and_aiff_too(tmp_path):
    names = ["a.ogg", "b.opus", "c.aif", "d.AIFF", "e.mp3", "cover.jpg", ".hidden.wav"]
    for index, name in enumerate(names):
        path = tmp_path / name
        path.write_bytes(b"x")
        os.utime(path, (1000 + index, 1000 + index))
    picked, used = [], frozenset()
    while True:
        try:
            track = pick_folder_track(tmp_path, used, "demo")
        except NoTrackLeft:
            break
        picked.append(track.name)
        used |= {str(track)}
    assert picked == ["a.ogg", "b.opus", "c.aif", "d.AIFF", "e.mp3"]


def test_a_missing_folder_is_explained(tmp_path):
    with pytest.raises(Exception, match="does not exist: create it"):
        pick_folder_track(tmp_path / "nope", frozenset(), "demo")


def test_a_non_audio_file_in_the_folder_is_refused_by_name(home, small_settings, request_for):
    tracks = home / "tracks"
    tracks.mkdir()
    (tracks / "song.mp3").write_text("this is a shopping list, not a song\n" * 50)
    request = request_for(settings=small_settings(audio="folder"))
    with pytest.raises(MediaError) as caught:
        make_episode(request)
    message = str(caught.value)
    assert str(tracks / "song.mp3") in message
    assert "not an audio file" in message
    assert "Traceback" not in message and "\n" not in message


def test_a_silent_track_is_rejected_by_the_silence_gate(
    home, small_settings, request_for, tmp_path
):
    tracks = home / "tracks"
    tracks.mkdir()
    write_wav(tracks / "silence.wav", np.zeros((44100 * 8, 2)))
    episode = make_episode(request_for(settings=small_settings(audio="folder")))
    assert not episode.passed
    assert (
        episode.reason
        == f"silence: {(tracks / 'silence.wav').resolve()} is silent from start to end"
    )
    assert episode.videos == {}  # rejected on its audio: nothing rendered, nothing left over
    assert not list((tmp_path / "episode").glob("*.mp4"))
    assert not (tmp_path / "episode" / "clips").exists()
    assert episode.source["track"] == str((tracks / "silence.wav").resolve())


def test_a_clipped_track_is_rejected_by_the_clipping_gate(
    home, small_settings, request_for, tmp_path
):
    tracks = home / "tracks"
    tracks.mkdir()
    clean = render_synth(tmp_path / "clean.wav", seed=3, seconds=8)
    samples, rate = soundfile.read(clean.path)
    write_wav(tracks / "loud.wav", np.clip(samples * 6, -1, 1), rate)
    episode = make_episode(request_for(settings=small_settings(audio="folder")))
    assert [gate.name for gate in episode.gates if not gate.passed] == ["clipping"]
    assert episode.reason.startswith(f"clipping: {(tracks / 'loud.wav').resolve()} is clipped: ")


def test_a_short_track_fails_the_duration_gate(home, small_settings, request_for):
    tracks = home / "tracks"
    tracks.mkdir()
    render_synth(tracks / "short.wav", seed=3, seconds=2)
    episode = make_episode(request_for(settings=small_settings(audio="folder")))
    assert episode.reason.startswith(
        f"duration: {(tracks / 'short.wav').resolve()} is 2.0 s, shorter"
    )


def test_banned_terms_match_whole_words_case_blind():
    texts = {"youtube": {"title": "Free Download of lofi", "tags": ["x"]}}
    assert not banned_terms_gate(texts, [], ("free download",)).passed
    assert banned_terms_gate(texts, [], ("down",)).passed
    assert not banned_terms_gate({}, ["tag: Sponsored"], ("sponsored",)).passed


def test_duplicate_audio_is_found_across_gain_and_reencoding(tmp_path):
    from autoretto.ffmpeg import run_ffmpeg
    from autoretto.pipeline.fingerprint import fingerprint

    def fp(path):
        import librosa

        samples, rate = librosa.load(str(path), sr=22050, mono=True)
        return fingerprint(samples, rate)

    first = render_synth(tmp_path / "one.wav", seed=1, seconds=20)
    other = render_synth(tmp_path / "two.wav", seed=2, seconds=20)
    copy = tmp_path / "copy.wav"
    run_ffmpeg(
        [
            "-v",
            "error",
            "-i",
            first.path,
            "-ss",
            "0.3",
            "-af",
            "volume=-7dB",
            "-c:a",
            "libmp3lame",
            "-b:a",
            "128k",
            "-f",
            "mp3",
            str(tmp_path / "c.mp3"),
        ]
    )
    run_ffmpeg(["-v", "error", "-i", str(tmp_path / "c.mp3"), str(copy)])
    past = ((41, fp(first.path)), (42, fp(other.path)))
    gate = duplicate_gate(fp(copy), past, 0.8)
    assert not gate.passed and "episode 41" in gate.reason
    assert duplicate_gate(
        fp(render_synth(tmp_path / "3.wav", seed=3, seconds=20).path), past, 0.8
    ).passed
