"""Incidents: when posts keep failing, one incident per episode of trouble.

Three or more failed attempts within two hours open an incident (if none is open); while it
is open, further failures are counted on it rather than opening more; the next successful
publish closes it. Opening one calls the notifier.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from .clock import iso
from .store import execute, row, rows, transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

FAILURES_TO_OPEN = 3
WINDOW = timedelta(hours=2)
FAILED_OUTCOMES = ("passing", "needs_person", "rejected", "lost_answer", "unknown")


def record_failure(db: Database, reason: str, now: datetime) -> dict | None:
    """Count a failed attempt; returns the incident if this failure opened one."""
    placeholders = ",".join("?" * len(FAILED_OUTCOMES))
    with transaction(db):
        open_incident = row(db, "SELECT * FROM incidents WHERE closed_at IS NULL")
        if open_incident is not None:
            execute(
                db,
                "UPDATE incidents SET failures = failures + 1, last_failure_at = ? WHERE id = ?",
                (iso(now), open_incident["id"]),
            )
            return None
        recent = row(
            db,
            f"SELECT COUNT(*) AS n FROM post_attempts WHERE outcome IN ({placeholders})"
            " AND ended_at >= ?",
            (*FAILED_OUTCOMES, iso(now - WINDOW)),
        )["n"]
        if recent < FAILURES_TO_OPEN:
            return None
        incident_id = (
            db["incidents"]
            .insert(
                {
                    "opened_at": iso(now),
                    "failures": recent,
                    "reason": reason,
                    "last_failure_at": iso(now),
                }
            )
            .last_pk
        )
    return row(db, "SELECT * FROM incidents WHERE id = ?", (incident_id,))


def record_success(db: Database, now: datetime) -> None:
    execute(db, "UPDATE incidents SET closed_at = ? WHERE closed_at IS NULL", (iso(now),))


def list_incidents(db: Database, *, open_only: bool = False) -> list[dict]:
    where = " WHERE closed_at IS NULL" if open_only else ""
    return rows(db, f"SELECT * FROM incidents{where} ORDER BY id")
