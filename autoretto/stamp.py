"""The claim and the stamp (ARCHITECTURE.md §3): every statement is a compare-and-set.

`channels.last_release_at` is the stamp, the slot instant of the channel's latest release. A run
owns a slot when its one conditional UPDATE changed a row (rowcount 1); a second run racing it
sees rowcount 0 and leaves the channel alone. Give-back, take-over, heartbeat and advance are
conditional on the run id that holds the claim, so a run that lost its claim cannot move
anything.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from .clock import iso
from .slots import Slot
from .store import execute, row

if TYPE_CHECKING:
    from sqlite_utils import Database


def register_channel(db: Database, name: str, fingerprint: str, now: datetime) -> dict:
    """Make sure the channel has a row; note when its current schedule was first seen.

    A changed fingerprint (edited slots, zone or days) resets `schedule_seen_at` to now, so an
    edited schedule never fires a slot that is already past. Returns the channel's row.
    """
    moment = iso(now)
    execute(
        db,
        "INSERT OR IGNORE INTO channels (name, schedule_fingerprint, schedule_seen_at, created_at)"
        " VALUES (:name, :fingerprint, :now, :now)",
        {"name": name, "fingerprint": fingerprint, "now": moment},
    )
    execute(
        db,
        "UPDATE channels SET schedule_fingerprint = :fingerprint, schedule_seen_at = :now"
        " WHERE name = :name AND schedule_fingerprint != :fingerprint",
        {"name": name, "fingerprint": fingerprint, "now": moment},
    )
    return channel_row(db, name)


def channel_row(db: Database, name: str) -> dict:
    found = row(db, "SELECT * FROM channels WHERE name = ?", (name,))
    assert found is not None, name
    return found


def claim_slot(db: Database, channel: str, slot: Slot, run_id: str, now: datetime) -> bool:
    """Claim `slot` for `run_id`: wins only if no one holds a claim and the slot is newer than
    both the stamp and every decided slot."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = :run, claim_slot = :key, claim_slot_at = :at,"
            " claim_heartbeat_at = :now"
            " WHERE name = :name AND claim_run_id IS NULL"
            " AND (last_release_at IS NULL OR last_release_at < :at)"
            " AND (decided_through IS NULL OR decided_through < :at)",
            {"run": run_id, "key": slot.key, "at": slot.at_text, "now": iso(now), "name": channel},
        )
        == 1
    )


def take_over_claim(
    db: Database,
    channel: str,
    slot: Slot,
    *,
    stale_run_id: str,
    run_id: str,
    now: datetime,
    stale_before: datetime,
) -> bool:
    """Take a dead run's claim: wins only if that run still holds it and its heartbeat is stale."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = :run, claim_slot = :key, claim_slot_at = :at,"
            " claim_heartbeat_at = :now"
            " WHERE name = :name AND claim_run_id = :stale AND claim_heartbeat_at < :stale_before"
            " AND (last_release_at IS NULL OR last_release_at < :at)"
            " AND (decided_through IS NULL OR decided_through < :at)",
            {
                "run": run_id,
                "key": slot.key,
                "at": slot.at_text,
                "now": iso(now),
                "name": channel,
                "stale": stale_run_id,
                "stale_before": iso(stale_before),
            },
        )
        == 1
    )


def give_back_claim(db: Database, channel: str, run_id: str) -> bool:
    """Release our claim without moving the stamp (nothing was sent; the slot can be retried)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            " claim_heartbeat_at = NULL WHERE name = :name AND claim_run_id = :run",
            {"name": channel, "run": run_id},
        )
        == 1
    )


def heartbeat(db: Database, channel: str, run_id: str, now: datetime) -> bool:
    """Tell other runs we are alive; False means our claim was taken over."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_heartbeat_at = :now"
            " WHERE name = :name AND claim_run_id = :run",
            {"now": iso(now), "name": channel, "run": run_id},
        )
        == 1
    )


def advance_stamp(db: Database, channel: str, slot: Slot, run_id: str) -> bool:
    """Move the stamp to `slot` and release the claim; only the claim's holder can."""
    return (
        execute(
            db,
            "UPDATE channels SET last_release_at = :at,"
            " decided_through = MAX(COALESCE(decided_through, ''), :at),"
            " claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            " claim_heartbeat_at = NULL"
            " WHERE name = :name AND claim_run_id = :run"
            " AND (last_release_at IS NULL OR last_release_at < :at)",
            {"at": slot.at_text, "name": channel, "run": run_id},
        )
        == 1
    )


def mark_decided_through(db: Database, channel: str, at: datetime) -> None:
    """Remember that every slot up to `at` is decided (after recording missed slots)."""
    execute(
        db,
        "UPDATE channels SET decided_through = :at"
        " WHERE name = :name AND (decided_through IS NULL OR decided_through < :at)",
        {"at": iso(at), "name": channel},
    )


def record_release(db: Database, channel: str, slot: Slot) -> bool:
    """Move the stamp to `slot` for a post that went out after its claim was released (a
    paced post): only forward, never past a newer release."""
    return (
        execute(
            db,
            "UPDATE channels SET last_release_at = :at,"
            " decided_through = MAX(COALESCE(decided_through, ''), :at)"
            " WHERE name = :name AND (last_release_at IS NULL OR last_release_at < :at)",
            {"at": slot.at_text, "name": channel},
        )
        == 1
    )
