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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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
        return self.at.isoformat().replace("+00:00", "Z")


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
    def _days(self) -> dict[date, list[Slot]]:
        return {}

    def slots_on(self, local_date: date) -> list[Slot]:
        """The slots of one local date (none when the weekday is not scheduled)."""
        known = self._days.get(local_date)
        if known is None:
            known = self._days[local_date] = self._compute_slots_on(local_date)
        return list(known)

    def _compute_slots_on(self, local_date: date) -> list[Slot]:
        if local_date.weekday() not in self.weekdays:
            return []
        zone = self.zone
        day = local_date.isoformat()
        midnight = datetime.combine(local_date, time(0))
        offset = zone.utcoffset(midnight)
        if offset == zone.utcoffset(midnight + _LAST_SECOND):
            # No clock change today (363 days a year): one offset for every slot.
            base = midnight.replace(tzinfo=UTC) - offset
            return [Slot(base + since, day + suffix) for _, since, suffix in self._wall_parts]
        return sorted(
            Slot(datetime.combine(local_date, wall, tzinfo=zone).astimezone(UTC), day + suffix)
            for wall, _, suffix in self._wall_parts
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

    def latest_at_or_before(self, moment: datetime) -> Slot | None:
        """`s*`: the most recent slot whose instant is `<= moment`."""
        day = self.local_date(moment)
        for back in range(_DAYS_TO_SEARCH + 1):
            # Each day is looked at together with the day before: a gap near midnight can push
            # an evening slot past the next day's first slot.
            candidates = [
                s
                for offset in (back, back + 1)
                for s in self.slots_on(day - timedelta(days=offset))
                if s.at <= moment
            ]
            if candidates:
                return max(candidates)
        return None

    def walk_back(self, moment: datetime, *, strictly_before: bool = False) -> Iterator[Slot]:
        """Slots at or before `moment` (or strictly before), newest first, without end."""
        day = self.local_date(moment) + timedelta(days=1)
        empty_days = 0
        while empty_days <= _DAYS_TO_SEARCH:
            day_slots = [
                s
                for s in self.slots_on(day)
                if (s.at < moment if strictly_before else s.at <= moment)
            ]
            empty_days = 0 if day_slots else empty_days + 1
            yield from sorted(day_slots, reverse=True)
            day -= timedelta(days=1)

    def walk_forward(self, moment: datetime) -> Iterator[Slot]:
        """Slots strictly after `moment`, oldest first, without end."""
        day = self.local_date(moment) - timedelta(days=1)
        empty_days = 0
        while empty_days <= _DAYS_TO_SEARCH:
            day_slots = [s for s in self.slots_on(day) if s.at > moment]
            empty_days = 0 if day_slots else empty_days + 1
            yield from day_slots
            day += timedelta(days=1)


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
class DueResult:
    """What the due rule says for one channel at one moment.

    `latest` is `s*`; `due` is `s*` when it may be posted now; `missed` are the older slots
    (newest first) that were never decided and now never will be, `s*` included when it fell
    out of its window. `decided_through` is the newest instant all of whose slots are now
    either decided or missed (what a run may record once it has recorded `missed`).
    """

    latest: Slot | None
    due: Slot | None
    missed: tuple[Slot, ...]

    @property
    def decided_through(self) -> datetime | None:
        return self.missed[0].at if self.missed else None


def due_rule(
    schedule: Schedule,
    *,
    window: timedelta,
    now: datetime,
    seen_at: datetime,
    decided_through: datetime | None,
    missed_limit: int = 100,
) -> DueResult:
    """Apply ARCHITECTURE.md §2 to one channel.

    `seen_at` is when a run first saw the channel's current schedule: no slot before it is due
    or missed. `decided_through` is the newest instant up to which every slot is already
    decided (the stamp, or the newest slot recorded missed, whichever is later): no slot at or
    before it is due or missed again. At most `missed_limit` missed slots are returned, the
    most recent ones.
    """
    latest = schedule.latest_at_or_before(now)
    if latest is None or latest.at < seen_at:
        return DueResult(latest, None, ())
    if decided_through is not None and latest.at <= decided_through:
        return DueResult(latest, None, ())
    in_window = now - latest.at <= window
    older: list[Slot] = []
    for slot in schedule.walk_back(latest.at):
        if slot == latest:
            continue
        if slot.at < seen_at or (decided_through is not None and slot.at <= decided_through):
            break
        if len(older) >= missed_limit:
            break
        older.append(slot)
    if in_window:
        return DueResult(latest, latest, tuple(older))
    return DueResult(latest, None, tuple([latest, *older][:missed_limit]))


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
