"""slots.py: slot instants across DST, and the due rule, as properties over many schedules."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoretto.slots import Schedule, Seen, due_rule, holds, parse_wall_time, take

# Zones with gaps and folds of one hour, half an hour (Lord Howe), at midnight (Havana,
# Santiago), far from UTC (Chatham), southern-hemisphere DST, and none at all.
ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "America/Havana",
    "America/Santiago",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "UTC",
]

zones = st.sampled_from(ZONES)
wall_times = st.builds(time, st.integers(0, 23), st.sampled_from([0, 15, 30, 45, 59]))
time_lists = st.lists(wall_times, min_size=1, max_size=6, unique=True)
weekday_sets = st.frozensets(st.integers(0, 6), min_size=1)
dates = st.dates(min_value=date(2020, 1, 1), max_value=date(2032, 12, 31))
instants = st.datetimes(
    min_value=datetime(2020, 1, 2), max_value=datetime(2032, 12, 30), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=0))
windows = st.sampled_from([timedelta(minutes=10), timedelta(hours=2), timedelta(days=1)])


def berlin(*times: str) -> Schedule:
    return Schedule("Europe/Berlin", tuple(parse_wall_time(t) for t in times))


def test_spring_forward_gap_takes_the_offset_from_before_the_gap():
    # 2026-03-29: Berlin jumps from 02:00 CET to 03:00 CEST. 02:30 does not exist.
    (slot,) = berlin("02:30").slots_on(date(2026, 3, 29))
    assert slot.key == "2026-03-29T02:30"
    assert slot.at == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST


def test_fall_back_fold_is_the_first_occurrence():
    # 2026-10-25: Berlin goes back from 03:00 CEST to 02:00 CET. 02:30 happens twice.
    (slot,) = berlin("02:30").slots_on(date(2026, 10, 25))
    assert slot.at == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST, the first


def test_weekdays_filter_days():
    schedule = Schedule("UTC", (time(10),), frozenset({0}))  # Mondays only
    found = schedule.slots_between(
        datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 12, 6, 23, 59, tzinfo=UTC)
    )
    assert [s.key for s in found] == ["2026-11-23T10:00", "2026-11-30T10:00"]


@settings(max_examples=300, deadline=None)
@given(zone=zones, times=time_lists, weekdays=weekday_sets, start=dates, days=st.integers(1, 40))
def test_every_scheduled_day_yields_each_slot_exactly_once(zone, times, weekdays, start, days):
    schedule = Schedule(zone, tuple(times), weekdays)
    first = datetime.combine(start, time(0), tzinfo=schedule.zone).astimezone(UTC)
    last = first + timedelta(days=days)
    found = schedule.slots_between(first - timedelta(days=2), last + timedelta(days=2))
    keys = [s.key for s in found]
    assert len(keys) == len(set(keys)), "a slot appeared twice"
    for offset in range(days):
        day = start + timedelta(days=offset)
        on_day = [k for k in keys if k.startswith(day.isoformat())]
        expected = len(times) if day.weekday() in weekdays else 0
        assert len(on_day) == expected
    # The instant is the wall time in the zone, or just after a gap: never earlier.
    for slot in found:
        local = slot.at.astimezone(schedule.zone)
        wall = datetime.fromisoformat(slot.key)
        assert local.replace(tzinfo=None) >= wall
        assert local.replace(tzinfo=None) - wall < timedelta(hours=2)


@settings(max_examples=300, deadline=None)
@given(
    zone=zones,
    times=time_lists,
    weekdays=weekday_sets,
    now=instants,
    window=windows,
    seen_back=st.integers(0, 10 * 86400),
    decided_back=st.one_of(st.none(), st.integers(0, 5 * 86400)),
)
def test_due_rule_never_yields_old_or_future_slots(
    zone, times, weekdays, now, window, seen_back, decided_back
):
    schedule = Schedule(zone, tuple(times), weekdays)
    seen_at = now - timedelta(seconds=seen_back)
    decided = None if decided_back is None else now - timedelta(seconds=decided_back)
    result = due_rule(
        schedule, window=window, now=now, seen_at=seen_at, decided_through=decided, missed_limit=50
    )
    latest = schedule.latest_at_or_before(now)
    if result.latest is not None:
        assert result.latest == latest  # with one schedule, s* is the schedule's latest slot
    if result.due is not None:
        assert result.due == latest  # at most one due slot, and it is s*
        assert result.due.at <= now
        assert now - result.due.at <= window
        assert result.due.at >= seen_at
        assert decided is None or result.due.at > decided
        assert result.due not in result.missed
    for slot in result.missed:
        assert slot.at <= now
        assert slot.at >= seen_at
        assert decided is None or slot.at > decided
    assert len(result.missed) <= 50
    assert len({s.key for s in result.missed}) == len(result.missed)


@settings(max_examples=150, deadline=None)
@given(
    zone=zones,
    times=time_lists,
    start=instants,
    steps=st.lists(st.integers(-3 * 3600, 30 * 3600), min_size=1, max_size=25),
    window=windows,
)
def test_repeated_runs_decide_each_slot_at_most_once(zone, times, start, steps, window):
    """Runs at arbitrary moments (clock jumps back included): no slot is due or missed twice."""
    schedule = Schedule(zone, tuple(times))
    seen_at, decided = start, None
    decided_keys: set[str] = set()
    now = start
    for step in steps:
        now = now + timedelta(seconds=step)
        result = due_rule(
            schedule, window=window, now=now, seen_at=seen_at, decided_through=decided
        )
        fresh = [*result.missed, *([result.due] if result.due else [])]
        for slot in fresh:
            assert slot.key not in decided_keys, f"{slot.key} decided twice"
            assert slot.at >= seen_at
            decided_keys.add(slot.key)
        if fresh:
            newest = max(s.at for s in fresh)
            decided = newest if decided is None else max(decided, newest)


@settings(max_examples=200, deadline=None)
@given(
    zone=zones,
    old_times=time_lists,
    new_times=time_lists,
    weekdays=weekday_sets,
    first_seen=instants,
    edit_after=st.integers(0, 3 * 86400),
    now_after=st.integers(0, 3 * 86400),
    window=windows,
)
def test_an_edit_keeps_shared_slots_and_never_fires_added_past_ones(
    zone, old_times, new_times, weekdays, first_seen, edit_after, now_after, window
):
    """The owed rule: a slot before the edit was seen is owed only if the old schedule had
    that very slot; one after it is owed. Checked against a plain count of the slots."""
    old = Schedule(zone, tuple(old_times), weekdays)
    new = Schedule(zone, tuple(new_times), weekdays)
    edit_seen = first_seen + timedelta(seconds=edit_after)
    now = edit_seen + timedelta(seconds=now_after)
    result = due_rule(
        new, window=window, now=now, seen_at=edit_seen, decided_through=None,
        earlier=(Seen(first_seen, old),), missed_limit=10_000,
    )  # fmt: skip
    owed = [s for s in new.slots_between(first_seen, now) if s.at >= edit_seen or holds(old, s)]
    expected_latest = max(owed) if owed else None
    assert result.latest == expected_latest
    expected_due = (
        expected_latest
        if expected_latest is not None and now - expected_latest.at <= window
        else None
    )
    assert result.due == expected_due
    assert sorted(result.missed) == sorted(s for s in owed if s != expected_due)
    for slot in result.missed:
        assert result.reasons[slot.key]


@settings(max_examples=200, deadline=None)
@given(
    zone=zones,
    times=time_lists,
    now=instants,
    seen_back=st.integers(3600, 4 * 86400),
    picks=st.lists(st.booleans(), min_size=0, max_size=40),
    window=windows,
)
def test_each_slot_above_the_mark_is_judged_by_its_own_decision(
    zone, times, now, seen_back, picks, window
):
    """No "decided through" shortcut: a slot decided on its own is never due or missed
    again, and every owed slot never decided is due or missed."""
    schedule = Schedule(zone, tuple(times))
    seen_at = now - timedelta(seconds=seen_back)
    owed = schedule.slots_between(seen_at, now)
    decided = {s.key for s, pick in zip(owed, picks, strict=False) if pick}
    result = due_rule(
        schedule, window=window, now=now, seen_at=seen_at, decided_through=None,
        decided=frozenset(decided), missed_limit=10_000,
    )  # fmt: skip
    found = {s.key for s in (*result.missed, *([result.due] if result.due else []))}
    assert found == {s.key for s in owed} - decided
    assert result.due is None or result.due == max(owed)


def test_a_slot_at_or_before_the_stamp_is_missed_not_due():
    schedule = Schedule("UTC", (time(10), time(11), time(12)))
    now = datetime(2026, 11, 29, 11, 5, tzinfo=UTC)
    result = due_rule(
        schedule, window=timedelta(hours=2), now=now,
        seen_at=datetime(2026, 11, 29, 10, 50, tzinfo=UTC), decided_through=None,
        stamp=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
    )  # fmt: skip
    assert result.due is None
    (missed,) = result.missed
    assert missed.key == "2026-11-29T11:00"
    assert "2026-11-29T12:00 was already released" in result.reasons[missed.key]


# Clock changes that move one local date's slots past the next date's first ones, or back
# before the previous date's last ones: a spring gap ending at midnight (Nuuk since 2023, Dhaka
# 2009), a whole day skipped (Apia 2011), a three-hour fall-back across midnight (Casey 2010),
# and falls back at 24:00 (Santiago). (zone, a local date next to the change)
DATE_LINE_CHANGES = [
    ("America/Nuuk", date(2026, 3, 28)),
    ("America/Nuuk", date(2026, 10, 24)),
    ("Asia/Dhaka", date(2009, 6, 19)),
    ("Pacific/Apia", date(2011, 12, 30)),
    ("Antarctica/Casey", date(2010, 3, 4)),
    ("America/Santiago", date(2026, 4, 4)),
    ("Europe/Berlin", date(2026, 3, 29)),
]


@settings(max_examples=300, deadline=None)
@given(
    change=st.sampled_from(DATE_LINE_CHANGES),
    times=time_lists,
    weekdays=weekday_sets,
    seconds=st.integers(-3 * 86400, 4 * 86400),
)
def test_slots_are_walked_in_time_order_across_a_clock_change(change, times, weekdays, seconds):
    """walk_back, walk_forward and latest_at_or_before give the slots as slots sort (instant,
    then key), whatever local date each one has: the due rule stops its walk at the first slot
    at or before the decided-through mark, so one out of order would hide a later one."""
    zone, day = change
    schedule = Schedule(zone, tuple(times), weekdays)
    moment = datetime.combine(day, time(0), tzinfo=UTC) + timedelta(seconds=seconds)
    around = schedule.slots_between(moment - timedelta(days=9), moment + timedelta(days=9))
    before = [s for s in around if s.at <= moment]
    after = [s for s in around if s.at > moment]
    assert take(schedule.walk_back(moment), len(before)) == before[::-1]
    strictly = [s for s in before if s.at < moment]
    walked = take(schedule.walk_back(moment, strictly_before=True), len(strictly))
    assert walked == strictly[::-1]
    assert take(schedule.walk_forward(moment), len(after)) == after
    assert schedule._latest_at_or_before(moment) == (before[-1] if before else None)


def test_a_slot_the_gap_pushes_past_the_next_days_first_is_due_above_the_mark():
    """Nuuk, 2026-03-28: Saturday 23:30 is in the 23:00→00:00 gap and lands at 01:30Z, after
    Sunday 00:15 (01:15Z), which was posted; the mark stands at 01:15Z."""
    nuuk = Schedule("America/Nuuk", (time(0, 15), time(23, 30)), frozenset({5, 6}))
    posted = datetime(2026, 3, 29, 1, 15, tzinfo=UTC)
    result = due_rule(
        nuuk, window=timedelta(hours=2), now=datetime(2026, 3, 29, 1, 35, tzinfo=UTC),
        seen_at=datetime(2026, 3, 28, 14, tzinfo=UTC), decided_through=posted, stamp=posted,
    )  # fmt: skip
    assert result.due is not None and result.due.key == "2026-03-28T23:30"
    assert result.due.at == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert result.missed == ()
