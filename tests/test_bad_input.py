"""Bad input: one clear line naming the file, channel and field; exit 2; nothing written."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from tests.support import channel_toml, write_config

GOOD = channel_toml()


def snapshot(home) -> dict[str, str]:
    """Every file of the home with a digest of its bytes; the database by its rows (its bytes
    move when SQLite checkpoints the write-ahead log, which changes nothing stored)."""
    found = {}
    for path in sorted(home.rglob("*")):
        if not path.is_file() or path.name.endswith(("-wal", "-shm")):
            continue
        if path.suffix == ".db":
            connection = sqlite3.connect(path)
            content = "\n".join(connection.iterdump()).encode()
            connection.close()
        else:
            content = path.read_bytes()
        found[str(path.relative_to(home))] = hashlib.sha256(content).hexdigest()
    return found


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (GOOD.replace('"UTC"', '"Europe/Berln"'),
         'channel "lofi": timezone: unknown time zone "Europe/Berln"'),
        (GOOD.replace('"10:00"', '"25:00"'), 'channel "lofi": slots: "25:00" is not a time of day'),
        (GOOD + GOOD, 'channel "lofi": name: this name is used by two channels'),
        (GOOD.replace('["folder"]', '["myspace"]'),
         'channel "lofi": platforms: unknown platform "myspace"'),
        (GOOD.replace('["folder"]', '["tiktok"]'),
         'channel "lofi": platforms: "tiktok" is never posted on a slot'),
        (GOOD.replace('"2h"', '"two hours"'),
         'channel "lofi": catch_up_window: "two hours" is not a duration'),
        (GOOD + "colour = 'blue'\n", 'channel "lofi": colour: unknown key'),
        (GOOD.replace('name = "lofi"', 'name = "Lo Fi"'), 'channel "Lo Fi": name:'),
        (GOOD.replace("approval = false", 'approval = "yes"'),
         'channel "lofi": approval: must be true or false'),
        (GOOD + "[channels.pipeline]\naudio = 'gramophone'\n", 'channel "lofi": pipeline.audio'),
        ("stale_after = 'soon'\n" + GOOD, "stale_after:"),
        (GOOD + "[platforms.folder]\npath = 3\n", None),  # TOML itself: a table defined twice
        ("[[channels]\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_bad_config_is_one_line_exit_2_and_nothing_written(home, cli, config, expected):
    write_config(home, GOOD)
    cli("init")
    cli("run-due", now="2026-11-29T09:00:00Z")
    (home / "autoretto.toml").write_text(config)
    before = snapshot(home)
    for command in (("config", "check"), ("run-due",), ("status",)):
        code, out, err = cli(*command, now="2026-11-29T10:05:00Z")
        assert code == 2, (command, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert str(home / "autoretto.toml") in lines[0]
        if expected:
            assert expected in lines[0]
        assert "Traceback" not in err
    assert snapshot(home) == before


def test_the_good_config_checks(home, cli):
    write_config(home, GOOD)
    code, out, err = cli("config", "check")
    assert code == 0, err
    assert "ok (lofi)" in out
    # Slots on the hour get an off-the-hour suggestion (posts on :00 look like a bot's).
    suggestions = cli.json("config", "check")["suggestions"]["lofi"]
    assert set(suggestions) == {"10:00", "11:00", "12:00"}
    assert all(not t.endswith(":00") for t in suggestions.values())


def test_no_home_says_run_init(home, cli):
    code, _, err = cli("status")
    assert code == 2
    assert "run `autoretto init`" in err
    assert not home.exists()


def test_unreadable_database_is_a_plain_error(home, cli):
    write_config(home, GOOD)
    (home / "autoretto.db").mkdir()  # a directory where the database file should be
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1
    assert "cannot open the database" in err
    assert len(err.strip().splitlines()) == 1


def test_database_folder_gone(home, cli, monkeypatch):
    from autoretto.errors import StoreError
    from autoretto.store import open_database

    with pytest.raises(StoreError, match="the database folder does not exist"):
        open_database(home / "nowhere" / "autoretto.db")


def test_a_file_that_is_not_a_video_is_refused(home, cli, tmp_path):
    write_config(home, GOOD)
    cli("init")
    fake = tmp_path / "song.mp4"
    fake.write_text("this is not a video")
    before = snapshot(home)
    code, _, err = cli("episode", "add", "lofi", str(fake), "--title", "Nope")
    assert code == 2
    assert str(fake) in err
    assert len(err.strip().splitlines()) == 1
    assert cli.json("episodes") == []
    assert snapshot(home) == before


def test_audio_only_file_is_not_a_video(home, cli, tmp_path):
    from autoretto.ffmpeg import run_ffmpeg

    write_config(home, GOOD)
    cli("init")
    audio = tmp_path / "tone.m4a"
    run_ffmpeg(["-y", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", str(audio)])
    code, _, err = cli("episode", "add", "lofi", str(audio), "--title", "Nope")
    assert code == 2
    assert "video" in err
    assert cli.json("episodes") == []


def test_unknown_channel_and_episode(home, cli, clip):
    write_config(home, GOOD)
    cli("init")
    code, _, err = cli("episode", "add", "jazz", str(clip), "--title", "x")
    assert code == 2 and 'no channel "jazz"' in err
    code, _, err = cli("approve", "42")
    assert code == 2 and "no episode 42" in err
    code, _, err = cli("run-due", "--now", "yesterday")
    assert code == 2 and "--now" in err
