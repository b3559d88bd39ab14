"""Slot arithmetic and the due rule (ARCHITECTURE.md §1–2). Pure: no I/O, no clock.

A slot is one (local date, local time) of a channel's schedule. Its key is the local wall time
(`2026-11-29T10:00`), its instant that wall time in the channel's zone, with two DST rules:

- a local time that does not exist (spring-forward gap) takes the offset from before the gap,
  which lands right after the gap (02:30 in a 02:00→03:00 gap becomes 03:30 local);
- a local time that happens twice (fall-back) is its first occurrence.

Python's `fold=0` gives exactly both rules, so an instant is `datetime.combine(date, time,
zone)` converted to UTC. A slot exists exactly once per scheduled day whatever the clocks do;
two slots may share an instant (02:30 in the gap and a 03:30 slot), and then the one with the
later key counts as the more recent.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from functools import cached_property, lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo

from .errors import shown

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")

# With at least one weekday scheduled there is a slot in any 7 local days; one more day covers
# instants that DST moved across midnight.
_DAYS_TO_SEARCH = 8
_LAST_SECOND = timedelta(hours=23, minutes=59, seconds=59)


class Slot(NamedTuple):
    """One scheduled release: its UTC instant and its local wall-time key (ordered by both)."""

    at: datetime
    key: str

    @property
    def at_text(self) -> str:
        return _utc_text(self.at)


@dataclass(frozen=True)
class Schedule:
    """A channel's schedule: zone, local times of day, weekdays (0 = Monday)."""

    timezone: str
    times: tuple[time, ...]
    weekdays: frozenset[int] = frozenset(range(7))

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @cached_property
    def _sorted_times(self) -> tuple[time, ...]:
        return tuple(sorted(set(self.times)))

    @cached_property
    def _wall_parts(self) -> tuple[tuple[time, timedelta, str], ...]:
        return _wall_parts(self._sorted_times)

    @cached_property
    def _wall_columns(self) -> tuple[tuple[time, ...], tuple[timedelta, ...], tuple[str, ...]]:
        walls, sinces, suffixes = zip(*self._wall_parts, strict=True)
        return walls, sinces, suffixes

    @cached_property
    def _days(self) -> dict[date, tuple[tuple[datetime, ...], tuple[str, ...]]]:
        return {}

    def _day(self, local_date: date) -> tuple[tuple[datetime, ...], tuple[str, ...]]:
        """One local date's slots as (instants, keys), sorted as slots sort. Slot objects are
        made only for the slots asked for: `status` over many channels looks at a few each.
        Channels with the same schedule share the computed days."""
        known = self._days.get(local_date)
        if known is None:
            known = self._days[local_date] = _shared_day(self, local_date)
        return known

    def slots_on(self, local_date: date) -> list[Slot]:
        """The slots of one local date (none when the weekday is not scheduled)."""
        ats, keys = self._day(local_date)
        return list(map(Slot, ats, keys))

    def _compute_day(self, local_date: date) -> tuple[tuple[datetime, ...], tuple[str, ...]]:
        if local_date.weekday() not in self.weekdays:
            return (), ()
        zone = self.zone
        day = local_date.isoformat()
        midnight = datetime.combine(local_date, time(0))
        offset = zone.utcoffset(midnight)
        if offset == zone.utcoffset(midnight + _LAST_SECOND):
            # No clock change today (363 days a year): one offset for every slot.
            base = midnight.replace(tzinfo=UTC) - offset
            _, sinces, suffixes = self._wall_columns
            return tuple(map(base.__add__, sinces)), tuple(map(day.__add__, suffixes))
        found = sorted(
            (datetime.combine(local_date, wall, tzinfo=zone).astimezone(UTC), day + suffix)
            for wall, _, suffix in self._wall_parts
        )
        return tuple(at for at, _ in found), tuple(key for _, key in found)

    @property
    def spec(self) -> dict[str, object]:
        """What the schedule is, as plain data (kept in the database's schedule history)."""
        return {
            "timezone": self.timezone,
            "times": [f"{t.hour:02d}:{t.minute:02d}" for t in self._sorted_times],
            "weekdays": sorted(self.weekdays),
        }

    @classmethod
    def from_spec(cls, spec: Mapping[str, object]) -> Schedule:
        return cls(
            str(spec["timezone"]),
            tuple(parse_wall_time(str(t)) for t in spec["times"]),  # type: ignore[union-attr]
            frozenset(int(d) for d in spec["weekdays"]),  # type: ignore[union-attr]
        )

    def local_date(self, moment: datetime) -> date:
        return moment.astimezone(self.zone).date()

    def slots_between(self, start: datetime, end: datetime) -> list[Slot]:
        """Every slot with `start <= at <= end`, oldest first."""
        if end < start:
            return []
        first = self.local_date(start) - timedelta(days=1)
        last = self.local_date(end) + timedelta(days=1)
        found: list[Slot] = []
        day = first
        while day <= last:
            found.extend(s for s in self.slots_on(day) if start <= s.at <= end)
            day += timedelta(days=1)
        return sorted(found)

    @cached_property
    def _latest(self) -> dict[datetime, Slot | None]:
        return {}

    def latest_at_or_before(self, moment: datetime) -> Slot | None:
        """`s*`: the most recent slot whose instant is `<= moment`. Channels with the same
        schedule share the answer (`status` asks it of every channel at one moment)."""
        known = self._latest
        if moment not in known:
            if len(known) >= 64:  # a long-lived process (the page) asks at ever new moments
                known.clear()
            known[moment] = self._latest_at_or_before(moment)
        return known[moment]

    def _latest_at_or_before(self, moment: datetime) -> Slot | None:
        # A local date's slots are not all later than the date before's: a spring gap that
        # ends at midnight (Nuuk's 23:00→00:00) puts Saturday 23:30 after Sunday 00:15. They are
        # all later than those two dates before (no clock moves by more than a day), so the
        # newest slot at or before `moment` is on the newest date that has one, or the date
        # before it. The walk starts a date ahead: a fall-back across midnight (Casey's 02:00→
        # 23:00 in 2010) makes a later date's first slots happen before `moment`.
        day = self.local_date(moment) + timedelta(days=1)
        for back in range(_DAYS_TO_SEARCH + 2):
            newer = self._last_at_or_before(day - timedelta(days=back), moment)
            if newer is not None:
                older = self._last_at_or_before(day - timedelta(days=back + 1), moment)
                return newer if older is None else max(newer, older)
        return None

    def _last_at_or_before(self, local_date: date, moment: datetime) -> Slot | None:
        ats, keys = self._day(local_date)
        index = bisect_right(ats, moment)
        # sorted as slots sort: the last one at or before is the newest
        return Slot(ats[index - 1], keys[index - 1]) if index else None

    def walk_back(self, moment: datetime, *, strictly_before: bool = False) -> Iterator[Slot]:
        """Slots at or before `moment` (or strictly before), newest first (as slots sort),
        without end.

        Dates are read newest first, from the date after the one of `moment` (see
        `_latest_at_or_before`), and merged: a date's slots are given once the date before is
        read, as every slot of the dates before that one is older than all of them."""
        cut = bisect_left if strictly_before else bisect_right
        day = self.local_date(moment) + timedelta(days=1)
        pending: list[Slot] = []  # the last date read's slots not yet given, oldest first
        empty_days = 0
        while empty_days <= _DAYS_TO_SEARCH:
            ats, keys = self._day(day)
            index = cut(ats, moment)
            empty_days = 0 if index else empty_days + 1
            merged = sorted([*pending, *map(Slot, ats[:index], keys[:index])])
            # The slots from the date after `day` go now, with those of `day` above the oldest.
            ready = bisect_left(merged, pending[0]) if pending else len(merged)
            yield from reversed(merged[ready:])
            pending = merged[:ready]
            day -= timedelta(days=1)
        yield from reversed(pending)

    def walk_forward(self, moment: datetime) -> Iterator[Slot]:
        """Slots strictly after `moment`, oldest first (as slots sort), without end; dates are
        merged as in `walk_back`, starting the date before the one of `moment`."""
        day = self.local_date(moment) - timedelta(days=1)
        pending: list[Slot] = []  # the last date read's slots not yet given, oldest first
        empty_days = 0
        while empty_days <= _DAYS_TO_SEARCH:
            ats, keys = self._day(day)
            index = bisect_right(ats, moment)
            empty_days = 0 if index < len(ats) else empty_days + 1
            merged = sorted([*pending, *map(Slot, ats[index:], keys[index:])])
            # The slots from the date before `day` go now, with those of `day` below the newest.
            ready = bisect_right(merged, pending[-1]) if pending else 0
            yield from merged[:ready]
            pending = merged[ready:]
            day += timedelta(days=1)
        yield from pending


@lru_cache(maxsize=16384)
def _utc_text(at: datetime) -> str:
    """An instant as the database and `--json` write it. Channels share instants (hourly slots
    in every zone fall on the same UTC hours), so `status` over many formats each once."""
    return at.isoformat().replace("+00:00", "Z")


@lru_cache(maxsize=16384)
def _shared_day(
    schedule: Schedule, local_date: date
) -> tuple[tuple[datetime, ...], tuple[str, ...]]:
    return schedule._compute_day(local_date)


@lru_cache(maxsize=1024)
def _wall_parts(times: tuple[time, ...]) -> tuple[tuple[time, timedelta, str], ...]:
    """Each time of day with its offset from midnight and its key suffix (`T10:00`)."""
    return tuple(
        (
            wall,
            timedelta(hours=wall.hour, minutes=wall.minute),
            f"T{wall.hour:02d}:{wall.minute:02d}",
        )
        for wall in times
    )


def take(slots: Iterable[Slot], count: int) -> list[Slot]:
    result: list[Slot] = []
    for slot in slots:
        if len(result) >= count:
            break
        result.append(slot)
    return result


@dataclass(frozen=True)
class Seen:
    """A schedule the channel had, from the moment a run first saw it."""

    seen_at: datetime
    schedule: Schedule


def holds(schedule: Schedule, slot: Slot) -> bool:
    """Does `schedule` have this very slot: the same local key at the same instant?"""
    return slot in schedule.slots_on(date.fromisoformat(slot.key[:10]))


@dataclass(frozen=True)
class DueResult:
    """What the due rule says for one channel at one moment.

    `latest` is `s*`, the most recent owed slot at or before now that is newer than the
    channel's decided-through mark (None when every owed slot up to now is decided); `due` is
    `s*` when it may be posted now; `missed` are the owed slots (newest first) that were never
    decided and now never will be, `s*` included when it cannot be due; `reasons` says why each
    one is missed, by key.
    """

    latest: Slot | None
    due: Slot | None
    missed: tuple[Slot, ...]
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def settled_through(self) -> datetime | None:
        """Once the missed slots are recorded, every owed slot up to here is decided (the due
        slot itself is settled by its claim)."""
        if self.latest is None:
            return None
        if self.due is None:
            return self.latest.at
        return self.missed[0].at if self.missed else None


def due_rule(
    schedule: Schedule,
    *,
    window: timedelta,
    now: datetime,
    seen_at: datetime,
    decided_through: datetime | None,
    earlier: Sequence[Seen] = (),
    decided: Container[str] = frozenset(),
    stamp: datetime | None = None,
    missed_limit: int = 100,
) -> DueResult:
    """Apply ARCHITECTURE.md §2 to one channel.

    `seen_at` is when a run first saw the channel's current schedule, `earlier` the schedules
    it had before (oldest first). A slot is owed when it is at or after `seen_at`, or when the
    schedule in force at its instant (the latest one seen at or before it) held that very slot:
    an edit never fires a slot it adds in the past, and never cancels one both schedules share.
    `decided_through` is the channel's mark: every owed slot at or before it is decided, so the
    walk back stops there. Above it, each slot's own decision counts: `decided` holds the keys
    of the slots decided there. `stamp` is the slot instant of the latest release: a slot at or
    before it is never due. At most `missed_limit` missed slots are returned, the most recent.
    """
    first_seen = earlier[0].seen_at if earlier else seen_at

    def owed(slot: Slot) -> bool:
        if slot.at >= seen_at:
            return True
        in_force = None
        for entry in earlier:
            if entry.seen_at > slot.at:
                break
            in_force = entry
        return in_force is not None and holds(in_force.schedule, slot)

    latest: Slot | None = None
    due: Slot | None = None
    missed: list[Slot] = []
    reasons: dict[str, str] = {}
    newer: Slot | None = None  # the owed slot just after this one
    for slot in schedule.walk_back(now):
        if slot.at < first_seen or (decided_through is not None and slot.at <= decided_through):
            break
        if not owed(slot):
            continue
        if latest is None:
            latest = slot
        if slot.key not in decided:
            if slot == latest and now - slot.at <= window and (stamp is None or stamp < slot.at):
                due = slot
            elif len(missed) < missed_limit:
                missed.append(slot)
                reasons[slot.key] = _missed_reason(
                    slot, newer, now=now, window=window, stamp=stamp, zone=schedule.zone, due=due
                )
            else:
                break
        newer = slot
    return DueResult(latest, due, tuple(missed), reasons)


def _missed_reason(
    slot: Slot,
    newer: Slot | None,
    *,
    now: datetime,
    window: timedelta,
    stamp: datetime | None,
    zone: ZoneInfo,
    due: Slot | None,
) -> str:
    if newer is not None and newer.at == slot.at:
        return (
            f"falls on the same instant as {newer.key} (a time the clock change skipped); "
            "the later key is the slot"
        )
    if stamp is not None and stamp >= slot.at:
        released = stamp.astimezone(zone).strftime("%Y-%m-%dT%H:%M")
        return f"the later slot {released} was already released; only the most recent is filled"
    late = now - slot.at
    if late > window:
        return f"found {span(late)} after its time, outside the {span(window)} catch-up window"
    if due is not None:
        return "a later slot was due; only the most recent slot is filled"
    later = f", {newer.key}" if newer is not None else ""
    return f"a later slot{later} came first; only the most recent slot is filled"


def span(delta: timedelta) -> str:
    """A duration as the config writes it: `11m`, `2h`, `2h30m`, `1d`."""
    seconds = int(delta.total_seconds())
    if seconds % 86400 == 0 and seconds:
        return f"{seconds // 86400}d"
    if seconds >= 3600:
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h{rest // 60:02d}m" if rest else f"{hours}h"
    return f"{seconds // 60}m"


@lru_cache(maxsize=4096)
def parse_wall_time(text: str) -> time:
    """`"10:00"` → time(10, 0). Raises ValueError with the reason."""
    parts = str(text).split(":")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() and len(p) == 2 for p in parts):
        raise ValueError(f'{shown(text)} is not a time of day; write it as HH:MM, e.g. "10:00"')
    hour, minute = int(parts[0]), int(parts[1])
    if hour > 23 or minute > 59:
        raise ValueError(f"{shown(text)} is not a time of day (hours 00-23, minutes 00-59)")
    return time(hour, minute)
