"""Leases: one holder at a time for a piece of work every host could start (refreshing an
account's token), kept in the store so that hosts sharing it take turns (issue 26).

A lease is a row named for the work (`account:youtube/default`) holding the id of the run that
holds it: a run's id, or the id a process without a run records like a run's facts
(accounts.account_lock). It is taken with one INSERT that loses to an existing row, given back
with a DELETE conditional on the holder, and taken over from a holder that is gone
(liveness.holder_gone) with an UPDATE conditional on that holder and the beat it was judged by
(claims.BEAT_UNCHANGED), the same compare-and-set as a slot's claim. `taken_at` is the holder's
own clock, shown to a person and never compared with another clock.
"""

from __future__ import annotations

from typing import Any

from .claims import BEAT_UNCHANGED
from .store import execute, row


def take_lease(db: Any, name: str, holder: str, now: str) -> bool:
    """Take the lease `name` for `holder` when nobody holds it; True when this call took it."""
    return (
        execute(
            db,
            "INSERT INTO leases (name, holder, taken_at) VALUES (:name, :holder, :now)"
            " ON CONFLICT (name) DO NOTHING",
            {"name": name, "holder": holder, "now": now},
        )
        == 1
    )


def lease_holder(db: Any, name: str) -> dict[str, Any] | None:
    """Who holds the lease `name` (`holder`, `taken_at`), or None while nobody does."""
    return row(db, "SELECT holder, taken_at FROM leases WHERE name = ?", (name,))


def take_over_lease(db: Any, name: str, *, holder: str, beat: int, taker: str, now: str) -> bool:
    """Take the lease `name` from a gone `holder`: wins only while that holder still holds it
    and its beat is the one it was judged gone by."""
    return (
        execute(
            db,
            "UPDATE leases SET holder = :taker, taken_at = :now"
            f" WHERE name = :name AND holder = :holder AND {BEAT_UNCHANGED}",
            {"name": name, "holder": holder, "beat": beat, "taker": taker, "now": now},
        )
        == 1
    )


def give_back_lease(db: Any, name: str, holder: str) -> None:
    """Give the lease `name` back, if `holder` still holds it."""
    execute(db, "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
