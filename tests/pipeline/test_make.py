"""Whole makes: the offline defaults, resuming an interrupted make, the AI providers."""

import json

import pytest

from autoretto.ffmpeg import probe, run_ffmpeg
from autoretto.pipeline import make_episode
from autoretto.pipeline.settings import parse_providers
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.suno_server import FakeSuno


class Interrupt(Exception):
    pass


def test_offline_make_passes_every_gate(request_for, small_settings):
    seen = []
    episode = make_episode(
        request_for(settings=small_settings(style="flash")),
        progress=lambda stage, fraction: seen.append((stage, fraction)),
    )
    assert episode.passed, episode.reason
    assert [gate.name for gate in episode.gates] == [
        "duration",
        "clipping",
        "noise",
        "silence",
        "loudness",
        "black_frames",
        "streams",
        "text_limits",
        "banned_terms",
        "duplicate_audio",
        "ai_disclosure",
    ]
    assert set(episode.videos) == {"landscape", "vertical", "reels"}
    landscape = probe(episode.videos["landscape"])
    assert (landscape.video.width, landscape.video.height) == (240, 136)
    assert landscape.duration == pytest.approx(8.0, abs=0.07)
    reels = probe(episode.videos["reels"])
    assert (reels.video.width, reels.video.height) == (136, 240)
    assert reels.duration == pytest.approx(4.0, abs=0.07)
    assert probe(episode.thumbnail).video.width == 1280
    assert episode.ai_generated is False  # the synth is our own algorithm, not a model
    assert episode.tempo == pytest.approx(episode.source["bpm"], abs=1.5)
    assert episode.source["audio"] == "synth"
    assert episode.fingerprint.startswith("fp1:")
    fractions = [fraction for _, fraction in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    json.dumps(episode.to_dict())  # all JSON-safe
    assert episode.texts["x"]["text"] and len(episode.texts["youtube"]["title"]) <= 100


def test_a_duplicate_of_a_past_episode_is_rejected(request_for, small_settings):
    first = make_episode(request_for(settings=small_settings(style="cut")))
    again = make_episode(
        request_for(
            settings=small_settings(style="cut"),
            workdir=first_workdir(first).parent / "again",
            past_fingerprints=((12, first.fingerprint),),
        )
    )
    assert again.reason.startswith("duplicate_audio: the audio matches episode 12")


def first_workdir(episode):
    from pathlib import Path

    return Path(episode.videos["landscape"]).parent


def test_an_interrupted_make_resumes_from_its_finished_stages(request_for, monkeypatch):
    request = request_for()
    workdir = request.workdir

    def stop_at_render(stage, fraction):
        if stage == "render":
            raise Interrupt

    with pytest.raises(Interrupt):
        make_episode(request, progress=stop_at_render)
    finished = [
        "source.json",
        "audio.m4a",
        "beats.json",
        "copy.json",
        "landscape.png",
        "vertical.png",
        "thumbnail.jpg",
    ]
    before = {name: (workdir / name).stat().st_mtime_ns for name in finished}
    (workdir / "landscape.partial.mp4").write_bytes(b"half a video")  # a crash mid-write

    def must_not_run(*args, **kwargs):
        raise AssertionError("a finished stage ran again")

    monkeypatch.setattr("autoretto.pipeline.synth.render_synth", must_not_run)
    monkeypatch.setattr("autoretto.pipeline.beats.analyse", must_not_run)
    monkeypatch.setattr("autoretto.pipeline.artwork.make_procedural", must_not_run)
    episode = make_episode(request)
    assert episode.passed, episode.reason
    assert {name: (workdir / name).stat().st_mtime_ns for name in finished} == before
    assert not (workdir / "landscape.partial.mp4").exists()

    # a lost output after a finished make is made again, and only that one
    landscape_time = (workdir / "landscape.mp4").stat().st_mtime_ns
    (workdir / "reels.mp4").unlink()
    again = make_episode(request)
    assert again.passed and (workdir / "reels.mp4").exists()
    assert (workdir / "landscape.mp4").stat().st_mtime_ns == landscape_time


def test_gemini_artwork_and_copy_make_an_ai_disclosed_episode(request_for, small_settings):
    from tests.pipeline.test_gemini import png_bytes

    with FakeGemini(image=png_bytes((320, 180)), api_key="g-key") as fake:
        providers = parse_providers(
            {"gemini": {"base_url": fake.url, "retry_wait": 0}}, path="t.toml"
        )
        request = request_for(
            settings=small_settings(artwork="gemini", copy="gemini"),
            providers=providers,
            secrets=lambda name: "g-key" if name == "gemini_api_key" else None,
        )
        episode = make_episode(request)
    assert episode.passed, episode.reason
    assert episode.title == "Rain on the Window"
    assert episode.ai_generated is True
    assert episode.texts["youtube"]["contains_synthetic_media"] is True
    assert "artwork generated with Gemini" in episode.texts["x"]["text"]
    assert episode.source["artwork"] == "gemini:gemini-3.1-flash-image"
    assert episode.source["copy"] == "gemini:gemini-3.8-flash"


def test_suno_audio_makes_an_episode(request_for, small_settings, tmp_path):
    from autoretto.pipeline.synth import render_synth

    track = render_synth(tmp_path / "t.wav", seed=5, seconds=8)
    mp3 = tmp_path / "t.mp3"
    run_ffmpeg(["-v", "error", "-i", track.path, "-c:a", "libmp3lame", "-b:a", "128k", str(mp3)])
    with FakeSuno(mp3.read_bytes()) as suno:
        suno.pending_polls = 2
        providers = parse_providers(
            {"suno": {"base_url": suno.url, "poll_interval": 0.01, "retry_wait": 0}}, path="t.toml"
        )
        episode = make_episode(
            request_for(settings=small_settings(audio="suno"), providers=providers)
        )
    assert episode.passed, episode.reason
    assert episode.ai_generated is True
    assert episode.source["clip_id"] == "clip-1a"
    assert "music generated with Suno" in episode.texts["youtube"]["description"]
