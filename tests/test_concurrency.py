"""Overlapping runs and crashes, with real processes against one home."""

from __future__ import annotations

import os
import signal

import pytest

from tests.forked import paused_at_forked, run_forked
from tests.support import channel_toml, outbox_sidecars, run_sql, write_config

#: Every test here runs on the home's SQLite file and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("store")


def setup_home(home, cli, clip, *, channels=("lofi",), episodes=2) -> None:
    write_config(home, *(channel_toml(name) for name in channels))
    cli("init")
    for name in channels:
        for number in range(episodes):
            code, _, err = cli("episode", "add", name, str(clip), "--title", f"{name} {number}")
            assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")


def test_eight_runs_at_once_post_each_slot_once(home, cli, clip):
    channels = ("lofi", "jazz", "rain")
    setup_home(home, cli, clip, channels=channels)
    # 11:45 after an outage: each channel has 10:00 to record missed and 11:00 to post.
    runs = [run_forked("run-due", now="2026-11-29T11:45:00Z") for _ in range(8)]
    results = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0] * 8, results
    for name in channels:
        sidecars = outbox_sidecars(home, name)
        assert [s["slot"] for s in sidecars] == ["2026-11-29T11:00"], name
    found = cli.json("decisions")
    keys = [(d["channel"], d["slot"], d["platform"]) for d in found]
    assert len(keys) == len(set(keys)) == 6
    assert sorted(d["outcome"] for d in found) == ["missed"] * 3 + ["posted"] * 3
    assert len((home / "logs" / "run.log").read_text().splitlines()) == 6
    # The runs that lost said nothing was theirs to do.
    decided_by = [out for out, _ in results if "posted" in out or "missed" in out]
    assert 1 <= len(decided_by) <= 3


def test_a_run_between_its_first_commit_and_its_journal_line_does_not_hold_the_others(
    home, cli, clip
):
    """The first event of a home is committed before its journal line is appended: another run
    in that moment sees a journal behind the database (which the database's copy of the line
    fills), never a missing journal that would hold posting as after a restore."""
    setup_home(home, cli, clip, channels=("lofi", "jazz"))
    journal = cli.json("journal")["journal"]
    assert not os.path.exists(journal)  # nothing has been numbered yet
    paused = paused_at_forked(home, "journal_append", "run-due", now="2026-11-29T10:05:00Z")
    try:
        assert cli.json("status", now="2026-11-29T10:05:30Z")["held"] is None
        code, out, err = cli("run-due", now="2026-11-29T10:06:00Z")
        assert code == 0, (out, err)
    finally:
        os.kill(paused.pid, signal.SIGKILL)
        paused.wait()
    # After stale_after (15m), what the killed run held is taken over; its line is written.
    code, out, err = cli("run-due", now="2026-11-29T10:30:00Z")
    assert code == 0, (out, err)
    assert cli.json("status", now="2026-11-29T10:31:00Z")["held"] is None
    for name in ("lofi", "jazz"):
        assert [s["slot"] for s in outbox_sidecars(home, name)] == ["2026-11-29T10:00"], name


def test_a_run_killed_holding_its_claim_is_taken_over_at_once(home, cli, clip):
    """On one machine the holder's process is asked: a dead one is taken over by the next run,
    with no stale time to wait out."""
    setup_home(home, cli, clip)
    killed = paused_at_forked(home, "after_claim", "run-due", now="2026-11-29T10:05:00Z")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert killed.returncode == -signal.SIGKILL

    status = cli.json("status", now="2026-11-29T10:06:00Z")["channels"][0]
    assert status["claim"]["slot"] == "2026-11-29T10:00"

    code, _, err = cli("run-due", now="2026-11-29T10:06:00Z")
    assert code == 0, err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"
    status = cli.json("status", now="2026-11-29T10:07:00Z")["channels"][0]
    assert status["claim"] is None
    assert status["stamp"] == "2026-11-29T10:00:00Z"


def test_a_live_holder_keeps_its_claim_however_far_the_clock_jumps(home, cli, clip):
    """A run whose clock says an hour later (NTP after a suspend, another host) never takes the
    claim of a run that is alive, however old its heartbeat looks to that clock."""
    setup_home(home, cli, clip)
    holder = paused_at_forked(home, "after_claim", "run-due", now="2026-11-29T10:05:00Z")
    try:
        for moment in ("2026-11-29T11:05:00Z", "2026-11-29T11:55:00Z"):
            code, out, err = cli("run-due", now=moment)
            assert code == 0, err
            assert "nothing due" in out and "sent" not in out
        assert outbox_sidecars(home) == []
        assert cli.json("decisions") == []
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    code, _, err = cli("run-due", now="2026-11-29T11:56:00Z")  # its process is gone now
    assert code == 0, err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T11:00"]
    decided = {d["slot"]: d["outcome"] for d in cli.json("decisions")}
    assert decided == {"2026-11-29T10:00": "missed", "2026-11-29T11:00": "posted"}


def test_a_holder_on_another_machine_is_taken_over_after_two_sightings(home, cli, clip):
    """A holder this machine cannot ask is gone only when its beat has not moved across two
    sightings `stale_after` (15m) apart by the observer's own clock."""
    setup_home(home, cli, clip)
    killed = paused_at_forked(home, "after_claim", "run-due", now="2026-11-29T10:05:00Z")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    run_sql(home, "UPDATE runs SET machine = 'another-host/pid:[1]'")

    # Its heartbeat time says nothing to this clock: the first run notes the beat, and the
    # next ones leave the claim alone until 15 minutes after that first sighting.
    for moment in ("2026-11-29T10:10:00Z", "2026-11-29T10:24:00Z"):
        code, out, err = cli("run-due", now=moment)
        assert code == 0 and "nothing due" in out, (out, err)
    assert outbox_sidecars(home) == []

    code, out, err = cli("run-due", now="2026-11-29T10:25:00Z")
    assert code == 0, err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]
    (decision,) = cli.json("decisions")
    assert decision["outcome"] == "posted"


def test_a_run_killed_after_sending_leaves_exactly_one_post(home, cli, clip):
    """SIGKILL after the folder copy, before the database heard: no second copy, one post."""
    setup_home(home, cli, clip)
    killed = run_forked(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "after_send:kill"}
    )
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert len(outbox_sidecars(home)) == 1
    (post,) = cli.json("posts")
    assert post["state"] == "sending"

    code, _, err = cli("run-due", now="2026-11-29T10:30:00Z")
    assert code == 0, err
    (post,) = cli.json("posts")
    assert post["state"] == "published"
    assert post["attempts"] == 1
    assert len(outbox_sidecars(home)) == 1
    (decision,) = cli.json("decisions")
    assert (decision["slot"], decision["outcome"]) == ("2026-11-29T10:00", "posted")


def test_sixteen_racing_runs_make_no_more_than_the_stock_asks(home, cli):
    """Making is claimed per channel: 16 run-due at once with ready_ahead = 1 make one."""
    from tests.test_produce import producing_home

    producing_home(home, ready_ahead=1)
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    runs = [run_forked("run-due", now="2026-11-29T09:10:00Z") for _ in range(16)]
    results = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0] * 16, results
    episodes = cli.json("episodes")
    assert [e["state"] for e in episodes] == ["ready"], episodes


def test_a_slot_with_nothing_ready_waits_for_the_episode_another_run_is_making(home, cli):
    from tests.test_produce import SMALL_PIPELINE

    channel = channel_toml(slots=("09:40",)).replace(
        "approval = false", "approval = false\nready_ahead = 1"
    )
    write_config(home, channel + SMALL_PIPELINE)
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    maker = paused_at_forked(home, "make_render", "run-due", now="2026-11-29T09:35:00Z")

    code, out, err = cli("run-due", now="2026-11-29T09:45:00Z")
    assert code == 0, err
    assert "waiting" in out and "being made by run" in out
    assert cli.json("decisions") == []
    assert len(cli.json("episodes")) == 1  # the one being made: no second make

    os.kill(maker.pid, signal.SIGKILL)
    maker.wait()
    code, _, err = cli("run-due", now="2026-11-29T10:00:00Z")  # its make claim is stale now
    assert code == 0, err
    (decision,) = cli.json("decisions")
    assert (decision["slot"], decision["outcome"]) == ("2026-11-29T09:40", "posted")
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["episode_id"] == 1  # the interrupted make, resumed
