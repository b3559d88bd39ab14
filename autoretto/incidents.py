"""Incidents: when posts keep failing, one incident per episode of trouble.

Three or more failed attempts within two hours open an incident (if none is open); while it
is open, further failures are counted on it rather than opening more; the next successful
publish closes it. Opening one calls the notifier.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .clock import iso
from .ledger import runs

if TYPE_CHECKING:
    from .ledger.store import Store as Database

FAILURES_TO_OPEN = 3
WINDOW = timedelta(hours=2)
FAILED_OUTCOMES = ("passing", "needs_person", "rejected", "lost_answer", "unknown")


def record_failure(db: Database, reason: str, now: datetime) -> dict | None:
    """Count a failed attempt; returns the incident if this failure opened one."""
    return runs.record_failure(
        db,
        reason=reason,
        now=iso(now),
        since=iso(now - WINDOW),
        failed_outcomes=FAILED_OUTCOMES,
        failures_to_open=FAILURES_TO_OPEN,
    )


def record_success(db: Database, now: datetime) -> None:
    runs.close_incidents(db, iso(now))
