"""Making episodes from the CLI and from run-due: on demand, stock top-up, crash and resume."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.support import channel_toml, outbox_sidecars, run_process, write_config

SMALL_PIPELINE = """
[channels.pipeline]
audio = "synth"
synth_seconds = 6
min_seconds = 3
frame_scale = 0.125
reels_seconds = 4
preset = "ultrafast"
"""


def producing_home(home, *, ready_ahead: int = 1) -> None:
    channel = channel_toml().replace(
        "approval = false", f"approval = false\nready_ahead = {ready_ahead}"
    )
    write_config(home, channel + SMALL_PIPELINE)


def test_make_gives_a_gated_episode_with_every_format(home, cli):
    producing_home(home)
    cli("init")
    (episode,) = cli.json("make", "lofi")
    assert episode["state"] == "ready", episode["reason"]
    assert set(episode["videos"]) == {"landscape", "vertical", "reels"}
    for path in [*episode["videos"].values(), episode["thumbnail"]]:
        assert Path(path).is_file() and Path(path).stat().st_size > 0
    assert episode["tempo"] > 0 and len(episode["beats"]) > 3
    assert {g["name"] for g in episode["gates"]} >= {"duration", "loudness", "streams"}
    assert all(g["passed"] for g in episode["gates"])
    shown = cli.json("episode", "show", str(episode["id"]))
    assert shown["videos"] == episode["videos"]


def test_run_due_makes_on_demand_and_tops_up_the_stock(home, cli):
    producing_home(home, ready_ahead=1)
    cli("init")
    code, out, err = cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    assert code == 0 and cli.json("episodes") == []
    # 10:05: nothing is ready, so the slot makes one and posts it, then the stock is topped up.
    code, out, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"
    episodes = cli.json("episodes")
    assert [e["state"] for e in episodes] == ["ready", "ready"]
    assert outbox_sidecars(home)[0]["episode_id"] == episodes[0]["id"]
    # An idle run with a full stock makes nothing.
    code, out, _ = cli("run-due", now="2026-11-29T10:30:00Z")
    assert "nothing due" in out and len(cli.json("episodes")) == 2


def test_a_make_killed_mid_render_is_resumed_and_posted_once(home, cli):
    producing_home(home, ready_ahead=0)  # only the slot's own make: none for the stock
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    victim = run_process(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "make_render:kill"}
    )
    victim.communicate(timeout=300)
    assert victim.returncode == -signal.SIGKILL
    (making,) = cli.json("episodes")
    assert making["state"] == "making"
    assert outbox_sidecars(home) == []

    code, _, err = cli("run-due", now="2026-11-29T10:25:00Z")
    assert code == 0, err
    episodes = cli.json("episodes")
    assert episodes[0]["id"] == making["id"] and episodes[0]["state"] == "ready"
    assert len(episodes) == 1, "the interrupted make was started over instead of resumed"
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["episode_id"] == making["id"]
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"


def test_a_rejected_make_is_never_posted(home, cli):
    producing_home(home)
    text = (home / "autoretto.toml").read_text()
    (home / "autoretto.toml").write_text(text.replace("min_seconds = 3", "min_seconds = 60"))
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0
    (episode,) = cli.json("episodes")
    assert episode["state"] == "rejected"
    assert episode["reason"].startswith("duration:")
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "nothing_ready"
    assert "rejected" in decision["reason"]
    assert outbox_sidecars(home) == []
