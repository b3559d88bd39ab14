"""Films on their own cadence: approved only, a dry run until direct publishing is allowed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import channel_toml, outbox_sidecars, write_config

FILMS = """
[channels.films]
slots = ["20:00"]
days = ["sun"]
direct_publishing = {direct}
"""


def films_home(home, cli, clip, *, direct: bool) -> int:
    write_config(home, channel_toml() + FILMS.format(direct=str(direct).lower()))
    cli("init")
    code, out, err = cli("film", "add", "lofi", str(clip), "--title", "Winter, two hours")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # a Sunday: first sight of both cadences
    return int(out.split()[1])


def test_a_film_is_posted_only_on_the_films_cadence_once_approved(home, cli, clip):
    film = films_home(home, cli, clip, direct=True)
    # The episode slots never take a film.
    cli("run-due", now="2026-11-29T10:05:00Z")
    assert [d["outcome"] for d in cli.json("decisions")] == ["nothing_ready"]
    # 20:00 on the films cadence: not approved yet.
    cli("run-due", now="2026-11-29T20:05:00Z")
    films = [d for d in cli.json("decisions") if d["channel"] == "lofi/films"]
    assert [d["outcome"] for d in films] == ["waiting_for_approval"]
    cli("approve", str(film))
    cli("run-due", now="2026-12-06T20:05:00Z")  # next Sunday
    films = [d for d in cli.json("decisions") if d["channel"] == "lofi/films"]
    assert [d["outcome"] for d in films] == ["waiting_for_approval", "posted"]
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["episode_id"] == film and sidecar["slot"] == "2026-12-06T20:00"
    (listed,) = cli.json("films")
    assert listed["posts"][0]["state"] == "published"


def test_until_direct_publishing_a_film_is_a_dry_run_and_stays_ready(home, cli, clip):
    film = films_home(home, cli, clip, direct=False)
    cli("approve", str(film))
    code, _, err = cli("run-due", now="2026-11-29T20:05:00Z")
    assert code == 0, err
    (decision,) = [d for d in cli.json("decisions") if d["channel"] == "lofi/films"]
    assert decision["outcome"] == "dry_run"
    assert outbox_sidecars(home) == [] and cli.json("posts") == []
    (listed,) = cli.json("films")
    assert listed["state"] == "approved"
    (record,) = listed["dry_runs"]
    facts = json.loads(Path(record).read_text())
    assert facts["title"] == "Winter, two hours"
    assert facts["platform"] == "folder" and facts["slot_at"] == "2026-11-29T20:00:00Z"
    assert Path(facts["video"]).is_file()
    # Switched on: the next films slot posts it for real, once.
    text = (home / "autoretto.toml").read_text()
    (home / "autoretto.toml").write_text(
        text.replace("direct_publishing = false", "direct_publishing = true")
    )
    cli("run-due", now="2026-12-06T20:05:00Z")
    cli("run-due", now="2026-12-13T20:05:00Z")
    assert len(outbox_sidecars(home)) == 1


def test_a_bad_films_table_names_the_field(home, cli):
    write_config(home, channel_toml() + '\n[channels.films]\nslots = ["26:00"]\n')
    code, _, err = cli("config", "check")
    assert code == 2
    assert 'channel "lofi": films.slots' in err


def test_a_sound_file_is_not_a_film_and_the_refusal_says_where_it_goes(home, cli, tmp_path):
    from autoretto.ffmpeg import run_ffmpeg

    write_config(home, channel_toml() + FILMS.format(direct="false"))
    cli("init")
    track = tmp_path / "song.mp3"
    run_ffmpeg(["-y", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", str(track)])
    code, _, err = cli("film", "add", "lofi", str(track), "--title", "Not a film")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert f"{track}: a sound file, not a film" in line
    assert "`autoretto episode add CHANNEL song.mp3` makes an episode from a track" in line
    assert cli.json("films") == []
