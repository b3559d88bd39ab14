"""The one clock, and the one way instants are written down.

Every instant stored or compared is UTC with second precision, written `YYYY-MM-DDTHH:MM:SSZ`
so that text order is time order. `AUTORETTO_NOW` (ISO-8601 with an offset or `Z`) replaces the
system clock for every command; nothing else in Autoretto reads the system clock.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from .errors import UsageError

NOW_VARIABLE = "AUTORETTO_NOW"


def parse_instant(text: str, *, what: str = "time") -> datetime:
    """Parse ISO-8601 with an offset or `Z` into an aware UTC datetime (seconds kept)."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(cleaned)
    except ValueError:
        raise UsageError(
            f'{what}: "{text}" is not an ISO-8601 time; write it like 2026-11-29T10:05:00Z'
        ) from None
    if moment.tzinfo is None:
        raise UsageError(f'{what}: "{text}" has no offset; add Z (UTC) or an offset such as +01:00')
    return moment.astimezone(UTC).replace(microsecond=0)


def now() -> datetime:
    """The current instant: AUTORETTO_NOW when set, else the system clock (UTC, whole seconds)."""
    override = os.environ.get(NOW_VARIABLE)
    if override:
        return parse_instant(override, what=NOW_VARIABLE)
    return datetime.now(UTC).replace(microsecond=0)


def set_now(text: str | None) -> None:
    """Make `now()` return `text` for the rest of this process (`--now` on the command line)."""
    if text:
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


def parse_duration(text: str) -> timedelta:
    """`"10m"`, `"2h"`, `"6h"`, `"1d"`, `"90s"` → timedelta. Raises ValueError with a reason."""
    cleaned = str(text).strip().lower()
    if len(cleaned) < 2 or cleaned[-1] not in _DURATION_UNITS or not cleaned[:-1].isdigit():
        raise ValueError(
            f'"{text}" is not a duration; write a whole number and a unit: 10m, 2h, 1d'
        )
    return timedelta(seconds=int(cleaned[:-1]) * _DURATION_UNITS[cleaned[-1]])
