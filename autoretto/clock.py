"""The one clock, and the one way instants are written down.

Every instant stored or compared is UTC with second precision, written `YYYY-MM-DDTHH:MM:SSZ`
so that text order is time order. `AUTORETTO_NOW` (ISO-8601 with an offset or `Z`) replaces the
system clock for every command; nothing else in Autoretto reads the system clock.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta

from .errors import UsageError, shown

NOW_VARIABLE = "AUTORETTO_NOW"

#: The instants Autoretto works in. Slot arithmetic walks days either side of now and adds
#: windows of up to a year, which must stay inside what a datetime can hold; a clock outside
#: these years is a mistake (a typo, or a box that booted without its clock set).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
_RANGE = f"give a time from {EARLIEST.year} to {LATEST.year}"


def parse_instant(text: str, *, what: str = "time") -> datetime:
    """Parse ISO-8601 with an offset or `Z` into an aware UTC datetime (seconds kept), between
    EARLIEST and LATEST. Raises UsageError naming `what`."""
    cleaned = text.strip()
    if not cleaned:
        raise UsageError(f"{what}: empty; give a time like 2026-11-29T10:05:00Z, or leave it out")
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise UsageError(
            f"{what}: {shown(text)} is not an ISO-8601 time; write it like 2026-11-29T10:05:00Z"
        ) from None
    if moment.tzinfo is None:
        raise UsageError(
            f"{what}: {shown(text)} has no offset; add Z (UTC) or an offset such as +01:00"
        )
    try:
        moment = moment.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # 0001-01-01 at +01:00 is before the first instant there is
        moment = None
    if moment is None or not EARLIEST <= moment <= LATEST:
        raise UsageError(f"{what}: {text.strip()} is out of range; {_RANGE}")
    return moment


def now() -> datetime:
    """The current instant: AUTORETTO_NOW when set, else the system clock (UTC, whole seconds).
    Raises UsageError when either is outside EARLIEST..LATEST."""
    override = os.environ.get(NOW_VARIABLE)
    if override:
        return parse_instant(override, what=NOW_VARIABLE)
    moment = datetime.now(UTC).replace(microsecond=0)
    if not EARLIEST <= moment <= LATEST:
        raise UsageError(
            f"the system clock says {moment.isoformat()}; set the time (NTP), then run again"
        )
    return moment


def set_now(text: str | None) -> None:
    """Make `now()` return `text` for the rest of this process (`--now` on the command line).
    None leaves the clock alone; anything else, an empty text too, must be a good instant."""
    if text is not None:
        parse_instant(text, what="--now")
        os.environ[NOW_VARIABLE] = text


def sleep_until(moment: datetime) -> None:
    """Wait until `moment`. With AUTORETTO_NOW set, time is simulated: the wait is instant
    and the clock moves to `moment`, so waiting code runs the same in tests, without sleeping.
    """
    if os.environ.get(NOW_VARIABLE):
        if moment > now():
            os.environ[NOW_VARIABLE] = iso(moment)
        return
    import time

    while (left := (moment - now()).total_seconds()) > 0:
        time.sleep(min(left, 30.0))


def iso(moment: datetime) -> str:
    """The stored form of an instant: UTC, seconds, `Z`."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def from_iso(text: str) -> datetime:
    """Inverse of `iso` for values read back from the database."""
    return datetime.fromisoformat(text)


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"([0-9]{1,9})([smhd])")
#: No duration in Autoretto is longer (most fields have tighter ranges of their own); added to
#: any instant up to clock.LATEST it still makes a datetime.
LONGEST_DURATION = timedelta(days=3650)


def parse_duration(
    text: object,
    *,
    shortest: timedelta = timedelta(0),
    longest: timedelta = LONGEST_DURATION,
) -> timedelta:
    """`"10m"`, `"2h"`, `"6h"`, `"1d"`, `"90s"` → timedelta, from `shortest` to `longest`.
    Raises ValueError with a reason a person can act on."""
    found = _DURATION.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    if found is None:
        raise ValueError(
            f"{shown(text)} is not a duration; write a whole number and a unit: 10m, 2h, 1d"
        )
    duration = timedelta(seconds=int(found[1]) * _DURATION_UNITS[found[2]])
    if not shortest <= duration <= longest:
        raise ValueError(
            f"{shown(text)} is out of range; give {_span(shortest)} to {_span(longest)}"
        )
    return duration


def _span(duration: timedelta) -> str:
    """The shortest way to write `duration` in the config's own units: 2m, 1d, 90s."""
    seconds = int(duration.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
