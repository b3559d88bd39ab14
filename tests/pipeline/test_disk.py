"""The disk: a make that cannot fit is refused before it writes; a disk that fills up during
a make leaves a resumable episode, never a corrupt file marked ready.

The media folder is a real small tmpfs (mounting needs root, as CI has); the disk fills at a
chosen moment through the fault mechanism (`make_render:fill`), in a real process.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autoretto.pipeline.make import space_needed
from autoretto.pipeline.settings import parse_pipeline
from tests.conftest import TEST_NOW
from tests.support import channel_toml, run_process, write_config

PIPELINE = """
[channels.pipeline]
audio = "synth"
synth_seconds = 6
min_seconds = 3
frame_scale = 0.125
reels_seconds = 4
preset = "ultrafast"
"""


@pytest.fixture
def home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pipeline tests' bare folder, made the AUTORETTO_HOME of the commands run here."""
    monkeypatch.setenv("AUTORETTO_HOME", str(home))
    monkeypatch.setenv("AUTORETTO_NOW", TEST_NOW)
    monkeypatch.delenv("AUTORETTO_FAULT", raising=False)
    return home


@pytest.fixture
def small_disk(home: Path):
    """Mount a tmpfs of the asked size (MB) at <home>/media; unmounted after the test."""
    mounted = []

    def mount(megabytes: int) -> Path:
        media = home / "media"
        media.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(media)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): needs root")
        mounted.append(media)
        return media

    yield mount
    for media in mounted:
        subprocess.run(["umount", "-l", str(media)], check=False)


def making_home(home: Path) -> None:
    write_config(home, channel_toml() + PIPELINE)


def test_the_estimate_grows_with_the_track_and_the_picture():
    settings = parse_pipeline({}, path="t", channel="c", home=Path("/tmp"))
    three_minutes = space_needed(settings, 180, 48000)
    # at its peak the 180 s benchmark make holds a 63 MB float source, 118 MB of raw
    # frames, and 72 MB of videos twice over while they are joined: ~350 MB, and a margin
    assert 350e6 < three_minutes < 600e6
    # each second more is at least its float source more
    assert space_needed(settings, 600, 48000) - three_minutes > 420 * 48000 * 8
    small = parse_pipeline({"frame_scale": 0.125}, path="t", channel="c", home=Path("/tmp"))
    assert space_needed(small, 180, 48000) < three_minutes


def test_a_make_that_cannot_fit_is_refused_in_one_line(home, cli, small_disk):
    making_home(home)
    cli("init")
    media = small_disk(8)
    code, out, err = cli("make", "lofi")
    assert code == 1, out + err
    lines = [line for line in (out + err).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    message = lines[0]
    assert "not enough free space to make this episode: it needs about" in message
    assert "MB are free in" in message and str(media) in message
    assert "Traceback" not in out + err
    # nothing half-written; the episode waits to be made once there is room
    assert [path for path in media.rglob("*") if path.is_file()] == []
    (episode,) = cli.json("episodes")
    assert episode["state"] == "making" and episode["reason"].startswith("not enough free")


def test_a_disk_that_fills_during_the_make_leaves_it_resumable(home, cli, small_disk):
    making_home(home)
    cli("init")
    media = small_disk(96)
    process = run_process("make", "lofi", env={"AUTORETTO_FAULT": "make_render:fill"})
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1, err
    assert "the disk filled up during the make" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    (episode,) = cli.json("episodes")
    assert episode["state"] == "making", "a make on a full disk must not end ready"
    folder = media / "episodes" / str(episode["id"])
    assert not list(folder.rglob("*.partial*"))
    assert not (folder / "landscape.mp4").exists()
    # the beats are tracked before the render begins; the audio is levelled beside the
    # render, so it is finished when its facts file (measure.json, written after the AAC)
    # made it to the disk before the disk filled, and is levelled again otherwise
    kept = ["beats.json"] + (["audio.m4a"] if (folder / "measure.json").exists() else [])
    finished = {name: (folder / name).stat().st_mtime_ns for name in kept}

    (media / "fault-filler").unlink()
    (made,) = cli.json("make", "lofi")
    assert made["id"] == episode["id"] and made["state"] == "ready", made["reason"]
    assert {name: (folder / name).stat().st_mtime_ns for name in finished} == finished
    assert all(Path(path).stat().st_size > 0 for path in made["videos"].values())
