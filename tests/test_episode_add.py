"""`episode add` of your own track, and what `episode show --json` says about how an episode
was made (its `source`, as the README describes it)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from tests.pipeline.tracks import cover_picture, kick_and_pad, tag_track, write_track
from tests.support import channel_toml, outbox_sidecars, write_config

SMALL_PIPELINE = """
[channels.pipeline]
min_seconds = 3
frame_scale = 0.125
reels_seconds = 4
preset = "ultrafast"
"""
RED = (200, 40, 90)


def song(tmp_path: Path, kind: str = "mp3", **tags) -> Path:
    path = write_track(tmp_path, "neon-drive", kick_and_pad(5.0), kind=kind)
    return tag_track(path, **tags) if tags else path


def test_episode_add_of_a_tagged_mp3_makes_the_episode(home, cli, tmp_path):
    pipeline = SMALL_PIPELINE.replace("min_seconds", 'artwork = "track"\nmin_seconds')
    write_config(home, channel_toml() + pipeline)
    cli("init")
    track = song(tmp_path, title="Neon Drive", artist="Kay Mira", picture=cover_picture(RED))
    code, out, err = cli("episode", "add", "lofi", str(track))
    assert code == 0, err
    assert out.startswith("episode 1 is ready: Kay Mira – Neon Drive\n")

    shown = cli.json("episode", "show", "1")
    assert shown["state"] == "ready" and shown["title"] == "Kay Mira – Neon Drive"
    assert shown["off_schedule"] is False
    assert set(shown["videos"]) == {"landscape", "vertical", "reels"}
    assert all(Path(video).stat().st_size > 0 for video in shown["videos"].values())
    with Image.open(shown["thumbnail"]) as thumbnail:
        middle = thumbnail.convert("RGB").getpixel((640, 360))
    assert sum(abs(a - b) for a, b in zip(middle, RED, strict=True)) < 15, middle
    source = shown["source"]
    assert source["track"] == str(track.resolve())
    assert source["track_tags"]["title"] == "Neon Drive"
    assert source["artwork"] == "track"
    assert source["normalise"]["method"] in ("gain", "limiter")
    assert source["loudness_out"]["integrated"] is not None
    # the next slot posts it like any made episode
    assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["episode_id"] == 1


def test_what_is_given_on_the_command_line_wins_over_the_tags(home, cli, tmp_path):
    write_config(home, channel_toml() + SMALL_PIPELINE)
    cli("init")
    track = song(tmp_path, "flac", title="Neon Drive", artist="Kay Mira")
    episode = cli.json(
        "episode", "add", "lofi", str(track), "--title", "Neon Drive (night mix)",
        "--description", "Made on the night bus.", "--tags", "synthwave,night", "--off-schedule",
    )  # fmt: skip
    assert episode["state"] == "ready"
    assert episode["title"] == "Neon Drive (night mix)"
    assert episode["description"] == "Made on the night bus."
    assert episode["tags"][:2] == ["synthwave", "night"]
    assert episode["off_schedule"] is True
    assert episode["texts"]["folder"]["title"] == "Neon Drive (night mix)"


def test_an_untagged_track_is_named_by_its_file(home, cli, tmp_path):
    pipeline = SMALL_PIPELINE.replace("min_seconds", 'artwork = "track"\nmin_seconds')
    write_config(home, channel_toml() + pipeline)
    cli("init")
    track = song(tmp_path, "opus")
    code, out, err = cli("episode", "add", "lofi", str(track))
    assert code == 0, err
    assert "note: artwork: the track has no cover art in its tags" in out
    (episode,) = cli.json("episodes")
    assert episode["title"].startswith("neon-drive · ") and episode["title"].endswith(" BPM")
    code, out, _ = cli("episode", "show", str(episode["id"]))
    assert f"  track: {track.resolve()}\n" in out
    assert "  note: artwork: the track has no cover art in its tags" in out


def test_a_video_still_needs_its_title(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip))
    assert code == 2 and "--title: an episode needs a title" in err
    assert cli.json("episodes") == []


def test_episode_show_json_has_the_source_of_an_added_video(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    assert cli("episode", "add", "lofi", str(clip), "--title", "Rain")[0] == 0
    shown = cli.json("episode", "show", "1")
    assert shown["source"] == {"imported": str(clip.absolute())}
    code, out, _ = cli("episode", "show", "1")
    assert code == 0 and f"  imported: {clip.absolute()}\n" in out


def test_an_add_killed_before_its_track_was_read_is_resumed_with_it(home, cli, tmp_path):
    import signal

    from tests.support import run_process

    write_config(home, channel_toml() + SMALL_PIPELINE)  # audio = "synth": not the track
    cli("init")
    track = song(tmp_path, "ogg", title="Neon Drive", artist="Kay Mira")
    victim = run_process(
        "episode", "add", "lofi", str(track), "--title", "Given title",
        env={"AUTORETTO_FAULT": "make_audio:kill"},
    )  # fmt: skip
    victim.communicate(timeout=300)
    assert victim.returncode == -signal.SIGKILL
    (making,) = cli.json("episodes")
    assert making["state"] == "making"

    (made,) = cli.json("make", "lofi", now="2026-11-29T12:30:00Z")
    assert made["id"] == making["id"] and made["state"] == "ready", made["reason"]
    assert made["title"] == "Given title"
    assert cli.json("episode", "show", str(made["id"]))["source"]["track"] == str(track.resolve())
