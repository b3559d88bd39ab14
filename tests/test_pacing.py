"""Human pace in run-due and post-now: paced posts wait for their moment, never twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.support import channel_toml, outbox_sidecars, write_config


def twins_home(home, cli, clip) -> None:
    family = channel_toml("lofi")
    twin = channel_toml("lofi-de").replace('name = "lofi-de"', 'name = "lofi-de"\ntwin_of = "lofi"')
    write_config(home, family, twin)
    cli("init")
    for channel in ("lofi", "lofi-de"):
        for number in range(2):
            code, _, err = cli(
                "episode", "add", channel, str(clip), "--title", f"{channel} {number}"
            )
            assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_twin_waits_for_its_moment_and_is_decided_when_it_goes(home, cli, clip):
    twins_home(home, cli, clip)
    code, out, err = cli("run-due", "--no-wait", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    decided = {(d["channel"], d["outcome"]) for d in cli.json("decisions")}
    assert decided == {("lofi", "posted")}  # the twin is not decided yet
    (waiting,) = [p for p in cli.json("posts") if p["channel"] == "lofi-de"]
    assert waiting["state"] == "queued"
    assert "goes out at" in out

    code, _, err = cli("run-due", "--no-wait", now="2026-11-29T10:30:00Z")
    assert code == 0, err
    twin = [d for d in cli.json("decisions") if d["channel"] == "lofi-de"]
    assert [(d["slot"], d["outcome"]) for d in twin] == [("2026-11-29T10:00", "posted")]
    (sidecar,) = outbox_sidecars(home, "lofi-de")
    moment = at(sidecar["publish_at"])
    assert timedelta(minutes=7) <= moment - at("2026-11-29T10:00:00Z") <= timedelta(minutes=29)
    status = cli.json("status", "--channel", "lofi-de", now="2026-11-29T10:31:00Z")
    assert status["channels"][0]["stamp"] == "2026-11-29T10:00:00Z"
    # A re-run sends nothing more.
    cli("run-due", "--no-wait", now="2026-11-29T10:40:00Z")
    assert len(outbox_sidecars(home, "lofi-de")) == 1


def test_run_due_waits_in_process_for_moments_before_the_next_tick(home, cli, clip):
    twins_home(home, cli, clip)
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")  # waits (simulated clock)
    assert code == 0, err
    (twin,) = [d for d in cli.json("decisions") if d["channel"] == "lofi-de"]
    assert twin["outcome"] == "posted"
    (sidecar,) = outbox_sidecars(home, "lofi-de")
    assert twin["decided_at"] >= sidecar["publish_at"] > "2026-11-29T10:05:00Z"


def test_a_paced_moment_that_passed_unserved_is_missed_and_the_episode_goes_later(home, cli, clip):
    twins_home(home, cli, clip)
    cli("run-due", "--no-wait", now="2026-11-29T10:05:00Z")
    # The box was down until 12:40: the 10:00 slot's window (2h) closed before anyone sent it.
    code, _, err = cli("run-due", "--no-wait", now="2026-11-29T12:40:00Z")
    assert code == 0, err
    twin = {d["slot"][-5:]: d for d in cli.json("decisions") if d["channel"] == "lofi-de"}
    assert twin["10:00"]["outcome"] == "missed"
    assert "paced moment" in twin["10:00"]["reason"]
    assert twin["12:00"]["outcome"] == "posted"
    (sidecar,) = outbox_sidecars(home, "lofi-de")
    assert sidecar["slot"] == "2026-11-29T12:00"
    assert sidecar["title"] == "lofi-de 0"  # the episode that waited, not a newer one


def test_post_now_goes_out_twenty_seconds_to_two_minutes_after_the_command(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    cli("episode", "add", "lofi", str(clip), "--title", "Now")
    code, out, err = cli("post-now", "lofi", now="2026-11-29T09:00:00Z")
    assert code == 0, err
    said = out.split("going out at ")[1].split()[0]
    delay = at(said) - at("2026-11-29T09:00:00Z")
    assert timedelta(seconds=20) <= delay <= timedelta(minutes=2)
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["publish_at"] == said
