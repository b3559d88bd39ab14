"""Claims and the stamp (ARCHITECTURE.md §3): every statement is a compare-and-set.

`channels.last_release_at` is the stamp, the slot instant of the channel's latest release. A run
owns a slot when its one conditional UPDATE changed a row (rowcount 1); a second run racing it
sees rowcount 0 and leaves the channel alone. Give-back, take-over and advance are conditional
on the run id that holds the claim, so a run that lost its claim cannot move anything.

The same shape claims the other things one run at a time may do: making a channel's episodes
(`claim_making`), and settling a slot's platform that waits for a post still on its way
(`claim_wait`). A claim is kept alive by its run's heartbeat (`beat`); it may be taken over only
from a run that is gone (liveness.py), never because its heartbeat time looks old to another
clock.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import from_iso, iso
from .ledger.claims import BEAT_UNCHANGED
from .liveness import Gone
from .slots import Schedule, Seen, Slot
from .store import execute, row, rows

if TYPE_CHECKING:
    from sqlite_utils import Database


def register_channel(
    db: Database, name: str, fingerprint: str, spec: dict[str, Any], now: datetime
) -> dict:
    """Make sure the channel has a row; note when its current schedule was first seen.

    A new or changed fingerprint (edited slots, zone or days) sets `schedule_seen_at` and adds
    the schedule to the channel's history, so what each past slot was owed can be told
    (slots.due_rule). A new channel's schedule is seen now; an edit's at `edit_seen_at`: now,
    or the decided-through mark when the clock is behind it. Call inside a transaction.
    Returns the channel's row.
    """
    moment = iso(now)
    params = {"name": name, "fingerprint": fingerprint, "now": moment}
    created = execute(
        db,
        "INSERT OR IGNORE INTO channels (name, schedule_fingerprint, schedule_seen_at, created_at)"
        " VALUES (:name, :fingerprint, :now, :now)",
        params,
    )
    edited = execute(
        db,
        "UPDATE channels SET schedule_fingerprint = :fingerprint,"
        " schedule_seen_at = MAX(:now, COALESCE(decided_through, :now))"
        " WHERE name = :name AND schedule_fingerprint != :fingerprint",
        params,
    )
    if created or edited:
        execute(
            db,
            "INSERT INTO schedules (channel, fingerprint, spec, seen_at)"
            " SELECT name, schedule_fingerprint, :spec, schedule_seen_at FROM channels"
            " WHERE name = :name",
            {"name": name, "spec": json.dumps(spec, sort_keys=True)},
        )
    return channel_row(db, name)


def edit_seen_at(now: datetime, decided_through: datetime | None) -> datetime:
    """When an edit seen at `now` counts as first seen: never before the decided-through mark.
    Every owed slot up to the mark is decided, so the channel's time is past it even when the
    clock was set back since; an edit cannot reopen that time. A slot it adds at or before the
    mark was owed by no schedule (neither due nor missed); one both schedules hold was owed by
    the old one, and is decided. (SQL twin: `register_channel`.)"""
    if decided_through is None or decided_through <= now:
        return now
    return decided_through


def schedule_history(
    db: Database, channel_row: dict, *, including_current: bool = False
) -> tuple[Seen, ...]:
    """The schedules the channel had before its current one, oldest first (with the current
    one too, for a look at an edit no run has seen yet)."""
    before = "<=" if including_current else "<"
    return tuple(
        Seen(from_iso(r["seen_at"]), Schedule.from_spec(json.loads(r["spec"])))
        for r in rows(
            db,
            f"SELECT spec, seen_at FROM schedules WHERE channel = ? AND seen_at {before} ?"
            " ORDER BY seen_at, id",
            (channel_row["name"], channel_row["schedule_seen_at"]),
        )
    )


def channel_row(db: Database, name: str) -> dict:
    found = row(db, "SELECT * FROM channels WHERE name = ?", (name,))
    assert found is not None, name
    return found


# -- a slot ------------------------------------------------------------------------------------


def claim_slot(db: Database, channel: str, slot: Slot, run_id: str, now: datetime) -> bool:
    """Claim `slot` for `run_id`: wins only if no one holds a claim and the slot is newer than
    both the stamp and the channel's decided-through mark."""
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
    db: Database, channel: str, slot: Slot, *, gone: Gone, run_id: str, now: datetime
) -> bool:
    """Take a gone run's claim: wins only if that run still holds it and its beat is still the
    one it was judged gone by (liveness.holder_gone)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = :run, claim_slot = :key, claim_slot_at = :at,"
            " claim_heartbeat_at = :now"
            f" WHERE name = :name AND claim_run_id = :holder AND {BEAT_UNCHANGED}"
            " AND (last_release_at IS NULL OR last_release_at < :at)"
            " AND (decided_through IS NULL OR decided_through < :at)",
            {
                "run": run_id,
                "key": slot.key,
                "at": slot.at_text,
                "now": iso(now),
                "name": channel,
                "holder": gone.run_id,
                "beat": gone.beat,
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


def clear_gone_claim(db: Database, channel: str, gone: Gone) -> bool:
    """Drop a gone run's claim on a slot that is no longer due (its window closed)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            f" claim_heartbeat_at = NULL WHERE name = :name AND claim_run_id = :holder"
            f" AND {BEAT_UNCHANGED}",
            {"name": channel, "holder": gone.run_id, "beat": gone.beat},
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
    """Remember that every owed slot up to `at` is decided (only ever forward)."""
    execute(
        db,
        "UPDATE channels SET decided_through = :at"
        " WHERE name = :name AND (decided_through IS NULL OR decided_through < :at)",
        {"at": iso(at), "name": channel},
    )


def record_release(db: Database, channel: str, slot: Slot) -> bool:
    """Move the stamp to `slot` for a post that went out after its claim was released (a
    paced post, a slot that waited): only forward, never past a newer release."""
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


def write_back_release(db: Database, channel: str, slot_at: str) -> None:
    """`resume`: a stamp move the journal knows and a restored database forgot. Any claim a
    run held in the old copy is dropped with it."""
    execute(
        db,
        "UPDATE channels SET last_release_at = MAX(COALESCE(last_release_at, ''), :at),"
        " decided_through = MAX(COALESCE(decided_through, ''), :at),"
        " claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
        " claim_heartbeat_at = NULL WHERE name = :name",
        {"at": slot_at, "name": channel},
    )


# -- making a channel's episodes ---------------------------------------------------------------


def claim_making(
    db: Database, channel: str, run_id: str, *, now: datetime, gone: Gone | None
) -> bool:
    """Claim the making of `channel`'s episodes: only one run makes for a channel at a time, so
    racing runs never make more than the stock asks for. Our own claim is ours again; another
    run's only when it is `gone` (liveness.holder_gone)."""
    return (
        execute(
            db,
            "UPDATE channels SET make_run_id = :run, make_heartbeat_at = :now"
            " WHERE name = :name AND (make_run_id IS NULL OR make_run_id = :run"
            f" OR (make_run_id = :holder AND {BEAT_UNCHANGED}))",
            {
                "run": run_id,
                "now": iso(now),
                "name": channel,
                "holder": gone.run_id if gone else None,
                "beat": gone.beat if gone else None,
            },
        )
        == 1
    )


def release_making(db: Database, channel: str, run_id: str) -> None:
    execute(
        db,
        "UPDATE channels SET make_run_id = NULL, make_heartbeat_at = NULL"
        " WHERE name = :name AND make_run_id = :run",
        {"name": channel, "run": run_id},
    )


def making_by(db: Database, channel: str) -> str | None:
    """The run holding the claim on making `channel`'s episodes, if any (alive or not)."""
    found = row(db, "SELECT make_run_id FROM channels WHERE name = ?", (channel,))
    return found["make_run_id"] if found else None


# -- a slot's platform that waits --------------------------------------------------------------


def wait_holder(db: Database, channel: str, slot_key: str, platform: str) -> str | None:
    """The run settling a waiting (slot, platform) now, if any (alive or not)."""
    found = row(
        db,
        "SELECT run_id FROM slot_waits WHERE channel = ? AND slot = ? AND platform = ?",
        (channel, slot_key, platform),
    )
    return found["run_id"] if found else None


def claim_wait(
    db: Database,
    channel: str,
    slot_key: str,
    platform: str,
    run_id: str,
    *,
    now: datetime,
    gone: Gone | None,
) -> bool:
    """Claim the settling of a waiting (slot, platform), so two runs never both choose an
    episode for it: free, ours, or held by a run that is `gone`."""
    return (
        execute(
            db,
            "UPDATE slot_waits SET run_id = :run, heartbeat_at = :now"
            " WHERE channel = :channel AND slot = :slot AND platform = :platform"
            f" AND (run_id IS NULL OR run_id = :run OR (run_id = :holder AND {BEAT_UNCHANGED}))",
            {
                "run": run_id,
                "now": iso(now),
                "channel": channel,
                "slot": slot_key,
                "platform": platform,
                "holder": gone.run_id if gone else None,
                "beat": gone.beat if gone else None,
            },
        )
        == 1
    )


def release_wait(db: Database, channel: str, slot_key: str, platform: str, run_id: str) -> None:
    execute(
        db,
        "UPDATE slot_waits SET run_id = NULL, heartbeat_at = NULL"
        " WHERE channel = :channel AND slot = :slot AND platform = :platform AND run_id = :run",
        {"channel": channel, "slot": slot_key, "platform": platform, "run": run_id},
    )


# -- the heartbeat -----------------------------------------------------------------------------


def beat(connection: Any, run_id: str, now: datetime) -> None:
    """Refresh every claim `run_id` holds: slots, making, waiting slots."""
    params = {"now": iso(now), "run": run_id}
    execute(
        connection,
        "UPDATE channels SET claim_heartbeat_at = :now WHERE claim_run_id = :run",
        params,
    )
    execute(
        connection,
        "UPDATE channels SET make_heartbeat_at = :now WHERE make_run_id = :run",
        params,
    )
    execute(
        connection,
        "UPDATE slot_waits SET heartbeat_at = :now WHERE run_id = :run",
        params,
    )
