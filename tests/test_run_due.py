"""`run-due` end to end on the folder platform: the due rule, decisions, the stamp, the log."""

from __future__ import annotations

import json
import sqlite3
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from autoretto.slots import Schedule
from tests.support import channel_toml, outbox_sidecars, run_command, write_config


def add_episode(cli, clip, title: str, channel: str = "lofi", *extra: str) -> int:
    code, out, err = cli("episode", "add", channel, str(clip), "--title", title, *extra)
    assert code == 0, err
    return int(out.split()[1])


def decisions(cli, *args: str) -> list[dict]:
    return cli.json("decisions", *args)


def test_outage_example(home, cli, clip):
    """Slots 10:00, 11:00, 12:00, window 2h; runs at 09:30, then after an outage at 11:45."""
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clip, "First")
    add_episode(cli, clip, "Second")

    code, out, _ = cli("run-due", now="2026-11-29T09:30:00Z")
    assert code == 0 and "nothing due" in out

    code, _, _ = cli("run-due", now="2026-11-29T11:45:00Z")
    assert code == 0
    found = {(d["slot"], d["outcome"]) for d in decisions(cli)}
    assert found == {("2026-11-29T10:00", "missed"), ("2026-11-29T11:00", "posted")}
    (sidecar,) = outbox_sidecars(home)
    assert sidecar["slot"] == "2026-11-29T11:00"
    assert sidecar["publish_at"] == "2026-11-29T11:00:00Z"
    assert sidecar["title"] == "First"

    code, _, _ = cli("run-due", now="2026-11-29T12:05:00Z")
    assert code == 0
    sidecars = outbox_sidecars(home)
    assert [s["slot"] for s in sidecars] == ["2026-11-29T11:00", "2026-11-29T12:00"]
    assert sidecars[1]["title"] == "Second"

    for later in ("2026-11-29T12:30:00Z", "2026-11-29T12:05:00Z"):  # then the clock set back
        code, out, _ = cli("run-due", now=later)
        assert code == 0 and "nothing due" in out
    assert len(outbox_sidecars(home)) == 2
    assert len(decisions(cli)) == 3

    log = (home / "logs" / "run.log").read_text().splitlines()
    assert len(log) == 3
    assert "slot=2026-11-29T10:00 platform=folder outcome=missed" in log[0]
    assert "outside the 2h catch-up window" not in log[0]  # it was missed for a later slot

    status = cli.json("status", now="2026-11-29T12:30:00Z")["channels"][0]
    assert status["stamp"] == "2026-11-29T12:00:00Z"
    assert status["due"] is None
    assert [s["state"] for s in status["recent"]] == ["missed", "filled", "filled"]
    assert [s["slot_state"] for s in status["recent"]] == ["missed", "posted", "posted"]
    assert status["upcoming"][0] == {
        "slot": "2026-11-30T10:00",
        "slot_at": "2026-11-30T10:00:00Z",
        "state": "waiting",
        "slot_state": "future",
    }


def test_a_slot_found_outside_its_window_is_missed_with_the_reason(home, cli, clip):
    write_config(home, channel_toml(window="10m"))
    cli("init")
    add_episode(cli, clip, "Only")
    cli("run-due", now="2026-11-29T09:00:00Z")
    code, _, _ = cli("run-due", now="2026-11-29T10:11:00Z")
    assert code == 0
    (decision,) = decisions(cli)
    assert decision["outcome"] == "missed"
    assert "11m after its time, outside the 10m catch-up window" in decision["reason"]
    assert outbox_sidecars(home) == []
    # Its episode simply goes out on the next slot.
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T11:00"]


def test_a_new_channel_or_an_edited_schedule_never_fires_a_past_slot(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clip, "Only")
    # First run ever at 10:30: the 10:00 slot is past and inside its window, yet not due.
    code, out, _ = cli("run-due", now="2026-11-29T10:30:00Z")
    assert "nothing due" in out
    assert decisions(cli) == []
    # The schedule is edited to add 10:45; at 10:50 that slot is before the edit was seen.
    write_config(home, channel_toml(slots=("10:00", "10:45", "11:00", "12:00")))
    cli("run-due", now="2026-11-29T10:40:00Z")
    code, out, _ = cli("run-due", now="2026-11-29T10:50:00Z")
    assert code == 0 and "nothing due" not in out
    assert [d["slot"] for d in decisions(cli)] == ["2026-11-29T10:45"]


def test_edited_schedule_seen_after_its_slot_is_not_due(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clip, "Only")
    cli("run-due", now="2026-11-29T09:00:00Z")
    write_config(home, channel_toml(slots=("10:45",)))
    code, out, _ = cli("run-due", now="2026-11-29T10:50:00Z")
    assert code == 0 and "nothing due" in out
    assert decisions(cli) == []


def test_nothing_ready_and_waiting_for_approval(home, cli, clip):
    write_config(home, channel_toml(approval=True))
    cli("init")
    cli("run-due", now="2026-11-29T09:00:00Z")
    cli("run-due", now="2026-11-29T10:01:00Z")
    episode = add_episode(cli, clip, "Needs a yes")
    cli("run-due", now="2026-11-29T11:01:00Z")
    code, out, _ = cli("approve", str(episode))
    assert code == 0 and "approved" in out
    cli("run-due", now="2026-11-29T12:01:00Z")
    outcomes = [(d["slot"][-5:], d["outcome"]) for d in decisions(cli)]
    assert outcomes == [
        ("10:00", "nothing_ready"),
        ("11:00", "waiting_for_approval"),
        ("12:00", "posted"),
    ]
    # hold takes approval back only from an approved episode
    code, out, _ = cli("hold", str(episode))
    assert code == 0 and "ready" in out


def test_missed_slots_are_recorded_once_and_at_most_a_hundred(home, cli, clip):
    write_config(home, channel_toml(slots=tuple(f"{h:02d}:00" for h in range(24))))
    cli("init")
    cli("run-due", now="2026-11-01T00:30:00Z")
    cli("run-due", now="2026-11-29T00:30:00Z")  # four weeks later: 671 slots went by
    found = decisions(cli)
    assert len(found) == 101  # 100 missed, then the due one (nothing ready)
    assert sum(d["outcome"] == "missed" for d in found) == 100
    assert found[-1]["slot"] == "2026-11-29T00:00"
    cli("run-due", now="2026-11-29T00:40:00Z")
    assert len(decisions(cli)) == 101


def test_post_now_and_a_slot_never_post_one_episode_twice(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    first = add_episode(cli, clip, "First")
    add_episode(cli, clip, "Spare", "lofi", "--off-schedule")
    cli("run-due", now="2026-11-29T09:00:00Z")
    code, out, err = cli("post-now", "lofi", "--episode", str(first), now="2026-11-29T09:10:00Z")
    assert code == 0, err
    assert "posted" in out
    # Pressing it again sends nothing new.
    code, out, _ = cli("post-now", "lofi", "--episode", str(first), now="2026-11-29T09:11:00Z")
    assert "already on" in out
    # The 10:00 slot finds nothing it may post: the on-schedule episode is out, the
    # off-schedule one is only for post-now.
    cli("run-due", now="2026-11-29T10:01:00Z")
    assert [d["outcome"] for d in decisions(cli)] == ["nothing_ready"]
    assert len(outbox_sidecars(home)) == 1
    posts = cli.json("posts")
    assert posts == [
        {
            "id": posts[0]["id"],
            "episode_id": first,
            "channel": "lofi",
            "platform": "folder",
            "state": "published",
            "url": posts[0]["url"],
            "platform_post_id": posts[0]["platform_post_id"],
            "attempts": 1,
            "reason": None,
            "kind": "video",
            "not_before": None,
        }
    ]
    assert posts[0]["url"].startswith("file://")


def test_json_listings_keep_their_keys(home, cli, clip):
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clip, "First")
    cli("run-due", now="2026-11-29T09:00:00Z")
    cli("run-due", now="2026-11-29T10:01:00Z")
    (decision,) = decisions(cli, "--channel", "lofi", "--since", "2026-11-29T00:00:00Z")
    assert set(decision) == {
        "channel", "slot", "slot_at", "platform", "outcome", "reason", "decided_at", "post_id"
    }  # fmt: skip
    assert decisions(cli, "--since", "2026-11-30T00:00:00Z") == []
    (episode,) = cli.json("episodes")
    assert {"id", "channel", "state", "title", "created_at", "reason", "videos", "thumbnail",
            "tempo", "beats", "gates", "ai_generated"} <= set(episode)  # fmt: skip
    assert episode["videos"]["landscape"].endswith(".mp4")


def test_the_folder_platform_does_not_copy_again_when_its_attempt_is_there(home, cli, clip):
    """A crash after the copy but before the database heard of it: the retry finds the file."""
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clip, "First")
    cli("run-due", now="2026-11-29T09:00:00Z")
    cli("run-due", now="2026-11-29T10:01:00Z")
    db = sqlite3.connect(home / "autoretto.db")
    # Forget the publish in the database, as if the answer had been lost.
    db.execute("UPDATE posts SET state = 'may_be_live', url = NULL, platform_post_id = NULL")
    db.commit()
    sidecar = next((home / "outbox" / "lofi").glob("*.json"))
    written = sidecar.stat().st_mtime_ns
    cli("run-due", now="2026-11-29T11:01:00Z")
    (post,) = cli.json("posts")
    assert post["state"] == "published"
    assert post["platform_post_id"] == sidecar.stem
    assert sidecar.stat().st_mtime_ns == written
    assert len(outbox_sidecars(home)) == 1


def test_an_edited_config_is_never_served_from_the_cache(home, cli):
    write_config(home, channel_toml(slots=("10:00",)))
    cli("init")
    first = cli.json("status", now="2026-11-29T09:00:00Z")["channels"][0]
    assert [s["slot"][-5:] for s in first["upcoming"]][:1] == ["10:00"]
    assert (home / ".cache" / "config.json").exists()
    write_config(home, channel_toml(slots=("10:30",)))
    again = cli.json("status", now="2026-11-29T09:00:00Z")["channels"][0]
    assert [s["slot"][-5:] for s in again["upcoming"]][:1] == ["10:30"]
    # A broken edit is an error, not the last good config.
    (home / "autoretto.toml").write_text("[[channels]\n")
    code, _, err = cli("status")
    assert code == 2 and "not valid TOML" in err


def test_the_cache_of_many_alike_channels_reads_back_the_same_config(home, cli):
    """Forty channels of one schedule and pipeline: the cached config is the parsed one, their
    equal settings held once (the cache of a thousand such channels stays small and quick)."""
    from autoretto.config import Paths, _decode, load_config
    from autoretto.platforms import FIELDS

    names = [f"chan-{n}" for n in range(40)]
    write_config(home, *(channel_toml(name) for name in names))
    cli("init")
    parsed = load_config(Paths(home), platforms=FIELDS)  # written by init's parse, read back here
    cached = _decode(json.loads((home / ".cache" / "config.json").read_text())["nodes"])
    assert cached == parsed
    assert [c.schedule.spec for c in cached.channels] == [c.schedule.spec for c in parsed.channels]
    assert len({id(c.pipeline) for c in cached.channels}) == 1
    assert len({id(c.schedule) for c in cached.channels}) == 1
    status = cli.json("status", now="2026-11-29T09:00:00Z")
    assert [c["channel"] for c in status["channels"]] == names
    assert {c["upcoming"][0]["slot"] for c in status["channels"]} == {"2026-11-29T10:00"}


# -- no slot lost to an edit, a tie or a clock going back (issue 15) --------------------------


def test_an_edit_keeps_the_slots_both_schedules_share(home, cli, clip):
    """10:00 is in the old and the new schedule: an edit seen only after it does not drop it."""
    write_config(home, channel_toml(slots=("10:00", "12:00")))
    cli("init")
    add_episode(cli, clip, "First")
    cli("run-due", now="2026-11-29T09:00:00Z")
    write_config(home, channel_toml(slots=("10:00", "10:30", "12:00")))  # edited at 09:50
    code, _, err = cli("run-due", now="2026-11-29T10:45:00Z")
    assert code == 0, err
    # 10:30 is the newest slot, but only the edit added it: never due in the past. The 10:00
    # slot both schedules hold is still owed, and due.
    assert [(d["slot"], d["outcome"]) for d in decisions(cli)] == [("2026-11-29T10:00", "posted")]
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]
    # A slot the edit moved (12:00 is the same; 10:30 is new) is due from the next time on.
    cli("run-due", now="2026-11-30T10:35:00Z")
    assert decisions(cli)[-1]["slot"] == "2026-11-30T10:30"


def test_a_slot_an_edit_adds_in_the_past_is_never_due(home, cli, clip):
    write_config(home, channel_toml(slots=("10:00",)))
    cli("init")
    add_episode(cli, clip, "First")
    cli("run-due", now="2026-11-29T09:00:00Z")
    write_config(home, channel_toml(slots=("09:30", "10:00")))
    code, out, _ = cli("run-due", now="2026-11-29T09:40:00Z")
    assert code == 0 and "nothing due" in out
    assert decisions(cli) == []


def test_two_slots_at_one_instant_post_the_later_key_and_say_why_the_other_is_missed(
    home, cli, clip
):
    """02:30 does not exist on 2026-03-29 in Berlin: it lands on 03:30, itself a slot."""
    write_config(home, channel_toml(timezone="Europe/Berlin", slots=("02:30", "03:30")))
    cli("init")
    add_episode(cli, clip, "First")
    cli("run-due", now="2026-03-29T00:00:00Z")
    code, _, err = cli("run-due", now="2026-03-29T01:35:00Z")  # 03:35 CEST
    assert code == 0, err
    found = {d["slot"]: d for d in decisions(cli)}
    assert found["2026-03-29T03:30"]["outcome"] == "posted"
    tie = found["2026-03-29T02:30"]
    assert tie["outcome"] == "missed"
    assert "same instant as 2026-03-29T03:30" in tie["reason"]


def test_a_slot_an_edit_adds_below_the_release_after_a_clock_step_is_never_owed(home, cli, clip):
    """A fast clock posted 12:00; set right, the edit adds 11:00. The channel is decided
    through 12:00, so the edit counts as seen from there: 11:00 was owed by no schedule, and is
    neither posted (it is older than the release) nor recorded missed (issue 24; an earlier
    version recorded it missed)."""
    write_config(home, channel_toml(slots=("10:00", "12:00")))
    cli("init")
    add_episode(cli, clip, "First")
    add_episode(cli, clip, "Second")
    cli("run-due", now="2026-11-29T09:00:00Z")
    cli("run-due", now="2026-11-29T12:05:00Z")  # the clock runs two hours fast
    write_config(home, channel_toml(slots=("10:00", "11:00", "12:00")))
    cli("run-due", now="2026-11-29T10:50:00Z")  # set right; the edit is seen now
    code, _, err = cli("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    found = {d["slot"]: d["outcome"] for d in decisions(cli)}
    assert found == {"2026-11-29T10:00": "missed", "2026-11-29T12:00": "posted"}
    assert len(outbox_sidecars(home)) == 1
    cli("run-due", now="2026-11-30T11:05:00Z")  # the next day's 11:00 is a slot like any other
    assert decisions(cli)[-1]["slot"] == "2026-11-30T11:00"
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T12:00", "2026-11-30T11:00"]


def test_no_make_makes_nothing_not_even_on_demand(home, cli):
    from tests.test_produce import producing_home

    producing_home(home)
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    code, _, err = cli("run-due", "--no-make", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert cli.json("episodes") == []
    (decision,) = decisions(cli)
    assert decision["outcome"] == "nothing_ready"


# -- the due rule at its edges (issue 24): real processes, each with its own clock -------------
# (`run-due` and `status`, whose agreement is the point; the episodes they post are added, and
# the decisions read back, in this process)


def autoretto(*args: str, now: str) -> str:
    """`autoretto ARGS` as cron runs it: a process of its own, its clock from AUTORETTO_NOW."""
    code, out, err = run_command(*args, now=now)
    assert code == 0, err
    return out


def add_episodes(cli, clip, *titles: str) -> None:
    for title in titles:
        code, _, err = cli(
            "episode", "add", "lofi", str(clip), "--title", title, now="2026-01-01T00:00:00Z"
        )
        assert code == 0, err


def decided(cli, now: str = "2026-12-31T00:00:00Z") -> list[tuple[str, str]]:
    return [(d["slot"], d["outcome"]) for d in cli.json("decisions", now=now)]


def test_a_slot_the_spring_gap_pushes_past_the_next_days_first_slot_is_posted(home, cli, clip):
    """Nuuk springs forward at 23:00 local on the last Saturday of March (-02 → -01): the
    Saturday 23:30 slot does not exist and lands right after the gap, at 00:30 -01 (01:30Z),
    after Sunday's own 00:15 slot (01:15Z). It is the most recent slot at 01:35Z, and due."""
    weekend = channel_toml(timezone="America/Nuuk", slots=("00:15", "23:30"))
    write_config(home, weekend + 'days = ["sat", "sun"]\n')
    add_episodes(cli, clip, "First", "Second")
    autoretto("run-due", now="2026-03-28T14:00:00Z")
    autoretto("run-due", now="2026-03-29T01:20:00Z")
    status = json.loads(autoretto("status", "--json", now="2026-03-29T01:35:00Z"))["channels"][0]
    assert status["due"] == {"slot": "2026-03-28T23:30", "slot_at": "2026-03-29T01:30:00Z"}
    # `recent` is in time order: the Saturday slot comes after Sunday's 00:15.
    assert [s["slot"] for s in status["recent"][-2:]] == ["2026-03-29T00:15", "2026-03-28T23:30"]
    autoretto("run-due", now="2026-03-29T01:35:00Z")
    assert decided(cli) == [("2026-03-29T00:15", "posted"), ("2026-03-28T23:30", "posted")]
    assert [s["slot_at"] for s in outbox_sidecars(home)] == [
        "2026-03-29T01:15:00Z",
        "2026-03-29T01:30:00Z",
    ]


def test_a_slot_an_edit_adds_before_the_decided_mark_is_neither_due_nor_missed(home, cli, clip):
    """The 12:00 slot (10:00Z) is posted; then the schedule gains 11:45 and the clock is set
    back to 09:30Z. The channel is decided through 10:00Z: the edit is taken as seen from
    there, so 11:45 (09:45Z), which no earlier schedule held, was never owed."""
    write_config(home, channel_toml(timezone="Europe/Berlin", slots=("12:00",)))
    add_episodes(cli, clip, "First", "Second")
    autoretto("run-due", now="2026-06-10T07:00:00Z")
    autoretto("run-due", now="2026-06-10T10:05:00Z")
    write_config(home, channel_toml(timezone="Europe/Berlin", slots=("11:45", "12:00")))
    autoretto("run-due", now="2026-06-10T09:30:00Z")
    status = json.loads(autoretto("status", "--json", now="2026-06-10T09:50:00Z"))["channels"][0]
    assert status["due"] is None
    assert "missed" not in {s["state"] for s in status["recent"]}
    autoretto("run-due", now="2026-06-10T09:50:00Z")
    assert decided(cli) == [("2026-06-10T12:00", "posted")]
    assert len(outbox_sidecars(home)) == 1
    # From the next day on, 11:45 is a slot like any other.
    autoretto("run-due", now="2026-06-11T09:50:00Z")
    assert decided(cli)[-1] == ("2026-06-11T11:45", "posted")


# At the very instant of a slot on a DST night, on a home no run has seen yet: `status` calls
# due what `run-due` then posts (ARCHITECTURE §2). (zone, slot times, the slot, its instant)
SLOT_INSTANTS_ON_DST_NIGHTS = [
    ("Europe/Dublin", ("01:30", "22:00"), "2026-10-25T01:30", "2026-10-25T00:30:00Z"),  # fold
    ("Europe/Berlin", ("02:30", "03:30"), "2026-03-29T03:30", "2026-03-29T01:30:00Z"),  # tie
    ("America/New_York", ("01:30",), "2026-11-01T01:30", "2026-11-01T05:30:00Z"),  # fold
    ("America/New_York", ("02:30",), "2026-03-08T02:30", "2026-03-08T07:30:00Z"),  # gap
    ("Australia/Lord_Howe", ("01:45",), "2026-04-05T01:45", "2026-04-04T14:45:00Z"),  # 30 min
    ("America/Nuuk", ("00:15", "23:30"), "2026-03-28T23:30", "2026-03-29T01:30:00Z"),  # spill
    ("America/Santiago", ("23:30",), "2026-04-04T23:30", "2026-04-05T02:30:00Z"),  # 24:00 fold
    ("Pacific/Chatham", ("03:00",), "2026-04-05T03:00", "2026-04-04T13:15:00Z"),
    ("America/Havana", ("00:30",), "2026-03-08T00:30", "2026-03-08T05:30:00Z"),  # midnight gap
]


@pytest.mark.parametrize(("zone", "times", "key", "instant"), SLOT_INSTANTS_ON_DST_NIGHTS)
def test_status_and_run_due_agree_at_a_slots_very_instant(
    home, cli, clip, zone, times, key, instant
):
    write_config(home, channel_toml(timezone=zone, slots=times))
    add_episodes(cli, clip, "Only")
    status = json.loads(autoretto("status", "--json", now=instant))["channels"][0]
    assert status["due"] == {"slot": key, "slot_at": instant}
    autoretto("run-due", now=instant)
    assert [(s["slot"], s["slot_at"]) for s in outbox_sidecars(home)] == [(key, instant)]


# Zones whose clocks change at 01:00 UTC, at local midnight either way, by half an hour, by an
# hour and a quarter off UTC, in the southern hemisphere.
DST_ZONES = [
    "Europe/Dublin", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Nuuk",
    "America/Santiago", "Pacific/Chatham", "America/Havana", "Asia/Beirut", "Africa/Cairo",
]  # fmt: skip


def clock_changes(zone: str, year: int) -> list[date]:
    """The local dates on which `zone` changes its offset in `year`."""
    tz = ZoneInfo(zone)
    day, found = date(year, 1, 1), []
    while day.year == year:
        start = datetime.combine(day, time(0), tzinfo=tz)
        if start.utcoffset() != (start + timedelta(days=1)).utcoffset():
            found.append(day)
        day += timedelta(days=1)
    return found


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    zone=st.sampled_from(DST_ZONES),
    times=st.lists(
        st.builds(time, st.integers(0, 23), st.sampled_from([0, 15, 30, 45])),
        min_size=1, max_size=4, unique=True,
    ),
    year=st.integers(2025, 2030),
    change=st.integers(0, 1),
    shift=st.integers(-1, 1),
    pick=st.integers(0, 3),
)  # fmt: skip
def test_status_calls_due_what_run_due_serves_at_any_slots_instant(
    tmp_path, cli, zone, times, year, change, shift, pick
):
    """A fresh home each time; `now` is exactly one slot's instant around a clock change."""
    changes = clock_changes(zone, year)
    assume(changes)
    schedule = Schedule(zone, tuple(times))
    slots = schedule.slots_on(changes[change % len(changes)] + timedelta(days=shift))
    instant = slots[pick % len(slots)].at
    # The slot is s*; of two at that instant (a gap time on another), the later key.
    expected = max(schedule.slots_between(instant, instant))
    now = expected.at_text
    home = tmp_path / f"home-{zone.replace('/', '-')}-{now}-{len(list(tmp_path.iterdir()))}"
    spelt = tuple(f"{t.hour:02d}:{t.minute:02d}" for t in times)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTORETTO_HOME", str(home))
        write_config(home, channel_toml(timezone=zone, slots=spelt))
        due = cli.json("status", now=now)["channels"][0]["due"]
        assert cli("run-due", now=now)[0] == 0
        served = [d["slot"] for d in cli.json("decisions") if d["outcome"] != "missed"]
    assert due == {"slot": expected.key, "slot_at": now}
    assert served == [expected.key]


def test_a_dry_run_on_a_new_home_shows_the_slot_due_at_this_very_instant(home, cli, clip):
    """`run-due --dry-run` judges a channel no run has seen yet as the run itself will: a slot
    at exactly now is owed, and the dry run says it would claim it."""
    write_config(home, channel_toml(slots=("10:00",)))
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "lofi 0")
    assert code == 0, err
    code, out, err = run_command("run-due", "--dry-run", now="2026-11-29T10:00:00Z")
    assert code == 0, err
    assert "lofi: would see this channel for the first time" in out
    assert "lofi 2026-11-29T10:00: would claim slot 2026-11-29T10:00" in out
    code, out, err = run_command("run-due", now="2026-11-29T10:00:00Z")
    assert code == 0, err
    assert "lofi 2026-11-29T10:00 folder: posted" in out
