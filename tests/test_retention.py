"""The disk kept: the retention policy ([media] keep, `prune`, run-due), the outbox's hard
links and `episode discard`."""

from __future__ import annotations

import errno
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.fakes import webhook_server
from tests.support import channel_toml, outbox_sidecars, run_process, write_config

LATER = "2027-01-05T12:00:00Z"  # 37 days after the 10:00 slot of 2026-11-29


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


def setup(home, cli, clip, fake, *, platforms=("folder",), keep="30d", episodes=1) -> None:
    channel = channel_toml().replace(
        'platforms = ["folder"]', f"platforms = {json.dumps(platforms)}"
    )
    extra = (
        f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n'
        '\n[retry]\nattempts = 2\nfirst_wait = "0s"\n'
        f'\n[media]\nkeep = "{keep}"\n'
    )
    write_config(home, channel, extra=extra)
    assert cli("init")[0] == 0
    for number in range(episodes):
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", f"Take {number}")
        assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")


def episode_files(home: Path, episode_id: int = 1) -> list[str]:
    folder = home / "media" / "episodes" / str(episode_id)
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_a_published_episode_loses_its_working_files_after_keep_and_the_outbox_stays(
    home, cli, clip, fake
):
    setup(home, cli, clip, fake)
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    (sidecar,) = outbox_sidecars(home)
    outbox_video = home / "outbox" / "lofi" / sidecar["video"]
    episode_video = home / "media" / "episodes" / "1" / "landscape.mp4"
    # the outbox holds the episode's video as a hard link: the same file, no second copy
    assert os.stat(outbox_video).st_ino == os.stat(episode_video).st_ino
    size = episode_video.stat().st_size

    early = cli.json("prune", now="2026-12-20T12:00:00Z")
    assert early["pruned"] == [] and early["kept"] == []
    dry = cli.json("prune", "--dry-run", now=LATER)
    assert [(e["episode_id"], e["files"], e["bytes"]) for e in dry["pruned"]] == [
        (1, ["landscape.mp4"], size)
    ]
    assert episode_video.exists(), "a dry run removed a file"

    code, out, err = cli("prune", now=LATER)
    assert code == 0, err
    assert "episode 1 (lofi, published 2026-11-29T10:05:00Z): removed 1 file" in out
    assert not episode_video.exists()
    assert outbox_video.stat().st_size == size  # the creator's outbox keeps its video
    assert cli.json("episode", "show", "1", now=LATER)["pruned_at"] == LATER
    assert cli.json("prune", now=LATER)["pruned"] == []  # nothing twice


def test_run_due_applies_the_policy_at_its_end(home, cli, clip, fake):
    setup(home, cli, clip, fake, episodes=2)
    cli("run-due", now="2026-11-29T10:05:00Z")
    code, out, err = cli("run-due", now=LATER)
    assert code == 0, err
    assert "retention: removed the working files of 1 published episodes" in out
    assert episode_files(home, 1) == []
    assert episode_files(home, 2) == ["landscape.mp4"]  # posted on this very run: kept


def test_keep_forever_removes_nothing(home, cli, clip, fake):
    setup(home, cli, clip, fake, keep="forever")
    cli("run-due", now="2026-11-29T10:05:00Z")
    code, out, _ = cli("prune", now=LATER)
    assert code == 0 and 'nothing is pruned: [media] keep = "forever"' in out
    assert episode_files(home) == ["landscape.mp4"]


def test_an_episode_a_platform_has_not_had_yet_keeps_its_files(home, cli, clip, fake):
    setup(home, cli, clip, fake, platforms=("webhook", "folder"))
    fake.script.extend(["status:500"] * 2)  # the webhook fails on the slot; the folder posts
    cli("run-due", now="2026-11-29T10:05:00Z")
    posts = {p["platform"]: p for p in cli.json("posts")}
    assert posts["folder"]["state"] == "published" and posts["webhook"]["state"] == "failed"
    result = cli.json("prune", now=LATER)
    assert result["pruned"] == []
    (kept,) = result["kept"]
    assert kept["episode_id"] == 1 and "webhook post" in kept["reason"]
    assert "failed, not published" in kept["reason"]
    assert episode_files(home) == ["landscape.mp4"]


def test_a_post_that_may_be_live_keeps_the_files_for_the_lost_answer_check(home, cli, clip, fake):
    setup(home, cli, clip, fake, platforms=("webhook", "folder"))
    fake.script.append("drop")  # the webhook took the post, then the answer was lost
    cli("run-due", now="2026-11-29T10:05:00Z")
    (kept,) = cli.json("prune", now=LATER)["kept"]
    assert "may be live" in kept["reason"] and "lost-answer check" in kept["reason"]
    assert episode_files(home) == ["landscape.mp4"]
    # once the lost answer is found, the episode is published everywhere and may go
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert {p["state"] for p in cli.json("posts")} == {"published"}
    assert [e["episode_id"] for e in cli.json("prune", now=LATER)["pruned"]] == [1]


def test_a_pruned_episode_is_never_offered_to_a_platform_again(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    cli("run-due", now="2026-11-29T10:05:00Z")
    cli("prune", now=LATER)
    # the webhook is added to the channel later: it gets nothing, rather than a missing file
    text = (home / "autoretto.toml").read_text()
    (home / "autoretto.toml").write_text(
        text.replace('platforms = ["folder"]', 'platforms = ["webhook", "folder"]')
    )
    code, _, err = cli("run-due", now="2027-01-06T10:05:00Z")
    assert code == 0, err
    assert fake.publishes == []
    (webhook,) = [
        d
        for d in cli.json("decisions")
        if d["platform"] == "webhook" and d["slot"] == "2027-01-06T10:00"
    ]
    assert webhook["outcome"] == "nothing_ready"


def test_the_outbox_copies_where_a_hard_link_is_refused(home, cli, clip, fake, monkeypatch):
    setup(home, cli, clip, fake)

    def no_links(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    cli("run-due", now="2026-11-29T10:05:00Z")
    (sidecar,) = outbox_sidecars(home)
    outbox_video = home / "outbox" / "lofi" / sidecar["video"]
    episode_video = home / "media" / "episodes" / "1" / "landscape.mp4"
    assert os.stat(outbox_video).st_ino != os.stat(episode_video).st_ino
    assert outbox_video.read_bytes() == episode_video.read_bytes()


@pytest.mark.parametrize("keep", ["30", "soon", "0d", 30])
def test_a_bad_keep_is_one_line_naming_the_field(home, cli, keep):
    write_config(home, channel_toml(), extra=f"\n[media]\nkeep = {json.dumps(keep)}\n")
    code, _, err = cli("config", "check")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert "media.keep" in line and "Traceback" not in err


# -- episode discard ---------------------------------------------------------------------------

SUNO_PIPELINE = """
[channels.pipeline]
audio = "suno"
min_seconds = 3
frame_scale = 0.125
reels_seconds = 4
preset = "ultrafast"
"""


def test_a_stuck_making_episode_is_discarded_with_its_files(home, cli):
    from tests.fakes.suno_server import FakeSuno

    with FakeSuno(b"") as suno:
        suno.cookie_ok = False  # the server can no longer sign in: the make stops, refused
        write_config(
            home,
            channel_toml() + SUNO_PIPELINE,
            extra=f'\n[providers.suno]\nbase_url = "{suno.url}"\nretry_wait = 0\n',
        )
        cli("init")
        code, _, err = cli("make", "lofi")
    assert code == 1 and "SUNO_COOKIE" in err
    (stuck,) = cli.json("episodes")
    assert stuck["state"] == "making" and "SUNO_COOKIE" in stuck["reason"]
    assert (home / "media" / "episodes" / "1").exists()

    result = cli.json("episode", "discard", "1")
    assert result["was"] == "making" and result["state"] == "discarded"
    (dropped,) = cli.json("episodes")
    assert dropped["state"] == "discarded" and "discarded by a person" in dropped["reason"]
    assert not (home / "media" / "episodes" / "1").exists()


def test_a_ready_or_posted_episode_is_never_discarded(home, cli, clip, fake):
    setup(home, cli, clip, fake, episodes=2)
    cli("run-due", now="2026-11-29T10:05:00Z")  # episode 1 is posted, episode 2 is ready
    for episode_id, words in (("1", "has a folder post (published)"), ("2", "is ready")):
        code, _, err = cli("episode", "discard", episode_id)
        assert code == 2 and words in err and "Traceback" not in err
    assert [e["state"] for e in cli.json("episodes")] == ["ready", "ready"]
    assert episode_files(home, 2) == ["landscape.mp4"]


def test_an_episode_being_made_right_now_is_not_discarded(home, cli):
    write_config(
        home,
        channel_toml()
        + SUNO_PIPELINE.replace('audio = "suno"', 'audio = "synth"\nsynth_seconds = 4'),
    )
    cli("init")
    maker = run_process("make", "lofi", env={"AUTORETTO_FAULT": "make_beats:pause"})
    marker = home / "fault-make_beats.paused"
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), maker.stderr.read() if maker.poll() is not None else "no pause"
        code, _, err = cli("episode", "discard", "1")
        assert code == 2 and "is being made right now" in err
        assert cli.json("episodes")[0]["state"] == "making"
    finally:
        maker.send_signal(signal.SIGKILL)
        maker.communicate(timeout=30)
    # the make is dead: once its heartbeat is stale, the episode may be discarded
    result = cli.json("episode", "discard", "1", now="2026-11-29T13:00:00Z")
    assert result["was"] == "making"
