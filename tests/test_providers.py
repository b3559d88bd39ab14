"""Suno and Gemini as a creator meets them: run-due with a failing generation, the daily cap,
`make` saying how Gemini's refusal was handled, and `doctor`."""

from __future__ import annotations

import pytest

from tests.fakes.gemini_server import FakeGemini
from tests.fakes.suno_server import FakeSuno
from tests.support import channel_toml, write_config

PIPELINE = """
[channels.pipeline]
audio = "{audio}"
copy = "{copy}"
synth_seconds = 6
min_seconds = 3
frame_scale = 0.125
reels_seconds = 4
preset = "ultrafast"
"""


@pytest.fixture(scope="module")
def tracks(tmp_path_factory) -> list[bytes]:
    """Two different mp3 tracks (the duplicate-audio gate refuses the same one twice)."""
    from autoretto.ffmpeg import run_ffmpeg
    from autoretto.pipeline.synth import render_synth

    folder = tmp_path_factory.mktemp("suno")
    found = []
    for seed in (5, 9):
        track = render_synth(folder / f"{seed}.wav", seed=seed, seconds=6)
        target = folder / f"{seed}.mp3"
        run_ffmpeg(["-v", "error", "-i", str(track.path), "-c:a", "libmp3lame", str(target)])
        found.append(target.read_bytes())
    return found


def suno_home(home, suno, *, providers: str = "") -> None:
    write_config(
        home,
        channel_toml() + PIPELINE.format(audio="suno", copy="template"),
        extra=(
            f'\n[providers.suno]\nbase_url = "{suno.url}"\npoll_interval = 0.01\n'
            f"retry_wait = 0\nmax_wait = 5\n{providers}"
        ),
    )


def test_a_failed_generation_is_given_up_and_the_next_run_pays_for_one_new(home, cli, tracks):
    with FakeSuno(tracks[0]) as suno:
        suno_home(home, suno)
        cli("init")
        cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
        suno.clip_status = "error"
        code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
        assert code == 0, err  # a passing trouble: the run did its job
        (decision,) = cli.json("decisions")
        assert decision["outcome"] == "nothing_ready"
        assert "could not make the track (Unable to generate: moderation)" in decision["reason"]
        assert "a new generation is submitted on the next run" in decision["reason"]
        assert suno.submitted == 1  # not four, not one more for the stock
        (episode,) = cli.json("episodes")
        assert episode["state"] == "making"

        suno.clip_status = "complete"
        code, _, err = cli("run-due", now="2026-11-29T11:05:00Z")
        assert code == 0, err
        # One new generation for the episode that failed (posted on this slot), then one for
        # the stock (`--no-make` would make nothing at all, the slot's episode included).
        assert suno.submitted == 3
        assert cli.json("episodes")[0]["state"] == "ready"
        assert [d["outcome"] for d in cli.json("decisions")] == ["nothing_ready", "posted"]


def test_the_daily_cap_stops_paid_generations_for_the_day(home, cli, tracks):
    with FakeSuno(tracks[0]) as suno:
        suno_home(home, suno, providers="daily_generations = 1\n")
        cli("init")
        code, _, err = cli("run-due", now="2026-11-29T09:00:00Z")  # makes the stock
        assert code == 0, err
        assert [e["state"] for e in cli.json("episodes")] == ["ready"]
        code, _, err = cli("make", "lofi")
        assert code == 1 and "day's 1 Suno generations are used" in err
        assert suno.submitted == 1
        # the next UTC day the episode waiting for its track gets one
        suno.audio = tracks[1]
        code, _, err = cli("make", "lofi", now="2026-11-30T09:00:00Z")
        assert code == 0, err
    assert suno.submitted == 2


def test_make_says_when_gemini_declined_and_the_template_copy_was_used(home, cli, monkeypatch):
    with FakeGemini() as fake:
        monkeypatch.setenv("GEMINI_API_KEY", "test-key")
        write_config(
            home,
            channel_toml() + PIPELINE.format(audio="synth", copy="gemini"),
            extra=f'\n[providers.gemini]\nbase_url = "{fake.url}"\nretry_wait = 0\n',
        )
        cli("init")
        fake.finishes = ["PROHIBITED_CONTENT", "SAFETY"]
        code, out, err = cli("make", "lofi")
    assert code == 0, err
    assert len(fake.requests) == 2  # once as written, once in plainer words, never four
    assert (
        "note: copy: gemini declined the prompt twice (PROHIBITED_CONTENT, SAFETY); the "
        "template copy was used for this episode"
    ) in out
    (episode,) = cli.json("episodes")
    assert episode["state"] == "ready"


def test_doctor_shows_sunos_credits_and_geminis_model_ends(home, cli, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    with FakeSuno(b"") as suno:
        write_config(
            home,
            channel_toml() + PIPELINE.format(audio="suno", copy="gemini"),
            extra=(
                f'\n[providers.suno]\nbase_url = "{suno.url}"\n'
                '\n[providers.gemini]\ntext_model = "my-tuned-model"\n'
                'text_model_ends = "2026-12-20"\n'
            ),
        )
        cli("init")
        code, out, err = cli("doctor")
        assert code == 0, out + err
        assert "470 credits left" in out
        assert "warning   gemini model my-tuned-model ([providers.gemini] text_model)" in out
        assert "in 21 days" in out
        facts = cli.json("doctor")
        (credits,) = [p["credits"] for p in facts["providers"] if p["name"] == "suno"]
        assert credits["credits_left"] == 470

        suno.cookie_ok = False
        code, out, _ = cli("doctor")
        assert code == 1 and "problem   suno: the suno-api server cannot sign in" in out


def test_doctor_says_a_model_past_its_shutdown_must_be_changed(home, cli, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    write_config(
        home,
        channel_toml() + PIPELINE.format(audio="synth", copy="gemini"),
        extra='\n[providers.gemini]\ntext_model = "gemini-2.5-flash"\n',
    )
    cli("init")
    code, out, _ = cli("doctor")
    assert code == 1
    assert (
        "gemini-2.5-flash ([providers.gemini] text_model) was to be shut down on 2026-06-17" in out
    )
