"""Human pace: every rule of autoretto/pace.py as a property over many seeds."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoretto.pace import (
    AccountState,
    PaceConfig,
    SlotJob,
    bluesky_moment,
    next_read_at,
    post_now_moment,
    read_minute,
    reply_pause_draw,
    reply_sessions,
    session_size,
    slot_moment,
    suggest_times,
    twin_moment,
    wait_for,
)

BASE = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)

seeds = st.integers(min_value=0, max_value=2**63)
slot_instants = st.integers(min_value=0, max_value=400 * 24 * 60).map(
    lambda minutes: BASE + timedelta(minutes=minutes)
)
windows = st.sampled_from(["10m", "30m", "1h", "2h", "6h", "1d"]).map(
    lambda text: (
        {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}[text[-1]]
        * int(text[:-1])
    )
)
offsets = st.integers(min_value=-90 * 60, max_value=150 * 60).map(lambda s: timedelta(seconds=s))


def job(slot_at: datetime, window: timedelta, platform: str = "bluesky", channel: str = "lofi"):
    return SlotJob(channel, platform, slot_at.strftime("%Y-%m-%dT%H:%M"), slot_at, window)


@st.composite
def account_states(draw, slot_at: datetime):
    others = draw(st.lists(offsets, max_size=3))
    yesterday = draw(st.lists(offsets, max_size=2))
    return AccountState(
        day_before=tuple(slot_at - timedelta(days=1) + o for o in yesterday),
        others=tuple(slot_at + o for o in others),
    )


def fits(config: PaceConfig, moment: datetime, state: AccountState) -> bool:
    return all(
        abs(moment - timedelta(days=1) - d) >= config.day_before_gap for d in state.day_before
    ) and all(abs(moment - o) >= config.other_posts_gap for o in state.others)


@settings(max_examples=400, deadline=None)
@given(seed=seeds, slot_at=slot_instants, window=windows, data=st.data())
def test_a_bluesky_moment_keeps_every_rule(seed, slot_at, window, data):
    config = PaceConfig(seed=seed)
    state = data.draw(account_states(slot_at))
    moment = bluesky_moment(config, job(slot_at, window), state)
    if moment is None:
        # None only when truly no second of the allowed span is free.
        low = int(config.earliest_after_slot.total_seconds())
        high = int(min(config.latest_after_slot, window).total_seconds())
        assert not any(
            fits(config, slot_at + timedelta(seconds=s), state) for s in range(low, high + 1)
        )
        return
    after = moment - slot_at
    assert timedelta(minutes=3) <= config.earliest_after_slot <= after  # a few minutes after
    assert after <= config.latest_after_slot < timedelta(hours=1)  # under an hour
    assert after <= window  # never outside the catch-up window
    assert moment.microsecond == 0
    assert fits(config, moment, state)
    # Deterministic: a re-run computes the very same moment.
    assert bluesky_moment(PaceConfig(seed=seed), job(slot_at, window), state) == moment


@settings(max_examples=200, deadline=None)
@given(seed=seeds, slot_at=slot_instants)
def test_a_free_account_always_gets_a_moment(seed, slot_at):
    moment = bluesky_moment(PaceConfig(seed=seed), job(slot_at, timedelta(hours=2)), AccountState())
    assert moment is not None


@settings(max_examples=50, deadline=None)
@given(seed=seeds)
def test_bluesky_moments_spread_over_the_hour_not_one_minute(seed):
    config = PaceConfig(seed=seed)
    minutes = [
        (bluesky_moment(config, job(BASE + timedelta(days=d), timedelta(hours=2)), AccountState())
         - BASE - timedelta(days=d)).total_seconds() / 60
        for d in range(60)
    ]  # fmt: skip
    assert min(minutes) < 20 and max(minutes) > 40
    assert len({round(m) for m in minutes}) > 20


@settings(max_examples=100, deadline=None)
@given(seed=seeds, slot_at=slot_instants)
def test_the_day_before_minute_is_avoided(seed, slot_at):
    config = PaceConfig(seed=seed)
    first = bluesky_moment(config, job(slot_at, timedelta(hours=2)), AccountState())
    next_day = slot_at + timedelta(days=1)
    second = bluesky_moment(
        config, job(next_day, timedelta(hours=2)), AccountState(day_before=(first,))
    )
    assert abs((second - next_day) - (first - slot_at)) >= config.day_before_gap


@settings(max_examples=100, deadline=None)
@given(seed=seeds, slot_at=slot_instants)
def test_two_channels_on_one_account_post_25_minutes_apart(seed, slot_at):
    config = PaceConfig(seed=seed)
    first = bluesky_moment(config, job(slot_at, timedelta(hours=2), channel="lofi"), AccountState())
    second = bluesky_moment(
        config, job(slot_at, timedelta(hours=2), channel="jazz"), AccountState(others=(first,))
    )
    assert second is not None and abs(second - first) >= timedelta(minutes=25)


@settings(max_examples=300, deadline=None)
@given(seed=seeds, command_at=slot_instants, key=st.text(min_size=1, max_size=12))
def test_post_now_goes_out_20_seconds_to_2_minutes_after_the_command(seed, command_at, key):
    config = PaceConfig(seed=seed)
    moment = post_now_moment(config, command_at, key)
    assert timedelta(seconds=20) <= moment - command_at <= timedelta(minutes=2)
    assert moment == post_now_moment(config, command_at, key)


@settings(max_examples=50, deadline=None)
@given(seed=seeds)
def test_post_now_is_not_always_on_the_same_second(seed):
    config = PaceConfig(seed=seed)
    delays = {(post_now_moment(config, BASE, f"run-{n}") - BASE).seconds for n in range(30)}
    assert len(delays) > 10


@settings(max_examples=300, deadline=None)
@given(seed=seeds, slot_at=slot_instants, window=windows)
def test_language_twins_post_7_to_29_minutes_after_the_family_minute(seed, slot_at, window):
    config = PaceConfig(seed=seed, twins={"lofi-de": "lofi"})
    twin = job(slot_at, window, platform="youtube", channel="lofi-de")
    moment = slot_moment(config, twin, AccountState())
    if window < timedelta(minutes=7):
        assert moment is None
        return
    assert timedelta(minutes=7) <= moment - slot_at <= min(timedelta(minutes=29), window)
    # A release goes out together: every platform of the twin's slot gets the same moment.
    assert twin_moment(config, job(slot_at, window, "folder", "lofi-de")) == moment
    # The family channel itself keeps the creator's time.
    family = job(slot_at, window, platform="youtube", channel="lofi")
    assert slot_moment(config, family, AccountState()) == slot_at


@settings(max_examples=100, deadline=None)
@given(seed=seeds, slot_at=slot_instants, window=windows)
def test_other_platforms_keep_the_creators_time(seed, slot_at, window):
    config = PaceConfig(seed=seed)
    for platform in ("youtube", "facebook", "x", "folder"):
        assert slot_moment(config, job(slot_at, window, platform), AccountState()) == slot_at


@settings(max_examples=500, deadline=None)
@given(seed=seeds, now=slot_instants, second=st.integers(0, 3599))
def test_background_reads_run_at_the_installations_own_minute(seed, now, second):
    now = now + timedelta(seconds=second)
    minute = read_minute(seed)
    assert 1 <= minute <= 59
    moment = next_read_at(seed, now)
    assert now <= moment < now + timedelta(hours=1)
    assert moment.minute == minute and moment.second == 0


def test_installations_draw_different_read_minutes():
    assert len({read_minute(seed) for seed in range(200)}) > 40


@settings(max_examples=300, deadline=None)
@given(
    seed=seeds,
    started=slot_instants,
    elapsed=st.integers(0, 3600),
    moments=st.lists(st.integers(-7200, 7200), max_size=6),
)
def test_run_due_waits_only_for_moments_before_the_next_tick(seed, started, elapsed, moments):
    config = PaceConfig(seed=seed, cron_interval=timedelta(hours=1))
    now = started + timedelta(seconds=elapsed)
    pending = [started + timedelta(seconds=s) for s in moments] + [None]
    waits = wait_for(config, pending, started, now)
    assert waits == sorted(waits)
    assert all(now < m < started + config.cron_interval for m in waits)
    assert len(waits) == sum(
        1 for m in pending if m is not None and now < m < started + config.cron_interval
    )


def test_an_hourly_cron_meets_a_moment_37_minutes_after_the_slot():
    config = PaceConfig(seed=1)
    moment = BASE + timedelta(minutes=37)
    assert wait_for(config, [moment], BASE, BASE + timedelta(seconds=4)) == [moment]


@settings(max_examples=300, deadline=None)
@given(
    seed=seeds,
    times=st.lists(
        st.tuples(st.integers(0, 23), st.sampled_from([0, 0, 7, 15, 30, 42])), max_size=6
    ),
)
def test_config_check_suggests_times_off_the_hour(seed, times):
    slots = sorted({f"{h:02d}:{m:02d}" for h, m in times})
    suggestions = suggest_times(slots, seed)
    assert set(suggestions) == {s for s in slots if s.endswith(":00")}
    for asked, suggested in suggestions.items():
        hour, minute = suggested.split(":")
        assert hour == asked[:2] and 3 <= int(minute) <= 13 and int(minute) % 5
        assert suggested not in slots
    assert len(set(suggestions.values())) == len(suggestions)
    assert suggest_times(slots, seed) == suggestions


# -- reply sessions (issue 28) ---------------------------------------------------------------

zones = st.sampled_from(
    ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Pacific/Auckland"]
)
days = st.integers(min_value=0, max_value=3 * 365).map(lambda n: BASE.date() + timedelta(days=n))


@settings(max_examples=300, deadline=None)
@given(seed=seeds, day=days, zone=zones, account=st.text(min_size=1, max_size=20))
def test_reply_sessions_keep_every_rule(seed, day, zone, account):
    from zoneinfo import ZoneInfo

    config = PaceConfig(seed=seed)
    tz = ZoneInfo(zone)
    sessions = reply_sessions(config, "bluesky", account, day, tz)
    assert 2 <= len(sessions) <= 4
    for session in sessions:
        local = session.start.astimezone(tz)
        assert local.date() == day
        assert 9 <= local.hour < 22  # between 09:00 and 22:00, local time
        assert 2 <= session.size <= 5
        assert session.start.second == 0
    for earlier, later in itertools.pairwise(sessions):
        assert later.start - earlier.start >= timedelta(hours=2)
        assert earlier.end == later.start
    # never at the same minute of the hour as a session of the day before
    yesterday = reply_sessions(config, "bluesky", account, day - timedelta(days=1), tz)
    assert not {s.start.minute for s in sessions} & {s.start.minute for s in yesterday}
    # deterministic
    assert reply_sessions(PaceConfig(seed=seed), "bluesky", account, day, tz) == sessions


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_reply_sessions_are_spread_through_the_day_not_one_hour(seed):
    from zoneinfo import ZoneInfo

    config = PaceConfig(seed=seed)
    starts = [
        s.start.hour
        for n in range(40)
        for s in reply_sessions(
            config, "bluesky", "me", BASE.date() + timedelta(days=n), ZoneInfo("UTC")
        )
    ]
    assert min(starts) <= 11 and max(starts) >= 18
    assert len(set(starts)) >= 6


@settings(max_examples=300, deadline=None)
@given(seed=seeds, done=st.integers(min_value=1, max_value=5), key=st.text(max_size=12))
def test_a_pause_after_a_reply_is_20_seconds_to_4_minutes(seed, done, key):
    config = PaceConfig(seed=seed)
    pause = reply_pause_draw(config, "bluesky", "me", key, done)
    assert timedelta(seconds=20) <= pause <= timedelta(minutes=4)
    assert pause == reply_pause_draw(config, "bluesky", "me", key, done)
    assert 2 <= session_size(config, "bluesky", "me", key) <= 5


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_pauses_vary(seed):
    config = PaceConfig(seed=seed)
    pauses = {reply_pause_draw(config, "bluesky", "me", "s", n).seconds for n in range(1, 30)}
    assert len(pauses) > 10
