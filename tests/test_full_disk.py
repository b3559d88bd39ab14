"""A full disk and a kill during `episode add` and `run-due`: one line, and nothing left behind
that the next run does not continue or clean.

The disk is a real small file system (a tmpfs mounted for the test) where this machine lets a
test mount one; elsewhere the error a full disk gives is injected at the same writes through
the fault mechanism (`AUTORETTO_FAULT=POINT:enospc`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support import (
    channel_toml,
    outbox_sidecars,
    run_command,
    run_process,
    snapshot,
    write_config,
)

SLOT = "2026-11-29T10:00"
RETRY_AT_ONCE = '\n[retry]\nfirst_wait = "0s"\n'


class Disk:
    """Where the home lives, and how to fill it. `real`: a small tmpfs; else faults."""

    def __init__(self, root: Path, real: bool) -> None:
        self.root = root
        self.real = real
        self.filler = root / "filler"

    def fill(self, leave: int) -> None:
        """Take all the free space but `leave` bytes (real disks only)."""
        facts = os.statvfs(self.root)
        free = facts.f_bavail * facts.f_frsize
        with open(self.filler, "ab") as writer:
            writer.write(b"\0" * max(0, free - leave))

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "disk"
    root.mkdir()
    try:
        mounted = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(root)],
                capture_output=True,
                check=False,
            ).returncode
            == 0
        )
    except OSError:  # no mount command at all
        mounted = False
    home = root / "home"
    monkeypatch.setenv("AUTORETTO_HOME", str(home))
    try:
        yield Disk(root, real=mounted)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=False)


@pytest.fixture(scope="module")
def big_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-second video of noise, a few MB: bigger than the room a filled disk leaves."""
    from autoretto.ffmpeg import run_ffmpeg

    path = tmp_path_factory.mktemp("media") / "noise.mp4"
    run_ffmpeg(
        [
            "-y", "-f", "lavfi", "-i", "color=c=gray:s=320x180:r=30:d=1,noise=alls=100:allf=t",
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-crf", "0", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-shortest", str(path),
        ]
    )  # fmt: skip
    return path


def partials(home: Path) -> list[Path]:
    return sorted(home.rglob("*.partial"))


def assert_no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


def test_a_full_disk_during_episode_add_leaves_nothing(disk, cli, big_video):
    home = disk.root / "home"
    write_config(home, channel_toml())
    cli("init")
    env = {}
    if disk.real:
        disk.fill(leave=512 * 1024)  # room for the database, not for the video
    else:
        env = {"AUTORETTO_FAULT": "import_copy:enospc"}
    code, out, err = run_command(
        "episode", "add", "lofi", str(big_video), "--title", "Noise", env=env
    )
    assert code == 1, (out, err)
    assert_no_traceback(err)
    (line,) = err.strip().splitlines()
    assert line == (
        f"autoretto: {home / 'media' / 'episodes'}: the disk is full; nothing was added: free "
        "some space, then add the video again"
    )
    assert partials(home) == []
    assert not (home / "media" / "episodes" / "1").exists()
    disk.free()
    assert cli.json("episodes") == []
    # With room again, the same command works and is the first episode.
    code, out, err = run_command("episode", "add", "lofi", str(big_video), "--title", "Noise")
    assert code == 0, err
    (episode,) = cli.json("episodes")
    assert (episode["id"], episode["state"]) == (1, "ready")
    assert Path(episode["videos"]["landscape"]).read_bytes() == big_video.read_bytes()


def test_a_kill_during_episode_add_is_shown_then_cleaned_by_the_next_run(disk, cli, big_video):
    home = disk.root / "home"
    write_config(home, channel_toml())
    cli("init")
    cli("run-due", now="2026-11-29T09:00:00Z")
    killed = run_process(
        "episode", "add", "lofi", str(big_video), "--title", "Noise",
        now="2026-11-29T09:10:00Z", env={"AUTORETTO_FAULT": "import_copy:kill"},
    )  # fmt: skip
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    (left,) = partials(home)  # what the kill leaves: a half copy and a `making` row
    assert cli.json("episodes")[0]["state"] == "making"

    # While the import could still be alive, nothing calls it interrupted.
    code, out, err = run_command("status", "--json", now="2026-11-29T09:12:00Z")
    assert code == 0, err
    assert json.loads(out)["interrupted"] == []

    # Past stale_after (15m) without a heartbeat, status says so, and run-due cleans it.
    code, out, err = run_command("status", now="2026-11-29T09:30:00Z")
    assert code == 0, err
    assert f"episode 1 lofi: the import of {big_video} was interrupted" in " ".join(out.split())
    code, out, err = run_command("run-due", now="2026-11-29T09:30:00Z")
    assert code == 0, err
    assert "note: episode 1" in out and "add the video again" in out
    assert partials(home) == [] and not left.parent.exists()
    (episode,) = cli.json("episodes")
    assert episode["state"] == "rejected" and "interrupted" in episode["reason"]
    assert cli.json("status", now="2026-11-29T09:31:00Z")["interrupted"] == []
    # The slot later takes a good episode, never the rejected one.
    code, _, err = run_command("episode", "add", "lofi", str(big_video), "--title", "Again")
    assert code == 0, err
    code, _, err = run_command("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert [s["episode_id"] for s in outbox_sidecars(home)] == [2]


def home_with_a_ready_episode(disk, cli, big_video) -> Path:
    """A home on the disk with one ready episode, its channel seen by a run before its slot."""
    home = disk.root / "home"
    write_config(home, channel_toml(), extra=RETRY_AT_ONCE)
    cli("init")
    code, _, err = run_command("episode", "add", "lofi", str(big_video), "--title", "Noise")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")
    return home


def test_a_full_disk_during_run_due_is_one_line_and_the_slot_goes_out_once_later(
    disk, cli, big_video
):
    home = home_with_a_ready_episode(disk, cli, big_video)
    env = {}
    if disk.real:
        disk.fill(leave=0)
    else:
        env = {"AUTORETTO_FAULT": "after_claim:enospc"}
    before = snapshot(home)
    # Full, and (on a real disk) still full at the next try.
    tries = ("2026-11-29T10:05:00Z", "2026-11-29T10:10:00Z")[: 2 if disk.real else 1]
    for now in tries:
        code, out, err = run_command("run-due", now=now, env=env)
        assert code == 1, (out, err)
        assert_no_traceback(err)
        assert "the disk is full" in err, err
        assert partials(home) == [] and outbox_sidecars(home) == []
    if disk.real:
        (line,) = err.strip().splitlines()
        assert line.startswith(f"autoretto: {home / 'autoretto.db'}: the disk is full;"), line
        assert snapshot(home) == before  # not a row was written

    # Space again: the slot goes out, exactly once.
    disk.free()
    code, out, err = run_command("run-due", now="2026-11-29T10:30:00Z")
    assert code == 0, (out, err)
    assert_no_traceback(err)
    assert [(s["slot"], s["episode_id"]) for s in outbox_sidecars(home)] == [(SLOT, 1)]
    (post,) = cli.json("posts")
    assert (post["state"], post["attempts"]) == ("published", 1)
    assert partials(home) == []


def mount_small_disk(root: Path) -> Disk:
    """A second small tmpfs at `root` (the caller unmounts it)."""
    root.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(root)], check=True
    )
    return Disk(root, real=True)


def test_a_full_outbox_leaves_no_half_copy_and_the_episode_goes_out_next_slot(
    disk, cli, big_video, tmp_path
):
    if not disk.real:
        pytest.skip("needs a real small file system (mount was refused)")
    home = home_with_a_ready_episode(disk, cli, big_video)
    # The outbox on a disk of its own (a NAS share, say): the video cannot be hard-linked
    # there, so it is copied, and that disk is full.
    outbox = mount_small_disk(tmp_path / "outbox-disk")
    try:
        _full_outbox(home, outbox, cli)
    finally:
        subprocess.run(["umount", "-l", str(outbox.root)], check=False)


def _full_outbox(home: Path, outbox: Disk, cli) -> None:
    import shutil

    shutil.rmtree(home / "outbox", ignore_errors=True)
    (home / "outbox").symlink_to(outbox.root)
    outbox.fill(leave=256 * 1024)  # room for a sidecar, not for a copy of the video
    code, out, err = run_command("run-due", now="2026-11-29T10:05:00Z")
    assert_no_traceback(err)
    assert f"{SLOT} folder: failed (post 1)" in out and "No space left on device" in out, out
    assert partials(home) == [] and outbox_sidecars(home) == []
    assert sorted(p.name for p in outbox.root.rglob("*.partial")) == []
    outbox.free()
    code, out, err = run_command("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, (out, err)
    assert [(s["slot"], s["episode_id"]) for s in outbox_sidecars(home)] == [
        ("2026-11-29T11:00", 1)
    ]
    assert partials(home) == []
